//! [`TypedFieldValues`]: new values for one field of many rows, already in the field's Rust
//! type, as the columnar write paths take them and typed field views hand them out.

use crate::component::FieldType;
use crate::entity::Entity;

/// Values for one field of many rows, in the field's Rust type.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedFieldValues {
    /// `bool`
    Bool(Vec<bool>),
    /// `i8`
    I8(Vec<i8>),
    /// `i16`
    I16(Vec<i16>),
    /// `i32`
    I32(Vec<i32>),
    /// `i64`
    I64(Vec<i64>),
    /// `u8`
    U8(Vec<u8>),
    /// `u16`
    U16(Vec<u16>),
    /// `u32`
    U32(Vec<u32>),
    /// `u64`
    U64(Vec<u64>),
    /// `f32`
    F32(Vec<f32>),
    /// `f64`
    F64(Vec<f64>),
    /// `string`
    Str(Vec<String>),
    /// `entity` (the null entity for null)
    Entity(Vec<Entity>),
    /// `vec2`
    Vec2(Vec<[f32; 2]>),
    /// `vec3`
    Vec3(Vec<[f32; 3]>),
}

impl TypedFieldValues {
    /// The schema type these values fit.
    pub fn field_type(&self) -> FieldType {
        match self {
            TypedFieldValues::Bool(_) => FieldType::Bool,
            TypedFieldValues::I8(_) => FieldType::I8,
            TypedFieldValues::I16(_) => FieldType::I16,
            TypedFieldValues::I32(_) => FieldType::I32,
            TypedFieldValues::I64(_) => FieldType::I64,
            TypedFieldValues::U8(_) => FieldType::U8,
            TypedFieldValues::U16(_) => FieldType::U16,
            TypedFieldValues::U32(_) => FieldType::U32,
            TypedFieldValues::U64(_) => FieldType::U64,
            TypedFieldValues::F32(_) => FieldType::F32,
            TypedFieldValues::F64(_) => FieldType::F64,
            TypedFieldValues::Str(_) => FieldType::String,
            TypedFieldValues::Entity(_) => FieldType::Entity,
            TypedFieldValues::Vec2(_) => FieldType::Vec2,
            TypedFieldValues::Vec3(_) => FieldType::Vec3,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            TypedFieldValues::Bool(v) => v.len(),
            TypedFieldValues::I8(v) => v.len(),
            TypedFieldValues::I16(v) => v.len(),
            TypedFieldValues::I32(v) => v.len(),
            TypedFieldValues::I64(v) => v.len(),
            TypedFieldValues::U8(v) => v.len(),
            TypedFieldValues::U16(v) => v.len(),
            TypedFieldValues::U32(v) => v.len(),
            TypedFieldValues::U64(v) => v.len(),
            TypedFieldValues::F32(v) => v.len(),
            TypedFieldValues::F64(v) => v.len(),
            TypedFieldValues::Str(v) => v.len(),
            TypedFieldValues::Entity(v) => v.len(),
            TypedFieldValues::Vec2(v) => v.len(),
            TypedFieldValues::Vec3(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
