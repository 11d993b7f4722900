//! Prepared statements kept by their text, as SQLite's statement cache keeps them: a
//! statement run again (a game's per-frame query, a tool's refresh) skips parse, bind and
//! plan.
//!
//! An entry is valid for the catalog it was prepared against ([`CatalogStamp`]): the same
//! world, the same components and the same indexes (a function index is a name text can
//! call). Registering a function or changing the planner's settings empties the cache. A plan that
//! keeps state between runs a one-shot statement must not see (`changed()`, `added()`) is
//! never kept. Entries are taken out while they run and put back after, so two threads
//! reading through one `&Database` never share one.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Prepared;

/// How many statements are kept (the least recently used goes first).
const CAPACITY: usize = 256;

/// What a prepared statement's plan depends on besides its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CatalogStamp {
    /// [`ecsdb_engine::World::id`]: a loaded snapshot is another world.
    pub world: u64,
    /// [`ecsdb_engine::Components::version`]: a component defined or changed.
    pub components: u64,
    /// [`ecsdb_engine::World::index_catalog_version`].
    pub indexes: u64,
}

struct Entry {
    stamp: CatalogStamp,
    prepared: Prepared,
    last_used: u64,
}

/// The cache (see the module documentation).
#[derive(Default)]
pub(crate) struct StatementCache {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Box<str>, Entry, foldhash::fast::RandomState>,
    clock: u64,
}

impl StatementCache {
    /// The statement prepared from `text` for `stamp`, taken out of the cache, with its key
    /// (to put it back with).
    pub(crate) fn take(&self, text: &str, stamp: CatalogStamp) -> Option<(Box<str>, Prepared)> {
        let mut entries = self.lock();
        let (key, entry) = entries.map.remove_entry(text)?;
        (entry.stamp == stamp).then_some((key, entry.prepared))
    }

    /// Keeps `prepared`, made from the text `key` for `stamp` (unless its plan keeps state
    /// between runs, or defines the catalog).
    pub(crate) fn put(&self, key: Box<str>, stamp: CatalogStamp, prepared: Prepared) {
        if !prepared.is_cacheable() {
            return;
        }
        let mut entries = self.lock();
        entries.clock += 1;
        let last_used = entries.clock;
        if entries.map.len() >= CAPACITY && !entries.map.contains_key(&key) {
            // (A scan of a few hundred entries, once per statement that misses when full.)
            if let Some(oldest) = entries.map.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| k.clone()) {
                entries.map.remove(&oldest);
            }
        }
        entries.map.insert(key, Entry { stamp, prepared, last_used });
    }

    /// Forgets every statement.
    pub(crate) fn clear(&self) {
        self.lock().map.clear();
    }

    /// How many statements are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // (A panic while the lock was held leaves at worst a missing entry.)
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, ErrorKind};
    use ecsdb_engine::Value;

    fn count(db: &Database, text: &str) -> Value {
        db.query(text, ()).unwrap().rows[0][0].clone()
    }

    #[test]
    fn a_statement_run_again_is_prepared_once_and_answers_as_new() {
        let mut db = Database::new();
        db.execute_script("CREATE COMPONENT Health (hp f32); SPAWN Health {hp: 5}; SPAWN Health {hp: 50};").unwrap();
        let low = "SELECT count(*) WHERE Health.hp < 10";
        assert_eq!(count(&db, low), Value::Int(1));
        assert_eq!(db.statements.len(), 1);
        db.execute("SPAWN Health {hp: 1}", ()).unwrap();
        db.execute("UPDATE Health SET hp = Health.hp - 45 WHERE Health.hp > 10", ()).unwrap();
        assert_eq!(count(&db, low), Value::Int(3));
        // A component created since: the stamp moved, the statement is prepared again.
        db.execute("CREATE COMPONENT Tag ()", ()).unwrap();
        db.execute("SPAWN Health {hp: 2}, Tag", ()).unwrap();
        assert_eq!(count(&db, "SELECT count(*) WHERE Health.hp < 10 AND has(Tag)"), Value::Int(1));
        assert_eq!(count(&db, low), Value::Int(4));
    }

    #[test]
    fn what_the_cache_must_not_keep_or_give() {
        let mut db = Database::new();
        db.execute_script("CREATE COMPONENT Health (hp f32); SPAWN Health {hp: 5};").unwrap();
        // A one-shot `changed()` sees every row each time: its plan is never kept.
        let changed = "SELECT count(*) WHERE changed(Health)";
        assert_eq!(count(&db, changed), Value::Int(1));
        assert_eq!(count(&db, changed), Value::Int(1));
        // A mutating statement kept by execute is still refused by query.
        let despawn = "DESPAWN WHERE Health.hp > 100";
        db.execute(despawn, ()).unwrap();
        assert_eq!(db.query(despawn, ()).unwrap_err().kind, ErrorKind::Constraint);
        // DDL is not kept: a second CREATE is the error it is.
        assert!(db.execute("CREATE COMPONENT Health (hp f32)", ()).is_err());
        // A function registered again replaces the one a kept plan called.
        db.register_function("f", |_| Ok(Value::Int(1)));
        assert_eq!(count(&db, "SELECT f()"), Value::Int(1));
        db.register_function("f", |_| Ok(Value::Int(2)));
        assert_eq!(count(&db, "SELECT f()"), Value::Int(2));
        // A statement lent by the cache goes back to it; meanwhile the text is prepared anew.
        let mut p = db.prepare_cached("SELECT count(*)").unwrap();
        assert_eq!(count(&db, "SELECT count(*)"), Value::Int(1));
        assert_eq!(p.query(&db, ()).unwrap().rows[0][0], Value::Int(1));
        drop(p);
        assert!(db.statements.take("SELECT count(*)", db.catalog_stamp()).is_some());
    }

    #[test]
    fn a_loaded_world_is_another_catalog() {
        let mut db = Database::new();
        db.execute_script("CREATE COMPONENT A (x i32); SPAWN A {x: 1};").unwrap();
        let sum = "SELECT sum(A.x)";
        assert_eq!(count(&db, sum), Value::Int(1));
        let mut other = Database::new();
        other.execute_script("CREATE COMPONENT B (y i32); CREATE COMPONENT A (x i32); SPAWN A {x: 7};").unwrap();
        *db.world_mut() = other.into_world();
        assert_eq!(count(&db, sum), Value::Int(7));
    }
}
