//! References between entities: `entity` fields declared to point at live entities, with what
//! despawning a target does to its referrers (`ON DELETE`) and whether following the field may
//! loop (`ACYCLIC`).
//!
//! A reference is declared per (component, field) with [`World::declare_reference`](crate::World::declare_reference) (or the
//! text `CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC)`, or
//! `#[reference(...)]` on a derived field). From then on:
//!
//! - **Writes check targets.** The dynamic write paths ([`World::spawn_values`](crate::World::spawn_values),
//!   [`World::insert_values`](crate::World::insert_values), [`World::set_fields`](crate::World::set_fields), [`World::write_fields`](crate::World::write_fields)) and the text
//!   statements refuse a target that is neither live nor null ([`EngineError::StaleEntity`](crate::EngineError::StaleEntity))
//!   and, for `ACYCLIC`, a write after which an entity would reach itself by following the
//!   field ([`EngineError::Constraint`](crate::EngineError::Constraint)); the world is unchanged. A statement that writes many
//!   references checks them together on its final state ([`World::check_reference_writes`](crate::World::check_reference_writes)).
//! - **Typed writes are checked too.** [`World::try_spawn`](crate::World::try_spawn), [`World::insert`](crate::World::insert),
//!   [`World::spawn_batch`](crate::World::spawn_batch) and command buffers check a bundle holding a reference component
//!   before placing it ([`World::spawn`](crate::World::spawn) panics where `try_spawn` returns the error). A
//!   component holding a declared reference cannot be borrowed mutably (`get_mut`, `&mut` in a
//!   query: [`EngineError::MutableReference`](crate::EngineError::MutableReference)): a `&mut` could store a stale handle that no
//!   check sees. Typed code changes it whole with `insert`, or one field with
//!   [`World::set_reference`](crate::World::set_reference).
//! - **Despawns apply `ON DELETE`** ([`World::despawn`](crate::World::despawn), [`World::despawn_many`](crate::World::despawn_many), command
//!   buffers, text `DESPAWN`): `CASCADE` despawns referrers (recursively), `SET NULL` nulls the
//!   field, `REMOVE` removes the component holding it, `RESTRICT` refuses the whole despawn
//!   unless the referrer goes too, `NO ACTION` leaves the handle. Everything is decided before
//!   the first change: all or nothing.
//! - **Reading** a dangling handle: [`World::live_target`](crate::World::live_target) and the hierarchy walks treat a dead
//!   target as the end of the chain.
//!
//! Referrers are found through a relation index on the field when one exists (see
//! `index/relation.rs`), otherwise by one scan of the component per despawn call.

//!
//! This module holds the declarations; the world applies them (`world/references.rs`).

use crate::component::ComponentId;
use crate::entity::Entity;
pub use crate::on_delete::OnDelete;

/// A reference declaration by names: what `CREATE COMPONENT … REFERENCES …` says, what
/// snapshots save.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReferenceDef {
    /// The component holding the field.
    pub component: String,
    /// The `entity` field.
    pub field: String,
    /// What despawning a target does.
    pub on_delete: OnDelete,
    /// Whether following the field may never lead an entity back to itself.
    pub acyclic: bool,
}

impl ReferenceDef {
    /// A declaration.
    pub fn new(component: &str, field: &str, on_delete: OnDelete, acyclic: bool) -> ReferenceDef {
        ReferenceDef { component: component.to_string(), field: field.to_string(), on_delete, acyclic }
    }
}

/// A resolved reference: the field by id and position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The component.
    pub component: ComponentId,
    /// The field's position in the schema.
    pub field: usize,
    /// The field's byte offset in a value.
    pub(crate) offset: usize,
    /// What despawning a target does.
    pub on_delete: OnDelete,
    /// `ACYCLIC`.
    pub acyclic: bool,
}

/// The references a world declares.
#[derive(Clone, Debug, Default)]
pub(crate) struct References {
    list: Vec<Reference>,
}

impl References {
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub(crate) fn on(&self, id: ComponentId) -> impl Iterator<Item = &Reference> {
        self.list.iter().filter(move |r| r.component == id)
    }
    pub(crate) fn get(&self, id: ComponentId, field: usize) -> Option<&Reference> {
        self.list.iter().find(|r| r.component == id && r.field == field)
    }
    /// Every declared reference, in declaration order.
    pub(crate) fn all(&self) -> &[Reference] {
        &self.list
    }
    /// Adds a declaration (checked by the caller).
    pub(crate) fn push(&mut self, r: Reference) {
        self.list.push(r);
    }
    /// Makes the references of component `info` follow its new fields: old field `i` is now
    /// `positions[i]` (the caller keeps every reference field).
    pub(crate) fn relaid(&mut self, info: &crate::component::ComponentInfo, positions: &[Option<usize>]) {
        for r in self.list.iter_mut().filter(|r| r.component == info.id()) {
            r.field = positions[r.field].expect("the caller refuses to drop a reference field");
            r.offset = info.fields()[r.field].offset;
        }
    }
}

/// One reference a write would store: `entity`'s (`None` for an entity being spawned)
/// `component.field` becomes `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceWrite {
    /// The referrer; `None` for a new entity (which nothing can refer to yet).
    pub entity: Option<Entity>,
    /// The component.
    pub component: ComponentId,
    /// The field's position.
    pub field: usize,
    /// The new target (the null entity is always allowed).
    pub target: Entity,
}

/// Where following a reference field from an entity leads (see [`World::walk_up`](crate::World::walk_up)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// Hops to the top; `None` when the chain loops.
    pub depth: Option<usize>,
    /// The last live entity of the chain (the entity itself when it has no live target);
    /// `None` when the chain loops.
    pub root: Option<Entity>,
}

#[cfg(test)]
mod tests;
