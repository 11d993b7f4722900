//! Query filters: `With<T>`, `Without<T>`, `Or<(..)>`, `Added<T>`, `Changed<T>`, and tuples
//! of filters (all must pass).

use std::marker::PhantomData;

use crate::component::{Component, ComponentId, Components, StorageKind};
use crate::entity::Entity;
use crate::query::FetchContext;
use crate::storage::{ArchetypeTable, SparseSet};
use crate::tick::{Tick, is_new};

/// The filter half of a query.
///
/// # Safety
/// Implementations only read, and report through [`QueryFilter::tick_reads`] every component
/// whose ticks they read (queries run side by side rely on it).
pub unsafe trait QueryFilter: 'static {
    /// Per-query state.
    type State: Clone + Send + Sync + 'static;
    /// Per-table state.
    type Fetch<'w>: Clone;
    /// Whether [`QueryFilter::filter_row`] can reject rows (otherwise it is never called).
    const ROW_FILTER: bool;
    /// Resolves (registering if needed) the components.
    fn init_state(components: &mut Components) -> crate::Result<Self::State>;
    /// Resolves without registering. Unknown components resolve to `None` ids so that, for
    /// example, `Without<T>` of a never-used `T` still matches everything.
    fn get_state(components: &Components) -> Self::State;
    /// Whether the table can hold passing rows.
    fn matches_table(state: &Self::State, table: &ArchetypeTable) -> bool;
    /// Adds the components whose change ticks the filter reads. Presence tests (`With`,
    /// `Without`) read no component's memory and add nothing.
    fn tick_reads(state: &Self::State, reads: &mut Vec<ComponentId>);
    /// Prepares for a table's rows.
    ///
    /// # Safety
    /// `table` must be valid for `'w`.
    unsafe fn fetch<'w>(state: &Self::State, ctx: &FetchContext, table: *const ArchetypeTable) -> Self::Fetch<'w>;
    /// Whether a row passes.
    ///
    /// # Safety
    /// `row` must be in bounds.
    unsafe fn filter_row(fetch: &Self::Fetch<'_>, row: usize, entity: Entity) -> bool;
}

// SAFETY: no access.
unsafe impl QueryFilter for () {
    type State = ();
    type Fetch<'w> = ();
    const ROW_FILTER: bool = false;
    fn init_state(_: &mut Components) -> crate::Result<()> {
        Ok(())
    }
    fn get_state(_: &Components) {}
    fn matches_table(_: &(), _: &ArchetypeTable) -> bool {
        true
    }
    fn tick_reads(_: &(), _: &mut Vec<ComponentId>) {}
    unsafe fn fetch<'w>(_: &(), _: &FetchContext, _: *const ArchetypeTable) -> Self::Fetch<'w> {}
    #[inline(always)]
    unsafe fn filter_row(_: &(), _: usize, _: Entity) -> bool {
        true
    }
}

fn sparse_of(ctx: &FetchContext, id: Option<ComponentId>) -> *const SparseSet {
    // SAFETY: the world outlives the run and sparse sets are only read here.
    let world = unsafe { &*ctx.world };
    id.and_then(|id| world.sparse_set(id)).map_or(std::ptr::null(), |s| s as *const SparseSet)
}

/// Only entities that have `T`.
pub struct With<T>(PhantomData<T>);
/// Only entities that lack `T`.
pub struct Without<T>(PhantomData<T>);

// SAFETY: reads presence only.
unsafe impl<T: Component> QueryFilter for With<T> {
    type State = Option<ComponentId>;
    type Fetch<'w> = *const SparseSet;
    const ROW_FILTER: bool = matches!(T::STORAGE, StorageKind::Sparse);
    fn init_state(components: &mut Components) -> crate::Result<Self::State> {
        components.register::<T>().map(Some)
    }
    fn get_state(components: &Components) -> Self::State {
        components.id_of::<T>()
    }
    fn matches_table(id: &Self::State, table: &ArchetypeTable) -> bool {
        match (T::STORAGE, id) {
            (_, None) => false,
            (StorageKind::Table, Some(id)) => table.has(*id),
            (StorageKind::Sparse, Some(_)) => true,
        }
    }
    fn tick_reads(_: &Self::State, _: &mut Vec<ComponentId>) {}
    unsafe fn fetch<'w>(id: &Self::State, ctx: &FetchContext, _: *const ArchetypeTable) -> Self::Fetch<'w> {
        if T::STORAGE == StorageKind::Sparse { sparse_of(ctx, *id) } else { std::ptr::null() }
    }
    #[inline(always)]
    unsafe fn filter_row(set: &Self::Fetch<'_>, _: usize, entity: Entity) -> bool {
        // SAFETY: non-null sets are valid for the run.
        T::STORAGE == StorageKind::Table || (!set.is_null() && unsafe { (**set).contains(entity) })
    }
}

