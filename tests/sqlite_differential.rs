//! Differential test against SQLite (rusqlite, bundled): the same random worlds and the same
//! random statements in ecsdb and in SQLite, with every component stored in the tables, every
//! one `STORAGE SPARSE`, or components moved back and forth by `ALTER COMPONENT … SET
//! STORAGE` between statements. Each component is a SQLite table keyed by the entity's
//! index (`A (e INTEGER PRIMARY KEY, x, y)`); a term list becomes joins (`A, B` is `A JOIN B
//! USING (e)`), `!C` a `NOT EXISTS`, `?C` a `LEFT JOIN`, and writes the matching `UPDATE`,
//! `INSERT OR REPLACE` and `DELETE`. Every answer must be the same, whatever the storage.
//!
//! A failure prints the seed, the storage, and both statements; rerun one world with
//! `SQLITE_DIFF_SEED=<seed> cargo test -p ecsdb --test sqlite_differential`.

mod common;

use common::db::{run, spawned};
use common::rng::{Rng, mix};
use ecsdb::Value;
use ecsdb::query::Database;
use rusqlite::Connection;

/// A field: its name, its ecsdb type and its SQLite type.
type Field = (&'static str, &'static str, &'static str);

/// The components: name, fields.
const COMPONENTS: [(&str, &[Field]); 3] = [
    ("A", &[("x", "i32", "INTEGER"), ("y", "f32", "REAL")]),
    ("B", &[("k", "i32", "INTEGER")]),
    ("C", &[("s", "string", "TEXT")]),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    Table,
    Sparse,
    /// In the tables, then a component moved after every few statements.
    Moving,
}

/// Both databases, kept equal.
struct Pair {
    db: Database,
    sql: Connection,
    storage: Storage,
    moves: usize,
}

impl Pair {
    fn new(storage: Storage) -> Pair {
        let mut db = Database::new();
        let sql = Connection::open_in_memory().unwrap();
        for (name, fields) in COMPONENTS {
            let ours: Vec<String> = fields.iter().map(|(f, t, _)| format!("{f} {t}")).collect();
            let kind = if storage == Storage::Sparse { " STORAGE SPARSE" } else { "" };
            run(&mut db, &format!("CREATE COMPONENT {name} ({}){kind}", ours.join(", ")));
            let theirs: Vec<String> = fields.iter().map(|(f, _, t)| format!("{f} {t} NOT NULL")).collect();
            sql.execute_batch(&format!("CREATE TABLE {name} (e INTEGER PRIMARY KEY, {})", theirs.join(", "))).unwrap();
        }
        Pair { db, sql, storage, moves: 0 }
    }

    /// With [`Storage::Moving`], moves one component to the other storage now and then.
    fn maybe_move(&mut self, rng: &mut Rng) {
        if self.storage != Storage::Moving || !rng.chance(0.3) {
            return;
        }
        let (name, _) = rng.pick(&COMPONENTS);
        let sparse = self.db.world().components().by_name(name).unwrap().storage() == ecsdb::StorageKind::Sparse;
        run(&mut self.db, &format!("ALTER COMPONENT {name} SET STORAGE {}", if sparse { "TABLE" } else { "SPARSE" }));
        self.moves += 1;
    }
}

/// A random value of a field, as ecsdb text (SQLite reads the same literal).
fn literal(rng: &mut Rng, ty: &str) -> String {
    match ty {
        "i32" => rng.range(0, 40).to_string(),
        // Halves: exact in f32 and f64, so sums agree.
        "f32" => format!("{:.1}", rng.range(-20, 20) as f64 / 2.0),
        _ => format!("'s{}'", rng.range(0, 6)),
    }
}

/// Spawns an entity with a random non-empty set of components in both.
fn spawn(p: &mut Pair, rng: &mut Rng) {
    let mut parts = Vec::new();
    let mut rows = Vec::new();
    for (name, fields) in COMPONENTS {
        if !rng.chance([0.8, 0.4, 0.5][parts.len().min(2)]) {
            continue;
        }
        let values: Vec<(&str, String)> = fields.iter().map(|(f, t, _)| (*f, literal(rng, t))).collect();
        let ours: Vec<String> = values.iter().map(|(f, v)| format!("{f}: {v}")).collect();
        parts.push(format!("{name} {{{}}}", ours.join(", ")));
        rows.push((name, values));
    }
    let e = spawned(&mut p.db, &format!("SPAWN {}", parts.join(", ")));
    for (name, values) in rows {
        let cols: Vec<&str> = values.iter().map(|(f, _)| *f).collect();
        let vals: Vec<&str> = values.iter().map(|(_, v)| v.as_str()).collect();
        let text = format!("INSERT INTO {name} (e, {}) VALUES ({}, {})", cols.join(", "), e.index(), vals.join(", "));
        p.sql.execute_batch(&text).unwrap();
    }
}

/// A random query's terms: the required components (the first is the one SQL reads the
/// entity from), the forbidden and the optional one.
struct Terms {
    required: Vec<&'static str>,
    forbidden: Option<&'static str>,
    optional: Option<&'static str>,
}

fn terms(rng: &mut Rng) -> Terms {
    let mut names: Vec<&'static str> = COMPONENTS.iter().map(|(n, _)| *n).collect();
    rng.shuffle(&mut names);
    let n_required = rng.range(1, 3) as usize;
    let required = names[..n_required].to_vec();
    let rest = &names[n_required..];
    let (forbidden, optional) = match (rest.first(), rng.below(3)) {
        (Some(&c), 0) => (Some(c), None),
        (Some(&c), 1) => (None, Some(c)),
        _ => (None, None),
    };
    Terms { required, forbidden, optional }
}

impl Terms {
    fn ours(&self) -> String {
        let mut t: Vec<String> = self.required.iter().map(|c| c.to_string()).collect();
        t.extend(self.forbidden.map(|c| format!("!{c}")));
        t.extend(self.optional.map(|c| format!("?{c}")));
        t.join(", ")
    }

    /// `FROM … [LEFT JOIN …]` and the conditions the terms add to WHERE.
    fn theirs(&self) -> (String, Vec<String>) {
        let first = self.required[0];
        let mut from = first.to_string();
        for c in &self.required[1..] {
            from.push_str(&format!(" JOIN {c} ON {c}.e = {first}.e"));
        }
        if let Some(c) = self.optional {
            from.push_str(&format!(" LEFT JOIN {c} ON {c}.e = {first}.e"));
        }
        let conds = self.forbidden.map(|c| format!("NOT EXISTS (SELECT 1 FROM {c} WHERE {c}.e = {first}.e)"));
        (from, conds.into_iter().collect())
    }
}

/// A predicate over the required components' fields (and `has` / `IS NULL` of the optional
/// one), as `(ecsdb text, SQLite text)`.
fn predicate(rng: &mut Rng, t: &Terms, depth: usize) -> (String, String) {
    if depth < 2 && rng.chance(0.35) {
        let (a, b) = (predicate(rng, t, depth + 1), predicate(rng, t, depth + 1));
        let op = if rng.chance(0.5) { "AND" } else { "OR" };
        let (ours, theirs) = (format!("({} {op} {})", a.0, b.0), format!("({} {op} {})", a.1, b.1));
        return if rng.chance(0.2) { (format!("NOT {ours}"), format!("NOT {theirs}")) } else { (ours, theirs) };
    }
    if let Some(c) = t.optional
        && rng.chance(0.25)
    {
        let f = COMPONENTS.iter().find(|(n, _)| *n == c).unwrap().1[0].0;
        return if rng.chance(0.5) {
            (format!("has({c})"), format!("{c}.e IS NOT NULL"))
        } else {
            (format!("{c}.{f} IS NULL"), format!("{c}.{f} IS NULL"))
        };
    }
    let c = *rng.pick(&t.required);
    let (f, ty, _) = *rng.pick(COMPONENTS.iter().find(|(n, _)| *n == c).unwrap().1);
    let v = literal(rng, ty);
    let op = if ty == "string" { *rng.pick(&["=", "!="]) } else { *rng.pick(&["=", "<", ">=", "!="]) };
    let text = format!("{c}.{f} {op} {v}");
    (text.clone(), text)
}

/// A random query, as `(ecsdb text, SQLite text)`.
fn query(rng: &mut Rng) -> (String, String) {
    let t = terms(rng);
    let (from, mut conds) = t.theirs();
    let pred = rng.chance(0.8).then(|| predicate(rng, &t, 0));
    let ours_where = pred.as_ref().map_or(String::new(), |(o, _)| format!(" WHERE {o}"));
    conds.extend(pred.map(|(_, s)| s));
    let theirs_where = if conds.is_empty() { String::new() } else { format!(" WHERE {}", conds.join(" AND ")) };
    let first = t.required[0];
    let has = |c: &str| t.required.contains(&c);
    match rng.below(4) {
        0 => (
            format!("SELECT count(*) FROM {}{ours_where}", t.ours()),
            format!("SELECT count(*) FROM {from}{theirs_where}"),
        ),
        1 => {
            let (f, _, _) = COMPONENTS.iter().find(|(n, _)| *n == first).unwrap().1[0];
            let limit = rng.range(1, 30);
            (
                format!("SELECT entity, {first}.{f} FROM {}{ours_where} ORDER BY entity LIMIT {limit}", t.ours()),
                format!("SELECT {first}.e, {first}.{f} FROM {from}{theirs_where} ORDER BY {first}.e LIMIT {limit}"),
            )
        }
        2 if has("A") && has("B") => (
            format!("SELECT B.k, count(*), sum(A.x) FROM {}{ours_where} GROUP BY B.k ORDER BY B.k", t.ours()),
            format!("SELECT B.k, count(*), sum(A.x) FROM {from}{theirs_where} GROUP BY B.k ORDER BY B.k"),
        ),
        _ if has("A") => (
            format!("SELECT count(*), min(A.y), max(A.x), sum(A.y) FROM {}{ours_where}", t.ours()),
            format!("SELECT count(*), min(A.y), max(A.x), sum(A.y) FROM {from}{theirs_where}"),
        ),
        _ => (
            format!("SELECT count(*) FROM {}{ours_where}", t.ours()),
            format!("SELECT count(*) FROM {from}{theirs_where}"),
        ),
    }
}

/// A random write, as `(ecsdb text, SQLite script)`.
fn write(rng: &mut Rng) -> (String, String) {
    let t = rng.range(0, 40);
    match rng.below(4) {
        0 => (
            format!("UPDATE A SET x = A.x + 3 WHERE A.y >= {:.1}", t as f64 / 4.0 - 5.0),
            format!("UPDATE A SET x = x + 3 WHERE y >= {:.1}", t as f64 / 4.0 - 5.0),
        ),
        1 => (
            format!("ADD B {{k: {}}} WHERE A.x < {t}", t % 7),
            format!("INSERT OR REPLACE INTO B (e, k) SELECT e, {} FROM A WHERE x < {t}", t % 7),
        ),
        2 => (format!("REMOVE C WHERE A.x > {t}"), format!("DELETE FROM C WHERE e IN (SELECT e FROM A WHERE x > {t})")),
        _ => {
            let k = t % 9;
            let gone = format!("SELECT e FROM B WHERE k = {k}");
            (
                format!("DESPAWN WHERE B.k = {k}"),
                format!(
                    "CREATE TEMP TABLE gone AS {gone}; DELETE FROM A WHERE e IN (SELECT e FROM gone); \
                     DELETE FROM C WHERE e IN (SELECT e FROM gone); DELETE FROM B WHERE e IN (SELECT e FROM gone); \
                     DROP TABLE gone"
                ),
            )
        }
    }
}

/// An ecsdb value as SQLite gives it back (entities as their index).
fn normal(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:.4}"),
        Value::Str(s) => format!("'{s}'"),
        Value::Entity(e) => e.index().to_string(),
        Value::Bool(b) => (*b as i64).to_string(),
        other => format!("{other:?}"),
    }
}

