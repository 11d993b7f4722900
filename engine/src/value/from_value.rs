//! Rust values read out of a [`Value`]: `i64::try_from(&value)` and the like, for results
//! read by type (`ResultSet::get_as` in the query crate).
//!
//! ```
//! use ecsdb_engine::{Entity, Value};
//! assert_eq!(i64::try_from(&Value::Int(7)), Ok(7));
//! assert_eq!(f64::try_from(&Value::Int(7)), Ok(7.0)); // an int reads as a float
//! assert_eq!(<&str>::try_from(&Value::Str("red".into())), Ok("red"));
//! assert_eq!(Option::<i64>::try_from(&Value::Null), Ok(None));
//! assert!(i64::try_from(&Value::Str("7".into())).is_err());
//! assert!(i32::try_from(&Value::Int(1 << 40)).is_err());
//! ```

use super::{Value, ValueType};
use crate::entity::Entity;

/// A [`Value`] that is not of the Rust type asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}, found {found}")]
pub struct FromValueError {
    /// The type asked for.
    pub expected: &'static str,
    /// The value's type, or `"an int out of range"`.
    pub found: &'static str,
}

fn mismatch(expected: &'static str, v: &Value) -> FromValueError {
    FromValueError { expected, found: v.value_type().name() }
}

impl TryFrom<&Value> for i64 {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<i64, FromValueError> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err(mismatch("int", v)),
        }
    }
}

/// Narrower integers: in range or an error.
macro_rules! narrow_int_from_value {
    ($($t:ty),*) => {$(
        impl TryFrom<&Value> for $t {
            type Error = FromValueError;
            fn try_from(v: &Value) -> Result<$t, FromValueError> {
                let i = i64::try_from(v)?;
                <$t>::try_from(i).map_err(|_| FromValueError { expected: stringify!($t), found: "an int out of range" })
            }
        }
    )*};
}
narrow_int_from_value!(i8, i16, i32, u8, u16, u32, u64, usize);

impl TryFrom<&Value> for f64 {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<f64, FromValueError> {
        match v {
            Value::Float(f) => Ok(*f),
            Value::Int(i) => Ok(*i as f64),
            _ => Err(mismatch("float", v)),
        }
    }
}

impl TryFrom<&Value> for f32 {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<f32, FromValueError> {
        f64::try_from(v).map(|f| f as f32)
    }
}

impl TryFrom<&Value> for bool {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<bool, FromValueError> {
        match v {
            Value::Bool(b) => Ok(*b),
            _ => Err(mismatch("bool", v)),
        }
    }
}

impl<'a> TryFrom<&'a Value> for &'a str {
    type Error = FromValueError;
    fn try_from(v: &'a Value) -> Result<&'a str, FromValueError> {
        match v {
            Value::Str(s) => Ok(s),
            _ => Err(mismatch("string", v)),
        }
    }
}

impl TryFrom<&Value> for String {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<String, FromValueError> {
        <&str>::try_from(v).map(str::to_string)
    }
}

impl TryFrom<&Value> for Entity {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<Entity, FromValueError> {
        match v {
            Value::Entity(e) => Ok(*e),
            _ => Err(mismatch("entity", v)),
        }
    }
}

impl TryFrom<&Value> for [f64; 2] {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<[f64; 2], FromValueError> {
        match v {
            Value::Vec2(x) => Ok(*x),
            _ => Err(mismatch(ValueType::Vec2.name(), v)),
        }
    }
}

impl TryFrom<&Value> for [f64; 3] {
    type Error = FromValueError;
    fn try_from(v: &Value) -> Result<[f64; 3], FromValueError> {
        match v {
            Value::Vec3(x) => Ok(*x),
            _ => Err(mismatch(ValueType::Vec3.name(), v)),
        }
    }
}

impl From<&Value> for Value {
    fn from(v: &Value) -> Value {
        v.clone()
    }
}

/// A nullable column: null is `None`.
macro_rules! option_from_value {
    ($($t:ty),*) => {$(
        impl<'a> TryFrom<&'a Value> for Option<$t> {
            type Error = FromValueError;
            fn try_from(v: &'a Value) -> Result<Option<$t>, FromValueError> {
                match v {
                    Value::Null => Ok(None),
                    other => <$t>::try_from(other).map(Some),
                }
            }
        }
    )*};
}
option_from_value!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    bool,
    &'a str,
    String,
    Entity,
    [f64; 2],
    [f64; 3]
);
