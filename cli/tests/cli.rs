//! End-to-end tests of the `ecsdb` binary: they run the built executable as a user or a
//! script would, and check its output, its exit codes and the world files it leaves.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_exit, run_in, stderr, stdout, temp_dir};

const SCHEMA_AND_DATA: &str = "\
CREATE COMPONENT Health (hp f32, max f32);
CREATE COMPONENT Name (value string);
CREATE COMPONENT Team (name string);
CREATE COMPONENT Frozen;
-- three entities
SPAWN Name {value: 'ziggy'}, Health {hp: 42.5, max: 100}, Team {name: 'red'};
SPAWN Name {value: 'zig'}, Health {hp: 7, max: 100}, Team {name: 'blue'}, Frozen;
SPAWN Name {value: 'a, \"quoted\" one'}, Health {hp: 100, max: 100};
UPDATE Health SET hp = Health.hp + 1 WHERE Team.name = 'blue';
";

/// A world file made by `exec` from [`SCHEMA_AND_DATA`].
fn make_world(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("setup.sql"), SCHEMA_AND_DATA).unwrap();
    let o = run_in(dir, &["exec", "world.ecsdb", "setup.sql", "--quiet"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "", "--quiet prints nothing");
    dir.join("world.ecsdb")
}

const QUERY: &str = "SELECT Name.value, Health.hp FROM Name, Health ORDER BY Health.hp";

#[test]
fn exec_a_script_then_query_it_back_in_all_three_formats() {
    let dir = temp_dir("formats");
    make_world(&dir);

    let o = run_in(&dir, &["query", "world.ecsdb", QUERY, "--format", "json"], None);
    assert_exit(&o, 0);
    let json: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(
        json,
        serde_json::json!({
            "columns": ["Name.value", "Health.hp"],
            "rows": [["zig", 8.0], ["ziggy", 42.5], ["a, \"quoted\" one", 100.0]]
        })
    );

    let o = run_in(&dir, &["query", "world.ecsdb", QUERY, "--format", "csv"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Name.value,Health.hp\r\nzig,8.0\r\nziggy,42.5\r\n\"a, \"\"quoted\"\" one\",100.0\r\n");

    let o = run_in(&dir, &["query", "world.ecsdb", QUERY], None);
    assert_exit(&o, 0);
    let table = stdout(&o);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 6, "header, rule, 3 rows, count:\n{table}");
    assert_eq!(lines[0].split('|').map(str::trim).collect::<Vec<_>>(), ["Name.value", "Health.hp"]);
    assert!(lines[1].chars().all(|c| c == '-' || c == '+'), "{table}");
    assert!(lines[2].contains("zig") && lines[2].trim_end().ends_with("8.0"), "{table}");
    assert_eq!(lines[5], "(3 rows)");
    // Columns line up: every row has its separator where the header has it.
    let bar = lines[0].find('|').unwrap();
    for l in &lines[2..5] {
        assert_eq!(l.char_indices().find(|&(_, c)| c == '|').map(|(i, _)| i), Some(bar), "{table}");
    }

    // SHOW and DESCRIBE are read-only statements too.
    let o = run_in(&dir, &["query", "world.ecsdb", "DESCRIBE Health", "--format", "json"], None);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("hp"), "{}", stdout(&o));
}

