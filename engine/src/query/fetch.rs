//! What a query yields per row: `Entity`, `&T`, `&mut T` (as [`Mut<T>`]), `Option<Q>`, tuples.

use std::ptr::NonNull;

use crate::component::{Component, ComponentId, Components, StorageKind};
use crate::entity::Entity;
use crate::query::{Access, FetchContext};
use crate::storage::{ArchetypeTable, SparseSet};
use crate::tick::{Mut, Tick};

/// The data half of a query.
///
/// # Safety
/// Implementations must report every component they touch through [`QueryData::access`],
/// write only to components they report as writes, and return items that borrow only the
/// rows they were asked for.
pub unsafe trait QueryData {
    /// What one row yields.
    type Item<'w>;
    /// Per-query state: component ids.
    type State: Clone + Send + Sync + 'static;
    /// Per-table state: column pointers.
    type Fetch<'w>: Clone;
    /// Where the query's columns sit in one matched table (their indexes), found once when
    /// the table is matched, so that starting on a table looks nothing up.
    type Columns: Copy + Send + Sync + 'static;
    /// This query type with every lifetime made `'static`: the key of the world's cache of
    /// one-shot query states (`&'a T` and `&'b T` are one query).
    type Static: 'static;

    /// Resolves (registering if needed) the components.
    fn init_state(components: &mut Components) -> crate::Result<Self::State>;
    /// Resolves the components without registering; `None` if one is unknown (the query
    /// then matches nothing).
    fn get_state(components: &Components) -> Option<Self::State>;
    /// Reports reads and writes.
    fn access(state: &Self::State, components: &Components, access: &mut Access);
    /// Whether rows of this table can yield items (`None` if not), and where its columns are.
    fn match_table(state: &Self::State, table: &ArchetypeTable) -> Option<Self::Columns>;
    /// Prepares to read rows of `table`.
    ///
    /// # Safety
    /// `table` must point to a table of `ctx.world` that matches, and `columns` be what
    /// [`QueryData::match_table`] returned for it; if the query writes, the caller must hold
    /// exclusive access to the world for `'w`.
    unsafe fn fetch<'w>(
        state: &Self::State,
        columns: Self::Columns,
        ctx: &FetchContext,
        table: *mut ArchetypeTable,
    ) -> Self::Fetch<'w>;
    /// The item of row `row` (whose entity is `entity`), or `None` if a sparse component is
    /// absent for it.
    ///
    /// # Safety
    /// `row` must be in bounds and each row fetched at most once per run for writing queries.
    unsafe fn item<'w>(fetch: &mut Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Item<'w>>;
}

/// Queries that only read, so they can run on a shared `&World`.
///
/// # Safety
/// Implementations must not write.
pub unsafe trait ReadOnlyQueryData: QueryData {}

// SAFETY: reads nothing but the entity column.
unsafe impl QueryData for Entity {
    type Item<'w> = Entity;
    type State = ();
    type Fetch<'w> = ();
    type Columns = ();
    type Static = Entity;
    fn init_state(_: &mut Components) -> crate::Result<()> {
        Ok(())
    }
    fn get_state(_: &Components) -> Option<()> {
        Some(())
    }
    fn access(_: &(), _: &Components, _: &mut Access) {}
    fn match_table(_: &(), _: &ArchetypeTable) -> Option<()> {
        Some(())
    }
    unsafe fn fetch<'w>(_: &(), _: (), _: &FetchContext, _: *mut ArchetypeTable) -> Self::Fetch<'w> {}
    #[inline(always)]
    unsafe fn item<'w>(_: &mut Self::Fetch<'w>, _: usize, entity: Entity) -> Option<Self::Item<'w>> {
        Some(entity)
    }
}
// SAFETY: never writes.
unsafe impl ReadOnlyQueryData for Entity {}

