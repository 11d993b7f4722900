//! Secondary indexes: plug-ins behind one small trait, kept exactly in step with the data,
//! asked by the query planner to answer predicates with sets of entities.
//!
//! An index never changes an answer, only its speed: every answer holds every entity a full
//! scan of the component would return for the same predicate, under the comparison rules of
//! the text language (see [Semantics](#semantics)). Every kind but `skip` answers exactly
//! those; `skip` answers whole blocks, a superset, and the executor tests the predicate on
//! every row it visits either way. When an index cannot guarantee that for some
//! predicate, it declines it ([`SecondaryIndex::estimate`] returns `None`) and the planner
//! scans.
//!
//! # Kinds
//!
//! | kind | built on | over | answers |
//! |---|---|---|---|
//! | [`IndexKind::Rtree`] | rstar | a vector-like component (2 or 3 numeric fields, in declaration order) or one `vec2`/`vec3` field | [`WithinRadius`], [`InsideBox`], [`Nearest`] (ordered), [`Present`] |
//! | [`IndexKind::Bitmap`] | roaring | one field of a low-cardinality type (bool, integers, floats, strings, entities), or no field: presence of a component/tag | [`Eq`], [`In`], [`NotEq`], [`Present`] |
//! | [`IndexKind::Btree`] | `BTreeMap<key, entity set>` | one orderable field (as for bitmap) | [`Eq`], [`In`], [`NotEq`], [`Range`], [`Ordered`] (ordered), [`Present`] |
//! | [`IndexKind::Function`] | roaring | a Rust predicate over one component, registered by name | [`Function`], [`Present`] |
//! | [`IndexKind::Relation`] | roaring, as bitmap | one `entity` field: target → referrers | [`Eq`], [`In`]; hierarchy walks through [`IndexReader::descendants`](crate::IndexReader::descendants) |
//! | [`IndexKind::Skip`] | per block of 1024 entity ids: min/max and a Bloom filter (fastbloom) | one orderable field (as for bitmap) | [`Eq`], [`In`], [`NotEq`], [`Range`], as the blocks that may match (a superset) |
//!
//! [`WithinRadius`]: IndexPredicate::WithinRadius
//! [`InsideBox`]: IndexPredicate::InsideBox
//! [`Nearest`]: IndexPredicate::Nearest
//! [`Present`]: IndexPredicate::Present
//! [`Eq`]: IndexPredicate::Eq
//! [`In`]: IndexPredicate::In
//! [`NotEq`]: IndexPredicate::NotEq
//! [`Range`]: IndexPredicate::Range
//! [`Ordered`]: IndexPredicate::Ordered
//! [`Function`]: IndexPredicate::Function
//!
//! # Using indexes from a planner
//!
//! ```
//! use std::ops::Bound;
//! use ecsdb_engine::index::{IndexAnswer, IndexDef, IndexKind, IndexPredicate};
//! use ecsdb_engine::{Component, Value, World};
//!
//! #[derive(Component)] struct Position { x: f32, y: f32, z: f32 }
//! #[derive(Component)] struct Health { hp: f32 }
//!
//! let mut world = World::new();
//! for i in 0..100 {
//!     world.spawn((Position { x: i as f32, y: 0.0, z: 0.0 }, Health { hp: (i % 10) as f32 }));
//! }
//! let rtree = world.create_index(IndexDef::new("Position", &[], IndexKind::Rtree)).unwrap();
//! assert_eq!(rtree, "Position_x_y_z_rtree");
//! let hp = world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).unwrap();
//!
//! // One reader per statement: refreshes what changed since the last refresh, then gives
//! // shared, never-stale access for as long as it lives.
//! let r = world.index_reader();
//! let health = world.component_id("Health").unwrap();
//! assert_eq!(r.on(health)[0].name, hp);
//!
//! let near = IndexPredicate::WithinRadius { center: vec![10.0, 0.0, 0.0], radius: 2.0, inclusive: true };
//! // Planner: compare est.cost with a scan's (about one unit per row: 100 here, so a
//! // table this small is better scanned; at a million rows the index wins).
//! let est = r.estimate(&rtree, &near).unwrap();
//! assert!(est.rows <= 100 && est.cost > 0.0);
//! let Some(IndexAnswer::Set(found)) = r.answer(&rtree, &near) else { panic!() };
//! assert_eq!(found.iter().collect::<Vec<u32>>(), [8, 9, 10, 11, 12]); // entity indices
//!
//! let low = IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Excluded(Value::Int(2)) };
//! let Some(IndexAnswer::Set(weak)) = r.answer(&hp, &low) else { panic!() };
//! assert_eq!(weak.len(), 20);
//! let both = found & weak;                              // combine before touching any row
//! assert_eq!(both.iter().collect::<Vec<u32>>(), [10, 11]);
//!
//! // ORDER BY distance(Position, [50, 0, 0]) LIMIT 3: a lazy, exactly ordered stream.
//! let knn = IndexPredicate::Nearest { point: vec![50.0, 0.0, 0.0], k: 3 };
//! let Some(IndexAnswer::Ordered(it)) = r.answer(&rtree, &knn) else { panic!() };
//! assert_eq!(it.take(3).collect::<Vec<u32>>(), [50, 49, 51]); // ties by entity index
//! ```
//!
//! The planner's steps:
//! 1. [`World::index_reader`](crate::World::index_reader) (or [`World::refresh_indexes`](crate::World::refresh_indexes) with `&mut World`) once per
//!    statement. It scans the change ticks of the indexed components (cheap: about 0.15 ms per
//!    million rows and index on the benchmark machine; no value is read for unchanged rows)
//!    and applies what changed; when no tick went to a writer since the last refresh it
//!    scans nothing (a 1M-entity text query through a btree went from ~390 µs to ~43 µs). The [`IndexReader`](crate::IndexReader) borrows the world, so nothing can change while it lives:
//!    its answers are never stale. A program that knows the world did not change since its
//!    last reader (the text front door can track whether it handed out `&mut World`) may keep
//!    using one reader for many statements.
//! 2. Find candidates with [`IndexReader::on`](crate::IndexReader::on) (the indexes of a component) or
//!    [`IndexReader::list`](crate::IndexReader::list); a function call `name(C)` in text maps to the function index
//!    named `name` ([`IndexReader::info`](crate::IndexReader::info), kind [`IndexKind::Function`]).
//! 3. Build an [`IndexPredicate`] from a conjunct and ask [`IndexReader::estimate`](crate::IndexReader::estimate): `None` =
//!    this index cannot answer it (fall back to a scan or another index); otherwise estimated
//!    rows and a cost in *scan-row units* (1.0 ≈ testing one row in a column scan; a full scan
//!    of `n` rows with one predicate costs about `n`).
//! 4. [`IndexReader::answer`](crate::IndexReader::answer) gives exactly the entities (by index: map an index to its live
//!    [`Entity`](crate::Entity) with [`Entities::resolve`](crate::Entities::resolve)) that have
//!    the component and satisfy the predicate. Combine several [`IndexAnswer::Set`]s with
//!    `&`, `|`, `-` before touching any row. An [`IndexAnswer::Ordered`] stream is lazy: pull
//!    rows until `LIMIT` rows passed the remaining filters. When a range is the only indexed
//!    conjunct, [`IndexPredicate::Ordered`] over it gives the same entities in key order
//!    without sorting them into a set: about twice as fast as [`IndexPredicate::Range`] for a
//!    thousand rows (the benchmark's `range_btree`).
//!
//! The answer covers only entities that *have* the indexed component: `?C`, `!C`, `A | B` and
//! `has(C)` terms are the planner's to combine (a [`IndexPredicate::Present`] answer helps).
//!
//! # Semantics
//!
//! Comparisons follow the text language's scans (`query/src/execute/ops.rs`):
//! - an `int` compares with an `int` exactly and with a `float` as floats (`i as f64`);
//! - `null` never matches (a null predicate value matches nothing; a row whose field reads as
//!   null — a null `entity` — matches no comparison, `!=` included); NaN is read like null;
//!   `-0.0 = 0.0`;
//! - strings compare by bytes, `false < true`, entities by (index, generation);
//! - a value whose type does not compare with the field's (a string against a float) is a type
//!   error in the language: the index declines rather than guessing;
//! - `distance(a, b)` is [`distance`] (`sqrt` of the sum of squared differences, in
//!   coordinate order): the same float operations as the scan, so boundary cases agree bit
//!   for bit; `inside` tests `lo <= p <= hi` per coordinate;
//! - `ORDER BY` puts nulls first ascending and last descending, and ties in ascending entity
//!   order. Ordered answers follow this; where NaN would take part in an ordering (a float
//!   field holding NaN, a position with a NaN coordinate) the index declines the ordered
//!   predicate.
//!
//! An index also declines every predicate but [`IndexPredicate::Present`] while some row of
//! its component cannot be read as a value (a `u64` above `i64::MAX`): the scan reports the
//! error.
//!
//! # Keeping in step
//!
//! Indexes use no write hooks for values. Every column keeps per-row changed ticks, stamped by
//! every write path (typed `&mut` through [`Mut`](crate::Mut), `get_mut`, `set_fields`,
//! spawns, inserts, command buffers); table moves keep them. Each index remembers the world
//! tick of its last refresh; a refresh takes a new tick, scans the changed ticks of every
//! table (or sparse set) holding the component in chunks, reads only the rows newer than
//! its last refresh and hands them to [`SecondaryIndex::update`]. Removals (remove, despawn)
//! arrive through the world's removal hook as [`SecondaryIndex::remove`], recorded at once.
//! After a refresh the index checks that it holds exactly as many entries as the component has
//! rows; if not (a path that bypassed the hook, such as [`World::clear`](crate::World::clear)), it rebuilds. A
//! world whose tick went backwards (a loaded snapshot) also rebuilds.
//!
//! The R-tree keeps moving entities cheap with *loose boxes* ([`RtreeUpdate::Loose`]):
//! an entity that moved is stored under a box a few steps wider than its point, sized by its
//! own last step, so that while it stays inside the box a refresh only updates its exact
//! position beside the tree; only entities that leave their box are removed and re-inserted,
//! and a refresh that would re-insert more than an eighth of the entries bulk-loads instead.
//! Queries test candidates against exact positions. The benchmark (`bench/src/spatial.rs`,
//! `move_10k`: the same 10,000 of 1,000,000 entities moving every frame) chose this over
//! re-inserting every moved row ([`RtreeUpdate::PerRow`], about 12× slower) and over
//! rebuilding ([`RtreeUpdate::Rebuild`], about 150× slower). When different entities move
//! every frame, each first move leaves a point box, and the cost is that of `PerRow`.
//!
//! # Writing another kind
//!
//! Implement [`SecondaryIndex`]: which predicates it answers and at what cost, the answer,
//! and the hooks (`update`, `remove`, `flush`, `clear`). The registry does the rest: reading
//! rows, ticks, removals, rebuilds and locking.

