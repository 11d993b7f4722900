//! The language's operators on single values: arithmetic, comparison, logic, `LIKE`, and the
//! total order used by ORDER BY and GROUP BY.
//!
//! These are the semantics; the column kernels in [`crate::execute::scan`] are faster
//! implementations of the same rules for common shapes. Errors are plain messages; the
//! evaluator attaches the span of the expression.
//!
//! Rules (where docs/query-language.md is silent, SQLite's choice unless noted):
//! - null in, null out (except `AND`/`OR`, three-valued, and `IS NULL`);
//! - `int ∘ int` is an int; overflow is an error (SQLite would switch to float; we refuse to
//!   lose precision silently); `int / int` truncates toward zero; `/` and `%` by zero are null;
//! - `int ∘ float` promotes to float; `%` on floats is the remainder of truncated division;
//! - vectors add and subtract element-wise with vectors of the same size, and scale by numbers
//!   (`v * 2`, `2 * v`, `v / 2`); vectors compare with `=` and `!=` only;
//! - `||` joins strings; numbers, booleans and entities are turned into text first.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use ecsdb_engine::Value;

use crate::types::BinaryOp;

/// Result of an operator: a value or a message.
pub type OpResult<T = Value> = Result<T, String>;

fn type_error(op: &str, a: &Value, b: &Value) -> String {
    format!("cannot apply '{op}' to {} and {}", a.value_type(), b.value_type())
}

/// Compares two values for `<`, `<=`, `>`, `>=` (and `=` of orderable types): `None` when
/// either is null (or a float is NaN).
pub fn compare(a: &Value, b: &Value) -> OpResult<Option<Ordering>> {
    Ok(match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Entity(x), Value::Entity(y)) => Some(x.cmp(y)),
        (Value::Vec2(_), Value::Vec2(_)) | (Value::Vec3(_), Value::Vec3(_)) => {
            return Err("vectors cannot be ordered (only = and != compare them)".into());
        }
        _ => return Err(format!("cannot compare {} with {}", a.value_type(), b.value_type())),
    })
}

/// `a = b`: null when either is null.
pub fn equals(a: &Value, b: &Value) -> OpResult<Option<bool>> {
    Ok(match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Vec2(x), Value::Vec2(y)) => Some(x == y),
        (Value::Vec3(x), Value::Vec3(y)) => Some(x == y),
        (Value::Object(x), Value::Object(y)) => Some(x == y),
        _ => compare(a, b)?.map(|o| o == Ordering::Equal),
    })
}

/// The truth value of a condition: `Some(true)`, `Some(false)`, or `None` for null.
pub fn truth(v: &Value) -> OpResult<Option<bool>> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        other => Err(format!("expected a condition (bool), found {}", other.value_type())),
    }
}

fn bool_value(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

/// Applies a binary operator.
pub fn binary(op: BinaryOp, a: &Value, b: &Value) -> OpResult {
    match op {
        BinaryOp::And => {
            let (x, y) = (truth(a)?, truth(b)?);
            Ok(bool_value(match (x, y) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }))
        }
        BinaryOp::Or => {
            let (x, y) = (truth(a)?, truth(b)?);
            Ok(bool_value(match (x, y) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }))
        }
        BinaryOp::Eq => Ok(bool_value(equals(a, b)?)),
        BinaryOp::Ne => Ok(bool_value(equals(a, b)?.map(|x| !x))),
        BinaryOp::Lt => Ok(bool_value(compare(a, b)?.map(|o| o == Ordering::Less))),
        BinaryOp::Le => Ok(bool_value(compare(a, b)?.map(|o| o != Ordering::Greater))),
        BinaryOp::Gt => Ok(bool_value(compare(a, b)?.map(|o| o == Ordering::Greater))),
        BinaryOp::Ge => Ok(bool_value(compare(a, b)?.map(|o| o != Ordering::Less))),
        BinaryOp::Concat => concat(a, b),
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => arith(op, a, b),
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Entity(_) => Some(v.to_string()),
        _ => None,
    }
}

fn concat(a: &Value, b: &Value) -> OpResult {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    match (text_of(a), text_of(b)) {
        (Some(mut x), Some(y)) => {
            x.push_str(&y);
            Ok(Value::Str(x))
        }
        _ => Err(type_error("||", a, b)),
    }
}

fn overflow(op: BinaryOp) -> String {
    format!("integer overflow in '{}'", op.symbol())
}

