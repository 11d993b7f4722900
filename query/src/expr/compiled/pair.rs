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

use crate::expr::compiled::{ArithOp, PairOp};
use crate::expr::compiled::{Bail, CHUNK, Chunk, pack, sized};
use crate::types::BinaryOp;

/// Two float fields of one type, each in an affine form `v * k + c`.
pub struct FieldPair<'w> {
    columns: PairColumns<'w>,
    /// `a = x * kx + cx`, `b = y * ky + cy`.
    kx: f64,
    cx: f64,
    ky: f64,
    cy: f64,
    /// Whether either side adds a constant (a loop without the adds otherwise).
    adds: bool,
    /// What [`FieldPair::exact_in_f32`] answers, for `+ - *` and for `min`/`max`: found once,
    /// asked every chunk.
    exact_arith: bool,
    exact_min_max: bool,
}

/// The two columns of a [`FieldPair`], of one float type.
pub enum PairColumns<'w> {
    /// Two f32 fields.
    F32(FieldColumn<'w, f32>, FieldColumn<'w, f32>),
    /// Two f64 fields.
    F64(FieldColumn<'w, f64>, FieldColumn<'w, f64>),
}

/// `x + NO_ADD` is `x`, for every float: the constant of a side that adds none.
pub const NO_ADD: f64 = -0.0;

impl<'w> FieldPair<'w> {
    /// The pair of `columns`, read as `x * kx + cx` and `y * ky + cy` (see the compiler's
    /// `field_pair`, which finds such forms).
    pub fn new(columns: PairColumns<'w>, (kx, cx): (f64, f64), (ky, cy): (f64, f64)) -> Self {
        let adds = cx.to_bits() != NO_ADD.to_bits() || cy.to_bits() != NO_ADD.to_bits();
        let f32s = matches!(columns, PairColumns::F32(..));
        let unit = |k: f64| k == 1.0 || k == -1.0;
        let bare = |k: f64, c: f64| unit(k) && c.to_bits() == NO_ADD.to_bits();
        let additive = |k: f64, c: f64| unit(k) && (c as f32) as f64 == c;
        let exact_arith = f32s && bare(kx, cx) && bare(ky, cy);
        let exact_min_max = f32s && additive(kx, cx) && additive(ky, cy);
        FieldPair { columns, kx, cx, ky, cy, adds, exact_arith, exact_min_max }
    }

