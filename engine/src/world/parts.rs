//! A world assembled from its parts ([`World::from_parts`]): the one way code outside the
//! world (a snapshot load) makes a populated world, checked before it is handed out, so that
//! no loader writes the world's fields and a bug in one cannot leave a world whose tables,
//! entity locations and registry disagree (every unsafe read trusts them).

use crate::component::{ComponentId, Components, OpaqueSerdes, StorageKind};
use crate::entity::{Entities, Entity, EntityLocation};
use crate::error::{EngineError, Result};
use crate::par;
use crate::schedule_record::ScheduleRecord;
use crate::tick::Tick;
use crate::world::{Storage, World};

/// What a world is made of, filled in by a loader and turned into a world by
/// [`World::from_parts`].
pub(crate) struct WorldParts {
    /// The component registry.
    pub(crate) components: Components,
    /// Serde functions of opaque components.
    pub(crate) opaque_serde: OpaqueSerdes,
    /// Tables and sparse sets (make tables with [`Storage::table_for`]).
    pub(crate) storage: Storage,
    /// The entity allocator, every live entity placed at its row.
    pub(crate) entities: Entities,
    /// The systems and schedule clock.
    pub(crate) schedule: ScheduleRecord,
    /// The change counter to start from.
    pub(crate) tick: Tick,
    /// Whether every stored tick is `tick` (then there is nothing to clamp).
    pub(crate) all_at_tick: bool,
}

impl WorldParts {
    /// Parts of an empty world on this registry: the table of no components, no entities.
    pub(crate) fn new(components: Components, opaque_serde: OpaqueSerdes) -> WorldParts {
        let mut storage = Storage::default();
        storage.table_for(&[], &components);
        WorldParts {
            components,
            opaque_serde,
            storage,
            entities: Entities::default(),
            schedule: ScheduleRecord::default(),
            tick: 1,
            all_at_tick: true,
        }
    }

    /// Checks what the world's unsafe reads rely on: every table stores known components
    /// (sorted, distinct; table-stored unless the table is empty), one column per component
    /// of the component's item size and each as long as the table's entity list; every row's entity is alive and located
    /// at that row, and there are as many rows as live entities (so every live entity has
    /// one); every sparse set belongs to a known sparse component and holds live entities.
    fn check(&self) -> Result<()> {
        let broken = |msg: String| Err(EngineError::BrokenParts(msg));
        let known = |id: ComponentId| id.index() < self.components.len();
        let mut rows = 0usize;
        for (t, table) in self.storage.tables.iter().enumerate() {
            let ids = table.components();
            if table.id().index() != t {
                return broken(format!("table {t} carries the id {}", table.id().index()));
            }
            if !ids.windows(2).all(|w| w[0] < w[1]) {
                return broken(format!("table {t}: components not sorted and distinct"));
            }
            if self.storage.table_id_of(ids) != Some(table.id()) {
                return broken(format!("table {t}: not registered under its component set"));
            }
            if table.columns().len() != ids.len() {
                return broken(format!("table {t}: {} columns for {} components", table.columns().len(), ids.len()));
            }
            for (&id, column) in ids.iter().zip(table.columns()) {
                if !known(id) {
                    return broken(format!("table {t}: unknown component id {}", id.index()));
                }
                let info = self.components.info(id);
                // `SET STORAGE SPARSE` leaves the tables it emptied (table ids are never reused).
                if info.storage() != StorageKind::Table && !table.is_empty() {
                    return broken(format!("table {t}: component '{}' is not a table component", info.name()));
                }
                if column.item_size() != info.layout().size() {
                    return broken(format!("table {t}: the column of '{}' has the wrong item size", info.name()));
                }
                if column.len() != table.len() {
                    return broken(format!(
                        "table {t}: the column of '{}' has {} rows, the table {}",
                        info.name(),
                        column.len(),
                        table.len()
                    ));
                }
            }
            rows += table.len();
        }
        // Every row's entity is located at that row: the one check per row (a million rows
        // take milliseconds), in chunks on the pool's threads.
        const CHUNK: usize = 1 << 16;
        let chunks: Vec<(usize, usize, &[Entity])> = (self.storage.tables.iter().enumerate())
            .flat_map(|(t, table)| table.entities().chunks(CHUNK).enumerate().map(move |(c, es)| (t, c * CHUNK, es)))
            .collect();
        let misplaced = par::map(chunks, |(t, first, es)| {
            let at = |row: usize| Some(EntityLocation { table: t as u32, row: row as u32 });
            let (i, e) = es.iter().enumerate().find(|&(i, &e)| self.entities.location(e) != at(first + i))?;
            Some((t, first + i, *e))
        });
        if let Some((t, row, e)) = misplaced.into_iter().flatten().next() {
            return broken(format!("table {t} row {row}: entity {e} is not located there"));
        }
        if rows != self.entities.len() {
            return broken(format!("{} live entities but {rows} table rows", self.entities.len()));
        }
        for (i, set) in self.storage.sparse.iter().enumerate() {
            let Some(set) = set else { continue };
            if i >= self.components.len() {
                return broken(format!("a sparse set for unknown component id {i}"));
            }
            let info = self.components.info(ComponentId(i as u32));
            if info.storage() != StorageKind::Sparse {
                return broken(format!("a sparse set for table component '{}'", info.name()));
            }
            if set.column().len() != set.len() {
                return broken(format!("the sparse set of '{}' has values and entities apart", info.name()));
            }
            if let Some(e) = set.entities().iter().find(|e| !self.entities.contains(**e)) {
                return broken(format!("the sparse set of '{}' holds entity {e}, which is not alive", info.name()));
            }
        }
        Ok(())
    }
}