/// Per-table fetch of one component. Which half is used is decided by `T::STORAGE`, a
/// compile-time constant, so the per-row path has no runtime branch on the storage kind.
///
/// Every pointer is taken once per table from the column's allocation, without making a
/// reference to the values or ticks: items then borrow exactly their own row, so items of
/// earlier rows (and tables) stay valid while later ones are made.
pub struct ComponentFetch<T> {
    /// The column's first value (table storage: the table's column; sparse storage: the set's
    /// dense column).
    /// Non-null (dangling where there are no values) so that LLVM knows every item's
    /// reference is non-null: `None` is the null reference, and a `*mut` here left a test of
    /// `Option<item>` on every row of a `for` loop.
    values: NonNull<T>,
    /// The column's changed ticks (null for readers).
    ticks: *mut Tick,
    /// Sparse storage: the set, for finding an entity's dense row (null if no value was ever
    /// stored).
    set: *const SparseSet,
}

impl<T> Clone for ComponentFetch<T> {
    fn clone(&self) -> Self {
        ComponentFetch { values: self.values, ticks: self.ticks, set: self.set }
    }
}

/// Builds the fetch of component `id` (type `T`) for a table, whose column of it (table
/// storage) is at index `column`; `write` asks for pointers with write provenance (and the
/// changed ticks).
///
/// # Safety
/// As [`QueryData::fetch`]: `column` is what [`table_column`] gave for this table. For
/// writers, the caller holds exclusive access to the world for the run and `ctx.world` was
/// made from that exclusive borrow.
#[inline(always)]
unsafe fn component_fetch<T: Component>(
    id: ComponentId,
    column: u32,
    ctx: &FetchContext,
    table: *mut ArchetypeTable,
    write: bool,
) -> ComponentFetch<T> {
    match T::STORAGE {
        StorageKind::Table if write => {
            // SAFETY: the caller guarantees `table` is valid and exclusive, and `column` the
            // index of `id`'s column in it (a table's columns never change); the `&mut` lives
            // only while the pointers are taken.
            let col = unsafe { (*table).column_at_unchecked_mut(column as usize) };
            ComponentFetch { values: col.values_ptr(), ticks: col.changed_ticks_ptr(), set: std::ptr::null() }
        }
        StorageKind::Table => {
            // SAFETY: `table` is valid and `column` in bounds, as above; shared access only.
            let col = unsafe { (*table).column_at_unchecked(column as usize) };
            ComponentFetch { values: col.values_ptr(), ticks: std::ptr::null_mut(), set: std::ptr::null() }
        }
        StorageKind::Sparse if write => {
            // SAFETY: the world outlives the run and the caller holds it exclusively; access
            // checking makes this query the component's only writer. The `&mut` to the set
            // lives only while the value and tick pointers are taken (they carry the column's
            // allocations' provenance, not the set's); rows are then found through a shared
            // borrow of the set, which reads its index arrays, never the values or ticks.
            let sets = unsafe { &mut (*ctx.world).storage.sparse };
            let Some(set) = sets.get_mut(id.index()).and_then(Option::as_mut) else {
                return ComponentFetch {
                    values: NonNull::dangling(),
                    ticks: std::ptr::null_mut(),
                    set: std::ptr::null(),
                };
            };
            let col = set.column_mut();
            let (values, ticks) = (col.values_ptr(), col.changed_ticks_ptr());
            // SAFETY: as above; the shared borrow is made after the exclusive one ended.
            let set = unsafe { &*ctx.world }.sparse_set(id).map_or(std::ptr::null(), |s| s as *const SparseSet);
            ComponentFetch { values, ticks, set }
        }
        StorageKind::Sparse => {
            // SAFETY: the world outlives the run; readers only read.
            let world = unsafe { &*ctx.world };
            match world.sparse_set(id) {
                Some(set) => ComponentFetch {
                    values: set.column().values_ptr(),
                    ticks: std::ptr::null_mut(),
                    set: set as *const SparseSet,
                },
                None => {
                    ComponentFetch { values: NonNull::dangling(), ticks: std::ptr::null_mut(), set: std::ptr::null() }
                }
            }
        }
    }
}

/// The sparse set's row for `entity`, if it has the component.
///
/// # Safety
/// `set` is null or a valid sparse set.
#[inline]
unsafe fn sparse_row(set: *const SparseSet, entity: Entity) -> Option<usize> {
    if set.is_null() {
        return None;
    }
    // SAFETY: non-null sets are valid for the run.
    unsafe { (*set).row(entity) }
}

