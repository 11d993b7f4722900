//! Kernels of the built-in scalar functions over typed vectors.
//!
//! Each has the semantics of [`Builtin::call`] (null in, null out; `sqrt` of a negative is
//! null; `min`/`max` of NaN is an error; `len` counts characters); argument types the kernels
//! do not specialise, and registered functions, run row by row on [`Value`]s.

use ecsdb_engine::Value;

use crate::expr::fallback;
use crate::expr::operand::{Arg, float_arg, zip};
use crate::expr::vector::{Prim, StrVec, Validity, Vector, and_validity};
use crate::functions::Function;
use crate::types::Builtin;

/// Calls `func` over argument vectors of `n` rows.
pub fn call<'a>(func: &Function, args: &[Vector<'a>], n: usize) -> Result<Vector<'a>, String> {
    if let Function::Builtin(b) = func
        && let Some(v) = builtin(*b, args, n)?
    {
        return Ok(v);
    }
    fallback::map_n(args, n, |row| crate::expr::builtins::call_function(func, row))
}

fn float_unary<'a>(p: &Prim<f64>, f: impl Fn(f64) -> f64) -> Vector<'a> {
    Vector::Float(Prim { values: p.values.iter().map(|x| f(*x)).collect(), valid: p.valid.clone() })
}

/// A vector operand of `distance`, `within`, `inside`: per-row points or a constant point.
enum Points<'v, const N: usize> {
    Col(&'v [[f64; N]], &'v Validity),
    Const([f64; N]),
}

impl<const N: usize> Points<'_, N> {
    #[inline(always)]
    fn at(&self, i: usize) -> [f64; N] {
        match self {
            Points::Col(v, _) => v[i],
            Points::Const(c) => *c,
        }
    }

    fn validity(&self) -> Validity {
        match self {
            Points::Col(_, v) => (*v).clone(),
            Points::Const(_) => None,
        }
    }
}

fn points2<'v>(v: &'v Vector<'_>) -> Option<Points<'v, 2>> {
    match v {
        Vector::Vec2(p) => Some(Points::Col(&p.values, &p.valid)),
        Vector::Scalar(Value::Vec2(c), _) => Some(Points::Const(*c)),
        _ => None,
    }
}

fn points3<'v>(v: &'v Vector<'_>) -> Option<Points<'v, 3>> {
    match v {
        Vector::Vec3(p) => Some(Points::Col(&p.values, &p.valid)),
        Vector::Scalar(Value::Vec3(c), _) => Some(Points::Const(*c)),
        _ => None,
    }
}

#[inline(always)]
fn dist<const N: usize>(a: [f64; N], b: [f64; N]) -> f64 {
    let mut s = 0.0;
    for k in 0..N {
        let d = a[k] - b[k];
        s += d * d;
    }
    s.sqrt()
}

fn distances<const N: usize>(a: &Points<'_, N>, b: &Points<'_, N>, n: usize) -> Prim<f64> {
    let values = match (a, b) {
        (Points::Col(x, _), Points::Const(c)) => x[..n].iter().map(|p| dist(*p, *c)).collect(),
        (Points::Const(c), Points::Col(y, _)) => y[..n].iter().map(|p| dist(*c, *p)).collect(),
        _ => (0..n).map(|i| dist(a.at(i), b.at(i))).collect(),
    };
    Prim { values, valid: and_validity(&a.validity(), &b.validity()) }
}

fn inside<const N: usize>(p: &Points<'_, N>, lo: &Points<'_, N>, hi: &Points<'_, N>, n: usize) -> Prim<bool> {
    let values = (0..n)
        .map(|i| {
            let (x, l, h) = (p.at(i), lo.at(i), hi.at(i));
            (0..N).all(|k| l[k] <= x[k] && x[k] <= h[k])
        })
        .collect();
    let valid = and_validity(&and_validity(&p.validity(), &lo.validity()), &hi.validity());
    Prim { values, valid }
}