/// Parts that [`World::from_parts`] refused, with why; the parts come back so that a caller
/// that lent its registry can take it back.
pub(crate) struct RefusedParts {
    /// What is broken.
    pub(crate) error: EngineError,
    /// The parts, as given.
    pub(crate) parts: Box<WorldParts>,
}

impl World {
    /// The registry and opaque serde functions, moved out for a load to build on (the world
    /// is left with none until [`World::return_registry`] or a built world replaces it).
    pub(crate) fn lend_registry(&mut self) -> (Components, OpaqueSerdes) {
        (std::mem::take(&mut self.components), std::mem::take(&mut self.opaque_serde))
    }

    /// A copy of the registry and opaque serde functions, for a load that may extend them.
    pub(crate) fn copy_registry(&self) -> (Components, OpaqueSerdes) {
        (self.components.clone(), self.opaque_serde.clone())
    }

    /// Takes back what [`World::lend_registry`] lent.
    pub(crate) fn return_registry(&mut self, components: Components, opaque_serde: OpaqueSerdes) {
        self.components = components;
        self.opaque_serde = opaque_serde;
    }

    /// The world made of `parts`, once they are checked to agree (see `WorldParts::check`);
    /// refused parts come back with a [`EngineError::BrokenParts`] and nothing is built.
    pub(crate) fn from_parts(parts: WorldParts) -> std::result::Result<World, RefusedParts> {
        if let Err(error) = parts.check() {
            return Err(RefusedParts { error, parts: Box::new(parts) });
        }
        let WorldParts { components, opaque_serde, storage, entities, schedule, tick, all_at_tick } = parts;
        let mut world = World::new();
        world.components = components;
        world.opaque_serde = opaque_serde;
        world.storage = storage;
        world.entities = entities;
        world.schedule = schedule;
        world.set_change_tick(tick, all_at_tick);
        Ok(world)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::ComponentDef;
    use crate::entity::Entity;
    use crate::{FieldType, Value};

    /// Parts of a small world: `A {v}` in a table on two entities, `S {v}` sparse on one.
    fn parts() -> WorldParts {
        let mut w = World::new();
        w.define_component(&ComponentDef::new("A", &[("v", FieldType::I32)])).unwrap();
        w.define_component(&ComponentDef::new("S", &[("v", FieldType::I32)]).sparse()).unwrap();
        w.spawn_values(&[("A", &[("v", Value::Int(1))])]).unwrap();
        w.spawn_values(&[("A", &[("v", Value::Int(2))]), ("S", &[("v", Value::Int(3))])]).unwrap();
        WorldParts {
            components: std::mem::take(&mut w.components),
            opaque_serde: OpaqueSerdes::default(),
            storage: std::mem::take(&mut w.storage),
            entities: std::mem::take(&mut w.entities),
            schedule: ScheduleRecord::default(),
            tick: 5,
            all_at_tick: false,
        }
    }

    fn refused(p: WorldParts) -> String {
        match World::from_parts(p) {
            Ok(_) => panic!("broken parts were accepted"),
            Err(RefusedParts { error: EngineError::BrokenParts(msg), .. }) => msg,
            Err(RefusedParts { error, .. }) => panic!("not a BrokenParts error: {error}"),
        }
    }

    fn table_of_a(p: &WorldParts) -> usize {
        p.storage.tables.iter().position(|t| t.len() == 2).expect("A's table")
    }

    #[test]
    fn whole_parts_make_a_world() {
        let w = World::from_parts(parts()).ok().expect("whole parts");
        assert_eq!(w.len(), 2);
        let e = Entity::from_parts(1, 0);
        assert_eq!(w.get_field(e, "S", "v").unwrap(), Value::Int(3));
        assert_eq!(w.get_field(e, "A", "v").unwrap(), Value::Int(2));
    }

    #[test]
    fn an_entity_located_elsewhere_is_refused() {
        let mut p = parts();
        let t = table_of_a(&p);
        p.entities.set_location(0, EntityLocation { table: t as u32, row: 1 });
        assert!(refused(p).contains("is not located there"));
    }

    #[test]
    fn a_live_entity_without_a_row_is_refused() {
        let mut p = parts();
        p.entities.alloc();
        assert!(refused(p).contains("live entities but"));
    }

    #[test]
    fn columns_of_unequal_length_are_refused() {
        let mut p = parts();
        let t = table_of_a(&p);
        let (entities, _) = p.storage.tables[t].parts_mut();
        entities.pop();
        assert!(refused(p).contains("rows, the table"));
    }

    #[test]
    fn a_component_missing_from_the_registry_is_refused() {
        let mut p = parts();
        p.components = Components::default();
        let msg = refused(p);
        assert!(msg.contains("unknown component"), "{msg}");
    }

    #[test]
    fn a_sparse_set_under_a_table_component_is_refused() {
        let mut p = parts();
        // S's set (id 1) moved to A's place (id 0), a table component.
        p.storage.sparse.swap(0, 1);
        assert!(refused(p).contains("table component 'A'"));
    }
}