#[test]
fn exec_prints_each_result_and_reads_stdin() {
    let dir = temp_dir("exec-print");
    let script = "CREATE COMPONENT Tag; SPAWN Tag; SPAWN Tag; SELECT count(*) AS n FROM Tag;";
    let o = run_in(&dir, &["exec", "w.ecsdb", "-", "--format", "json"], Some(script.as_bytes()));
    assert_exit(&o, 0);
    let out = stdout(&o);
    let objects: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(objects.len(), 4, "one JSON object per statement:\n{out}");
    assert_eq!(objects[1]["columns"], serde_json::json!(["entity"]));
    assert_eq!(objects[3], serde_json::json!({"columns": ["n"], "rows": [[2]]}));

    let o = run_in(&dir, &["query", "w.ecsdb", "SELECT count(*) FROM Tag", "--format", "csv"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "count(*)\r\n2\r\n");
}

#[test]
fn parameters_are_bound_from_the_command_line() {
    let dir = temp_dir("params");
    make_world(&dir);
    let o = run_in(
        &dir,
        &[
            "query",
            "world.ecsdb",
            "SELECT Name.value FROM Name, Health WHERE Health.hp > $min AND Name.value LIKE $1 ORDER BY Name.value",
            "--param",
            "min=8",
            "--param",
            "1='zig%'",
            "--format",
            "csv",
        ],
        None,
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Name.value\r\nziggy\r\n");
}

#[test]
fn a_bad_statement_exits_1_with_kind_line_caret_and_suggestion() {
    let dir = temp_dir("bad-statement");
    make_world(&dir);

    let o = run_in(&dir, &["query", "world.ecsdb", "SELECT Helth.hp FROM Health"], None);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("unknown_component"), "{err}");
    assert!(err.contains("line 1"), "{err}");
    assert!(err.contains('^'), "{err}");
    assert!(err.contains("Health"), "a suggestion: {err}");
    assert_eq!(stdout(&o), "");

    // In a script, the position is the line in the script file.
    std::fs::write(
        dir.join("bad.sql"),
        "SELECT count(*) FROM Health;\n\nSELECT Health.hp\n  FROM Health WHERE Health.hp >;\n",
    )
    .unwrap();
    let o = run_in(&dir, &["exec", "world.ecsdb", "bad.sql", "--quiet"], None);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("syntax"), "{err}");
    assert!(err.contains("line 4"), "{err}");
    assert!(err.contains("FROM Health WHERE Health.hp >;"), "the line is quoted: {err}");
}

#[test]
fn a_migration_script_changes_a_saved_world_and_a_refused_one_leaves_it_unchanged() {
    let dir = temp_dir("migrate");
    let world = make_world(&dir);
    std::fs::write(
        dir.join("migrate.sql"),
        "ALTER COMPONENT Health ADD FIELD armor f32 DEFAULT 5;\nALTER COMPONENT Health RENAME FIELD max TO cap;\n\
         ALTER COMPONENT Team DROP FIELD name;\nRENAME COMPONENT Frozen TO Stunned;\n",
    )
    .unwrap();
    let o = run_in(&dir, &["exec", "world.ecsdb", "migrate.sql", "--quiet"], None);
    assert_exit(&o, 0);
    let q = "SELECT Health.hp, Health.cap, Health.armor, has(Stunned) FROM Health ORDER BY Health.hp";
    let o = run_in(&dir, &["query", "world.ecsdb", q, "--format", "csv"], None);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "Health.hp,Health.cap,Health.armor,has(Stunned)\r\n8.0,100.0,5.0,true\r\n42.5,100.0,5.0,false\r\n\
         100.0,100.0,5.0,false\r\n"
    );
    // A step that fails takes the whole script back: the file keeps the migrated schema.
    let before = std::fs::read(&world).unwrap();
    std::fs::write(
        dir.join("bad.sql"),
        "ALTER COMPONENT Health DROP FIELD armor;\nALTER COMPONENT Health DROP FIELD nope;\n",
    )
    .unwrap();
    let o = run_in(&dir, &["exec", "world.ecsdb", "bad.sql", "--quiet"], None);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("has no field 'nope'"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&world).unwrap(), before);
}

#[test]
fn a_failing_script_leaves_the_world_file_byte_for_byte_unchanged() {
    let dir = temp_dir("all-or-nothing");
    let world = make_world(&dir);
    let before = std::fs::read(&world).unwrap();

    std::fs::write(
        dir.join("fails.sql"),
        "SPAWN Name {value: 'new'};\nUPDATE Health SET hp = 0;\nSPAWN Name {valeu: 'typo'};\nSPAWN Name {value: 'never'};\n",
    )
    .unwrap();
    let o = run_in(&dir, &["exec", "world.ecsdb", "fails.sql"], None);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("unknown_field"), "{}", stderr(&o));
    assert!(stderr(&o).contains("unchanged"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&world).unwrap(), before, "the file is untouched");

    // A missing world with a failing script is not created.
    let o = run_in(&dir, &["exec", "fresh.ecsdb", "fails.sql"], None);
    assert_exit(&o, 1);
    assert!(!dir.join("fresh.ecsdb").exists());
}

