//! One-shot queries ([`World::query`], [`World::query_mut`] and their filtered forms), whose
//! states the world caches (`world::query_cache`).
//!
//! A one-shot query that may write keeps its resolved components and matched tables in the
//! world between calls, as hecs does: the next `query_mut` of the same type matches only the
//! tables created since, and allocates nothing. Read-only one-shot queries run on a shared
//! world, which they cannot update, and match afresh each time.

use std::any::TypeId;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::Result;
use crate::query::state::{Cursor, MatchOf};
use crate::query::{FetchContext, QueryData, QueryFilter, QueryState, ReadOnlyQueryData};
use crate::storage::{ArchetypeTable, TableId};
use crate::tick::{EVERYTHING_NEW, Tick};
use crate::world::World;

/// A one-shot query borrowing the world, returned by [`World::query`] and friends. It is an
/// iterator; `for_each` runs a tighter loop than `next`.
pub struct Query<'w, Q: QueryData, F: QueryFilter = ()> {
    /// The state: in the world's cache, or (read-only queries) a box this query owns, leaked
    /// into a raw pointer and freed on drop. Either way out of line, and a plain pointer: the
    /// cursor is then all the iterator holds inline. The table switch reads the state, and a
    /// state inside the iterator (or a choice between two homes for it) would pin the cursor
    /// to memory, its row counter and column pointers reloaded and stored on every row.
    state: NonNull<MatchOf<Q, F>>,
    cursor: Cursor<'w, Q, F>,
    _world: PhantomData<&'w mut World>,
}

impl<Q: QueryData, F: QueryFilter> Query<'_, Q, F> {
    /// The state, borrowed apart from the query (so the cursor can be borrowed beside it).
    ///
    /// # Safety
    /// The reference must not outlive the query.
    #[inline(always)]
    unsafe fn state<'a>(&self) -> &'a MatchOf<Q, F> {
        // SAFETY: the state is the world's cached one, which the query's borrow of the world
        // keeps in place and unchanged, or the query's own box, freed only on drop; the
        // caller keeps the reference within the query's life.
        unsafe { self.state.as_ref() }
    }
}

impl<Q: QueryData, F: QueryFilter> Drop for Query<'_, Q, F> {
    // Inlined on the unwinding path too: called out of line there, it takes the query's
    // address, and LLVM, which then thinks the cursor escaped, reloads its pointers from
    // memory on every row of a `for` loop (18 instructions a row of `pos += vel` instead of 15).
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the state is valid until here (see `Query::state`).
        if unsafe { self.state.as_ref() }.owned_by_query {
            // SAFETY: made by `Box::leak` for this query alone, and freed once.
            drop(unsafe { Box::from_raw(self.state.as_ptr()) });
        }
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for Query<'w, Q, F> {
    type Item = Q::Item<'w>;

    #[inline(always)]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        // SAFETY: used within this call.
        let state = unsafe { self.state() };
        self.cursor.next(state)
    }

    fn for_each<G: FnMut(Q::Item<'w>)>(mut self, mut f: G) {
        if self.cursor.started() {
            for item in self.by_ref() {
                f(item);
            }
        } else {
            let (tables, ctx) = self.cursor.start();
            // SAFETY: constructed with the access the query needs for 'w; the state is used
            // within this call.
            unsafe { self.state().run::<Q, F>(tables, ctx, f) }
        }
    }
}

impl World {
    /// Prepares a query for repeated runs.
    pub fn query_state<Q: QueryData, F: QueryFilter>(&mut self) -> QueryState<Q, F> {
        QueryState::new(self)
    }

