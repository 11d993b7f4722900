//! Comparison and logic kernels: `= != < <= > >=`, `IN`, `IS NULL`, `NOT`, three-valued
//! `AND`/`OR`, and the truth of a condition.
//!
//! Comparisons follow [`crate::expr::ops::compare`]: null or NaN on either side gives null,
//! ints and floats compare as numbers, strings by bytes, entities by (index, generation),
//! vectors only with `=` and `!=`.

use std::cmp::Ordering;

use ecsdb_engine::{Entity, Value};

use crate::expr::fallback;
use crate::expr::operand::{Arg, float_arg, int_arg, str_of, zip};
use crate::expr::ops;
use crate::expr::vector::{Prim, Validity, Vector, and_validity};
use crate::types::BinaryOp;

#[inline(always)]
fn holds(op: BinaryOp, o: Ordering) -> bool {
    match op {
        BinaryOp::Eq => o == Ordering::Equal,
        BinaryOp::Ne => o != Ordering::Equal,
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::Le => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

/// `a op b` over two numeric operands of one type, monomorphised per operator so the loop has
/// no branch on it.
fn cmp_num<T: PartialOrd + Copy>(op: BinaryOp, a: Arg<'_, T>, b: Arg<'_, T>, n: usize) -> Vec<bool> {
    match op {
        BinaryOp::Eq => zip(a, b, n, |x, y| x == y),
        BinaryOp::Ne => zip(a, b, n, |x, y| x != y),
        BinaryOp::Lt => zip(a, b, n, |x, y| x < y),
        BinaryOp::Le => zip(a, b, n, |x, y| x <= y),
        BinaryOp::Gt => zip(a, b, n, |x, y| x > y),
        _ => zip(a, b, n, |x, y| x >= y),
    }
}

/// Marks rows where either f64 operand is NaN as null (a comparison with NaN is null).
fn nan_is_null(a: Arg<'_, f64>, b: Arg<'_, f64>, n: usize, valid: &mut Validity) {
    let nan_at = |x: Arg<'_, f64>| match x {
        Arg::Const(c) => c.is_nan(),
        // A fold rather than `any`: no early exit, so it vectorises (NaN is rare).
        Arg::Col(v, _) => v[..n].iter().fold(false, |seen, x| seen | x.is_nan()),
    };
    if !(nan_at(a) || nan_at(b)) {
        return;
    }
    let nans = zip(a, b, n, |x, y| x.is_nan() || y.is_nan());
    let mask = valid.get_or_insert_with(|| vec![true; n]);
    for (m, nan) in mask.iter_mut().zip(nans) {
        *m &= !nan;
    }
}

fn is_str(v: &Vector<'_>) -> bool {
    matches!(v, Vector::Str(_) | Vector::Scalar(Value::Str(_), _))
}

/// Compares rows with an ordering function, for the less common plain types.
fn cmp_by<'a, T: Copy>(
    op: BinaryOp,
    a: &Prim<T>,
    b: Arg<'_, T>,
    n: usize,
    ord: impl Fn(&T, &T) -> Ordering,
) -> Vector<'a> {
    let values = (0..n).map(|i| holds(op, ord(&a.values[i], &arg_at(b, i)))).collect();
    let valid = and_validity(&a.valid, &arg_validity(b));
    Vector::Bool(Prim { values, valid })
}

fn arg_at<T: Copy>(a: Arg<'_, T>, i: usize) -> T {
    match a {
        Arg::Col(v, _) => v[i],
        Arg::Const(c) => c,
    }
}

fn arg_validity<T>(a: Arg<'_, T>) -> Validity {
    match a {
        Arg::Col(_, v) => v.clone(),
        Arg::Const(_) => None,
    }
}

/// `a op b` for the six comparisons.
pub fn compare<'a>(op: BinaryOp, a: &Vector<'a>, b: &Vector<'a>, n: usize) -> Result<Vector<'a>, String> {
    if a.as_scalar().is_some_and(Value::is_null) || b.as_scalar().is_some_and(Value::is_null) {
        return Ok(Vector::nulls(n));
    }
    let both_const = a.as_scalar().is_some() && b.as_scalar().is_some();
    if !both_const {
        if let (Some(x), Some(y)) = (int_arg(a), int_arg(b)) {
            let values = cmp_num(op, x, y, n);
            return Ok(Vector::Bool(Prim { values, valid: and_validity(&arg_validity(x), &arg_validity(y)) }));
        }
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        if let (Some(x), Some(y)) = (float_arg(a, &mut ka), float_arg(b, &mut kb)) {
            let values = cmp_num(op, x, y, n);
            let mut valid = and_validity(&arg_validity(x), &arg_validity(y));
            nan_is_null(x, y, n, &mut valid);
            return Ok(Vector::Bool(Prim { values, valid }));
        }
        if is_str(a) && is_str(b) {
            let mut values = Vec::with_capacity(n);
            let mut valid: Validity = None;
            for i in 0..n {
                match (str_of(a, i), str_of(b, i)) {
                    (Some(x), Some(y)) => values.push(holds(op, x.cmp(y))),
                    _ => {
                        values.push(false);
                        valid.get_or_insert_with(|| vec![true; n])[i] = false;
                    }
                }
            }
            return Ok(Vector::Bool(Prim { values, valid }));
        }
        match (a, b) {
            (Vector::Entity(x), Vector::Entity(y)) => {
                return Ok(cmp_by(op, x, Arg::Col(&y.values, &y.valid), n, Entity::cmp));
            }
            (Vector::Entity(x), Vector::Scalar(Value::Entity(c), _)) => {
                return Ok(cmp_by(op, x, Arg::Const(*c), n, Entity::cmp));
            }
            (Vector::Scalar(Value::Entity(_), _), Vector::Entity(_)) => return compare(op.flip(), b, a, n),
            (Vector::Bool(x), Vector::Bool(y)) => {
                return Ok(cmp_by(op, x, Arg::Col(&y.values, &y.valid), n, bool::cmp));
            }
            (Vector::Bool(x), Vector::Scalar(Value::Bool(c), _)) => {
                return Ok(cmp_by(op, x, Arg::Const(*c), n, bool::cmp));
            }
            (Vector::Scalar(Value::Bool(_), _), Vector::Bool(_)) => return compare(op.flip(), b, a, n),
            _ => {}
        }
    }
    fallback::map2(a, b, n, |x, y| ops::binary(op, x, y))
}

