//! Bringing a read-only copy of a world up to date with the world: how the live publisher's
//! copies follow the writer's world without a snapshot each time.
//!
//! The copy holds the source's entities in the same rows of corresponding tables (a table
//! of the copy holds the components of its source table that the copy knows). A table whose
//! entities are the same row for row only needs the rows whose change or added ticks are
//! new in the window; a table whose entities differ (entities spawned, despawned or moved
//! between tables) gets, besides those, a copy of every row whose entity differs, and is
//! cut or extended to the source's length. Each entity put in a row gets its allocator slot
//! as it is placed (new slots come first, a chunk at a time); once every row is in place,
//! the entities that lost their rows get theirs, and the indexes hear of every entity that
//! lost a component. Copied rows are stamped with the
//! copy's own ticks, so the copy's indexes and skip summaries refresh as after any write.

use std::collections::HashMap;
use std::ops::Range;

use crate::component::{ComponentId, StorageKind};
use crate::entity::{Entity, EntityLocation};
use crate::error::{EngineError, Result};
use crate::storage::{AddedView, Column, TableId, ValueCopy};
use crate::tick::{ChangeWindow, Tick};
use crate::world::{World, sparse_mut};

/// How [`World::mirror_from`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Mirrored {
    /// The copy holds what the source holds. The source's components whose rows changed in
    /// the copy (values written, rows added or removed) since the last call that completed,
    /// each once, in id order: a stopped call's changes are reported when the next completes,
    /// even rows it moved that the source took back meanwhile.
    Done(Vec<ComponentId>),
    /// `stop` asked to stop before the copy was complete: it holds part of the changes and
    /// must be mirrored again before it is read.
    ///
    /// With `rows_current`, every row the copy holds has its value as of the window's end
    /// (it stopped while appending rows, or before a table or set it holds no rows of yet,
    /// with every row it holds elsewhere brought up to date): the next call may take
    /// the window that starts where this one ended, so a copy filled over several calls
    /// never copies a row twice unless the source wrote it again. Otherwise the next call
    /// takes the same window (or one that starts earlier).
    Stopped {
        /// Whether the next call may take a window starting at this one's end.
        rows_current: bool,
    },
}

/// Rows copied between two looks at `stop` (a few under test, so that the tests' small
/// tables stop within a table too).
const CHUNK: usize = if cfg!(any(test, miri)) { 4 } else { 16_384 };

impl World {
    /// Applies the index removals that [`World::mirror_from`] left buffered past each index's
    /// usual bound. Call it after a mirror, once the source world is given back: a copy
    /// mirrored often without it keeps buffering removals (each index takes them out when a
    /// statement next consults it, or the copy drops and rebuilds an index nobody reads).
    pub fn settle_indexes(&mut self) {
        self.indexes.settle();
    }

