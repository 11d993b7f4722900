//! The world's indexes: definitions, validation, refresh from change ticks, the removal hook,
//! and the read side ([`IndexReader`]) through which the planner asks for answers.
//!
//! # Locking
//! The indexes sit behind an `RwLock` inside the world so that a reader on `&World` (a
//! read-only statement) can bring them up to date. Any change to the data needs `&mut World`,
//! which cannot coexist with an [`IndexReader`] (it borrows the world): while one reader
//! lives, the indexes cannot go stale. [`World::index_reader`] refreshes under `try_write`:
//! when that fails another reader exists (so nothing changed since it refreshed) or another
//! thread is refreshing (and `read` waits for it). No code path blocks on `write` while a
//! reader may exist, so nested readers on one thread cannot deadlock. A user predicate that
//! panics during a refresh poisons the lock; the next access clears it and rebuilds every
//! index.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use roaring::RoaringBitmap;

use super::bitmap::{BitmapIndex, PresenceIndex};
use super::btree::BtreeIndex;
use super::function::FunctionIndex;
use super::index_ref::{next_serial, IndexId, IndexRef};
use super::keys::{KeyClass, KeyType, OrdF64};
use super::relation::RelationIndex;
use super::rtree::RtreeIndex;
use super::skip::SkipIndex;
use super::{Estimate, IndexAnswer, IndexDef, IndexInfo, IndexKind, IndexPredicate, RtreeUpdate, SecondaryIndex};
use crate::component::{is_identifier, Component, ComponentId, ComponentInfo, FieldType, StorageKind};
use crate::entity::Entity;
use crate::error::{EngineError, Result};
use crate::snapshot::IndexBuild;
use crate::storage::{Column, FieldPlace, FieldView, WrittenRows};
use crate::tick::{is_new, run_age, Tick, EVERYTHING_NEW};
use crate::value::Value;
use crate::world::World;

type DynFn = Arc<dyn Fn(&Value) -> bool + Send + Sync>;
type TypedFn = Arc<dyn Fn(&World, Entity) -> Option<bool> + Send + Sync>;

/// Where an index's values come from.
#[derive(Clone)]
enum Source {
    /// Fields by schema position, passed in definition order.
    Fields(Vec<usize>),
    /// Nothing: presence only.
    Presence,
    /// A predicate over the component as a [`Value::Object`].
    Dynamic(DynFn),
    /// A predicate over the Rust value, read through the world.
    Typed(TypedFn),
}

/// One index and its bookkeeping.
struct Slot {
    /// The definition, resolved: name and fields filled in.
    def: IndexDef,
    component: ComponentId,
    source: Source,
    index: Box<dyn SecondaryIndex>,
    /// World tick (64-bit count) of the last refresh: rows changed after it are re-read.
    last_tick: u64,
    /// Rows of the component whose values cannot be read (a u64 above i64::MAX).
    unreadable: RoaringBitmap,
    needs_rebuild: bool,
    /// Written to since its last refresh, and left for later: the refresh then was for
    /// other indexes (see [`Wanted`]). A dirty index answers nothing until refreshed.
    dirty: bool,
    /// Removals handed to the index while dirty, since its last refresh (bounded: past it
    /// the index is cleared and rebuilt when next wanted).
    removals_while_dirty: u64,
    /// Unique in the process: what an [`IndexId`] checks.
    serial: u64,
}

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

impl Wanted<'_> {
    fn wants(&self, s: &Slot) -> bool {
        match self {
            Wanted::All => true,
            Wanted::One(name) => *name == s.name(),
            Wanted::Named(names) => names.iter().any(|n| n == s.name()),
            Wanted::On(ids) => ids.contains(&s.component),
        }
    }
}