    /// `f(&mut out[j], a, b)` for row `j` of a chunk of consecutive rows; false (nothing done)
    /// for a chunk of listed rows.
    #[inline(always)]
    fn zip<R>(&self, c: Chunk<'_>, out: &mut [R], mut f: impl FnMut(&mut R, f64, f64)) -> bool {
        let Chunk::Range { start, len } = c else { return false };
        let out = &mut out[..len];
        let FieldPair { kx, cx, ky, cy, .. } = *self;
        // A side whose factor is 1 skips its multiply (`v * 1.0` is `v` for every float): the
        // common shapes (`x + v * $dt`, `min(max, hp + 5)`) are a bare field and a scaled or
        // shifted one, whose rows cost a handful of operations each.
        let (unit_x, unit_y) = (kx == 1.0, ky == 1.0);
        match (&self.columns, self.adds) {
            (PairColumns::F32(x, y), false) => match (unit_x, unit_y) {
                (true, true) => x.zip_range(y, start, out, |o, p, q| f(o, *p as f64, *q as f64)),
                (true, false) => x.zip_range(y, start, out, |o, p, q| f(o, *p as f64, *q as f64 * ky)),
                (false, true) => x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 * kx, *q as f64)),
                (false, false) => x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 * kx, *q as f64 * ky)),
            },
            (PairColumns::F32(x, y), true) if unit_x && unit_y => {
                x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 + cx, *q as f64 + cy))
            }
            (PairColumns::F32(x, y), true) => {
                x.zip_range(y, start, out, |o, p, q| f(o, *p as f64 * kx + cx, *q as f64 * ky + cy))
            }
            (PairColumns::F64(x, y), _) => x.zip_range(y, start, out, |o, p, q| f(o, *p * kx + cx, *q * ky + cy)),
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
        let done = if max {
            self.zip(c, out, |o, a, b| *o = pick::<true, _>(a, b))
        } else {
            self.zip(c, out, |o, a, b| *o = pick::<false, _>(a, b))
        };
        Some(without_nan(done, c, out)?.map(|()| c.all()))
    }

    /// Whether `op` of this pair, computed in f32 arithmetic on the f32 fields, gives exactly
    /// the f32 that its f64 result rounds to: an f32 field's new value can then be computed
    /// in its own type ([`FieldPair::arith_f32`], [`FieldPair::min_max_f32`]), without
    /// widening and narrowing every value.
    ///
    /// It does when at most one rounding happens on the way: the f64 sum, difference or
    /// product of two f32 values rounded to f32 is the f32 operation's result (f64 carries
    /// more than twice f32's 24 bits, so rounding twice is rounding once), so `a + b`, `a -
    /// b` and `a * b` qualify when each side is a bare field (`±v`). `min` and `max` round
    /// nothing and rounding keeps order, so they qualify when each side rounds at most once
    /// without reaching zero: `±v + c` with `c` an f32 (a nonzero sum of f32s is at least the
    /// smallest f32, where a product could round to a zero of the other sign).
    #[inline]
    pub fn exact_in_f32(&self, op: PairOp) -> bool {
        match op {
            PairOp::Arith(ArithOp::Add | ArithOp::Sub | ArithOp::Mul) => self.exact_arith,
            PairOp::MinMax(_) => self.exact_min_max,
            PairOp::Arith(ArithOp::Div | ArithOp::Rem) => false,
        }
    }

    /// `f(&mut out[j], a, b)` in f32 for row `j` of a chunk of consecutive rows of an f32
    /// pair; false (nothing done) otherwise.
    #[inline(always)]
    fn zip_f32(&self, c: Chunk<'_>, out: &mut [f32], mut f: impl FnMut(&mut f32, f32, f32)) -> bool {
        let (Chunk::Range { start, len }, PairColumns::F32(x, y)) = (c, &self.columns) else { return false };
        let out = &mut out[..len];
        let (kx, cx, ky, cy) = (self.kx as f32, self.cx as f32, self.ky as f32, self.cy as f32);
        match (kx == 1.0 && ky == 1.0, self.adds) {
            (true, false) => x.zip_range(y, start, out, |o, p, q| f(o, *p, *q)),
            (true, true) => x.zip_range(y, start, out, |o, p, q| f(o, *p + cx, *q + cy)),
            (false, _) => x.zip_range(y, start, out, |o, p, q| f(o, *p * kx + cx, *q * ky + cy)),
        }
        true
    }

    /// [`FieldPair::arith`] in f32, for a pair [`exact_in_f32`](FieldPair::exact_in_f32)
    /// for `op`: the f32 each f64 result rounds to.
    pub fn arith_f32(&self, op: ArithOp, c: Chunk<'_>, out: &mut [f32]) -> bool {
        match op {
            ArithOp::Add => self.zip_f32(c, out, |o, a, b| *o = a + b),
            ArithOp::Sub => self.zip_f32(c, out, |o, a, b| *o = a - b),
            ArithOp::Mul => self.zip_f32(c, out, |o, a, b| *o = a * b),
            ArithOp::Div | ArithOp::Rem => false,
        }
    }

    /// [`FieldPair::min_max`] in f32, for a pair [`exact_in_f32`](FieldPair::exact_in_f32)
    /// for it: the same ties, and [`Bail`] wherever the f64 form gives up or a side reaches
    /// infinity in f32 (a NaN or infinite `b` makes the result NaN).
    pub fn min_max_f32(&self, max: bool, c: Chunk<'_>, out: &mut [f32]) -> Option<Result<(), Bail>> {
        let done = if max {
            self.zip_f32(c, out, |o, a, b| *o = pick::<true, _>(a, b))
        } else {
            self.zip_f32(c, out, |o, a, b| *o = pick::<false, _>(a, b))
        };
        without_nan(done, c, out)
    }

    /// [`FieldPair::arith`] narrowed to f32 in the same loop, for an f32 field's new value:
    /// each value the f32 its f64 result narrows to, with no chunk of f64s in between. Used
    /// where the pair is not [`exact_in_f32`](FieldPair::exact_in_f32) (`x + v * $dt`).
    pub fn arith_narrowed(&self, op: ArithOp, c: Chunk<'_>, out: &mut [f32]) -> bool {
        match op {
            ArithOp::Add => self.zip(c, out, |o, a, b| *o = (a + b) as f32),
            ArithOp::Sub => self.zip(c, out, |o, a, b| *o = (a - b) as f32),
            ArithOp::Mul => self.zip(c, out, |o, a, b| *o = (a * b) as f32),
            ArithOp::Div | ArithOp::Rem => false,
        }
    }

    /// [`FieldPair::min_max`] narrowed to f32 in the same loop (see
    /// [`FieldPair::arith_narrowed`]); a NaN of the f64 result is a NaN of its f32, so the
    /// chunk gives up exactly where the f64 form does.
    pub fn min_max_narrowed(&self, max: bool, c: Chunk<'_>, out: &mut [f32]) -> Option<Result<(), Bail>> {
        let done = if max {
            self.zip(c, out, |o, a, b| *o = pick::<true, _>(a, b) as f32)
        } else {
            self.zip(c, out, |o, a, b| *o = pick::<false, _>(a, b) as f32)
        };
        without_nan(done, c, out)
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

/// `max(a, b)` (`MAX`) or `min(a, b)`, ties keeping `a`, in a form that lets one look at the
/// results find every NaN. `if b < a { b } else { a }` is one `minpd` (a NaN `a` comes out
/// as the result). Subtracting `b - b` changes no result (it is 0, and `r - 0` is `r`, -0
/// included) except where `b` is NaN or infinite, which makes the result NaN: so a NaN of
/// either side, and an infinite `b`, show as a NaN result, for the evaluator to answer.
#[inline(always)]
#[allow(clippy::eq_op)]
fn pick<const MAX: bool, T: Copy + PartialOrd + std::ops::Sub<Output = T>>(a: T, b: T) -> T {
    let kept = if MAX {
        if b > a { b } else { a }
    } else if b < a {
        b
    } else {
        a
    };
    kept - (b - b)
}

/// `None` if the chunk was not done (listed rows), else [`Bail`] where one of its results
/// (of [`pick`]) is NaN. One fold with no early exit (`x != x` is the NaN test), so it
/// vectorises.
#[inline(always)]
#[allow(clippy::eq_op)]
fn without_nan<T: Copy + PartialEq>(done: bool, c: Chunk<'_>, out: &[T]) -> Option<Result<(), Bail>> {
    if !done {
        return None;
    }
    let nan = sized(c.len(), |n| out[..n].iter().fold(false, |seen, x| seen | (*x != *x)));
    Some(if nan { Err(Bail) } else { Ok(()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecsdb_engine::storage::TableId;
    use ecsdb_engine::{ComponentDef, FieldType, Value, World};

    use crate::expr::compiled::num::FloatNode;
    use crate::expr::compiled::tests::awkward_f32s;

    /// Wherever [`FieldPair::exact_in_f32`] holds, the f32 results are the f64 results
    /// narrowed, bit for bit (NaN for NaN), or an infinity (which the UPDATE checks row by
    /// row) or a chunk given up where the f64 one is not refused.
    #[test]
    fn f32_results_are_the_f64_results_narrowed() {
        let rows = 2048;
        let mut world = World::new();
        let id =
            world.define_component(&ComponentDef::new("P", &[("a", FieldType::F32), ("b", FieldType::F32)])).unwrap();
        let (a, b) = (awkward_f32s(rows, 1), awkward_f32s(rows, 2));
        let mut last = None;
        for r in 0..rows {
            let fields = [("a", Value::Float(a[r] as f64)), ("b", Value::Float(b[r] as f64))];
            last = Some(world.spawn_values(&[("P", &fields)]).unwrap());
        }
        let t = TableId(world.location(last.unwrap()).unwrap().table);
        let col = |f| FloatNode::F32(world.table_field::<f32>(t, id, f).unwrap());
        let side = |f: usize, k: f64, c: f64| {
            let v = match k {
                1.0 => col(f),
                k => FloatNode::Arith(ArithOp::Mul, Box::new(col(f)), Box::new(FloatNode::Const(k))),
            };
            if c.to_bits() == NO_ADD.to_bits() {
                v
            } else {
                FloatNode::Arith(ArithOp::Add, Box::new(v), Box::new(FloatNode::Const(c)))
            }
        };
        let mut compared = 0;
        // Sides that round twice or round to zero are here so that the test fails if they
        // were let through.
        let constants = [NO_ADD, 5.0, -0.5, 1e30f32 as f64, f32::MAX as f64, 3.0e-39f32 as f64, 0.1, 1e-300];
        for (ka, kb) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (0.1, 1.0), (1.0, 3.0), (1e-30, 1.0)] {
            for (ca, cb) in constants.iter().flat_map(|&ca| constants.iter().map(move |&cb| (ca, cb))) {
                let pair =
                    crate::expr::compiled::build::field_pair(&side(0, ka, ca), &side(1, kb, cb)).expect("a pair");
                let ops = [
                    PairOp::Arith(ArithOp::Add),
                    PairOp::Arith(ArithOp::Sub),
                    PairOp::Arith(ArithOp::Mul),
                    PairOp::MinMax(false),
                    PairOp::MinMax(true),
                ];
                for op in ops {
                    check_narrowed(&pair, op, rows);
                    if !pair.exact_in_f32(op) {
                        continue;
                    }
                    for start in (0..rows).step_by(CHUNK) {
                        let c = Chunk::Range { start, len: CHUNK.min(rows - start) };
                        let (mut wide, mut narrow) = ([0.0f64; CHUNK], [0.0f32; CHUNK]);
                        let (wide_ok, narrow_ok) = match op {
                            PairOp::Arith(o) => (pair.arith(o, c, &mut wide), pair.arith_f32(o, c, &mut narrow)),
                            PairOp::MinMax(max) => {
                                let w = pair.min_max(max, c, &mut wide).unwrap().is_ok();
                                (w, pair.min_max_f32(max, c, &mut narrow).unwrap().is_ok())
                            }
                        };
                        assert!(wide_ok || !narrow_ok, "{op:?}: f32 answered where f64 gave up");
                        if !narrow_ok {
                            continue;
                        }
                        for j in 0..c.len() {
                            let (w, n) = (wide[j], narrow[j]);
                            let agrees = n.is_infinite()
                                || (n.is_nan() && w.is_nan())
                                || ((w as f32).to_bits() == n.to_bits() && !(w as f32).is_infinite());
                            assert!(
                                agrees,
                                "{op:?} sides ({ka}, {ca:e}), ({kb}, {cb:e}) row {}: f32 {n:e}, f64 {w:e}",
                                start + j
                            );
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert!(compared > 100_000, "{compared} results compared");
    }

    /// Narrowed in the loop, every pair's results are its f64 results narrowed, bit for bit
    /// (infinities included), and a chunk gives up exactly where the f64 one does.
    fn check_narrowed(pair: &FieldPair<'_>, op: PairOp, rows: usize) {
        for start in (0..rows).step_by(CHUNK) {
            let c = Chunk::Range { start, len: CHUNK.min(rows - start) };
            let (mut wide, mut narrow) = ([0.0f64; CHUNK], [0.0f32; CHUNK]);
            let (wide_ok, narrow_ok) = match op {
                PairOp::Arith(o) => (pair.arith(o, c, &mut wide), pair.arith_narrowed(o, c, &mut narrow)),
                PairOp::MinMax(max) => (
                    pair.min_max(max, c, &mut wide).unwrap().is_ok(),
                    pair.min_max_narrowed(max, c, &mut narrow).unwrap().is_ok(),
                ),
            };
            assert_eq!(wide_ok, narrow_ok, "{op:?} at {start}");
            for j in 0..c.len() {
                let (w, n) = (wide[j] as f32, narrow[j]);
                assert!(
                    w.to_bits() == n.to_bits() || (w.is_nan() && n.is_nan()),
                    "{op:?} row {}: {n:e} {w:e}",
                    start + j
                );
            }
        }
    }
}