#[test]
fn keep_going_skips_failing_statements_and_saves_the_rest() {
    let dir = temp_dir("keep-going");
    make_world(&dir);
    std::fs::write(
        dir.join("mixed.sql"),
        "SPAWN Name {value: 'one'};\nSPAWN Nme {value: 'bad'};\nSPAWN Name {value: 'two'};\nSPAWN Name {value: ;\n",
    )
    .unwrap();
    let o = run_in(&dir, &["exec", "world.ecsdb", "mixed.sql", "--keep-going", "--quiet"], None);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("unknown_component") && err.contains("line 2"), "{err}");
    assert!(err.contains("syntax") && err.contains("line 4"), "a statement that does not parse is skipped too: {err}");
    let o = run_in(
        &dir,
        &[
            "query",
            "world.ecsdb",
            "SELECT count(*) FROM Name WHERE Name.value IN ('one', 'two', 'bad')",
            "--format",
            "csv",
        ],
        None,
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "count(*)\r\n2\r\n");
}

#[test]
fn usage_errors_and_unreadable_files_exit_2() {
    let dir = temp_dir("usage");
    make_world(&dir);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "Usage"),
        (vec!["frobnicate"], "frobnicate"),
        (vec!["query", "world.ecsdb"], "TEXT"),
        (vec!["query", "world.ecsdb", "SELECT count(*) FROM Health", "--format", "xml"], "xml"),
        (vec!["query", "world.ecsdb", "SELECT count(*) FROM Health", "--param", "oops"], "NAME=VALUE"),
        (vec!["query", "world.ecsdb", "SELECT count(*) FROM Health", "--param", "1='open"], "unterminated"),
        (vec!["query", "missing.ecsdb", "SELECT count(*) FROM Health"], "missing.ecsdb"),
        (vec!["query", "garbage.ecsdb", "SELECT count(*) FROM Health"], "garbage.ecsdb"),
        (vec!["query", "world.ecsdb", "DESPAWN WHERE Health.hp > 0"], "exec"),
        (vec!["exec", "world.ecsdb", "no-such-script.sql"], "no-such-script.sql"),
        (vec!["exec", "world.ecsdb", "latin1.sql"], "UTF-8"),
        (vec!["exec", "no-such-dir/w.ecsdb", "ok.sql"], "no-such-dir"),
        (vec!["demo", "--entities", "lots"], "lots"),
    ];
    std::fs::write(dir.join("garbage.ecsdb"), b"\x00\x01 this is not a world \xff").unwrap();
    std::fs::write(dir.join("latin1.sql"), b"SPAWN Name {value: 'caf\xe9'};").unwrap();
    std::fs::write(dir.join("ok.sql"), "CREATE COMPONENT A;").unwrap();
    let before = std::fs::read(dir.join("world.ecsdb")).unwrap();
    for (args, needle) in cases {
        let o = run_in(&dir, &args, None);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(needle), "{args:?}: stderr lacks {needle:?}:\n{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
    assert_eq!(std::fs::read(dir.join("world.ecsdb")).unwrap(), before);
    // Help is not an error.
    let o = run_in(&dir, &["--help"], None);
    assert_exit(&o, 0);
    for cmd in ["demo", "exec", "query", "shell"] {
        assert!(stdout(&o).contains(cmd), "{}", stdout(&o));
    }
}

