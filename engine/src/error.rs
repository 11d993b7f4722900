//! The engine's error type.

use crate::entity::Entity;
use crate::value_type::ValueType;

/// Everything that can go wrong in the storage engine. Every failing operation leaves the
/// world as it was.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The handle's entity was despawned (or the handle was never issued).
    #[error("stale entity {0}")]
    StaleEntity(Entity),
    /// No component by that name is registered.
    #[error("unknown component '{0}'")]
    UnknownComponent(String),
    /// The component has no field by that name.
    #[error("component '{component}' has no field '{field}'")]
    UnknownField {
        /// Component name.
        component: String,
        /// The missing field.
        field: String,
    },
    /// The entity lacks a component the operation needs.
    #[error("entity {entity} has no component '{component}'")]
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The component it lacks.
        component: String,
    },
    /// A value does not fit the field it is written to.
    #[error("cannot store {found} in field '{component}.{field}' of type {expected}")]
    TypeMismatch {
        /// Component name.
        component: String,
        /// Field name.
        field: String,
        /// The field's type.
        expected: String,
        /// What was given.
        found: String,
    },
    /// A stored value cannot be represented as a query value (a u64 above i64::MAX).
    #[error("value of '{component}.{field}' is out of range for {ty:?}")]
    OutOfRange {
        /// Component name.
        component: String,
        /// Field name.
        field: String,
        /// The value type it was read as.
        ty: ValueType,
    },
    /// The component is opaque: it has no schema, so its fields cannot be read or written by name.
    #[error("component '{0}' is opaque: its fields are not readable by name")]
    Opaque(String),
    /// A component definition was rejected.
    #[error("invalid component definition: {0}")]
    InvalidDefinition(String),
    /// A name is already taken.
    #[error("component '{0}' already exists")]
    DuplicateComponent(String),
    /// A field was named twice in one write.
    #[error("field '{component}.{field}' given twice")]
    DuplicateField {
        /// Component name.
        component: String,
        /// Field name.
        field: String,
    },
    /// A Rust type and a component of the same name disagree on the schema.
    #[error("component '{component}' does not match: {reason}")]
    SchemaMismatch {
        /// Component name.
        component: String,
        /// What differs.
        reason: String,
    },
    /// Typed code asked to borrow a component mutably whose field is a declared reference:
    /// such a component is written whole (`insert`) or through `set_reference`, which check
    /// the target, never through a `&mut` that could store a stale handle unseen.
    #[error(
        "component '{component}' holds the declared reference '{component}.{field}': typed code writes it \
         with insert or set_reference, which check the target, not through a mutable borrow"
    )]
    MutableReference {
        /// The component.
        component: String,
        /// Its reference field.
        field: String,
    },
    /// Two parts of one query would alias the same component mutably.
    #[error("query accesses component '{0}' mutably more than once or both mutably and immutably")]
    AliasedAccess(String),
    /// A query prepared to run beside others would touch a component one of them writes, or
    /// write one they read ([`crate::DisjointRuns`]).
    #[error("component '{0}' is written by one of the queries run side by side and accessed by another")]
    ConflictingRuns(String),
    /// A query that writes a sparse component cannot run beside others (its fetches share
    /// the sparse sets); run it alone.
    #[error("a query that writes sparse component '{0}' cannot run beside other queries")]
    SparseWriteInParallel(String),
    /// A Rust type was used where the component of that name is a run-time component (or the
    /// reverse).
    #[error("component '{0}' is not of the Rust type used to access it")]
    WrongType(String),
    /// A write or despawn would break a reference constraint (`RESTRICT`, `ACYCLIC`).
    #[error("{0}")]
    Constraint(String),
    /// A schema change would break what depends on the thing it changes.
    #[error("cannot {change}: {dependents} depends on it")]
    InUse {
        /// The change, as a phrase ("drop field 'Health.hp'").
        change: String,
        /// What depends on it.
        dependents: String,
    },
    /// Parts a world was to be assembled from disagree (a loader's bug or a corrupt input
    /// that got past its checks); nothing was built.
    #[error("inconsistent world parts: {0}")]
    BrokenParts(String),
    /// Other invalid operations.
    #[error("{0}")]
    Invalid(String),
}

/// Short for `Result<T, EngineError>`.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
