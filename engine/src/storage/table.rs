//! Archetype tables: one per distinct set of table-stored components.

use crate::component::{ComponentId, Components};
use crate::entity::Entity;
use crate::storage::Column;

mod bulk;

/// Index of a table in the world.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct TableId(pub u32);

impl TableId {
    /// The table of entities with no table-stored components.
    pub const EMPTY: TableId = TableId(0);
    /// As a usize index.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

const NO_EDGE: u32 = u32::MAX;

/// The rows of every entity that has exactly this set of table-stored components: an entity
/// column plus one contiguous column per component, row-aligned.
pub struct ArchetypeTable {
    id: TableId,
    components: Box<[ComponentId]>,
    columns: Box<[Column]>,
    entities: Vec<Entity>,
    /// Cached graph edges: the table reached by inserting / removing bundle `b`, indexed by
    /// bundle id. Lookups on the hot path are a bounds check and a load.
    insert_edges: Vec<u32>,
    remove_edges: Vec<u32>,
}

impl ArchetypeTable {
    pub(crate) fn new(id: TableId, components: Box<[ComponentId]>, registry: &Components) -> ArchetypeTable {
        debug_assert!(components.windows(2).all(|w| w[0] < w[1]), "component set must be sorted");
        let columns = components.iter().map(|&c| Column::new(registry.info(c))).collect();
        ArchetypeTable {
            id,
            components,
            columns,
            entities: Vec::new(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        }
    }

    /// This table's id.
    pub fn id(&self) -> TableId {
        self.id
    }

    /// The sorted component set.
    #[inline]
    pub fn components(&self) -> &[ComponentId] {
        &self.components
    }

    /// The entity of each row.
    #[inline]
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the table has no rows.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Whether the table stores this component.
    #[inline]
    pub fn has(&self, id: ComponentId) -> bool {
        self.column_index(id).is_some()
    }

    /// The position of a component's column.
    #[inline]
    pub fn column_index(&self, id: ComponentId) -> Option<usize> {
        // Tables hold a handful of components; a linear scan beats binary search below ~16.
        if self.components.len() <= 16 {
            self.components.iter().position(|&c| c == id)
        } else {
            self.components.binary_search(&id).ok()
        }
    }

    /// The column of a component.
    #[inline]
    pub fn column(&self, id: ComponentId) -> Option<&Column> {
        self.column_index(id).map(|i| &self.columns[i])
    }

    /// All columns, in component order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub(crate) fn columns_mut(&mut self) -> &mut [Column] {
        &mut self.columns
    }

    #[inline]
    pub(crate) fn column_mut(&mut self, id: ComponentId) -> Option<&mut Column> {
        let i = self.column_index(id).filter(|&i| i < self.columns.len())?;
        // Reborrows this one column, not the whole slice: queries prepared side by side
        // keep pointers into other columns of the table (an `Added` filter's shared tick).
        // The raw place projection makes no reference to the slice.
        let first = (&raw mut *self.columns).cast::<Column>();
        // SAFETY: `i` is in bounds; the `&mut self` borrow makes the column exclusive.
        Some(unsafe { &mut *first.add(i) })
    }

    /// The column at `index` (a position [`ArchetypeTable::column_index`] gave), unchecked:
    /// queries find their columns' positions once, when they match the table.
    ///
    /// # Safety
    /// `index` is below the table's column count.
    #[inline(always)]
    pub(crate) unsafe fn column_at_unchecked(&self, index: usize) -> &Column {
        debug_assert!(index < self.columns.len());
        // SAFETY: in bounds, as the caller guarantees.
        unsafe { self.columns.get_unchecked(index) }
    }

    /// [`ArchetypeTable::column_at_unchecked`] for writing; reborrows only that column (see
    /// [`ArchetypeTable::column_mut`]).
    ///
    /// # Safety
    /// `index` is below the table's column count.
    #[inline(always)]
    pub(crate) unsafe fn column_at_unchecked_mut(&mut self, index: usize) -> &mut Column {
        debug_assert!(index < self.columns.len());
        let first = (&raw mut *self.columns).cast::<Column>();
        // SAFETY: in bounds, as the caller guarantees; the `&mut self` borrow makes the
        // column exclusive.
        unsafe { &mut *first.add(index) }
    }

    /// The components and their columns, side by side (writers of different components
    /// take different columns of one table).
    pub(crate) fn components_and_columns_mut(&mut self) -> (&[ComponentId], &mut [Column]) {
        (&self.components, &mut self.columns)
    }

    #[inline]
    pub(crate) fn column_at_mut(&mut self, i: usize) -> &mut Column {
        &mut self.columns[i]
    }

    /// The entity column and every column at once (snapshot loading fills them side by
    /// side; the caller keeps them row-aligned).
    pub(crate) fn parts_mut(&mut self) -> (&mut Vec<Entity>, &mut [Column]) {
        (&mut self.entities, &mut self.columns)
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.entities.reserve(additional);
        for c in self.columns.iter_mut() {
            c.reserve(additional);
        }
    }

