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

mod catalog;
mod feed;
mod relayout;
pub(crate) use relayout::SavedIndexes;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use roaring::RoaringBitmap;

use crate::component::ComponentId;
use crate::entity::Entity;
use crate::error::Result;
use crate::index::{
    Estimate, IndexAnswer, IndexDef, IndexId, IndexInfo, IndexKind, IndexPredicate, IndexRef, SecondaryIndex, Wanted,
};
use crate::storage::WrittenRows;
use crate::tick::{EVERYTHING_NEW, Tick, for_each_changed, run_age};
use crate::value::Value;
use crate::world::World;

use feed::{RowReader, Segment, segments};

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
        if let Some(id) = index.id
            && let Some(s) = self.slots.get(id.position as usize).filter(|s| s.serial == id.serial)
        {
            return Some(s);
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
        if poisoned {
            self.set.clear_poison();
        }
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
        self.note_removal(e, id, false);
    }

    /// [`note_removed`](Self::note_removed) for a mirror, while the world it copies is lent
    /// to it: the indexes only buffer the removal ([`SecondaryIndex::remove_deferred`]) until
    /// [`settle`](Self::settle), after the lender has its world back.
    pub(crate) fn note_removed_deferred(&mut self, e: Entity, id: ComponentId) {
        self.note_removal(e, id, true);
    }

    /// Applies the removals [`note_removed_deferred`](Self::note_removed_deferred) left
    /// buffered past each index's usual bound.
    pub(crate) fn settle(&mut self) {
        for s in &mut self.get_mut().slots {
            s.index.settle();
        }
    }

    #[inline]
    fn note_removal(&mut self, e: Entity, id: ComponentId, deferred: bool) {
        let set = self.get_mut();
        if !set.slots.is_empty() {
            Self::note_removal_in_slots(set, e, id, deferred);
        }
    }

    /// [`IndexRegistry::note_removal`] where some index exists.
    #[inline(never)]
    fn note_removal_in_slots(set: &mut IndexSet, e: Entity, id: ComponentId, deferred: bool) {
        for s in set.slots.iter_mut().filter(|s| s.component == id) {
            if s.needs_rebuild {
                // Rebuilt from the rows when next wanted: nothing to keep in step.
                continue;
            }
            if deferred {
                s.index.remove_deferred(e.index());
            } else {
                s.index.remove(e.index());
            }
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
        Some(crate::index::keys::bitmap_from_ids(found))
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
