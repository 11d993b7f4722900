//! What a world built from columns is made of ([`ColumnarWorld`]): the data that
//! `columns` checks and turns into a snapshot body and `placement` groups into tables.

use crate::component::ComponentDef;
use crate::entity::Entity;
use crate::snapshot::{IndexDefinition, SnapshotError};
use crate::world::World;

/// One field's values for every row of a [`ComponentColumns`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValues {
    /// Fixed-size values back to back, little-endian, each of the field type's size: bool one
    /// byte (0 or 1), integers and floats at their width, an entity as its index then its
    /// generation (u32 each; the null entity is `u32::MAX` twice), vectors as 2 or 3 f32.
    Plain(Vec<u8>),
    /// Strings: the byte length of each row's string, and their UTF-8 back to back.
    Strings {
        /// Byte length per row.
        lengths: Vec<u32>,
        /// The text of every row, concatenated.
        text: Vec<u8>,
    },
}

/// One component's values for every entity that has it.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentColumns {
    /// The component's definition (created in the world unless a component of that name, with
    /// the same fields and storage, is already registered).
    pub def: ComponentDef,
    /// The entity of each row; an entity appears at most once.
    pub entities: Vec<Entity>,
    /// One run per field of `def`, in its order, each with one value per row.
    pub fields: Vec<FieldValues>,
}

/// A whole world as columns: components, index definitions, and what the components cannot
/// say about the entities.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnarWorld {
    /// Every component, with its rows.
    pub components: Vec<ComponentColumns>,
    /// Indexes to build once the data is in place (function indexes are returned in
    /// [`LoadStats::index_definitions`](crate::LoadStats::index_definitions) for the program to register again).
    pub indexes: Vec<IndexDefinition>,
    /// Live entities that have no component (no component's rows list them).
    pub bare_entities: Vec<Entity>,
    /// The allocator's dead indices. Without it, every index no entity uses is free with
    /// generation 0, reused lowest first.
    pub dead: Option<DeadIndices>,
}

/// The dead part of an entity allocator, so that a rebuilt world issues the ids the original
/// would have: an export keeps it in its `schema.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadIndices {
    /// Indices ever issued: every index below it that no live entity holds is dead.
    pub issued: u32,
    /// The free list: each dead index with the generation it will be reissued with, in the
    /// order of [`EntitiesState::free`](crate::EntitiesState::free) (reused last first).
    /// Dead indices not listed are retired (their generations are used up).
    pub free: Vec<Entity>,
}

impl DeadIndices {
    /// The dead indices of `world`'s allocator.
    pub fn of(world: &World) -> DeadIndices {
        let entities = world.entities();
        let free = entities.free_list();
        DeadIndices {
            issued: entities.capacity_used() as u32,
            free: free.iter().map(|&i| Entity::from_parts(i, entities.generation_of(i))).collect(),
        }
    }
}

pub(super) fn invalid(component: &str, row: Option<usize>, reason: impl Into<String>) -> SnapshotError {
    SnapshotError::Columns { component: component.to_string(), row, reason: reason.into() }
}
