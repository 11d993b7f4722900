//! Conditions of the compiled tier: two bit masks per chunk, the rows where the condition is
//! true and the rows where it is false; a null row is in neither.
//!
//! With that pair, SQL's three-valued logic is plain bit arithmetic: `a AND b` is true where
//! both are true and false where either is false; `OR` is its mirror; `NOT` swaps the masks.
//! Comparisons follow [`crate::expr::ops::compare`]: null or NaN on either side is null.

use ecsdb_engine::storage::{FieldColumn, FieldView, StringHeads};

use crate::expr::compiled::num::{FloatNode, IntNode, squared_distance};
use crate::expr::compiled::pair::FieldPair;
use crate::expr::compiled::{Bail, CHUNK, Chunk, mask1, mask2, pack};
use crate::expr::like::{self, HeadTest, LikeMatcher, ShortTest};
use crate::types::BinaryOp;

/// A string field's heads, for `LIKE` (see [`ecsdb_engine::storage::string_head`]).
pub enum LikeOnHeads {
    /// A prefix or exact pattern, tested on the heads.
    Head(StringHeads, HeadTest),
    /// A suffix or substring, tested on the head of a string of up to seven bytes (which holds
    /// it whole) and on the string itself otherwise.
    Short(StringHeads, ShortTest),
}