    /// Appends the entity; the caller then pushes exactly one value to every column.
    #[inline]
    pub(crate) fn push_entity(&mut self, e: Entity) -> usize {
        self.entities.push(e);
        self.entities.len() - 1
    }

    /// Swap-removes a row, dropping its values. Returns the entity moved into `row`, if any.
    pub(crate) fn swap_remove_drop(&mut self, row: usize) -> Option<Entity> {
        for c in self.columns.iter_mut() {
            c.swap_remove_drop(row);
        }
        self.entities.swap_remove(row);
        self.entities.get(row).copied()
    }

    /// Moves a row into `dst`: shared columns move bit-for-bit (keeping their ticks), columns
    /// `dst` lacks are dropped. Returns the new row in `dst` and the entity swapped into `row`.
    /// The caller must then push values for the columns only `dst` has.
    pub(crate) fn move_row(&mut self, row: usize, dst: &mut ArchetypeTable) -> (usize, Option<Entity>) {
        self.move_row_with(row, dst, |_, column, row| column.swap_remove_drop(row))
    }

    /// Moves a row out, handing each value whose component `dst` lacks to `take` (which must
    /// move it out) instead of dropping it.
    pub(crate) fn move_row_taking(
        &mut self,
        row: usize,
        dst: &mut ArchetypeTable,
        mut take: impl FnMut(ComponentId, *const u8),
    ) -> (usize, Option<Entity>) {
        self.move_row_with(row, dst, |c, column, row| {
            take(c, column.get_ptr(row));
            // SAFETY: `take` moved the value out.
            unsafe { column.swap_remove_forget(row, None) };
        })
    }

    /// Moves a row into `dst` as [`ArchetypeTable::move_row`] does, except that the value of
    /// component `aside` (which `dst` lacks) moves to the end of `into`, keeping its ticks:
    /// a component leaving the tables for a sparse set (`ALTER … SET STORAGE SPARSE`).
    pub(crate) fn move_row_aside(
        &mut self,
        row: usize,
        dst: &mut ArchetypeTable,
        aside: ComponentId,
        into: &mut Column,
    ) -> (usize, Option<Entity>) {
        self.move_row_with(row, dst, |c, column, row| match c == aside {
            true => column.move_row_to(row, into),
            false => column.swap_remove_drop(row),
        })
    }

    /// The moves above: shared columns move to `dst`; `lacking(c, column, row)` must remove
    /// row `row` from the column of each component `dst` lacks.
    fn move_row_with(
        &mut self,
        row: usize,
        dst: &mut ArchetypeTable,
        mut lacking: impl FnMut(ComponentId, &mut Column, usize),
    ) -> (usize, Option<Entity>) {
        let e = self.entities[row];
        let new_row = dst.push_entity(e);
        for (i, &c) in self.components.iter().enumerate() {
            match dst.column_mut(c) {
                Some(d) => self.columns[i].move_row_to(row, d),
                None => lacking(c, &mut self.columns[i], row),
            }
        }
        self.entities.swap_remove(row);
        (new_row, self.entities.get(row).copied())
    }

    /// Forgets the graph edges (the tables they lead to may no longer be the ones a bundle
    /// reaches, once a component changed its storage); they are found again when next used.
    pub(crate) fn clear_edges(&mut self) {
        self.insert_edges.clear();
        self.remove_edges.clear();
    }

    #[inline]
    pub(crate) fn insert_edge(&self, bundle: usize) -> Option<TableId> {
        self.insert_edges.get(bundle).filter(|&&t| t != NO_EDGE).map(|&t| TableId(t))
    }

    #[inline]
    pub(crate) fn remove_edge(&self, bundle: usize) -> Option<TableId> {
        self.remove_edges.get(bundle).filter(|&&t| t != NO_EDGE).map(|&t| TableId(t))
    }

    pub(crate) fn set_insert_edge(&mut self, bundle: usize, to: TableId) {
        if self.insert_edges.len() <= bundle {
            self.insert_edges.resize(bundle + 1, NO_EDGE);
        }
        self.insert_edges[bundle] = to.0;
    }

    pub(crate) fn set_remove_edge(&mut self, bundle: usize, to: TableId) {
        if self.remove_edges.len() <= bundle {
            self.remove_edges.resize(bundle + 1, NO_EDGE);
        }
        self.remove_edges[bundle] = to.0;
    }

    /// Bytes held: (component data, bookkeeping: entities, ticks, edges).
    pub fn memory_bytes(&self) -> (usize, usize) {
        let mut data = 0;
        let mut overhead = self.entities.capacity() * std::mem::size_of::<Entity>()
            + (self.insert_edges.capacity() + self.remove_edges.capacity()) * 4;
        for c in self.columns.iter() {
            let (d, t) = c.memory_bytes();
            data += d;
            overhead += t;
        }
        (data, overhead)
    }

    /// Drops every row.
    pub(crate) fn clear(&mut self) {
        for c in self.columns.iter_mut() {
            c.clear();
        }
        self.entities.clear();
    }
}
