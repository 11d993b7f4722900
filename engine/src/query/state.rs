//! Prepared queries and their iterators.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::component::ComponentId;
use crate::entity::Entity;
use crate::error::{EngineError, Result};
use crate::query::{Access, FetchContext, QueryData, QueryFilter, ReadOnlyQueryData};
use crate::storage::{ArchetypeTable, TableId};
use crate::tick::run_age;
use crate::world::World;

/// A prepared query: component ids resolved, matched tables cached (and extended with tables
/// created since the last run), and the tick of its last run for `Added`/`Changed`.
///
/// ```
/// use ecsdb_engine::{Changed, Component, QueryState, World};
/// #[derive(Component)] struct Hp { v: f32 }
/// let mut world = World::new();
/// let e = world.spawn(Hp { v: 1.0 });
/// let mut changed: QueryState<&Hp, Changed<Hp>> = world.query_state();
/// assert_eq!(changed.iter(&world).count(), 1); // new rows count as changed
/// assert_eq!(changed.iter(&world).count(), 0);
/// world.get_mut::<Hp>(e).unwrap().v = 2.0;
/// assert_eq!(changed.iter(&world).count(), 1);
/// ```
pub struct QueryState<Q: QueryData, F: QueryFilter = ()> {
    matched: MatchOf<Q, F>,
    _marker: PhantomData<fn() -> (Q, F)>,
}

/// What a query resolved and matched, typed only by its data state, its columns and its
/// filter state (so one-shot queries can keep it in the world's cache whatever their items'
/// lifetimes).
pub(crate) struct QueryMatch<D, C, G> {
    world_id: u64,
    /// `None` when a read-only one-shot query names a component the world does not know.
    data: Option<D>,
    filter: G,
    /// Each matched table, with where it keeps the query's columns (one array: the table
    /// switch of a `for` loop reads one entry).
    matched: Vec<(TableId, C)>,
    tables_seen: usize,
    /// The world tick (64-bit count) of the last run; `None` before the first.
    last_run: Option<u64>,
    sparse_write: bool,
    /// Components the query writes (checked against references declared after it was made).
    pub(crate) writes: Vec<ComponentId>,
    /// A read-only one-shot query's own state, which the query frees when it drops (the flag
    /// lives here rather than in the query: a `for` loop then keeps one value fewer live
    /// across its table switches).
    pub(crate) owned_by_query: bool,
}

/// The [`QueryMatch`] of query `Q` with filter `F`.
pub(crate) type MatchOf<Q, F> =
    QueryMatch<<Q as QueryData>::State, <Q as QueryData>::Columns, <F as QueryFilter>::State>;

impl<D, C: Copy, G> QueryMatch<D, C, G> {
    /// Matches tables created since the last call.
    pub(crate) fn update_tables<Q, F>(&mut self, world: &World)
    where
        Q: QueryData<State = D, Columns = C>,
        F: QueryFilter<State = G>,
    {
        self.update_tables_in::<Q, F>(world.id(), world.tables());
    }

    /// [`QueryMatch::update_tables`] given the world's id and tables.
    pub(crate) fn update_tables_in<Q, F>(&mut self, world_id: u64, tables: &[ArchetypeTable])
    where
        Q: QueryData<State = D, Columns = C>,
        F: QueryFilter<State = G>,
    {
        assert_eq!(self.world_id, world_id, "QueryState used with a different world");
        let Some(data) = &self.data else { return };
        // At most every new table matches: one allocation instead of a doubling series.
        self.matched.reserve(tables.len() - self.tables_seen);
        for t in &tables[self.tables_seen..] {
            if let Some(columns) = Q::match_table(data, t).filter(|_| F::matches_table(&self.filter, t)) {
                self.matched.push((t.id(), columns));
            }
        }
        self.tables_seen = tables.len();
    }

    /// Keeps only the matched tables `keep` accepts.
    pub(crate) fn retain_tables(&mut self, mut keep: impl FnMut(TableId) -> bool) {
        self.matched.retain(|&(t, _)| keep(t));
    }

