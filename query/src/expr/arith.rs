//! Arithmetic kernels: `+ - * / %`, unary minus and `||`, specialised on int and float
//! columns and constants.
//!
//! The rules are [`crate::expr::ops`]'s: int ∘ int is an int and overflow is an error (on a
//! row that is not null), int ∘ float promotes, `/` and `%` by zero give null. Loops compute
//! with wrapping or float operations and an overflow flag, so they stay branch-free; only a
//! flagged batch is looked at again to report the error.

use ecsdb_engine::Value;

use crate::expr::fallback;
use crate::expr::operand::{Arg, float_arg, int_arg, str_of, zip};
use crate::expr::ops;
use crate::expr::vector::{Prim, StrVec, Validity, Vector, and_validity};
use crate::types::BinaryOp;

fn overflow(op: BinaryOp) -> String {
    format!("integer overflow in '{}'", op.symbol())
}

fn int_kernel(op: BinaryOp, a: Arg<'_, i64>, b: Arg<'_, i64>, n: usize) -> Result<Prim<i64>, String> {
    let mut valid = and_validity(a.validity(), b.validity());
    let is_valid = |valid: &Validity, i: usize| valid.as_ref().is_none_or(|v| v[i]);
    let values = match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => {
            let f = match op {
                BinaryOp::Add => i64::overflowing_add,
                BinaryOp::Sub => i64::overflowing_sub,
                _ => i64::overflowing_mul,
            };
            let pairs = zip(a, b, n, f);
            if pairs.iter().any(|(_, o)| *o) && (0..n).any(|i| pairs[i].1 && is_valid(&valid, i)) {
                return Err(overflow(op));
            }
            pairs.into_iter().map(|(r, _)| r).collect()
        }
        BinaryOp::Div | BinaryOp::Mod => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let (x, y) = (a.at(i), b.at(i));
                if y == 0 {
                    valid.get_or_insert_with(|| vec![true; n])[i] = false;
                    out.push(0);
                } else if op == BinaryOp::Div {
                    match x.checked_div(y) {
                        Some(r) => out.push(r),
                        None if is_valid(&valid, i) => return Err(overflow(op)),
                        None => out.push(0),
                    }
                } else {
                    out.push(x.checked_rem(y).unwrap_or(0));
                }
            }
            out
        }
        _ => return Err(format!("'{}' is not arithmetic", op.symbol())),
    };
    Ok(Prim { values, valid })
}

fn float_kernel(op: BinaryOp, a: Arg<'_, f64>, b: Arg<'_, f64>, n: usize) -> Result<Prim<f64>, String> {
    let mut valid = and_validity(a.validity(), b.validity());
    let values = match op {
        BinaryOp::Add => zip(a, b, n, |x, y| x + y),
        BinaryOp::Sub => zip(a, b, n, |x, y| x - y),
        BinaryOp::Mul => zip(a, b, n, |x, y| x * y),
        BinaryOp::Div | BinaryOp::Mod => {
            let values = if op == BinaryOp::Div { zip(a, b, n, |x, y| x / y) } else { zip(a, b, n, |x, y| x % y) };
            // Division by zero is null.
            if let Arg::Const(c) = b {
                if c == 0.0 {
                    valid = Some(vec![false; n]);
                }
            } else if (0..n).fold(false, |seen, i| seen | (b.at(i) == 0.0)) {
                let mask = valid.get_or_insert_with(|| vec![true; n]);
                for (i, m) in mask.iter_mut().enumerate() {
                    *m &= b.at(i) != 0.0;
                }
            }
            values
        }
        _ => return Err(format!("'{}' is not arithmetic", op.symbol())),
    };
    Ok(Prim { values, valid })
}

/// `a op b` for `+ - * / %` and `||`.
pub fn binary<'a>(op: BinaryOp, a: &Vector<'a>, b: &Vector<'a>, n: usize) -> Result<Vector<'a>, String> {
    if a.as_scalar().is_some_and(Value::is_null) || b.as_scalar().is_some_and(Value::is_null) {
        return Ok(Vector::nulls(n));
    }
    if op == BinaryOp::Concat {
        return concat(a, b, n);
    }
    if let (Some(x), Some(y)) = (int_arg(a), int_arg(b))
        && !matches!((x, y), (Arg::Const(_), Arg::Const(_)))
    {
        return int_kernel(op, x, y, n).map(Vector::Int);
    }
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    if let (Some(x), Some(y)) = (float_arg(a, &mut ka), float_arg(b, &mut kb)) {
        // Two int operands were handled above (an int constant pair falls back to the rules).
        let both_const = matches!((x, y), (Arg::Const(_), Arg::Const(_)));
        let both_int = is_int(a) && is_int(b);
        if !(both_const || both_int) {
            return float_kernel(op, x, y, n).map(Vector::Float);
        }
    }
    fallback::map2(a, b, n, |x, y| ops::binary(op, x, y))
}

