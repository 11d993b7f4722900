//! Dynamic values: what fields read as by name, and what the query language computes with.

use std::fmt;

pub use crate::component::FieldValue;
use crate::component::{ComponentInfo, FieldInfo, FieldType};
use crate::entity::Entity;
use crate::error::{EngineError, Result};

mod component_values;
mod from_value;

pub use from_value::FromValueError;

pub use component_values::ComponentValues;

pub use crate::value_type::ValueType;

/// A dynamically typed value.
///
/// Every integer field type reads as [`Value::Int`] (i64), every float type as
/// [`Value::Float`] (f64), vectors as `Vec2`/`Vec3` of f64.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// SQL null.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// An entity handle.
    Entity(Entity),
    /// A 2-vector.
    Vec2([f64; 2]),
    /// A 3-vector.
    Vec3([f64; 3]),
    /// A component as an object: field name → value, in declaration order.
    Object(Vec<(String, Value)>),
}

impl ValueType {
    /// The value type a field type reads as.
    pub fn of_field(ty: FieldType) -> ValueType {
        match ty {
            FieldType::Bool => ValueType::Bool,
            FieldType::F32 | FieldType::F64 => ValueType::Float,
            FieldType::String => ValueType::Str,
            FieldType::Entity => ValueType::Entity,
            FieldType::Vec2 => ValueType::Vec2,
            FieldType::Vec3 => ValueType::Vec3,
            _ => ValueType::Int,
        }
    }
}

impl Value {
    /// The type of this value.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Null => ValueType::Null,
            Value::Bool(_) => ValueType::Bool,
            Value::Int(_) => ValueType::Int,
            Value::Float(_) => ValueType::Float,
            Value::Str(_) => ValueType::Str,
            Value::Entity(_) => ValueType::Entity,
            Value::Vec2(_) => ValueType::Vec2,
            Value::Vec3(_) => ValueType::Vec3,
            Value::Object(_) => ValueType::Object,
        }
    }

    /// Whether this is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as f64 when it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    /// A short description for error messages (`float 3.5`, `string 'red'`).
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Str(s) => format!("string '{s}'"),
            other => format!("{} {other}", other.value_type()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => {
                if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
                    write!(f, "{x:.1}")
                } else {
                    write!(f, "{x}")
                }
            }
            Value::Str(s) => f.write_str(s),
            Value::Entity(e) => write!(f, "{e}"),
            Value::Vec2([a, b]) => write!(f, "[{}, {}]", Value::Float(*a), Value::Float(*b)),
            Value::Vec3([a, b, c]) => {
                write!(f, "[{}, {}, {}]", Value::Float(*a), Value::Float(*b), Value::Float(*c))
            }
            Value::Object(fields) => {
                f.write_str("{")?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match v {
                        Value::Str(s) => write!(f, "{k}: '{s}'")?,
                        v => write!(f, "{k}: {v}")?,
                    }
                }
                f.write_str("}")
            }
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Float(v as f64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}
impl From<Entity> for Value {
    fn from(v: Entity) -> Self {
        Value::Entity(v)
    }
}

/// Reads a field's value kept in its stored form (a default, a converted write) as it
/// reads from storage: `Err` with the type for a u64 above `i64::MAX`, as [`read_field`].
pub fn read_field_value(stored: &FieldValue, ty: FieldType) -> std::result::Result<Value, ValueType> {
    match stored {
        FieldValue::Str(s) => Ok(Value::Str(s.clone())),
        FieldValue::Plain(bytes, n) => {
            /// Room for the widest plain field (12 bytes), aligned for any of them.
            #[repr(align(8))]
            struct Aligned([u8; 16]);
            if !ty.is_plain() {
                return Err(ValueType::of_field(ty));
            }
            let mut buf = Aligned([0; 16]);
            let len = (*n as usize).min(ty.layout().size());
            buf.0[..len].copy_from_slice(&bytes[..len]);
            let field = FieldInfo { name: String::new(), ty, offset: 0 };
            // SAFETY: `buf` is aligned for any plain field type and holds one of type `ty` at
            // offset 0 (bytes past `len` are zero; any bool byte reads as a bool).
            unsafe { read_field(buf.0.as_ptr(), &field) }
        }
    }
}

