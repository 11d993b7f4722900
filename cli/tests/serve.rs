//! `ecsdb serve` as a real process, and the CLI's `--connect` clients against it.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

mod common;

use common::{Server, eventually, temp_dir};

fn run(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    common::run_in(dir, args, Some(stdin))
}

#[cfg(unix)]
#[test]
fn serve_query_shell_and_autosave() {
    let dir = temp_dir("autosave");
    let made = run(&dir, &["exec", "w.ecsdb", "-"], b"CREATE COMPONENT Health (hp i32); SPAWN Health {hp: 1};");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut server = Server::start(&dir, "w.ecsdb", &["--allow-writes", "--hz", "20", "--autosave"]);
    let url = server.url.clone();
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

    assert!(server.terminate().success());
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
    let mut server = Server::start(&dir, "w.ecsdb", &["--hz", "50", "--autosave"]);
    let url = server.url.clone();
    let count = || {
        let q = run(&dir, &["query", "--connect", &url, "SELECT Counter.n", "--format", "json"], b"");
        let out = String::from_utf8_lossy(&q.stdout).to_string();
        let n = out.split("[[").nth(1).and_then(|r| r.split(']').next()).and_then(|v| v.parse::<i64>().ok());
        n.unwrap_or_else(|| panic!("no count in {out}"))
    };
    let first = count();
    eventually(Duration::from_secs(30), "the system to run (the counter to pass first + 5)", || count() > first + 5);
    assert!(server.terminate().success());
    let after = run(&dir, &["query", "w.ecsdb", "SELECT Counter.n", "--format", "json"], b"");
    let saved = String::from_utf8_lossy(&after.stdout).to_string();
    assert!(!saved.contains("[[0]]"), "the ticks were saved: {saved}");
}
