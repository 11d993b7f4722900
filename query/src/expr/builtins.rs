//! The built-in functions on single values: what each computes (the kernels over vectors in
//! [`crate::expr::functions`] have the same semantics).

use ecsdb_engine::Value;

use crate::expr::ops::{self, OpResult};
use crate::functions::Function;
use crate::types::Builtin;

/// Calls `func` on one row's argument values.
pub fn call_function(func: &Function, args: &[Value]) -> OpResult {
    match func {
        Function::Builtin(b) => call(*b, args),
        Function::Registered(name, f) => f(args).map_err(|e| format!("{name}(): {e}")),
    }
}

/// Calls `this` (arguments already checked by [`Builtin::result_type`] where their types
/// were known; values of other types are an error, never a panic).
pub fn call(this: Builtin, args: &[Value]) -> OpResult {
    let name = this.name();
    let bad = |v: &Value| format!("{name}() cannot take {}", v.describe());
    let arg = |i: usize| args.get(i).ok_or_else(|| format!("{name}() is missing argument {}", i + 1));
    if this != Builtin::Min && this != Builtin::Max && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    match this {
        Builtin::Abs => match arg(0)? {
            Value::Int(i) => i.checked_abs().map(Value::Int).ok_or_else(|| "integer overflow in abs()".into()),
            Value::Float(f) => Ok(Value::Float(f.abs())),
            v => Err(bad(v)),
        },
        Builtin::Floor | Builtin::Ceil => match arg(0)? {
            Value::Int(i) => Ok(Value::Int(*i)),
            Value::Float(f) => Ok(Value::Float(if this == Builtin::Floor { f.floor() } else { f.ceil() })),
            v => Err(bad(v)),
        },
        Builtin::Round => {
            let digits = match args.get(1) {
                None => 0,
                Some(Value::Int(d)) => (*d).clamp(-30, 30) as i32,
                Some(v) => return Err(bad(v)),
            };
            match arg(0)? {
                Value::Int(i) => Ok(Value::Int(*i)),
                Value::Float(f) => {
                    let scale = 10f64.powi(digits);
                    let r = (f * scale).round() / scale;
                    Ok(Value::Float(if r.is_finite() { r } else { *f }))
                }
                v => Err(bad(v)),
            }
        }
        Builtin::Sqrt => match arg(0)?.as_f64() {
            Some(x) if x < 0.0 => Ok(Value::Null),
            Some(x) => Ok(Value::Float(x.sqrt())),
            None => Err(bad(arg(0)?)),
        },
        Builtin::Min | Builtin::Max => {
            if args.iter().any(Value::is_null) {
                return Ok(Value::Null);
            }
            let mut best = arg(0)?.clone();
            let mut promote = matches!(best, Value::Float(_));
            for v in &args[1..] {
                promote |= matches!(v, Value::Float(_));
                let o = ops::compare(v, &best)?.ok_or_else(|| format!("{name}() cannot order NaN"))?;
                let better = if this == Builtin::Min { o.is_lt() } else { o.is_gt() };
                if better {
                    best = v.clone();
                }
            }
            Ok(match best {
                Value::Int(i) if promote => Value::Float(i as f64),
                v => v,
            })
        }
        Builtin::Len => match arg(0)? {
            Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
            v => Err(bad(v)),
        },
        Builtin::Lower | Builtin::Upper => match arg(0)? {
            Value::Str(s) => Ok(Value::Str(if this == Builtin::Lower { s.to_lowercase() } else { s.to_uppercase() })),
            v => Err(bad(v)),
        },
        Builtin::Distance => Ok(Value::Float(distance(arg(0)?, arg(1)?).map_err(|e| format!("{name}(): {e}"))?)),
        Builtin::Within => {
            let d = distance(arg(0)?, arg(1)?).map_err(|e| format!("{name}(): {e}"))?;
            let r = arg(2)?.as_f64().ok_or_else(|| bad(&args[2]))?;
            Ok(Value::Bool(d <= r))
        }
        Builtin::Inside => {
            let (p, lo, hi) = (coords(arg(0)?), coords(arg(1)?), coords(arg(2)?));
            match (p, lo, hi) {
                (Some(p), Some(lo), Some(hi)) if p.len() == lo.len() && p.len() == hi.len() => {
                    Ok(Value::Bool(p.iter().zip(lo.iter().zip(hi)).all(|(x, (l, h))| l <= x && x <= h)))
                }
                _ => Err(format!("{name}() needs three vectors of one size")),
            }
        }
    }
}

fn coords(v: &Value) -> Option<&[f64]> {
    match v {
        Value::Vec2(x) => Some(x),
        Value::Vec3(x) => Some(x),
        _ => None,
    }
}

/// Euclidean distance between two vectors of one size.
pub fn distance(a: &Value, b: &Value) -> Result<f64, String> {
    match (coords(a), coords(b)) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            Ok(x.iter().zip(y).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt())
        }
        _ => Err(format!("needs two vectors of one size, found {} and {}", a.value_type(), b.value_type())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_values() {
        let f = |b: Builtin, args: &[Value]| call(b, args);
        assert_eq!(f(Builtin::Abs, &[Value::Int(-3)]), Ok(Value::Int(3)));
        assert!(f(Builtin::Abs, &[Value::Int(i64::MIN)]).is_err());
        assert_eq!(f(Builtin::Sqrt, &[Value::Int(-1)]), Ok(Value::Null));
        assert_eq!(f(Builtin::Sqrt, &[Value::Int(4)]), Ok(Value::Float(2.0)));
        assert_eq!(f(Builtin::Round, &[Value::Float(2.5)]), Ok(Value::Float(3.0)));
        assert_eq!(f(Builtin::Round, &[Value::Float(2.345), Value::Int(2)]), Ok(Value::Float(2.35)));
        assert_eq!(f(Builtin::Min, &[Value::Int(3), Value::Float(2.5)]), Ok(Value::Float(2.5)));
        assert_eq!(f(Builtin::Max, &[Value::Int(3), Value::Float(2.5)]), Ok(Value::Float(3.0)));
        assert_eq!(f(Builtin::Max, &[Value::Int(3), Value::Null]), Ok(Value::Null));
        assert_eq!(f(Builtin::Len, &[Value::Str("héllo".into())]), Ok(Value::Int(5)));
        assert_eq!(f(Builtin::Upper, &[Value::Str("abc".into())]), Ok(Value::Str("ABC".into())));
        assert_eq!(f(Builtin::Distance, &[Value::Vec2([0.0, 0.0]), Value::Vec2([3.0, 4.0])]), Ok(Value::Float(5.0)));
        assert_eq!(
            f(Builtin::Within, &[Value::Vec2([0.0, 0.0]), Value::Vec2([3.0, 4.0]), Value::Int(5)]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            f(Builtin::Inside, &[Value::Vec2([1.0, 5.0]), Value::Vec2([0.0, 0.0]), Value::Vec2([2.0, 5.0])]),
            Ok(Value::Bool(true))
        );
        assert!(f(Builtin::Distance, &[Value::Vec2([0.0, 0.0]), Value::Int(1)]).is_err());
        assert!(f(Builtin::Len, &[]).is_err());
    }
}
