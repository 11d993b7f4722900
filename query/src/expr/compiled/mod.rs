//! The compiled tier of the expression layer: numeric and boolean expressions over the columns
//! of one table, bound once per table and run 64 rows at a time.
//!
//! The [`Evaluator`](crate::expr::Evaluator) builds a typed [`Vector`] per node and batch:
//! general, but every node writes its whole batch to memory and reads it back. For the shapes
//! most statements are made of (arithmetic, comparisons, `AND`/`OR`/`NOT`, `IN`, `BETWEEN`,
//! `IS NULL`, `LIKE` and the numeric built-ins over fields of the table), this tier compiles
//! the expression into a tree of typed nodes bound to the table's column memory. A node fills
//! a 64-row chunk on the stack (`[f64; 64]`, `[i64; 64]`) with a validity bit mask; a
//! condition yields two bit masks, the rows where it is true and where it is false (null is
//! neither), so three-valued `AND`/`OR`/`NOT` are bit operations and a filter keeps the
//! true mask's rows without building a vector of booleans. Chunks stay in L1 and nothing is
//! allocated per chunk.
//!
//! The semantics are the evaluator's, exactly (the differential tests in `tests.rs` compare
//! the two on random expressions). Where a row needs the general rules (an integer overflow,
//! `min` of NaN, a `u64` above `i64::MAX`: each an error on that row, but only if the
//! evaluator would reach it), a node gives up with [`Bail`] and the caller runs the
//! evaluator instead, which reports exactly what it would have reported.
//!
//! The compiler is [`build`] (from a bound expression and a [`Columns`] source), the float
//! and integer nodes are in [`num`], the conditions in [`cond`].

pub mod build;
pub mod cond;
mod int_div;
pub mod num;
pub mod pair;
#[cfg(test)]
pub(crate) mod tests;

use ecsdb_engine::storage::{FieldColumn, FieldScalar, FieldView};

use crate::expr::vector::{Prim, Vector};

pub use build::{Columns, MAX_STRING_IN, compile};
use cond::CondNode;
use num::{FloatNode, IntNode};

/// An arithmetic operator of the compiled tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

/// What a [`FloatNode::Pair`](num::FloatNode::Pair) computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairOp {
    /// `a + b`, `a - b`, `a * b`.
    Arith(ArithOp),
    /// `max(a, b)` (true) or `min(a, b)`.
    MinMax(bool),
}

/// Rows per chunk: one bit each in a `u64` mask.
pub const CHUNK: usize = 64;

/// A row needs the evaluator's general rules (see the module docs): run the expression there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bail;

/// Up to [`CHUNK`] rows of a table: consecutive, or listed.
#[derive(Clone, Copy, Debug)]
pub enum Chunk<'r> {
    /// Rows `start .. start + len`.
    Range {
        /// First row.
        start: usize,
        /// Number of rows (at most [`CHUNK`], except for [`FloatNode::eval_f32`], which
        /// takes a run of any length: see [`Program::f32s_run`]).
        len: usize,
    },
    /// These rows (at most [`CHUNK`]).
    Rows(&'r [u32]),
}

impl Chunk<'_> {
    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Chunk::Range { len, .. } => *len,
            Chunk::Rows(r) => r.len(),
        }
    }

    /// The mask with a bit for each row of the chunk.
    #[inline]
    pub fn all(&self) -> u64 {
        low_bits(self.len())
    }

    /// `f` of the chunk's values of `col` into `out[..len]`.
    #[inline]
    pub fn gather<T: FieldScalar, R>(&self, col: &FieldColumn<'_, T>, out: &mut [R], f: impl FnMut(&T) -> R) {
        match *self {
            Chunk::Range { start, len } => col.fill_range(start, &mut out[..len], f),
            Chunk::Rows(rows) => col.fill_rows(rows, out, f),
        }
    }

    /// `f(&mut out[j], value)` for each row `j` of the chunk's values of `col`: a gather that
    /// combines with what `out` holds (see [`FieldColumn::merge_range`]).
    #[inline]
    pub fn merge<T: FieldScalar, R>(&self, col: &FieldColumn<'_, T>, out: &mut [R], f: impl FnMut(&mut R, &T)) {
        match *self {
            Chunk::Range { start, len } => col.merge_range(start, &mut out[..len], f),
            Chunk::Rows(rows) => col.merge_rows(rows, out, f),
        }
    }
}

/// The mask of the first `n` bits (`n` ≤ 64).
#[inline]
pub fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Bit `j` set where `f(a[j])` holds, for `j < n`.
#[inline(always)]
pub(crate) fn mask1<A: Copy>(a: &[A], n: usize, f: impl Fn(A) -> bool) -> u64 {
    let mut bytes = [0u8; CHUNK];
    sized(n, |n| {
        for (b, x) in bytes[..n].iter_mut().zip(&a[..n]) {
            *b = f(*x) as u8;
        }
    });
    pack(&bytes)
}