    /// Calls `f` for every item of the matched tables.
    ///
    /// # Safety
    /// `tables` points at the world's tables with the access the query needs.
    pub(crate) unsafe fn run<'w, Q, F>(
        &self,
        tables: *mut ArchetypeTable,
        ctx: FetchContext,
        mut f: impl FnMut(Q::Item<'w>),
    ) where
        Q: QueryData<State = D, Columns = C>,
        F: QueryFilter<State = G>,
    {
        let Some(data) = &self.data else { return };
        for &(tid, columns) in &self.matched {
            // SAFETY: matched table ids are in bounds of the world's tables.
            let table = unsafe { tables.add(tid.index()) };
            // SAFETY: valid table.
            let (len, entities) = unsafe { ((*table).len(), (*table).entities().as_ptr()) };
            if len == 0 {
                continue;
            }
            // SAFETY: forwarded from the caller; the columns were found in this table.
            let mut fetch = unsafe { Q::fetch(data, columns, &ctx, table) };
            // SAFETY: valid table.
            let filter = unsafe { F::fetch(&self.filter, &ctx, table) };
            // SAFETY: the table's rows, each visited once, with the caller's access.
            unsafe { run_rows::<Q, F>(&mut fetch, &filter, entities, 0..len, &mut f) };
        }
    }
}

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// Prepares the query, registering its component types. Fails if two parts of the query
    /// would access one component mutably together, or if it writes a component holding a
    /// declared reference ([`EngineError::MutableReference`]).
    pub fn try_new(world: &mut World) -> Result<Self> {
        Ok(QueryState { matched: Self::try_match(world)?, _marker: PhantomData })
    }

    /// The resolved, matched state of [`QueryState::try_new`].
    pub(crate) fn try_match(world: &mut World) -> Result<MatchOf<Q, F>> {
        let data = Q::init_state(&mut world.components)?;
        let filter = F::init_state(&mut world.components)?;
        let mut access = Access::default();
        Q::access(&data, &world.components, &mut access);
        if let Some(c) = access.conflict() {
            return Err(EngineError::AliasedAccess(world.components.info(c).name().to_string()));
        }
        world.refuse_mutable_references(access.writes())?;
        let sparse_write = access.sparse_write;
        let mut matched = QueryMatch {
            world_id: world.id(),
            writes: access.into_writes(),
            data: Some(data),
            filter,
            matched: Vec::new(),
            tables_seen: 0,
            last_run: None,
            sparse_write,
            owned_by_query: false,
        };
        matched.update_tables::<Q, F>(world);
        Ok(matched)
    }

    /// Prepares the query.
    ///
    /// # Panics
    /// If the query aliases `&mut` access or writes a component holding a declared reference
    /// (see [`QueryState::try_new`]).
    pub fn new(world: &mut World) -> Self {
        Self::try_new(world).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A one-shot state on a shared world: unknown component types match nothing.
    pub(crate) fn readonly_match(world: &World) -> Result<MatchOf<Q, F>> {
        let data = Q::get_state(&world.components);
        let filter = F::get_state(&world.components);
        let mut sparse_write = false;
        if let Some(d) = &data {
            let mut access = Access::default();
            Q::access(d, &world.components, &mut access);
            if let Some(c) = access.conflict() {
                return Err(EngineError::AliasedAccess(world.components.info(c).name().to_string()));
            }
            sparse_write = access.sparse_write;
        }
        let mut matched = QueryMatch {
            world_id: world.id(),
            writes: Vec::new(),
            data,
            filter,
            matched: Vec::new(),
            tables_seen: 0,
            last_run: None,
            sparse_write,
            owned_by_query: false,
        };
        matched.update_tables::<Q, F>(world);
        Ok(matched)
    }

    /// Matches tables created since the last call.
    fn update_tables(&mut self, world: &World) {
        self.matched.update_tables::<Q, F>(world);
    }

    /// The components the query reads and writes (its filter's presence tests are not
    /// reads of values, and are left out).
    pub fn access(&self, world: &World) -> Access {
        let mut access = Access::default();
        if let Some(d) = &self.matched.data {
            Q::access(d, &world.components, &mut access);
        }
        access
    }

    /// The tables this query matched so far.
    pub fn matched_tables(&self) -> impl ExactSizeIterator<Item = TableId> + '_ {
        self.matched.matched.iter().map(|&(t, _)| t)
    }

    /// The rows of the tables it matched so far, in `world` now (before row filters: sparse
    /// components and change filters may pass fewer).
    pub fn matched_rows(&self, world: &World) -> usize {
        self.matched_tables().filter_map(|t| world.tables().get(t.index())).map(ArchetypeTable::len).sum()
    }

    /// Starts a run on a shared world: the tables and the context, whose world pointer is
    /// only ever read through.
    fn begin(&mut self, world: &World) -> (*mut ArchetypeTable, FetchContext) {
        let this_run = world.read_change_tick_wide();
        self.begin_at(world, this_run)
    }

    /// [`QueryState::begin`] with the run's tick taken.
    fn begin_at(&mut self, world: &World, this_run: u64) -> (*mut ArchetypeTable, FetchContext) {
        self.update_tables(world);
        let ctx = FetchContext {
            world: world as *const World as *mut World,
            this_run: this_run as u32,
            run_age: run_age(self.matched.last_run, this_run),
        };
        self.matched.last_run = Some(this_run);
        (world.tables().as_ptr() as *mut ArchetypeTable, ctx)
    }

    /// Starts a run that may write: pointers made from the exclusive borrow, after the ticks
    /// were checked for clamping.
    fn begin_mut(&mut self, world: &mut World) -> (*mut ArchetypeTable, FetchContext) {
        world.maybe_check_change_ticks();
        self.begin_exclusive(world).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`QueryState::begin_mut`] without clamping ticks: a caller preparing several runs at
    /// once clamps before the first (clamping rewrites every tick column, which would take
    /// back the pointers of runs already prepared).
    pub(crate) fn begin_exclusive(&mut self, world: &mut World) -> Result<(*mut ArchetypeTable, FetchContext)> {
        // A reference declared since the state was made turns its writes away too.
        world.refuse_mutable_references(&self.matched.writes)?;
        let this_run = world.take_change_tick_mut();
        let (_, ctx) = self.begin_at(world, this_run);
        let tables = world.storage.tables.as_mut_ptr();
        Ok((tables, FetchContext { world: world as *mut World, ..ctx }))
    }

    /// The fetches of every non-empty matched table, made here for rows visited later,
    /// possibly on other threads.
    ///
    /// # Safety
    /// As [`QueryData::fetch`]: `tables` and `ctx` come from [`QueryState::begin_exclusive`]
    /// (or [`QueryState::begin`] for read-only queries), whose access the caller holds for
    /// `'w`.
    pub(crate) unsafe fn table_parts<'w>(
        &self,
        tables: *mut ArchetypeTable,
        ctx: FetchContext,
    ) -> Vec<TablePart<'w, Q, F>> {
        let Some(data) = &self.matched.data else { return Vec::new() };
        let mut parts = Vec::with_capacity(self.matched.matched.len());
        for &(tid, columns) in &self.matched.matched {
            // SAFETY: matched ids are in bounds of the world's tables.
            let table = unsafe { tables.add(tid.index()) };
            // SAFETY: valid table.
            let (len, entities) = unsafe { ((*table).len(), (*table).entities().as_ptr()) };
            if len == 0 {
                continue;
            }
            // SAFETY: forwarded from the caller; the table matches, with these columns.
            let (fetch, filter) =
                unsafe { (Q::fetch(data, columns, &ctx, table), F::fetch(&self.matched.filter, &ctx, table)) };
            parts.push(TablePart { fetch, filter, entities, len });
        }
        parts
    }

    /// The matched state, for iterators over prepared parts.
    pub(crate) fn matched(&self) -> &MatchOf<Q, F> {
        &self.matched
    }

    /// Whether the query writes a sparse component (such queries run alone).
    pub fn writes_sparse(&self) -> bool {
        self.matched.sparse_write
    }

    /// The components whose change ticks the query's filter reads (`Added<T>`, `Changed<T>`).
    pub fn filter_tick_reads(&self) -> Vec<ComponentId> {
        let mut reads = Vec::new();
        F::tick_reads(&self.matched.filter, &mut reads);
        reads
    }

    /// Iterates on a shared world (read-only queries).
    pub fn iter<'w, 's>(&'s mut self, world: &'w World) -> QueryIter<'w, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        let (tables, ctx) = self.begin(world);
        QueryIter::new(self, tables, ctx)
    }

    /// Iterates with mutable access.
    pub fn iter_mut<'w, 's>(&'s mut self, world: &'w mut World) -> QueryIter<'w, 's, Q, F> {
        let (tables, ctx) = self.begin_mut(world);
        QueryIter::new(self, tables, ctx)
    }

    /// Calls `f` for every item (read-only queries).
    pub fn for_each<'w>(&mut self, world: &'w World, f: impl FnMut(Q::Item<'w>))
    where
        Q: ReadOnlyQueryData,
    {
        let (tables, ctx) = self.begin(world);
        // SAFETY: read-only query on a shared world.
        unsafe { self.matched.run::<Q, F>(tables, ctx, f) }
    }

    /// Calls `f` for every item with mutable access.
    pub fn for_each_mut<'w>(&mut self, world: &'w mut World, f: impl FnMut(Q::Item<'w>)) {
        let (tables, ctx) = self.begin_mut(world);
        // SAFETY: `&mut World` gives exclusive access for 'w.
        unsafe { self.matched.run::<Q, F>(tables, ctx, f) }
    }

    /// Calls `f` for every item in parallel (rayon), splitting tables into chunks of rows.
    /// Queries that write a sparse component run sequentially (their writes share one set).
    pub fn par_for_each_mut<'w>(&mut self, world: &'w mut World, f: impl Fn(Q::Item<'w>) + Send + Sync) {
        if self.matched.sparse_write {
            return self.for_each_mut(world, f);
        }
        let (tables, ctx) = self.begin_mut(world);
        // Fetches are built once per table on this thread; chunks share copies of them.
        const CHUNK: usize = 64;
        // SAFETY: `&mut World` gives exclusive access for 'w.
        let parts = unsafe { self.table_parts(tables, ctx) };
        let mut jobs = Vec::new();
        for TablePart { fetch, filter, entities, len } in parts {
            for start in (0..len).step_by(CHUNK) {
                jobs.push(SendJob {
                    fetch: fetch.clone(),
                    filter: filter.clone(),
                    entities,
                    start,
                    end: (start + CHUNK).min(len),
                });
            }
        }
        crate::par::for_each(jobs, |job| {
            let SendJob { mut fetch, filter, entities, start, end } = job;
            // SAFETY: chunks are disjoint row ranges, so no two threads touch one row; the
            // fetches only hold pointers into storage that outlives the call.
            unsafe { run_rows::<Q, F>(&mut fetch, &filter, entities, start..end, &mut |item| f(item)) };
        });
    }

    /// The item of one entity, if it matches the query.
    pub fn get<'w>(&mut self, world: &'w World, e: Entity) -> Result<Option<Q::Item<'w>>>
    where
        Q: ReadOnlyQueryData,
    {
        let loc = world.location(e)?;
        self.update_tables(world);
        let Some(&(_, columns)) = self.matched.matched.iter().find(|&&(t, _)| t == TableId(loc.table)) else {
            return Ok(None);
        };
        let Some(data) = &self.matched.data else { return Ok(None) };
        let this_run = world.change_tick_wide();
        let ctx = FetchContext {
            world: world as *const World as *mut World,
            this_run: this_run as u32,
            run_age: run_age(self.matched.last_run, this_run),
        };
        let table = &world.tables()[loc.table as usize] as *const ArchetypeTable as *mut ArchetypeTable;
        // SAFETY: read-only query; row in bounds.
        unsafe {
            let filter = F::fetch(&self.matched.filter, &ctx, table);
            if F::ROW_FILTER && !F::filter_row(&filter, loc.row as usize, e) {
                return Ok(None);
            }
            let mut fetch = Q::fetch(data, columns, &ctx, table);
            Ok(Q::item(&mut fetch, loc.row as usize, e))
        }
    }
}

