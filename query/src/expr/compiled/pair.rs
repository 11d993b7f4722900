//! Two fields of one table read together: the operations of two field operands.
//!
//! `Health.hp < Health.max / 2`, `Position.x + Velocity.x * $dt` and `min(Health.max,
//! Health.hp + 5)` each combine two fields, each perhaps scaled or shifted by a constant. The
//! general nodes fill a chunk with one side's values, then combine the other's into it. A
//! [`FieldPair`] walks both columns once, together ([`FieldColumn::zip_range`]), straight into
//! the result: a comparison's bit mask, an arithmetic result, a `min`/`max`. It is found once,
//! when the expression is compiled for a table, and used for chunks of consecutive rows; a
//! chunk of listed rows takes the general node it replaces.

use ecsdb_engine::storage::FieldColumn;

use crate::expr::compiled::num::{ArithOp, FloatNode};
use crate::expr::compiled::{pack, sized, Bail, Chunk, CHUNK};
use crate::plan::logical::BinaryOp;

/// Two float fields of one type, each in an affine form `v * k + c` (see [`affine`]).
pub struct FieldPair<'w> {
    columns: Columns<'w>,
    /// `a = x * kx + cx`, `b = y * ky + cy`.
    kx: f64,
    cx: f64,
    ky: f64,
    cy: f64,
    /// Whether either side adds a constant (a loop without the adds otherwise).
    adds: bool,
}

enum Columns<'w> {
    F32(FieldColumn<'w, f32>, FieldColumn<'w, f32>),
    F64(FieldColumn<'w, f64>, FieldColumn<'w, f64>),
}

/// `x + NO_ADD` is `x`, for every float: the constant of a side that adds none.
const NO_ADD: f64 = -0.0;

impl<'w> FieldPair<'w> {
    /// The pair for `a` and `b`, when both are fields of one float type in an affine form.
    pub fn of(a: &FloatNode<'w>, b: &FloatNode<'w>) -> Option<Self> {
        let ((x, kx, cx), (y, ky, cy)) = (affine(a)?, affine(b)?);
        let columns = match (x, y) {
            (FloatNode::F32(x), FloatNode::F32(y)) => Columns::F32(*x, *y),
            (FloatNode::F64(x), FloatNode::F64(y)) => Columns::F64(*x, *y),
            _ => return None,
        };
        let adds = cx.to_bits() != NO_ADD.to_bits() || cy.to_bits() != NO_ADD.to_bits();
        Some(FieldPair { columns, kx, cx, ky, cy, adds })
    }