pub(crate) mod bitmap;
pub(crate) mod btree;
pub(crate) mod function;
pub(crate) mod index_ref;
pub mod keys;
pub(crate) mod relation;
pub(crate) mod rtree;
pub(crate) mod skip;

use std::fmt;
use std::ops::Bound;

use roaring::RoaringBitmap;

use crate::component::ComponentId;
use crate::value::Value;

pub use index_ref::{IndexId, IndexRef};

/// Which indexes a reader needs fresh: a statement refreshes only the indexes it may use,
/// so an index nobody reads (an rtree over positions that move every tick) costs its
/// writers nothing until it is read; the writes meanwhile fold into one catch-up.
#[derive(Clone, Copy, Debug)]
pub enum Wanted<'a> {
    /// Every index.
    All,
    /// The index of this name.
    One(&'a str),
    /// The indexes of these names.
    Named(&'a [String]),
    /// The indexes over these components.
    On(&'a [ComponentId]),
}

/// When a load or import builds the indexes its data defines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexBuild {
    /// Before it returns.
    #[default]
    Now,
    /// At the next read of the indexes (see [`World::create_index_deferred`](crate::World::create_index_deferred)): for a world
    /// that is saved right away, whose file keeps only the definitions.
    Deferred,
}

/// A secondary index: the plug-in point. Each kind (rtree, bitmap, btree, function)
/// implements it; the registry drives it.
///
/// Calls arrive in batches: any number of [`update`](Self::update) and
/// [`remove`](Self::remove) calls, then [`flush`](Self::flush); [`estimate`](Self::estimate)
/// and [`answer`](Self::answer) are only called on a flushed index.
pub trait SecondaryIndex: Send + Sync {
    /// The kind, for `SHOW INDEXES` and `EXPLAIN`.
    fn kind(&self) -> IndexKind;

    /// Whether this index answers `pred` and at what estimated rows and cost; `None` when it
    /// cannot (a shape it does not answer, a value that does not compare with the field, or
    /// data that would make the answer depend on how NaN orders). Cheap: no answer is built.
    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate>;

    /// The exact answer; `Some` exactly when [`estimate`](Self::estimate) is `Some`.
    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>>;

    /// Calls `visit` with batches of the entities of [`answer`](Self::answer)'s answer, each
    /// entity once, in an order of the index's choosing, and returns `Some` exactly when
    /// `answer` would. The default builds the answer; a kind that holds it in place (one
    /// key's entities) hands over its list as it is, so a point query builds no set.
    fn answer_each(&self, pred: &IndexPredicate, visit: &mut dyn FnMut(&[u32])) -> Option<()> {
        visit_answer(self.answer(pred)?, visit);
        Some(())
    }

    /// [`answer_each`](Self::answer_each) if `accept` takes the [`estimate`](Self::estimate):
    /// `Some(false)` (nothing visited) when it declines, `None` when the index does not
    /// answer. A kind that finds the estimate and the entities in one place (one key's list)
    /// looks once: the check a prepared point query makes on every run.
    fn answer_each_if(
        &self,
        pred: &IndexPredicate,
        accept: &mut dyn FnMut(&Estimate) -> bool,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Option<bool> {
        estimate_then_answer(self, pred, accept, visit)
    }

    /// Entity `entity` (an entity index) has the component and its indexed values are now
    /// `values`: the indexed fields in definition order, or for a function index one
    /// [`Value::Bool`], or nothing for a presence index. Called for new and changed rows; may
    /// repeat an unchanged value.
    fn update(&mut self, entity: u32, values: &[Value]);

    /// [`update`](Self::update) for a batch of entities of an index on one field:
    /// `entities[i]`'s value is now `values[i]`. The registry hands over each batch of
    /// written rows in one call; this body, compiled for each kind, runs their updates in
    /// one loop with no call through the trait object per row.
    fn update_each(&mut self, entities: &[u32], values: &[Value]) {
        for (&entity, value) in entities.iter().zip(values) {
            self.update(entity, std::slice::from_ref(value));
        }
    }

    /// Entity `entity` no longer has the component. May name an entity the index never saw.
    fn remove(&mut self, entity: u32);

    /// [`remove`](Self::remove) for a caller that must not wait for buffered work to be
    /// applied now (a mirror, while the world it copies is lent to it): the index may only
    /// buffer the removal, past its usual bound, until [`settle`](Self::settle).
    fn remove_deferred(&mut self, entity: u32) {
        self.remove(entity);
    }

    /// Applies whatever buffered work [`remove_deferred`](Self::remove_deferred) left past
    /// the index's usual bound, and nothing more.
    fn settle(&mut self) {}

    /// Applies buffered work. Called after every batch of `update`/`remove` calls.
    fn flush(&mut self) {}

    /// Whether the index has drifted far enough from the data (summaries widened by writes)
    /// that the registry should rebuild it from the current rows. Asked after each flush.
    fn wants_rebuild(&self) -> bool {
        false
    }

    /// A relation index: calls `visit` with the index of every entity whose field holds
    /// `target`, ascending, and returns true. Every other kind returns false. Walks down a
    /// hierarchy use this to read each node's referrers in place, with no set built per node.
    fn referrers(&self, _target: crate::entity::Entity, _visit: &mut dyn FnMut(u32)) -> bool {
        false
    }

    /// What EXPLAIN adds about answering `pred` (a skip index: blocks kept of the total).
    fn explain(&self, _pred: &IndexPredicate) -> Option<String> {
        None
    }

    /// Forgets every entry (a full rebuild follows).
    fn clear(&mut self);

    /// Entities indexed. Cheap: the registry checks it against the component's row count
    /// after every refresh.
    fn entries(&self) -> u64;

    /// Entries and approximate memory held.
    fn stats(&self) -> IndexStats;
}

/// [`SecondaryIndex::answer_each_if`] the plain way: the estimate, then, if `accept` takes
/// it, the answer (the default, and what a kind does for shapes it does not answer in one
/// look).
pub(crate) fn estimate_then_answer<I: SecondaryIndex + ?Sized>(
    index: &I,
    pred: &IndexPredicate,
    accept: &mut dyn FnMut(&Estimate) -> bool,
    visit: &mut dyn FnMut(&[u32]),
) -> Option<bool> {
    if !accept(&index.estimate(pred)?) {
        return Some(false);
    }
    index.answer_each(pred, visit)?;
    Some(true)
}

/// A predicate shape an index may answer, built by the planner from a conjunct of `WHERE`
/// (or from `ORDER BY … LIMIT`). Vectors are coordinate lists of the index's dimension
/// (`[x, y]` or `[x, y, z]`); another length is declined.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexPredicate {
    /// `field = v`.
    Eq(Value),
    /// `field IN (v, …)`; null list items are ignored.
    In(Vec<Value>),
    /// `field != v` (rows whose field is null or NaN do not match).
    NotEq(Value),
    /// `low <(=) field <(=) high`; `BETWEEN a AND b` is `Included(a)..Included(b)`. An
    /// unbounded end imposes no condition (both unbounded: every row, nulls included).
    Range {
        /// Lower end.
        low: Bound<Value>,
        /// Upper end.
        high: Bound<Value>,
    },
    /// `ORDER BY field [DESC]` over the rows with `field` in the range, as a lazy stream in
    /// the language's order (nulls first ascending, last descending, included only when both
    /// ends are unbounded; ties by entity index). `limit` is a hint for the estimate.
    Ordered {
        /// Lower end.
        low: Bound<Value>,
        /// Upper end.
        high: Bound<Value>,
        /// `DESC`.
        descending: bool,
        /// `LIMIT`, if any.
        limit: Option<usize>,
    },
    /// `distance(p, center) <= radius` (`inclusive`, also `within(p, center, radius)`) or
    /// `< radius`.
    WithinRadius {
        /// The center.
        center: Vec<f64>,
        /// The radius.
        radius: f64,
        /// `<=` rather than `<`.
        inclusive: bool,
    },
    /// `inside(p, lo, hi)`: every coordinate of `p` within `[lo, hi]`, inclusive.
    InsideBox {
        /// Lower corner.
        lo: Vec<f64>,
        /// Upper corner.
        hi: Vec<f64>,
    },
    /// `ORDER BY distance(p, point) LIMIT k`: a lazy stream, nearest first, ties by entity
    /// index; pull more than `k` when other filters remain. `k` is a hint for the estimate.
    Nearest {
        /// The query point.
        point: Vec<f64>,
        /// `LIMIT`.
        k: usize,
    },
    /// `name(C)`: the function index's predicate is true.
    Function {
        /// The function's name.
        name: String,
    },
    /// The entity has the component (tag presence).
    Present,
    /// `descendant_of(C.f, ancestor, max_depth)`: following the field from the entity reaches
    /// `ancestor` within `max_depth` hops (no limit when `None`). Answered by relation indexes
    /// through [`IndexReader::descendants`](crate::IndexReader::descendants) (walking down from `ancestor`).
    DescendantOf {
        /// The ancestor (an entity; anything else is declined).
        ancestor: Value,
        /// The maximum depth.
        max_depth: Option<u64>,
    },
}

impl IndexPredicate {
    /// `BETWEEN low AND high` (inclusive).
    pub fn between(low: impl Into<Value>, high: impl Into<Value>) -> IndexPredicate {
        IndexPredicate::Range { low: Bound::Included(low.into()), high: Bound::Included(high.into()) }
    }
}

/// An index's answer.
pub enum IndexAnswer<'a> {
    /// The entities (by index) that have the component and satisfy the predicate (a skip
    /// index: every entity of the blocks that may hold matches).
    Set(RoaringBitmap),
    /// Such entities in the predicate's order, lazily.
    Ordered(Box<dyn Iterator<Item = u32> + 'a>),
}

/// Calls `visit` with the entities of `answer` in batches, in its order.
pub(crate) fn visit_answer(answer: IndexAnswer<'_>, visit: &mut dyn FnMut(&[u32])) {
    match answer {
        IndexAnswer::Set(s) => visit_in_batches(s.iter(), visit),
        IndexAnswer::Ordered(it) => visit_in_batches(it, visit),
    }
}

/// Hands `ids` to `visit` in batches of up to 256, in their order: the callers of
/// [`SecondaryIndex::answer_each`] loop over a slice, with no call per entity.
pub fn visit_in_batches(ids: impl Iterator<Item = u32>, visit: &mut dyn FnMut(&[u32])) {
    let mut buf = [0u32; 256];
    let mut n = 0;
    for id in ids {
        buf[n] = id;
        n += 1;
        if n == buf.len() {
            visit(&buf);
            n = 0;
        }
    }
    if n > 0 {
        visit(&buf[..n]);
    }
}

impl<'a> IndexAnswer<'a> {
    /// The answer as a set (an ordered stream is drained; `limit` caps it).
    pub fn into_set(self, limit: Option<usize>) -> RoaringBitmap {
        match self {
            IndexAnswer::Set(s) => s,
            IndexAnswer::Ordered(it) => it.take(limit.unwrap_or(usize::MAX)).collect(),
        }
    }

    /// The answer as a list (ascending for a set; `limit` caps it).
    pub fn into_vec(self, limit: Option<usize>) -> Vec<u32> {
        let n = limit.unwrap_or(usize::MAX);
        match self {
            IndexAnswer::Set(s) => s.iter().take(n).collect(),
            IndexAnswer::Ordered(it) => it.take(n).collect(),
        }
    }

    /// The same answer owning its data (an ordered stream is drained, up to `limit`).
    pub fn into_owned(self, limit: Option<usize>) -> IndexAnswer<'static> {
        match self {
            IndexAnswer::Set(s) => IndexAnswer::Set(s),
            IndexAnswer::Ordered(_) => IndexAnswer::Ordered(Box::new(self.into_vec(limit).into_iter())),
        }
    }
}