/// Integer arithmetic with the language's rules.
#[inline]
pub fn int_arith(op: BinaryOp, x: i64, y: i64) -> OpResult {
    let r = match op {
        BinaryOp::Add => x.checked_add(y),
        BinaryOp::Sub => x.checked_sub(y),
        BinaryOp::Mul => x.checked_mul(y),
        BinaryOp::Div => {
            if y == 0 {
                return Ok(Value::Null);
            }
            x.checked_div(y)
        }
        BinaryOp::Mod => {
            if y == 0 {
                return Ok(Value::Null);
            }
            Some(x.checked_rem(y).unwrap_or(0))
        }
        _ => return Err(format!("'{}' is not arithmetic", op.symbol())),
    };
    r.map(Value::Int).ok_or_else(|| overflow(op))
}

/// Float arithmetic with the language's rules (division by zero is null).
#[inline]
pub fn float_arith(op: BinaryOp, x: f64, y: f64) -> OpResult {
    Ok(match op {
        BinaryOp::Add => Value::Float(x + y),
        BinaryOp::Sub => Value::Float(x - y),
        BinaryOp::Mul => Value::Float(x * y),
        BinaryOp::Div if y == 0.0 => Value::Null,
        BinaryOp::Div => Value::Float(x / y),
        BinaryOp::Mod if y == 0.0 => Value::Null,
        BinaryOp::Mod => Value::Float(x % y),
        _ => return Err(format!("'{}' is not arithmetic", op.symbol())),
    })
}

fn vec_map<const N: usize>(v: [f64; N], f: impl Fn(f64) -> f64) -> [f64; N] {
    v.map(f)
}

fn vec_zip<const N: usize>(a: [f64; N], b: [f64; N], f: impl Fn(f64, f64) -> f64) -> [f64; N] {
    let mut out = [0.0; N];
    for i in 0..N {
        out[i] = f(a[i], b[i]);
    }
    out
}

fn arith(op: BinaryOp, a: &Value, b: &Value) -> OpResult {
    let scale = |k: f64, inverse: bool| -> Option<f64> { if inverse { (k != 0.0).then(|| 1.0 / k) } else { Some(k) } };
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
        (Value::Int(x), Value::Int(y)) => int_arith(op, *x, *y),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            float_arith(op, a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0))
        }
        (Value::Vec2(x), Value::Vec2(y)) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
            Ok(Value::Vec2(vec_zip(*x, *y, |p, q| if op == BinaryOp::Add { p + q } else { p - q })))
        }
        (Value::Vec3(x), Value::Vec3(y)) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
            Ok(Value::Vec3(vec_zip(*x, *y, |p, q| if op == BinaryOp::Add { p + q } else { p - q })))
        }
        (Value::Vec2(_) | Value::Vec3(_), Value::Int(_) | Value::Float(_))
            if matches!(op, BinaryOp::Mul | BinaryOp::Div) =>
        {
            let Some(k) = scale(b.as_f64().unwrap_or(0.0), op == BinaryOp::Div) else { return Ok(Value::Null) };
            Ok(match a {
                Value::Vec2(v) => Value::Vec2(vec_map(*v, |x| x * k)),
                Value::Vec3(v) => Value::Vec3(vec_map(*v, |x| x * k)),
                _ => unreachable_value(),
            })
        }
        (Value::Int(_) | Value::Float(_), Value::Vec2(_) | Value::Vec3(_)) if op == BinaryOp::Mul => arith(op, b, a),
        _ => Err(type_error(op.symbol(), a, b)),
    }
}

/// Placeholder for match arms the guards above make impossible; never a panic.
fn unreachable_value() -> Value {
    Value::Null
}

/// Unary minus.
pub fn neg(v: &Value) -> OpResult {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(|| "integer overflow in '-'".to_string()),
        Value::Float(f) => Ok(Value::Float(-f)),
        Value::Vec2(x) => Ok(Value::Vec2(vec_map(*x, |a| -a))),
        Value::Vec3(x) => Ok(Value::Vec3(vec_map(*x, |a| -a))),
        other => Err(format!("cannot negate {}", other.value_type())),
    }
}

/// `NOT`.
pub fn not(v: &Value) -> OpResult {
    Ok(bool_value(truth(v)?.map(|b| !b)))
}