/// Calls `f(row)`, in row order, for every row whose tick is new for a refresh at `this`
/// with age bound `run_age` (see [`crate::tick`]). Ticks go 64 at a time: a word with no new
/// tick is passed over after one vectorised test; in the others, a mask of the new rows is
/// made without branches and only its set bits are visited (writes scattered over a large
/// column dirty about half the words, so the scan must not branch per row).
fn for_each_changed(ticks: &[Tick], this: Tick, run_age: u32, mut f: impl FnMut(usize)) {
    const WORD: usize = 64;
    let mut words = ticks.chunks_exact(WORD);
    for (w, word) in words.by_ref().enumerate() {
        if !word.iter().fold(false, |any, &t| any | is_new(t, this, run_age)) {
            continue;
        }
        let mut flags = [0u8; WORD];
        for (flag, &t) in flags.iter_mut().zip(word) {
            *flag = u8::from(is_new(t, this, run_age));
        }
        let mut mask = 0u64;
        for (j, eight) in flags.chunks_exact(8).enumerate() {
            // Eight 0/1 bytes to eight bits: the multiply moves byte i's bit to bit 56 + i.
            let bytes = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
            mask |= (bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (j * 8);
        }
        while mask != 0 {
            f(w * WORD + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
    let base = ticks.len() - words.remainder().len();
    for (i, &t) in words.remainder().iter().enumerate() {
        if is_new(t, this, run_age) {
            f(base + i);
        }
    }
}

/// Reads the values an index wants from rows of one segment.
enum RowReader<'w> {
    Fields(Vec<FieldView<'w>>),
    Presence,
    Dynamic(Vec<(&'w str, FieldView<'w>)>, DynFn),
    Typed(TypedFn),
    /// The fields could not be viewed (cannot happen for a validated definition): every row
    /// counts as unreadable, so the index declines rather than answer wrongly.
    Broken,
}

impl<'w> RowReader<'w> {
    fn new(world: &'w World, seg: FieldPlace, id: ComponentId, source: &Source) -> RowReader<'w> {
        let info = world.components().info(id);
        let view = |i: usize| Some(FieldView::new(world, seg, id, i)).filter(|v| !matches!(v, FieldView::Missing));
        match source {
            Source::Presence => RowReader::Presence,
            Source::Typed(f) => RowReader::Typed(f.clone()),
            Source::Fields(fields) => {
                fields.iter().map(|&i| view(i)).collect::<Option<Vec<_>>>().map_or(RowReader::Broken, RowReader::Fields)
            }
            Source::Dynamic(f) => info
                .fields()
                .iter()
                .enumerate()
                .map(|(i, fi)| Some((fi.name.as_str(), view(i)?)))
                .collect::<Option<Vec<_>>>()
                .map_or(RowReader::Broken, |v| RowReader::Dynamic(v, f.clone())),
        }
    }

    /// The values of `rows` of a one-field index, one a row, appended to `values`; `false`
    /// (and `values` as it was) for other indexes, or when a value cannot be read (a u64
    /// above i64::MAX), which the row-by-row path then marks. The field is read in a loop
    /// that dispatches on its type once, so the loads of many rows are in flight together.
    fn read_one_field(&self, rows: &[u32], values: &mut Vec<Value>) -> bool {
        let RowReader::Fields(views) = self else { return false };
        let [view] = views.as_slice() else { return false };
        let start = values.len();
        if view.for_each_value(rows, |_, v| values.push(v)).is_ok() {
            return true;
        }
        values.truncate(start);
        false
    }

    /// Appends the values of `rows` (whose entities are `entities`) to `values`, and each
    /// row's span of them to `spans` (`None`: unreadable).
    fn read_batch(
        &self,
        world: &World,
        rows: &[u32],
        entities: &[Entity],
        values: &mut Vec<Value>,
        spans: &mut Vec<Option<(usize, usize)>>,
    ) {
        for (&row, &e) in rows.iter().zip(entities) {
            let start = values.len();
            let readable = self.read_into(world, row as usize, e, values).is_some();
            if !readable {
                values.truncate(start);
            }
            spans.push(readable.then_some((start, values.len())));
        }
    }

    /// Appends the row's values to `out`; `None` when unreadable (then `out` may hold part
    /// of them).
    fn read_into(&self, world: &World, row: usize, e: Entity, out: &mut Vec<Value>) -> Option<()> {
        match self {
            RowReader::Fields(views) => {
                for v in views {
                    out.push(v.get(row)?);
                }
            }
            RowReader::Presence => {}
            RowReader::Dynamic(views, f) => {
                let obj = views.iter().map(|(n, v)| Some((n.to_string(), v.get(row)?))).collect::<Option<Vec<_>>>()?;
                out.push(Value::Bool(f(&Value::Object(obj))));
            }
            RowReader::Typed(f) => out.push(Value::Bool(f(world, e)?)),
            RowReader::Broken => return None,
        }
        Some(())
    }
}

impl Slot {
    fn entries(&self) -> u64 {
        self.index.entries() + self.unreadable.len()
    }

    /// Hands rows to the index: every row of `segs` for `None`, else the rows new for a
    /// refresh at `this` with age bound `run_age`: those a segment's write log names, when
    /// `logged` says its window is this slot's, or those whose change tick is new.
    fn feed(&mut self, world: &World, segs: &[Segment<'_>], since: Option<(Tick, u32)>, logged: bool) {
        let id = self.component;
        let (mut rows, mut row_entities, mut values, mut spans) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut entity_ids: Vec<u32> = Vec::new();
        for seg in segs {
            rows.clear();
            let rows: &[u32] = match (since, &seg.written) {
                (Some(_), WrittenRows::Rows(written)) if logged => written,
                (None, _) => {
                    rows.extend(0..seg.entities.len() as u32);
                    &rows
                }
                (Some((this, run_age)), _) => {
                    for_each_changed(seg.ticks, this, run_age, |r| rows.push(r as u32));
                    &rows
                }
            };
            if rows.is_empty() {
                continue;
            }
            let reader = RowReader::new(world, seg.place, id, &self.source);
            // Changed rows lie scattered over the column: a batch's entities and values are
            // read first, in loops whose loads do not wait on each other (so the cache misses
            // overlap), and handed to the index after.
            for batch in rows.chunks(1024) {
                values.clear();
                if reader.read_one_field(batch, &mut values) {
                    // One value a row: the whole batch in one call, which the index runs as
                    // one loop.
                    entity_ids.clear();
                    entity_ids.extend(batch.iter().map(|&r| seg.entities[r as usize].index()));
                    self.index.update_each(&entity_ids, &values);
                    if !self.unreadable.is_empty() {
                        for &e in &entity_ids {
                            self.unreadable.remove(e);
                        }
                    }
                    continue;
                }
                row_entities.clear();
                row_entities.extend(batch.iter().map(|&r| seg.entities[r as usize]));
                spans.clear();
                reader.read_batch(world, batch, &row_entities, &mut values, &mut spans);
                for (&e, span) in row_entities.iter().zip(&spans) {
                    match *span {
                        Some((start, end)) => {
                            self.index.update(e.index(), &values[start..end]);
                            if !self.unreadable.is_empty() {
                                self.unreadable.remove(e.index());
                            }
                        }
                        None => {
                            self.index.remove(e.index());
                            self.unreadable.insert(e.index());
                        }
                    }
                }
            }
        }
    }

    fn rebuild(&mut self, world: &World) {
        self.index.clear();
        self.unreadable.clear();
        self.feed(world, &segments(world, self.component, false), None, false);
        self.index.flush();
    }

    /// Brings the index up to date as of world tick `this` (already taken). `drained` holds
    /// the component's segments with the rows their write logs gave up for this refresh,
    /// when the logs' window (since the previous drain) is this slot's (since its last
    /// refresh); otherwise the change ticks tell.
    fn refresh(&mut self, world: &World, this: u64, drained: Option<&[Segment<'_>]>) {
        let age = run_age(Some(self.last_tick), this);
        if self.needs_rebuild || age == EVERYTHING_NEW || this == self.last_tick {
            // A new index, a poisoned lock, a world whose tick went back (a loaded snapshot),
            // or a last refresh too old for row ticks to tell (they may have been clamped).
            self.rebuild(world);
        } else {
            let since = Some((this as Tick, age));
            match drained {
                Some(segs) => self.feed(world, segs, since, true),
                None => self.feed(world, &segments(world, self.component, false), since, false),
            }
            self.index.flush();
            // A path that took components away without the removal hook (World::clear)
            // leaves entries behind: the count tells. A summary index may also ask.
            if self.entries() != world.component_count(self.component) as u64 || self.index.wants_rebuild() {
                self.rebuild(world);
            }
        }
        self.last_tick = this;
        self.needs_rebuild = false;
    }

    fn info(&self, world: &World) -> IndexInfo {
        IndexInfo {
            name: self.def.name.clone().unwrap_or_default(),
            kind: self.def.kind,
            component: world.components().info(self.component).name().to_string(),
            component_id: self.component,
            fields: self.def.fields.clone(),
            entries: self.entries(),
            memory_bytes: self.index.stats().memory_bytes + self.unreadable.serialized_size() as u64,
        }
    }

    fn name(&self) -> &str {
        self.def.name.as_deref().unwrap_or_default()
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let present = matches!(pred, IndexPredicate::Present);
        if !self.unreadable.is_empty() && !present {
            return None;
        }
        let mut est = self.index.estimate(pred)?;
        if present {
            est.rows += self.unreadable.len();
        }
        Some(est)
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        let present = matches!(pred, IndexPredicate::Present);
        if !self.unreadable.is_empty() && !present {
            return None;
        }
        let answer = self.index.answer(pred)?;
        Some(match (answer, pred) {
            (IndexAnswer::Set(mut s), IndexPredicate::Present) => {
                s |= &self.unreadable;
                IndexAnswer::Set(s)
            }
            (a, _) => a,
        })
    }

    /// [`SecondaryIndex::answer_each_if`] through the unreadable rows' rule (as
    /// [`Slot::estimate`] and [`Slot::answer_each`]).
    fn answer_each_if(
        &self,
        pred: &IndexPredicate,
        accept: impl FnOnce(&Estimate) -> bool,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Option<bool> {
        if matches!(pred, IndexPredicate::Present) || !self.unreadable.is_empty() {
            if !accept(&self.estimate(pred)?) {
                return Some(false);
            }
            self.answer_each(pred, visit)?;
            return Some(true);
        }
        let mut accept = Some(accept);
        self.index.answer_each_if(pred, &mut |e| accept.take().is_some_and(|f| f(e)), visit)
    }

    fn answer_each(&self, pred: &IndexPredicate, visit: &mut dyn FnMut(&[u32])) -> Option<()> {
        if matches!(pred, IndexPredicate::Present) {
            // Unreadable rows join the answer: through the set.
            crate::index::visit_answer(self.answer(pred)?, visit);
            return Some(());
        }
        if !self.unreadable.is_empty() {
            return None;
        }
        self.index.answer_each(pred, visit)
    }
}

/// One place a component's rows live (a table's column, or the sparse set), with what its
/// write log gave up.
struct Segment<'w> {
    place: FieldPlace,
    entities: &'w [Entity],
    ticks: &'w [Tick],
    written: WrittenRows,
}

/// The segments of component `id`, draining their write logs when `drain` is set (else
/// every segment says [`WrittenRows::Scan`]).
fn segments(world: &World, id: ComponentId, drain: bool) -> Vec<Segment<'_>> {
    fn segment<'w>(place: FieldPlace, entities: &'w [Entity], col: &'w Column, drain: bool) -> Segment<'w> {
        let written = if drain { col.drain_written() } else { WrittenRows::Scan };
        Segment { place, entities, ticks: col.changed_ticks(), written }
    }
    match world.components().info(id).storage() {
        StorageKind::Table => world
            .tables()
            .iter()
            .filter_map(|t| Some(segment(FieldPlace::Table(t.id()), t.entities(), t.column(id)?, drain)))
            .collect(),
        StorageKind::Sparse => world
            .sparse_set(id)
            .map(|set| segment(FieldPlace::Sparse, set.entities(), set.column(), drain))
            .into_iter()
            .collect(),
    }
}

/// Every index of a world.
#[derive(Default)]
pub(crate) struct IndexSet {
    slots: Vec<Slot>,
    /// Per indexed component, the refresh tick at which its write logs were last drained:
    /// what the logs hold now was written since.
    drained_at: Vec<(ComponentId, u64)>,
    /// A removal reached an up-to-date index since the last refresh: it waits in the index's
    /// buffer for a flush.
    removals_pending: bool,
}

impl IndexSet {
    /// The index `index` names: at its id's position when the id still fits, else by name.
    fn find<'a>(&self, index: impl Into<IndexRef<'a>>) -> Option<&Slot> {
        let index = index.into();
        if let Some(id) = index.id {
            if let Some(s) = self.slots.get(id.position as usize).filter(|s| s.serial == id.serial) {
                return Some(s);
            }
        }
        self.slots.iter().find(|s| s.name() == index.name)
    }

    /// The id of the index named `name`.
    fn id(&self, name: &str) -> Option<IndexId> {
        let position = self.slots.iter().position(|s| s.name() == name)?;
        Some(IndexId { position: position as u32, serial: self.slots[position].serial })
    }

    /// The index `index` names if it is up to date (not left dirty by a refresh for other
    /// indexes, nor waiting for its first build): the only ones a reader answers from.
    fn find_fresh<'a>(&self, index: impl Into<IndexRef<'a>>) -> Option<&Slot> {
        self.find(index).filter(|s| !s.dirty && !s.needs_rebuild)
    }

    fn mark_all_for_rebuild(&mut self) {
        for s in &mut self.slots {
            s.needs_rebuild = true;
        }
    }

    /// Whether a reader wanting `wanted` finds them up to date as they are: nothing was
    /// written since the last refresh, no removal waits for a flush, and none of them was
    /// left dirty. What a repeated point query meets every time; it then takes no exclusive
    /// lock and no tick.
    fn is_current(&self, world: &World, wanted: Wanted<'_>) -> bool {
        self.slots.is_empty()
            || !(world.written_since_index_tick()
                || self.removals_pending
                || self.slots.iter().any(|s| (s.dirty || s.needs_rebuild) && wanted.wants(s)))
    }

    /// Brings the `wanted` indexes up to date. A write since the last refresh leaves every
    /// other index dirty, to be caught up when a reader wants it.
    fn refresh(&mut self, world: &World, wanted: Wanted<'_>) {
        if self.slots.is_empty() {
            return;
        }
        let (this, written) = world.take_index_tick();
        if written {
            self.slots.iter_mut().for_each(|s| s.dirty = true);
        }
        self.removals_pending = false;
        let due = |s: &Slot| (s.dirty || s.needs_rebuild) && wanted.wants(s);
        // Each component's write logs are drained once, for all of its indexes due now
        // (the others then scan change ticks when their turn comes: the window check).
        let mut drained: Vec<(ComponentId, Vec<Segment<'_>>)> = Vec::new();
        for s in self.slots.iter().filter(|s| due(s)) {
            if !drained.iter().any(|(c, _)| *c == s.component) {
                drained.push((s.component, segments(world, s.component, true)));
            }
        }
        for s in &mut self.slots {
            if due(s) {
                let window = self.drained_at.iter().find(|(c, _)| *c == s.component).map(|&(_, t)| t);
                let segs = drained.iter().find(|(c, _)| *c == s.component).map(|(_, segs)| segs.as_slice());
                s.refresh(world, this, segs.filter(|_| window == Some(s.last_tick)));
                s.dirty = false;
                s.removals_while_dirty = 0;
            } else if !s.dirty && !s.needs_rebuild {
                // Up to date as of its last refresh (nothing written since): only removals
                // recorded by the hook may wait in the index's buffer.
                s.index.flush();
            }
        }
        for (c, _) in &drained {
            match self.drained_at.iter_mut().find(|(d, _)| d == c) {
                Some(at) => at.1 = this,
                None => self.drained_at.push((*c, this)),
            }
        }
    }
}

/// The world's field holding its indexes.
#[derive(Default)]
pub(crate) struct IndexRegistry {
    set: RwLock<IndexSet>,
    /// Bumped whenever an index is created or dropped (see [`World::index_catalog_version`]).
    version: AtomicU64,
}

impl IndexRegistry {
    /// Exclusive access through `&mut` (no locking), recovering from a poisoned lock.
    fn get_mut(&mut self) -> &mut IndexSet {
        let poisoned = self.set.is_poisoned();
        self.set.clear_poison();
        let set = self.set.get_mut().unwrap_or_else(PoisonError::into_inner);
        if poisoned {
            set.mark_all_for_rebuild();
        }
        set
    }

    /// Exclusive access through `&self`. Only called where no reader can exist (`&mut World`
    /// callers), so it never waits.
    fn write(&self) -> RwLockWriteGuard<'_, IndexSet> {
        match self.set.write() {
            Ok(g) => g,
            Err(p) => {
                let mut g = p.into_inner();
                g.mark_all_for_rebuild();
                self.set.clear_poison();
                g
            }
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, IndexSet> {
        self.set.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The removal hook: entity `e` is losing component `id`.
    pub(crate) fn note_removed(&mut self, e: Entity, id: ComponentId) {
        let set = self.get_mut();
        for s in set.slots.iter_mut().filter(|s| s.component == id) {
            if s.needs_rebuild {
                // Rebuilt from the rows when next wanted: nothing to keep in step.
                continue;
            }
            s.index.remove(e.index());
            s.unreadable.remove(e.index());
            set.removals_pending = true;
            if s.dirty {
                // A dirty index buffers removals until it is wanted; past a bound (a game
                // that despawns steadily and never reads it) it is dropped and rebuilt then.
                s.removals_while_dirty += 1;
                if s.removals_while_dirty > s.entries() / 4 + 4096 {
                    s.index.clear();
                    s.unreadable.clear();
                    s.needs_rebuild = true;
                }
            }
        }
    }
}

/// Read access to a world's indexes, refreshed when it was made and never stale while it
/// lives (it borrows the world). Made by [`World::index_reader`].
pub struct IndexReader<'w> {
    world: &'w World,
    set: RwLockReadGuard<'w, IndexSet>,
}

impl<'w> IndexReader<'w> {
    /// The world.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// Every index, in creation order.
    pub fn list(&self) -> Vec<IndexInfo> {
        self.set.slots.iter().map(|s| s.info(self.world)).collect()
    }

    /// The index with this name.
    pub fn info<'a>(&self, index: impl Into<IndexRef<'a>>) -> Option<IndexInfo> {
        self.set.find(index).map(|s| s.info(self.world))
    }

    /// The id of the index named `name`, to find it again without searching by name (see
    /// [`IndexId`]).
    pub fn id(&self, name: &str) -> Option<IndexId> {
        self.set.id(name)
    }

    /// The indexes over a component.
    pub fn on(&self, component: ComponentId) -> Vec<IndexInfo> {
        self.set.slots.iter().filter(|s| s.component == component).map(|s| s.info(self.world)).collect()
    }

    /// Whether index `name` answers `pred`, with estimated rows and cost; `None` when it
    /// does not (or no such index exists).
    pub fn estimate<'a>(&self, index: impl Into<IndexRef<'a>>, pred: &IndexPredicate) -> Option<Estimate> {
        self.set.find_fresh(index)?.estimate(pred)
    }

    /// What EXPLAIN shows of index `name` answering `pred` (a skip index: blocks kept of the
    /// total); `None` when the index has nothing to add or does not answer.
    pub fn explain<'a>(&self, index: impl Into<IndexRef<'a>>, pred: &IndexPredicate) -> Option<String> {
        let slot = self.set.find_fresh(index)?;
        slot.estimate(pred)?;
        slot.index.explain(pred)
    }

    /// Index `name`'s answer to `pred`; `None` exactly when [`IndexReader::estimate`] is
    /// `None`.
    pub fn answer<'a>(&self, index: impl Into<IndexRef<'a>>, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        let index = index.into();
        if let IndexPredicate::DescendantOf { ancestor, max_depth } = pred {
            // Walking down needs the allocator (a child's generation), so the reader walks.
            let Value::Entity(a) = ancestor else { return None };
            self.estimate(index, pred)?;
            return self.descendants(index, *a, *max_depth).map(IndexAnswer::Set);
        }
        self.set.find_fresh(index)?.answer(pred)
    }

    /// Calls `visit` with batches of the entities of index `name`'s answer to `pred` (each
    /// once, in an order of the index's choosing), without building a set where the index
    /// holds the answer in place (a point query); `None` exactly when [`IndexReader::answer`]
    /// is `None`.
    pub fn answer_each<'a>(
        &self,
        index: impl Into<IndexRef<'a>>,
        pred: &IndexPredicate,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Option<()> {
        let index = index.into();
        if let IndexPredicate::DescendantOf { .. } = pred {
            crate::index::visit_answer(self.answer(index, pred)?, visit);
            return Some(());
        }
        self.set.find_fresh(index)?.answer_each(pred, visit)
    }

    /// [`IndexReader::answer_each`] after asking `accept` about index `name`'s estimate for
    /// `pred`, with the index found once: `Some(false)` when `accept` declines (nothing is
    /// visited), `None` when the index does not answer. A prepared statement whose plan
    /// assumed a selective value checks the bound one this way.
    pub fn answer_each_if<'a>(
        &self,
        index: impl Into<IndexRef<'a>>,
        pred: &IndexPredicate,
        accept: impl FnOnce(&Estimate) -> bool,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Option<bool> {
        let index = index.into();
        let slot = self.set.find_fresh(index)?;
        if let IndexPredicate::DescendantOf { .. } = pred {
            if !accept(&slot.estimate(pred)?) {
                return Some(false);
            }
            crate::index::visit_answer(self.answer(index, pred)?, visit);
            return Some(true);
        }
        slot.answer_each_if(pred, accept, visit)
    }

    /// The predicate of the function index `name`, for evaluating it row by row.
    pub fn function<'a>(&self, index: impl Into<IndexRef<'a>>) -> Option<IndexFunction> {
        function_of(self.set.find(index)?)
    }

    /// The relation index over field `field` of `component`, if there is one.
    pub fn relation_on(&self, component: ComponentId, field: usize) -> Option<String> {
        self.set
            .slots
            .iter()
            .find(|s| {
                s.component == component
                    && s.def.kind == IndexKind::Relation
                    && matches!(&s.source, Source::Fields(f) if f.as_slice() == [field])
            })
            .map(|s| s.name().to_string())
    }

    /// The live entities whose field holds `target`, ascending, from relation index `name`;
    /// `None` when it does not answer (no such index, or unreadable rows).
    pub fn referrers<'a>(&self, index: impl Into<IndexRef<'a>>, target: Entity) -> Option<Vec<Entity>> {
        let slot = self.set.find_fresh(index)?;
        slot.estimate(&IndexPredicate::Eq(Value::Entity(target)))?;
        let entities = self.world.entities();
        let mut out = Vec::new();
        slot.index.referrers(target, &mut |i| out.extend(entities.resolve(i))).then_some(out)
    }

    /// The entity indices of every descendant of `ancestor` through relation index `name`
    /// (children, their children, …, down to `max_depth` levels; every level when `None`):
    /// what `descendant_of(C.f, ancestor, max_depth)` is true for. Each entity is visited once,
    /// so loops end.
    pub fn descendants<'a>(
        &self,
        index: impl Into<IndexRef<'a>>,
        ancestor: Entity,
        max_depth: Option<u64>,
    ) -> Option<RoaringBitmap> {
        let slot = self.set.find_fresh(index)?;
        slot.estimate(&IndexPredicate::Eq(Value::Entity(ancestor)))?;
        if ancestor.is_null() || !self.world.is_alive(ancestor) {
            return Some(RoaringBitmap::new());
        }
        // Each entity has one target, so it is the referrer of one node only: walking down
        // can meet a node twice only by coming back to `ancestor` (a loop through it). Skipping
        // `ancestor` is therefore all the loop protection the walk needs, and the ids can be
        // gathered in a list and made a bitmap once.
        let entities = self.world.entities();
        let mut found: Vec<u32> = Vec::new();
        let (mut frontier, mut next) = (vec![ancestor], Vec::new());
        let mut level = 0u64;
        while !frontier.is_empty() && max_depth.is_none_or(|m| level < m) {
            level += 1;
            for &t in &frontier {
                let mut visit = |i: u32| {
                    if i != ancestor.index() {
                        found.push(i);
                        next.extend(entities.resolve(i));
                    }
                };
                if !slot.index.referrers(t, &mut visit) {
                    return None;
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
        Some(super::keys::bitmap_from_ids(found))
    }
}

fn function_of(s: &Slot) -> Option<IndexFunction> {
    let f = match &s.source {
        Source::Dynamic(f) => FnKind::Dynamic(f.clone()),
        Source::Typed(f) => FnKind::Typed(f.clone()),
        _ => return None,
    };
    Some(IndexFunction { name: s.name().to_string(), component: s.component, f })
}

#[derive(Clone)]
enum FnKind {
    Dynamic(DynFn),
    Typed(TypedFn),
}

/// The predicate of a function index, to evaluate it where the index is not used (a scan
/// must give the index's answer: the same predicate on the same value).
#[derive(Clone)]
pub struct IndexFunction {
    name: String,
    component: ComponentId,
    f: FnKind,
}

impl IndexFunction {
    /// The function's (and index's) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The component it reads.
    pub fn component(&self) -> ComponentId {
        self.component
    }

    /// The predicate on entity `e`'s component: `Ok(None)` when `e` lacks the component,
    /// an error for a stale entity.
    pub fn eval(&self, world: &World, e: Entity) -> Result<Option<bool>> {
        if !world.has_component(e, self.component)? {
            return Ok(None);
        }
        match &self.f {
            FnKind::Dynamic(f) => Ok(Some(f(&world.get_component_value(e, self.component)?))),
            FnKind::Typed(f) => Ok(f(world, e)),
        }
    }
}

impl std::fmt::Debug for IndexFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexFunction").field("name", &self.name).field("component", &self.component).finish()
    }
}

