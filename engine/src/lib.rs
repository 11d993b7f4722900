//! # ecsdb-engine
//!
//! The storage engine of ecsdb: an archetype ECS laid out like a column store.
//!
//! What it optimises, in order: fast column-at-a-time traversal of components; exact
//! bookkeeping (generational ids, change ticks, atomic operations); one representation that
//! both typed Rust code and the text query engine read; a small dependency closure.
//!
//! ```
//! use ecsdb_engine::{Component, Entity, World, Without};
//! #[derive(Component)] struct Position { x: f32, y: f32 }
//! #[derive(Component)] struct Velocity { x: f32, y: f32 }
//! #[derive(Component)] struct Frozen;
//!
//! let mut world = World::new();
//! let a = world.spawn((Position { x: 0.0, y: 0.0 }, Velocity { x: 1.0, y: 0.5 }));
//! world.spawn((Position { x: 5.0, y: 5.0 }, Velocity { x: 1.0, y: 1.0 }, Frozen));
//! for (mut p, v) in world.query_filtered_mut::<(&mut Position, &Velocity), Without<Frozen>>() {
//!     p.x += v.x;
//!     p.y += v.y;
//! }
//! assert_eq!(world.get::<Position>(a).unwrap().x, 1.0);
//! assert_eq!(world.get_field(a, "Position", "y").unwrap(), ecsdb_engine::Value::Float(0.5));
//! ```
#![warn(missing_docs)]
// Unsafe code lives in this crate only (every other crate forbids it). Each unsafe operation
// sits in its own `unsafe` block with a `// SAFETY:` comment, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

// Lets `#[derive(Component)]` refer to `::ecsdb_engine` from inside this crate too.
extern crate self as ecsdb_engine;

mod bundle;
mod command;
mod component;
mod entity;
mod error;
pub mod index;
mod on_delete;
mod par;
pub mod query;
mod reference;
mod schedule_record;
pub mod snapshot;
pub mod storage;
mod tick;
mod value;
mod value_type;
mod world;

/// A size for a test that loops: `normal`, or under Miri (which interprets every step, some
/// thousands of times slower) the smaller `miri`, picked so that the test keeps its shapes
/// and reaches the same paths.
#[cfg(test)]
mod test_rng;

#[cfg(test)]
fn test_size<T>(normal: T, miri: T) -> T {
    if cfg!(miri) { miri } else { normal }
}

pub use bundle::Bundle;
pub use command::{ApplyReport, CommandBuffer};
pub use component::{
    Component, ComponentDef, ComponentId, ComponentInfo, ComponentSchema, Components, FieldInfo, FieldType,
    SchemaField, StorageKind, TypedReference, is_identifier,
};
pub use ecsdb_derive::Component;
pub use entity::{Entities, EntitiesState, Entity, EntityLocation, ParseEntityError};
pub use error::{EngineError, Result};
pub use on_delete::OnDelete;
pub use query::{
    Added, Changed, DisjointRuns, Or, PreparedQuery, Query, QueryData, QueryFilter, QueryState, ReadOnlyQueryData,
    With, Without,
};
pub use reference::{Chain, Reference, ReferenceDef, ReferenceWrite};
pub use schedule_record::{ScheduleRecord, SystemBody, SystemRecord};
pub use snapshot::{
    DEFAULT_BUSY_TIMEOUT, FileStamp, IndexBuild, IndexDefinition, LoadOptions, LoadStats, SaveOptions, SaveStats,
    SnapshotError, WorldLock,
};
pub use tick::{ChangeWindow, Mut, Tick, is_newer};
pub use value::{
    ComponentValues, FieldValue, FromValueError, Value, ValueType, convert_value, read_field, read_field_value,
    read_object,
};
pub use world::{
    AlteredComponent, BulkValues, ComponentChange, ComponentWriter, FieldRows, IndexFunction, IndexReader, MemoryUsage,
    Mirrored, RowByRow, RowRewrite, TypedFieldValues, World,
};

#[doc(hidden)]
pub mod __private {
    //! Items used by `#[derive(Component)]`'s expansion.
    pub use std::mem::offset_of;
}
