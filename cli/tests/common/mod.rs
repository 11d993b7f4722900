//! Helpers shared by the end-to-end tests of the `ecsdb` binary: a private directory per
//! test, running the built executable in it, and reading what it printed.

#![allow(dead_code)] // each test file uses its own subset

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `ecsdb` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_ecsdb");

/// A fresh directory for one test under cargo's per-target temporary directory.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-e2e-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The binary with `args`, to run in `dir` with a private history file, its stdin, stdout
/// and stderr piped.
pub fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env("ECSDB_HISTORY", dir.join("history"))
        .env_remove("ECSDB_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs the binary with `args` and `stdin`, in `dir`, with a private history file.
pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = command(dir, args);
    if stdin.is_none() {
        cmd.stdin(Stdio::null());
    }
    let mut child = cmd.spawn().expect("the ecsdb binary runs");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// What a finished run printed on stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a finished run printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing both outputs when it differs.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit code {code}\n--- stdout\n{}\n--- stderr\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Waits until `ready()` holds, polling; fails with `what` after `timeout`.
#[track_caller]
pub fn eventually(timeout: std::time::Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

/// `ecsdb serve WORLD ARGS…` as a real process on 127.0.0.1 (a port the system picks),
/// stopped with SIGTERM when dropped.
pub struct Server {
    child: std::process::Child,
    /// The URL the server printed, with its token fragment.
    pub url: String,
}

impl Server {
    /// Starts `ecsdb serve world extra…` in `dir` and waits for its URL line.
    pub fn start(dir: &Path, world: &str, extra: &[&str]) -> Server {
        use std::io::BufRead;
        let mut args = vec!["serve", world];
        args.extend_from_slice(extra);
        let mut child = command(dir, &args).env_remove("ECSDB_TOKEN").stderr(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        Server { child, url: line.trim().to_string() }
    }

    /// Sends SIGTERM and waits for the process to exit; returns its status.
    #[cfg(unix)]
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let mut status = None;
        eventually(std::time::Duration::from_secs(30), "serve to stop on SIGTERM", || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status.unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The binary running on a real terminal: a tmux session of its own (a private server
/// socket), driven by `send-keys` and read by `capture-pane`. Killed when dropped.
pub struct Terminal {
    socket: String,
}

impl Terminal {
    /// Starts `ecsdb ARGS…` in `dir` on a new 160×50 terminal, with a private history file.
    pub fn start(dir: &Path, name: &str, args: &[&str]) -> Terminal {
        let socket = format!("ecsdb-test-{name}-{}", std::process::id());
        let mut line = format!("cd '{}' && ECSDB_HISTORY='{}' '{BIN}'", dir.display(), dir.join("history").display());
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        // Keeps the pane open after the program exits, so its last words can be read.
        line.push_str("; echo \"[exited $?]\"; sleep 600");
        let status = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", "160", "-y", "50", &line])
            .status()
            .expect("tmux runs (the shell's terminal tests drive it)");
        assert!(status.success(), "tmux new-session failed");
        Terminal { socket }
    }

    /// Types `text` (literally) and then Enter.
    pub fn line(&self, text: &str) {
        // tmux reads an argument ending in `;` as a command separator: `;` goes as its byte.
        for (i, part) in text.split(';').enumerate() {
            if i > 0 {
                self.tmux(&["send-keys", "-H", "3b"]);
            }
            if !part.is_empty() {
                self.tmux(&["send-keys", "-l", part]);
            }
        }
        self.tmux(&["send-keys", "Enter"]);
    }

    /// What the terminal shows, with its scrollback.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-S", "-500"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text` `times` times or more; returns the screen.
    #[track_caller]
    pub fn wait_for(&self, text: &str, times: usize) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times {
                return screen;
            }
            assert!(std::time::Instant::now() < deadline, "the terminal never showed {text:?} ×{times}:\n{screen}");
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }

    fn tmux(&self, args: &[&str]) {
        let status = Command::new("tmux").arg("-L").arg(&self.socket).args(args).status().unwrap();
        assert!(status.success(), "tmux {args:?} failed");
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}