    /// Brings this world, a copy of `src` made earlier (a snapshot of it, or of its schema
    /// only: see [`SaveOptions::schema_only`](crate::SaveOptions::schema_only); or an earlier
    /// mirror), up to date with `src`: the same entities in the same rows of corresponding
    /// tables and sparse sets, with the same values. `ids[c]` is this world's id of `src`'s
    /// component `c` (`None`: not copied, such as an opaque component), and `window` the
    /// change window since the copy was last made (rows stamped in it are copied again).
    ///
    /// Checks everything it relies on before copying anything, and fails (leaving every row
    /// as it was) when the copy cannot follow `src`: a component whose fields differ, or two
    /// tables of `src` that hold entities and differ only in components the copy lacks.
    /// Rebuild the copy from a snapshot then. `stop` is asked between chunks of rows, while
    /// values are copied and while rows move, and before each sparse set is rebuilt; after
    /// [`Mirrored::Stopped`] the copy must not be read until a later call completes. A stop
    /// while rows move keeps what was moved: the copy remembers the entities that changed
    /// rows, and the next call, which finds the tables already moved holding the same
    /// entities as the source, finishes the rest (the allocator's slots, the indexes'
    /// removals, the components to report). A copy made from the schema alone is filled this
    /// way over as many calls as it takes, each going on from where the last stopped (see
    /// [`Mirrored::Stopped`]).
    ///
    /// The copy's indexes hear of every entity that lost a component, but only buffer it
    /// (an index never takes its buffered removals out while `src` is being read, which
    /// would keep `src`'s owner waiting): call [`World::settle_indexes`] once `src` is no
    /// longer needed.
    ///
    /// ```
    /// use ecsdb_engine::{ChangeWindow, ComponentDef, FieldType, Mirrored, SaveOptions, Value, World};
    /// let mut world = World::new();
    /// world.define_component(&ComponentDef::new("Hp", &[("v", FieldType::I64)])).unwrap();
    /// let e = world.spawn_values(&[("Hp", &[("v", Value::Int(1))])]).unwrap();
    /// let mut copy = World::load_from_bytes(&world.save_to_vec(&SaveOptions::default()).unwrap()).unwrap();
    /// let (_, synced) = world.begin_change_run(None);
    /// world.set_fields(e, "Hp", &[("v", Value::Int(2))]).unwrap();
    /// let f = world.spawn_values(&[("Hp", &[("v", Value::Int(3))])]).unwrap();
    /// let ids: Vec<_> = world.components().iter().map(|c| copy.component_id(c.name()).ok()).collect();
    /// let (window, _) = world.begin_change_run(Some(synced));
    /// assert!(matches!(copy.mirror_from(&world, &ids, &window, &|| false).unwrap(), Mirrored::Done(_)));
    /// assert_eq!(copy.get_field(e, "Hp", "v").unwrap(), Value::Int(2));
    /// assert_eq!(copy.get_field(f, "Hp", "v").unwrap(), Value::Int(3));
    /// ```
    pub fn mirror_from(
        &mut self,
        src: &World,
        ids: &[Option<ComponentId>],
        window: &ChangeWindow,
        stop: &dyn Fn() -> bool,
    ) -> Result<Mirrored> {
        let plan = self.mirror_plan(src, ids)?;
        let tick = self.write_tick();
        // What an earlier call stopped while moving rows had done.
        let pending = self.mirror_pending.take().map_or_else(MirrorPending::default, |p| *p);
        let mut changed = vec![false; ids.len()];
        for &c in &pending.changed {
            if let Some(flag) = changed.get_mut(c) {
                *flag = true;
            }
        }
        let MirrorPending { mut displaced, mut lost_sparse, changed: _ } = pending;
        // A stop keeps what was moved (and what earlier stops kept) for the next call.
        macro_rules! stop_here {
            ($rows_current:expr_2021) => {{
                let rows_current = $rows_current;
                let changed = changed.iter().enumerate().filter(|(_, c)| **c).map(|(c, _)| c).collect();
                self.mirror_pending = Some(Box::new(MirrorPending { displaced, lost_sparse, changed }));
                return Ok(Mirrored::Stopped { rows_current });
            }};
        }
        let mut structural = Vec::new();
        // Values only, where the entities are the same: the common case. A stop here moves
        // nothing, so a later call finds the same work.
        for (dst, source) in plan.sources.iter().enumerate() {
            let Some(s) = *source else {
                if !self.storage.tables[dst].is_empty() {
                    structural.push(dst);
                }
                continue;
            };
            let from = &src.storage.tables[s];
            match same_entities(from.entities(), self.storage.tables[dst].entities(), stop) {
                Some(true) => {}
                Some(false) => {
                    structural.push(dst);
                    continue;
                }
                None => stop_here!(false),
            }
            for (&c, column) in from.components().iter().zip(from.columns()) {
                let (Some(id), Some(copy)) = (ids[c.index()], &plan.copies[c.index()]) else { continue };
                let to = self.storage.tables[dst].column_mut(id).expect("the table's image has every copied component");
                if assign_changed(to, column, 0..column.len(), window, copy, tick, &mut changed[c.index()], stop) {
                    stop_here!(false);
                }
            }
        }
        let mut rebuilt_sparse = Vec::new();
        for (c, copy) in plan.copies.iter().enumerate() {
            let (Some(copy), Some(id)) = (copy, ids[c]) else { continue };
            if src.components.info(ComponentId(c as u32)).storage() != StorageKind::Sparse {
                continue;
            }
            let from = src.storage.sparse.get(c).and_then(Option::as_ref);
            let to = self.storage.sparse.get(id.index()).and_then(Option::as_ref);
            let (from_entities, to_entities) =
                (from.map_or(&[][..], |s| s.entities()), to.map_or(&[][..], |s| s.entities()));
            if from_entities != to_entities {
                rebuilt_sparse.push(c);
                continue;
            }
            // Empty in both (the copy may have no set at all).
            let Some(from) = from.filter(|f| !f.is_empty()) else { continue };
            let to = self.storage.sparse[id.index()].as_mut().expect("holds the same entities").column_mut();
            let rows = 0..from.column().len();
            if assign_changed(to, from.column(), rows, window, copy, tick, &mut changed[c], stop) {
                stop_here!(false);
            }
        }
        // Rows move from here on, a table (or sparse set) at a time, with a look at `stop`
        // before each. A stop leaves every row current only if the tables and sets it did
        // not reach hold none: a row left there may hold the same entity as the source's
        // again by the next call, which then copies it only if the source wrote it since.
        let hold_none = |world: &World, tables: &[usize], sets: &[usize]| {
            tables.iter().all(|&t| world.storage.tables[t].is_empty())
                && sets.iter().all(|&c| {
                    let id = ids[c].expect("a rebuilt set is copied");
                    world.storage.sparse.get(id.index()).and_then(Option::as_ref).is_none_or(|s| s.is_empty())
                })
        };
        // Slots for every index the source issued since, before any row is placed: live
        // entities get their location as their rows are copied.
        loop {
            if stop() {
                stop_here!(hold_none(self, &structural, &rebuilt_sparse));
            }
            if self.entities.grow_slots_from(&src.entities, CHUNK) {
                break;
            }
        }
        for (k, &dst) in structural.iter().enumerate() {
            if stop() {
                stop_here!(hold_none(self, &structural[k..], &rebuilt_sparse));
            }
            let source = plan.sources[dst].map(|s| &src.storage.tables[s]);
            // Reported even if a stop comes within the table: its rows change either way.
            if let Some(from) = source {
                for &c in from.components() {
                    changed[c.index()] = true;
                }
            }
            for &id in self.storage.tables[dst].components() {
                if let Some(&c) = plan.source_id.get(id.index()).filter(|&&c| c != usize::MAX) {
                    changed[c] = true;
                }
            }
            if let Some(updated) =
                self.mirror_table(TableId(dst as u32), source, ids, &plan.copies, window, tick, &mut displaced, stop)
            {
                stop_here!(updated && hold_none(self, &structural[k + 1..], &rebuilt_sparse));
            }
        }
        for (j, &c) in rebuilt_sparse.iter().enumerate() {
            if stop() {
                stop_here!(hold_none(self, &[], &rebuilt_sparse[j..]));
            }
            let id = ids[c].expect("a rebuilt set is copied");
            let from = src.storage.sparse.get(c).and_then(Option::as_ref);
            let to = sparse_mut(&mut self.storage.sparse, id, &self.components);
            lost_sparse
                .extend(to.entities().iter().filter(|e| !from.is_some_and(|f| f.contains(**e))).map(|&e| (e, id)));
            let copy = plan.copies[c].as_ref().expect("a rebuilt set is copied");
            // SAFETY: the plan's copy for source component `c` and this world's `id` (its
            // image in `ids`); the sets lie in two worlds.
            unsafe { to.mirror_from(from, copy, tick) };
            changed[c] = true;
        }
        // Nothing stops from here on: the rows are in place, and the allocator and the
        // indexes must hear of every entity that lost its row, in this call or a stopped one
        // (the entities put in rows got their slots as they were placed).
        for &(e, _) in &displaced {
            self.entities.copy_slot_from(&src.entities, e.index(), &plan.table_of);
        }
        self.entities.finish_mirror_from(&src.entities);
        for (e, old) in displaced {
            for i in 0..self.storage.tables[old.index()].components().len() {
                let id = self.storage.tables[old.index()].components()[i];
                let kept = self.entities.location(e).is_some_and(|l| self.storage.tables[l.table as usize].has(id));
                if !kept {
                    self.indexes.note_removed_deferred(e, id);
                }
            }
        }
        for (e, id) in lost_sparse {
            self.indexes.note_removed_deferred(e, id);
        }
        Ok(Mirrored::Done(
            changed.iter().enumerate().filter(|(_, c)| **c).map(|(c, _)| ComponentId(c as u32)).collect(),
        ))
    }