fn invalid(msg: String) -> EngineError {
    EngineError::Invalid(msg)
}

fn unknown_index(name: &str) -> EngineError {
    invalid(format!("unknown index '{name}'"))
}

/// Resolves and checks a definition: the fields an index reads and the empty index.
fn resolve(
    info: &ComponentInfo,
    def: &IndexDef,
    mode: RtreeUpdate,
) -> Result<(Vec<String>, Source, Box<dyn SecondaryIndex>)> {
    let comp = info.name();
    let mut idx = Vec::with_capacity(def.fields.len());
    for (i, f) in def.fields.iter().enumerate() {
        if info.is_opaque() {
            return Err(EngineError::Opaque(comp.to_string()));
        }
        let j = info
            .field_index(f)
            .ok_or_else(|| EngineError::UnknownField { component: comp.to_string(), field: f.clone() })?;
        if def.fields[..i].contains(f) {
            return Err(EngineError::DuplicateField { component: comp.to_string(), field: f.clone() });
        }
        idx.push(j);
    }
    let ty = |j: usize| info.fields()[j].ty;
    let keyed = |j: usize, kind: IndexKind| -> Result<Box<dyn SecondaryIndex>> {
        let key = KeyType::of(ty(j)).ok_or_else(|| {
            invalid(format!(
                "a {kind} index cannot order field '{comp}.{}' of type {}: use rtree for vectors",
                info.fields()[j].name,
                ty(j)
            ))
        })?;
        fn of<K: KeyClass + std::hash::Hash>(kind: IndexKind) -> Box<dyn SecondaryIndex> {
            match kind {
                IndexKind::Bitmap => Box::new(BitmapIndex::<K>::default()),
                IndexKind::Skip => Box::new(SkipIndex::<K>::default()),
                _ => Box::new(BtreeIndex::<K>::default()),
            }
        }
        Ok(match key {
            KeyType::Bool => of::<bool>(kind),
            KeyType::Int => of::<i64>(kind),
            KeyType::Float => of::<OrdF64>(kind),
            KeyType::Str => of::<Box<str>>(kind),
            KeyType::Entity => of::<Entity>(kind),
        })
    };
    let names = |idx: &[usize]| idx.iter().map(|&j| info.fields()[j].name.clone()).collect::<Vec<_>>();
    match def.kind {
        IndexKind::Rtree => {
            if idx.is_empty() {
                if info.is_vector_like() {
                    idx = (0..info.fields().len()).collect();
                } else if info.fields().len() == 1 && matches!(ty(0), FieldType::Vec2 | FieldType::Vec3) {
                    idx = vec![0];
                }
            }
            let dims = match idx.as_slice() {
                [j] => match ty(*j) {
                    FieldType::Vec2 => 2,
                    FieldType::Vec3 => 3,
                    _ => 0,
                },
                js if (2..=3).contains(&js.len()) && js.iter().all(|&j| ty(j).is_numeric()) => js.len(),
                _ => 0,
            };
            let index: Box<dyn SecondaryIndex> = match dims {
                2 => Box::new(RtreeIndex::<2>::new(mode)),
                3 => Box::new(RtreeIndex::<3>::new(mode)),
                _ => {
                    return Err(invalid(format!(
                        "an rtree index needs a vector-like component (2 or 3 numeric fields), one vec2/vec3 field, \
                         or 2 or 3 numeric fields; '{comp}' {}",
                        if def.fields.is_empty() {
                            "is not vector-like".to_string()
                        } else {
                            format!("fields {:?} are not", def.fields)
                        }
                    )))
                }
            };
            Ok((names(&idx), Source::Fields(idx), index))
        }
        IndexKind::Bitmap => match idx.as_slice() {
            [] => Ok((Vec::new(), Source::Presence, Box::new(PresenceIndex::default()))),
            [j] => Ok((names(&idx), Source::Fields(vec![*j]), keyed(*j, IndexKind::Bitmap)?)),
            _ => Err(invalid(format!("a bitmap index covers one field (or none, for presence); got {:?}", def.fields))),
        },
        IndexKind::Btree | IndexKind::Skip => {
            if idx.is_empty() && info.fields().len() == 1 && !info.is_opaque() {
                idx = vec![0];
            }
            match idx.as_slice() {
                [j] => Ok((names(&idx), Source::Fields(vec![*j]), keyed(*j, def.kind)?)),
                _ => Err(invalid(format!("a {} index covers one field of '{comp}'; got {:?}", def.kind, def.fields))),
            }
        }
        IndexKind::Relation => match idx.as_slice() {
            [j] if ty(*j) == FieldType::Entity => {
                Ok((names(&idx), Source::Fields(vec![*j]), Box::new(RelationIndex::default())))
            }
            _ => Err(invalid(format!("a relation index covers one entity field of '{comp}'; got {:?}", def.fields))),
        },
        IndexKind::Function => Err(invalid(
            "function indexes are created from Rust with create_function_index (they need the predicate)".to_string(),
        )),
    }
}

