//! `ALTER COMPONENT` on a live world: a run-time component's fields added, dropped or
//! renamed, or the component renamed, with its values, indexes and references following.
//!
//! A change is applied at once and held as an [`AlteredComponent`] until its caller lets it
//! stand (drops it) or takes it back ([`World::undo_alter`]): the query layer applies a change,
//! binds every stored system against the new catalog, and takes the change back if one no
//! longer binds. Until then the old values are kept beside the new ones, so taking a change
//! back loses nothing.

use crate::component::{ComponentId, ComponentInfo, FieldInfo, FieldMove, FieldType, FieldValue, StorageKind};
use crate::error::{EngineError, Result};
use crate::reference::References;
use crate::storage::Column;
use crate::storage::TableId;
use crate::value::{Value, convert_value};
use crate::world::World;
use crate::world::indexes::SavedIndexes;

/// One change to a run-time component (`ALTER COMPONENT` and `RENAME COMPONENT` in the
/// language).
#[derive(Clone, Debug, PartialEq)]
pub enum ComponentChange {
    /// A new last field; stored values take `default`, or the type's zero, and so do new
    /// values that leave it out.
    AddField {
        /// Its name.
        name: String,
        /// Its type.
        ty: FieldType,
        /// Its default.
        default: Option<Value>,
    },
    /// A field removed with its values. Refused while an index or a reference reads it.
    DropField(String),
    /// A field renamed; its values stay, and so do the indexes on it (under their names).
    RenameField {
        /// The name it has.
        from: String,
        /// The name it gets.
        to: String,
    },
    /// The component renamed; its values stay.
    Rename(String),
    /// The component's values moved to the archetype tables or to a sparse set (see
    /// [`StorageKind`]), with their change ticks; indexes, references and queries keep
    /// working.
    SetStorage(StorageKind),
    /// A field given another type. Its values become the new type's zero (or its default,
    /// where the old default converts): the caller writes the converted values after, as
    /// `ALTER FIELD … TYPE … [USING expr]` does. Refused while an index or a reference
    /// reads it.
    RetypeField {
        /// The field.
        name: String,
        /// Its new type.
        ty: FieldType,
    },
}

/// A change applied to the world but not final: dropping it lets it stand, and
/// [`World::undo_alter`] takes it back.
#[must_use = "dropping an AlteredComponent lets the change stand; World::undo_alter takes it back"]
pub struct AlteredComponent {
    component: ComponentId,
    /// The component's description before the change.
    old_info: ComponentInfo,
    /// The values before the change, by table and column position (empty when they did
    /// not move).
    old_columns: Vec<(TableId, usize, Column)>,
    old_sparse: Option<Column>,
    /// How the kept fields moved (the old columns' kept strings are the new ones').
    moves: Vec<FieldMove>,
    old_references: References,
    old_indexes: SavedIndexes,
}

impl AlteredComponent {
    /// The component changed.
    pub fn component(&self) -> ComponentId {
        self.component
    }
}