/// Calls `f` for the items of `rows` of one table.
///
/// # Safety
/// `fetch` and `filter` were made for a table holding `rows`, whose entities start at
/// `entities`, with the access `Q` needs; no row's item is made twice in one run.
#[inline(always)]
unsafe fn run_rows<'w, Q: QueryData, F: QueryFilter>(
    fetch: &mut Q::Fetch<'w>,
    filter: &F::Fetch<'w>,
    entities: *const Entity,
    rows: std::ops::Range<usize>,
    f: &mut impl FnMut(Q::Item<'w>),
) {
    for row in rows {
        // SAFETY: as the caller guarantees; `row` is in bounds.
        unsafe {
            let e = *entities.add(row);
            if F::ROW_FILTER && !F::filter_row(filter, row, e) {
                continue;
            }
            if let Some(item) = Q::item(fetch, row, e) {
                f(item);
            }
        }
    }
}

/// One matched table's fetches, made before its rows are visited.
pub(crate) struct TablePart<'w, Q: QueryData, F: QueryFilter> {
    fetch: Q::Fetch<'w>,
    filter: F::Fetch<'w>,
    entities: *const Entity,
    len: usize,
}

impl<Q: QueryData, F: QueryFilter> TablePart<'_, Q, F> {
    /// The table's rows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