impl World {
    fn check_new_index_name(&self, name: &str) -> Result<()> {
        if !is_identifier(name) {
            return Err(invalid(format!("'{name}' is not a valid index name")));
        }
        if self.indexes.read().find(name).is_some() {
            return Err(invalid(format!("index '{name}' already exists")));
        }
        Ok(())
    }

    /// Builds a new index over the current rows and adds it.
    fn install(
        &mut self,
        def: IndexDef,
        component: ComponentId,
        source: Source,
        index: Box<dyn SecondaryIndex>,
        build: IndexBuild,
    ) -> String {
        let name = def.name.clone().unwrap_or_default();
        let mut slot = Slot {
            def,
            component,
            source,
            index,
            last_tick: 0,
            unreadable: RoaringBitmap::new(),
            needs_rebuild: true,
            dirty: false,
            removals_while_dirty: 0,
            serial: next_serial(),
        };
        let world: &World = self;
        if build == IndexBuild::Now {
            let this = world.read_change_tick_wide();
            slot.refresh(world, this, None);
        }
        // Unbuilt, the slot keeps `needs_rebuild`: the next refresh (every read of the
        // indexes goes through one) builds it from the rows as they are then.
        world.indexes.write().slots.push(slot);
        self.indexes.version.fetch_add(1, Ordering::Relaxed);
        name
    }

