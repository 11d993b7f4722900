//! Typed queries: tuples of `&T`, `&mut T`, `Option<&T>` and `Entity`, filtered by `With`,
//! `Without`, `Or`, `Added` and `Changed`.
//!
//! A query matches archetype tables once (a [`QueryState`] caches the matched tables and
//! picks up tables created later), then walks each table's columns row by row.
//!
//! ```
//! use ecsdb_engine::{Component, Entity, With, World};
//! #[derive(Component)] struct Position { x: f32 }
//! #[derive(Component)] struct Velocity { x: f32 }
//! #[derive(Component)] struct Player;
//! let mut world = World::new();
//! world.spawn((Position { x: 0.0 }, Velocity { x: 1.0 }, Player));
//! world.spawn((Position { x: 0.0 }, Velocity { x: 2.0 }));
//! for (mut p, v) in world.query_mut::<(&mut Position, &Velocity)>() {
//!     p.x += v.x;
//! }
//! let players: Vec<(Entity, f32)> = world
//!     .query_filtered::<(Entity, &Position), With<Player>>()
//!     .map(|(e, p)| (e, p.x))
//!     .collect();
//! assert_eq!(players.len(), 1);
//! assert_eq!(players[0].1, 1.0);
//! ```

mod disjoint;
mod fetch;
mod filter;
mod one_shot;
mod state;
#[cfg(test)]
mod tests;

pub use disjoint::{DisjointRuns, PreparedQuery};
pub use fetch::{QueryData, ReadOnlyQueryData};
pub use filter::{Added, Changed, Or, QueryFilter, With, Without};
pub use one_shot::Query;
pub use state::{QueryIter, QueryState};

use crate::component::ComponentId;
use crate::tick::Tick;
use crate::world::World;

/// The components a query reads and writes, to reject aliasing `&mut` access.
#[derive(Default, Debug, Clone)]
pub struct Access {
    reads: Vec<ComponentId>,
    writes: Vec<ComponentId>,
    conflict: Option<ComponentId>,
    sparse_write: bool,
}

impl Access {
    /// Records a read.
    pub fn add_read(&mut self, id: ComponentId) {
        if self.writes.contains(&id) {
            self.conflict.get_or_insert(id);
        }
        self.reads.push(id);
    }

    /// Records a write.
    pub fn add_write(&mut self, id: ComponentId, sparse: bool) {
        if self.writes.contains(&id) || self.reads.contains(&id) {
            self.conflict.get_or_insert(id);
        }
        self.writes.push(id);
        self.sparse_write |= sparse;
    }

    /// The components read.
    pub fn reads(&self) -> &[ComponentId] {
        &self.reads
    }

    /// The first component accessed in conflicting ways, if any.
    pub fn conflict(&self) -> Option<ComponentId> {
        self.conflict
    }

    /// The components written.
    pub fn writes(&self) -> &[ComponentId] {
        &self.writes
    }

    /// The components written, taken out of the access set.
    pub(crate) fn into_writes(self) -> Vec<ComponentId> {
        self.writes
    }
}

/// What every fetch needs to know about the run it is part of.
#[derive(Clone, Copy)]
pub struct FetchContext {
    /// The world; made from `&mut World` for runs that write (and then the only path to it
    /// during the run), from `&World` otherwise (and then never written through).
    pub(crate) world: *mut World,
    /// The tick of this run (writes are stamped with it).
    pub(crate) this_run: Tick,
    /// Rows whose tick is younger than this (relative to `this_run`) count as changed; see
    /// [`crate::tick`].
    pub(crate) run_age: u32,
}

impl FetchContext {
    /// A context that reaches no world: for cursors over fetches made ahead, which never
    /// fetch.
    pub(crate) fn detached() -> FetchContext {
        FetchContext { world: std::ptr::null_mut(), this_run: 0, run_age: 0 }
    }

    /// The tick of this run: writes through items are stamped with it.
    pub fn this_run(&self) -> Tick {
        self.this_run
    }
}