    /// Checks that this world can mirror `src` under `ids`, and works out how.
    fn mirror_plan(&mut self, src: &World, ids: &[Option<ComponentId>]) -> Result<MirrorPlan> {
        let refuse = |why: &str| Err(EngineError::Invalid(format!("this world cannot mirror the other: {why}")));
        if ids.len() != src.components.len() {
            return refuse("a component id for each of its components is needed");
        }
        let mut copies = Vec::with_capacity(ids.len());
        let mut source_id = vec![usize::MAX; self.components.len()];
        for (c, id) in ids.iter().enumerate() {
            let Some(id) = *id else {
                copies.push(None);
                continue;
            };
            let from = src.components.info(ComponentId(c as u32));
            if id.index() >= self.components.len() || source_id[id.index()] != usize::MAX {
                return refuse("component ids out of range or given twice");
            }
            let to = self.components.info(id);
            let Some(copy) = ValueCopy::between(from, to).filter(|_| from.storage() == to.storage()) else {
                return refuse(&format!("component '{}' is not the same in both", from.name()));
            };
            source_id[id.index()] = c;
            copies.push(Some(copy));
        }
        // Every table of `src` maps to the table here with the same copied components; two
        // that hold entities must not map to one.
        let mut table_of = vec![u32::MAX; src.storage.tables.len()];
        let mut claimed: HashMap<usize, usize> = HashMap::new();
        for (s, table) in src.storage.tables.iter().enumerate() {
            let mut set: Vec<ComponentId> = table.components().iter().filter_map(|c| ids[c.index()]).collect();
            set.sort_unstable();
            if table.is_empty() && self.storage.table_id_of(&set).is_none() {
                continue;
            }
            let dst = self.storage.table_for(&set, &self.components);
            table_of[s] = dst.0;
            if !table.is_empty() && claimed.insert(dst.index(), s).is_some() {
                return refuse("two tables that hold entities differ only in components not copied");
            }
        }
        let sources = (0..self.storage.tables.len()).map(|d| claimed.get(&d).copied()).collect();
        Ok(MirrorPlan { copies, source_id, table_of, sources })
    }