// SAFETY: reads presence only.
unsafe impl<T: Component> QueryFilter for Without<T> {
    type State = Option<ComponentId>;
    type Fetch<'w> = *const SparseSet;
    const ROW_FILTER: bool = matches!(T::STORAGE, StorageKind::Sparse);
    fn init_state(components: &mut Components) -> crate::Result<Self::State> {
        components.register::<T>().map(Some)
    }
    fn get_state(components: &Components) -> Self::State {
        components.id_of::<T>()
    }
    fn matches_table(id: &Self::State, table: &ArchetypeTable) -> bool {
        match (T::STORAGE, id) {
            (StorageKind::Table, Some(id)) => !table.has(*id),
            _ => true,
        }
    }
    fn tick_reads(_: &Self::State, _: &mut Vec<ComponentId>) {}
    unsafe fn fetch<'w>(id: &Self::State, ctx: &FetchContext, _: *const ArchetypeTable) -> Self::Fetch<'w> {
        if T::STORAGE == StorageKind::Sparse { sparse_of(ctx, *id) } else { std::ptr::null() }
    }
    #[inline(always)]
    unsafe fn filter_row(set: &Self::Fetch<'_>, _: usize, entity: Entity) -> bool {
        // SAFETY: non-null sets are valid for the run.
        T::STORAGE == StorageKind::Table || set.is_null() || !unsafe { (**set).contains(entity) }
    }
}

/// Which tick a change filter compares.
#[derive(Clone, Copy)]
enum TickKind {
    Added,
    Changed,
}

/// Entities whose `T` was added since the query last ran.
pub struct Added<T>(PhantomData<T>);
/// Entities whose `T` was added or written since the query last ran.
pub struct Changed<T>(PhantomData<T>);

/// Per-table fetch of a change filter.
#[derive(Clone)]
pub struct TickFetch {
    /// Table storage: row `r`'s tick is at `dense + (r & mask)` (mask 0 when every row of the
    /// column was added at one tick, kept once).
    dense: *const Tick,
    mask: usize,
    sparse: *const SparseSet,
    this_run: Tick,
    run_age: u32,
}

fn tick_matches<T: Component>(id: &Option<ComponentId>, table: &ArchetypeTable) -> bool {
    match (T::STORAGE, id) {
        (_, None) => false,
        (StorageKind::Table, Some(id)) => table.has(*id),
        (StorageKind::Sparse, Some(_)) => true,
    }
}

/// # Safety
/// `table` is valid and matches.
unsafe fn tick_fetch<T: Component>(
    kind: TickKind,
    id: &Option<ComponentId>,
    ctx: &FetchContext,
    table: *const ArchetypeTable,
) -> TickFetch {
    let ((dense, mask), sparse) = match T::STORAGE {
        StorageKind::Table => {
            // SAFETY: valid per the caller.
            let col = unsafe { &*table }.column(id.expect("matched")).expect("matched");
            // No reference to the tick slice is made: a writer of the same column may hold
            // `&mut` ticks of rows already visited.
            (col.ticks_reader(matches!(kind, TickKind::Added)), std::ptr::null())
        }
        StorageKind::Sparse => ((std::ptr::null(), 0), sparse_of(ctx, *id)),
    };
    TickFetch { dense, mask, sparse, this_run: ctx.this_run, run_age: ctx.run_age }
}

/// # Safety
/// `row` in bounds; pointers valid for the run.
#[inline(always)]
unsafe fn tick_filter<T: Component>(kind: TickKind, f: &TickFetch, row: usize, entity: Entity) -> bool {
    let tick = match T::STORAGE {
        // SAFETY: row < table length, so `row & mask` is in bounds of the ticks read.
        StorageKind::Table => unsafe { *f.dense.add(row & f.mask) },
        StorageKind::Sparse => {
            if f.sparse.is_null() {
                return false;
            }
            // SAFETY: valid for the run.
            let set = unsafe { &*f.sparse };
            let t = match kind {
                TickKind::Added => set.added_tick(entity),
                TickKind::Changed => set.changed_tick(entity),
            };
            match t {
                Some(t) => t,
                None => return false,
            }
        }
    };
    is_new(tick, f.this_run, f.run_age)
}

