//! Prepared queries run side by side on one world, each on a thread of its own: the engine's
//! half of running systems in parallel.
//!
//! The world is borrowed exclusively once ([`World::disjoint_runs`]). Each query is then
//! prepared on that thread: its access is checked against the queries prepared before it
//! (a component written by one is touched by no other), and the fetches of all its tables
//! are made there, so the threads that visit the rows only follow pointers and never borrow
//! the world's tables or sets themselves.
//!
//! ```
//! use ecsdb_engine::{Component, QueryState, World};
//! #[derive(Component)] struct Position { x: f32 }
//! #[derive(Component)] struct Velocity { x: f32 }
//! #[derive(Component)] struct Health { hp: f32 }
//! let mut world = World::new();
//! world.spawn((Position { x: 0.0 }, Velocity { x: 1.0 }, Health { hp: 10.0 }));
//! let mut movement: QueryState<(&mut Position, &Velocity)> = world.query_state();
//! let mut regen: QueryState<&mut Health> = world.query_state();
//! let mut runs = world.disjoint_runs();
//! let a = runs.prepare(&mut movement).unwrap();
//! let b = runs.prepare(&mut regen).unwrap();
//! std::thread::scope(|s| {
//!     s.spawn(move || a.for_each(|(mut p, v)| p.x += v.x));
//!     s.spawn(move || b.for_each(|mut h| h.hp += 1.0));
//! });
//! let (p, h) = world.query::<(&Position, &Health)>().next().unwrap();
//! assert_eq!((p.x, h.hp), (1.0, 11.0));
//! ```

use std::marker::PhantomData;

use crate::component::{ComponentId, StorageKind};
use crate::error::{EngineError, Result};
use crate::query::state::{MatchOf, TablePart};
use crate::query::{QueryData, QueryFilter, QueryIter, QueryState};
use crate::world::World;

/// An exclusive borrow of a world, handing out [`PreparedQuery`]s whose accesses do not
/// overlap. Made by [`World::disjoint_runs`].
pub struct DisjointRuns<'w> {
    /// From the `&'w mut World`; reborrowed only while a query is prepared.
    world: *mut World,
    /// Components read (values or change ticks) by the queries prepared so far.
    reads: Vec<ComponentId>,
    /// Components written by them.
    writes: Vec<ComponentId>,
    _borrow: PhantomData<&'w mut World>,
}

impl World {
    /// Starts preparing queries to run side by side (see [`DisjointRuns`]). Ticks due for
    /// clamping are clamped now, once for all of them.
    pub fn disjoint_runs(&mut self) -> DisjointRuns<'_> {
        self.maybe_check_change_ticks();
        DisjointRuns { world: self, reads: Vec::new(), writes: Vec::new(), _borrow: PhantomData }
    }
}

impl<'w> DisjointRuns<'w> {
    /// Prepares `state` for a run on any thread. Fails, with nothing prepared, if the query
    /// writes a component an earlier prepared query reads or writes, reads (values or change
    /// ticks) one an earlier query writes, writes a sparse component
    /// ([`EngineError::SparseWriteInParallel`]: run such a query alone), or writes a
    /// component that holds a declared reference.
    ///
    /// The run counts as the query's run for `Added`/`Changed`, whether or not it is
    /// iterated.
    pub fn prepare<'s, Q: QueryData, F: QueryFilter>(
        &mut self,
        state: &'s mut QueryState<Q, F>,
    ) -> Result<PreparedQuery<'w, 's, Q, F>> {
        // SAFETY: the pointer comes from the `&'w mut World` this value holds; no query
        // prepared earlier keeps a reference into the world, only pointers into column and
        // tick allocations and sparse sets, which a shared borrow does not disturb.
        let world = unsafe { &*self.world };
        let name = |c: ComponentId| world.components.info(c).name().to_string();
        let access = state.access(world);
        if state.writes_sparse() {
            let sparse =
                access.writes().iter().copied().find(|&c| world.components.info(c).storage() == StorageKind::Sparse);
            return Err(EngineError::SparseWriteInParallel(sparse.map_or_else(String::new, name)));
        }
        let mut reads = access.reads().to_vec();
        reads.extend(state.filter_tick_reads());
        let clash = access
            .writes()
            .iter()
            .find(|c| self.reads.contains(c) || self.writes.contains(c))
            .or_else(|| reads.iter().find(|c| self.writes.contains(c)));
        if let Some(&c) = clash {
            return Err(EngineError::ConflictingRuns(name(c)));
        }
        // SAFETY: as above, now exclusively: nothing else reaches the world while this
        // value lives, and the queries prepared earlier keep no reference into it. Their
        // pointers survive the reborrow: only this query's own columns are reborrowed
        // mutably (one column at a time, see `ArchetypeTable::column_mut`), and those are
        // components no earlier query touches (checked above). Sparse sets are not
        // reborrowed mutably (sparse writers were turned away).
        let world = unsafe { &mut *self.world };
        let (tables, ctx) = state.begin_exclusive(world)?;
        // SAFETY: `begin_exclusive` made `tables` and `ctx` from the exclusive borrow; the
        // access check above gives this query alone the components it writes for 'w.
        let parts = unsafe { state.table_parts(tables, ctx) };
        self.reads.extend(reads);
        self.writes.extend_from_slice(access.writes());
        Ok(PreparedQuery { state: state.matched(), parts })
    }
}

/// A query run prepared by [`DisjointRuns::prepare`]: every table's fetches made, ready to
/// visit its rows on any thread, once.
pub struct PreparedQuery<'w, 's, Q: QueryData, F: QueryFilter> {
    state: &'s MatchOf<Q, F>,
    parts: Vec<TablePart<'w, Q, F>>,
}

// SAFETY: the parts hold pointers into column allocations and sparse sets of a world kept
// exclusively borrowed for 'w. The component accesses of prepared queries do not overlap
// (checked by `DisjointRuns::prepare`), so no two threads touch one component's values or
// ticks where one of them writes; components are `Send + Sync`, so their values may be read
// and written from any thread.
unsafe impl<Q: QueryData, F: QueryFilter> Send for PreparedQuery<'_, '_, Q, F> {}

impl<'w, Q: QueryData, F: QueryFilter> PreparedQuery<'w, '_, Q, F> {
    /// Calls `f` with an iterator over the query's items; the rows are visited once.
    pub fn run<R>(self, f: impl FnOnce(QueryIter<'w, '_, Q, F>) -> R) -> R {
        // SAFETY: the parts were made for this state's run with the access the items need
        // for 'w, and `self` is consumed, so no second iterator visits them.
        f(unsafe { QueryIter::over_parts(self.state, &self.parts) })
    }

    /// Calls `f` for every item.
    pub fn for_each(self, f: impl FnMut(Q::Item<'w>)) {
        self.run(|items| items.for_each(f))
    }

    /// The number of tables with rows to visit.
    pub fn table_count(&self) -> usize {
        self.parts.len()
    }

    /// The rows of those tables (before row filters: sparse components and change filters
    /// may pass fewer).
    pub fn row_count(&self) -> usize {
        self.parts.iter().map(TablePart::len).sum()
    }
}

#[cfg(test)]
mod tests;