    /// Creates an index and builds it from the current rows. Returns its name (given, or
    /// `<component>_<fields>_<kind>` with the fields as resolved).
    ///
    /// Errors: unknown component or field, fields that do not suit the kind (see
    /// [`IndexDef::fields`]), an invalid or taken name, or kind `function` (use
    /// [`World::create_function_index`]).
    pub fn create_index(&mut self, def: IndexDef) -> Result<String> {
        self.create_index_with(def, IndexBuild::Now)
    }

    /// [`World::create_index`] with the same checks and name, but the index is built by the
    /// next read of the indexes (a query, [`World::refresh_indexes`], [`World::indexes`])
    /// instead of now: for a world about to be saved, whose file keeps only the definition,
    /// building it would be wasted.
    pub fn create_index_deferred(&mut self, def: IndexDef) -> Result<String> {
        self.create_index_with(def, IndexBuild::Deferred)
    }

    /// [`World::create_index`], built now or deferred.
    pub(crate) fn create_index_with(&mut self, def: IndexDef, build: IndexBuild) -> Result<String> {
        let id = self.component_id(&def.component)?;
        let info = self.components().info(id);
        let (fields, source, index) = resolve(info, &def, RtreeUpdate::default())?;
        let name = match &def.name {
            Some(n) => n.clone(),
            None => {
                let mut n = info.name().to_string();
                for f in &fields {
                    n.push('_');
                    n.push_str(f);
                }
                n.push('_');
                n.push_str(def.kind.name());
                n
            }
        };
        self.check_new_index_name(&name)?;
        let def = IndexDef { name: Some(name), component: info.name().to_string(), fields, kind: def.kind };
        Ok(self.install(def, id, source, index, build))
    }

