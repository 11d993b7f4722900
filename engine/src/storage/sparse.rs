//! Sparse sets: components that live outside archetype tables.

use crate::component::ComponentInfo;
use crate::entity::Entity;
use crate::storage::{Column, ValueCopy};
use crate::tick::Tick;

const ABSENT: u32 = u32::MAX;

/// Values of one sparse component: a dense column plus the entity of each dense row, and a
/// sparse array from entity index to dense row. Adding or removing never moves the entity.
pub struct SparseSet {
    sparse: Vec<u32>,
    entities: Vec<Entity>,
    dense: Column,
}

impl SparseSet {
    pub(crate) fn new(info: &ComponentInfo) -> SparseSet {
        SparseSet { sparse: Vec::new(), entities: Vec::new(), dense: Column::new(info) }
    }

    /// Number of entities that have the component.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether no entity has it.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The entities that have it, in dense order.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// The dense column of values (row `i` belongs to `entities()[i]`).
    pub fn column(&self) -> &Column {
        &self.dense
    }

    pub(crate) fn column_mut(&mut self) -> &mut Column {
        &mut self.dense
    }

    /// The dense row of a live entity's value, if it has one.
    #[inline]
    pub fn row(&self, e: Entity) -> Option<usize> {
        let &r = self.sparse.get(e.index() as usize)?;
        (r != ABSENT && self.entities[r as usize] == e).then_some(r as usize)
    }

    /// Whether the entity has the component.
    #[inline]
    pub fn contains(&self, e: Entity) -> bool {
        self.row(e).is_some()
    }

    /// Pointer to the entity's value.
    #[inline]
    pub(crate) fn get_ptr(&self, e: Entity) -> Option<*mut u8> {
        self.row(e).map(|r| self.dense.get_ptr(r))
    }

    /// Inserts a value moved from `src`, replacing (and dropping) any existing one.
    ///
    /// # Safety
    /// `src` must point to a valid value of this component, which the caller gives up.
    pub(crate) unsafe fn insert(&mut self, e: Entity, src: *const u8, tick: Tick) {
        if let Some(r) = self.row(e) {
            // SAFETY: forwarded from the caller.
            unsafe { self.dense.replace(r, src, tick) };
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.dense.push_from(src, tick) };
        self.push_entity(e);
    }

    /// Removes the entity's value, handing it to `take` (which must move it out) or dropping
    /// it when `take` is `None`. Returns whether it was present.
    pub(crate) fn remove(&mut self, e: Entity, take: Option<&mut dyn FnMut(*const u8)>) -> bool {
        let Some(r) = self.row(e) else { return false };
        match take {
            Some(f) => {
                f(self.dense.get_ptr(r));
                // SAFETY: `f` moved the value out.
                unsafe { self.dense.swap_remove_forget(r, None) };
            }
            None => self.dense.swap_remove_drop(r),
        }
        self.swap_remove_entity(r);
        true
    }

    /// The entity half of a swap-remove of dense row `r`, whose value is gone already.
    fn swap_remove_entity(&mut self, r: usize) {
        let e = self.entities.swap_remove(r);
        self.sparse[e.index() as usize] = ABSENT;
        if let Some(&moved) = self.entities.get(r) {
            self.sparse[moved.index() as usize] = r as u32;
        }
    }

    /// The dense rows of the targets that hold a value here, each with the target's position
    /// in `targets`, in target order; `Err(i)` when `targets[i]` was given before.
    ///
    /// Every entity of a set is live (despawning takes it out of every set), so a target
    /// found here needs no liveness check of its own.
    pub(crate) fn held_rows(&self, targets: &[Entity]) -> Result<Vec<(u32, u32)>, usize> {
        let mut rows = Vec::with_capacity(targets.len().min(self.len()));
        // A bit per dense row: a row found twice is an entity given twice.
        let mut seen = vec![0u64; self.len().div_ceil(64)];
        for (i, &e) in targets.iter().enumerate() {
            if let Some(r) = self.row(e) {
                let (word, bit) = (r / 64, 1u64 << (r % 64));
                if seen[word] & bit != 0 {
                    return Err(i);
                }
                seen[word] |= bit;
                rows.push((r as u32, i as u32));
            }
        }
        Ok(rows)
    }