struct SendJob<A, B> {
    fetch: A,
    filter: B,
    entities: *const Entity,
    start: usize,
    end: usize,
}
// SAFETY: a job carries raw pointers into world storage that the spawning call keeps
// exclusively borrowed; each job touches a disjoint row range. Component types are
// `Send + Sync`, so the items made from the pointers may live on any thread.
unsafe impl<A, B> Send for SendJob<A, B> {}

/// Iteration position over a state's matched tables; shared by both iterator kinds. The
/// per-row path is a bounds check and the fetch; everything else happens once per table.
pub(crate) struct Cursor<'w, Q: QueryData, F: QueryFilter> {
    tables: *mut ArchetypeTable,
    ctx: FetchContext,
    /// Fetches made ahead ([`QueryIter::over_parts`]): the cursor steps through them instead
    /// of fetching from `tables`.
    parts: Option<NonNull<[TablePart<'w, Q, F>]>>,
    next_table: usize,
    fetch: Option<Q::Fetch<'w>>,
    filter: Option<F::Fetch<'w>>,
    entities: *const Entity,
    row: usize,
    len: usize,
}

impl<'w, Q: QueryData, F: QueryFilter> Cursor<'w, Q, F> {
    pub(crate) fn new(tables: *mut ArchetypeTable, ctx: FetchContext) -> Self {
        Cursor {
            tables,
            ctx,
            parts: None,
            next_table: 0,
            fetch: None,
            filter: None,
            entities: std::ptr::null(),
            row: 0,
            len: 0,
        }
    }

