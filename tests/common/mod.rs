//! Helpers shared by the facade's integration tests (`mod common;` in each test file): one
//! seeded random number generator, statement helpers and the shorthands for expected values.

#![allow(dead_code)] // each test file uses its own subset

pub mod db;
pub mod rng;

/// Shorthands for the [`Value`]s that expected rows are written with.
pub mod values {
    use ecsdb::{Entity, Value};

    /// The entity with this index and generation 0.
    pub fn e(index: u32) -> Value {
        Value::Entity(Entity::from_parts(index, 0))
    }
    /// An integer.
    pub fn i(x: i64) -> Value {
        Value::Int(x)
    }
    /// A float.
    pub fn f(x: f64) -> Value {
        Value::Float(x)
    }
    /// A string.
    pub fn s(x: &str) -> Value {
        Value::Str(x.to_string())
    }
    /// A bool.
    pub fn b(x: bool) -> Value {
        Value::Bool(x)
    }
    /// SQL's null.
    pub const NULL: Value = Value::Null;
}
