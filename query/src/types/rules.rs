//! Type rules: what each operator accepts and returns.
//!
//! [`ValueType::Any`] (a parameter, a registered function's result) fits everywhere; the
//! evaluator checks such values when they are known. [`ValueType::Null`] (the `null` literal)
//! fits everywhere too and makes the result null.

use ecsdb_engine::{FieldType, ValueType};

use crate::types::{AggFunc, BinaryOp};

/// The value type a field type reads as.
pub fn field_type(ty: FieldType) -> ValueType {
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

fn open(t: ValueType) -> bool {
    matches!(t, ValueType::Null | ValueType::Any)
}

/// Whether `a = b` is allowed.
pub fn equatable(a: ValueType, b: ValueType) -> bool {
    open(a) || open(b) || a == b || (a.is_numeric() && b.is_numeric())
}

/// Whether `a < b` is allowed.
pub fn orderable(a: ValueType, b: ValueType) -> bool {
    let scalar = |t: ValueType| !matches!(t, ValueType::Vec2 | ValueType::Vec3 | ValueType::Object);
    equatable(a, b) && scalar(a) && scalar(b)
}

/// Whether a value of this type can be a condition.
pub fn is_condition(t: ValueType) -> bool {
    matches!(t, ValueType::Bool | ValueType::Null | ValueType::Any)
}

/// The result type of `a op b`, or why the operands do not fit.
pub fn binary(op: BinaryOp, a: ValueType, b: ValueType) -> Result<ValueType, String> {
    use ValueType as T;
    let mismatch = || format!("cannot apply '{}' to {a} and {b}", op.symbol());
    match op {
        BinaryOp::And | BinaryOp::Or => {
            if is_condition(a) && is_condition(b) {
                Ok(T::Bool)
            } else {
                let bad = if is_condition(a) { b } else { a };
                Err(format!("{} needs conditions (bool), found {bad}", op.symbol()))
            }
        }
        BinaryOp::Eq | BinaryOp::Ne => {
            if equatable(a, b) && a != T::Object {
                Ok(T::Bool)
            } else {
                Err(format!("cannot compare {a} with {b}"))
            }
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            if a.is_vector() || b.is_vector() {
                Err("vectors cannot be ordered (only = and != compare them)".into())
            } else if orderable(a, b) {
                Ok(T::Bool)
            } else {
                Err(format!("cannot compare {a} with {b}"))
            }
        }
        BinaryOp::Concat => {
            let texty = |t: T| matches!(t, T::Str | T::Int | T::Float | T::Bool | T::Entity | T::Null | T::Any);
            if texty(a) && texty(b) { Ok(T::Str) } else { Err(mismatch()) }
        }
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => {
            let num = |t: T| t.is_numeric() || open(t);
            match (a, b) {
                (T::Any, _) | (_, T::Any) => {
                    if (a.is_numeric() || a.is_vector() || open(a)) && (b.is_numeric() || b.is_vector() || open(b)) {
                        Ok(T::Any)
                    } else {
                        Err(mismatch())
                    }
                }
                (T::Null, T::Null) => Ok(T::Null),
                (T::Null, t) | (t, T::Null) if t.is_numeric() || t.is_vector() => Ok(t),
                (T::Int, T::Int) => Ok(T::Int),
                (x, y) if x.is_numeric() && y.is_numeric() => Ok(T::Float),
                (x, y) if x.is_vector() && x == y && matches!(op, BinaryOp::Add | BinaryOp::Sub) => Ok(x),
                (x, y) if x.is_vector() && num(y) && matches!(op, BinaryOp::Mul | BinaryOp::Div) => Ok(x),
                (x, y) if num(x) && y.is_vector() && op == BinaryOp::Mul => Ok(y),
                _ => Err(mismatch()),
            }
        }
    }
}

/// The type of `-x`.
pub fn negate(t: ValueType) -> Result<ValueType, String> {
    if t.is_numeric() || t.is_vector() || open(t) { Ok(t) } else { Err(format!("cannot negate {t}")) }
}

/// The type of an aggregate over an argument of type `arg` (`None` for `count(*)`).
pub fn aggregate(func: AggFunc, arg: Option<ValueType>) -> Result<ValueType, String> {
    use ValueType as T;
    let Some(t) = arg else { return Ok(T::Int) };
    match func {
        AggFunc::Count => Ok(T::Int),
        AggFunc::Sum => match t {
            T::Int | T::Null => Ok(T::Int),
            T::Float => Ok(T::Float),
            T::Any => Ok(T::Any),
            other => Err(format!("sum() needs numbers, found {other}")),
        },
        AggFunc::Avg => {
            if t.is_numeric() || open(t) {
                Ok(T::Float)
            } else {
                Err(format!("avg() needs numbers, found {t}"))
            }
        }
        AggFunc::Min | AggFunc::Max => {
            if orderable(t, t) {
                Ok(t)
            } else {
                Err(format!("{}() cannot order {t} values", func.name()))
            }
        }
    }
}

/// Whether a value of type `value` may be stored in a field of type `ty` (it may still fail
/// to convert: an int out of the field's range).
pub fn storable(ty: ecsdb_engine::FieldType, value: ValueType) -> bool {
    use ecsdb_engine::FieldType as F;
    match value {
        ValueType::Any => true,
        ValueType::Null => ty == F::Entity,
        ValueType::Int => ty.is_numeric(),
        ValueType::Float => ty.is_numeric(),
        ValueType::Bool => ty == F::Bool,
        ValueType::Str => ty == F::String,
        ValueType::Entity => ty == F::Entity,
        ValueType::Vec2 => ty == F::Vec2,
        ValueType::Vec3 => ty == F::Vec3,
        ValueType::Object => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ValueType as T;

    #[test]
    fn rules() {
        assert_eq!(binary(BinaryOp::Add, T::Int, T::Int), Ok(T::Int));
        assert_eq!(binary(BinaryOp::Div, T::Int, T::Float), Ok(T::Float));
        assert_eq!(binary(BinaryOp::Add, T::Vec3, T::Vec3), Ok(T::Vec3));
        assert_eq!(binary(BinaryOp::Mul, T::Int, T::Vec2), Ok(T::Vec2));
        assert!(binary(BinaryOp::Add, T::Vec3, T::Vec2).is_err());
        assert!(binary(BinaryOp::Add, T::Str, T::Int).is_err());
        assert_eq!(binary(BinaryOp::Lt, T::Int, T::Float), Ok(T::Bool));
        assert!(binary(BinaryOp::Lt, T::Vec2, T::Vec2).is_err());
        assert_eq!(binary(BinaryOp::Eq, T::Vec2, T::Vec2), Ok(T::Bool));
        assert!(binary(BinaryOp::Eq, T::Str, T::Int).is_err());
        assert_eq!(binary(BinaryOp::Eq, T::Str, T::Null), Ok(T::Bool));
        assert!(binary(BinaryOp::And, T::Int, T::Bool).is_err());
        assert_eq!(binary(BinaryOp::Concat, T::Str, T::Int), Ok(T::Str));
        assert_eq!(aggregate(AggFunc::Sum, Some(T::Int)), Ok(T::Int));
        assert_eq!(aggregate(AggFunc::Avg, Some(T::Int)), Ok(T::Float));
        assert!(aggregate(AggFunc::Sum, Some(T::Str)).is_err());
        assert_eq!(aggregate(AggFunc::Max, Some(T::Str)), Ok(T::Str));
        assert!(aggregate(AggFunc::Max, Some(T::Vec2)).is_err());
        assert_eq!(negate(T::Vec2), Ok(T::Vec2));
        assert!(negate(T::Str).is_err());
    }
}