    /// Whether iteration has begun.
    pub(crate) fn started(&self) -> bool {
        self.next_table > 0
    }

    /// The tables and context the cursor was made with, to run the query another way.
    pub(crate) fn start(&self) -> (*mut ArchetypeTable, FetchContext) {
        (self.tables, self.ctx)
    }

    #[inline(always)]
    pub(crate) fn next(&mut self, state: &MatchOf<Q, F>) -> Option<Q::Item<'w>> {
        loop {
            while self.row < self.len {
                let row = self.row;
                self.row += 1;
                // SAFETY: row < len of the current table, whose fetches are set whenever
                // len > 0; each row is yielded once per cursor.
                unsafe {
                    let e = *self.entities.add(row);
                    if F::ROW_FILTER && !F::filter_row(self.filter.as_ref().unwrap_unchecked(), row, e) {
                        continue;
                    }
                    if let Some(item) = Q::item(self.fetch.as_mut().unwrap_unchecked(), row, e) {
                        return Some(item);
                    }
                }
            }
            self.advance(state)?;
        }
    }

    /// Moves to the next non-empty matched table; `None` when there is none.
    #[inline]
    fn advance(&mut self, state: &MatchOf<Q, F>) -> Option<()> {
        let (next_table, fetch, filter, entities, len) =
            Self::find_table(state, self.tables, self.ctx, self.parts, self.next_table)?;
        self.next_table = next_table;
        self.fetch = Some(fetch);
        self.filter = Some(filter);
        self.entities = entities;
        self.row = 0;
        self.len = len;
        Some(())
    }

    /// The cold half of `advance`. It takes and returns values only, and the state it reads
    /// lives outside the iterator: were the iterator's address to escape, LLVM would reload
    /// the cursor from memory on every row after each store the caller makes through an item.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn find_table(
        state: &MatchOf<Q, F>,
        tables: *mut ArchetypeTable,
        ctx: FetchContext,
        parts: Option<NonNull<[TablePart<'w, Q, F>]>>,
        mut next_table: usize,
    ) -> Option<(usize, Q::Fetch<'w>, F::Fetch<'w>, *const Entity, usize)> {
        if let Some(parts) = parts {
            // SAFETY: the parts outlive the cursor (the iterator made over them borrows them).
            let part = unsafe { parts.as_ref() }.get(next_table)?;
            return Some((next_table + 1, part.fetch.clone(), part.filter.clone(), part.entities, part.len));
        }
        loop {
            let &(tid, columns) = state.matched.get(next_table)?;
            next_table += 1;
            // SAFETY: matched ids are in bounds; whoever built the cursor holds the access the
            // query needs for 'w. A state matches tables only once it has its data state
            // (`update_tables_in`).
            unsafe {
                let table = tables.add(tid.index());
                let len = (*table).len();
                if len == 0 {
                    continue;
                }
                let data = state.data.as_ref().unwrap_unchecked();
                let fetch = Q::fetch(data, columns, &ctx, table);
                let filter = F::fetch(&state.filter, &ctx, table);
                return Some((next_table, fetch, filter, (*table).entities().as_ptr(), len));
            }
        }
    }
}