fn sqlite_rows(sql: &Connection, text: &str) -> Vec<Vec<String>> {
    let mut st = sql.prepare(text).unwrap_or_else(|e| panic!("SQLite refused {text}: {e}"));
    let n = st.column_count();
    st.query_map([], |row| {
        Ok((0..n)
            .map(|i| match row.get_ref(i).unwrap() {
                rusqlite::types::ValueRef::Null => "null".to_string(),
                rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                rusqlite::types::ValueRef::Real(f) => format!("{f:.4}"),
                rusqlite::types::ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t)),
                rusqlite::types::ValueRef::Blob(_) => "blob".to_string(),
            })
            .collect())
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// A world of `seed` in `storage`: spawns, then statements, each query compared.
fn world(seed: u64, storage: Storage, steps: usize) -> Result<(usize, usize), String> {
    let mut rng = Rng::new(seed);
    let mut p = Pair::new(storage);
    for _ in 0..rng.range(20, 160) {
        spawn(&mut p, &mut rng);
    }
    let mut compared = 0;
    for step in 0..steps {
        p.maybe_move(&mut rng);
        if rng.chance(0.15) {
            let (ours, theirs) = write(&mut rng);
            run(&mut p.db, &ours);
            p.sql.execute_batch(&theirs).unwrap();
            continue;
        }
        if rng.chance(0.05) {
            spawn(&mut p, &mut rng);
            continue;
        }
        let (ours, theirs) = query(&mut rng);
        let got: Vec<Vec<String>> = match p.db.query(&ours, ()) {
            Ok(rs) => rs.rows.iter().map(|r| r.iter().map(normal).collect()).collect(),
            Err(e) => return Err(format!("seed {seed} ({storage:?}) step {step}: ecsdb refused {ours}: {e}")),
        };
        let expected = sqlite_rows(&p.sql, &theirs);
        if got != expected {
            return Err(format!(
                "seed {seed} ({storage:?}, {} moves) step {step}:\n  ecsdb:  {ours}\n  -> {got:?}\n  SQLite: {theirs}\n  -> {expected:?}",
                p.moves
            ));
        }
        compared += 1;
    }
    Ok((compared, p.moves))
}

#[test]
fn the_same_answers_as_sqlite_in_every_storage() {
    let seeds: Vec<u64> = match std::env::var("SQLITE_DIFF_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => (0..16).map(|i| mix(0x5a17e, i)).collect(),
    };
    let mut failures = Vec::new();
    let (mut compared, mut moves) = (0, 0);
    for &seed in &seeds {
        for storage in [Storage::Table, Storage::Sparse, Storage::Moving] {
            match world(seed, storage, 120) {
                Ok((n, m)) => (compared, moves) = (compared + n, moves + m),
                Err(why) => failures.push(why),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} worlds differ:\n{}", failures.len(), seeds.len() * 3, failures.join("\n\n"));
    assert!(compared > seeds.len() * 3 * 50, "only {compared} queries compared");
    assert!(moves >= seeds.len() * 10, "only {moves} storage moves");
}