impl World {
    /// Applies `change` to the run-time component `id`: its values move to the new layout at
    /// once (the added field taking its default), and its indexes and references follow. A
    /// component of a Rust type is changed by changing the type. Refused, with nothing
    /// changed, when an index or a reference reads a field that is dropped or retyped, or a
    /// function index (which may read any field by name) is on a component whose field is
    /// dropped, renamed or retyped. Returns the applied change, which [`World::undo_alter`]
    /// can take back.
    ///
    /// ```
    /// use ecsdb_engine::{ComponentChange, ComponentDef, FieldType, Value, World};
    /// let mut world = World::new();
    /// let hp = world.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F32)])).unwrap();
    /// let e = world.spawn_values(&[("Health", &[("hp", Value::Float(5.0))])]).unwrap();
    /// let add = ComponentChange::AddField { name: "max".into(), ty: FieldType::F32, default: Some(Value::Int(100)) };
    /// drop(world.alter_component(hp, &add).unwrap()); // dropped: the change stands
    /// assert_eq!(world.get_field(e, "Health", "max").unwrap(), Value::Float(100.0));
    /// assert_eq!(world.get_field(e, "Health", "hp").unwrap(), Value::Float(5.0));
    /// ```
    pub fn alter_component(&mut self, id: ComponentId, change: &ComponentChange) -> Result<AlteredComponent> {
        let info = self.components.info(id).clone();
        let name = info.name().to_string();
        let field_index = |field: &str| {
            info.field_index(field)
                .ok_or_else(|| EngineError::UnknownField { component: name.clone(), field: field.to_string() })
        };
        let mut fields: Vec<(String, FieldType)> = info.fields().iter().map(|f| (f.name.clone(), f.ty)).collect();
        let mut kept: Vec<Option<usize>> = (0..fields.len()).map(Some).collect();
        let mut defaults: Vec<Option<FieldValue>> = (0..fields.len()).map(|i| info.field_default(i).cloned()).collect();
        match change {
            ComponentChange::AddField { name: field, ty, default } => {
                let default = match default {
                    Some(v) => {
                        let at = FieldInfo { name: field.clone(), ty: *ty, offset: 0 };
                        Some(convert_value(&name, &at, v)?)
                    }
                    None => None,
                };
                fields.push((field.clone(), *ty));
                kept.push(None);
                defaults.push(default);
            }
            ComponentChange::DropField(field) => {
                let i = field_index(field)?;
                self.refuse_dependents(id, i, "drop", true)?;
                fields.remove(i);
                kept.remove(i);
                defaults.remove(i);
            }
            ComponentChange::RenameField { from, to } => {
                let i = field_index(from)?;
                self.refuse_dependents(id, i, "rename", false)?;
                fields[i].0 = to.clone();
            }
            ComponentChange::RetypeField { name: field, ty } => {
                let i = field_index(field)?;
                self.refuse_dependents(id, i, "change the type of", true)?;
                // The old default carries over where it is a value of the new type.
                let at = FieldInfo { name: field.clone(), ty: *ty, offset: 0 };
                let default = self
                    .field_default(id, field)
                    .ok()
                    .flatten()
                    .and_then(|v| convert_value(&name, &at, &v).ok())
                    .filter(|_| ty.holds_every(fields[i].1));
                fields[i].1 = *ty;
                kept[i] = None;
                defaults[i] = default;
            }
            ComponentChange::SetStorage(to) => {
                self.move_storage(id, *to)?;
                return Ok(self.unmoved_change(id, info));
            }
            ComponentChange::Rename(to) => {
                self.components.rename(id, to)?;
                return Ok(self.unmoved_change(id, info));
            }
        }
        let relayout = self.components.redefine(id, &fields, &kept, defaults)?;
        let new_info = self.components.info(id).clone();
        let mut old_columns = Vec::new();
        let mut old_sparse = None;
        if !relayout.same_layout {
            for (t, table) in self.storage.tables.iter_mut().enumerate() {
                if let Some(c) = table.column_index(id) {
                    let fresh = table.column_at_mut(c).relaid(&new_info, &relayout.moves);
                    let mut old = std::mem::replace(table.column_at_mut(c), fresh);
                    table.column_at_mut(c).swap_ticks(&mut old);
                    old_columns.push((TableId(t as u32), c, old));
                }
            }
            if let Some(Some(set)) = self.storage.sparse.get_mut(id.index()) {
                let fresh = set.column_mut().relaid(&new_info, &relayout.moves);
                let mut old = std::mem::replace(set.column_mut(), fresh);
                set.column_mut().swap_ticks(&mut old);
                old_sparse = Some(old);
            }
        }
        let old_references = self.references.clone();
        self.references.relaid(&new_info, &relayout.positions);
        let old_indexes = self.indexes.relaid(&new_info, Some(&relayout.positions));
        Ok(AlteredComponent {
            component: id,
            old_info: relayout.old,
            old_columns,
            old_sparse,
            moves: relayout.moves,
            old_references,
            old_indexes,
        })
    }

    /// A change that kept the component's values in their layout (a rename, a storage
    /// change): what undoing it needs is the old description.
    fn unmoved_change(&mut self, id: ComponentId, old_info: ComponentInfo) -> AlteredComponent {
        let changed = self.components.info(id).clone();
        let old_indexes = self.indexes.relaid(&changed, None);
        AlteredComponent {
            component: id,
            old_info,
            old_columns: Vec::new(),
            old_sparse: None,
            moves: Vec::new(),
            old_references: self.references.clone(),
            old_indexes,
        }
    }