macro_rules! change_filter {
    ($ty:ident, $kind:expr_2021) => {
        // SAFETY: reads ticks only.
        unsafe impl<T: Component> QueryFilter for $ty<T> {
            type State = Option<ComponentId>;
            type Fetch<'w> = TickFetch;
            const ROW_FILTER: bool = true;
            fn init_state(components: &mut Components) -> crate::Result<Self::State> {
                components.register::<T>().map(Some)
            }
            fn get_state(components: &Components) -> Self::State {
                components.id_of::<T>()
            }
            fn matches_table(id: &Self::State, table: &ArchetypeTable) -> bool {
                tick_matches::<T>(id, table)
            }
            fn tick_reads(id: &Self::State, reads: &mut Vec<ComponentId>) {
                reads.extend(*id);
            }
            unsafe fn fetch<'w>(id: &Self::State, ctx: &FetchContext, table: *const ArchetypeTable) -> Self::Fetch<'w> {
                // SAFETY: forwarded.
                unsafe { tick_fetch::<T>($kind, id, ctx, table) }
            }
            #[inline(always)]
            unsafe fn filter_row(f: &TickFetch, row: usize, entity: Entity) -> bool {
                // SAFETY: forwarded.
                unsafe { tick_filter::<T>($kind, f, row, entity) }
            }
        }
    };
}
change_filter!(Added, TickKind::Added);
change_filter!(Changed, TickKind::Changed);

/// Entities that pass at least one of the filters in the tuple.
pub struct Or<T>(PhantomData<T>);

macro_rules! tuple_filter {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: all elements must pass.
        unsafe impl<$($name: QueryFilter),*> QueryFilter for ($($name,)*) {
            type State = ($($name::State,)*);
            type Fetch<'w> = ($($name::Fetch<'w>,)*);
            const ROW_FILTER: bool = false $(|| $name::ROW_FILTER)*;
            fn init_state(components: &mut Components) -> crate::Result<Self::State> {
                Ok(($($name::init_state(components)?,)*))
            }
            fn get_state(components: &Components) -> Self::State {
                ($($name::get_state(components),)*)
            }
            fn matches_table(state: &Self::State, table: &ArchetypeTable) -> bool {
                true $(&& $name::matches_table(&state.$idx, table))*
            }
            fn tick_reads(state: &Self::State, reads: &mut Vec<ComponentId>) {
                $($name::tick_reads(&state.$idx, reads);)*
            }
            unsafe fn fetch<'w>(state: &Self::State, ctx: &FetchContext, table: *const ArchetypeTable) -> Self::Fetch<'w> {
                // SAFETY: forwarded.
                unsafe { ($($name::fetch(&state.$idx, ctx, table),)*) }
            }
            #[inline(always)]
            unsafe fn filter_row(f: &Self::Fetch<'_>, row: usize, entity: Entity) -> bool {
                // SAFETY: forwarded.
                unsafe { true $(&& $name::filter_row(&f.$idx, row, entity))* }
            }
        }

        // SAFETY: any element may pass; an element is consulted only on tables it matches.
        unsafe impl<$($name: QueryFilter),*> QueryFilter for Or<($($name,)*)> {
            type State = ($($name::State,)*);
            type Fetch<'w> = ($(Option<$name::Fetch<'w>>,)*);
            const ROW_FILTER: bool = true;
            fn init_state(components: &mut Components) -> crate::Result<Self::State> {
                Ok(($($name::init_state(components)?,)*))
            }
            fn get_state(components: &Components) -> Self::State {
                ($($name::get_state(components),)*)
            }
            fn matches_table(state: &Self::State, table: &ArchetypeTable) -> bool {
                false $(|| $name::matches_table(&state.$idx, table))*
            }
            fn tick_reads(state: &Self::State, reads: &mut Vec<ComponentId>) {
                $($name::tick_reads(&state.$idx, reads);)*
            }
            unsafe fn fetch<'w>(state: &Self::State, ctx: &FetchContext, table: *const ArchetypeTable) -> Self::Fetch<'w> {
                // SAFETY: forwarded; an element is fetched only where it matches.
                unsafe {
                    ($($name::matches_table(&state.$idx, &*table).then(|| $name::fetch(&state.$idx, ctx, table)),)*)
                }
            }
            #[inline(always)]
            unsafe fn filter_row(f: &Self::Fetch<'_>, row: usize, entity: Entity) -> bool {
                // SAFETY: forwarded.
                unsafe { false $(|| f.$idx.as_ref().is_some_and(|g| $name::filter_row(g, row, entity)))* }
            }
        }
    };
}

tuple_filter!(A 0);
tuple_filter!(A 0, B 1);
tuple_filter!(A 0, B 1, C 2);
tuple_filter!(A 0, B 1, C 2, D 3);
tuple_filter!(A 0, B 1, C 2, D 3, E 4);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5);