    /// Registers a predicate over a component as a function index named `name`: the set of
    /// entities for which `f(component as a Value::Object)` is true, re-evaluated only for
    /// rows that changed since the last refresh (and new rows). In text, `WHERE name(C)`.
    /// `f` must be pure (the same value gives the same answer) and should not panic.
    ///
    /// ```
    /// use ecsdb_engine::index::IndexPredicate;
    /// use ecsdb_engine::{Component, Value, World};
    /// #[derive(Component)] struct Position { x: f32, y: f32 }
    /// let mut world = World::new();
    /// let a = world.spawn(Position { x: 1.0, y: 5.0 });
    /// world.spawn(Position { x: -1.0, y: 5.0 });
    /// world.create_function_index("visible", "Position", |p: &Value| match p {
    ///     Value::Object(f) => f[0].1.as_f64().is_some_and(|x| x > 0.0),
    ///     _ => false,
    /// }).unwrap();
    /// let seen = world.index_answer("visible", &IndexPredicate::Function { name: "visible".into() }).unwrap();
    /// assert_eq!(seen.unwrap().into_vec(None), [a.index()]);
    /// ```
    pub fn create_function_index(
        &mut self,
        name: &str,
        component: &str,
        f: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Result<String> {
        let id = self.component_id(component)?;
        let info = self.components().info(id);
        if info.is_opaque() {
            return Err(EngineError::Opaque(component.to_string()));
        }
        self.check_new_index_name(name)?;
        let def = IndexDef {
            name: Some(name.to_string()),
            component: info.name().to_string(),
            fields: Vec::new(),
            kind: IndexKind::Function,
        };
        let source = Source::Dynamic(Arc::new(f));
        Ok(self.install(def, id, source, Box::new(FunctionIndex::new(name)), IndexBuild::Now))
    }

    /// Like [`World::create_function_index`] with a predicate over the Rust type (which is
    /// registered if needed); works for opaque components too.
    ///
    /// ```
    /// use ecsdb_engine::index::IndexPredicate;
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Health { hp: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 0.0 });
    /// world.create_function_index_typed("dead", |h: &Health| h.hp <= 0.0).unwrap();
    /// let dead = IndexPredicate::Function { name: "dead".into() };
    /// assert_eq!(world.index_answer("dead", &dead).unwrap().unwrap().into_vec(None), [e.index()]);
    /// world.get_mut::<Health>(e).unwrap().hp = 10.0;
    /// assert!(world.index_answer("dead", &dead).unwrap().unwrap().into_vec(None).is_empty());
    /// ```
    pub fn create_function_index_typed<T: Component>(
        &mut self,
        name: &str,
        f: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Result<String> {
        let id = self.register::<T>()?;
        self.check_new_index_name(name)?;
        let component = self.components().info(id).name().to_string();
        let def = IndexDef { name: Some(name.to_string()), component, fields: Vec::new(), kind: IndexKind::Function };
        let typed: TypedFn = Arc::new(move |w: &World, e: Entity| w.get::<T>(e).ok().map(&f));
        Ok(self.install(def, id, Source::Typed(typed), Box::new(FunctionIndex::new(name)), IndexBuild::Now))
    }

    /// Drops an index (an error if there is none by that name).
    pub fn drop_index(&mut self, name: &str) -> Result<()> {
        let set = self.indexes.get_mut();
        let i = set.slots.iter().position(|s| s.name() == name).ok_or_else(|| unknown_index(name))?;
        set.slots.remove(i);
        self.indexes.version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A number that changes whenever an index is created or dropped on this world, so that
    /// a plan made against its indexes can tell it should be made again (prepared statements
    /// in the query crate do).
    ///
    /// ```
    /// use ecsdb_engine::index::{IndexDef, IndexKind};
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Health { hp: f32 }
    /// let mut world = World::new();
    /// world.spawn(Health { hp: 1.0 });
    /// let before = world.index_catalog_version();
    /// let name = world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).unwrap();
    /// let created = world.index_catalog_version();
    /// assert_ne!(created, before);
    /// world.drop_index(&name).unwrap();
    /// assert_ne!(world.index_catalog_version(), created);
    /// ```
    pub fn index_catalog_version(&self) -> u64 {
        self.indexes.version.load(Ordering::Relaxed)
    }

    /// Every index with its entries and memory, in creation order (`SHOW INDEXES`). Refreshes.
    pub fn indexes(&self) -> Vec<IndexInfo> {
        self.index_reader().list()
    }

    /// The index with this name (refreshes).
    pub fn index_info(&self, name: &str) -> Option<IndexInfo> {
        self.index_reader_for(Wanted::One(name)).info(name)
    }

    /// The id of the index named `name`, for readers to find it again without a search by
    /// name (see [`IndexId`]). Refreshes nothing.
    pub fn index_id(&self, name: &str) -> Option<IndexId> {
        self.indexes.read().id(name)
    }

    /// The indexes over a component (refreshes).
    pub fn indexes_on(&self, component: ComponentId) -> Vec<IndexInfo> {
        self.index_reader_for(Wanted::On(&[component])).on(component)
    }

    /// The definitions of every index, names and fields resolved, in creation order (what a
    /// snapshot saves). Function indexes are listed with kind `function`: their predicates are
    /// Rust closures, so a loader re-registers them with [`World::create_function_index`]
    /// rather than [`World::create_index`].
    pub fn index_definitions(&self) -> Vec<IndexDef> {
        self.indexes.read().slots.iter().map(|s| s.def.clone()).collect()
    }

    /// Brings every index up to date with `&mut` access (no locking). Cost: a scan of the
    /// change ticks of the indexed components plus the work for the rows that changed.
    pub fn refresh_indexes(&mut self) {
        let world: &World = self;
        world.indexes.write().refresh(world, Wanted::All);
    }

    /// Refreshes what changed since the last refresh and returns read access to every index:
    /// one per statement. Never stale: the reader borrows the world, so nothing changes
    /// while it lives.
    pub fn index_reader(&self) -> IndexReader<'_> {
        self.index_reader_for(Wanted::All)
    }

    /// [`World::index_reader`] refreshing only the `wanted` indexes: a statement asks for
    /// those it may use, so indexes nobody reads cost writers nothing until read. The reader
    /// answers from the indexes that are up to date and declines (`None`) the others, as it
    /// declines a shape an index does not answer.
    ///
    /// ```
    /// use ecsdb_engine::index::{IndexDef, IndexKind, IndexPredicate, Wanted};
    /// use ecsdb_engine::{ComponentDef, FieldType, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("Hp", &[("v", FieldType::I64)])).unwrap();
    /// world.define_component(&ComponentDef::new("Team", &[("t", FieldType::I64)])).unwrap();
    /// world.create_index(IndexDef::new("Hp", &["v"], IndexKind::Bitmap).named("hp")).unwrap();
    /// world.create_index(IndexDef::new("Team", &["t"], IndexKind::Bitmap).named("team")).unwrap();
    /// world.spawn_values(&[("Hp", &[("v", Value::Int(5))]), ("Team", &[("t", Value::Int(1))])]).unwrap();
    /// let five = IndexPredicate::Eq(Value::Int(5));
    /// let r = world.index_reader_for(Wanted::One("hp"));
    /// assert_eq!(r.estimate("hp", &five).unwrap().rows, 1);
    /// // "team" was left for later: it answers nothing until a reader wants it.
    /// assert!(r.estimate("team", &IndexPredicate::Eq(Value::Int(1))).is_none());
    /// ```
    pub fn index_reader_for(&self, wanted: Wanted<'_>) -> IndexReader<'_> {
        let set = self.indexes.read();
        if set.is_current(self, wanted) && !self.indexes.set.is_poisoned() {
            return IndexReader { world: self, set };
        }
        drop(set);
        match self.indexes.set.try_write() {
            Ok(mut set) => set.refresh(self, wanted),
            Err(TryLockError::Poisoned(p)) => {
                let mut set = p.into_inner();
                set.mark_all_for_rebuild();
                self.indexes.set.clear_poison();
                set.refresh(self, wanted);
            }
            // Another reader lives (nothing changed since it refreshed; indexes it left dirty
            // are declined) or another thread is refreshing (`read` waits for it).
            Err(TryLockError::WouldBlock) => {}
        }
        IndexReader { world: self, set: self.indexes.read() }
    }

    /// Estimate of index `name` for `pred` (refreshes first); `Ok(None)` when the index does
    /// not answer it, an error when there is no such index.
    pub fn index_estimate(&self, name: &str, pred: &IndexPredicate) -> Result<Option<Estimate>> {
        let r = self.index_reader_for(Wanted::One(name));
        r.set.find(name).ok_or_else(|| unknown_index(name))?;
        Ok(r.estimate(name, pred))
    }

    /// Answer of index `name` to `pred` (refreshes first), owning its data: an ordered answer
    /// is drained up to the predicate's `k` / `limit`. `Ok(None)` when the index does not
    /// answer it, an error when there is no such index.
    pub fn index_answer(&self, name: &str, pred: &IndexPredicate) -> Result<Option<IndexAnswer<'static>>> {
        let r = self.index_reader_for(Wanted::One(name));
        r.set.find(name).ok_or_else(|| unknown_index(name))?;
        let limit = match pred {
            IndexPredicate::Nearest { k, .. } => Some(*k),
            IndexPredicate::Ordered { limit, .. } => *limit,
            _ => None,
        };
        Ok(r.answer(name, pred).map(|a| a.into_owned(limit)))
    }

    /// The predicate of the function index `name`, to evaluate it in a scan.
    pub fn index_function(&self, name: &str) -> Option<IndexFunction> {
        function_of(self.indexes.read().find(name)?)
    }

    /// Chooses how an rtree index absorbs moved entities (see [`RtreeUpdate`]); the index is
    /// rebuilt at the next refresh.
    pub fn set_rtree_update(&mut self, name: &str, mode: RtreeUpdate) -> Result<()> {
        let dims = {
            let set = self.indexes.read();
            let slot = set.find(name).ok_or_else(|| unknown_index(name))?;
            let info = self.components().info(slot.component);
            match slot.def.fields.as_slice() {
                [f] if info.field(f).is_some_and(|f| f.ty == FieldType::Vec2) => 2,
                [_] => 3,
                fs => fs.len(),
            }
        };
        let set = self.indexes.get_mut();
        let slot = set.slots.iter_mut().find(|s| s.name() == name).ok_or_else(|| unknown_index(name))?;
        if slot.def.kind != IndexKind::Rtree {
            return Err(invalid(format!("index '{name}' is not an rtree index")));
        }
        slot.index = match dims {
            2 => Box::new(RtreeIndex::<2>::new(mode)),
            _ => Box::new(RtreeIndex::<3>::new(mode)),
        };
        slot.needs_rebuild = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn for_each_changed_visits_exactly_the_new_rows_in_order() {
        let mut x = 0x9e37_79b9_u32;
        for len in [0usize, 1, 63, 64, 65, 200, 1000] {
            let ticks: Vec<Tick> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x % 40
                })
                .collect();
            let (this, age) = (30, 7);
            let mut seen = Vec::new();
            for_each_changed(&ticks, this, age, |r| seen.push(r));
            let expected: Vec<usize> = (0..len).filter(|&r| is_new(ticks[r], this, age)).collect();
            assert_eq!(seen, expected, "len {len}");
        }
    }

    use std::ops::Bound;

    use super::*;
    use crate::{CommandBuffer, ComponentDef};

    /// A reader for one index leaves the others dirty: they answer nothing until wanted,
    /// then catch up on every write made meanwhile; one that took many removals while dirty
    /// is dropped and rebuilt instead of buffering them.
    #[test]
    fn indexes_left_dirty_catch_up_when_wanted() {
        let mut w = World::new();
        w.define_component(&ComponentDef::new("A", &[("v", FieldType::I64)])).unwrap();
        w.define_component(&ComponentDef::new("B", &[("v", FieldType::I64)])).unwrap();
        w.create_index(IndexDef::new("A", &["v"], IndexKind::Bitmap).named("a")).unwrap();
        w.create_index(IndexDef::new("B", &["v"], IndexKind::Bitmap).named("b")).unwrap();
        let n = crate::test_size(10_000, 40);
        let ab = |i: i64| [("A", [("v", Value::Int(i % 3))]), ("B", [("v", Value::Int(i % 5))])];
        let es: Vec<Entity> = (0..n)
            .map(|i| {
                let c = ab(i);
                w.spawn_values(&[(c[0].0, &c[0].1[..]), (c[1].0, &c[1].1[..])]).unwrap()
            })
            .collect();
        drop(w.index_reader());
        let count = |w: &World, name: &str, v: i64| {
            w.index_reader_for(Wanted::One(name)).estimate(name, &IndexPredicate::Eq(Value::Int(v))).map(|e| e.rows)
        };
        // A write, then a reader for "b" only: "a" is dirty and declines.
        w.set_fields(es[0], "A", &[("v", Value::Int(7))]).unwrap();
        {
            let r = w.index_reader_for(Wanted::One("b"));
            assert!(r.estimate("b", &IndexPredicate::Eq(Value::Int(0))).is_some());
            assert!(r.estimate("a", &IndexPredicate::Eq(Value::Int(7))).is_none(), "a dirty index answers nothing");
        }
        w.set_fields(es[1], "A", &[("v", Value::Int(7))]).unwrap();
        drop(w.index_reader_for(Wanted::One("b")));
        // Wanted at last: both writes are there.
        assert_eq!(count(&w, "a", 7), Some(2));
        // Many removals while dirty: the index is dropped, then rebuilt when wanted.
        w.set_fields(es[2], "B", &[("v", Value::Int(9))]).unwrap();
        drop(w.index_reader_for(Wanted::One("b")));
        let gone = (n as usize) * 9 / 10;
        for e in &es[..gone] {
            w.despawn(*e).unwrap();
        }
        // The bound is 4096 removals past a quarter of the entries: more than Miri can take.
        if !cfg!(miri) {
            assert!(w.indexes.read().find("a").unwrap().needs_rebuild, "dropped past the bound");
        }
        let left = |v: i64| (gone as i64..n).filter(|i| i % 3 == v).count() as u64;
        assert_eq!(count(&w, "a", 1), Some(left(1)));
        assert_eq!(count(&w, "a", 7), Some(0));
        assert_eq!(count(&w, "b", 9), Some(0));
    }