fn is_int(v: &Vector<'_>) -> bool {
    matches!(v, Vector::Int(_) | Vector::Scalar(Value::Int(_), _))
}

/// `a || b` for strings (other operand types turn into text row by row).
fn concat<'a>(a: &Vector<'a>, b: &Vector<'a>, n: usize) -> Result<Vector<'a>, String> {
    let (sa, sb) = (
        matches!(a, Vector::Str(_) | Vector::Scalar(Value::Str(_), _)),
        matches!(b, Vector::Str(_) | Vector::Scalar(Value::Str(_), _)),
    );
    if !(sa && sb) {
        return fallback::map2(a, b, n, |x, y| ops::binary(BinaryOp::Concat, x, y));
    }
    let mut out = StrVec::with_capacity(n);
    for i in 0..n {
        match (str_of(a, i), str_of(b, i)) {
            (Some(x), Some(y)) => out.push_with(|s| {
                s.push_str(x);
                s.push_str(y);
            }),
            _ => out.push_null(),
        }
    }
    Ok(Vector::Str(out))
}

/// Unary minus.
pub fn neg<'a>(a: &Vector<'a>, n: usize) -> Result<Vector<'a>, String> {
    match a {
        Vector::Float(p) => {
            Ok(Vector::Float(Prim { values: p.values.iter().map(|x| -x).collect(), valid: p.valid.clone() }))
        }
        Vector::Int(p) => {
            if (0..n).any(|i| p.values[i] == i64::MIN && p.is_valid(i)) {
                return Err("integer overflow in '-'".into());
            }
            Ok(Vector::Int(Prim {
                values: p.values.iter().map(|x| x.wrapping_neg()).collect(),
                valid: p.valid.clone(),
            }))
        }
        _ => fallback::map1(a, n, ops::neg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[Option<i64>]) -> Vector<'static> {
        Vector::from_values(v.iter().map(|x| x.map_or(Value::Null, Value::Int)).collect())
    }

    /// The kernels agree with the row-at-a-time rules on awkward operands.
    #[test]
    fn kernels_match_the_value_rules() {
        let xs = [Some(7), None, Some(i64::MIN), Some(-7), Some(0), Some(i64::MAX)];
        let ys = [Some(2), Some(0), Some(-1), Some(0), Some(3), Some(1)];
        let floats = Vector::from_values(vec![
            Value::Float(0.5),
            Value::Float(-0.0),
            Value::Null,
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Float(2.0),
        ]);
        let operands =
            [ints(&xs), ints(&ys), floats, Vector::Scalar(Value::Int(0), 6), Vector::Scalar(Value::Float(2.5), 6)];
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod] {
            for a in &operands {
                for b in &operands {
                    let want: Result<Vec<Value>, String> =
                        (0..6).map(|i| ops::binary(op, &a.value(i), &b.value(i))).collect();
                    let got = binary(op, a, b, 6).map(|v| v.into_values());
                    match (&want, &got) {
                        (Ok(w), Ok(g)) => {
                            for (x, y) in w.iter().zip(g) {
                                let same = match (x, y) {
                                    (Value::Float(p), Value::Float(q)) => {
                                        p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
                                    }
                                    _ => x == y,
                                };
                                assert!(same, "{op:?}: {a:?} {b:?}: {w:?} vs {g:?}");
                            }
                        }
                        (Err(_), Err(_)) => {}
                        _ => panic!("{op:?}: {a:?} {b:?}: {want:?} vs {got:?}"),
                    }
                }
            }
        }
        assert!(neg(&ints(&[Some(i64::MIN)]), 1).is_err());
        assert_eq!(neg(&ints(&[None, Some(3)]), 2).unwrap().into_values(), vec![Value::Null, Value::Int(-3)]);
    }
}
