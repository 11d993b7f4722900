//! A run-time component's fields redefined (`ALTER COMPONENT`): the new schema and layout,
//! and where each kept field's bytes move from and to; or its name or storage changed.
//!
//! The registry only changes the description here; the world moves the values
//! (`World::alter_component`), keeping the old ones until the change is committed.

use super::{
    ComponentId, ComponentInfo, Components, FieldInfo, FieldType, FieldValue, StorageKind, check_field_names,
    layout_fields, strings_drop,
};
use crate::error::{EngineError, Result};

/// One kept field: its bytes at `from` in an old value go to `to` in the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldMove {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) ty: FieldType,
}

/// What a redefinition changed: the old description (to put back), and how values move.
#[derive(Clone, Debug)]
pub(crate) struct Relayout {
    /// The component as it was.
    pub(crate) old: ComponentInfo,
    /// For each old field position, its new one (`None`: dropped).
    pub(crate) positions: Vec<Option<usize>>,
    /// The kept fields' moves, in new field order.
    pub(crate) moves: Vec<FieldMove>,
    /// Whether values keep their bytes where they are: only names changed.
    pub(crate) same_layout: bool,
}

impl Components {
    /// Gives run-time component `id` the fields `fields`, each new field `i` holding old
    /// field `kept[i]` (`None`: a new field, which takes `defaults[i]` or its type's zero).
    /// `defaults` are converted for their fields, as [`Components::set_defaults`] takes them.
    /// A kept field keeps its type. Nothing changes on an error.
    pub(crate) fn redefine(
        &mut self,
        id: ComponentId,
        fields: &[(String, FieldType)],
        kept: &[Option<usize>],
        defaults: Vec<Option<FieldValue>>,
    ) -> Result<Relayout> {
        let old = self.infos[id.index()].clone();
        if old.type_id.is_some() || old.opaque {
            return Err(EngineError::InvalidDefinition(format!(
                "component '{}' is defined by a Rust type: change the type instead (a file saved before loads \
                 with the fields matched by name)",
                old.name
            )));
        }
        debug_assert_eq!(fields.len(), kept.len());
        check_field_names(&old.name, fields)?;
        for (i, k) in kept.iter().enumerate() {
            if let Some(k) = *k
                && old.fields.get(k).is_none_or(|f| f.ty != fields[i].1)
            {
                return Err(EngineError::Invalid(format!("field #{k} of '{}' does not keep its type", old.name)));
            }
        }
        let (layout, infos) = layout_fields(fields);
        let mut positions = vec![None; old.fields.len()];
        let mut moves = Vec::new();
        for (new, k) in kept.iter().enumerate() {
            if let Some(k) = *k {
                positions[k] = Some(new);
                moves.push(FieldMove { from: old.fields[k].offset, to: infos[new].offset, ty: infos[new].ty });
            }
        }
        let same_layout = layout == old.layout
            && infos.len() == old.fields.len()
            && infos
                .iter()
                .zip(&old.fields)
                .all(|(a, b): (&FieldInfo, &FieldInfo)| a.ty == b.ty && a.offset == b.offset)
            && positions.iter().enumerate().all(|(i, p)| *p == Some(i));
        let info = &mut self.infos[id.index()];
        info.drop = strings_drop(&infos);
        info.layout = layout;
        info.fields = infos;
        info.defaults = None;
        self.version += 1;
        self.layout_version += 1;
        if let Err(e) = self.set_defaults(id, defaults) {
            self.restore(old);
            return Err(e);
        }
        Ok(Relayout { old, positions, moves, same_layout })
    }

    /// Puts back a component's description as [`Components::redefine`] or
    /// [`Components::rename`] found it.
    pub(crate) fn restore(&mut self, old: ComponentInfo) {
        let id = old.id;
        let current = std::mem::replace(&mut self.infos[id.index()], old);
        if current.name != self.infos[id.index()].name {
            self.by_name.remove(&current.name);
            self.by_name.insert(self.infos[id.index()].name.clone(), id);
        }
        self.version += 1;
        self.layout_version += 1;
    }

    /// Gives run-time component `id` another storage kind; returns the one it had. The
    /// registry only changes the description: the world moves the values
    /// (`World::alter_component`).
    pub(crate) fn set_storage(&mut self, id: ComponentId, storage: StorageKind) -> Result<StorageKind> {
        let info = &mut self.infos[id.index()];
        if info.type_id.is_some() || info.opaque {
            return Err(EngineError::InvalidDefinition(format!(
                "component '{}' is defined by a Rust type: its storage is the type's (`#[component(storage = \"sparse\")]`)",
                info.name
            )));
        }
        let old = std::mem::replace(&mut info.storage, storage);
        self.version += 1;
        self.layout_version += 1;
        Ok(old)
    }

    /// Renames a run-time component (its id and values stay).
    pub(crate) fn rename(&mut self, id: ComponentId, to: &str) -> Result<()> {
        let info = &self.infos[id.index()];
        if info.type_id.is_some() {
            return Err(EngineError::InvalidDefinition(format!(
                "component '{}' is defined by a Rust type: rename the type instead",
                info.name
            )));
        }
        if !super::is_identifier(to) {
            return Err(EngineError::InvalidDefinition(format!("'{to}' is not a valid component name")));
        }
        if self.by_name.contains_key(to) {
            return Err(EngineError::DuplicateComponent(to.to_string()));
        }
        let from = std::mem::replace(&mut self.infos[id.index()].name, to.to_string());
        self.by_name.remove(&from);
        self.by_name.insert(to.to_string(), id);
        self.version += 1;
        self.layout_version += 1;
        Ok(())
    }
}