/// The typed kernel of a built-in, or `None` to run it row by row.
fn builtin<'a>(b: Builtin, args: &[Vector<'a>], n: usize) -> Result<Option<Vector<'a>>, String> {
    if args.iter().any(|a| a.as_scalar().is_some_and(Value::is_null)) {
        return Ok(Some(Vector::nulls(n)));
    }
    Ok(Some(match (b, args) {
        (Builtin::Abs, [Vector::Float(p)]) => float_unary(p, f64::abs),
        (Builtin::Floor, [Vector::Float(p)]) => float_unary(p, f64::floor),
        (Builtin::Ceil, [Vector::Float(p)]) => float_unary(p, f64::ceil),
        (Builtin::Round, [Vector::Float(p)]) => float_unary(p, |f| {
            let r = f.round();
            if r.is_finite() { r } else { f }
        }),
        (Builtin::Floor | Builtin::Ceil | Builtin::Round, [v @ Vector::Int(_)]) => v.clone(),
        (Builtin::Abs, [Vector::Int(p)]) => {
            if (0..n).any(|i| p.values[i] == i64::MIN && p.is_valid(i)) {
                return Err("integer overflow in abs()".into());
            }
            Vector::Int(Prim { values: p.values.iter().map(|x| x.wrapping_abs()).collect(), valid: p.valid.clone() })
        }
        (Builtin::Sqrt, [x @ (Vector::Float(_) | Vector::Int(_))]) => {
            let Some((xs, valid)) = x.f64s() else { return Ok(None) };
            let mut valid = valid.clone();
            if xs.iter().any(|v| *v < 0.0) {
                let m = valid.get_or_insert_with(|| vec![true; n]);
                for (ok, v) in m.iter_mut().zip(xs.iter()) {
                    // Null below zero only: NaN stays NaN, as in `Builtin::call`.
                    *ok &= *v >= 0.0 || v.is_nan();
                }
            }
            Vector::Float(Prim { values: xs.iter().map(|v| v.sqrt()).collect(), valid })
        }
        (Builtin::Min | Builtin::Max, [a, c]) => match min_max(b == Builtin::Max, a, c, n)? {
            Some(v) => v,
            None => return Ok(None),
        },
        (Builtin::Len, [Vector::Str(s)]) => {
            let mut valid: Validity = None;
            let values = (0..n)
                .map(|i| match s.get(i) {
                    Some(x) => {
                        if x.is_ascii() {
                            x.len() as i64
                        } else {
                            x.chars().count() as i64
                        }
                    }
                    None => {
                        valid.get_or_insert_with(|| vec![true; n])[i] = false;
                        0
                    }
                })
                .collect();
            Vector::Int(Prim { values, valid })
        }
        (Builtin::Lower | Builtin::Upper, [Vector::Str(s)]) => {
            let lower = b == Builtin::Lower;
            let mut out = StrVec::with_capacity(n);
            for i in 0..n {
                match s.get(i) {
                    Some(x) if x.is_ascii() => out.push_with(|a| {
                        a.extend(x.chars().map(|c| if lower { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() }))
                    }),
                    // Non-ASCII text needs the full Unicode rules (final sigma and the like).
                    Some(x) => out.push_with(|a| a.push_str(&if lower { x.to_lowercase() } else { x.to_uppercase() })),
                    None => out.push_null(),
                }
            }
            Vector::Str(out)
        }
        (Builtin::Distance, [a, c]) => {
            if let (Some(x), Some(y)) = (points3(a), points3(c)) {
                Vector::Float(distances(&x, &y, n))
            } else if let (Some(x), Some(y)) = (points2(a), points2(c)) {
                Vector::Float(distances(&x, &y, n))
            } else {
                return Ok(None);
            }
        }
        (Builtin::Within, [p, center, radius]) => {
            let d = if let (Some(x), Some(y)) = (points3(p), points3(center)) {
                distances(&x, &y, n)
            } else if let (Some(x), Some(y)) = (points2(p), points2(center)) {
                distances(&x, &y, n)
            } else {
                return Ok(None);
            };
            let mut owned = Vec::new();
            let Some(r) = float_arg(radius, &mut owned) else { return Ok(None) };
            let values = zip(Arg::Col(&d.values, &None), r, n, |dv, rv| dv <= rv);
            let valid = and_validity(&d.valid, &arg_validity(r));
            Vector::Bool(Prim { values, valid })
        }
        (Builtin::Inside, [p, lo, hi]) => {
            if let (Some(x), Some(l), Some(h)) = (points3(p), points3(lo), points3(hi)) {
                Vector::Bool(inside(&x, &l, &h, n))
            } else if let (Some(x), Some(l), Some(h)) = (points2(p), points2(lo), points2(hi)) {
                Vector::Bool(inside(&x, &l, &h, n))
            } else {
                return Ok(None);
            }
        }
        _ => return Ok(None),
    }))
}

fn arg_validity(a: Arg<'_, f64>) -> Validity {
    match a {
        Arg::Col(_, v) => v.clone(),
        Arg::Const(_) => None,
    }
}