/// `x IS [NOT] NULL`.
pub fn is_null<'a>(a: &Vector<'_>, n: usize, negated: bool) -> Vector<'a> {
    let values = (0..n).map(|i| a.is_null(i) != negated).collect();
    Vector::Bool(Prim::all(values))
}

/// The truth of a condition per row: `(true rows, null rows)`; a non-boolean value is an error.
pub fn truth(v: &Vector<'_>, n: usize) -> Result<(Vec<bool>, Validity), String> {
    match v {
        Vector::Bool(p) => {
            let t = match &p.valid {
                None => p.values.clone(),
                Some(m) => p.values.iter().zip(m).map(|(x, ok)| *x && *ok).collect(),
            };
            Ok((t, p.valid.clone()))
        }
        Vector::Scalar(Value::Bool(b), _) => Ok((vec![*b; n], None)),
        Vector::Scalar(Value::Null, _) => Ok((vec![false; n], Some(vec![false; n]))),
        other => {
            let mut t = Vec::with_capacity(n);
            let mut valid: Validity = None;
            for i in 0..n {
                match ops::truth(&other.value(i))? {
                    Some(b) => t.push(b),
                    None => {
                        t.push(false);
                        valid.get_or_insert_with(|| vec![true; n])[i] = false;
                    }
                }
            }
            Ok((t, valid))
        }
    }
}

/// `NOT x`.
pub fn not<'a>(a: &Vector<'_>, n: usize) -> Result<Vector<'a>, String> {
    match a {
        Vector::Bool(p) => {
            Ok(Vector::Bool(Prim { values: p.values.iter().map(|b| !b).collect(), valid: p.valid.clone() }))
        }
        _ => fallback::map1(a, n, ops::not),
    }
}

/// Constants of `IN`, searched linearly while few (the common case: a handful of literals)
/// and by binary search past that; no hashing per row.
pub struct ConstSet<T: Ord> {
    sorted: Vec<T>,
}

impl<T: Ord> ConstSet<T> {
    fn new(mut items: Vec<T>) -> ConstSet<T> {
        items.sort_unstable();
        items.dedup();
        ConstSet { sorted: items }
    }

    #[inline]
    fn contains<Q: Ord + ?Sized>(&self, x: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
    {
        if self.sorted.len() <= 16 {
            self.sorted.iter().any(|c| c.borrow() == x)
        } else {
            self.sorted.binary_search_by(|c| c.borrow().cmp(x)).is_ok()
        }
    }
}

/// A set of constants for `IN`, by the type the tested values have.
pub enum InSet {
    /// Integer constants (tested ints compare exactly).
    Ints(ConstSet<i64>),
    /// Numeric constants as f64 bits, -0 folded into 0, for float (or mixed) tests.
    Floats(ConstSet<u64>),
    /// String constants.
    Strs(ConstSet<String>),
}

fn float_key(x: f64) -> u64 {
    if x == 0.0 { 0 } else { x.to_bits() }
}

impl InSet {
    /// A set for `x IN (constants)` where `x` evaluates like `sample`, if the constants fit it
    /// (no null, no NaN, one family of types); `None` leaves the test to the general path.
    pub fn build(sample: &Vector<'_>, constants: &[&Value]) -> Option<InSet> {
        match sample {
            Vector::Int(_) if constants.iter().all(|c| matches!(c, Value::Int(_))) => Some(InSet::Ints(ConstSet::new(
                constants.iter().filter_map(|c| if let Value::Int(i) = c { Some(*i) } else { None }).collect(),
            ))),
            Vector::Int(_) | Vector::Float(_)
                if constants.iter().all(|c| matches!(c, Value::Int(_) | Value::Float(_)))
                    && constants.iter().all(|c| c.as_f64().is_some_and(|x| !x.is_nan())) =>
            {
                // Ints above 2^53 lose precision as f64: leave those to the general path.
                if constants.iter().any(|c| matches!(c, Value::Int(i) if i.unsigned_abs() > 1 << 53)) {
                    return None;
                }
                Some(InSet::Floats(ConstSet::new(constants.iter().filter_map(|c| c.as_f64()).map(float_key).collect())))
            }
            Vector::Str(_) if constants.iter().all(|c| matches!(c, Value::Str(_))) => Some(InSet::Strs(ConstSet::new(
                constants.iter().filter_map(|c| if let Value::Str(s) = c { Some(s.clone()) } else { None }).collect(),
            ))),
            _ => None,
        }
    }