impl fmt::Debug for IndexAnswer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexAnswer::Set(s) => f.debug_tuple("Set").field(s).finish(),
            IndexAnswer::Ordered(_) => f.write_str("Ordered(..)"),
        }
    }
}

/// What answering a predicate from an index would give and cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Estimated matching rows (for ordered predicates: rows the stream will yield, capped
    /// by the limit hint).
    pub rows: u64,
    /// Whether `rows` is exact.
    pub exact: bool,
    /// Estimated cost in scan-row units (1.0 ≈ testing one row in a column scan).
    pub cost: f64,
}

/// Size of an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IndexStats {
    /// Entities indexed.
    pub entries: u64,
    /// Approximate bytes held.
    pub memory_bytes: u64,
}

/// The kinds of index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum IndexKind {
    /// Spatial: rstar over 2 or 3 coordinates.
    Rtree,
    /// Value → entity bitmap for low-cardinality fields, or component presence.
    Bitmap,
    /// Ordered map of value → entities.
    Btree,
    /// A Rust predicate over a component, registered by name.
    Function,
    /// Target → referrers of an `entity` field: `=`, `IN`, walks down hierarchies.
    Relation,
    /// Per block of entity ids, min/max and a Bloom filter of one field: the blocks that may
    /// hold matches.
    Skip,
}

