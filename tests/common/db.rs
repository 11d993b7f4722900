//! Statement helpers: run text against a database and get its rows, with the error rendered
//! against the text when it fails.

use ecsdb::query::Database;
use ecsdb::{Entity, Value};

/// The rows of a read-only statement.
pub fn rows(db: &Database, text: &str) -> Vec<Vec<Value>> {
    db.query(text, ()).unwrap_or_else(|e| panic!("{text}:\n{}", e.render(text))).rows
}

/// The rows of any statement.
pub fn run(db: &mut Database, text: &str) -> Vec<Vec<Value>> {
    db.execute(text, ()).unwrap_or_else(|e| panic!("{text}:\n{}", e.render(text))).rows
}

/// [`rows`], sorted by their printed form: for comparing answers whose order is unspecified.
pub fn sorted(db: &Database, text: &str) -> Vec<Vec<Value>> {
    let mut r = rows(db, text);
    r.sort_by_key(|row| format!("{row:?}"));
    r
}

/// `EXPLAIN text`, one line a step.
pub fn explain(db: &Database, text: &str) -> String {
    rows(db, &format!("EXPLAIN {text}")).iter().map(|r| r[0].to_string()).collect::<Vec<_>>().join("\n")
}

/// The int in the first column of the first row.
pub fn int(db: &Database, text: &str) -> i64 {
    match rows(db, text).first().and_then(|r| r.first()) {
        Some(Value::Int(i)) => *i,
        other => panic!("{text}: not an int: {other:?}"),
    }
}

/// The entity a value holds.
pub fn entity(v: &Value) -> Entity {
    match v {
        Value::Entity(e) => *e,
        other => panic!("not an entity: {other:?}"),
    }
}

/// The entity a `SPAWN` statement made.
pub fn spawned(db: &mut Database, text: &str) -> Entity {
    entity(&run(db, text)[0][0])
}

/// A database that ran `script`.
pub fn db_with(script: &str) -> Database {
    let mut db = Database::new();
    db.execute_script(script).unwrap_or_else(|e| panic!("{}", e.render(script)));
    db
}
