//! The CLI asks the query crate how to split, classify and read text (issue 46): regression
//! tests, through the real binary, for the three bugs its own scanners had.
//!
//! 1. A multi-line `CREATE SYSTEM … BEGIN a; b; END` ran at its first `;` in `ecsdb shell`
//!    (on a terminal and piped) and in `ecsdb shell --connect`.
//! 2. A session whose only changes were `TICK` or `SET` was taken as read-only: never offered
//!    a save on a terminal, and dropped by piped `--autosave`.
//! 3. `--param x=.5` became the string ".5", and `--param e=12V0` an entity.

mod common;

use common::{Server, Terminal, assert_exit, run_in, stderr, stdout, temp_dir};

/// A system whose body spans lines and holds `;`s: it must reach the parser whole.
const SYSTEM: &str = "CREATE COMPONENT Counter (n i64);
SPAWN Counter {n: 0};
CREATE SYSTEM bump AS BEGIN
  UPDATE Counter SET n = Counter.n + 1;
  UPDATE Counter SET n = Counter.n + 10;
END;
TICK;
SELECT Counter.n;
";

fn json(dir: &std::path::Path, world: &str, text: &str) -> String {
    let o = run_in(dir, &["query", world, text, "--format", "json"], None);
    assert_exit(&o, 0);
    stdout(&o).trim().to_string()
}