impl IndexKind {
    /// Every kind.
    pub const ALL: [IndexKind; 6] = [
        IndexKind::Rtree,
        IndexKind::Bitmap,
        IndexKind::Btree,
        IndexKind::Function,
        IndexKind::Relation,
        IndexKind::Skip,
    ];

    /// The name used in the language (`rtree`, `bitmap`, `btree`, `function`, `relation`,
    /// `skip`).
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Rtree => "rtree",
            IndexKind::Bitmap => "bitmap",
            IndexKind::Btree => "btree",
            IndexKind::Function => "function",
            IndexKind::Relation => "relation",
            IndexKind::Skip => "skip",
        }
    }

    /// Parses a kind name (case-insensitive).
    pub fn from_name(name: &str) -> Option<IndexKind> {
        IndexKind::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to create an index: `CREATE INDEX [name] ON component [(fields)] USING kind`.
/// Also what snapshots save ([`World::index_definitions`](crate::World::index_definitions)).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexDef {
    /// The name; `None` for the default `<component>_<fields joined by _>_<kind>` (the fields
    /// as resolved: an rtree over `Position` without fields is `Position_x_y_z_rtree`, a
    /// presence bitmap `Frozen_bitmap`).
    pub name: Option<String>,
    /// The component.
    pub component: String,
    /// The fields: for `rtree` none (a vector-like component's fields), one `vec2`/`vec3`
    /// field, or 2–3 numeric fields; for `bitmap` one field, or none for presence; for
    /// `btree` one field (none when the component has exactly one). Empty for `function`.
    pub fields: Vec<String>,
    /// The kind.
    pub kind: IndexKind,
}