    /// Takes back a change [`World::alter_component`] applied: the component, its values,
    /// indexes and references are as they were before it. Values written to the component
    /// since are lost with the change; the caller takes it back before anything else runs.
    ///
    /// # Panics
    /// If entities gained or lost the component since the change (a table's rows changed).
    pub fn undo_alter(&mut self, altered: AlteredComponent) {
        let AlteredComponent { component, old_info, old_columns, old_sparse, moves, old_references, old_indexes } =
            altered;
        // Each old column goes back in place and takes its ticks and kept strings back from
        // the new one, which then frees only what it made.
        let put_back = |slot: &mut Column, mut old: Column| {
            old.swap_ticks(slot);
            let new = std::mem::replace(slot, old);
            slot.take_back(&old_info, new, &moves);
        };
        for (t, c, old) in old_columns {
            put_back(self.storage.tables[t.index()].column_at_mut(c), old);
        }
        if let (Some(old), Some(Some(set))) = (old_sparse, self.storage.sparse.get_mut(component.index())) {
            put_back(set.column_mut(), old);
        }
        if self.components.info(component).storage() != old_info.storage() {
            self.move_storage(component, old_info.storage()).expect("a storage change it made is undone");
        }
        self.components.restore(old_info);
        self.references = old_references;
        self.indexes.restore(old_indexes);
    }

    /// Refuses to `verb` field `field` of `id` while a function index exists on `id` or,
    /// `by_position` (the field's values go), an index or a reference reads the field.
    fn refuse_dependents(&mut self, id: ComponentId, field: usize, verb: &str, by_position: bool) -> Result<()> {
        let names = self.indexes.depending_on_field(id, field, by_position);
        let info = self.components.info(id);
        let change = || format!("{verb} field '{}.{}'", info.name(), info.fields()[field].name);
        if by_position && self.references.get(id, field).is_some() {
            let dependents = format!("the reference declared on '{}.{}'", info.name(), info.fields()[field].name);
            return Err(EngineError::InUse { change: change(), dependents });
        }
        if names.is_empty() {
            return Ok(());
        }
        let list = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
        Err(EngineError::InUse { change: change(), dependents: format!("index {list} (drop it first)") })
    }
}

#[cfg(test)]
mod tests {
    use super::ComponentChange;
    use crate::index::{IndexDef, IndexKind, IndexPredicate};
    use crate::{ComponentDef, EngineError, Entity, FieldType, OnDelete, ReferenceDef, Value, World};

    /// A world with `Unit (hp f32, name string, boss entity, lvl u8)` in two tables (one
    /// with a `Tag`), a sparse `Mark (note string, n i32)` and a btree on `Unit.lvl`.
    fn world() -> (World, Vec<Entity>) {
        let mut w = World::new();
        let unit = ComponentDef::new(
            "Unit",
            &[("hp", FieldType::F32), ("name", FieldType::String), ("boss", FieldType::Entity), ("lvl", FieldType::U8)],
        );
        w.define_component(&unit).unwrap();
        w.define_component(&ComponentDef::new("Tag", &[])).unwrap();
        w.define_component(&ComponentDef::new("Mark", &[("note", FieldType::String), ("n", FieldType::I32)]).sparse())
            .unwrap();
        w.declare_reference(&ReferenceDef::new("Unit", "boss", OnDelete::SetNull, false)).unwrap();
        let mut es = Vec::new();
        for i in 0..6 {
            let fields = [
                ("hp", Value::Float(i as f64)),
                ("name", Value::Str(format!("unit number {i}, a name too long for a small string"))),
                ("boss", Value::Entity(es.first().copied().unwrap_or(Entity::NULL))),
                ("lvl", Value::Int(i % 3)),
            ];
            let e = if i % 2 == 0 {
                w.spawn_values(&[("Unit", &fields), ("Tag", &[])]).unwrap()
            } else {
                w.spawn_values(&[
                    ("Unit", &fields),
                    ("Mark", &[("note", Value::Str(format!("mark {i}"))), ("n", Value::Int(i))]),
                ])
                .unwrap()
            };
            es.push(e);
        }
        w.create_index(IndexDef::new("Unit", &["lvl"], IndexKind::Btree)).unwrap();
        (w, es)
    }

    fn unit_rows(w: &World, es: &[Entity]) -> Vec<Vec<Value>> {
        let names: Vec<String> =
            w.components().by_name("Unit").unwrap().fields().iter().map(|f| f.name.clone()).collect();
        es.iter().map(|&e| names.iter().map(|f| w.get_field(e, "Unit", f).unwrap()).collect()).collect()
    }

    fn lvl_is(w: &World, index: &str, v: i64) -> Vec<u32> {
        let mut rows = w.index_answer(index, &IndexPredicate::Eq(Value::Int(v))).unwrap().unwrap().into_vec(None);
        rows.sort();
        rows
    }