/// Where component `id` (type `T`) sits in `table`: its column's index for table storage
/// (`None` if the table lacks it), and 0, unused, for sparse storage, whose membership is
/// checked per row.
fn table_column<T: Component>(id: ComponentId, table: &ArchetypeTable) -> Option<u32> {
    match T::STORAGE {
        StorageKind::Table => table.column_index(id).map(|i| i as u32),
        StorageKind::Sparse => Some(0),
    }
}

// SAFETY: reports a read of T; only reads.
unsafe impl<T: Component> QueryData for &T {
    type Item<'w> = &'w T;
    type State = ComponentId;
    type Fetch<'w> = ComponentFetch<T>;
    type Columns = u32;
    type Static = &'static T;
    fn init_state(components: &mut Components) -> crate::Result<ComponentId> {
        components.register::<T>()
    }
    fn get_state(components: &Components) -> Option<ComponentId> {
        components.id_of::<T>()
    }
    fn access(id: &ComponentId, _: &Components, access: &mut Access) {
        access.add_read(*id);
    }
    fn match_table(id: &ComponentId, table: &ArchetypeTable) -> Option<u32> {
        table_column::<T>(*id, table)
    }
    unsafe fn fetch<'w>(
        id: &ComponentId,
        column: u32,
        ctx: &FetchContext,
        table: *mut ArchetypeTable,
    ) -> Self::Fetch<'w> {
        // SAFETY: forwarded.
        unsafe { component_fetch::<T>(*id, column, ctx, table, false) }
    }
    #[inline(always)]
    unsafe fn item<'w>(fetch: &mut Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Item<'w>> {
        match T::STORAGE {
            // SAFETY: row < table length; the column holds `T`s.
            StorageKind::Table => Some(unsafe { fetch.values.add(row).as_ref() }),
            StorageKind::Sparse => {
                // SAFETY: `set` is valid for the run.
                let r = unsafe { sparse_row(fetch.set, entity) }?;
                // SAFETY: dense row `r` of the set holds a `T`.
                Some(unsafe { fetch.values.add(r).as_ref() })
            }
        }
    }
}
// SAFETY: only reads.
unsafe impl<T: Component> ReadOnlyQueryData for &T {}

// SAFETY: reports a write of T; writes only T's value and changed tick of the fetched row.
unsafe impl<T: Component> QueryData for &mut T {
    type Item<'w> = Mut<'w, T>;
    type State = ComponentId;
    type Fetch<'w> = (ComponentFetch<T>, Tick);
    type Columns = u32;
    type Static = &'static mut T;
    fn init_state(components: &mut Components) -> crate::Result<ComponentId> {
        components.register::<T>()
    }
    fn get_state(components: &Components) -> Option<ComponentId> {
        components.id_of::<T>()
    }
    fn access(id: &ComponentId, _: &Components, access: &mut Access) {
        access.add_write(*id, T::STORAGE == StorageKind::Sparse);
    }
    fn match_table(id: &ComponentId, table: &ArchetypeTable) -> Option<u32> {
        table_column::<T>(*id, table)
    }
    unsafe fn fetch<'w>(
        id: &ComponentId,
        column: u32,
        ctx: &FetchContext,
        table: *mut ArchetypeTable,
    ) -> Self::Fetch<'w> {
        // SAFETY: forwarded.
        (unsafe { component_fetch::<T>(*id, column, ctx, table, true) }, ctx.this_run)
    }
    #[inline(always)]
    unsafe fn item<'w>(fetch: &mut Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Mut<'w, T>> {
        let tick = fetch.1;
        let f = &fetch.0;
        match T::STORAGE {
            StorageKind::Table => {
                // SAFETY: row < table length; each row is yielded once per run, so the `&mut`s
                // never alias; value and tick are in different allocations.
                Some(unsafe { Mut::new(f.values.add(row).as_mut(), &mut *f.ticks.add(row), tick) })
            }
            StorageKind::Sparse => {
                // SAFETY: `set` is valid; this query is its only user.
                let r = unsafe { sparse_row(f.set, entity) }?;
                // SAFETY: as above, for the set's dense row `r` (an entity has one dense row,
                // and each entity is yielded once per run).
                Some(unsafe { Mut::new(f.values.add(r).as_mut(), &mut *f.ticks.add(r), tick) })
            }
        }
    }
}