/// Reads a field of a component value.
///
/// # Safety
/// `base` must point to a valid, initialised value of the component `field` belongs to.
#[inline]
pub unsafe fn read_field(base: *const u8, field: &FieldInfo) -> std::result::Result<Value, ValueType> {
    // SAFETY: the caller guarantees `base` is a live value of the component; the schema's
    // offset and type describe a properly aligned, initialised field inside it.
    unsafe {
        let p = base.add(field.offset);
        Ok(match field.ty {
            FieldType::Bool => Value::Bool(*p != 0),
            FieldType::I8 => Value::Int(*(p as *const i8) as i64),
            FieldType::I16 => Value::Int(*(p as *const i16) as i64),
            FieldType::I32 => Value::Int(*(p as *const i32) as i64),
            FieldType::I64 => Value::Int(*(p as *const i64)),
            FieldType::U8 => Value::Int(*p as i64),
            FieldType::U16 => Value::Int(*(p as *const u16) as i64),
            FieldType::U32 => Value::Int(*(p as *const u32) as i64),
            FieldType::U64 => {
                let v = *(p as *const u64);
                Value::Int(i64::try_from(v).map_err(|_| ValueType::Int)?)
            }
            FieldType::F32 => Value::Float(*(p as *const f32) as f64),
            FieldType::F64 => Value::Float(*(p as *const f64)),
            FieldType::String => Value::Str((*(p as *const String)).clone()),
            FieldType::Entity => {
                let e = *(p as *const Entity);
                if e.is_null() { Value::Null } else { Value::Entity(e) }
            }
            FieldType::Vec2 => {
                let v = *(p as *const [f32; 2]);
                Value::Vec2([v[0] as f64, v[1] as f64])
            }
            FieldType::Vec3 => {
                let v = *(p as *const [f32; 3]);
                Value::Vec3([v[0] as f64, v[1] as f64, v[2] as f64])
            }
        })
    }
}

/// Reads a whole component value as an object (a tag reads as `{}`).
///
/// # Safety
/// `base` must point to a valid, initialised value of `info`'s component.
pub unsafe fn read_object(base: *const u8, info: &ComponentInfo) -> Result<Value> {
    if info.is_opaque() {
        return Err(EngineError::Opaque(info.name().to_string()));
    }
    let mut out = Vec::with_capacity(info.fields().len());
    for f in info.fields() {
        // SAFETY: forwarded from the caller's contract.
        let v = unsafe { read_field(base, f) }.map_err(|ty| EngineError::OutOfRange {
            component: info.name().to_string(),
            field: f.name.clone(),
            ty,
        })?;
        out.push((f.name.clone(), v));
    }
    Ok(Value::Object(out))
}