/// `f(n)`, with `n` a constant the compiler sees when it is a whole chunk: loops over `..n`
/// inside `f` are then unrolled and vectorised (a chunk is whole for all but a table's last
/// rows).
#[inline(always)]
pub(crate) fn sized<R>(n: usize, mut f: impl FnMut(usize) -> R) -> R {
    if n == CHUNK { f(CHUNK) } else { f(n) }
}

/// Bit `j` set where `f(a[j], b[j])` holds, for `j < n`.
#[inline(always)]
pub(crate) fn mask2<A: Copy, B: Copy>(a: &[A], b: &[B], n: usize, f: impl Fn(A, B) -> bool) -> u64 {
    let mut bytes = [0u8; CHUNK];
    sized(n, |n| {
        for (t, (x, y)) in bytes[..n].iter_mut().zip(a[..n].iter().zip(&b[..n])) {
            *t = f(*x, *y) as u8;
        }
    });
    pack(&bytes)
}

/// Packs 64 bytes of 0 or 1 into the bits of a `u64`, eight at a time: the multiply moves
/// byte `i`'s low bit to bit `56 + i` (the partial products never overlap, so nothing
/// carries), where the shift picks them up. Comparing into bytes and packing them vectorises;
/// setting one bit per element in a loop does not.
#[inline(always)]
pub(crate) fn pack(bytes: &[u8; CHUNK]) -> u64 {
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut bits = 0u64;
    for (k, group) in bytes.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(group.try_into().unwrap_or([0; 8]));
        bits |= (word.wrapping_mul(GATHER) >> 56) << (8 * k);
    }
    bits
}