    /// A read-only query. Change filters treat every row as new (use a [`QueryState`] to
    /// track changes between runs).
    pub fn query<Q: ReadOnlyQueryData>(&self) -> Query<'_, Q, ()> {
        self.query_filtered::<Q, ()>()
    }

    /// A read-only query with a filter.
    pub fn query_filtered<Q: ReadOnlyQueryData, F: QueryFilter>(&self) -> Query<'_, Q, F> {
        let mut matched = QueryState::<Q, F>::readonly_match(self).expect("read-only queries never alias");
        matched.owned_by_query = true;
        let this_run = self.read_change_tick();
        let ctx = FetchContext { world: self as *const World as *mut World, this_run, run_age: EVERYTHING_NEW };
        Query {
            state: NonNull::from(Box::leak(Box::new(matched))),
            cursor: Cursor::new(self.tables().as_ptr() as *mut ArchetypeTable, ctx),
            _world: PhantomData,
        }
    }

    /// A query with mutable access. Its state is kept in the world (see the module docs), so
    /// a loop that runs the same query every frame pays for matching tables only once.
    ///
    /// # Panics
    /// If the query aliases `&mut` access to one component, or writes a component holding a
    /// declared reference.
    pub fn query_mut<Q: QueryData>(&mut self) -> Query<'_, Q, ()> {
        self.query_filtered_mut::<Q, ()>()
    }

    /// [`World::query_mut`] over only the tables in `tables` (in any order; ids the query
    /// does not match, or that name no table, are skipped), for a caller that already knows
    /// where its rows are, such as a text query's selection: the rest of the world is never
    /// visited. Aliasing `&mut` access is an error here, not a panic.
    ///
    /// ```
    /// # use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: i32 }
    /// #[derive(Component)] struct Tag;
    /// let mut w = World::new();
    /// w.spawn((Hp { v: 1 },));
    /// let tagged = w.spawn((Hp { v: 2 }, Tag));
    /// let table = ecsdb_engine::storage::TableId(w.location(tagged).unwrap().table);
    /// let seen: Vec<i32> = w.query_in_tables_mut::<&mut Hp>(&[table]).unwrap().map(|h| h.v).collect();
    /// assert_eq!(seen, [2]);
    /// ```
    pub fn query_in_tables_mut<Q: QueryData>(&mut self, tables: &[TableId]) -> Result<Query<'_, Q, ()>> {
        let mut matched = QueryState::<Q, ()>::try_match(self)?;
        let mut wanted = tables.to_vec();
        wanted.sort_unstable();
        matched.retain_tables(|t| wanted.binary_search(&t).is_ok());
        // Not cached: the state is this query's alone, freed when it drops.
        matched.owned_by_query = true;
        self.maybe_check_change_ticks();
        let this_run = self.take_change_tick_mut() as Tick;
        // The tables' pointer first: it points into the tables' own buffer, which taking the
        // world's pointer below leaves alone; the world is reached only through `world` after.
        let tables = self.storage.tables.as_mut_ptr();
        let world: *mut World = self;
        let ctx = FetchContext { world, this_run, run_age: EVERYTHING_NEW };
        Ok(Query {
            state: NonNull::from(Box::leak(Box::new(matched))),
            cursor: Cursor::new(tables, ctx),
            _world: PhantomData,
        })
    }

    /// A query with mutable access and a filter.
    ///
    /// # Panics
    /// If the query aliases `&mut` access to one component, or writes a component holding a
    /// declared reference.
    pub fn query_filtered_mut<Q: QueryData, F: QueryFilter>(&mut self) -> Query<'_, Q, F> {
        let key = TypeId::of::<(Q::Static, F)>();
        let world_id = self.id();
        let world: *mut World = self;
        // SAFETY: `world` comes from the exclusive borrow, which the query keeps for 'w. The
        // state is boxed in the cache, apart from the world's own memory, and the cache is a
        // field nothing below changes and no fetch touches (writers reborrow only the
        // storage): the lookup's pointer stays valid while the world is borrowed again and
        // while rows are written.
        let found = unsafe { (*world).query_cache.get_mut::<MatchOf<Q, F>>(key) }.map(NonNull::from);
        let state = match found {
            Some(state) => state,
            None => {
                let matched = QueryState::<Q, F>::try_match(self).unwrap_or_else(|e| panic!("{e}"));
                self.query_cache.insert(key, matched);
                // SAFETY: as above.
                NonNull::from(unsafe { (*world).query_cache.get_mut::<MatchOf<Q, F>>(key) }.expect("cached"))
            }
        };
        // SAFETY: as above.
        let (cached, world_ref) = unsafe { (&mut *state.as_ptr(), &mut *world) };
        // A reference declared since the state was cached turns its writes away too.
        if let Err(e) = world_ref.refuse_mutable_references(&cached.writes) {
            panic!("{e}");
        }
        cached.update_tables_in::<Q, F>(world_id, &world_ref.storage.tables);
        world_ref.maybe_check_change_ticks();
        let this_run = world_ref.take_change_tick_mut() as Tick;
        let tables = world_ref.storage.tables.as_mut_ptr();
        let ctx = FetchContext { world, this_run, run_age: EVERYTHING_NEW };
        Query { state, cursor: Cursor::new(tables, ctx), _world: PhantomData }
    }
}