    /// `x [NOT] IN set` (the list was not empty and held no null).
    pub fn test<'a>(&self, x: &Vector<'_>, n: usize, negated: bool) -> Option<Vector<'a>> {
        let (values, valid): (Vec<bool>, Validity) = match (self, x) {
            (InSet::Ints(s), Vector::Int(p)) => {
                (p.values.iter().map(|v| s.contains(v) != negated).collect(), p.valid.clone())
            }
            (InSet::Floats(s), Vector::Int(p)) => {
                if p.values.iter().any(|v| v.unsigned_abs() > 1 << 53) {
                    return None;
                }
                (p.values.iter().map(|v| s.contains(&float_key(*v as f64)) != negated).collect(), p.valid.clone())
            }
            (InSet::Floats(s), Vector::Float(p)) => {
                let values = p.values.iter().map(|v| s.contains(&float_key(*v)) != negated).collect();
                // NaN equals nothing and compares as null: the result is null.
                let mut valid = p.valid.clone();
                if p.values.iter().any(|v| v.is_nan()) {
                    let m = valid.get_or_insert_with(|| vec![true; n]);
                    for (ok, v) in m.iter_mut().zip(&p.values) {
                        *ok &= !v.is_nan();
                    }
                }
                (values, valid)
            }
            (InSet::Strs(s), Vector::Str(v)) => {
                let mut valid: Validity = None;
                let values = (0..n)
                    .map(|i| match v.get(i) {
                        Some(x) => s.contains(x) != negated,
                        None => {
                            valid.get_or_insert_with(|| vec![true; n])[i] = false;
                            false
                        }
                    })
                    .collect();
                (values, valid)
            }
            _ => return None,
        };
        Some(Vector::Bool(Prim { values, valid }))
    }
}

/// `x [NOT] IN (items)` row by row with SQL's rules: true if any item equals, else null if the
/// value or any item is null, else false.
pub fn in_list_rows<'a>(x: &Vector<'_>, items: &[Vector<'_>], n: usize, negated: bool) -> Result<Vector<'a>, String> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let xv = x.value(i);
        let mut result = Some(false);
        if xv.is_null() {
            result = if items.is_empty() { Some(false) } else { None };
        } else {
            for item in items {
                match ops::equals(&xv, &item.value(i))? {
                    Some(true) => {
                        result = Some(true);
                        break;
                    }
                    None => result = None,
                    Some(false) => {}
                }
            }
        }
        out.push(result.map(|b| b != negated).map_or(Value::Null, Value::Bool));
    }
    Ok(Vector::from_values(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed comparisons agree with the row-at-a-time rules (NaN, ±0, nulls, mixed types).
    #[test]
    fn comparisons_match_the_value_rules() {
        let cols = [
            Vector::from_values(vec![Value::Int(1), Value::Null, Value::Int(-2), Value::Int(0)]),
            Vector::from_values(vec![Value::Float(1.0), Value::Float(f64::NAN), Value::Float(-0.0), Value::Null]),
            Vector::Scalar(Value::Float(0.0), 4),
            Vector::Scalar(Value::Int(1), 4),
        ];
        let strs = [
            Vector::from_values(vec![
                Value::Str("a".into()),
                Value::Null,
                Value::Str("b".into()),
                Value::Str("".into()),
            ]),
            Vector::Scalar(Value::Str("a".into()), 4),
        ];
        let ops_ = [BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge];
        for group in [&cols[..], &strs[..]] {
            for op in ops_ {
                for a in group {
                    for b in group {
                        let want: Vec<Value> =
                            (0..4).map(|i| ops::binary(op, &a.value(i), &b.value(i)).unwrap()).collect();
                        let got = compare(op, a, b, 4).unwrap().into_values();
                        assert_eq!(got, want, "{op:?} {a:?} {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn in_sets_match_the_row_rules() {
        let x = Vector::from_values(vec![Value::Int(3), Value::Null, Value::Int(4), Value::Int(0)]);
        let consts = [Value::Int(3), Value::Float(0.0)];
        let refs: Vec<&Value> = consts.iter().collect();
        let set = InSet::build(&x, &refs).unwrap();
        let items: Vec<Vector<'_>> = consts.iter().map(|c| Vector::Scalar(c.clone(), 4)).collect();
        for negated in [false, true] {
            let fast = set.test(&x, 4, negated).unwrap().into_values();
            let slow = in_list_rows(&x, &items, 4, negated).unwrap().into_values();
            assert_eq!(fast, slow);
        }
    }
}
