//! Copying rows of plain-data components from another world, byte for byte: how the live
//! publisher brings a read-only copy of a world up to date with the rows that changed.

use crate::component::ComponentId;
use crate::error::{EngineError, Result};
use crate::storage::{Column, FieldPlace};
use crate::world::World;

impl World {
    /// Copies the values of rows `start..end` of component `src_id` at `src_place` in `src`
    /// into the same rows of component `id` at `place` here, and stamps those rows' changed
    /// ticks (so indexes see the writes), when both components have the same layout (size,
    /// alignment, and the same fields at the same offsets) and hold no strings: one copy of
    /// bytes. Returns `Ok(false)` and writes nothing when the layouts differ; copy such rows
    /// field by field instead ([`FieldView::values_in`](crate::storage::FieldView::values_in)
    /// then [`World::write_fields_run`]).
    ///
    /// ```
    /// use ecsdb_engine::storage::{FieldPlace, TableId};
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32 }
    /// let (mut a, mut b) = (World::new(), World::new());
    /// let ea = a.spawn(Hp { v: 1.0 });
    /// let eb = b.spawn(Hp { v: 0.0 });
    /// let place = |w: &World, e| FieldPlace::Table(TableId(w.location(e).unwrap().table));
    /// let (from, to) = (place(&a, ea), place(&b, eb));
    /// a.get_mut::<Hp>(ea).unwrap().v = 7.0;
    /// let id = a.component_id("Hp").unwrap();
    /// assert!(b.copy_rows_from(&a, id, from, id, to, 0, 1).unwrap());
    /// assert_eq!(b.get::<Hp>(eb).unwrap().v, 7.0);
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn copy_rows_from(
        &mut self,
        src: &World,
        src_id: ComponentId,
        src_place: FieldPlace,
        id: ComponentId,
        place: FieldPlace,
        start: usize,
        end: usize,
    ) -> Result<bool> {
        fn known(w: &World, id: ComponentId) -> Option<&crate::component::ComponentInfo> {
            (id.index() < w.components.len()).then(|| w.components.info(id)).filter(|i| !i.is_opaque())
        }
        let (Some(from), Some(to)) = (known(src, src_id), known(self, id)) else {
            return Err(EngineError::Invalid("copying rows of an unknown or opaque component".into()));
        };
        let same_fields = from.fields().len() == to.fields().len()
            && from
                .fields()
                .iter()
                .zip(to.fields())
                .all(|(a, b)| a.name == b.name && a.ty == b.ty && a.offset == b.offset);
        if !same_fields || from.layout() != to.layout() || from.drop_fn().is_some() || to.drop_fn().is_some() {
            return Ok(false);
        }
        let src_column = column(src, src_id, src_place)
            .ok_or_else(|| EngineError::Invalid("the source does not store the component there".into()))?;
        let tick = self.write_tick();
        let column = column_mut(self, id, place)
            .ok_or_else(|| EngineError::Invalid("the destination does not store the component there".into()))?;
        if start > end || end > src_column.len() || end > column.len() {
            return Err(EngineError::Invalid("rows out of range".into()));
        }
        let size = column.item_size();
        // SAFETY: both columns hold values of one layout made of plain data (no drop function,
        // so no strings or other owners: a byte copy is a valid copy), rows `start..end` exist
        // in both (checked), and the columns are different allocations (two worlds: `src` is
        // borrowed shared while `self` is borrowed exclusively).
        unsafe {
            std::ptr::copy_nonoverlapping(
                src_column.data_ptr().add(start * size),
                column.data_ptr().add(start * size),
                (end - start) * size,
            );
        }
        column.fill_changed(start..end, tick);
        Ok(true)
    }
}

fn column(world: &World, id: ComponentId, place: FieldPlace) -> Option<&Column> {
    match place {
        FieldPlace::Table(t) => world.storage.tables.get(t.index())?.column(id),
        FieldPlace::Sparse => Some(world.storage.sparse.get(id.index())?.as_ref()?.column()),
    }
}

fn column_mut(world: &mut World, id: ComponentId, place: FieldPlace) -> Option<&mut Column> {
    match place {
        FieldPlace::Table(t) => world.storage.tables.get_mut(t.index())?.column_mut(id),
        FieldPlace::Sparse => Some(world.storage.sparse.get_mut(id.index())?.as_mut()?.column_mut()),
    }
}

#[cfg(test)]
mod tests {
    use crate::storage::{FieldPlace, TableId};
    use crate::{ComponentDef, FieldType, Value, World};

    #[test]
    fn plain_rows_copy_and_stamp_ticks_strings_and_other_layouts_refuse() {
        let def = ComponentDef::new("P", &[("x", FieldType::F32), ("n", FieldType::I64)]);
        let named = ComponentDef::new("S", &[("s", FieldType::String)]);
        let (mut a, mut b) = (World::new(), World::new());
        let (pa, sa) = (a.define_component(&def).unwrap(), a.define_component(&named).unwrap());
        let (pb, sb) = (b.define_component(&def).unwrap(), b.define_component(&named).unwrap());
        let row = |x: f64| [("x", Value::Float(x)), ("n", Value::Int(x as i64))];
        let spawn = |w: &mut World, x: f64| w.spawn_values(&[("P", &row(x)), ("S", &[])]).unwrap();
        let ea: Vec<_> = (0..4).map(|i| spawn(&mut a, i as f64)).collect();
        let eb: Vec<_> = (0..4).map(|_| spawn(&mut b, 0.0)).collect();
        let table = |w: &World, e| FieldPlace::Table(TableId(w.location(e).unwrap().table));
        let (ta, tb) = (table(&a, ea[0]), table(&b, eb[0]));
        let before = b.read_change_tick();
        assert!(b.copy_rows_from(&a, pa, ta, pb, tb, 1, 3).unwrap());
        let xs: Vec<Value> = eb.iter().map(|e| b.get_field(*e, "P", "n").unwrap()).collect();
        assert_eq!(xs, [0, 1, 2, 0].map(Value::Int));
        let col = b.tables()[b.location(eb[0]).unwrap().table as usize].column(pb).unwrap();
        let stamped: Vec<bool> = col.changed_ticks().iter().map(|t| *t > before).collect();
        assert_eq!(stamped, [false, true, true, false]);
        assert!(!b.copy_rows_from(&a, sa, ta, sb, tb, 0, 1).unwrap(), "strings are copied field by field");
        assert!(b.copy_rows_from(&a, pa, ta, pb, tb, 3, 5).is_err(), "past the end");
        assert!(b.copy_rows_from(&a, pa, FieldPlace::Sparse, pb, tb, 0, 1).is_err(), "not stored there");
    }
}