#[test]
fn the_shell_runs_statements_and_dot_commands_from_a_pipe() {
    let dir = temp_dir("shell");
    make_world(&dir);
    let input = "\
.format csv
SELECT Name.value
  FROM Name
  WHERE Name.value = 'zig';  -- a statement over three lines
.tables
SPAWN Name {value: 'from the shell'};
.timing on
SELECT count(*) FROM Name;
.timing off
.format json
SELECT Helth.hp;
.nonsense
SELECT count(*) AS named FROM Name;
";
    let o = run_in(&dir, &["shell", "world.ecsdb", "--autosave"], Some(input.as_bytes()));
    assert_exit(&o, 1); // one statement and one command failed
    let out = stdout(&o);
    let err = stderr(&o);
    assert!(!out.contains("ecsdb>"), "no prompt when piped:\n{out}");
    assert!(out.contains("Name.value\r\nzig\r\n"), "{out}");
    assert!(out.contains("Health") && out.contains("Frozen"), ".tables lists components:\n{out}");
    assert!(out.contains("count(*)\r\n4\r\n"), "{out}");
    assert!(out.contains("Run Time:"), "{out}");
    assert!(out.contains(r#"{"columns":["named"],"rows":[[4]]}"#), "{out}");
    assert!(err.contains("unknown_component") && err.contains('^'), "{err}");
    assert!(err.contains(".nonsense"), "{err}");

    // --autosave saved the SPAWN.
    let o = run_in(&dir, &["query", "world.ecsdb", "SELECT count(*) FROM Name", "--format", "csv"], None);
    assert_eq!(stdout(&o), "count(*)\r\n4\r\n");

    // Without --autosave, a piped shell leaves the file alone and says so; .save saves.
    let before = std::fs::read(dir.join("world.ecsdb")).unwrap();
    let o = run_in(&dir, &["shell", "world.ecsdb"], Some(b"DESPAWN WHERE Name.value = 'zig';\n"));
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("not saved"), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("world.ecsdb")).unwrap(), before);
    let o = run_in(&dir, &["shell"], Some(b"CREATE COMPONENT T;\nSPAWN T;\n.save copy.ecsdb\nSPAWN T\n"));
    assert_exit(&o, 0);
    let o = run_in(&dir, &["query", "copy.ecsdb", "SELECT count(*) FROM T", "--format", "csv"], None);
    assert_eq!(stdout(&o), "count(*)\r\n1\r\n", "a statement without ';' at EOF runs, but after the save");

    // Input that is not UTF-8 is a usage error, not a panic.
    let o = run_in(&dir, &["shell"], Some(b"SELECT '\xff';\n"));
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("UTF-8"), "{}", stderr(&o));
}

#[test]
fn the_demo_runs_with_a_small_world_and_saves_a_snapshot_that_query_opens() {
    let dir = temp_dir("demo");
    let o = run_in(&dir, &["demo", "--entities", "2000", "--ticks", "3", "--out", "small.ecsdb"], None);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]", "tick  3", "rows", "plan", "EXPLAIN", "CREATE INDEX"] {
        assert!(out.contains(needle), "demo output lacks {needle:?}:\n{out}");
    }
    assert!(!out.contains('\u{1b}'), "no progress bars or escapes when stdout is not a terminal");
    // Deaths are respawned, so the population is steady; the snapshot opens without Rust types.
    let o = run_in(&dir, &["query", "small.ecsdb", "SELECT count(*) FROM Position", "--format", "csv"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "count(*)\r\n2000\r\n");
    // The systems are saved with the world: `ecsdb run` carries on the simulation.
    let o = run_in(&dir, &["run", "small.ecsdb", "--ticks", "2"], None);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("2 ticks run (5 in all)"), "{out}");
    let tick_line = out.lines().find(|l| l.starts_with("tick: median ")).unwrap_or_else(|| panic!("{out}"));
    assert!(tick_line.contains(" ms, p99 ") && tick_line.ends_with(" ms"), "{tick_line}");
    for system in ["movement", "hazard", "thaw", "respawn", "revive"] {
        assert!(out.lines().any(|l| l.starts_with(system) && l.contains(" 2 ")), "{system} ran twice:\n{out}");
    }
    let o = run_in(&dir, &["query", "small.ecsdb", "SELECT count(*) FROM Position", "--format", "csv"], None);
    assert_eq!(stdout(&o), "count(*)\r\n2000\r\n");
    let o =
        run_in(&dir, &["query", "small.ecsdb", "SELECT count(*) FROM Player, Name, Level", "--format", "json"], None);
    assert_exit(&o, 0);
    let n = serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()["rows"][0][0].as_i64().unwrap();
    assert!(n > 0 && n <= 40, "{n} players");
}