    #[test]
    fn an_added_field_takes_its_default_in_every_stored_value_and_the_others_keep_theirs() {
        let (mut w, es) = world();
        let before = unit_rows(&w, &es);
        let id = w.component_id("Unit").unwrap();
        let add = ComponentChange::AddField { name: "armor".into(), ty: FieldType::F64, default: Some(Value::Int(3)) };
        drop(w.alter_component(id, &add).unwrap());
        let after = unit_rows(&w, &es);
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(&a[..4], &b[..], "the kept fields keep their values");
            assert_eq!(a[4], Value::Float(3.0));
        }
        let e = w.spawn_values(&[("Unit", &[("hp", Value::Float(1.0))])]).unwrap();
        assert_eq!(w.get_field(e, "Unit", "armor").unwrap(), Value::Float(3.0), "new values take it too");
        assert_eq!(lvl_is(&w, "Unit_lvl_btree", 1), vec![es[1].index(), es[4].index()], "the index still answers");
        // The reference still holds and follows despawns.
        w.despawn(es[0]).unwrap();
        assert_eq!(w.get_field(es[1], "Unit", "boss").unwrap(), Value::Null, "set null with its target gone");
    }

    #[test]
    fn a_dropped_field_goes_with_its_values_and_a_sparse_component_changes_too() {
        let (mut w, es) = world();
        let unit = w.component_id("Unit").unwrap();
        drop(w.alter_component(unit, &ComponentChange::DropField("name".into())).unwrap());
        assert!(w.get_field(es[0], "Unit", "name").is_err());
        assert_eq!(w.get_field(es[5], "Unit", "hp").unwrap(), Value::Float(5.0));
        assert_eq!(w.get_field(es[5], "Unit", "lvl").unwrap(), Value::Int(2));
        assert_eq!(lvl_is(&w, "Unit_lvl_btree", 2), vec![es[2].index(), es[5].index()]);
        let mark = w.component_id("Mark").unwrap();
        drop(w.alter_component(mark, &ComponentChange::DropField("note".into())).unwrap());
        assert_eq!(w.get_field(es[3], "Mark", "n").unwrap(), Value::Int(3));
        let add = ComponentChange::AddField {
            name: "tag".into(),
            ty: FieldType::String,
            default: Some(Value::Str("x".into())),
        };
        drop(w.alter_component(mark, &add).unwrap());
        assert_eq!(w.get_field(es[3], "Mark", "tag").unwrap(), Value::Str("x".into()));
        assert_eq!(w.get_field(es[3], "Mark", "n").unwrap(), Value::Int(3));
    }

    #[test]
    fn a_field_an_index_or_a_reference_reads_is_not_dropped_and_the_error_names_it() {
        let (mut w, es) = world();
        let before = unit_rows(&w, &es);
        let unit = w.component_id("Unit").unwrap();
        let e = w.alter_component(unit, &ComponentChange::DropField("lvl".into())).err().unwrap();
        assert!(matches!(&e, EngineError::InUse { dependents, .. } if dependents.contains("Unit_lvl_btree")), "{e}");
        let e = w.alter_component(unit, &ComponentChange::DropField("boss".into())).err().unwrap();
        assert!(e.to_string().contains("reference"), "{e}");
        let e = w.alter_component(unit, &ComponentChange::DropField("nope".into())).err().unwrap();
        assert!(matches!(e, EngineError::UnknownField { .. }));
        let dup = ComponentChange::AddField { name: "hp".into(), ty: FieldType::F32, default: None };
        assert!(matches!(w.alter_component(unit, &dup), Err(EngineError::DuplicateField { .. })));
        let bad =
            ComponentChange::AddField { name: "x".into(), ty: FieldType::U8, default: Some(Value::Str("a".into())) };
        assert!(w.alter_component(unit, &bad).is_err(), "a default that does not convert");
        assert_eq!(unit_rows(&w, &es), before, "nothing changed");
    }

    #[test]
    fn renames_keep_values_and_carry_indexes_and_references() {
        let (mut w, es) = world();
        let unit = w.component_id("Unit").unwrap();
        w.drop_index("Unit_lvl_btree").unwrap();
        w.create_index(IndexDef::new("Unit", &["lvl"], IndexKind::Bitmap)).unwrap();
        let rename = ComponentChange::RenameField { from: "boss".into(), to: "leader".into() };
        drop(w.alter_component(unit, &rename).unwrap());
        assert_eq!(w.get_field(es[3], "Unit", "leader").unwrap(), Value::Entity(es[0]));
        assert_eq!(w.reference_definitions()[0].field, "leader");
        drop(w.alter_component(unit, &ComponentChange::Rename("Soldier".into())).unwrap());
        assert!(w.component_id("Unit").is_err());
        assert_eq!(w.get_field(es[3], "Soldier", "hp").unwrap(), Value::Float(3.0));
        let defs = w.index_definitions();
        assert_eq!((defs[0].component.as_str(), defs[0].fields.clone()), ("Soldier", vec!["lvl".to_string()]));
        assert_eq!(lvl_is(&w, "Unit_lvl_bitmap", 0), vec![es[0].index(), es[3].index()]);
        let taken = w.alter_component(unit, &ComponentChange::Rename("Mark".into()));
        assert!(matches!(taken, Err(EngineError::DuplicateComponent(_))));
    }

    #[test]
    fn undo_puts_back_the_values_names_indexes_and_references() {
        let (mut w, es) = world();
        let before = unit_rows(&w, &es);
        let unit = w.component_id("Unit").unwrap();
        let mark = w.component_id("Mark").unwrap();
        let changes = [
            (unit, ComponentChange::DropField("name".into())),
            (
                unit,
                ComponentChange::AddField {
                    name: "z".into(),
                    ty: FieldType::String,
                    default: Some(Value::Str("zz".into())),
                },
            ),
            (unit, ComponentChange::RenameField { from: "hp".into(), to: "health".into() }),
            (unit, ComponentChange::Rename("Soldier".into())),
            (mark, ComponentChange::DropField("note".into())),
        ];
        for (id, change) in &changes {
            let layout = w.components().layout_version();
            let altered = w.alter_component(*id, change).unwrap();
            assert_ne!(w.components().layout_version(), layout);
            w.undo_alter(altered);
            assert_eq!(unit_rows(&w, &es), before, "after undoing {change:?}");
            assert_eq!(w.get_field(es[1], "Mark", "note").unwrap(), Value::Str("mark 1".into()));
            assert_eq!(w.reference_definitions()[0].field, "boss");
            assert_eq!(w.index_definitions()[0].component, "Unit");
            assert_eq!(lvl_is(&w, "Unit_lvl_btree", 0), vec![es[0].index(), es[3].index()]);
        }
        // Writes after an undo land in the restored columns.
        w.set_fields(es[0], "Unit", &[("name", Value::Str("again".into()))]).unwrap();
        assert_eq!(w.get_field(es[0], "Unit", "name").unwrap(), Value::Str("again".into()));
    }

    #[test]
    fn a_component_of_a_rust_type_is_changed_by_changing_the_type() {
        #[derive(crate::Component, Clone, Copy)]
        struct Speed {
            v: f32,
        }
        let mut w = World::new();
        let id = w.register::<Speed>().unwrap();
        let e = w.alter_component(id, &ComponentChange::DropField("v".into())).err().unwrap();
        assert!(e.to_string().contains("Rust type"), "{e}");
        assert!(w.alter_component(id, &ComponentChange::Rename("Velocity".into())).is_err());
    }

    #[test]
    fn a_retyped_field_starts_at_the_new_zero_and_undo_gives_the_old_values_back() {
        let (mut w, es) = world();
        let before = unit_rows(&w, &es);
        let unit = w.component_id("Unit").unwrap();
        let retype = ComponentChange::RetypeField { name: "hp".into(), ty: FieldType::String };
        let altered = w.alter_component(unit, &retype).unwrap();
        assert_eq!(w.get_field(es[2], "Unit", "hp").unwrap(), Value::Str(String::new()));
        assert_eq!(w.get_field(es[2], "Unit", "name").unwrap(), before[2][1], "the other fields keep theirs");
        w.set_fields(es[2], "Unit", &[("hp", Value::Str("high".into()))]).unwrap();
        w.undo_alter(altered);
        assert_eq!(unit_rows(&w, &es), before);
        let e = w.alter_component(unit, &ComponentChange::RetypeField { name: "lvl".into(), ty: FieldType::U32 });
        assert!(matches!(e, Err(EngineError::InUse { .. })), "the btree reads lvl");
    }

    #[test]
    fn every_field_can_go_and_come_back() {
        let (mut w, es) = world();
        let mark = w.component_id("Mark").unwrap();
        drop(w.alter_component(mark, &ComponentChange::DropField("note".into())).unwrap());
        drop(w.alter_component(mark, &ComponentChange::DropField("n".into())).unwrap());
        assert!(w.components().info(mark).fields().is_empty());
        assert!(w.has_component(es[1], mark).unwrap());
        let add = ComponentChange::AddField { name: "n".into(), ty: FieldType::I32, default: Some(Value::Int(9)) };
        drop(w.alter_component(mark, &add).unwrap());
        assert_eq!(w.get_field(es[1], "Mark", "n").unwrap(), Value::Int(9));
    }
}