/// Iterator over a prepared query's items.
pub struct QueryIter<'w, 's, Q: QueryData, F: QueryFilter> {
    state: &'s MatchOf<Q, F>,
    cursor: Cursor<'w, Q, F>,
}

impl<'w, 's, Q: QueryData, F: QueryFilter> QueryIter<'w, 's, Q, F> {
    fn new(state: &'s QueryState<Q, F>, tables: *mut ArchetypeTable, ctx: FetchContext) -> Self {
        QueryIter { state: &state.matched, cursor: Cursor::new(tables, ctx) }
    }

    /// Iterates over fetches made ahead: the iterator makes none of its own, so it may run
    /// on another thread than the one holding the world.
    ///
    /// # Safety
    /// The parts were made for `state`'s run with the access its items need for `'w`, and no
    /// other iterator visits them.
    pub(crate) unsafe fn over_parts(state: &'s MatchOf<Q, F>, parts: &'s [TablePart<'w, Q, F>]) -> Self {
        let mut cursor = Cursor::new(std::ptr::null_mut(), FetchContext::detached());
        cursor.parts = Some(NonNull::from(parts));
        QueryIter { state, cursor }
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, Q, F> {
    type Item = Q::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        self.cursor.next(self.state)
    }

    /// A whole run visits each table's rows in one counted loop, with the row and length in
    /// registers (`next` keeps them in the cursor, which costs loads and stores a row).
    fn for_each<G: FnMut(Q::Item<'w>)>(mut self, mut f: G) {
        if self.cursor.started() {
            for item in self.by_ref() {
                f(item);
            }
            return;
        }
        if let Some(parts) = self.cursor.parts {
            // SAFETY: the parts outlive the iterator (`over_parts` borrows them for 's).
            for part in unsafe { parts.as_ref() } {
                let mut fetch = part.fetch.clone();
                // SAFETY: each part's fetches were made for its table with the access the
                // query needs for 'w (see `over_parts`); its rows are visited once, here.
                unsafe { run_rows::<Q, F>(&mut fetch, &part.filter, part.entities, 0..part.len, &mut f) };
            }
        } else {
            let (tables, ctx) = self.cursor.start();
            // SAFETY: the iterator was made with the access the query needs for 'w, and it
            // has yielded no item: each row is visited once, here.
            unsafe { self.state.run::<Q, F>(tables, ctx, f) }
        }
    }
}