// SAFETY: delegates to Q; matches every table. Its state is `None` when Q names a component
// the world does not know yet: the option is then `None` on every row.
unsafe impl<Q: QueryData> QueryData for Option<Q> {
    type Item<'w> = Option<Q::Item<'w>>;
    type State = Option<Q::State>;
    type Fetch<'w> = Option<Q::Fetch<'w>>;
    type Columns = Option<Q::Columns>;
    type Static = Option<Q::Static>;
    fn init_state(components: &mut Components) -> crate::Result<Self::State> {
        Q::init_state(components).map(Some)
    }
    fn get_state(components: &Components) -> Option<Self::State> {
        Some(Q::get_state(components))
    }
    fn access(state: &Self::State, components: &Components, access: &mut Access) {
        if let Some(s) = state {
            Q::access(s, components, access)
        }
    }
    fn match_table(state: &Self::State, table: &ArchetypeTable) -> Option<Self::Columns> {
        Some(state.as_ref().and_then(|state| Q::match_table(state, table)))
    }
    unsafe fn fetch<'w>(
        state: &Self::State,
        columns: Self::Columns,
        ctx: &FetchContext,
        table: *mut ArchetypeTable,
    ) -> Self::Fetch<'w> {
        let (state, columns) = (state.as_ref()?, columns?);
        // SAFETY: forwarded; only fetched where Q matched the table.
        Some(unsafe { Q::fetch(state, columns, ctx, table) })
    }
    #[inline(always)]
    unsafe fn item<'w>(fetch: &mut Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded.
        Some(fetch.as_mut().and_then(|f| unsafe { Q::item(f, row, entity) }))
    }
}
// SAFETY: delegates.
unsafe impl<Q: ReadOnlyQueryData> ReadOnlyQueryData for Option<Q> {}

macro_rules! tuple_query {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: the union of the elements' accesses.
        unsafe impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type State = ($($name::State,)*);
            type Fetch<'w> = ($($name::Fetch<'w>,)*);
            type Columns = ($($name::Columns,)*);
            type Static = ($($name::Static,)*);
            fn init_state(components: &mut Components) -> crate::Result<Self::State> {
                Ok(($($name::init_state(components)?,)*))
            }
            fn get_state(components: &Components) -> Option<Self::State> {
                Some(($($name::get_state(components)?,)*))
            }
            fn access(state: &Self::State, components: &Components, access: &mut Access) {
                $($name::access(&state.$idx, components, access);)*
            }
            fn match_table(state: &Self::State, table: &ArchetypeTable) -> Option<Self::Columns> {
                Some(($($name::match_table(&state.$idx, table)?,)*))
            }
            unsafe fn fetch<'w>(
                state: &Self::State,
                columns: Self::Columns,
                ctx: &FetchContext,
                table: *mut ArchetypeTable,
            ) -> Self::Fetch<'w> {
                // SAFETY: forwarded, each element with its own columns.
                unsafe { ($($name::fetch(&state.$idx, columns.$idx, ctx, table),)*) }
            }
            #[inline(always)]
            unsafe fn item<'w>(fetch: &mut Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Item<'w>> {
                // SAFETY: forwarded.
                unsafe { Some(($($name::item(&mut fetch.$idx, row, entity)?,)*)) }
            }
        }
        // SAFETY: all elements only read.
        unsafe impl<$($name: ReadOnlyQueryData),*> ReadOnlyQueryData for ($($name,)*) {}
    };
}

tuple_query!(A 0);
tuple_query!(A 0, B 1);
tuple_query!(A 0, B 1, C 2);
tuple_query!(A 0, B 1, C 2, D 3);
tuple_query!(A 0, B 1, C 2, D 3, E 4);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
