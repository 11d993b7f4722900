//! `ALTER COMPONENT … SET STORAGE`: a run-time component's values moved between the archetype
//! tables and a sparse set on a live world.
//!
//! Each value moves bit for bit with its added and changed ticks, so change detection sees
//! no write, and indexes (kept by entity) keep their entries. Entities move between tables
//! as they would by adding or removing the component, but the tables themselves are never
//! restructured: prepared queries keep pointing at columns that exist. A table emptied by
//! `SET STORAGE SPARSE` stays, empty, under its component set (table ids are never reused);
//! `SET STORAGE TABLE` fills it again.

use std::collections::HashMap;

use crate::component::{ComponentId, StorageKind};
use crate::entity::EntityLocation;
use crate::error::Result;
use crate::storage::{SparseSet, TableId};
use crate::world::World;

impl World {
    /// Moves every value of run-time component `id` into storage `to` (nothing to do when it
    /// is there already) and records the new kind in the registry. Refused, with nothing
    /// changed, for a component of a Rust type (its accessors are compiled for its storage).
    pub(crate) fn move_storage(&mut self, id: ComponentId, to: StorageKind) -> Result<()> {
        if self.components.info(id).storage() == to {
            return Ok(());
        }
        // Pending writes reach the indexes first, from where they were made: the moves
        // below keep every value's ticks, and a moved row is no write.
        self.refresh_indexes();
        self.components.set_storage(id, to)?;
        match to {
            StorageKind::Sparse => self.tables_to_sparse(id),
            StorageKind::Table => self.sparse_to_tables(id),
        }
        // Edges cached for Rust bundles may lead to tables emptied here.
        for t in self.storage.tables.iter_mut() {
            t.clear_edges();
        }
        Ok(())
    }

    /// Every row of a table holding `id` moves to the table without it; the values go to a
    /// new sparse set, in table order.
    fn tables_to_sparse(&mut self, id: ComponentId) {
        let holding: Vec<TableId> =
            self.storage.tables.iter().filter(|t| t.has(id) && !t.is_empty()).map(|t| t.id()).collect();
        let mut set = SparseSet::new(self.components.info(id));
        set.reserve(holding.iter().map(|t| self.storage.tables[t.index()].len()).sum());
        for from in holding {
            let others: Vec<ComponentId> =
                self.storage.tables[from.index()].components().iter().copied().filter(|&c| c != id).collect();
            let dst = self.storage.table_for(&others, &self.components);
            let (src, to) = self.storage.two_tables(from, dst);
            to.reserve(src.len());
            // From the last row, so that no row is swapped into a hole.
            while let Some(row) = src.len().checked_sub(1) {
                let e = src.entities()[row];
                let (new_row, swapped) = set.push_with(e, |dense| src.move_row_aside(row, to, id, dense));
                debug_assert!(swapped.is_none());
                self.entities.set_location(e.index(), EntityLocation { table: dst.0, row: new_row as u32 });
            }
        }
        let i = id.index();
        if self.storage.sparse.len() <= i {
            self.storage.sparse.resize_with(i + 1, || None);
        }
        self.storage.sparse[i] = Some(set);
    }