    #[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
    struct Pos {
        x: f32,
        y: f32,
        z: f32,
    }
    #[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
    struct Team {
        id: u8,
    }
    #[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
    struct Frozen;
    #[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
    #[component(storage = "sparse")]
    struct Hp {
        v: f64,
    }
    #[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
    struct Big {
        v: u64,
    }

    fn set(world: &World, name: &str, p: &IndexPredicate) -> Vec<u32> {
        world.index_answer(name, p).unwrap().unwrap().into_vec(None)
    }

    #[test]
    fn definitions_are_validated_and_named() {
        let mut w = World::new();
        w.register::<Pos>().unwrap();
        w.register::<Team>().unwrap();
        w.register::<Frozen>().unwrap();
        w.define_component(&ComponentDef::new("Dir", &[("v", FieldType::Vec2), ("w", FieldType::F32)])).unwrap();
        assert_eq!(w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap(), "Pos_x_y_z_rtree");
        assert_eq!(w.create_index(IndexDef::new("Pos", &["x", "y"], IndexKind::Rtree)).unwrap(), "Pos_x_y_rtree");
        assert_eq!(w.create_index(IndexDef::new("Dir", &["v"], IndexKind::Rtree)).unwrap(), "Dir_v_rtree");
        assert_eq!(w.create_index(IndexDef::new("Team", &[], IndexKind::Btree)).unwrap(), "Team_id_btree");
        assert_eq!(w.create_index(IndexDef::new("Frozen", &[], IndexKind::Bitmap)).unwrap(), "Frozen_bitmap");
        assert_eq!(
            w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("team_idx")).unwrap(),
            "team_idx"
        );
        let mut err = |d: IndexDef| w.clone_err(d);
        assert_eq!(err(IndexDef::new("Nope", &[], IndexKind::Bitmap)), "unknown component 'Nope'");
        assert_eq!(err(IndexDef::new("Pos", &["q"], IndexKind::Btree)), "component 'Pos' has no field 'q'");
        assert!(err(IndexDef::new("Team", &[], IndexKind::Rtree)).contains("vector-like"));
        assert!(err(IndexDef::new("Dir", &["v"], IndexKind::Btree)).contains("use rtree"));
        assert!(err(IndexDef::new("Dir", &[], IndexKind::Rtree)).contains("vector-like"));
        assert!(err(IndexDef::new("Pos", &["x", "y"], IndexKind::Bitmap)).contains("one field"));
        assert!(err(IndexDef::new("Pos", &["x", "x"], IndexKind::Rtree)).contains("twice"));
        assert!(err(IndexDef::new("Pos", &[], IndexKind::Btree)).contains("one field"));
        assert!(err(IndexDef::new("Pos", &[], IndexKind::Function)).contains("create_function_index"));
        assert_eq!(
            err(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("team_idx")),
            "index 'team_idx' already exists"
        );
        assert!(
            err(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("bad name")).contains("not a valid index name")
        );
        let defs = w.index_definitions();
        assert_eq!(defs.len(), 6);
        assert_eq!(defs[0], IndexDef::new("Pos", &["x", "y", "z"], IndexKind::Rtree).named("Pos_x_y_z_rtree"));
        w.drop_index("Pos_x_y_rtree").unwrap();
        assert!(w.drop_index("Pos_x_y_rtree").is_err());
        assert_eq!(w.indexes().len(), 5);
        let team = w.component_id("Team").unwrap();
        assert_eq!(
            w.indexes_on(team).iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["Team_id_btree", "team_idx"]
        );
    }

    impl World {
        fn clone_err(&mut self, d: IndexDef) -> String {
            self.create_index(d).unwrap_err().to_string()
        }
    }

    #[test]
    fn a_deferred_index_is_checked_now_and_built_at_the_first_read() {
        let mut w = World::new();
        let a = w.spawn(Team { id: 1 });
        assert!(w.create_index_deferred(IndexDef::new("Team", &["nope"], IndexKind::Bitmap)).is_err());
        let tb = w.create_index_deferred(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
        // Listing the definitions (as a save does) does not build it...
        assert_eq!(w.snapshot_index_definitions().len(), 1);
        assert_eq!(w.indexes.read().find(&tb).map(|s| (s.needs_rebuild, s.entries())), Some((true, 0)));
        // ... rows written before the first read are in it, and removals on the way do no harm.
        let b = w.spawn(Team { id: 1 });
        let c = w.spawn(Team { id: 1 });
        w.despawn(c).unwrap();
        assert_eq!(set(&w, &tb, &IndexPredicate::Eq(Value::Int(1))), [a.index(), b.index()]);
        assert_eq!(w.index_info(&tb).map(|i| i.entries), Some(2));
    }

    /// After a first refresh arms the columns' write logs, refreshes take the rows the logs
    /// name: a row written and then moved by a removal (the last row filling the hole, one
    /// by one or in bulk) must still reach the index, as must rows appended and rows written
    /// through paths the logs cannot follow.
    #[test]
    fn written_rows_reach_the_index_through_the_write_logs() {
        let mut w = World::new();
        let es: Vec<Entity> = (0..40).map(|i| w.spawn(Team { id: (i % 4) as u8 })).collect();
        let tb = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree)).unwrap();
        let team = |w: &World, t: i64| set(w, &tb, &IndexPredicate::Eq(Value::Int(t)));
        let scan = |w: &World, t: u8| {
            let mut v: Vec<u32> =
                es.iter().filter(|e| w.get::<Team>(**e).is_ok_and(|x| x.id == t)).map(|e| e.index()).collect();
            v.sort_unstable();
            v
        };
        w.refresh_indexes();
        // The last row is written, then a removal moves it into the hole.
        w.get_mut::<Team>(es[39]).unwrap().id = 9;
        w.despawn(es[0]).unwrap();
        assert_eq!(team(&w, 9), scan(&w, 9));
        // The same in bulk: rows near the end are written, then many rows go at once.
        for &e in &es[35..39] {
            w.get_mut::<Team>(e).unwrap().id = 8;
        }
        let gone: Vec<Entity> = es[1..20].to_vec();
        w.despawn_many(&gone).unwrap();
        assert_eq!(team(&w, 8), scan(&w, 8));
        // Written rows that move to another table, appended rows, and a query's writes.
        w.get_mut::<Team>(es[30]).unwrap().id = 7;
        w.insert(es[30], Frozen).unwrap();
        let fresh = w.spawn(Team { id: 7 });
        let mut want = scan(&w, 7);
        want.push(fresh.index());
        want.sort_unstable();
        assert_eq!(team(&w, 7), want);
        for mut t in w.query_mut::<&mut Team>() {
            t.id = 6;
        }
        assert_eq!(team(&w, 6).len(), w.component_count(w.component_id("Team").unwrap()));
    }

    #[test]
    fn every_write_path_reaches_the_indexes() {
        let mut w = World::new();
        let a = w.spawn((Pos { x: 0.0, y: 0.0, z: 0.0 }, Team { id: 1 }));
        let b = w.spawn((Pos { x: 5.0, y: 0.0, z: 0.0 }, Team { id: 2 }, Hp { v: 3.0 }));
        let rt = w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap();
        let tb = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
        let hp = w.create_index(IndexDef::new("Hp", &["v"], IndexKind::Btree)).unwrap();
        w.register::<Frozen>().unwrap();
        let fr = w.create_index(IndexDef::new("Frozen", &[], IndexKind::Bitmap)).unwrap();
        let near = |x: f64| IndexPredicate::WithinRadius { center: vec![x, 0.0, 0.0], radius: 1.0, inclusive: true };
        let team = |t: i64| IndexPredicate::Eq(Value::Int(t));
        assert_eq!(set(&w, &rt, &near(5.0)), [b.index()]);
        // get_mut
        w.get_mut::<Pos>(a).unwrap().x = 5.5;
        assert_eq!(set(&w, &rt, &near(5.0)), [a.index(), b.index()]);
        // query_mut with Mut writes
        for mut p in w.query_mut::<&mut Pos>() {
            p.x += 100.0;
        }
        assert_eq!(set(&w, &rt, &near(105.0)), [a.index(), b.index()]);
        // dynamic set_fields
        w.set_fields(b, "Team", &[("id", Value::Int(1))]).unwrap();
        assert_eq!(set(&w, &tb, &team(1)), [a.index(), b.index()]);
        // insert overwriting, insert adding (table move keeps ticks), sparse insert
        w.insert(a, (Team { id: 3 }, Frozen, Hp { v: 9.0 })).unwrap();
        assert_eq!(set(&w, &tb, &team(3)), [a.index()]);
        assert_eq!(set(&w, &fr, &IndexPredicate::Present), [a.index()]);
        assert_eq!(set(&w, &hp, &IndexPredicate::between(5, 10)), [a.index()]);
        assert_eq!(set(&w, &rt, &near(105.5)), [a.index(), b.index()]);
        // remove, remove_component, despawn
        w.remove::<(Frozen,)>(a).unwrap();
        assert!(set(&w, &fr, &IndexPredicate::Present).is_empty());
        w.remove_component(b, "Hp").unwrap();
        assert_eq!(set(&w, &hp, &IndexPredicate::Present), [a.index()]);
        w.despawn(a).unwrap();
        assert_eq!(set(&w, &rt, &IndexPredicate::Present), [b.index()]);
        // command buffers, spawn_values, insert_values; the index of `a` is recycled
        let mut cmd = CommandBuffer::new();
        cmd.spawn((Pos { x: 7.0, y: 0.0, z: 0.0 }, Team { id: 2 }));
        cmd.despawn(b);
        let spawned = cmd.apply(&mut w).spawned;
        assert_eq!(set(&w, &rt, &near(7.0)), [spawned[0].index()]);
        let c = w.spawn_values(&[("Team", &[("id", Value::Int(2))])]).unwrap();
        w.insert_values(c, &[("Pos", &[("x", Value::Float(7.5))])]).unwrap();
        assert_eq!(set(&w, &rt, &near(7.0)), [spawned[0].index(), c.index()]);
        assert_eq!(set(&w, &tb, &team(2)), [spawned[0].index(), c.index()]);
        // clear bypasses the removal hook: the count check rebuilds
        w.clear();
        assert!(set(&w, &rt, &IndexPredicate::Present).is_empty());
        assert!(set(&w, &tb, &IndexPredicate::NotEq(Value::Int(9))).is_empty());
        let info = w.index_info(&rt).unwrap();
        assert_eq!((info.entries, info.kind), (0, IndexKind::Rtree));
    }

    #[test]
    fn function_indexes_reevaluate_only_changed_rows() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let mut w = World::new();
        let es: Vec<Entity> = (0..100).map(|i| w.spawn(Pos { x: i as f32, y: 0.0, z: 0.0 })).collect();
        w.create_function_index("far", "Pos", |v: &Value| {
            CALLS.fetch_add(1, Ordering::Relaxed);
            matches!(v, Value::Object(f) if f[0].1.as_f64().is_some_and(|x| x >= 50.0))
        })
        .unwrap();
        assert_eq!(CALLS.load(Ordering::Relaxed), 100);
        let far = IndexPredicate::Function { name: "far".into() };
        assert_eq!(set(&w, "far", &far).len(), 50);
        assert_eq!(CALLS.load(Ordering::Relaxed), 100);
        w.get_mut::<Pos>(es[0]).unwrap().x = 60.0;
        w.get_mut::<Pos>(es[99]).unwrap().x = 0.0;
        assert_eq!(set(&w, "far", &far).len(), 50);
        assert_eq!(CALLS.load(Ordering::Relaxed), 102);
        let f = w.index_function("far").unwrap();
        assert_eq!(f.eval(&w, es[0]).unwrap(), Some(true));
        assert_eq!(f.eval(&w, es[99]).unwrap(), Some(false));
        let lone = w.spawn(Team { id: 0 });
        assert_eq!(f.eval(&w, lone).unwrap(), None);
        w.despawn(lone).unwrap();
        assert!(f.eval(&w, lone).is_err());
        assert!(w.create_function_index("far", "Pos", |_| true).is_err());
        assert_eq!(w.index_definitions()[0].kind, IndexKind::Function);
        // Typed: works on opaque-free Rust types through the world.
        w.create_function_index_typed("low_team", |t: &Team| t.id < 2).unwrap();
        let t = w.spawn(Team { id: 1 });
        assert_eq!(set(&w, "low_team", &IndexPredicate::Function { name: "low_team".into() }), [t.index()]);
    }

    #[test]
    fn unreadable_rows_make_the_index_decline() {
        let mut w = World::new();
        let a = w.spawn(Big { v: 5 });
        let b = w.spawn(Big { v: u64::MAX });
        let name = w.create_index(IndexDef::new("Big", &["v"], IndexKind::Btree)).unwrap();
        assert!(w.index_estimate(&name, &IndexPredicate::Eq(Value::Int(5))).unwrap().is_none());
        assert_eq!(set(&w, &name, &IndexPredicate::Present), [a.index(), b.index()]);
        w.get_mut::<Big>(b).unwrap().v = 7;
        assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(7))), [b.index()]);
        assert!(w.index_answer("nope", &IndexPredicate::Present).is_err());
    }

    #[test]
    fn readers_nest_and_never_go_stale() {
        let mut w = World::new();
        let a = w.spawn(Team { id: 1 });
        let name = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree)).unwrap();
        let r1 = w.index_reader();
        let r2 = w.index_reader(); // nested on one thread: no deadlock
        let o =
            IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending: false, limit: None };
        let IndexAnswer::Ordered(it) = r2.answer(&name, &o).unwrap() else { panic!() };
        assert_eq!(it.collect::<Vec<_>>(), [a.index()]);
        drop((r1, r2));
        w.get_mut::<Team>(a).unwrap().id = 4;
        w.refresh_indexes();
        assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(4))), [a.index()]);
        std::thread::scope(|s| {
            let (w, name) = (&w, &name);
            for _ in 0..4 {
                s.spawn(move || assert_eq!(set(w, name, &IndexPredicate::Eq(Value::Int(4))).len(), 1));
            }
        });
    }

    #[test]
    fn a_reader_after_no_write_refreshes_nothing_and_takes_no_tick() {
        let mut w = World::new();
        let a = w.spawn(Team { id: 1 });
        let name = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
        drop(w.index_reader());
        let tick = w.change_tick_wide();
        {
            let r1 = w.index_reader_for(Wanted::One(&name));
            let r2 = w.index_reader_for(Wanted::One(&name));
            assert_eq!(r2.estimate(&name, &IndexPredicate::Eq(Value::Int(1))).unwrap().rows, 1);
            drop((r1, r2));
        }
        assert_eq!(w.change_tick_wide(), tick, "nothing to refresh, so no tick taken");
        // A write is caught up by the next reader, and a despawn reaches the index too.
        w.get_mut::<Team>(a).unwrap().id = 2;
        assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(2))), [a.index()]);
        assert_ne!(w.change_tick_wide(), tick);
        w.despawn(a).unwrap();
        assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(2))), Vec::<u32>::new());
    }

    #[test]
    fn an_id_that_no_longer_fits_finds_the_index_by_name() {
        let mut w = World::new();
        w.spawn(Team { id: 1 });
        w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("x")).unwrap();
        w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree).named("t")).unwrap();
        let id = w.index_id("t").unwrap();
        let one = IndexPredicate::Eq(Value::Int(1));
        assert_eq!(w.index_reader().info(IndexRef::found("t", id)).unwrap().kind, IndexKind::Btree);
        // "x" dropped: "t" moved to the first position, where the id no longer points.
        w.drop_index("x").unwrap();
        assert_ne!(w.index_id("t"), Some(id));
        let r = w.index_reader();
        assert_eq!(r.info(IndexRef::found("t", id)).unwrap().kind, IndexKind::Btree);
        assert_eq!(r.estimate(IndexRef::found("t", id), &one).unwrap().rows, 1);
        drop(r);
        // Another world with an index in the same place: its serial differs, so the name
        // decides (here: no such index there).
        let mut other = World::new();
        other.spawn(Team { id: 1 });
        other.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("u")).unwrap();
        let fresh = w.index_id("t").unwrap();
        assert!(other.index_reader().estimate(IndexRef::found("t", fresh), &one).is_none());
        assert_eq!(w.index_reader().estimate(IndexRef::found("t", fresh), &one).unwrap().rows, 1);
    }

    #[test]
    fn rtree_update_modes_can_be_switched() {
        let mut w = World::new();
        let es: Vec<Entity> = (0..50).map(|i| w.spawn(Pos { x: i as f32, y: 0.0, z: 0.0 })).collect();
        let rt = w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap();
        for mode in [RtreeUpdate::PerRow, RtreeUpdate::Rebuild, RtreeUpdate::Loose] {
            w.set_rtree_update(&rt, mode).unwrap();
            w.get_mut::<Pos>(es[3]).unwrap().x += 0.25;
            let near = IndexPredicate::Nearest { point: vec![2.9, 0.0, 0.0], k: 2 };
            assert_eq!(set(&w, &rt, &near), [es[3].index(), es[2].index()]);
        }
        assert!(w.set_rtree_update("nope", RtreeUpdate::Loose).is_err());
    }
}