/// A condition.
pub enum CondNode<'w> {
    /// A constant: `Some(b)`, or null.
    Const(Option<bool>),
    /// A bool field.
    Field(FieldColumn<'w, bool>),
    /// Two floats compared (NaN is null).
    CmpFloat(BinaryOp, Box<FloatNode<'w>>, Box<FloatNode<'w>>),
    /// Two integers compared.
    CmpInt(BinaryOp, Box<IntNode<'w>>, Box<IntNode<'w>>),
    /// `a AND b`.
    And(Box<CondNode<'w>>, Box<CondNode<'w>>),
    /// `a OR b`.
    Or(Box<CondNode<'w>>, Box<CondNode<'w>>),
    /// `NOT a`.
    Not(Box<CondNode<'w>>),
    /// `x IS NULL` (`IS NOT NULL` is its `NOT`), for a float.
    FloatIsNull(Box<FloatNode<'w>>),
    /// `x IS NULL` for an integer.
    IntIsNull(Box<IntNode<'w>>),
    /// `c IS NULL` for a condition.
    CondIsNull(Box<CondNode<'w>>),
    /// `x IN (constants)` for an integer and integer constants.
    IntIn(Box<IntNode<'w>>, Vec<i64>),
    /// `x IN (constants)` for a float and numeric constants (none NaN); NaN is null.
    FloatIn(Box<FloatNode<'w>>, Vec<f64>),
    /// `within(p, center, radius)`: the distance (see [`FloatNode::Distance`]) of the
    /// coordinate pairs `<=` the radius, true or false (NaN is false, not null, as in the
    /// built-in).
    Within(Vec<(FloatNode<'w>, FloatNode<'w>)>, Box<FloatNode<'w>>),
    /// `inside(p, lo, hi)`: per coordinate, `(p, lo, hi)`.
    Inside(Vec<(FloatNode<'w>, FloatNode<'w>, FloatNode<'w>)>),
    /// `s LIKE pattern` for a string field and a constant pattern, on the field's heads
    /// where it has them.
    Like(FieldColumn<'w, String>, LikeMatcher, Option<Box<LikeOnHeads>>),
    /// A comparison of two fields read together ([`FieldPair`]); the general node it stands
    /// for runs chunks of listed rows.
    PairCmp(BinaryOp, Box<FieldPair<'w>>, Box<CondNode<'w>>),
}

impl CondNode<'_> {
    /// Whether evaluating it can give up on some row (see [`FloatNode::can_bail`]).
    pub fn can_bail(&self) -> bool {
        match self {
            CondNode::Const(_) | CondNode::Field(_) | CondNode::Like(..) => false,
            CondNode::CmpFloat(_, a, b) => a.can_bail() || b.can_bail(),
            CondNode::CmpInt(_, a, b) => a.can_bail() || b.can_bail(),
            CondNode::And(a, b) | CondNode::Or(a, b) => a.can_bail() || b.can_bail(),
            CondNode::Not(a) | CondNode::CondIsNull(a) | CondNode::PairCmp(_, _, a) => a.can_bail(),
            CondNode::FloatIsNull(x) | CondNode::FloatIn(x, _) => x.can_bail(),
            CondNode::IntIsNull(x) | CondNode::IntIn(x, _) => x.can_bail(),
            CondNode::Within(pairs, r) => r.can_bail() || pairs.iter().any(|(a, b)| a.can_bail() || b.can_bail()),
            CondNode::Inside(axes) => axes.iter().any(|(p, l, h)| p.can_bail() || l.can_bail() || h.can_bail()),
        }
    }

    /// The rows of the chunk where the condition is true: what a filter needs, computed
    /// without the false rows where that saves work (comparisons, `AND`, `OR`, `IN`).
    pub fn truth(&self, c: Chunk<'_>) -> Result<u64, Bail> {
        let n = c.len();
        Ok(match self {
            CondNode::CmpFloat(op, a, b) => {
                let mut x = [0.0; CHUNK];
                let valid = a.eval(c, &mut x)?;
                if let FloatNode::Const(k) = **b {
                    return Ok(cmp_float_true(*op, &x[..n], Rhs::Const(k)) & valid);
                }
                let mut y = [0.0; CHUNK];
                let valid = valid & b.eval(c, &mut y)?;
                cmp_float_true(*op, &x[..n], Rhs::Col(&y[..n])) & valid
            }
            CondNode::And(a, b) => {
                let t = a.truth(c)?;
                // No row true on the left: the result is false or null everywhere. The
                // evaluator would still evaluate the right side on the left's null rows, so
                // it is skipped only when it cannot fail.
                if t == 0 && !b.can_bail() {
                    return Ok(0);
                }
                t & b.truth(c)?
            }
            CondNode::Or(a, b) => {
                let t = a.truth(c)?;
                // Every row true on the left: skipped only when the right cannot fail (the
                // evaluator computes a BETWEEN's bounds, lowered to these, on every row).
                if t == c.all() && !b.can_bail() {
                    return Ok(t);
                }
                t | b.truth(c)?
            }
            CondNode::Not(a) => a.eval(c)?.1,
            CondNode::PairCmp(op, pair, general) => match pair.compare(*op, c) {
                Some(t) => t,
                None => general.truth(c)?,
            },
            other => other.eval(c)?.0,
        })
    }

    /// `(true rows, false rows)` of the chunk.
    pub fn eval(&self, c: Chunk<'_>) -> Result<(u64, u64), Bail> {
        let n = c.len();
        let all = c.all();
        Ok(match self {
            CondNode::Const(Some(true)) => (all, 0),
            CondNode::Const(Some(false)) => (0, all),
            CondNode::Const(None) => (0, 0),
            CondNode::Field(col) => {
                let mut v = [false; CHUNK];
                c.gather(col, &mut v, |b| *b);
                let t = mask1(&v, n, |b| b);
                (t, all & !t)
            }
            CondNode::CmpFloat(op, a, b) => {
                let mut x = [0.0; CHUNK];
                let valid = a.eval(c, &mut x)?;
                if let FloatNode::Const(k) = **b {
                    let (t, f) = cmp_float(*op, &x[..n], Rhs::Const(k));
                    return Ok((t & valid, f & valid));
                }
                let mut y = [0.0; CHUNK];
                let valid = valid & b.eval(c, &mut y)?;
                let (t, f) = cmp_float(*op, &x[..n], Rhs::Col(&y[..n]));
                (t & valid, f & valid)
            }
            CondNode::CmpInt(op, a, b) => {
                let mut x = [0i64; CHUNK];
                let mut valid = a.eval(c, &mut x)?;
                let t = if let IntNode::Const(k) = **b {
                    cmp_int(*op, &x[..n], Rhs::Const(k))
                } else {
                    let mut y = [0i64; CHUNK];
                    valid &= b.eval(c, &mut y)?;
                    cmp_int(*op, &x[..n], Rhs::Col(&y[..n]))
                };
                (t & valid, !t & valid)
            }
            CondNode::And(a, b) => {
                let (ta, fa) = a.eval(c)?;
                // As in `truth`: a side that can fail is computed, decided or not.
                if fa == all && !b.can_bail() {
                    return Ok((0, all));
                }
                let (tb, fb) = b.eval(c)?;
                (ta & tb, fa | fb)
            }
            CondNode::Or(a, b) => {
                let (ta, fa) = a.eval(c)?;
                if ta == all && !b.can_bail() {
                    return Ok((all, 0));
                }
                let (tb, fb) = b.eval(c)?;
                (ta | tb, fa & fb)
            }
            CondNode::Not(a) => {
                let (t, f) = a.eval(c)?;
                (f, t)
            }
            CondNode::PairCmp(op, pair, general) => match (pair.compare(*op, c), pair.compare(opposite(*op), c)) {
                // Fields are never null: the false rows are those of the opposite test.
                (Some(t), Some(f)) => (t, f),
                _ => general.eval(c)?,
            },
            CondNode::FloatIsNull(x) => {
                let valid = x.eval(c, &mut [0.0; CHUNK])?;
                (all & !valid, valid)
            }
            CondNode::IntIsNull(x) => {
                let valid = x.eval(c, &mut [0; CHUNK])?;
                (all & !valid, valid)
            }
            CondNode::CondIsNull(x) => {
                let (t, f) = x.eval(c)?;
                let valid = t | f;
                (all & !valid, valid)
            }
            CondNode::IntIn(x, set) => {
                if let Some(t) = narrow_in(x, set, c) {
                    return Ok((t, all & !t));
                }
                let mut v = [0i64; CHUNK];
                let valid = x.eval(c, &mut v)?;
                let t = any_equal(&v[..n], set.iter().copied());
                (t & valid, !t & valid)
            }
            CondNode::FloatIn(x, set) => {
                let mut v = [0.0; CHUNK];
                let valid = x.eval(c, &mut v)? & !mask1(&v, n, f64::is_nan);
                let t = any_equal(&v[..n], set.iter().copied());
                (t & valid, !t & valid)
            }
            CondNode::Within(pairs, r) => {
                let mut sq = [0.0; CHUNK];
                let mut valid = squared_distance(pairs, c, &mut sq)?;
                let t = match **r {
                    FloatNode::Const(r) => within_const(&sq[..n], r),
                    _ => {
                        let mut radius = [0.0; CHUNK];
                        valid &= r.eval(c, &mut radius)?;
                        mask2(&sq, &radius, n, |s, r| s.sqrt() <= r)
                    }
                };
                (t & valid, !t & valid)
            }
            CondNode::Inside(axes) => {
                let mut valid = all;
                let mut t = all;
                let (mut p, mut lo, mut hi) = ([0.0; CHUNK], [0.0; CHUNK], [0.0; CHUNK]);
                for (pn, ln, hn) in axes {
                    valid &= pn.eval(c, &mut p)? & ln.eval(c, &mut lo)? & hn.eval(c, &mut hi)?;
                    t &= mask2(&p, &lo, n, |x, l| l <= x) & mask2(&p, &hi, n, |x, h| x <= h);
                }
                (t & valid, !t & valid)
            }
            CondNode::Like(col, matcher, heads) => {
                let mut v = [false; CHUNK];
                match heads.as_deref() {
                    Some(LikeOnHeads::Head(heads, test)) => {
                        like_heads_chunk(c, col, matcher, heads.as_slice(), test, &mut v)
                    }
                    Some(LikeOnHeads::Short(heads, test)) => {
                        like_short_chunk(c, col, matcher, heads.as_slice(), test, &mut v)
                    }
                    None => like_chunk(c, col, matcher, &mut v),
                }
                let t = mask1(&v, n, |b| b);
                (t, all & !t)
            }
        })
    }
}

/// Whether each row of the chunk matches a `LIKE` pattern, into `v`. The pattern's kind is
/// chosen once a chunk, so each loop is specialised to one test (matched a row, the kinds'
/// branches and loads would stay in the loop); a prefix, suffix or exact pattern of 1 to 8
/// bytes gets a loop for its length, which compares the row's bytes as one or two integers.
fn like_chunk(c: Chunk<'_>, col: &FieldColumn<'_, String>, matcher: &LikeMatcher, v: &mut [bool; CHUNK]) {
    match matcher {
        LikeMatcher::Prefix(p) | LikeMatcher::Suffix(p) | LikeMatcher::Exact(p) if (1..=8).contains(&p.len()) => {
            let p = p.as_bytes();
            match p.len() {
                1 => like_fixed::<1>(c, col, matcher, p, v),
                2 => like_fixed::<2>(c, col, matcher, p, v),
                3 => like_fixed::<3>(c, col, matcher, p, v),
                4 => like_fixed::<4>(c, col, matcher, p, v),
                5 => like_fixed::<5>(c, col, matcher, p, v),
                6 => like_fixed::<6>(c, col, matcher, p, v),
                7 => like_fixed::<7>(c, col, matcher, p, v),
                _ => like_fixed::<8>(c, col, matcher, p, v),
            }
        }
        LikeMatcher::Prefix(p) => c.gather(col, v, |s| like::has_prefix(s, p)),
        LikeMatcher::Suffix(p) => c.gather(col, v, |s| like::has_suffix(s, p)),
        LikeMatcher::Exact(p) => c.gather(col, v, |s| like::is_exact(s, p)),
        _ => c.gather(col, v, |s| matcher.matches(s)),
    }
}

/// [`like_chunk`] on the field's string heads: eight bytes a row from one array, where the
/// strings themselves lie scattered over the heap. A pattern longer than a head reads the
/// strings of the rows whose head it does not rule out.
fn like_heads_chunk(
    c: Chunk<'_>,
    col: &FieldColumn<'_, String>,
    matcher: &LikeMatcher,
    heads: &[u64],
    test: &HeadTest,
    v: &mut [bool; CHUNK],
) {
    match test.masked_compare() {
        Some((mask, want)) => heads_chunk(c, heads, v, |h| h & mask == want),
        None => heads_chunk(c, heads, v, |h| test.test(h)),
    }
    if test.decides() {
        return;
    }
    // The few rows the heads keep are matched on their strings.
    each_row(c, v, |out, row| {
        if *out {
            *out = col.get(row).is_some_and(|s| matcher.matches(s));
        }
    });
}

/// [`like_chunk`] for a suffix or substring: a string of up to seven bytes is tested on its
/// head, which holds it whole, and only longer ones are read from the heap.
fn like_short_chunk(
    c: Chunk<'_>,
    col: &FieldColumn<'_, String>,
    matcher: &LikeMatcher,
    heads: &[u64],
    test: &ShortTest,
    v: &mut [bool; CHUNK],
) {
    each_row(c, v, |out, row| {
        let head = heads[row];
        *out = if head >> 56 <= 7 { test.test(head) } else { col.get(row).is_some_and(|s| matcher.matches(s)) };
    });
}

/// `f(&mut v[j], row j of the chunk)` for each row of the chunk.
#[inline(always)]
fn each_row(c: Chunk<'_>, v: &mut [bool; CHUNK], mut f: impl FnMut(&mut bool, usize)) {
    match c {
        Chunk::Range { start, len } => v[..len].iter_mut().enumerate().for_each(|(j, out)| f(out, start + j)),
        Chunk::Rows(rows) => v.iter_mut().zip(rows).for_each(|(out, &r)| f(out, r as usize)),
    }
}

/// `v[j] = test(head of the chunk's row j)`: one loop a test, with nothing else in it.
#[inline(always)]
fn heads_chunk(c: Chunk<'_>, heads: &[u64], v: &mut [bool; CHUNK], test: impl Fn(u64) -> bool) {
    match c {
        Chunk::Range { start, len } => {
            for (out, &h) in v[..len].iter_mut().zip(&heads[start..start + len]) {
                *out = test(h);
            }
        }
        Chunk::Rows(rows) => {
            for (out, &r) in v.iter_mut().zip(rows) {
                *out = test(heads[r as usize]);
            }
        }
    }
}

/// [`like_chunk`] for a prefix, suffix or exact pattern of `K` bytes (`p`).
#[inline(always)]
fn like_fixed<const K: usize>(
    c: Chunk<'_>,
    col: &FieldColumn<'_, String>,
    matcher: &LikeMatcher,
    p: &[u8],
    v: &mut [bool; CHUNK],
) {
    let Ok(p) = <[u8; K]>::try_from(p) else { return c.gather(col, v, |s| matcher.matches(s)) };
    match matcher {
        LikeMatcher::Prefix(_) => c.gather(col, v, |s| s.as_bytes().first_chunk::<K>() == Some(&p)),
        LikeMatcher::Suffix(_) => c.gather(col, v, |s| s.as_bytes().last_chunk::<K>() == Some(&p)),
        LikeMatcher::Exact(_) => c.gather(col, v, |s| s.len() == K && s.as_bytes().first_chunk::<K>() == Some(&p)),
        _ => c.gather(col, v, |s| matcher.matches(s)),
    }
}

/// The rows whose value equals one of `set`: one pass per constant into bytes, one pack.
fn any_equal<T: Copy + PartialEq>(v: &[T], set: impl IntoIterator<Item = T>) -> u64 {
    let mut bytes = [0u8; CHUNK];
    for k in set {
        for (b, x) in bytes.iter_mut().zip(v) {
            *b |= (*x == k) as u8;
        }
    }
    pack(&bytes)
}

/// `x IN (set)` for a field whose values fit 32 bits (`i32` and narrower, `u16`, `u8`),
/// compared in 32-bit lanes, twice as many to an instruction as 64-bit ones; constants out of
/// that range match no row. `None` for any other operand. (A field is never null.)
fn narrow_in(x: &IntNode<'_>, set: &[i64], c: Chunk<'_>) -> Option<u64> {
    let IntNode::Field(view) = x else { return None };
    let mut v = [0i32; CHUNK];
    match view {
        FieldView::I32(col) => c.gather(col, &mut v, |x| *x),
        FieldView::I16(col) => c.gather(col, &mut v, |x| *x as i32),
        FieldView::I8(col) => c.gather(col, &mut v, |x| *x as i32),
        FieldView::U16(col) => c.gather(col, &mut v, |x| *x as i32),
        FieldView::U8(col) => c.gather(col, &mut v, |x| *x as i32),
        _ => return None,
    }
    Some(any_equal(&v[..c.len()], set.iter().filter_map(|k| i32::try_from(*k).ok())))
}

/// The right operand of a comparison: a chunk, or a constant held in a register.
#[derive(Clone, Copy)]
enum Rhs<'a, T> {
    Col(&'a [T]),
    Const(T),
}

/// Bit `j` set where `f(x[j], y[j])` holds.
#[inline(always)]
fn cmp_mask<T: Copy>(x: &[T], y: Rhs<'_, T>, f: impl Fn(T, T) -> bool) -> u64 {
    match y {
        Rhs::Col(ys) => mask2(x, ys, x.len(), f),
        Rhs::Const(k) => mask1(x, x.len(), |a| f(a, k)),
    }
}

/// The rows where `x op y` is true over floats (never where either side is NaN).
fn cmp_float_true(op: BinaryOp, x: &[f64], y: Rhs<'_, f64>) -> u64 {
    match op {
        BinaryOp::Eq => cmp_mask(x, y, |a, b| a == b),
        // `!=` is true for NaN in Rust; here NaN is null, so not `a != b`.
        #[allow(clippy::double_comparisons)]
        BinaryOp::Ne => cmp_mask(x, y, |a, b| a < b || a > b),
        BinaryOp::Lt => cmp_mask(x, y, |a, b| a < b),
        BinaryOp::Le => cmp_mask(x, y, |a, b| a <= b),
        BinaryOp::Gt => cmp_mask(x, y, |a, b| a > b),
        BinaryOp::Ge => cmp_mask(x, y, |a, b| a >= b),
        // The compiler builds comparisons only.
        _ => 0,
    }
}

/// `(true rows, false rows)` of `x op y` over floats, NaN on either side in neither: the
/// false rows are those of the opposite comparison, which is false for NaN as well.
fn cmp_float(op: BinaryOp, x: &[f64], y: Rhs<'_, f64>) -> (u64, u64) {
    (cmp_float_true(op, x, y), cmp_float_true(opposite(op), x, y))
}

/// The comparison true exactly where `op` is false, for two numbers that are not NaN.
fn opposite(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Eq => BinaryOp::Ne,
        BinaryOp::Ne => BinaryOp::Eq,
        BinaryOp::Lt => BinaryOp::Ge,
        BinaryOp::Le => BinaryOp::Gt,
        BinaryOp::Gt => BinaryOp::Le,
        BinaryOp::Ge => BinaryOp::Lt,
        other => other,
    }
}

/// The rows where `x op y` holds, over integers.
fn cmp_int(op: BinaryOp, x: &[i64], y: Rhs<'_, i64>) -> u64 {
    match op {
        BinaryOp::Eq => cmp_mask(x, y, |a, b| a == b),
        BinaryOp::Ne => cmp_mask(x, y, |a, b| a != b),
        BinaryOp::Lt => cmp_mask(x, y, |a, b| a < b),
        BinaryOp::Le => cmp_mask(x, y, |a, b| a <= b),
        BinaryOp::Gt => cmp_mask(x, y, |a, b| a > b),
        BinaryOp::Ge => cmp_mask(x, y, |a, b| a >= b),
        _ => 0,
    }
}

/// The rows where `sqrt(sq) <= r`, for a constant radius, taking square roots only near the
/// boundary: where `sq` is clearly below or above `r²` (by far more than the rounding of `r²`
/// and of the root), the answer is known without the root; rows within the band around `r²`
/// take the root and compare exactly. Radii whose square is not a normal number (zero,
/// subnormal, infinite, NaN, negative radii) take every root.
fn within_const(sq: &[f64], r: f64) -> u64 {
    let n = sq.len();
    let r2 = r * r;
    if !(r > 0.0 && r2.is_normal()) {
        return mask1(sq, n, |s| s.sqrt() <= r);
    }
    const BAND: f64 = 1e-9;
    let (below, above) = (r2 * (1.0 - BAND), r2 * (1.0 + BAND));
    let surely = mask1(sq, n, |s| s < below);
    // A fold with no early exit (it vectorises); rows near the boundary are rare.
    let is_near = |s: f64| (s >= below) & (s <= above);
    if !sq.iter().fold(false, |any, &s| any | is_near(s)) {
        return surely;
    }
    let near = mask1(sq, n, is_near);
    surely | (mask1(sq, n, |s| s.sqrt() <= r) & near)
}
