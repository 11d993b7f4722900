//! Float and integer nodes of the compiled tier.
//!
//! The rules are those of [`crate::expr::arith`] and [`crate::expr::functions`]: an int ∘ int
//! is an int, an int with a float promotes, `/` and `%` by zero are null, `sqrt` of a negative
//! is null, ties of `min`/`max` keep the first argument. Integer overflow and `min`/`max` of
//! NaN on a row that is not null give up ([`Bail`]) so the evaluator reports them.

use ecsdb_engine::storage::{FieldColumn, FieldView};

use crate::expr::compiled::int_div;
use crate::expr::compiled::pair::FieldPair;
use crate::expr::compiled::{ArithOp, Bail, CHUNK, Chunk, PairOp, mask1, mask2};

/// A one-argument float function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatFn {
    /// `abs`
    Abs,
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
    /// `round` (one argument; a non-finite result keeps the input, as the built-in does)
    Round,
    /// `sqrt` (null below zero; NaN stays NaN)
    Sqrt,
}

/// An expression with a float value.
pub enum FloatNode<'w> {
    /// An f32 field (read as f64).
    F32(FieldColumn<'w, f32>),
    /// An f64 field.
    F64(FieldColumn<'w, f64>),
    /// An integer expression, promoted.
    FromInt(Box<IntNode<'w>>),
    /// A constant.
    Const(f64),
    /// `a op b`.
    Arith(ArithOp, Box<FloatNode<'w>>, Box<FloatNode<'w>>),
    /// `a * k`: division by a power of two, whose reciprocal is exact (same result, no divide).
    Scale(Box<FloatNode<'w>>, f64),
    /// Unary minus.
    Neg(Box<FloatNode<'w>>),
    /// A one-argument function.
    Func(FloatFn, Box<FloatNode<'w>>),
    /// `max(a, b)` (true) or `min(a, b)`.
    MinMax(bool, Box<FloatNode<'w>>, Box<FloatNode<'w>>),
    /// `distance(a, b)`: the points' coordinates, pairwise.
    Distance(Vec<(FloatNode<'w>, FloatNode<'w>)>),
    /// An operation of two fields read together ([`FieldPair`]); the general node it stands
    /// for runs chunks of listed rows.
    Pair(PairOp, Box<FieldPair<'w>>, Box<FloatNode<'w>>),
}

/// The one operation of an f32 field computed in f32 (see [`FloatNode::exact_in_f32`]).
#[derive(Clone, Copy)]
enum OneRounding {
    /// `v`
    Copy,
    /// `-v`
    Neg,
    /// `v + k`
    Add(f32),
    /// `k - v`
    SubFrom(f32),
    /// `v * k`
    Mul(f32),
}

/// An expression with an integer value.
pub enum IntNode<'w> {
    /// An integer field: a view of an integer type (a `u64` above `i64::MAX` gives up, for
    /// the evaluator to report).
    Field(FieldView<'w>),
    /// A constant.
    Const(i64),
    /// `a op b`.
    Arith(ArithOp, Box<IntNode<'w>>, Box<IntNode<'w>>),
    /// Unary minus.
    Neg(Box<IntNode<'w>>),
    /// `abs`.
    Abs(Box<IntNode<'w>>),
    /// `max(a, b)` (true) or `min(a, b)`.
    MinMax(bool, Box<IntNode<'w>>, Box<IntNode<'w>>),
}

type Floats = [f64; CHUNK];
type Ints = [i64; CHUNK];

impl FloatNode<'_> {
    /// Whether evaluating it can give up on some row ([`Bail`]): the compiler must not drop
    /// such a node where the evaluator would still evaluate it (and report its error).
    pub fn can_bail(&self) -> bool {
        match self {
            FloatNode::F32(_) | FloatNode::F64(_) | FloatNode::Const(_) => false,
            FloatNode::FromInt(i) => i.can_bail(),
            FloatNode::Arith(_, a, b) => a.can_bail() || b.can_bail(),
            FloatNode::Scale(a, _) | FloatNode::Neg(a) | FloatNode::Func(_, a) => a.can_bail(),
            FloatNode::MinMax(..) => true,
            FloatNode::Pair(_, _, general) => general.can_bail(),
            FloatNode::Distance(pairs) => pairs.iter().any(|(a, b)| a.can_bail() || b.can_bail()),
        }
    }

    #[cfg(test)]
    /// Whether its value, narrowed to f32, can be computed in f32 arithmetic with the same
    /// result: what an f32 field's new value needs. Two fields: see
    /// [`FieldPair::exact_in_f32`]. One f32 field: alone, negated, or in one `+ - *` with an
    /// f32 constant (or scaled by a power of two), which rounds once in either width.
    pub fn exact_in_f32(&self) -> bool {
        match self {
            FloatNode::Pair(op, pair, _) => pair.exact_in_f32(*op),
            _ => self.one_f32_field().is_some(),
        }
    }

    /// Whether [`FloatNode::eval_f32`] gives its values narrowed to f32: computed in f32
    /// where that is [exact](FloatNode::exact_in_f32), else (two fields) computed in f64 and
    /// narrowed in the same loop.
    pub fn gives_f32(&self) -> bool {
        matches!(self, FloatNode::Pair(..)) || self.one_f32_field().is_some()
    }

    /// The f32 field and the one operation of a node [`exact_in_f32`] of one field.
    ///
    /// [`exact_in_f32`]: FloatNode::exact_in_f32
    fn one_f32_field(&self) -> Option<(&FieldColumn<'_, f32>, OneRounding)> {
        let f32_const = |c: f64| ((c as f32) as f64 == c).then_some(c as f32);
        let (node, op) = match self {
            FloatNode::F32(col) => return Some((col, OneRounding::Copy)),
            FloatNode::Neg(a) => (&**a, OneRounding::Neg),
            FloatNode::Scale(a, k) => (&**a, OneRounding::Mul(f32_const(*k)?)),
            FloatNode::Arith(op, a, b) => match (&**a, &**b, op) {
                (x, FloatNode::Const(c), ArithOp::Add) | (FloatNode::Const(c), x, ArithOp::Add) => {
                    (x, OneRounding::Add(f32_const(*c)?))
                }
                // `v - c` is `v + -c` in IEEE arithmetic.
                (x, FloatNode::Const(c), ArithOp::Sub) => (x, OneRounding::Add(-f32_const(*c)?)),
                (FloatNode::Const(c), x, ArithOp::Sub) => (x, OneRounding::SubFrom(f32_const(*c)?)),
                (x, FloatNode::Const(c), ArithOp::Mul) | (FloatNode::Const(c), x, ArithOp::Mul) => {
                    (x, OneRounding::Mul(f32_const(*c)?))
                }
                _ => return None,
            },
            _ => return None,
        };
        let FloatNode::F32(col) = node else { return None };
        Some((col, op))
    }

    /// For a node that [gives f32](FloatNode::gives_f32), the chunk's values narrowed to f32
    /// into `out` (every row valid, or [`Bail`] as [`FloatNode::eval`] would); `None`
    /// (nothing done) where it cannot (two fields over a chunk of listed rows) or for another
    /// node.
    pub fn eval_f32(&self, c: Chunk<'_>, out: &mut [f32]) -> Option<Result<(), Bail>> {
        if let FloatNode::Pair(op, pair, _) = self {
            return match (*op, pair.exact_in_f32(*op)) {
                (PairOp::Arith(op), true) => pair.arith_f32(op, c, out).then_some(Ok(())),
                (PairOp::MinMax(max), true) => pair.min_max_f32(max, c, out),
                (PairOp::Arith(op), false) => pair.arith_narrowed(op, c, out).then_some(Ok(())),
                (PairOp::MinMax(max), false) => pair.min_max_narrowed(max, c, out),
            };
        }
        let (col, op) = self.one_f32_field()?;
        match op {
            OneRounding::Copy => c.gather(col, out, |v| *v),
            OneRounding::Neg => c.gather(col, out, |v| -*v),
            OneRounding::Add(k) => c.gather(col, out, |v| *v + k),
            OneRounding::SubFrom(k) => c.gather(col, out, |v| k - *v),
            OneRounding::Mul(k) => c.gather(col, out, |v| *v * k),
        }
        Some(Ok(()))
    }

    /// Whether it is a field (a leaf read straight from a column).
    pub fn is_leaf(&self) -> bool {
        matches!(self, FloatNode::F32(_) | FloatNode::F64(_))
    }

    /// For a field, `f(&mut out[j], row j's value)` over the chunk, and true; for any other
    /// node, false and nothing done. An operation with a field operand reads the column
    /// straight into its result, with no chunk of the field's values in between.
    #[inline(always)]
    fn merge_leaf<R>(&self, c: Chunk<'_>, out: &mut [R], mut f: impl FnMut(&mut R, f64)) -> bool {
        match self {
            FloatNode::F32(col) => c.merge(col, out, |o, v| f(o, *v as f64)),
            FloatNode::F64(col) => c.merge(col, out, |o, v| f(o, *v)),
            _ => return false,
        }
        true
    }

    /// The chunk's values into `out[..len]`; returns the rows that are not null.
    pub fn eval(&self, c: Chunk<'_>, out: &mut Floats) -> Result<u64, Bail> {
        let n = c.len();
        Ok(match self {
            FloatNode::F32(col) => {
                c.gather(col, out, |v| *v as f64);
                c.all()
            }
            FloatNode::F64(col) => {
                c.gather(col, out, |v| *v);
                c.all()
            }
            FloatNode::FromInt(x) => {
                let mut ints = [0i64; CHUNK];
                let valid = x.eval(c, &mut ints)?;
                for (o, i) in out[..n].iter_mut().zip(&ints[..n]) {
                    *o = *i as f64;
                }
                valid
            }
            FloatNode::Const(k) => {
                out[..n].fill(*k);
                c.all()
            }
            FloatNode::Arith(op, a, b) => {
                // A constant operand stays in a register instead of filling a chunk; with a
                // field on the other side, the field's column is read straight into the result.
                if let FloatNode::Const(k) = **b {
                    if leaf_arith_const(a, *op, k, false, c, &mut out[..n]) {
                        return Ok(c.all());
                    }
                    let valid = a.eval(c, out)?;
                    return Ok(valid & float_arith_const(*op, &mut out[..n], k, false));
                }
                if let FloatNode::Const(k) = **a {
                    if leaf_arith_const(b, *op, k, true, c, &mut out[..n]) {
                        return Ok(c.all());
                    }
                    let valid = b.eval(c, out)?;
                    return Ok(valid & float_arith_const(*op, &mut out[..n], k, true));
                }
                // A field operand of `+ - *` is combined into the other side's values as its
                // column is read: no chunk of its own.
                if merges(*op) && b.is_leaf() {
                    let valid = a.eval(c, out)?;
                    merge_arith(b, *op, false, c, &mut out[..n]);
                    return Ok(valid);
                }
                if merges(*op) && a.is_leaf() {
                    let valid = b.eval(c, out)?;
                    merge_arith(a, *op, true, c, &mut out[..n]);
                    return Ok(valid);
                }
                let valid = a.eval(c, out)?;
                let mut rhs = [0.0; CHUNK];
                let valid = valid & b.eval(c, &mut rhs)?;
                valid & float_arith(*op, &mut out[..n], &rhs[..n])
            }
            FloatNode::Scale(a, k) => {
                if a.merge_leaf(c, &mut out[..n], |o, v| *o = v * *k) {
                    return Ok(c.all());
                }
                let valid = a.eval(c, out)?;
                for x in &mut out[..n] {
                    *x *= *k;
                }
                valid
            }
            FloatNode::Neg(a) => {
                if a.merge_leaf(c, &mut out[..n], |o, v| *o = -v) {
                    return Ok(c.all());
                }
                let valid = a.eval(c, out)?;
                for x in &mut out[..n] {
                    *x = -*x;
                }
                valid
            }
            FloatNode::Func(f, a) => {
                let valid = a.eval(c, out)?;
                let xs = &mut out[..n];
                match f {
                    FloatFn::Abs => xs.iter_mut().for_each(|x| *x = x.abs()),
                    FloatFn::Floor => xs.iter_mut().for_each(|x| *x = x.floor()),
                    FloatFn::Ceil => xs.iter_mut().for_each(|x| *x = x.ceil()),
                    FloatFn::Round => xs.iter_mut().for_each(|x| {
                        let r = x.round();
                        if r.is_finite() {
                            *x = r;
                        }
                    }),
                    FloatFn::Sqrt => {
                        let negative = mask1(xs, n, |x| x < 0.0);
                        xs.iter_mut().for_each(|x| *x = x.sqrt());
                        return Ok(valid & !negative);
                    }
                }
                valid
            }
            FloatNode::MinMax(max, a, b) => {
                if a.is_leaf() {
                    // A field first (`min(Health.max, …)`): the second argument's values,
                    // then the field's column combined into them. With every row valid, a NaN
                    // anywhere is one the evaluator reports.
                    let valid = b.eval(c, out)?;
                    if valid == c.all() {
                        let xs = &mut out[..n];
                        let has_nan = |xs: &[f64]| xs.iter().fold(false, |seen, x| seen | x.is_nan());
                        // Ties keep the first argument, the field's value `p`; a NaN `p`
                        // comes out as the result, so a NaN of either side is seen in the
                        // second argument's values or in the results (branch-free passes).
                        let nan = has_nan(xs);
                        if *max {
                            a.merge_leaf(c, xs, |q, p| *q = if *q > p { *q } else { p });
                        } else {
                            a.merge_leaf(c, xs, |q, p| *q = if *q < p { *q } else { p });
                        }
                        return if nan || has_nan(xs) { Err(Bail) } else { Ok(valid) };
                    }
                    let mut rhs = [0.0; CHUNK];
                    rhs[..n].copy_from_slice(&out[..n]);
                    a.eval(c, out)?;
                    return min_max(*max, &mut out[..n], &rhs[..n], valid);
                }
                let valid = a.eval(c, out)?;
                let mut rhs = [0.0; CHUNK];
                let valid = valid & b.eval(c, &mut rhs)?;
                min_max(*max, &mut out[..n], &rhs[..n], valid)?
            }
            FloatNode::Pair(op, pair, general) => {
                let done = match *op {
                    PairOp::Arith(op) => pair.arith(op, c, out).then_some(Ok(c.all())),
                    PairOp::MinMax(max) => pair.min_max(max, c, out),
                };
                match done {
                    Some(valid) => valid?,
                    None => general.eval(c, out)?,
                }
            }
            FloatNode::Distance(pairs) => {
                let valid = squared_distance(pairs, c, out)?;
                for s in &mut out[..n] {
                    *s = s.sqrt();
                }
                valid
            }
        })
    }
}

/// `min` (or `max`, when `max`) of `xs[i]` and `ys[i]` into `xs`, over the `valid` rows; a NaN on
/// a valid row gives up (the evaluator's error to report).
fn min_max(max: bool, xs: &mut [f64], ys: &[f64], valid: u64) -> Result<u64, Bail> {
    let n = xs.len();
    // A fold with no early exit finds a NaN (it vectorises); the mask only when needed.
    let any_nan = xs.iter().zip(ys).fold(false, |seen, (p, q)| seen | p.is_nan() | q.is_nan());
    if any_nan && mask2(xs, ys, n, |p, q| p.is_nan() || q.is_nan()) & valid != 0 {
        return Err(Bail);
    }
    // Ties keep the first argument (it matters for -0 and 0). One loop per direction,
    // branch-free, so each is a vector max or min.
    let pairs = xs.iter_mut().zip(ys);
    if max {
        pairs.for_each(|(p, q)| *p = if *q > *p { *q } else { *p });
    } else {
        pairs.for_each(|(p, q)| *p = if *q < *p { *q } else { *p });
    }
    Ok(valid)
}

/// The squared distance of two points, per coordinate pair, into `out`: the evaluator's
/// order of operations (`s = 0; s += d·d` per coordinate), so its square root is the
/// built-in's `distance` to the bit.
pub fn squared_distance(pairs: &[(FloatNode<'_>, FloatNode<'_>)], c: Chunk<'_>, out: &mut Floats) -> Result<u64, Bail> {
    let n = c.len();
    // Three f32 fields side by side in one column (`Position (x, y, z)`) against a constant
    // point: one walk reads each row's three coordinates together. The sum is the one below
    // to the bit (dx² + dy², then + dz²).
    if let [
        (FloatNode::F32(x), FloatNode::Const(kx)),
        (FloatNode::F32(y), FloatNode::Const(ky)),
        (FloatNode::F32(z), FloatNode::Const(kz)),
    ] = pairs
        && let Some(xyz) = x.with_adjacent(y, z)
    {
        let (kx, ky, kz) = (*kx, *ky, *kz);
        c.merge(&xyz, &mut out[..n], |s, v| {
            let (dx, dy, dz) = (v[0] as f64 - kx, v[1] as f64 - ky, v[2] as f64 - kz);
            *s = dx * dx + dy * dy + dz * dz;
        });
        return Ok(c.all());
    }
    let mut valid = c.all();
    // A first coordinate that is a field against a constant sets the sums instead of adding
    // to zeros (0 + d² is d² to the bit: a square is never -0).
    let first_set = match pairs.first() {
        Some((pa, FloatNode::Const(k))) => pa.merge_leaf(c, &mut out[..n], |s, x| {
            let d = x - *k;
            *s = d * d;
        }),
        _ => false,
    };
    let rest = if first_set {
        &pairs[1..]
    } else {
        out[..n].fill(0.0);
        pairs
    };
    for (pa, pb) in rest {
        if let FloatNode::Const(k) = *pb {
            // A constant point (the usual centre) stays in registers; a field coordinate is
            // read straight into the sum.
            let sum = |s: &mut f64, x: f64| {
                let d = x - k;
                *s += d * d;
            };
            if pa.merge_leaf(c, &mut out[..n], sum) {
                continue;
            }
            let mut a = [0.0; CHUNK];
            valid &= pa.eval(c, &mut a)?;
            out[..n].iter_mut().zip(&a[..n]).for_each(|(s, x)| sum(s, *x));
            continue;
        }
        let (mut a, mut b) = ([0.0; CHUNK], [0.0; CHUNK]);
        valid &= pa.eval(c, &mut a)?;
        valid &= pb.eval(c, &mut b)?;
        for ((s, x), y) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
            let d = x - y;
            *s += d * d;
        }
    }
    Ok(valid)
}

/// Whether a field operand of `op` can be combined into the other side's values as its column
/// is read ([`merge_arith`]): the operators that never make a row null.
fn merges(op: ArithOp) -> bool {
    matches!(op, ArithOp::Add | ArithOp::Sub | ArithOp::Mul)
}

/// `out[j] op leaf[j]` (`leaf[j] op out[j]` when `flip`) into `out`, for an operator that
/// [`merges`]; false (nothing done) for others, or when `leaf` is not a field.
fn merge_arith(leaf: &FloatNode<'_>, op: ArithOp, flip: bool, c: Chunk<'_>, out: &mut [f64]) -> bool {
    match (op, flip) {
        (ArithOp::Add, _) => leaf.merge_leaf(c, out, |o, v| *o += v),
        (ArithOp::Mul, _) => leaf.merge_leaf(c, out, |o, v| *o *= v),
        (ArithOp::Sub, false) => leaf.merge_leaf(c, out, |o, v| *o -= v),
        (ArithOp::Sub, true) => leaf.merge_leaf(c, out, |o, v| *o = v - *o),
        _ => false,
    }
}

/// `leaf[j] op k` (`k op leaf[j]` when `flip`) into `out`, straight from the field's column,
/// where no row becomes null (`+ - *`, and `/` by a non-zero constant); false (nothing done)
/// otherwise, or when `leaf` is not a field.
fn leaf_arith_const(leaf: &FloatNode<'_>, op: ArithOp, k: f64, flip: bool, c: Chunk<'_>, out: &mut [f64]) -> bool {
    match (op, flip) {
        (ArithOp::Add, _) => leaf.merge_leaf(c, out, |o, v| *o = v + k),
        (ArithOp::Mul, _) => leaf.merge_leaf(c, out, |o, v| *o = v * k),
        (ArithOp::Sub, false) => leaf.merge_leaf(c, out, |o, v| *o = v - k),
        (ArithOp::Sub, true) => leaf.merge_leaf(c, out, |o, v| *o = k - v),
        (ArithOp::Div, false) if k != 0.0 => leaf.merge_leaf(c, out, |o, v| *o = v / k),
        _ => false,
    }
}

/// `xs[i] op ys[i]` in place; returns the rows that stay valid (division by zero is null).
#[inline]
fn float_arith(op: ArithOp, xs: &mut [f64], ys: &[f64]) -> u64 {
    let n = xs.len();
    let pairs = xs.iter_mut().zip(ys);
    match op {
        ArithOp::Add => pairs.for_each(|(x, y)| *x += y),
        ArithOp::Sub => pairs.for_each(|(x, y)| *x -= y),
        ArithOp::Mul => pairs.for_each(|(x, y)| *x *= y),
        ArithOp::Div | ArithOp::Rem => {
            if op == ArithOp::Div {
                pairs.for_each(|(x, y)| *x /= y);
            } else {
                pairs.for_each(|(x, y)| *x %= y);
            }
            return !mask1(ys, n, |y| y == 0.0);
        }
    }
    u64::MAX
}

/// `xs[i] op k` (or `k op xs[i]` when `flip`) in place; returns the rows that stay valid.
#[inline]
fn float_arith_const(op: ArithOp, xs: &mut [f64], k: f64, flip: bool) -> u64 {
    let n = xs.len();
    match (op, flip) {
        (ArithOp::Add, _) => xs.iter_mut().for_each(|x| *x += k),
        (ArithOp::Mul, _) => xs.iter_mut().for_each(|x| *x *= k),
        (ArithOp::Sub, false) => xs.iter_mut().for_each(|x| *x -= k),
        (ArithOp::Sub, true) => xs.iter_mut().for_each(|x| *x = k - *x),
        (ArithOp::Div, false) => {
            if k == 0.0 {
                return 0;
            }
            xs.iter_mut().for_each(|x| *x /= k)
        }
        (ArithOp::Rem, false) => {
            if k == 0.0 {
                return 0;
            }
            xs.iter_mut().for_each(|x| *x %= k)
        }
        (ArithOp::Div | ArithOp::Rem, true) => {
            let zero = mask1(xs, n, |y| y == 0.0);
            if op == ArithOp::Div {
                xs.iter_mut().for_each(|x| *x = k / *x);
            } else {
                xs.iter_mut().for_each(|x| *x = k % *x);
            }
            return !zero;
        }
    }
    u64::MAX
}

/// `1 / k` when dividing by `k` is the same as multiplying by it for every operand: `k` a
/// power of two whose reciprocal is a normal number (both products are the same real number,
/// rounded once).
pub fn exact_reciprocal(k: f64) -> Option<f64> {
    const MANTISSA: u64 = (1 << 52) - 1;
    let r = 1.0 / k;
    (k.is_normal() && r.is_normal() && k.to_bits() & MANTISSA == 0).then_some(r)
}

impl IntNode<'_> {
    /// Whether evaluating it can give up on some row (see [`FloatNode::can_bail`]).
    pub fn can_bail(&self) -> bool {
        match self {
            IntNode::Field(FieldView::U64(_)) | IntNode::Arith(..) | IntNode::Neg(_) | IntNode::Abs(_) => true,
            IntNode::MinMax(_, a, b) => a.can_bail() || b.can_bail(),
            _ => false,
        }
    }

    /// The chunk's values into `out[..len]`; returns the rows that are not null.
    pub fn eval(&self, c: Chunk<'_>, out: &mut Ints) -> Result<u64, Bail> {
        let n = c.len();
        Ok(match self {
            IntNode::Field(view) => {
                match view {
                    FieldView::I8(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::I16(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::I32(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::I64(col) => c.gather(col, out, |v| *v),
                    FieldView::U8(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::U16(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::U32(col) => c.gather(col, out, |v| *v as i64),
                    FieldView::U64(col) => {
                        let mut raw = [0u64; CHUNK];
                        c.gather(col, &mut raw, |v| *v);
                        if raw[..n].iter().fold(false, |big, v| big | (*v > i64::MAX as u64)) {
                            return Err(Bail);
                        }
                        for (o, v) in out[..n].iter_mut().zip(&raw[..n]) {
                            *o = *v as i64;
                        }
                    }
                    // The compiler makes integer leaves of integer views only.
                    _ => return Err(Bail),
                }
                c.all()
            }
            IntNode::Const(k) => {
                out[..n].fill(*k);
                c.all()
            }
            IntNode::Arith(op, a, b) => {
                let valid = a.eval(c, out)?;
                // A constant right operand (`Unit.id % 10`, `x + 1`) stays in a register.
                if let IntNode::Const(k) = **b {
                    return int_arith_const(*op, &mut out[..n], k, valid);
                }
                let mut rhs = [0i64; CHUNK];
                let valid = valid & b.eval(c, &mut rhs)?;
                int_arith(*op, &mut out[..n], &rhs[..n], valid)?
            }
            IntNode::Neg(a) | IntNode::Abs(a) => {
                let valid = a.eval(c, out)?;
                if mask1(&out[..n], n, |x| x == i64::MIN) & valid != 0 {
                    return Err(Bail);
                }
                let abs = matches!(self, IntNode::Abs(_));
                for x in &mut out[..n] {
                    *x = if abs { x.wrapping_abs() } else { x.wrapping_neg() };
                }
                valid
            }
            IntNode::MinMax(max, a, b) => {
                let valid = a.eval(c, out)?;
                let mut rhs = [0i64; CHUNK];
                let valid = valid & b.eval(c, &mut rhs)?;
                for (p, q) in out[..n].iter_mut().zip(&rhs[..n]) {
                    *p = if *max { (*p).max(*q) } else { (*p).min(*q) };
                }
                valid
            }
        })
    }
}

/// `xs[i] op k` in place over the `valid` rows, as [`int_arith`] with every `ys[i]` = `k`.
fn int_arith_const(op: ArithOp, xs: &mut [i64], k: i64, valid: u64) -> Result<u64, Bail> {
    match op {
        ArithOp::Div | ArithOp::Rem => int_div::div_rem_by(op == ArithOp::Rem, xs, k, valid),
        _ => overflowing_arith(op, xs, |_| k, valid),
    }
}

/// `xs[i] op ys[i]` in place over the `valid` rows; returns the rows that stay valid.
/// Overflow on a valid row gives up.
fn int_arith(op: ArithOp, xs: &mut [i64], ys: &[i64], valid: u64) -> Result<u64, Bail> {
    let ys = &ys[..xs.len()];
    match op {
        ArithOp::Div | ArithOp::Rem => int_div::div_rem(op == ArithOp::Rem, xs, ys, valid),
        _ => overflowing_arith(op, xs, |j| ys[j], valid),
    }
}

/// `xs[j] op y(j)` for `+ - *`, in place; gives up on overflow in a valid row.
#[inline(always)]
fn overflowing_arith(op: ArithOp, xs: &mut [i64], y: impl Fn(usize) -> i64, valid: u64) -> Result<u64, Bail> {
    let f = match op {
        ArithOp::Add => i64::overflowing_add,
        ArithOp::Sub => i64::overflowing_sub,
        _ => i64::overflowing_mul,
    };
    let mut overflow = 0u64;
    for (j, x) in xs.iter_mut().enumerate() {
        let (r, o) = f(*x, y(j));
        *x = r;
        overflow |= (o as u64) << j;
    }
    if overflow & valid != 0 {
        return Err(Bail);
    }
    Ok(valid)
}
