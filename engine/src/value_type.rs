//! The types of dynamic values ([`crate::Value`]), apart from the values themselves so that
//! the error type can name them without depending on the value module.

use std::fmt;

/// The type of a [`Value`](crate::Value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// null
    Null,
    /// bool
    Bool,
    /// int
    Int,
    /// float
    Float,
    /// string
    Str,
    /// entity
    Entity,
    /// vec2
    Vec2,
    /// vec3
    Vec3,
    /// a component object
    Object,
    /// Not known before a statement runs: a parameter's, or a registered function's result
    /// (the query language's binder infers types; no [`Value`](crate::Value) has this type).
    Any,
}

impl ValueType {
    /// The language's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Null => "null",
            ValueType::Bool => "bool",
            ValueType::Int => "int",
            ValueType::Float => "float",
            ValueType::Str => "string",
            ValueType::Entity => "entity",
            ValueType::Vec2 => "vec2",
            ValueType::Vec3 => "vec3",
            ValueType::Object => "component",
            ValueType::Any => "any",
        }
    }

    /// Int or float.
    pub fn is_numeric(self) -> bool {
        matches!(self, ValueType::Int | ValueType::Float)
    }

    /// Vec2 or vec3.
    pub fn is_vector(self) -> bool {
        matches!(self, ValueType::Vec2 | ValueType::Vec3)
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