/// A chunk of a program's numbers.
#[derive(Clone, Copy, Debug)]
pub enum Numbers<'a> {
    /// Floats.
    Floats(&'a [f64]),
    /// Integers.
    Ints(&'a [i64]),
}

/// Room for one chunk of a program's values (see [`Program::numbers`]).
pub struct ChunkBuffers {
    floats: [f64; CHUNK],
    ints: [i64; CHUNK],
    f32s: [f32; CHUNK],
}

impl Default for ChunkBuffers {
    fn default() -> ChunkBuffers {
        ChunkBuffers { floats: [0.0; CHUNK], ints: [0; CHUNK], f32s: [0.0; CHUNK] }
    }
}

/// A compiled expression, by result type.
pub enum Program<'w> {
    /// A float result.
    Float(FloatNode<'w>),
    /// An integer result.
    Int(IntNode<'w>),
    /// A condition.
    Cond(CondNode<'w>),
}

/// `rows` as a range `start..end` when they are consecutive and ascending (a scan's batch of
/// every row), so a gather can walk the column without a bounds check per row.
#[inline]
pub(crate) fn as_range(rows: &[u32]) -> Option<(usize, usize)> {
    let (&first, &last) = (rows.first()?, rows.last()?);
    // A fold over `row == first + i` with no early exit: it vectorises (the check runs on
    // every batch of every leaf, so an element-by-element walk shows up in profiles).
    let consecutive = (last as usize).checked_sub(first as usize) == Some(rows.len() - 1)
        && rows.iter().enumerate().fold(true, |ok, (i, &r)| ok & (r.wrapping_sub(first) == i as u32));
    consecutive.then_some((first as usize, last as usize + 1))
}

/// The chunks of a list of rows: consecutive runs become ranges (cheaper gathers).
fn chunks(rows: &[u32]) -> impl Iterator<Item = Chunk<'_>> {
    rows.chunks(CHUNK).map(|c| match as_range(c) {
        Some((start, end)) => Chunk::Range { start, len: end - start },
        None => Chunk::Rows(c),
    })
}

/// The rows a program runs over: a consecutive range, or a list (ascending).
#[derive(Clone, Copy, Debug)]
pub enum RowSet<'r> {
    /// Rows `start..end`.
    Range(usize, usize),
    /// These rows.
    List(&'r [u32]),
}

impl RowSet<'_> {
    /// Calls `f` with each chunk of the rows, in order.
    pub fn for_each_chunk<E>(self, mut f: impl FnMut(Chunk<'_>) -> Result<(), E>) -> Result<(), E> {
        match self {
            RowSet::Range(start, end) => {
                for s in (start..end).step_by(CHUNK) {
                    f(Chunk::Range { start: s, len: CHUNK.min(end - s) })?;
                }
            }
            RowSet::List(rows) => {
                for chunk in chunks(rows) {
                    f(chunk)?;
                }
            }
        }
        Ok(())
    }
}

/// Appends to `out` the rows of `chunk` whose bit is set in `bits`.
#[inline]
fn push_selected(chunk: Chunk<'_>, bits: u64, out: &mut Vec<u32>) {
    if bits == 0 {
        return;
    }
    match chunk {
        Chunk::Range { start, len } if bits == low_bits(len) => out.extend(start as u32..(start + len) as u32),
        Chunk::Range { start, .. } => {
            let mut b = bits;
            while b != 0 {
                out.push(start as u32 + b.trailing_zeros());
                b &= b - 1;
            }
        }
        Chunk::Rows(rows) => {
            let mut b = bits;
            while b != 0 {
                out.push(rows[b.trailing_zeros() as usize]);
                b &= b - 1;
            }
        }
    }
}

impl<'w> Program<'w> {
    /// The condition's node, when the program is a condition.
    pub fn as_cond(&self) -> Option<&CondNode<'w>> {
        match self {
            Program::Cond(c) => Some(c),
            _ => None,
        }
    }

    /// Appends to `out` the rows of `rows` (ascending) where the condition is true.
    pub fn select(cond: &CondNode<'w>, rows: &[u32], out: &mut Vec<u32>) -> Result<(), Bail> {
        for chunk in chunks(rows) {
            let t = cond.truth(chunk)?;
            push_selected(chunk, t, out);
        }
        Ok(())
    }

    /// Appends to `out` the rows of `0..n` where the condition is true.
    pub fn select_all(cond: &CondNode<'w>, n: usize, out: &mut Vec<u32>) -> Result<(), Bail> {
        for start in (0..n).step_by(CHUNK) {
            let chunk = Chunk::Range { start, len: CHUNK.min(n - start) };
            let t = cond.truth(chunk)?;
            push_selected(chunk, t, out);
        }
        Ok(())
    }

    /// How many rows of `0..n` the condition holds for.
    pub fn count_all(cond: &CondNode<'w>, n: usize) -> Result<usize, Bail> {
        let mut count = 0usize;
        for start in (0..n).step_by(CHUNK) {
            let t = cond.truth(Chunk::Range { start, len: CHUNK.min(n - start) })?;
            count += t.count_ones() as usize;
        }
        Ok(count)
    }

    /// How many of `rows` the condition holds for.
    pub fn count(cond: &CondNode<'w>, rows: &[u32]) -> Result<usize, Bail> {
        let mut count = 0usize;
        for chunk in chunks(rows) {
            count += cond.truth(chunk)?.count_ones() as usize;
        }
        Ok(count)
    }

    /// Calls `f` with the chunk's values, as floats or integers by the program's type: the
    /// typed output of UPDATE, written without a vector in between. A null row gives up (as
    /// does a condition): the evaluator then says what is wrong with it. `buffers` hold the
    /// chunk's values (a caller running many chunks keeps one, not a fresh zeroed one each).
    pub fn numbers(
        &self,
        chunk: Chunk<'_>,
        buffers: &mut ChunkBuffers,
        f: impl FnOnce(Numbers<'_>),
    ) -> Result<(), Bail> {
        let n = chunk.len();
        match self {
            Program::Float(node) => {
                if node.eval(chunk, &mut buffers.floats)? != chunk.all() {
                    return Err(Bail);
                }
                f(Numbers::Floats(&buffers.floats[..n]));
            }
            Program::Int(node) => {
                if node.eval(chunk, &mut buffers.ints)? != chunk.all() {
                    return Err(Bail);
                }
                f(Numbers::Ints(&buffers.ints[..n]));
            }
            Program::Cond(_) => return Err(Bail),
        }
        Ok(())
    }

    #[cfg(test)]
    /// Whether its value, narrowed to f32, is computed in f32 with the same result (see
    /// [`FloatNode::exact_in_f32`]).
    pub fn exact_in_f32(&self) -> bool {
        matches!(self, Program::Float(node) if node.exact_in_f32())
    }

    /// Whether [`Program::f32s`] can give its values narrowed to f32 (see
    /// [`FloatNode::gives_f32`]).
    pub fn gives_f32(&self) -> bool {
        matches!(self, Program::Float(node) if node.gives_f32())
    }

    /// For a program that [gives f32](Program::gives_f32), calls `f` with the chunk's values
    /// narrowed to f32 (each the f32 its f64 value narrows to; an infinity may stand for a
    /// finite value too large, which the caller checks): an f32 field's new values, with no
    /// chunk of f64s in between. `None` (nothing done) where it cannot (a chunk of listed
    /// rows): then [`Program::numbers`] gives them.
    pub fn f32s(
        &self,
        chunk: Chunk<'_>,
        buffers: &mut ChunkBuffers,
        f: impl FnOnce(&[f32]),
    ) -> Option<Result<(), Bail>> {
        let Program::Float(node) = self else { return None };
        let done = node.eval_f32(chunk, &mut buffers.f32s)?;
        Some(done.map(|()| f(&buffers.f32s[..chunk.len()])))
    }

    /// For a program that [gives f32](Program::gives_f32), its values over the consecutive
    /// rows `start .. start + out.len()` narrowed to f32 into `out`, as [`Program::f32s`]
    /// gives them a chunk at a time: a run of any length in one call, written where the
    /// caller keeps them (an UPDATE's staged values), with no chunk buffer to copy from and
    /// the per-call work paid once a run. `None` (nothing done) for another program.
    pub fn f32s_run(&self, start: usize, out: &mut [f32]) -> Option<Result<(), Bail>> {
        let Program::Float(node) = self else { return None };
        // The f32 nodes walk their columns over `out[..len]` (a field or two, zipped), so
        // they take a range longer than a chunk.
        node.eval_f32(Chunk::Range { start, len: out.len() }, out)
    }

    /// The program's values over `rows` as floats (integers promoted) into `xs`, with
    /// `valid[i]` false where row `i` is null; both buffers are cleared first (callers reuse
    /// them). A condition gives up.
    pub fn floats(&self, rows: RowSet<'_>, xs: &mut Vec<f64>, valid: &mut Vec<bool>) -> Result<(), Bail> {
        xs.clear();
        valid.clear();
        rows.for_each_chunk(|chunk| {
            let n = chunk.len();
            let mut buf = [0.0; CHUNK];
            let bits = match self {
                Program::Float(node) => node.eval(chunk, &mut buf)?,
                Program::Int(node) => {
                    let mut ints = [0i64; CHUNK];
                    let bits = node.eval(chunk, &mut ints)?;
                    for (x, i) in buf[..n].iter_mut().zip(&ints[..n]) {
                        *x = *i as f64;
                    }
                    bits
                }
                Program::Cond(_) => return Err(Bail),
            };
            xs.extend_from_slice(&buf[..n]);
            valid.extend((0..n).map(|j| bits >> j & 1 == 1));
            Ok(())
        })
    }

    /// The value of the program for each of `rows`, as a typed vector.
    pub fn eval(&self, rows: &[u32]) -> Result<Vector<'w>, Bail> {
        let n = rows.len();
        let mut valid: Option<Vec<bool>> = None;
        let mut note_valid = |at: usize, len: usize, bits: u64| {
            if bits != low_bits(len) {
                let v = valid.get_or_insert_with(|| vec![true; n]);
                for j in 0..len {
                    v[at + j] = bits >> j & 1 == 1;
                }
            }
        };
        Ok(match self {
            Program::Float(node) => {
                let values = collect(rows, &mut note_valid, |c, buf: &mut [f64; CHUNK]| node.eval(c, buf))?;
                Vector::Float(Prim { values, valid })
            }
            Program::Int(node) => {
                let values = collect(rows, &mut note_valid, |c, buf: &mut [i64; CHUNK]| node.eval(c, buf))?;
                Vector::Int(Prim { values, valid })
            }
            Program::Cond(node) => {
                let mut values = vec![false; n];
                let mut at = 0;
                for chunk in chunks(rows) {
                    let (t, f) = node.eval(chunk)?;
                    let len = chunk.len();
                    for (j, v) in values[at..at + len].iter_mut().enumerate() {
                        *v = t >> j & 1 == 1;
                    }
                    note_valid(at, len, t | f);
                    at += len;
                }
                Vector::Bool(Prim { values, valid })
            }
        })
    }
}

/// The values of `rows`, chunk by chunk, from `fill`; `note_valid(at, len, bits)` hears each
/// chunk's validity.
fn collect<T: Copy + Default>(
    rows: &[u32],
    note_valid: &mut impl FnMut(usize, usize, u64),
    mut fill: impl FnMut(Chunk<'_>, &mut [T; CHUNK]) -> Result<u64, Bail>,
) -> Result<Vec<T>, Bail> {
    let mut values = vec![T::default(); rows.len()];
    let mut at = 0;
    for chunk in chunks(rows) {
        let mut buf = [T::default(); CHUNK];
        let bits = fill(chunk, &mut buf)?;
        let len = chunk.len();
        values[at..at + len].copy_from_slice(&buf[..len]);
        note_valid(at, len, bits);
        at += len;
    }
    Ok(values)
}

/// Reads a field view's column as a float leaf, when it holds numbers.
pub(crate) fn float_leaf<'w>(view: &FieldView<'w>) -> Option<FloatNode<'w>> {
    Some(match *view {
        FieldView::F32(c) => FloatNode::F32(c),
        FieldView::F64(c) => FloatNode::F64(c),
        _ => return None,
    })
}
