//! `ecsdb export` and `ecsdb import` as a user runs them: round trips through every format,
//! errors that name file, row and column and leave the world file untouched, and DuckDB
//! reading an exported demo world with the same answers as `ecsdb query`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_ecsdb");

fn temp_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-transfer-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("the ecsdb binary runs")
}

#[track_caller]
fn ok(o: Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// A small demo world (its systems have run, so ids were despawned and reused).
fn demo(dir: &Path) {
    ok(run(dir, &["demo", "--entities", "3000", "--ticks", "3", "--out", "demo.ecsdb"]));
}

const COMPONENTS: [&str; 9] =
    ["Position", "Velocity", "Health", "Team", "Name", "Level", "Player", "Monster", "Frozen"];

/// Every component's rows, in the world's order, as `ecsdb query` prints them.
fn select_dump(dir: &Path, world: &str) -> String {
    let mut out = String::new();
    for c in COMPONENTS {
        out += &ok(run(dir, &["query", world, &format!("SELECT entity, {c} FROM {c}"), "--format", "csv"]));
    }
    out += &ok(run(dir, &["query", world, "SHOW COMPONENTS", "--format", "csv"]));
    // The import saves the index definitions without building them; loading builds them.
    out += &ok(run(dir, &["query", world, "SHOW INDEXES", "--format", "csv"]));
    out
}

fn read_all(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn export_import_export_changes_nothing() {
    let dir = temp_dir("roundtrip");
    demo(&dir);
    let original = select_dump(&dir, "demo.ecsdb");
    for format in ["csv", "parquet", "jsonl"] {
        let (a, b, world) = (format!("{format}-a"), format!("{format}-b"), format!("re-{format}.ecsdb"));
        let out = ok(run(&dir, &["export", "demo.ecsdb", &a, "--format", format]));
        assert!(out.starts_with("exported "), "{out}");
        let out = ok(run(&dir, &["import", &world, &a]));
        assert!(out.starts_with("imported "), "{out}");
        assert_eq!(select_dump(&dir, &world), original, "{format}: a SELECT dump of the re-imported world");
        ok(run(&dir, &["export", &world, &b, "--format", format]));
        assert_eq!(read_all(&dir.join(&a)), read_all(&dir.join(&b)), "{format}: the second export is byte-identical");
    }
    // --components: only those files.
    ok(run(&dir, &["export", "demo.ecsdb", "some", "--format", "csv", "--components", "Health,Player"]));
    let names: Vec<String> = read_all(&dir.join("some")).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["Health.csv", "Player.csv", "schema.json"]);
}

#[test]
fn a_failed_import_names_the_place_and_leaves_the_world_file_alone() {
    let dir = temp_dir("errors");
    demo(&dir);
    ok(run(&dir, &["export", "demo.ecsdb", "x", "--format", "csv"]));
    let health = std::fs::read_to_string(dir.join("x/Health.csv")).unwrap();
    let mut lines: Vec<&str> = health.lines().collect();
    lines[3] = "12v0,lots,100";
    std::fs::write(dir.join("x/Health.csv"), lines.join("\n") + "\n").unwrap();
    // An existing empty world (components defined, no entities) stays byte for byte.
    std::fs::write(dir.join("setup.sql"), "CREATE COMPONENT Unrelated (v i32);").unwrap();
    ok(run(&dir, &["exec", "empty.ecsdb", "setup.sql", "--quiet"]));
    let before = std::fs::read(dir.join("empty.ecsdb")).unwrap();
    let o = run(&dir, &["import", "empty.ecsdb", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Health.csv: row 3, column 'hp': 'lots' does not fit field type f32"), "{err}");
    assert_eq!(std::fs::read(dir.join("empty.ecsdb")).unwrap(), before);
    // A new world file is not created.
    let o = run(&dir, &["import", "new.ecsdb", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.join("new.ecsdb").exists());
    // A world with entities is refused.
    let o = run(&dir, &["import", "demo.ecsdb", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("live entities"));
}

/// Ten questions, asked of `ecsdb query` and of DuckDB over the exported Parquet files.
/// `sorted`: compare the rows as sets (DuckDB orders entity strings differently).
const QUESTIONS: [(&str, &str, bool); 10] = [
    ("SELECT count(*) AS n FROM Position", "SELECT count(*) FROM Position", false),
    (
        "SELECT Team.name, count(*) AS n FROM Team, Health GROUP BY Team.name ORDER BY Team.name",
        "SELECT t.name, count(*) FROM Team t JOIN Health h USING (entity) GROUP BY t.name ORDER BY t.name",
        false,
    ),
    (
        "SELECT Team.name, avg(Health.hp) AS hp, max(Level.value) AS top FROM Team, Health, Level \
         GROUP BY Team.name ORDER BY Team.name",
        "SELECT t.name, avg(h.hp), max(l.value) FROM Team t JOIN Health h USING (entity) JOIN Level l USING (entity) \
         GROUP BY t.name ORDER BY t.name",
        false,
    ),
    ("SELECT count(*) AS n FROM Health WHERE Health.hp < 50", "SELECT count(*) FROM Health WHERE hp < 50", false),
    (
        "SELECT max(Level.value) AS top, sum(Level.value) AS total FROM Level, Player",
        "SELECT max(l.value), sum(l.value) FROM Level l JOIN Player p USING (entity)",
        false,
    ),
    (
        "SELECT Team.name, count(*) AS n FROM Team, Monster, Frozen GROUP BY Team.name ORDER BY Team.name",
        "SELECT t.name, count(*) FROM Team t JOIN Monster USING (entity) JOIN Frozen USING (entity) \
         GROUP BY t.name ORDER BY t.name",
        false,
    ),
    (
        "SELECT count(*) AS n, min(Position.x) AS lo, max(Position.y) AS hi FROM Position WHERE Position.x < 0",
        "SELECT count(*), min(x), max(y) FROM Position WHERE x < 0",
        false,
    ),
    (
        "SELECT Name.value, Level.value FROM Name, Level ORDER BY Level.value DESC, Name.value LIMIT 5",
        "SELECT n.value, l.value FROM Name n JOIN Level l USING (entity) ORDER BY l.value DESC, n.value LIMIT 5",
        false,
    ),
    (
        "SELECT entity, Health.hp FROM Health, Player WHERE Health.hp > 150",
        "SELECT entity, hp FROM Health JOIN Player USING (entity) WHERE hp > 150",
        true,
    ),
    (
        "SELECT count(*) AS n FROM Position, Health, !Velocity",
        "SELECT count(*) FROM Position JOIN Health USING (entity) WHERE entity NOT IN (SELECT entity FROM Velocity)",
        false,
    ),
];

/// Whether DuckDB's Python package is importable; CI (which installs it) sets
/// `ECSDB_REQUIRE_DUCKDB=1` so that its absence fails there instead of skipping.
fn duckdb_available() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import duckdb"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found && std::env::var("ECSDB_REQUIRE_DUCKDB").is_ok_and(|v| v == "1") {
        panic!("ECSDB_REQUIRE_DUCKDB=1 but `python3 -c 'import duckdb'` fails: pip install duckdb");
    }
    found
}

fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

#[test]
fn duckdb_reads_an_exported_world_with_the_same_answers() {
    if !duckdb_available() {
        eprintln!("skipped: DuckDB's Python package is not installed (pip install duckdb)");
        return;
    }
    let dir = temp_dir("duckdb");
    demo(&dir);
    ok(run(&dir, &["export", "demo.ecsdb", "pq"]));
    let duck_sql: Vec<&str> = QUESTIONS.iter().map(|q| q.1).collect();
    let script = format!(
        "import duckdb, json, sys\n\
         con = duckdb.connect()\n\
         for c in {components:?}:\n\
         \x20   con.execute(f\"CREATE VIEW {{c}} AS SELECT * FROM read_parquet('pq/{{c}}.parquet')\")\n\
         for q in {duck_sql:?}:\n\
         \x20   print(json.dumps([list(r) for r in con.execute(q, ()).fetchall()]))\n",
        components = COMPONENTS,
    );
    std::fs::write(dir.join("duck.py"), script).unwrap();
    let o = Command::new("python3").arg("duck.py").current_dir(&dir).output().unwrap();
    let duck_out = ok(o);
    let answers: Vec<Vec<Vec<serde_json::Value>>> =
        duck_out.lines().map(|l| serde_json::from_str(l).expect("a JSON line per query")).collect();
    assert_eq!(answers.len(), QUESTIONS.len());
    for ((ours, theirs, sorted), duck) in QUESTIONS.iter().zip(answers) {
        let out = ok(run(&dir, &["query", "demo.ecsdb", ours, "--format", "json"]));
        let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let mut mine: Vec<Vec<serde_json::Value>> = serde_json::from_value(json["rows"].clone()).unwrap();
        let mut duck = duck;
        if *sorted {
            let key = |r: &Vec<serde_json::Value>| r.iter().map(|v| v.to_string()).collect::<Vec<_>>();
            mine.sort_by_key(key);
            duck.sort_by_key(key);
        }
        assert!(!mine.is_empty(), "{ours}: no rows, the comparison would prove nothing");
        let agree = mine.len() == duck.len()
            && mine
                .iter()
                .zip(&duck)
                .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y)));
        assert!(agree, "ecsdb and DuckDB disagree\n ecsdb:  {ours}\n  {mine:?}\n duckdb: {theirs}\n  {duck:?}");
    }
}
