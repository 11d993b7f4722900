//! The row-at-a-time path every kernel falls back to for operand types it does not
//! specialise: each row's operands become [`Value`]s and the language's rules in
//! [`crate::expr::ops`] apply. Correct for every type; used for objects, values of run-time
//! type and rare combinations, never for the typed shapes.

use ecsdb_engine::Value;

use crate::expr::vector::Vector;

/// `f` over the rows of one operand.
pub fn map1<'a>(a: &Vector<'_>, n: usize, f: impl Fn(&Value) -> Result<Value, String>) -> Result<Vector<'a>, String> {
    if let Some(v) = a.as_scalar() {
        return Ok(Vector::Scalar(f(v)?, n));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(f(&a.value(i))?);
    }
    Ok(Vector::from_values(out))
}

/// `f` over the rows of two operands.
pub fn map2<'a>(
    a: &Vector<'_>,
    b: &Vector<'_>,
    n: usize,
    f: impl Fn(&Value, &Value) -> Result<Value, String>,
) -> Result<Vector<'a>, String> {
    if let (Some(x), Some(y)) = (a.as_scalar(), b.as_scalar()) {
        return Ok(Vector::Scalar(f(x, y)?, n));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(f(&a.value(i), &b.value(i))?);
    }
    Ok(Vector::from_values(out))
}

/// `f` over the rows of any number of operands.
pub fn map_n<'a>(
    args: &[Vector<'_>],
    n: usize,
    f: impl Fn(&[Value]) -> Result<Value, String>,
) -> Result<Vector<'a>, String> {
    let mut out = Vec::with_capacity(n);
    let mut row = Vec::with_capacity(args.len());
    for i in 0..n {
        row.clear();
        row.extend(args.iter().map(|a| a.value(i)));
        out.push(f(&row)?);
    }
    Ok(Vector::from_values(out))
}
