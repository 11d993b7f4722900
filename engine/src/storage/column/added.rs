//! The ticks at which a column's rows were added, kept as one tick while every row has the
//! same one.
//!
//! Rows spawned together (a level loaded, a batch spawned, a snapshot read) share their added
//! tick, and most rows are never re-added, so a column usually needs one tick where it would
//! hold 4 bytes per row. The ticks become one per row at the first row added at another tick
//! (and stay so until the column is emptied).

use crate::tick::Tick;

/// The added ticks of a column of `len` rows (the column keeps `len`; every method that
/// needs it takes it).
///
/// Invariant: `same` is `Some(t)` exactly when every row was added at `t` and `rows` is
/// empty; otherwise `rows` holds one tick per row.
#[derive(Default)]
pub(crate) struct AddedTicks {
    same: Option<Tick>,
    rows: Vec<Tick>,
}

/// A read-only view of a column's added ticks.
#[derive(Clone, Copy, Debug)]
pub enum AddedView<'a> {
    /// `len` rows, all added at one tick.
    Same(Tick, usize),
    /// One tick per row.
    Rows(&'a [Tick]),
}

impl AddedView<'_> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            AddedView::Same(_, n) => *n,
            AddedView::Rows(r) => r.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `row`'s added tick, if the row exists.
    pub fn get(&self, row: usize) -> Option<Tick> {
        match self {
            AddedView::Same(t, n) => (row < *n).then_some(*t),
            AddedView::Rows(r) => r.get(row).copied(),
        }
    }

    /// Every row's tick, in row order.
    pub fn iter(&self) -> impl Iterator<Item = Tick> + '_ {
        (0..self.len()).map(|r| self.get(r).expect("row in bounds"))
    }

    /// Every row's tick, one per row.
    pub fn to_vec(&self) -> Vec<Tick> {
        match self {
            AddedView::Same(t, n) => vec![*t; *n],
            AddedView::Rows(r) => r.to_vec(),
        }
    }
}

impl PartialEq for AddedView<'_> {
    /// Equal when they hold the same ticks row by row, however stored.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<[Tick]> for AddedView<'_> {
    fn eq(&self, other: &[Tick]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl<const N: usize> PartialEq<&[Tick; N]> for AddedView<'_> {
    fn eq(&self, other: &&[Tick; N]) -> bool {
        *self == other[..]
    }
}