    /// Removes the values of the distinct dense rows `rows`, dropping them.
    ///
    /// Cheaper than [`SparseSet::remove`] on each: when every value goes (a marker taken off
    /// all its holders, the usual toggle) the set is cleared in one pass; otherwise rows are
    /// swap-removed from the highest down, so that no row to remove moves before its turn.
    pub(crate) fn remove_rows(&mut self, mut rows: Vec<u32>) {
        debug_assert!(rows.iter().all(|&r| (r as usize) < self.len()));
        if rows.len() == self.entities.len() {
            // Past one holder in sixteen slots, rewriting the whole sparse array (sequential)
            // is cheaper than a scattered write per holder.
            if self.entities.len() * 16 >= self.sparse.len() {
                self.sparse.fill(ABSENT);
            } else {
                for e in &self.entities {
                    self.sparse[e.index() as usize] = ABSENT;
                }
            }
            self.entities.clear();
            self.dense.clear();
            return;
        }
        rows.sort_unstable_by(|a, b| b.cmp(a));
        for r in rows {
            self.dense.swap_remove_drop(r as usize);
            self.swap_remove_entity(r as usize);
        }
    }

    /// Appends entity `e` (which has no value here) with the value `push` appends to the
    /// dense column (moving it there with its ticks, as [`Column::move_row_to`] does).
    pub(crate) fn push_with<R>(&mut self, e: Entity, push: impl FnOnce(&mut Column) -> R) -> R {
        debug_assert!(!self.contains(e));
        let before = self.dense.len();
        let out = push(&mut self.dense);
        assert_eq!(self.dense.len(), before + 1, "one value pushed");
        self.push_entity(e);
        out
    }

    /// Appends entity `e`, which has no value here, with the value `write` makes in the new
    /// dense row (stamped added at `tick`).
    ///
    /// # Safety
    /// `write` leaves a valid value of this set's component at the pointer it is given.
    pub(crate) unsafe fn push_written(&mut self, e: Entity, tick: Tick, write: impl FnOnce(*mut u8)) {
        debug_assert!(!self.contains(e));
        // SAFETY: `write` initialises the row before the set is used again (the caller's promise).
        write(unsafe { self.dense.push_uninit(tick) });
        self.push_entity(e);
    }

    /// Records `e` as the entity of the value just appended to the dense column.
    fn push_entity(&mut self, e: Entity) {
        let i = e.index() as usize;
        if self.sparse.len() <= i {
            self.sparse.resize(i + 1, ABSENT);
        }
        self.sparse[i] = self.entities.len() as u32;
        self.entities.push(e);
    }

    /// Takes out the last entity, moving its value with its ticks to the end of `dst`.
    pub(crate) fn pop_into(&mut self, dst: &mut Column) -> Option<Entity> {
        let e = self.entities.pop()?;
        self.sparse[e.index() as usize] = ABSENT;
        self.dense.move_row_to(self.entities.len(), dst);
        Some(e)
    }

    /// Makes room for `additional` more entities.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.entities.reserve(additional);
        self.dense.reserve(additional);
    }

    /// Changed tick of the entity's value.
    pub fn changed_tick(&self, e: Entity) -> Option<Tick> {
        self.row(e).map(|r| self.dense.row_ticks(r).1)
    }

    /// Added tick of the entity's value.
    pub fn added_tick(&self, e: Entity) -> Option<Tick> {
        self.row(e).map(|r| self.dense.row_ticks(r).0)
    }

    /// Bytes held: (component data, bookkeeping).
    pub fn memory_bytes(&self) -> (usize, usize) {
        let (d, t) = self.dense.memory_bytes();
        (d, t + self.sparse.capacity() * 4 + self.entities.capacity() * 8)
    }

    /// Makes this set hold copies of `src`'s values (none: no values) for the same entities
    /// in the same rows, stamped added at `tick`.
    ///
    /// # Safety
    /// `copy` was made by `ValueCopy::between` for `src`'s component (the source) and this
    /// set's (the destination), and `src` is another set than this one.
    pub(crate) unsafe fn mirror_from(&mut self, src: Option<&SparseSet>, copy: &ValueCopy, tick: Tick) {
        self.clear();
        let Some(src) = src else { return };
        self.sparse.clone_from(&src.sparse);
        self.entities.clone_from(&src.entities);
        self.dense.reserve(src.len());
        for row in 0..src.len() {
            // SAFETY: forwarded from the caller.
            unsafe { self.dense.push_row_from(&src.dense, row, copy, tick) };
        }
    }

    pub(crate) fn clear(&mut self) {
        self.dense.clear();
        self.entities.clear();
        self.sparse.clear();
    }
}
