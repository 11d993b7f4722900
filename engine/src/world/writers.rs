//! Write access to one component's columns apart from the rest of the world.
//!
//! A [`ComponentWriter`] holds the component's column in every table that stores it (or its
//! sparse set) and nothing else, so writers of different components borrow disjoint parts
//! of the world and may write on different threads at once: the scheduler applies a batch's
//! UPDATEs, which write distinct components, side by side. The columnar writes of
//! [`World::write_fields_run`] and [`World::write_field_rows`] go through a writer too.

use crate::component::{ComponentId, ComponentInfo, StorageKind};
use crate::error::{EngineError, Result};
use crate::storage::TypedFieldValues;
use crate::storage::{Column, SparseSet, TableId};
use crate::tick::Tick;
use crate::world::World;
use crate::world::columnar::{FieldRows, ValuesLeft, write_run, write_values};

/// Columnar writes to one component, made by [`World::component_writers`]: every table's
/// column of the component (or its sparse set) and the write's tick, borrowed from the world
/// apart from everything else.
///
/// ```
/// use ecsdb_engine::{Component, FieldRows, TypedFieldValues, World};
/// #[derive(Component)] struct A { v: f32 }
/// #[derive(Component)] struct B { v: f32 }
/// let mut world = World::new();
/// let e = world.spawn((A { v: 1.0 }, B { v: 2.0 }));
/// let table = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
/// let ids = [world.component_id("A").unwrap(), world.component_id("B").unwrap()];
/// let mut writers = world.component_writers(&ids).unwrap();
/// // Each writer may move to its own thread: they share no column.
/// std::thread::scope(|s| {
///     for (w, v) in writers.iter_mut().zip([10.0, 20.0]) {
///         s.spawn(move || w.write_field_rows(0, FieldRows::Table(table, &[0]), TypedFieldValues::F32(vec![v])));
///     }
/// });
/// assert_eq!((world.get::<A>(e).unwrap().v, world.get::<B>(e).unwrap().v), (10.0, 20.0));
/// ```
pub struct ComponentWriter<'w> {
    id: ComponentId,
    info: &'w ComponentInfo,
    tick: Tick,
    /// The component's column in each table that stores it, in table order.
    tables: Vec<(TableId, &'w mut Column)>,
    /// Its sparse set, for a sparse component that holds values.
    sparse: Option<&'w mut SparseSet>,
}

impl World {
    /// A writer for each of `ids`, which must be distinct known components. The writers
    /// borrow only those components' columns, so they may be used on different threads at
    /// once; each write stamps this write's tick, as any other write does.
    pub fn component_writers(&mut self, ids: &[ComponentId]) -> Result<Vec<ComponentWriter<'_>>> {
        for (i, id) in ids.iter().enumerate() {
            if id.index() >= self.components.len() {
                return Err(EngineError::Invalid(format!("unknown component id {}", id.index())));
            }
            if ids[..i].contains(id) {
                let name = self.components.info(*id).name();
                return Err(EngineError::Invalid(format!("component '{name}' has two writers")));
            }
        }
        let tick = self.write_tick();
        let (components, storage) = (&self.components, &mut self.storage);
        let mut writers: Vec<ComponentWriter<'_>> = ids
            .iter()
            .map(|&id| ComponentWriter { id, info: components.info(id), tick, tables: Vec::new(), sparse: None })
            .collect();
        for table in storage.tables.iter_mut() {
            let id = table.id();
            let (held, columns) = table.components_and_columns_mut();
            for (c, column) in held.iter().zip(columns) {
                if let Some(w) = writers.iter_mut().find(|w| w.id == *c) {
                    w.tables.push((id, column));
                }
            }
        }
        for (i, set) in storage.sparse.iter_mut().enumerate() {
            if let (Some(set), Some(w)) = (set, writers.iter_mut().find(|w| w.id.index() == i)) {
                w.sparse = Some(set);
            }
        }
        Ok(writers)
    }

    /// The writer of one component (see [`World::component_writers`]).
    pub fn component_writer(&mut self, id: ComponentId) -> Result<ComponentWriter<'_>> {
        self.component_writers(&[id])?.pop().ok_or_else(|| EngineError::Invalid("no writer made".into()))
    }
}