impl AddedTicks {
    /// The view of a column of `len` rows.
    pub(crate) fn view(&self, len: usize) -> AddedView<'_> {
        match self.same {
            Some(t) => AddedView::Same(t, len),
            None => AddedView::Rows(&self.rows),
        }
    }

    /// Row `row`'s tick (the caller checks `row` against the column's length).
    #[inline]
    pub(crate) fn get(&self, row: usize) -> Tick {
        match self.same {
            Some(t) => t,
            None => self.rows[row],
        }
    }

    /// A pointer and mask for reading ticks without a reference to them: row `r`'s tick is
    /// at `ptr + (r & mask)`. While the ticks are one, the mask is 0 and the pointer is to
    /// that tick. Valid until the column is next changed.
    #[inline]
    pub(crate) fn reader(&self) -> (*const Tick, usize) {
        match &self.same {
            Some(t) => (t as *const Tick, 0),
            None => (self.rows.as_ptr(), usize::MAX),
        }
    }

    /// Adds `n` rows at `tick` to a column of `len` rows.
    #[inline]
    pub(crate) fn push_n(&mut self, len: usize, n: usize, tick: Tick) {
        match self.same {
            Some(t) if t == tick => {}
            _ if len == 0 => {
                self.rows = Vec::new();
                self.same = Some(tick);
            }
            _ => {
                self.materialize(len);
                self.rows.resize(len + n, tick);
            }
        }
    }

    /// Adds rows with the ticks of `src` to a column of `len` rows.
    pub(crate) fn extend(&mut self, len: usize, src: AddedView<'_>) {
        match src {
            AddedView::Same(t, n) => self.push_n(len, n, t),
            AddedView::Rows(ticks) => {
                if ticks.is_empty() {
                    return;
                }
                self.materialize(len);
                self.rows.extend_from_slice(ticks);
            }
        }
    }

    /// Adds rows with saved little-endian ticks (4 bytes each) to a column of `len` rows; one
    /// tick is kept if every row then has the same.
    pub(crate) fn extend_le(&mut self, len: usize, bytes: &[u8], n: usize) {
        let le = |c: &[u8]| Tick::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let mut ticks = bytes.chunks_exact(4).take(n).map(le);
        let Some(first) = ticks.next() else { return };
        if ticks.all(|t| t == first) {
            self.push_n(len, n, first);
        } else {
            self.materialize(len);
            self.rows.extend(bytes.chunks_exact(4).take(n).map(le));
        }
    }

    /// Sets row `row`'s tick in a column of `len` rows.
    pub(crate) fn set(&mut self, len: usize, row: usize, tick: Tick) {
        if self.same == Some(tick) {
            return;
        }
        self.materialize(len);
        self.rows[row] = tick;
    }

    /// Removes row `row` by moving the last row's tick into its place.
    #[inline]
    pub(crate) fn swap_remove(&mut self, row: usize) {
        if self.same.is_none() {
            self.rows.swap_remove(row);
        }
    }

    /// Each `(hole, from)` in order: row `hole` takes row `from`'s tick (a bulk removal's
    /// moves).
    pub(crate) fn apply_moves(&mut self, moves: &[(u32, u32)]) {
        if self.same.is_none() {
            for &(hole, from) in moves {
                self.rows[hole as usize] = self.rows[from as usize];
            }
        }
    }

    /// Keeps the ticks of the first `len` rows.
    pub(crate) fn truncate(&mut self, len: usize) {
        if self.same.is_none() {
            self.rows.truncate(len);
        }
    }

    /// Empties the ticks (the column is emptied).
    pub(crate) fn clear(&mut self) {
        self.same = None;
        self.rows.clear();
    }

    /// Makes room for `additional` more rows, if ticks are kept per row (an empty column
    /// waits: its next rows may share one tick).
    pub(crate) fn reserve(&mut self, additional: usize) {
        if self.same.is_none() && !self.rows.is_empty() {
            self.rows.reserve(additional);
        }
    }

    /// Clamps ticks too old to compare (see [`crate::tick`]).
    pub(crate) fn clamp(&mut self, now: Tick) {
        match &mut self.same {
            Some(t) => crate::tick::clamp_ticks(std::slice::from_mut(t), now),
            None => crate::tick::clamp_ticks(&mut self.rows, now),
        }
    }

    /// Bytes held for per-row ticks.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Tick>()
    }

    /// Turns one tick for all `len` rows into one tick per row.
    #[cold]
    fn materialize(&mut self, len: usize) {
        if let Some(t) = self.same.take() {
            self.rows.clear();
            self.rows.resize(len, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ticks against a plain vector of them through every operation.
    #[test]
    fn behaves_as_one_tick_per_row() {
        let mut a = AddedTicks::default();
        let mut model: Vec<Tick> = Vec::new();
        let check = |a: &AddedTicks, model: &Vec<Tick>| {
            assert_eq!(a.view(model.len()), model[..]);
            for (r, t) in model.iter().enumerate() {
                assert_eq!(a.get(r), *t);
                let (ptr, mask) = a.reader();
                // SAFETY: `r & mask` is 0 (one tick) or a row in bounds.
                assert_eq!(unsafe { *ptr.add(r & mask) }, *t);
            }
        };
        a.push_n(0, 3, 7);
        model.extend([7; 3]);
        check(&a, &model);
        assert!(matches!(a.view(3), AddedView::Same(7, 3)));
        assert_eq!(a.memory_bytes(), 0);
        a.extend(3, AddedView::Same(7, 2));
        model.extend([7; 2]);
        a.swap_remove(1);
        model.swap_remove(1);
        a.set(4, 0, 7);
        check(&a, &model);
        assert!(matches!(a.view(4), AddedView::Same(..)));
        a.push_n(4, 1, 9);
        model.push(9);
        check(&a, &model);
        a.set(5, 2, 11);
        model[2] = 11;
        a.swap_remove(0);
        model.swap_remove(0);
        a.extend(4, AddedView::Rows(&[1, 2]));
        model.extend([1, 2]);
        check(&a, &model);
        let bytes: Vec<u8> = [5u32, 5, 5].iter().flat_map(|t| t.to_le_bytes()).collect();
        a.extend_le(6, &bytes, 3);
        model.extend([5; 3]);
        check(&a, &model);
        a.clamp(u32::MAX);
        a.clear();
        model.clear();
        a.extend_le(0, &bytes, 3);
        model.extend([5; 3]);
        check(&a, &model);
        assert!(matches!(a.view(3), AddedView::Same(5, 3)));
    }
}