#[test]
fn a_multi_line_system_runs_whole_in_the_piped_shell() {
    let dir = temp_dir("system-piped");
    let o = run_in(&dir, &["shell", "w.ecsdb", "--autosave", "--format", "json"], Some(SYSTEM.as_bytes()));
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains(r#"{"columns":["Counter.n"],"rows":[[11]]}"#),
        "both updates ran in one tick:\n{}",
        stdout(&o)
    );
    assert!(!stderr(&o).contains("error["), "{}", stderr(&o));
    assert_eq!(json(&dir, "w.ecsdb", "SELECT count(*) FROM Counter"), r#"{"columns":["count(*)"],"rows":[[1]]}"#);
}

#[test]
fn a_multi_line_system_runs_whole_on_a_terminal() {
    let dir = temp_dir("system-tty");
    let term = Terminal::start(&dir, "system", &["shell", "w.ecsdb", "--format", "json"]);
    term.wait_for("ecsdb>", 1);
    for line in SYSTEM.lines() {
        term.line(line);
    }
    let screen = term.wait_for(r#"{"columns":["Counter.n"],"rows":[[11]]}"#, 1);
    assert!(!screen.contains("error["), "{screen}");
    term.line(".quit");
    // TICK changed the world: the shell asks before dropping it.
    term.wait_for("Save changes to w.ecsdb? [Y/n]", 1);
    term.line("y");
    term.wait_for("[exited 0]", 1);
    assert_eq!(json(&dir, "w.ecsdb", "SELECT Counter.n"), r#"{"columns":["Counter.n"],"rows":[[11]]}"#);
}

#[cfg(unix)]
#[test]
fn a_multi_line_system_runs_whole_over_connect() {
    let dir = temp_dir("system-connect");
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", "-"], Some(b"CREATE COMPONENT Counter (n i64);")), 0);
    let mut server = Server::start(&dir, "w.ecsdb", &["--allow-writes", "--hz", "20"]);
    let script = "SPAWN Counter {n: 0};
CREATE SYSTEM bump AS BEGIN
  UPDATE Counter SET n = Counter.n + 1;
  UPDATE Counter SET n = Counter.n + 10;
END;
SHOW SYSTEMS;
";
    let o = run_in(&dir, &["shell", "--connect", &server.url, "--format", "json"], Some(script.as_bytes()));
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("bump"), "the system was created whole:\n{}\n{}", stdout(&o), stderr(&o));
    assert!(!stderr(&o).contains("error["), "{}", stderr(&o));
    assert!(server.terminate().success());
}

#[test]
fn tick_and_set_alone_are_changes_that_autosave_keeps() {
    let dir = temp_dir("tick-autosave");
    let setup = "CREATE COMPONENT Counter (n i64); SPAWN Counter {n: 0};
CREATE SYSTEM bump AS UPDATE Counter SET n = Counter.n + 1;";
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", "-"], Some(setup.as_bytes())), 0);
    // Only TICK: the world changed, and piped --autosave must save it.
    let o = run_in(&dir, &["shell", "w.ecsdb", "--autosave"], Some(b"TICK 3;\n"));
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("saved w.ecsdb"), "{}", stderr(&o));
    assert_eq!(json(&dir, "w.ecsdb", "SELECT Counter.n"), r#"{"columns":["Counter.n"],"rows":[[3]]}"#);
    // Only SET: a setting the world keeps, so also a change.
    let o = run_in(&dir, &["shell", "w.ecsdb", "--autosave"], Some(b"SET fixed_hz = 50;\n"));
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("saved w.ecsdb"), "{}", stderr(&o));
    // Without --autosave a piped session says it dropped the change; a read-only one says nothing.
    let o = run_in(&dir, &["shell", "w.ecsdb"], Some(b"TICK;\n"));
    assert!(stderr(&o).contains("changes were not saved"), "{}", stderr(&o));
    let o = run_in(&dir, &["shell", "w.ecsdb"], Some(b"SELECT Counter.n;\nSHOW SYSTEMS;\n"));
    assert!(!stderr(&o).contains("changes were not saved"), "{}", stderr(&o));
}

#[test]
fn a_terminal_session_of_only_set_is_offered_a_save() {
    let dir = temp_dir("set-tty");
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", "-"], Some(b"CREATE COMPONENT A (v i32);")), 0);
    let term = Terminal::start(&dir, "set", &["shell", "w.ecsdb"]);
    term.wait_for("ecsdb>", 1);
    term.line("SET fixed_hz = 50;");
    term.wait_for("ecsdb>", 2);
    term.line(".quit");
    term.wait_for("Save changes to w.ecsdb? [Y/n]", 1);
    term.line("n");
    term.wait_for("changes discarded", 1);
    term.wait_for("[exited 0]", 1);
}

#[test]
fn param_values_are_read_by_the_language() {
    let dir = temp_dir("params");
    assert_exit(&run_in(&dir, &["exec", "w.ecsdb", "-"], Some(b"CREATE COMPONENT A (v f64); SPAWN A {v: 1};")), 0);
    // `.5` is a float of the language: arithmetic on it works, as in a statement.
    let o = run_in(&dir, &["query", "w.ecsdb", "SELECT A.v + $x", "--param", "x=.5", "--format", "json"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), r#"{"columns":["A.v + $x"],"rows":[[1.5]]}"#);
    // Constant expressions and entities as the language writes them.
    let o = run_in(
        &dir,
        &["query", "w.ecsdb", "SELECT $a, $e", "--param", "a=2 * 3", "--param", "e=12v0", "--format", "json"],
        None,
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), r#"{"columns":["$a","$e"],"rows":[[6,"12v0"]]}"#);
    // `12V0` is not a value (the language writes entities `12v0`): refused, nothing runs.
    let o = run_in(&dir, &["query", "w.ecsdb", "SELECT $e", "--param", "e=12V0"], None);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("'12V0' is not a value"), "{}", stderr(&o));
    // A bare word is still the string it spells.
    let o = run_in(&dir, &["query", "w.ecsdb", "SELECT $t", "--param", "t=red", "--format", "json"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), r#"{"columns":["$t"],"rows":[["red"]]}"#);
    // `exec` reads them the same way.
    let o = run_in(&dir, &["exec", "w.ecsdb", "-", "--param", "x=.25", "--quiet"], Some(b"UPDATE A SET v = $x;"));
    assert_exit(&o, 0);
    assert_eq!(json(&dir, "w.ecsdb", "SELECT A.v"), r#"{"columns":["A.v"],"rows":[[0.25]]}"#);
}