/// Two-argument `min`/`max` over numbers: an int result when both are ints, else a float;
/// NaN on a row that is not null is an error, as in [`Builtin::call`].
fn min_max<'a>(max: bool, a: &Vector<'a>, b: &Vector<'a>, n: usize) -> Result<Option<Vector<'a>>, String> {
    let name = if max { "max" } else { "min" };
    let ints = |v: &Vector<'a>| matches!(v, Vector::Int(_) | Vector::Scalar(Value::Int(_), _));
    if ints(a) && ints(b) {
        let (Some(x), Some(y)) = (crate::expr::operand::int_arg(a), crate::expr::operand::int_arg(b)) else {
            return Ok(None);
        };
        let values = if max { zip(x, y, n, i64::max) } else { zip(x, y, n, i64::min) };
        let valid = and_validity(&int_validity(x), &int_validity(y));
        return Ok(Some(Vector::Int(Prim { values, valid })));
    }
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    let (Some(x), Some(y)) = (float_arg(a, &mut ka), float_arg(b, &mut kb)) else { return Ok(None) };
    let valid = and_validity(&arg_validity(x), &arg_validity(y));
    let nan = zip(x, y, n, |p, q| p.is_nan() || q.is_nan());
    if (0..n).any(|i| nan[i] && valid.as_ref().is_none_or(|v| v[i])) {
        return Err(format!("{name}() cannot order NaN"));
    }
    // Ties keep the first argument, as the row-at-a-time rule does (it matters for -0 and 0).
    let values = if max {
        zip(x, y, n, |p, q| if q > p { q } else { p })
    } else {
        zip(x, y, n, |p, q| if q < p { q } else { p })
    };
    Ok(Some(Vector::Float(Prim { values, valid })))
}

fn int_validity(a: Arg<'_, i64>) -> Validity {
    match a {
        Arg::Col(_, v) => v.clone(),
        Arg::Const(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(b: Builtin, args: &[Vector<'static>], n: usize) {
        let want: Vec<Result<Value, String>> = (0..n)
            .map(|i| crate::expr::builtins::call(b, &args.iter().map(|a| a.value(i)).collect::<Vec<_>>()))
            .collect();
        let got = call(&Function::Builtin(b), args, n);
        match (want.iter().find(|r| r.is_err()), got) {
            (Some(_), Err(_)) => {}
            (None, Ok(v)) => {
                let vals = v.into_values();
                for (w, g) in want.iter().zip(&vals) {
                    let w = w.as_ref().unwrap();
                    let same = match (w, g) {
                        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                        _ => w == g,
                    };
                    assert!(same, "{b:?}({args:?}): {w:?} vs {g:?}");
                }
            }
            (w, g) => panic!("{b:?}({args:?}): {w:?} vs {g:?}"),
        }
    }

    #[test]
    fn builtin_kernels_match_the_value_rules() {
        let f = Vector::from_values(vec![Value::Float(-1.5), Value::Null, Value::Float(4.0), Value::Float(-0.0)]);
        let i = Vector::from_values(vec![Value::Int(-3), Value::Int(2), Value::Null, Value::Int(0)]);
        let s = Vector::from_values(vec![
            Value::Str("Zig".into()),
            Value::Str("ΣΑΣ".into()),
            Value::Null,
            Value::Str("".into()),
        ]);
        for b in [Builtin::Abs, Builtin::Floor, Builtin::Ceil, Builtin::Round, Builtin::Sqrt] {
            check(b, std::slice::from_ref(&f), 4);
            check(b, std::slice::from_ref(&i), 4);
        }
        // NaN beside a negative in one batch: the negative is null, the NaN stays NaN.
        let nan_and_negative = Vector::from_values(vec![Value::Float(-1.0), Value::Float(f64::NAN), Value::Float(4.0)]);
        check(Builtin::Sqrt, std::slice::from_ref(&nan_and_negative), 3);
        for b in [Builtin::Len, Builtin::Lower, Builtin::Upper] {
            check(b, std::slice::from_ref(&s), 4);
        }
        for b in [Builtin::Min, Builtin::Max] {
            check(b, &[f.clone(), i.clone()], 4);
            check(b, &[i.clone(), i.clone()], 4);
            check(b, &[f.clone(), Vector::Scalar(Value::Float(0.0), 4)], 4);
            check(b, &[Vector::from_values(vec![Value::Float(f64::NAN)]), Vector::Scalar(Value::Int(1), 1)], 1);
        }
        let p = Vector::from_values(vec![
            Value::Vec3([1.0, 2.0, 2.0]),
            Value::Null,
            Value::Vec3([0.0; 3]),
            Value::Vec3([5.0; 3]),
        ]);
        let c = Vector::Scalar(Value::Vec3([0.0; 3]), 4);
        check(Builtin::Distance, &[p.clone(), c.clone()], 4);
        check(Builtin::Within, &[p.clone(), c.clone(), Vector::Scalar(Value::Int(3), 4)], 4);
        check(Builtin::Inside, &[p, c, Vector::Scalar(Value::Vec3([2.0; 3]), 4)], 4);
    }
}
