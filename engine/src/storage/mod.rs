//! Physical storage: columns, archetype tables and sparse sets.
//!
//! Only this module (and the typed query fetches built on it) touches raw component memory.
//! Everything above it goes through `World`'s safe API.

mod column;
mod field;
mod field_values;
mod field_view;
mod sparse;
mod table;

pub use column::{AddedView, Column, StringHeads, string_head};
pub(crate) use column::{ValueCopy, WrittenRows};
pub use field::{FieldColumn, FieldIter, FieldScalar};
pub use field_values::TypedFieldValues;
pub use field_view::{FieldNum, FieldPlace, FieldView};
pub use sparse::SparseSet;
pub use table::{ArchetypeTable, TableId};