impl ComponentWriter<'_> {
    /// The component written.
    pub fn component(&self) -> ComponentId {
        self.id
    }

    /// Writes several fields over the consecutive rows `start..end` of `table`, one value
    /// per row in each field's values, and gives the emptied vectors back; see
    /// [`World::write_fields_run`].
    pub fn write_fields_run(
        &mut self,
        table: TableId,
        start: u32,
        end: u32,
        fields: Vec<(usize, TypedFieldValues)>,
    ) -> Result<Vec<TypedFieldValues>> {
        let mut offsets = Vec::with_capacity(fields.len());
        for (field, values) in &fields {
            offsets.push(self.field_offset_for(*field, values)?);
        }
        if self.info.storage() != StorageKind::Table {
            return Err(EngineError::Invalid("the component is not stored that way".into()));
        }
        let tick = self.tick;
        let column = self.table_column(table)?;
        let (start, end) = (start as usize, end as usize);
        if start > end || end > column.len() || fields.iter().any(|(_, v)| v.len() != end - start) {
            return Err(EngineError::Invalid("rows and values do not match the column".into()));
        }
        let mut values: Vec<ValuesLeft> = fields.into_iter().map(|(_, v)| ValuesLeft::new(v)).collect();
        // SAFETY: each field's type is its values' and `offsets` are the fields' (checked
        // above); rows `start..end` are in range and each field has `end - start` values
        // (checked just now).
        unsafe { write_run(column, &offsets, &mut values, start, end) };
        column.fill_changed(start..end, tick);
        Ok(values.into_iter().map(ValuesLeft::into_spent).collect())
    }

    /// Writes new values for field `field` into many rows; see [`World::write_field_rows`].
    pub fn write_field_rows(&mut self, field: usize, at: FieldRows<'_>, values: TypedFieldValues) -> Result<()> {
        let offset = self.field_offset_for(field, &values)?;
        let tick = self.tick;
        let mismatch = || EngineError::Invalid("rows and values do not match the column".into());
        let (column, rows): (&mut Column, std::borrow::Cow<'_, [u32]>) = match (at, self.info.storage()) {
            (FieldRows::TableRun { table, start, end }, StorageKind::Table) => {
                let column = self.table_column(table)?;
                let (start, end) = (start as usize, end as usize);
                if start > end || end > column.len() || end - start != values.len() {
                    return Err(mismatch());
                }
                // SAFETY: the field's schema type is `values`' type (checked above), `offset` is
                // the field's, rows `start..end` are in range and there are `end - start`
                // values (checked just now).
                unsafe { write_run(column, &[offset], &mut [ValuesLeft::new(values)], start, end) };
                column.fill_changed(start..end, tick);
                return Ok(());
            }
            (FieldRows::Table(table, rows), StorageKind::Table) => {
                (self.table_column(table)?, std::borrow::Cow::Borrowed(rows))
            }
            (FieldRows::Sparse(entities), StorageKind::Sparse) => {
                let set = self
                    .sparse
                    .as_deref_mut()
                    .ok_or_else(|| EngineError::Invalid("no value of this sparse component is stored".into()))?;
                let mut rows = Vec::with_capacity(entities.len());
                for e in entities {
                    match set.row(*e) {
                        Some(row) => rows.push(row as u32),
                        None => return Err(EngineError::StaleEntity(*e)),
                    }
                }
                (set.column_mut(), std::borrow::Cow::Owned(rows))
            }
            _ => return Err(EngineError::Invalid("the component is not stored that way".into())),
        };
        let len = column.len();
        // A fold, not `any`: no early exit, so the check vectorises.
        if rows.len() != values.len() || rows.iter().fold(false, |out, &r| out | (r as usize >= len)) {
            return Err(mismatch());
        }
        // SAFETY: as above, with every row of `rows` in range (checked just now).
        unsafe { write_values(column, offset, &rows, values) };
        column.stamp_changed(&rows, tick);
        Ok(())
    }

    /// The offset of field `field`, after checking that `values` may be written into it (not
    /// opaque, the field's type).
    fn field_offset_for(&self, field: usize, values: &TypedFieldValues) -> Result<usize> {
        let info = self.info;
        let Some(f) = info.fields().get(field).filter(|_| !info.is_opaque()) else {
            return Err(EngineError::Invalid(format!("component '{}' has no field {field}", info.name())));
        };
        if f.ty != values.field_type() {
            return Err(EngineError::Invalid(format!(
                "field '{}.{}' has type {}, not {}",
                info.name(),
                f.name,
                f.ty.name(),
                values.field_type().name()
            )));
        }
        Ok(f.offset)
    }

    /// The component's column in `table`.
    fn table_column(&mut self, table: TableId) -> Result<&mut Column> {
        match self.tables.binary_search_by_key(&table, |(t, _)| *t) {
            Ok(i) => Ok(&mut *self.tables[i].1),
            Err(_) => Err(EngineError::Invalid(format!("table {} does not store this component", table.index()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ComponentDef, FieldType, Value};

    /// Writers of two components write on two threads at once into the same tables; a
    /// sparse component's writer reaches its set; each write stamps the tick.
    #[test]
    fn writers_of_distinct_components_write_side_by_side() {
        let mut world = World::new();
        let a = world.define_component(&ComponentDef::new("A", &[("v", FieldType::F32)])).unwrap();
        let b = world.define_component(&ComponentDef::new("B", &[("s", FieldType::String)])).unwrap();
        let c = world.define_component(&ComponentDef::new("C", &[("n", FieldType::I64)]).sparse()).unwrap();
        let mut entities = Vec::new();
        for i in 0..4 {
            let e = world
                .spawn_values(&[
                    ("A", &[("v", Value::Float(i as f64))]),
                    ("B", &[("s", Value::Str(format!("b{i}")))]),
                    ("C", &[("n", Value::Int(i))]),
                ])
                .unwrap();
            entities.push(e);
        }
        let table = TableId(world.location(entities[0]).unwrap().table);
        world.advance_change_tick(5);
        let tick = world.change_tick();
        let mut writers = world.component_writers(&[a, b, c]).unwrap();
        let (wc, rest) = writers.split_last_mut().unwrap();
        let (wa, wb) = rest.split_at_mut(1);
        let (wa, wb) = (&mut wa[0], &mut wb[0]);
        std::thread::scope(|s| {
            s.spawn(|| wa.write_fields_run(table, 1, 3, vec![(0, TypedFieldValues::F32(vec![10.0, 20.0]))]).unwrap());
            s.spawn(|| {
                let names = TypedFieldValues::Str(vec!["x".into(), "y".into()]);
                wb.write_field_rows(0, FieldRows::Table(table, &[3, 0]), names).unwrap()
            });
        });
        wc.write_field_rows(0, FieldRows::Sparse(&entities[2..3]), TypedFieldValues::I64(vec![99])).unwrap();
        let read = |w: &World, c: &str, f: &str, e| w.get_field(e, c, f).unwrap();
        assert_eq!(read(&world, "A", "v", entities[1]), Value::Float(10.0));
        assert_eq!(read(&world, "A", "v", entities[2]), Value::Float(20.0));
        assert_eq!(read(&world, "A", "v", entities[3]), Value::Float(3.0));
        assert_eq!(read(&world, "B", "s", entities[0]), Value::Str("y".into()));
        assert_eq!(read(&world, "B", "s", entities[3]), Value::Str("x".into()));
        assert_eq!(read(&world, "C", "n", entities[2]), Value::Int(99));
        // Rows written carry the writers' tick; the others kept theirs.
        let ticks = world.tables()[table.index()].column(a).unwrap().changed_ticks().to_vec();
        assert_eq!(ticks[1..3], [tick, tick]);
        assert!(ticks[0] < tick && ticks[3] < tick, "{ticks:?} {tick}");
    }

    #[test]
    fn writers_refuse_what_they_cannot_write() {
        let mut world = World::new();
        let a = world.define_component(&ComponentDef::new("A", &[("v", FieldType::F32)])).unwrap();
        let b = world.define_component(&ComponentDef::new("B", &[("v", FieldType::F32)])).unwrap();
        let e = world.spawn_values(&[("A", &[("v", Value::Float(1.0))])]).unwrap();
        let table = TableId(world.location(e).unwrap().table);
        assert!(world.component_writers(&[a, a]).is_err(), "two writers of one component");
        assert!(world.component_writers(&[ComponentId(99)]).is_err(), "an unknown component");
        let mut w = world.component_writer(b).unwrap();
        let one = || TypedFieldValues::F32(vec![2.0]);
        assert!(w.write_field_rows(0, FieldRows::Table(table, &[0]), one()).is_err(), "a table without B");
        let mut w = world.component_writer(a).unwrap();
        assert!(w.write_field_rows(0, FieldRows::Table(table, &[1]), one()).is_err(), "a row past the end");
        assert!(w.write_field_rows(0, FieldRows::Table(table, &[0]), TypedFieldValues::I64(vec![2])).is_err());
        assert!(w.write_fields_run(table, 0, 1, vec![(1, one())]).is_err(), "no field 1");
        assert_eq!(world.get_field(e, "A", "v").unwrap(), Value::Float(1.0));
    }
}
