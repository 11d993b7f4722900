//! `ecsdb serve` as a real process, and the CLI's `--connect` clients against it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ecsdb");

fn temp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-serve-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("ECSDB_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Starts `ecsdb serve` and returns it with the URL line.
fn serve(dir: &Path, extra: &[&str]) -> (Child, String) {
    let mut args = vec!["serve", "w.ecsdb"];
    args.extend_from_slice(extra);
    let mut child = Command::new(BIN)
        .args(&args)
        .current_dir(dir)
        .env_remove("ECSDB_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_string())
}

#[cfg(unix)]
fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(unix)]
#[test]
fn serve_query_shell_and_autosave() {
    let dir = temp_dir("autosave");
    let made = run(&dir, &["exec", "w.ecsdb", "-"], b"CREATE COMPONENT Health (hp i32); SPAWN Health {hp: 1};");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let (mut child, url) = serve(&dir, &["--allow-writes", "--hz", "20", "--autosave"]);
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("/#token="), "{url}");

    let q = run(&dir, &["query", "--connect", &url, "SELECT count(*)", "--format", "json"], b"");
    assert_eq!(String::from_utf8_lossy(&q.stdout).trim(), r#"{"columns":["count(*)"],"rows":[[1]]}"#);
    let bad = run(&dir, &["query", "--connect", &url, "SELECT Helth.hp"], b"");
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("did you mean 'Health'"));
    let no_token = run(&dir, &["query", "--connect", &url, "--token", "wrong", "SELECT 1"], b"");
    assert_eq!(no_token.status.code(), Some(2));

    let sh = run(&dir, &["shell", "--connect", &url, "--format", "json"], b"SPAWN Health {hp: 2};\nSELECT count(*);\n");
    assert!(sh.status.success(), "{}", String::from_utf8_lossy(&sh.stderr));
    assert!(String::from_utf8_lossy(&sh.stdout).contains(r#"{"columns":["count(*)"],"rows":[[2]]}"#));

    assert!(terminate(&mut child).success());
    let after = run(&dir, &["query", "w.ecsdb", "SELECT count(*)", "--format", "json"], b"");
    assert_eq!(String::from_utf8_lossy(&after.stdout).trim(), r#"{"columns":["count(*)"],"rows":[[2]]}"#);
}

/// `ecsdb serve` runs the world's systems at its rate, and its tool writes land between ticks.
#[cfg(unix)]
#[test]
fn serve_runs_the_world_systems() {
    let dir = temp_dir("systems");
    let made = run(
        &dir,
        &["exec", "w.ecsdb", "-"],
        b"CREATE COMPONENT Counter (n i64); SPAWN Counter {n: 0}; \
          CREATE SYSTEM count IN PHASE OnUpdate AS UPDATE Counter SET n = Counter.n + 1;",
    );
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let (mut child, url) = serve(&dir, &["--hz", "50", "--autosave"]);
    let count = || {
        let q = run(&dir, &["query", "--connect", &url, "SELECT Counter.n", "--format", "json"], b"");
        let out = String::from_utf8_lossy(&q.stdout).to_string();
        let n = out.split("[[").nth(1).and_then(|r| r.split(']').next()).and_then(|v| v.parse::<i64>().ok());
        n.unwrap_or_else(|| panic!("no count in {out}"))
    };
    let first = count();
    let deadline = Instant::now() + Duration::from_secs(30);
    while count() <= first + 5 {
        assert!(Instant::now() < deadline, "the system did not run: the counter stayed near {first}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(terminate(&mut child).success());
    let after = run(&dir, &["query", "w.ecsdb", "SELECT Counter.n", "--format", "json"], b"");
    let saved = String::from_utf8_lossy(&after.stdout).to_string();
    assert!(!saved.contains("[[0]]"), "the ticks were saved: {saved}");
}