impl IndexDef {
    /// A definition with the default name.
    pub fn new(component: &str, fields: &[&str], kind: IndexKind) -> IndexDef {
        IndexDef {
            name: None,
            component: component.to_string(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            kind,
        }
    }

    /// The same definition with a name.
    pub fn named(mut self, name: &str) -> IndexDef {
        self.name = Some(name.to_string());
        self
    }
}

/// One index as `SHOW INDEXES` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexInfo {
    /// The name.
    pub name: String,
    /// The kind.
    pub kind: IndexKind,
    /// The component's name.
    pub component: String,
    /// The component's id.
    pub component_id: crate::ComponentId,
    /// The indexed fields as resolved (empty for presence and function indexes).
    pub fields: Vec<String>,
    /// Entities indexed.
    pub entries: u64,
    /// Approximate bytes held.
    pub memory_bytes: u64,
}

/// How an rtree index absorbs entities that moved, at refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RtreeUpdate {
    /// Loose boxes: a moved entity is stored under a box a few of its own steps wide; moves
    /// inside the box only update its exact position beside the tree; leaving the box
    /// re-inserts it. Bulk-loads instead when more than an eighth of the entries would be
    /// re-inserted at once. The default, chosen by benchmark.
    #[default]
    Loose,
    /// Point boxes: every moved entity is removed and re-inserted (bulk-loads instead past
    /// an eighth of the entries).
    PerRow,
    /// Bulk-load the whole tree again whenever anything changed.
    Rebuild,
}

/// The language's `distance(a, b)`: `sqrt` of the sum of squared coordinate differences,
/// accumulated in coordinate order — the float operations of the scan, so index answers and
/// scans agree at the boundary. Extra coordinates of the longer slice are ignored.
#[inline]
pub fn distance(a: &[f64], b: &[f64]) -> f64 {
    let mut s = -0.0;
    for (p, q) in a.iter().zip(b) {
        s += (p - q) * (p - q);
    }
    f64::sqrt(s)
}

/// Cost constants of the estimates, in scan-row units.
pub(crate) mod cost {
    /// Locating one key or descending one R-tree level.
    pub const DESCEND: f64 = 40.0;
    /// Producing one matching entity from a key's posting list (a btree range over 10k mostly
    /// distinct float keys of 1M: about 16 ns per entity, ~10 scan rows).
    pub const POSTING: f64 = 10.0;
    /// Copying one entity of a dense bitmap answer (a 64-bit word holds 64).
    pub const BITMAP_BIT: f64 = 1.0 / 32.0;
    /// Testing one R-tree candidate against its exact position.
    pub const CANDIDATE: f64 = 12.0;
    /// Testing one skip-index block summary (bounds, maybe a filter probe).
    pub const BLOCK_TEST: f64 = 2.0;
}
