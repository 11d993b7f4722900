//! Several processes on one world file: writers take turns and lose nothing, a writer that
//! cannot get the lock gives up without touching the file, a killed writer leaves the file
//! whole and unlocked, and a shell never overwrites a file another process saved.
//!
//! Every writer here is a real `ecsdb` process; the test process itself holds the lock
//! (through the library) where a test needs a writer that stays put.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::thread;
use std::time::{Duration, Instant};

use common::{assert_exit, command, run_in, stderr, temp_dir};
use ecsdb::query::Database;
use ecsdb::{Value, World, WorldLock};

/// A world file with two empty components, `A` and `B`.
fn make_world(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("setup.sql"), "CREATE COMPONENT A (n i64);\nCREATE COMPONENT B (n i64);\n").unwrap();
    assert_exit(&run_in(dir, &["exec", "w.ecsdb", "setup.sql", "--quiet"], None), 0);
    dir.join("w.ecsdb")
}

/// A script of `n` SPAWNs of `component`, written to `dir/name`.
fn spawn_script(dir: &Path, name: &str, component: &str, n: usize) -> String {
    let text: String = (0..n).map(|i| format!("SPAWN {component} {{n: {i}}};\n")).collect();
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// How many entities of `component` the world file holds.
fn count(path: &Path, component: &str) -> i64 {
    let db = Database::from_world(World::load(path).unwrap());
    match db.query(&format!("SELECT count(*) FROM {component}"), ()).unwrap().rows[0][0] {
        Value::Int(n) => n,
        ref other => panic!("count(*) is {other:?}"),
    }
}

/// Waits for a child that is expected to end, returning its output.
fn finish(child: Child) -> std::process::Output {
    child.wait_with_output().unwrap()
}

#[test]
fn parallel_writers_both_keep_their_work() {
    let dir = temp_dir("lock-parallel");
    let world = make_world(&dir);
    let n = if cfg!(debug_assertions) { 300 } else { 3000 };
    let a = spawn_script(&dir, "a.sql", "A", n);
    let b = spawn_script(&dir, "b.sql", "B", n);

    // Hold the lock while both start, so that both are surely running at once and queue up.
    let held = WorldLock::acquire(&world, Duration::ZERO).unwrap();
    let start =
        |script: &str| command(&dir, &["exec", "w.ecsdb", script, "--quiet", "--busy-timeout", "600"]).spawn().unwrap();
    let mut writers = [start(&a), start(&b)];
    thread::sleep(Duration::from_millis(300));
    for w in &mut writers {
        assert!(w.try_wait().unwrap().is_none(), "a writer waits for the lock");
    }
    drop(held);

    // Readers take no lock and never see a half-written file while the writers save.
    let mut loads = 0;
    while writers.iter_mut().any(|w| w.try_wait().unwrap().is_none()) {
        World::load(&world).expect("a reader always sees a whole file");
        loads += 1;
    }
    assert!(loads > 0);
    for w in writers {
        assert_exit(&finish(w), 0);
    }
    assert_eq!((count(&world, "A"), count(&world, "B")), (n as i64, n as i64), "neither writer's entities were lost");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_writer_that_cannot_get_the_lock_gives_up_and_leaves_the_file_alone() {
    let dir = temp_dir("lock-busy");
    let world = make_world(&dir);
    let script = spawn_script(&dir, "a.sql", "A", 3);
    let before = std::fs::read(&world).unwrap();

    let held = WorldLock::acquire(&world, Duration::ZERO).unwrap();
    let start = Instant::now();
    let o = run_in(&dir, &["exec", "w.ecsdb", &script, "--busy-timeout", "300ms"], None);
    assert!(start.elapsed() >= Duration::from_millis(300), "it waited for the timeout");
    assert_exit(&o, 2);
    let expected = format!("world w.ecsdb is being written by another process (pid {})", std::process::id());
    assert!(stderr(&o).contains(&expected), "{}", stderr(&o));
    assert_eq!(std::fs::read(&world).unwrap(), before, "the file is untouched");

    // The shell's save waits the same way, and keeps its changes unsaved.
    let o = run_in(&dir, &["shell", "w.ecsdb", "--busy-timeout", "0.1"], Some(b"SPAWN A {n: 1};\n.save\n"));
    assert_exit(&o, 1);
    assert!(stderr(&o).contains(&expected), "{}", stderr(&o));
    assert_eq!(std::fs::read(&world).unwrap(), before);

    // `run` is a writer too: it waits, gives up with exit code 2 and leaves the file alone.
    let o = run_in(&dir, &["run", "w.ecsdb", "--ticks", "2", "--busy-timeout", "100ms"], None);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(&expected), "{}", stderr(&o));
    assert_eq!(std::fs::read(&world).unwrap(), before);

    // Once the lock is released, the same command goes through.
    drop(held);
    assert_exit(&run_in(&dir, &["run", "w.ecsdb", "--ticks", "2", "--busy-timeout", "0"], None), 0);
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", &script, "--busy-timeout", "0"], None), 0);
    assert_eq!(count(&world, "A"), 3);
    // A bad timeout is a usage error.
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", &script, "--busy-timeout", "soon"], None), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_killed_writer_leaves_the_file_whole_and_unlocked() {
    let dir = temp_dir("lock-killed");
    let world = make_world(&dir);
    let sidecar = WorldLock::sidecar_path(&world).unwrap();
    let mut n = if cfg!(debug_assertions) { 20_000 } else { 100_000 };
    // Kill a writer while it holds the lock; a writer that finished before it could be killed
    // is tried again with a longer script.
    let killed_n = loop {
        let script = spawn_script(&dir, "big.sql", "A", n);
        let mut writer = command(&dir, &["exec", "w.ecsdb", &script, "--quiet"]).spawn().unwrap();
        let pid = writer.id().to_string();
        while std::fs::read_to_string(&sidecar).unwrap_or_default().trim() != pid
            && writer.try_wait().unwrap().is_none()
        {
            thread::sleep(Duration::from_millis(1));
        }
        let _ = writer.kill(); // a no-op if it has just finished
        let status = writer.wait().unwrap();
        if status.success() {
            assert!(n < 1_000_000, "could not catch a writer holding the lock");
            n *= 4;
            continue;
        }
        break n;
    };

    // The lock went with the process: the next writer does not wait for it.
    let script = spawn_script(&dir, "b.sql", "B", 2);
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", &script, "--busy-timeout", "0"], None), 0);
    let a = count(&world, "A");
    assert!(a == 0 || a == killed_n as i64, "all of the killed writer's work or none of it: {a}");
    assert_eq!(count(&world, "B"), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A shell on a world file, driven line by line through its stdin.
struct Shell {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Shell {
    fn start(dir: &Path, args: &[&str]) -> Shell {
        let mut child = command(dir, args).spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Shell { child, stdin, stdout }
    }

    /// Sends `text` and waits until the shell has run it: it must end with a statement that
    /// prints `marker` (so the shell has loaded the world and run everything before).
    fn run_until(&mut self, text: &str, marker: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the shell ended before printing {marker}");
            if line.contains(marker) {
                return;
            }
        }
    }

    /// Sends the last lines, closes stdin and waits for the end; returns exit code and stderr.
    fn finish(mut self, text: &str) -> (Option<i32>, String) {
        let mut stdin = self.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        drop(stdin);
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        (self.child.wait().unwrap().code(), err)
    }
}

#[test]
fn a_shell_does_not_overwrite_a_file_another_process_saved() {
    let dir = temp_dir("lock-shell");
    let world = make_world(&dir);
    let theirs = spawn_script(&dir, "theirs.sql", "B", 1);

    let mut shell = Shell::start(&dir, &["shell", "w.ecsdb", "--format", "csv"]);
    shell.run_until("SPAWN A {n: 1};\nSELECT count(*) AS marker_count FROM A;\n", "marker_count");
    // Another process saves the file while the shell has it loaded: the shell holds no lock.
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", &theirs, "--busy-timeout", "0"], None), 0);
    let saved_by_them = std::fs::read(&world).unwrap();

    let (code, err) = shell.finish(".save\n.save mine.ecsdb\nSPAWN A {n: 2};\n.save\n");
    assert_eq!(code, Some(1), "the refused save counts as a failure: {err}");
    assert!(
        err.contains("w.ecsdb changed on disk since this shell loaded it") && err.contains(".save FILE"),
        "the refusal offers to save elsewhere: {err}"
    );
    assert_eq!(std::fs::read(&world).unwrap(), saved_by_them, "the other process's save is kept");
    // Saved elsewhere, the shell works on the new file, and saves to it again.
    let mine = dir.join("mine.ecsdb");
    assert_eq!((count(&mine, "A"), count(&mine, "B")), (2, 0));

    // Piped with --autosave, the save at the end is refused the same way.
    let mut shell = Shell::start(&dir, &["shell", "w.ecsdb", "--autosave", "--format", "csv"]);
    shell.run_until("SPAWN A {n: 3};\nSELECT count(*) AS marker_count FROM A;\n", "marker_count");
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", &theirs, "--busy-timeout", "0"], None), 0);
    let saved_by_them = std::fs::read(&world).unwrap();
    let (code, err) = shell.finish("");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("changed on disk"), "{err}");
    assert_eq!(std::fs::read(&world).unwrap(), saved_by_them);
    assert_eq!((count(&world, "A"), count(&world, "B")), (0, 2));

    // Without another writer, the shell saves over its own file as before.
    let o = run_in(&dir, &["shell", "w.ecsdb", "--autosave"], Some(b"SPAWN A {n: 4};\n"));
    assert_exit(&o, 0);
    assert_eq!(count(&world, "A"), 1);
    std::fs::remove_dir_all(dir).unwrap();
}