    /// `f(&mut out[j], a, b)` for row `j` of a chunk of consecutive rows; false (nothing done)
    /// for a chunk of listed rows.
    #[inline(always)]
    fn zip<R>(&self, c: Chunk<'_>, out: &mut [R], mut f: impl FnMut(&mut R, f64, f64)) -> bool {
        let Chunk::Range { start, len } = c else { return false };
        let out = &mut out[..len];
        let FieldPair { kx, cx, ky, cy, .. } = *self;
        match (&self.columns, self.adds) {
            (Columns::F32(x, y), false) => x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 * kx, *q as f64 * ky)),
            (Columns::F32(x, y), true) => {
                x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 * kx + cx, *q as f64 * ky + cy))
            }
            (Columns::F64(x, y), _) => x.zip_range(y, start, out, |o, p, q| f(o, *p * kx + cx, *q * ky + cy)),
        }
        true
    }

    /// `a op b` into `out` for `+ - *`; false (nothing done) for a chunk of listed rows or
    /// another operator.
    pub fn arith(&self, op: ArithOp, c: Chunk<'_>, out: &mut [f64]) -> bool {
        match op {
            ArithOp::Add => self.zip(c, out, |o, a, b| *o = a + b),
            ArithOp::Sub => self.zip(c, out, |o, a, b| *o = a - b),
            ArithOp::Mul => self.zip(c, out, |o, a, b| *o = a * b),
            ArithOp::Div | ArithOp::Rem => false,
        }
    }

    /// `max(a, b)` (`max` true) or `min(a, b)` into `out`, ties keeping `a`: every row valid,
    /// or [`Bail`] when a row has a NaN (an error the evaluator reports). `None` (nothing
    /// done) for a chunk of listed rows.
    pub fn min_max(&self, max: bool, c: Chunk<'_>, out: &mut [f64]) -> Option<Result<u64, Bail>> {
        // `if b < a { b } else { a }` is one `minpd` (a NaN `a` comes out as the result).
        // Subtracting `b - b` changes no result (it is 0, and `r - 0` is `r`, -0 included)
        // except where `b` is NaN or infinite, which makes the result NaN: then one look for
        // NaN in the results finds every NaN of either side, and an infinite `b` gives up
        // too, for the evaluator to answer.
        #[allow(clippy::eq_op)]
        let done = if max {
            self.zip(c, out, |o, a, b| *o = (if b > a { b } else { a }) - (b - b))
        } else {
            self.zip(c, out, |o, a, b| *o = (if b < a { b } else { a }) - (b - b))
        };
        if !done {
            return None;
        }
        let nan = sized(c.len(), |n| out[..n].iter().fold(false, |seen, x| seen | x.is_nan()));
        Some(if nan { Err(Bail) } else { Ok(c.all()) })
    }

    /// The rows where `a op b` is true (never where either side is NaN); `None` (nothing
    /// done) for a chunk of listed rows or an operator other than a comparison.
    pub fn compare(&self, op: BinaryOp, c: Chunk<'_>) -> Option<u64> {
        let mut bytes = [0u8; CHUNK];
        let out = &mut bytes[..c.len()];
        #[allow(clippy::double_comparisons)]
        let done = match op {
            BinaryOp::Eq => self.zip(c, out, |t, a, b| *t = (a == b) as u8),
            // `!=` of Rust is true for NaN; here NaN is null, so not `a != b`.
            BinaryOp::Ne => self.zip(c, out, |t, a, b| *t = (a < b || a > b) as u8),
            BinaryOp::Lt => self.zip(c, out, |t, a, b| *t = (a < b) as u8),
            BinaryOp::Le => self.zip(c, out, |t, a, b| *t = (a <= b) as u8),
            BinaryOp::Gt => self.zip(c, out, |t, a, b| *t = (a > b) as u8),
            BinaryOp::Ge => self.zip(c, out, |t, a, b| *t = (a >= b) as u8),
            _ => false,
        };
        done.then(|| pack(&bytes))
    }
}

/// A field in an affine form, as `(field, k, c)` for `v * k + c`: the field alone, times a
/// constant or divided by a power of two ([`FloatNode::Scale`]), negated, plus or minus a
/// constant, or such a product plus or minus one. Each form is exactly its expression: `v *
/// 1.0` is `v` and `x + -0.0` is `x` for every float (NaN and -0 included), `v - c` is `v +
/// -c` and `c - v` is `-v + c` in IEEE arithmetic.
fn affine<'n, 'w>(node: &'n FloatNode<'w>) -> Option<(&'n FloatNode<'w>, f64, f64)> {
    if let Some((leaf, k)) = scaled(node) {
        return Some((leaf, k, NO_ADD));
    }
    let FloatNode::Arith(op, a, b) = node else { return None };
    match (&**a, &**b, op) {
        (x, FloatNode::Const(c), ArithOp::Add) | (FloatNode::Const(c), x, ArithOp::Add) => {
            scaled(x).map(|(leaf, k)| (leaf, k, *c))
        }
        (x, FloatNode::Const(c), ArithOp::Sub) => scaled(x).map(|(leaf, k)| (leaf, k, -*c)),
        (FloatNode::Const(c), x, ArithOp::Sub) => scaled(x).map(|(leaf, k)| (leaf, -k, *c)),
        _ => None,
    }
}

/// A field times a constant, as `(field, k)`: the multiplying part of [`affine`].
fn scaled<'n, 'w>(node: &'n FloatNode<'w>) -> Option<(&'n FloatNode<'w>, f64)> {
    match node {
        FloatNode::F32(_) | FloatNode::F64(_) => Some((node, 1.0)),
        FloatNode::Scale(a, k) if a.is_leaf() => Some((&**a, *k)),
        FloatNode::Neg(a) if a.is_leaf() => Some((&**a, -1.0)),
        FloatNode::Arith(ArithOp::Mul, a, b) => match (&**a, &**b) {
            (leaf, FloatNode::Const(k)) | (FloatNode::Const(k), leaf) if leaf.is_leaf() => Some((leaf, *k)),
            _ => None,
        },
        _ => None,
    }
}