    /// Makes table `dst` hold `source`'s rows (none: empty), noting in `displaced` the
    /// entities it held in rows that now hold another (or no) entity; the entities put there
    /// get their slots. `stop` is asked between chunks of rows.
    ///
    /// A stop leaves the table whole: every column as long as the entity column, each row
    /// that changed hands holding its new entity's values, and the changes noted.
    /// The next call then finds only what is left: rows that still differ, rows still to
    /// append. Rows both tables hold get their changed values first; a stop there only leaves
    /// them to be copied again.
    ///
    /// `None` if it completed; if `stop` stopped it, whether every row the table holds is
    /// current: the rows both tables hold brought up to date and none left to change hands
    /// (it stopped while appending).
    #[allow(clippy::too_many_arguments)]
    fn mirror_table(
        &mut self,
        dst: TableId,
        source: Option<&crate::storage::ArchetypeTable>,
        ids: &[Option<ComponentId>],
        copies: &[Option<ValueCopy>],
        window: &ChangeWindow,
        tick: Tick,
        displaced: &mut Vec<(Entity, TableId)>,
        stop: &dyn Fn() -> bool,
    ) -> Option<bool> {
        let table = &mut self.storage.tables[dst.index()];
        let place = |row: usize| EntityLocation { table: dst.0, row: row as u32 };
        let theirs = source.map_or(&[][..], |s| s.entities());
        // Each source column with the index of its image here and how to copy it: the table
        // here holds exactly the images of its source's copied components.
        let pairs: Vec<(usize, &Column, &ValueCopy)> = source.map_or_else(Vec::new, |from| {
            from.components()
                .iter()
                .zip(from.columns())
                .filter_map(|(&c, column)| {
                    let (id, copy) = (ids[c.index()]?, copies[c.index()].as_ref()?);
                    let at = table.column_index(id).expect("the table's image has every copied component");
                    Some((at, column, copy))
                })
                .collect()
        });
        let common = theirs.len().min(table.len());
        // The flag is the caller's business: every component of a table whose rows move is
        // reported changed.
        let mut copied = false;
        for &(at, column, copy) in &pairs {
            let to = &mut table.columns_mut()[at];
            if assign_changed(to, column, 0..common, window, copy, tick, &mut copied, stop) {
                return Some(false);
            }
        }
        for start in (0..common).step_by(CHUNK) {
            if stop() {
                return Some(false);
            }
            let end = common.min(start + CHUNK);
            let (entities, columns) = table.parts_mut();
            let differ = differing_rows(&theirs[start..end], &entities[start..end], start);
            for &(at, column, copy) in &pairs {
                for &r in &differ {
                    // SAFETY: `copy` is the plan's for this component (source and copy ids
                    // from `ids`), made by `ValueCopy::between`; two worlds' columns.
                    unsafe { columns[at].replace_row_from(r, column, r, copy, tick) };
                }
            }
            for &r in &differ {
                displaced.push((entities[r], dst));
                entities[r] = theirs[r];
                self.entities.place_mirrored(theirs[r], place(r));
            }
        }
        let appended = &theirs[common..];
        // Room for every row to append at once: growing chunk by chunk would copy the columns
        // again at each doubling, megabytes with no look at `stop` in between.
        let (entities, columns) = table.parts_mut();
        entities.reserve(appended.len());
        for &(at, ..) in &pairs {
            columns[at].reserve(appended.len());
        }
        for (i, chunk) in appended.chunks(CHUNK).enumerate() {
            if stop() {
                return Some(true);
            }
            let first = common + i * CHUNK;
            let (entities, columns) = table.parts_mut();
            for &(at, column, copy) in &pairs {
                // SAFETY: as above.
                unsafe { columns[at].extend_rows_from(column, first..first + chunk.len(), copy, tick) };
            }
            entities.extend_from_slice(chunk);
            for (i, &e) in chunk.iter().enumerate() {
                self.entities.place_mirrored(e, place(first + i));
            }
        }
        // Rows past the source's end: cut (their values are dropped, nothing is copied).
        let (entities, columns) = table.parts_mut();
        displaced.extend(entities.iter().skip(theirs.len()).map(|&e| (e, dst)));
        for column in columns.iter_mut() {
            column.truncate(theirs.len());
        }
        entities.truncate(theirs.len());
        None
    }
}

