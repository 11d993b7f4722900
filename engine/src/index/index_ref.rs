//! How a reader names an index: by name, or by name with the [`IndexId`] found for it once, so
//! a statement run many times skips the search by name (as SQLite's prepared statements keep
//! a table's root page while the schema is unchanged).

use std::sync::atomic::{AtomicU64, Ordering};

/// An index as found once in a world's catalog: its position there and the serial of the
/// index that held it. Another index never has the serial (serials are unique in the
/// process), so an id that no longer fits (the index was dropped or moved, or the reader is
/// over another world) is noticed and the index is found by name instead.
///
/// ```
/// use ecsdb_engine::index::{IndexDef, IndexKind, IndexPredicate, IndexRef};
/// use ecsdb_engine::{ComponentDef, FieldType, Value, World};
/// let mut world = World::new();
/// world.define_component(&ComponentDef::new("Hp", &[("v", FieldType::I64)])).unwrap();
/// world.create_index(IndexDef::new("Hp", &["v"], IndexKind::Bitmap).named("hp")).unwrap();
/// world.spawn_values(&[("Hp", &[("v", Value::Int(5))])]).unwrap();
/// let id = world.index_id("hp").unwrap();
/// let five = IndexPredicate::Eq(Value::Int(5));
/// let r = world.index_reader();
/// assert_eq!(r.estimate(IndexRef::found("hp", id), &five).unwrap().rows, 1);
/// // After the index is dropped and made again, the old id no longer fits: found by name.
/// drop(r);
/// world.drop_index("hp").unwrap();
/// world.create_index(IndexDef::new("Hp", &["v"], IndexKind::Bitmap).named("hp")).unwrap();
/// assert_ne!(world.index_id("hp"), Some(id));
/// let r = world.index_reader();
/// assert_eq!(r.estimate(IndexRef::found("hp", id), &five).unwrap().rows, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexId {
    pub(crate) position: u32,
    pub(crate) serial: u64,
}

/// Which index a reader's call is about: a name, and when the caller found it before, its
/// [`IndexId`] (tried first). `&str` and `&String` convert into a name alone.
#[derive(Clone, Copy, Debug)]
pub struct IndexRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) id: Option<IndexId>,
}

impl<'a> IndexRef<'a> {
    /// The index of this name, with the id found for it earlier (`None`: search by name).
    pub fn found(name: &'a str, id: impl Into<Option<IndexId>>) -> Self {
        IndexRef { name, id: id.into() }
    }

    /// The name.
    pub fn name(&self) -> &'a str {
        self.name
    }
}

impl<'a> From<&'a str> for IndexRef<'a> {
    fn from(name: &'a str) -> Self {
        IndexRef { name, id: None }
    }
}

impl<'a> From<&'a String> for IndexRef<'a> {
    fn from(name: &'a String) -> Self {
        IndexRef { name, id: None }
    }
}

/// A serial no other index of this process has had.
pub(crate) fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