/// `s LIKE pattern`: `%` matches any run of characters, `_` exactly one; case-sensitive; no
/// escape character. Linear-space, no recursion (so no pattern can blow the stack).
pub fn like(s: &str, pattern: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if j < p.len() && (p[j] == '_' || (p[j] != '%' && p[j] == s[i])) {
            i += 1;
            j += 1;
        } else if j < p.len() && p[j] == '%' {
            star = Some((j, i));
            j += 1;
        } else if let Some((sj, si)) = star {
            j = sj + 1;
            i = si + 1;
            star = Some((sj, si + 1));
        } else {
            return false;
        }
    }
    p[j..].iter().all(|&c| c == '%')
}

/// `LIKE` on values (null in, null out).
pub fn like_values(s: &Value, pattern: &Value) -> OpResult<Option<bool>> {
    match (s, pattern) {
        (Value::Null, _) | (_, Value::Null) => Ok(None),
        (Value::Str(a), Value::Str(b)) => Ok(Some(like(a, b))),
        _ => Err(format!("LIKE needs strings, found {} and {}", s.value_type(), pattern.value_type())),
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::Float(_) => 2,
        Value::Str(_) => 3,
        Value::Entity(_) => 4,
        Value::Vec2(_) => 5,
        Value::Vec3(_) => 6,
        Value::Object(_) => 7,
    }
}

fn float_total(x: f64, y: f64) -> Ordering {
    // -0.0 and 0.0 are equal keys; NaN sorts after every number.
    if x == y { Ordering::Equal } else { x.total_cmp(&y) }
}

/// The total order of ORDER BY: null first, then by type (bool, numbers, strings, entities,
/// vectors, objects), then by value; ints and floats compare as numbers.
pub fn sort_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => float_total(*x, *y),
        (Value::Int(x), Value::Float(y)) => float_total(*x as f64, *y).then(Ordering::Less),
        (Value::Float(x), Value::Int(y)) => float_total(*x, *y as f64).then(Ordering::Greater),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Entity(x), Value::Entity(y)) => x.cmp(y),
        (Value::Vec2(x), Value::Vec2(y)) => slice_cmp(x, y),
        (Value::Vec3(x), Value::Vec3(y)) => slice_cmp(x, y),
        (Value::Object(x), Value::Object(y)) => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
                let o = ka.cmp(kb).then_with(|| sort_cmp(va, vb));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