/// What a [`World::mirror_from`] stopped while rows moved had done: the entities that lost
/// their rows (with the table they were in), the entities that lost a sparse component, and
/// the source's components whose rows changed. The call that completes reports and applies
/// them.
#[derive(Default)]
pub(crate) struct MirrorPending {
    displaced: Vec<(Entity, TableId)>,
    lost_sparse: Vec<(Entity, ComponentId)>,
    /// Source component indices.
    changed: Vec<usize>,
}

/// What [`World::mirror_from`] works from.
struct MirrorPlan {
    /// By source component: how to copy its values here (`None`: not copied).
    copies: Vec<Option<ValueCopy>>,
    /// By component here: its id in the source (`usize::MAX`: none).
    source_id: Vec<usize>,
    /// By source table: the table here with its copied components (`u32::MAX`: none, for an
    /// empty table with no image yet).
    table_of: Vec<u32>,
    /// By table here: the source table whose rows it holds (`None`: it must be empty).
    sources: Vec<Option<usize>>,
}

/// Entities compared per step: a block compared without a branch vectorizes, and only a
/// block that differs is walked row by row.
const ENTITY_BLOCK: usize = 64;

/// Zero if blocks `x` and `y` hold the same entities.
fn block_differs(x: &[Entity], y: &[Entity]) -> u64 {
    x.iter().zip(y).fold(0, |any, (p, q)| any | (p.to_bits() ^ q.to_bits()))
}