/// Converts a value to a field's type where no information is lost: an int into any integer
/// type in range or into a float, an integral float into an integer, any number into a float,
/// a 2- or 3-vector into the vector type of its size, null into an entity field (the null
/// entity). Everything else is a type error naming the component and field.
pub fn convert_value(component: &str, field: &FieldInfo, value: &Value) -> Result<FieldValue> {
    let err = || EngineError::TypeMismatch {
        component: component.to_string(),
        field: field.name.clone(),
        expected: field.ty.name().to_string(),
        found: value.describe(),
    };
    let int = || -> Result<i128> {
        match *value {
            Value::Int(i) => Ok(i as i128),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => Ok(f as i128),
            _ => Err(err()),
        }
    };
    macro_rules! int_field {
        ($t:ty) => {{
            let v = <$t>::try_from(int()?).map_err(|_| err())?;
            FieldValue::plain(&v.to_le_bytes())
        }};
    }
    Ok(match field.ty {
        FieldType::Bool => match value {
            Value::Bool(b) => FieldValue::plain(&[*b as u8]),
            _ => return Err(err()),
        },
        FieldType::I8 => int_field!(i8),
        FieldType::I16 => int_field!(i16),
        FieldType::I32 => int_field!(i32),
        FieldType::I64 => int_field!(i64),
        FieldType::U8 => int_field!(u8),
        FieldType::U16 => int_field!(u16),
        FieldType::U32 => int_field!(u32),
        FieldType::U64 => int_field!(u64),
        FieldType::F32 => {
            let x = value.as_f64().ok_or_else(err)?;
            let y = x as f32;
            // Rounding to the nearest f32 is expected; overflowing to infinity loses the value.
            if x.is_finite() && y.is_infinite() {
                return Err(err());
            }
            FieldValue::plain(&y.to_le_bytes())
        }
        FieldType::F64 => FieldValue::plain(&value.as_f64().ok_or_else(err)?.to_le_bytes()),
        FieldType::String => match value {
            Value::Str(s) => FieldValue::Str(s.clone()),
            _ => return Err(err()),
        },
        FieldType::Entity => match value {
            Value::Entity(e) => FieldValue::plain(&e.to_bits().to_le_bytes()),
            Value::Null => FieldValue::plain(&Entity::NULL.to_bits().to_le_bytes()),
            _ => return Err(err()),
        },
        FieldType::Vec2 => match value {
            Value::Vec2([a, b]) => {
                let mut bytes = [0u8; 8];
                bytes[..4].copy_from_slice(&(*a as f32).to_le_bytes());
                bytes[4..].copy_from_slice(&(*b as f32).to_le_bytes());
                FieldValue::plain(&bytes)
            }
            _ => return Err(err()),
        },
        FieldType::Vec3 => match value {
            Value::Vec3(v) => {
                let mut bytes = [0u8; 12];
                for (i, x) in v.iter().enumerate() {
                    bytes[i * 4..i * 4 + 4].copy_from_slice(&(*x as f32).to_le_bytes());
                }
                FieldValue::plain(&bytes)
            }
            _ => return Err(err()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(ty: FieldType) -> FieldInfo {
        FieldInfo { name: "f".into(), ty, offset: 0 }
    }

    #[test]
    fn conversions_lose_nothing() {
        assert!(convert_value("C", &field(FieldType::I32), &Value::Float(3.5)).is_err());
        assert!(convert_value("C", &field(FieldType::I32), &Value::Float(3.0)).is_ok());
        assert!(convert_value("C", &field(FieldType::U8), &Value::Int(256)).is_err());
        assert!(convert_value("C", &field(FieldType::U8), &Value::Int(-1)).is_err());
        assert!(convert_value("C", &field(FieldType::F32), &Value::Int(7)).is_ok());
        assert!(convert_value("C", &field(FieldType::F32), &Value::Float(1e300)).is_err());
        assert!(convert_value("C", &field(FieldType::F32), &Value::Float(f64::INFINITY)).is_ok());
        assert!(convert_value("C", &field(FieldType::Bool), &Value::Int(1)).is_err());
        assert!(convert_value("C", &field(FieldType::String), &Value::Null).is_err());
        assert!(convert_value("C", &field(FieldType::Entity), &Value::Null).is_ok());
        assert!(convert_value("C", &field(FieldType::Vec3), &Value::Vec2([1.0, 2.0])).is_err());
        let e = convert_value("Health", &field(FieldType::F32), &Value::Str("x".into())).unwrap_err();
        assert_eq!(e.to_string(), "cannot store string 'x' in field 'Health.f' of type f32");
    }

    #[test]
    fn write_then_read() {
        for (ty, v) in [
            (FieldType::I16, Value::Int(-300)),
            (FieldType::U64, Value::Int(i64::MAX)),
            (FieldType::F64, Value::Float(0.25)),
            (FieldType::Vec3, Value::Vec3([1.0, -2.0, 0.5])),
            (FieldType::Entity, Value::Entity(Entity::from_parts(3, 9))),
            (FieldType::Bool, Value::Bool(true)),
        ] {
            let f = field(ty);
            let mut buf = [0u64; 2];
            let fv = convert_value("C", &f, &v).unwrap();
            // SAFETY: buf is 16 bytes, aligned for every plain field type used here.
            unsafe {
                fv.write(buf.as_mut_ptr() as *mut u8, &f);
                assert_eq!(read_field(buf.as_ptr() as *const u8, &f).unwrap(), v);
            }
        }
    }

    #[test]
    fn display() {
        assert_eq!(Value::Float(2.0).to_string(), "2.0");
        assert_eq!(Value::Vec2([1.0, 0.5]).to_string(), "[1.0, 0.5]");
        let obj = Value::Object(vec![("hp".into(), Value::Float(3.0)), ("name".into(), Value::Str("a".into()))]);
        assert_eq!(obj.to_string(), "{hp: 3.0, name: 'a'}");
    }
}