fn slice_cmp(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = float_total(*x, *y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A value usable as a hash key (GROUP BY): equal exactly when [`sort_cmp`] says equal, except
/// that an int and a float never share a key.
#[derive(Clone, Debug)]
pub struct KeyValue(pub Value);

impl PartialEq for KeyValue {
    fn eq(&self, other: &KeyValue) -> bool {
        type_rank(&self.0) == type_rank(&other.0)
            && std::mem::discriminant(&self.0) == std::mem::discriminant(&other.0)
            && sort_cmp(&self.0, &other.0) == Ordering::Equal
    }
}

impl Eq for KeyValue {}

fn hash_float<H: Hasher>(x: f64, h: &mut H) {
    let x = if x == 0.0 { 0.0 } else { x };
    if x.is_nan() {
        h.write_u64(u64::MAX);
    } else {
        h.write_u64(x.to_bits());
    }
}

fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    std::mem::discriminant(v).hash(h);
    match v {
        Value::Null => {}
        Value::Bool(b) => b.hash(h),
        Value::Int(i) => i.hash(h),
        Value::Float(f) => hash_float(*f, h),
        Value::Str(s) => s.hash(h),
        Value::Entity(e) => e.hash(h),
        Value::Vec2(xs) => xs.iter().for_each(|x| hash_float(*x, h)),
        Value::Vec3(xs) => xs.iter().for_each(|x| hash_float(*x, h)),
        Value::Object(fs) => {
            for (k, v) in fs {
                k.hash(h);
                hash_value(v, h);
            }
        }
    }
}

impl Hash for KeyValue {
    fn hash<H: Hasher>(&self, h: &mut H) {
        hash_value(&self.0, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_rules() {
        assert_eq!(binary(BinaryOp::Div, &Value::Int(7), &Value::Int(2)), Ok(Value::Int(3)));
        assert_eq!(binary(BinaryOp::Div, &Value::Int(-7), &Value::Int(2)), Ok(Value::Int(-3)));
        assert_eq!(binary(BinaryOp::Div, &Value::Int(7), &Value::Int(0)), Ok(Value::Null));
        assert_eq!(binary(BinaryOp::Mod, &Value::Int(7), &Value::Int(0)), Ok(Value::Null));
        assert_eq!(binary(BinaryOp::Div, &Value::Float(1.0), &Value::Int(0)), Ok(Value::Null));
        assert_eq!(binary(BinaryOp::Mod, &Value::Int(-7), &Value::Int(3)), Ok(Value::Int(-1)));
        assert_eq!(binary(BinaryOp::Mod, &Value::Int(i64::MIN), &Value::Int(-1)), Ok(Value::Int(0)));
        assert_eq!(binary(BinaryOp::Add, &Value::Int(1), &Value::Float(0.5)), Ok(Value::Float(1.5)));
        assert!(binary(BinaryOp::Add, &Value::Int(i64::MAX), &Value::Int(1)).is_err());
        assert!(binary(BinaryOp::Div, &Value::Int(i64::MIN), &Value::Int(-1)).is_err());
        assert_eq!(binary(BinaryOp::Add, &Value::Null, &Value::Int(1)), Ok(Value::Null));
        assert!(binary(BinaryOp::Add, &Value::Str("a".into()), &Value::Int(1)).is_err());
        assert_eq!(
            binary(BinaryOp::Add, &Value::Vec2([1.0, 2.0]), &Value::Vec2([0.5, 0.5])),
            Ok(Value::Vec2([1.5, 2.5]))
        );
        assert_eq!(binary(BinaryOp::Mul, &Value::Int(2), &Value::Vec2([1.0, 2.0])), Ok(Value::Vec2([2.0, 4.0])));
        assert_eq!(binary(BinaryOp::Div, &Value::Vec2([1.0, 2.0]), &Value::Int(0)), Ok(Value::Null));
        assert!(binary(BinaryOp::Add, &Value::Vec2([1.0, 2.0]), &Value::Vec3([0.0; 3])).is_err());
        assert_eq!(neg(&Value::Int(3)), Ok(Value::Int(-3)));
        assert!(neg(&Value::Int(i64::MIN)).is_err());
        assert_eq!(
            binary(BinaryOp::Concat, &Value::Str("hp=".into()), &Value::Float(2.0)),
            Ok(Value::Str("hp=2.0".into()))
        );
    }

    #[test]
    fn three_valued_logic() {
        let (t, f, n) = (Value::Bool(true), Value::Bool(false), Value::Null);
        assert_eq!(binary(BinaryOp::And, &f, &n), Ok(f.clone()));
        assert_eq!(binary(BinaryOp::And, &t, &n), Ok(n.clone()));
        assert_eq!(binary(BinaryOp::Or, &t, &n), Ok(t.clone()));
        assert_eq!(binary(BinaryOp::Or, &f, &n), Ok(n.clone()));
        assert_eq!(not(&n), Ok(n.clone()));
        assert_eq!(binary(BinaryOp::Eq, &n, &n), Ok(n.clone()));
        assert_eq!(binary(BinaryOp::Lt, &Value::Int(1), &Value::Float(1.5)), Ok(t.clone()));
        assert!(binary(BinaryOp::And, &Value::Int(1), &t).is_err());
        assert!(binary(BinaryOp::Lt, &Value::Vec2([0.0; 2]), &Value::Vec2([0.0; 2])).is_err());
        assert_eq!(binary(BinaryOp::Eq, &Value::Vec2([1.0, 2.0]), &Value::Vec2([1.0, 2.0])), Ok(t));
    }

    #[test]
    fn like_patterns() {
        assert!(like("ziggy", "zig%"));
        assert!(like("zig", "zig%"));
        assert!(!like("Zig", "zig%"));
        assert!(like("abc", "a_c"));
        assert!(!like("abbc", "a_c"));
        assert!(like("", "%"));
        assert!(like("abcabc", "%b%c"));
        assert!(!like("abc", ""));
        assert!(like("a%c", "a%%c"));
        assert!(like("héllo", "h_llo"));
        assert!(like(&"a".repeat(1000), &"%a".repeat(100)));
    }

    #[test]
    fn sort_order() {
        let mut vs = vec![
            Value::Str("b".into()),
            Value::Float(1.5),
            Value::Null,
            Value::Int(1),
            Value::Bool(true),
            Value::Int(2),
        ];
        vs.sort_by(sort_cmp);
        assert_eq!(
            vs,
            vec![
                Value::Null,
                Value::Bool(true),
                Value::Int(1),
                Value::Float(1.5),
                Value::Int(2),
                Value::Str("b".into())
            ]
        );
        assert_eq!(KeyValue(Value::Float(0.0)), KeyValue(Value::Float(-0.0)));
        assert_ne!(KeyValue(Value::Float(1.0)), KeyValue(Value::Int(1)));
    }
}