/// Whether `a` and `b` hold the same entities in the same rows, compared a chunk of rows at
/// a time with a look at `stop` before each (`None`: it stopped).
fn same_entities(a: &[Entity], b: &[Entity], stop: &dyn Fn() -> bool) -> Option<bool> {
    if a.len() != b.len() {
        return Some(false);
    }
    for (x, y) in a.chunks(CHUNK).zip(b.chunks(CHUNK)) {
        if stop() {
            return None;
        }
        if !x.chunks(ENTITY_BLOCK).zip(y.chunks(ENTITY_BLOCK)).all(|(p, q)| block_differs(p, q) == 0) {
            return Some(false);
        }
    }
    Some(true)
}

/// The rows where `a` and `b` (as long as each other, starting at row `first`) hold
/// different entities.
fn differing_rows(a: &[Entity], b: &[Entity], first: usize) -> Vec<usize> {
    let mut rows = Vec::new();
    for (block, (x, y)) in a.chunks(ENTITY_BLOCK).zip(b.chunks(ENTITY_BLOCK)).enumerate() {
        if block_differs(x, y) != 0 {
            let first = first + block * ENTITY_BLOCK;
            rows.extend(x.iter().zip(y).enumerate().filter(|(_, (p, q))| p != q).map(|(r, _)| first + r));
        }
    }
    rows
}

/// Copies the rows among `rows` changed or added in `window` from `from` to the same rows of
/// `to`, a chunk of rows at a time (found and copied) with a look at `stop` before each;
/// sets `copied` if it copied any. True if it stopped. `copy` must be the one made for the
/// components of `from` (source) and `to` (copy).
#[allow(clippy::too_many_arguments)]
fn assign_changed(
    to: &mut Column,
    from: &Column,
    rows: Range<usize>,
    window: &ChangeWindow,
    copy: &ValueCopy,
    tick: Tick,
    copied: &mut bool,
    stop: &dyn Fn() -> bool,
) -> bool {
    for start in rows.clone().step_by(CHUNK) {
        if stop() {
            return true;
        }
        for (a, b) in changed_runs(from, window, start..rows.end.min(start + CHUNK)) {
            *copied = true;
            // SAFETY: the callers pass the plan's copy for the component of both columns
            // (see above), which lie in two worlds.
            unsafe { to.assign_rows_from(from, a..b, copy, tick) };
        }
    }
    false
}

/// Ticks tested per step: a branch-free test of a block vectorizes, and a row changed alone
/// costs at most a block's copy (fewer under Miri, so that its tests' few rows span several
/// blocks).
const TICK_BLOCK: usize = if cfg!(miri) { 32 } else { 256 };

/// Runs of rows among `rows` (ascending, apart) holding every row changed or added in
/// `window`: the blocks of [`TICK_BLOCK`] rows with such a row, adjacent ones joined, each run
/// cut to its first and last such row. A few rows changed far apart cost a few blocks, not
/// the rows between them.
fn changed_runs(column: &Column, window: &ChangeWindow, rows: Range<usize>) -> Vec<(usize, usize)> {
    let new = |t: &Tick| window.is_new(*t);
    let changed = column.changed_ticks();
    let added: Option<&[Tick]> = match column.added_ticks() {
        AddedView::Same(t, _) if new(&t) => {
            return if rows.is_empty() { Vec::new() } else { vec![(rows.start, rows.end)] };
        }
        AddedView::Same(..) => None,
        AddedView::Rows(ticks) => Some(ticks),
    };
    let is_new = |row: usize| new(&changed[row]) || added.is_some_and(|a| new(&a[row]));
    let block_has_new = |start: usize, end: usize| {
        window.any_new(&changed[start..end]) || added.is_some_and(|a| window.any_new(&a[start..end]))
    };
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for start in rows.clone().step_by(TICK_BLOCK) {
        let end = rows.end.min(start + TICK_BLOCK);
        if !block_has_new(start, end) {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.1 == start => run.1 = end,
            _ => runs.push((start, end)),
        }
    }
    for run in &mut runs {
        while !is_new(run.0) {
            run.0 += 1;
        }
        while !is_new(run.1 - 1) {
            run.1 -= 1;
        }
    }
    runs
}

#[cfg(test)]
mod tests;