    /// Every entity of `id`'s sparse set moves to the table of its components plus `id`, with
    /// its value.
    fn sparse_to_tables(&mut self, id: ComponentId) {
        let Some(mut set) = self.storage.sparse.get_mut(id.index()).and_then(Option::take) else { return };
        // The table each source table's entities go to, found once per source table.
        let mut target: HashMap<TableId, TableId> = HashMap::new();
        while let Some(&e) = set.entities().last() {
            let loc = self.entities.location(e).expect("a sparse set holds live entities");
            let from = TableId(loc.table);
            let dst = *target.entry(from).or_insert_with(|| {
                let mut with: Vec<ComponentId> = self.storage.tables[from.index()].components().to_vec();
                let at = with.binary_search(&id).unwrap_err();
                with.insert(at, id);
                self.storage.table_for(&with, &self.components)
            });
            let (src, to) = self.storage.two_tables(from, dst);
            let (new_row, swapped) = src.move_row(loc.row as usize, to);
            set.pop_into(to.column_mut(id).expect("the target table holds the component"));
            if let Some(s) = swapped {
                self.entities.set_location(s.index(), loc);
            }
            self.entities.set_location(e.index(), EntityLocation { table: dst.0, row: new_row as u32 });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::index::{IndexDef, IndexKind, IndexPredicate};
    use crate::tick::Tick;
    use crate::world::ComponentChange;
    use crate::{
        ComponentDef, ComponentId, Entity, FieldType, OnDelete, ReferenceDef, SaveOptions, StorageKind, Value, World,
    };

    /// `Burning (t f32, by entity, note string)` on every other of 12 entities, spread over
    /// three tables (`Pos`, `Pos + Tag`, nothing else), a btree and a bitmap on its fields,
    /// and a reference through `by`.
    fn world() -> (World, Vec<Entity>) {
        let mut w = World::new();
        w.define_component(&ComponentDef::new("Pos", &[("x", FieldType::F32)])).unwrap();
        w.define_component(&ComponentDef::new("Tag", &[])).unwrap();
        let burning = [("t", FieldType::F32), ("by", FieldType::Entity), ("note", FieldType::String)];
        w.define_component(&ComponentDef::new("Burning", &burning)).unwrap();
        w.declare_reference(&ReferenceDef::new("Burning", "by", OnDelete::SetNull, false)).unwrap();
        let mut es = Vec::new();
        for i in 0..12 {
            let pos = [("x", Value::Float(i as f64))];
            let e = match i % 3 {
                0 => w.spawn_values(&[("Pos", &pos)]).unwrap(),
                1 => w.spawn_values(&[("Pos", &pos), ("Tag", &[])]).unwrap(),
                _ => w.spawn_values(&[]).unwrap(),
            };
            es.push(e);
        }
        for (i, &e) in es.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
            let fields = [
                ("t", Value::Float(i as f64 / 2.0)),
                ("by", Value::Entity(es[11])),
                ("note", Value::Str(format!("burning since tick {i}, a note longer than a small string"))),
            ];
            w.insert_values(e, &[("Burning", &fields)]).unwrap();
        }
        w.create_index(IndexDef::new("Burning", &["t"], IndexKind::Btree)).unwrap();
        w.create_index(IndexDef::new("Burning", &["by"], IndexKind::Bitmap)).unwrap();
        (w, es)
    }

    fn burning(w: &World) -> ComponentId {
        w.component_id("Burning").unwrap()
    }

    /// Each entity's `Burning` value, or `None`.
    fn values(w: &World, es: &[Entity]) -> Vec<Option<Value>> {
        es.iter()
            .map(|&e| w.has_component(e, burning(w)).unwrap().then(|| w.get_component_value(e, burning(w)).unwrap()))
            .collect()
    }

    /// Each holder's (added, changed) ticks.
    fn ticks(w: &World, es: &[Entity]) -> Vec<Option<(Tick, Tick)>> {
        let id = burning(w);
        es.iter()
            .map(|&e| match w.components().info(id).storage() {
                StorageKind::Sparse => w.sparse_set(id).and_then(|s| Some((s.added_tick(e)?, s.changed_tick(e)?))),
                StorageKind::Table => {
                    let loc = w.location(e).unwrap();
                    w.tables()[loc.table as usize].column(id).map(|c| c.row_ticks(loc.row as usize))
                }
            })
            .collect()
    }

    fn answer(w: &World, index: &str, pred: IndexPredicate) -> Vec<u32> {
        let mut rows = w.index_answer(index, &pred).unwrap().unwrap().into_vec(None);
        rows.sort();
        rows
    }

    fn set_storage(w: &mut World, kind: StorageKind) {
        drop(w.alter_component(burning(w), &ComponentChange::SetStorage(kind)).unwrap());
    }

    #[test]
    fn values_ticks_and_index_answers_survive_a_move_each_way() {
        let (mut w, es) = world();
        let (before, ticks_before) = (values(&w, &es), ticks(&w, &es));
        let hot = answer(&w, "Burning_t_btree", IndexPredicate::Eq(Value::Float(2.0)));
        for kind in [StorageKind::Sparse, StorageKind::Table, StorageKind::Sparse] {
            let version = w.components().layout_version();
            set_storage(&mut w, kind);
            assert_eq!(w.components().info(burning(&w)).storage(), kind);
            assert_ne!(w.components().layout_version(), version, "prepared plans see the change");
            assert_eq!(values(&w, &es), before, "after moving to {kind}");
            assert_eq!(ticks(&w, &es), ticks_before, "a move is not a write");
            assert_eq!(answer(&w, "Burning_t_btree", IndexPredicate::Eq(Value::Float(2.0))), hot);
            assert_eq!(w.component_count(burning(&w)), 6);
            // The other components stay where they were.
            for (i, &e) in es.iter().enumerate() {
                assert_eq!(w.get_field(e, "Pos", "x").ok(), (i % 3 != 2).then_some(Value::Float(i as f64)));
            }
        }
        assert_eq!(w.sparse_set(burning(&w)).map(|s| s.len()), Some(6));
        assert!(w.tables().iter().all(|t| !t.has(burning(&w)) || t.is_empty()), "no table holds a row of it");
    }

    #[test]
    fn writes_after_a_move_reach_the_values_the_indexes_and_the_references() {
        let (mut w, es) = world();
        for kind in [StorageKind::Sparse, StorageKind::Table] {
            set_storage(&mut w, kind);
            let (a, b) = (es[1], es[3]);
            w.insert_values(a, &[("Burning", &[("t", Value::Float(40.0)), ("by", Value::Entity(es[10]))])]).unwrap();
            w.set_fields(es[0], "Burning", &[("t", Value::Float(40.0))]).unwrap();
            assert_eq!(answer(&w, "Burning_t_btree", IndexPredicate::Eq(Value::Float(40.0))), {
                let mut v = vec![es[0].index(), a.index()];
                v.sort();
                v
            });
            assert_eq!(answer(&w, "Burning_by_bitmap", IndexPredicate::Eq(Value::Entity(es[10]))), vec![a.index()]);
            assert!(w.remove_component(a, "Burning").unwrap());
            assert!(!w.remove_component(b, "Burning").unwrap());
            assert_eq!(answer(&w, "Burning_t_btree", IndexPredicate::Eq(Value::Float(40.0))), vec![es[0].index()]);
            w.set_fields(es[0], "Burning", &[("t", Value::Float(0.0))]).unwrap();
        }
        // The reference still follows its target's despawn.
        w.despawn(es[11]).unwrap();
        assert_eq!(w.get_field(es[0], "Burning", "by").unwrap(), Value::Null);
        assert_eq!(w.get_field(es[4], "Burning", "by").unwrap(), Value::Null);
    }

    #[test]
    fn undo_moves_the_values_back_and_a_rust_type_keeps_its_storage() {
        let (mut w, es) = world();
        let before = values(&w, &es);
        let altered = w.alter_component(burning(&w), &ComponentChange::SetStorage(StorageKind::Sparse)).unwrap();
        w.undo_alter(altered);
        assert_eq!(w.components().info(burning(&w)).storage(), StorageKind::Table);
        assert!(w.sparse_set(burning(&w)).is_none_or(|s| s.is_empty()));
        assert_eq!(values(&w, &es), before);
        // Already there: nothing moves.
        set_storage(&mut w, StorageKind::Table);
        assert_eq!(values(&w, &es), before);

        #[derive(crate::Component, Clone, Copy)]
        struct Speed {
            v: f32,
        }
        let id = w.register::<Speed>().unwrap();
        let e = w.alter_component(id, &ComponentChange::SetStorage(StorageKind::Sparse)).err().unwrap();
        assert!(e.to_string().contains("Rust type"), "{e}");
    }

    #[test]
    fn a_world_saved_after_a_move_loads_with_the_storage_and_without_the_emptied_tables() {
        let (mut w, es) = world();
        set_storage(&mut w, StorageKind::Sparse);
        let before = values(&w, &es);
        let bytes = w.save_to_vec(&SaveOptions::default()).unwrap();
        let mut loaded = World::load_from_bytes(&bytes).unwrap();
        assert_eq!(loaded.components().info(burning(&loaded)).storage(), StorageKind::Sparse);
        assert_eq!(values(&loaded, &es), before);
        assert!(loaded.tables().iter().all(|t| !t.has(burning(&loaded))));
        set_storage(&mut loaded, StorageKind::Table);
        assert_eq!(values(&loaded, &es), before);
        let again = World::load_from_bytes(&loaded.save_to_vec(&SaveOptions::default()).unwrap()).unwrap();
        assert_eq!(again.components().info(burning(&again)).storage(), StorageKind::Table);
        assert_eq!(values(&again, &es), before);
    }
}
