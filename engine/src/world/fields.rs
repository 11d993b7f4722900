//! The world's typed field views: [`World::table_field`], [`World::sparse_field`], string
//! heads and [`FieldView::new`]. The views are storage types (`storage/field.rs`,
//! `storage/field_view.rs`); the world checks a component and field against its schema
//! before it makes one, which is what makes the strided reads sound.

use crate::component::{ComponentId, FieldType};
use crate::storage::{FieldColumn, FieldPlace, FieldScalar, FieldView, StringHeads, TableId, string_head};
use crate::world::World;

impl World {
    /// The offset of field `field` of component `id` if it exists, is readable and has type
    /// `T`.
    fn checked_field_offset<T: FieldScalar>(&self, id: ComponentId, field: usize) -> Option<usize> {
        if id.index() >= self.components.len() {
            return None;
        }
        let info = self.components.info(id);
        if info.is_opaque() {
            return None;
        }
        let f = info.fields().get(field)?;
        (f.ty == T::FIELD_TYPE).then_some(f.offset)
    }

    /// Field `field` (by schema position) of component `id` in every row of table `table`,
    /// typed. `None` when the table does not store the component, the field does not exist,
    /// or its type is not `T`'s.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Health { hp: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 3.0, max: 10.0 });
    /// let id = world.component_id("Health").unwrap();
    /// let table = world.location(e).unwrap().table;
    /// let hp = world.table_field::<f32>(ecsdb_engine::storage::TableId(table), id, 0).unwrap();
    /// assert_eq!(hp.iter().copied().collect::<Vec<_>>(), [3.0]);
    /// assert!(world.table_field::<i32>(ecsdb_engine::storage::TableId(table), id, 0).is_none());
    /// ```
    pub fn table_field<T: FieldScalar>(
        &self,
        table: TableId,
        id: ComponentId,
        field: usize,
    ) -> Option<FieldColumn<'_, T>> {
        let offset = self.checked_field_offset::<T>(id, field)?;
        let column = self.storage.tables.get(table.index())?.column(id)?;
        // SAFETY: the column belongs to component `id` of this world, whose schema puts an
        // initialised `T` (checked: the field's type is `T::FIELD_TYPE`) at `offset` of every row.
        Some(unsafe { FieldColumn::new(column, offset) })
    }

    /// The heads of string field `field` of component `id` in every row of table `table` (each
    /// row's first seven bytes and length in one `u64`: see [`string_head`]), for scans that
    /// test short prefixes without reading the strings. The column keeps them after the first
    /// call and brings them up to date on each (re-reading only rows written or moved since),
    /// at eight bytes a row. `None` where [`World::table_field::<String>`] is `None`.
    ///
    /// ```
    /// use ecsdb_engine::storage::{string_head, TableId};
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Name { value: String }
    /// let mut world = World::new();
    /// let e = world.spawn(Name { value: "zig".into() });
    /// let (id, table) = (world.component_id("Name").unwrap(), TableId(world.location(e).unwrap().table));
    /// assert_eq!(world.table_string_heads(table, id, 0).unwrap().as_slice(), [string_head("zig")]);
    /// world.get_mut::<Name>(e).unwrap().value = "orc".into();
    /// assert_eq!(world.table_string_heads(table, id, 0).unwrap().as_slice(), [string_head("orc")]);
    /// ```
    pub fn table_string_heads(&self, table: TableId, id: ComponentId, field: usize) -> Option<StringHeads> {
        let strings = self.table_field::<String>(table, id, field)?;
        let column = self.storage.tables.get(table.index())?.column(id)?;
        let take_tick = || self.read_change_tick_wide();
        let mut views: Vec<&str> = Vec::new();
        let heads_of = |rows: &[u32], out: &mut [u64]| {
            // Two passes, each of loads that do not wait on one another, so that the cache
            // misses of scattered rows overlap: the rows' strings, then their bytes.
            views.clear();
            views.extend(rows.iter().map(|&r| strings.get(r as usize).map_or("", String::as_str)));
            for (o, s) in out.iter_mut().zip(&views) {
                *o = string_head(s);
            }
        };
        Some(column.string_heads(field, take_tick, heads_of))
    }

    /// Field `field` of sparse component `id` over the dense rows of its sparse set (row `i`
    /// belongs to `sparse_set(id).entities()[i]`; find an entity's row with
    /// [`SparseSet::row`](crate::storage::SparseSet::row)). `None` as for
    /// [`World::table_field`], or when no value was ever stored.
    pub fn sparse_field<T: FieldScalar>(&self, id: ComponentId, field: usize) -> Option<FieldColumn<'_, T>> {
        let offset = self.checked_field_offset::<T>(id, field)?;
        let set = self.sparse_set(id)?;
        // SAFETY: as in `table_field`, for the set's dense column.
        Some(unsafe { FieldColumn::new(set.column(), offset) })
    }
}

impl<'w> FieldView<'w> {
    /// The view of field `field` of component `id` where `place` stores it; [`FieldView::Missing`]
    /// when the component is unknown, opaque or not stored there, or the field does not exist.
    ///
    /// ```
    /// use ecsdb_engine::storage::{FieldPlace, FieldView, TableId};
    /// use ecsdb_engine::{Component, Value, World};
    /// #[derive(Component)] struct Health { hp: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 3.0, max: 10.0 });
    /// let table = TableId(world.location(e).unwrap().table);
    /// let hp = FieldView::new(&world, FieldPlace::Table(table), world.component_id("Health").unwrap(), 0);
    /// assert_eq!(hp.value(0), Ok(Value::Float(3.0)));
    /// assert_eq!(hp.value(1), Ok(Value::Null));
    /// ```
    pub fn new(world: &'w World, place: FieldPlace, id: ComponentId, field: usize) -> FieldView<'w> {
        fn col<'w, T: FieldScalar>(
            world: &'w World,
            place: FieldPlace,
            id: ComponentId,
            field: usize,
        ) -> Option<FieldColumn<'w, T>> {
            match place {
                FieldPlace::Table(t) => world.table_field::<T>(t, id, field),
                FieldPlace::Sparse => world.sparse_field::<T>(id, field),
            }
        }
        if id.index() >= world.components().len() {
            return FieldView::Missing;
        }
        let Some(ty) = world.components().info(id).fields().get(field).map(|f| f.ty) else { return FieldView::Missing };
        let (w, p, s, f) = (world, place, id, field);
        let view = match ty {
            FieldType::Bool => col(w, p, s, f).map(FieldView::Bool),
            FieldType::I8 => col(w, p, s, f).map(FieldView::I8),
            FieldType::I16 => col(w, p, s, f).map(FieldView::I16),
            FieldType::I32 => col(w, p, s, f).map(FieldView::I32),
            FieldType::I64 => col(w, p, s, f).map(FieldView::I64),
            FieldType::U8 => col(w, p, s, f).map(FieldView::U8),
            FieldType::U16 => col(w, p, s, f).map(FieldView::U16),
            FieldType::U32 => col(w, p, s, f).map(FieldView::U32),
            FieldType::U64 => col(w, p, s, f).map(FieldView::U64),
            FieldType::F32 => col(w, p, s, f).map(FieldView::F32),
            FieldType::F64 => col(w, p, s, f).map(FieldView::F64),
            FieldType::String => col(w, p, s, f).map(FieldView::Str),
            FieldType::Entity => col(w, p, s, f).map(FieldView::Entity),
            FieldType::Vec2 => col(w, p, s, f).map(FieldView::Vec2),
            FieldType::Vec3 => col(w, p, s, f).map(FieldView::Vec3),
        };
        view.unwrap_or(FieldView::Missing)
    }
}
