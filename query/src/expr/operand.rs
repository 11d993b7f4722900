//! Operands of the vector kernels: a column or a constant, seen as the primitive the kernel
//! computes on.

use ecsdb_engine::Value;

use crate::expr::vector::{Validity, Vector};

/// An operand of a numeric kernel: a column or a constant.
#[derive(Clone, Copy)]
pub enum Arg<'v, T> {
    /// One value per row.
    Col(&'v [T], &'v Validity),
    /// The same value for every row.
    Const(T),
}

impl<T: Copy> Arg<'_, T> {
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> T {
        match self {
            Arg::Col(v, _) => v[i],
            Arg::Const(c) => *c,
        }
    }

    pub(crate) fn validity(&self) -> &Validity {
        match self {
            Arg::Col(_, v) => v,
            Arg::Const(_) => &None,
        }
    }
}

/// Applies `f` to every row of two operands; monomorphised per operand shape so the constant
/// stays in a register and the loop vectorises.
#[inline(always)]
pub fn zip<A: Copy, B: Copy, R>(a: Arg<'_, A>, b: Arg<'_, B>, n: usize, f: impl Fn(A, B) -> R) -> Vec<R> {
    match (a, b) {
        (Arg::Col(x, _), Arg::Col(y, _)) => x[..n].iter().zip(&y[..n]).map(|(p, q)| f(*p, *q)).collect(),
        (Arg::Col(x, _), Arg::Const(c)) => x[..n].iter().map(|p| f(*p, c)).collect(),
        (Arg::Const(c), Arg::Col(y, _)) => y[..n].iter().map(|q| f(c, *q)).collect(),
        (Arg::Const(c), Arg::Const(d)) => (0..n).map(|_| f(c, d)).collect(),
    }
}

/// The operand as i64s, when it is an int column or an int constant.
pub fn int_arg<'v>(v: &'v Vector<'_>) -> Option<Arg<'v, i64>> {
    match v {
        Vector::Int(p) => Some(Arg::Col(&p.values, &p.valid)),
        Vector::Scalar(Value::Int(c), _) => Some(Arg::Const(*c)),
        _ => None,
    }
}

/// The operand as f64s (ints converted), when it is numeric; `owned` keeps a conversion alive.
pub fn float_arg<'v>(v: &'v Vector<'_>, owned: &'v mut Vec<f64>) -> Option<Arg<'v, f64>> {
    match v {
        Vector::Float(p) => Some(Arg::Col(&p.values, &p.valid)),
        Vector::Int(p) => {
            *owned = p.values.iter().map(|&x| x as f64).collect();
            Some(Arg::Col(owned, &p.valid))
        }
        Vector::Scalar(Value::Float(c), _) => Some(Arg::Const(*c)),
        Vector::Scalar(Value::Int(c), _) => Some(Arg::Const(*c as f64)),
        _ => None,
    }
}

/// The string at row `i` of a string column or constant.
pub fn str_of<'v>(v: &'v Vector<'_>, i: usize) -> Option<&'v str> {
    match v {
        Vector::Str(s) => s.get(i),
        Vector::Scalar(Value::Str(s), _) => Some(s),
        _ => None,
    }
}
