//! Many rows at once: the bulk moves and removals behind ADD, REMOVE and DESPAWN of many
//! entities. Rows are given ascending and distinct. A removal fills each hole with the row
//! then last, from the highest row down, so every hole is filled by a row that stays; the
//! table works out those moves once ([`RemovalPlan`]) and every column, and the entity list,
//! applies the same ones. Values are copied with the item size known at compile time for the
//! common sizes, so a row costs a few moves rather than a call to `memcpy`.

use super::{AddedView, Column};
use crate::component::ComponentInfo;
use crate::tick::Tick;

/// The removal of some rows of a table, checked once: the rows (ascending, distinct, in
/// bounds of the table's `len` rows) and the moves that fill their holes, `(hole, from)` for
/// each hole a row fills, in the order to apply them (a row may move twice: into a hole, then
/// on into a lower one). Holes at the end are cut off without a move. Each column of the
/// table, and its entity list, applies the same plan.
pub(crate) struct RemovalPlan<'r> {
    rows: &'r [u32],
    len: usize,
    moves: Vec<(u32, u32)>,
}

impl<'r> RemovalPlan<'r> {
    /// The plan that removes `rows` from `len` rows.
    ///
    /// # Panics
    /// When the rows are not ascending and distinct, or one is out of bounds.
    pub(crate) fn new(rows: &'r [u32], len: usize) -> RemovalPlan<'r> {
        check_rows(rows, len);
        let mut moves = Vec::with_capacity(rows.len());
        let mut last = len;
        for &row in rows.iter().rev() {
            // The rows are ascending and below `len`, so there is a last row each time.
            last -= 1;
            if row as usize != last {
                moves.push((row, last as u32));
            }
        }
        RemovalPlan { rows, len, moves }
    }

    /// The length after the plan, for a column (or list) of `len` rows.
    ///
    /// # Panics
    /// When the plan was made for another length: its moves would not fit.
    fn new_len(&self, len: usize) -> usize {
        assert_eq!(len, self.len, "a removal plan made for a table of another length");
        len - self.rows.len()
    }

    /// Applies the plan to a list with a value per row (an entity list): `filled(value, row)`
    /// for every value moved into a hole.
    pub(crate) fn apply_to<T: Copy>(&self, list: &mut Vec<T>, mut filled: impl FnMut(T, usize)) {
        let new_len = self.new_len(list.len());
        for &(hole, from) in &self.moves {
            let v = list[from as usize];
            list[hole as usize] = v;
            filled(v, hole as usize);
        }
        list.truncate(new_len);
    }
}

impl Column {
    /// Appends `n` rows holding the component's zero value (`info`'s: this column's
    /// component), added and changed at `tick`.
    pub(crate) fn push_zeroed(&mut self, n: usize, tick: Tick, info: &ComponentInfo) {
        debug_assert_eq!(info.layout(), self.item);
        self.reserve(n);
        let size = self.item.size();
        if size != 0 {
            let first = self.len * size;
            // SAFETY: `reserve` made room for `n` values after the last row; each is written
            // with the zero value before the length covers it.
            unsafe { info.write_zeros(self.data.as_ptr().add(first), n) };
        }
        self.added.push_n(self.len, n, tick);
        self.changed.resize(self.len + n, tick);
        self.len += n;
        let len = self.len;
        self.log_note_range(len - n..len, len);
    }

    /// Moves the rows of `plan` to the end of `dst` (same component) in their order, keeping
    /// their ticks, and removes them here.
    pub(crate) fn move_rows_to(&mut self, dst: &mut Column, plan: &RemovalPlan<'_>) {
        debug_assert_eq!(self.item, dst.item);
        plan.new_len(self.len);
        let rows = plan.rows;
        let n = rows.len();
        dst.reserve(n);
        let size = self.item.size();
        // SAFETY: every row of `rows` is an initialised value here (the plan checked them in
        // bounds of its length, this column's);
        // `reserve` made room for `n` values after dst's last row; the two allocations are
        // distinct. The values now belong to `dst`: they are forgotten here below.
        unsafe { gather_items(self.data.as_ptr(), dst.data.as_ptr().add(dst.len * size), size, rows) };
        match self.added.view(self.len) {
            AddedView::Same(t, _) => dst.added.extend(dst.len, AddedView::Same(t, n)),
            AddedView::Rows(ticks) => {
                let moved: Vec<Tick> = rows.iter().map(|&r| ticks[r as usize]).collect();
                dst.added.extend(dst.len, AddedView::Rows(&moved));
            }
        }
        dst.changed.extend(rows.iter().map(|&r| self.changed[r as usize]));
        dst.len += n;
        let len = dst.len;
        dst.log_note_range(len - n..len, len);
        // SAFETY: every value of `rows` was moved to `dst` above.
        unsafe { self.remove_planned_forget(plan) };
    }

    /// Removes the rows of `plan` without dropping their values.
    ///
    /// # Safety
    /// The values of the plan's rows must have been moved out already.
    unsafe fn remove_planned_forget(&mut self, plan: &RemovalPlan<'_>) {
        let new_len = plan.new_len(self.len);
        let size = self.item.size();
        // SAFETY: every move is between two distinct rows in bounds (the plan's, made for this
        // length from checked rows: `hole < from < len`); a
        // hole's value is gone (the caller's contract, or moved on by an earlier move), the
        // source's value moves into it, and rows past the new length are cut off below.
        unsafe { move_items(self.data.as_ptr(), size, &plan.moves) };
        // One pass per array, each a tight loop.
        for &(hole, from) in &plan.moves {
            self.changed[hole as usize] = self.changed[from as usize];
        }
        self.added.apply_moves(&plan.moves);
        if self.log.get().is_some() {
            for &(hole, from) in &plan.moves {
                // The moved value is new to its row (the length then is the source row).
                self.log_note(hole as usize, from as usize);
            }
        }
        if let Some(heads) = self.heads_mut() {
            for &(hole, from) in &plan.moves {
                heads.moved(hole as usize, from as usize);
            }
            heads.truncate(new_len);
        }
        self.len = new_len;
        self.changed.truncate(new_len);
        self.added.truncate(new_len);
    }

    /// Drops the values of the rows of `plan` and removes them.
    pub(crate) fn remove_rows_drop(&mut self, plan: &RemovalPlan<'_>) {
        plan.new_len(self.len);
        if let Some(d) = &self.drop {
            let size = self.item.size();
            for &row in plan.rows {
                // SAFETY: the row is in bounds and initialised; it is dropped once and then
                // removed without a second drop below.
                unsafe { d.call(self.data.as_ptr().add(row as usize * size)) };
            }
        }
        // SAFETY: the values were dropped above.
        unsafe { self.remove_planned_forget(plan) };
    }
}

/// Copies items `rows` of `src` to consecutive items from `dst` on.
///
/// # Safety
/// Each of `rows` is an item of `size` bytes in `src`; `dst` has room for `rows.len()` items;
/// the two do not overlap.
unsafe fn gather_items(src: *const u8, dst: *mut u8, size: usize, rows: &[u32]) {
    // One run of consecutive rows (a whole table leaving, as REMOVE of a tag from every
    // entity that has it): one copy.
    if let (Some(&first), Some(&last)) = (rows.first(), rows.last())
        && last.checked_sub(first).is_some_and(|span| span as usize + 1 == rows.len())
    {
        // SAFETY: the caller's contract; the rows are first..=last.
        unsafe { std::ptr::copy_nonoverlapping(src.add(first as usize * size), dst, rows.len() * size) };
        return;
    }
    // SAFETY: (every arm) the caller's contract, with the item size `S` (or `size`) spelled
    // out so that each copy is a few moves.
    unsafe {
        match size {
            0 => {}
            4 => gather_sized::<4>(src, dst, rows),
            8 => gather_sized::<8>(src, dst, rows),
            12 => gather_sized::<12>(src, dst, rows),
            16 => gather_sized::<16>(src, dst, rows),
            24 => gather_sized::<24>(src, dst, rows),
            _ => {
                for (i, &r) in rows.iter().enumerate() {
                    std::ptr::copy_nonoverlapping(src.add(r as usize * size), dst.add(i * size), size);
                }
            }
        }
    }
}

/// [`gather_items`] for items of `S` bytes.
///
/// # Safety
/// As for [`gather_items`] with `size == S`.
#[inline(always)]
unsafe fn gather_sized<const S: usize>(src: *const u8, dst: *mut u8, rows: &[u32]) {
    for (i, &r) in rows.iter().enumerate() {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.add(r as usize * S), dst.add(i * S), S) };
    }
}

/// Applies `moves` (`(hole, from)`, in order) to items of `size` bytes at `data`.
///
/// # Safety
/// Every row of `moves` is an item in bounds; `hole != from`.
unsafe fn move_items(data: *mut u8, size: usize, moves: &[(u32, u32)]) {
    // SAFETY: (every arm) the caller's contract; distinct rows do not overlap.
    unsafe {
        match size {
            0 => {}
            4 => move_sized::<4>(data, moves),
            8 => move_sized::<8>(data, moves),
            12 => move_sized::<12>(data, moves),
            16 => move_sized::<16>(data, moves),
            24 => move_sized::<24>(data, moves),
            _ => {
                for &(hole, from) in moves {
                    std::ptr::copy_nonoverlapping(data.add(from as usize * size), data.add(hole as usize * size), size);
                }
            }
        }
    }
}

/// [`move_items`] for items of `S` bytes.
///
/// # Safety
/// As for [`move_items`] with `size == S`.
#[inline(always)]
unsafe fn move_sized<const S: usize>(data: *mut u8, moves: &[(u32, u32)]) {
    for &(hole, from) in moves {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(data.add(from as usize * S), data.add(hole as usize * S), S) };
    }
}

/// Rows must be strictly ascending and below `len`: the bulk operations rely on it (a row
/// given twice would be dropped twice), so it is checked in release builds too, by folds with
/// no early exit (they vectorise; the moves cost far more).
fn check_rows(rows: &[u32], len: usize) {
    assert!(rows.last().is_none_or(|&r| (r as usize) < len), "row out of bounds ({len} rows)");
    assert!(rows.windows(2).fold(true, |ok, w| ok & (w[0] < w[1])), "rows must be ascending and distinct");
}

#[cfg(test)]
mod tests {
    use std::alloc::Layout;

    use super::*;
    use crate::component::{DropFn, drop_ptr};

    fn strings(values: &[&str]) -> Column {
        let mut c = Column::with_layout(Layout::new::<String>(), Some(DropFn::Rust(drop_ptr::<String>)));
        for (i, v) in values.iter().enumerate() {
            let s = std::mem::ManuallyDrop::new(v.to_string());
            // SAFETY: a valid String, given up to the column.
            unsafe { c.push_from(&*s as *const String as *const u8, i as u32 + 1) };
        }
        c
    }

    fn read(c: &Column) -> Vec<(String, u32)> {
        // SAFETY: the column holds Strings.
        let v = unsafe { c.as_slice::<String>() };
        v.iter().cloned().zip(c.added_ticks().iter()).collect()
    }

    #[test]
    fn move_rows_keeps_order_and_ticks_and_fills_holes_from_the_end() {
        let mut a = strings(&["a", "b", "c", "d", "e", "f"]);
        let mut b = strings(&["z"]);
        let plan = RemovalPlan::new(&[1, 2, 4], 6);
        a.move_rows_to(&mut b, &plan);
        let s = |x: &str, t| (x.to_string(), t);
        assert_eq!(read(&b), [s("z", 1), s("b", 2), s("c", 3), s("e", 5)]);
        // Highest first: f fills 4, then f fills 2, then d fills 1.
        assert_eq!(read(&a), [s("a", 1), s("d", 4), s("f", 6)]);
        a.remove_rows_drop(&RemovalPlan::new(&[0, 2], 3));
        assert_eq!(read(&a), [s("d", 4)]);
    }

    /// A plan's moves, applied to a list, are the swap-removes from the highest row down;
    /// a plan that does not fit a column is refused before anything moves.
    #[test]
    fn removal_plans_are_swap_removes_from_the_top() {
        let plan = RemovalPlan::new(&[1, 2, 4], 6);
        let mut list = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        let mut filled = Vec::new();
        plan.apply_to(&mut list, |v, row| filled.push((v, row)));
        assert_eq!(list, ['a', 'd', 'f']);
        assert_eq!(filled, [('f', 4), ('f', 2), ('d', 1)]);
        let mut model = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        for row in [4, 2, 1] {
            model.swap_remove(row);
        }
        assert_eq!(list, model);
        // Rows given twice: refused before anything moves.
        let mut a = strings(&["a", "b", "c"]);
        for twice in [[2, 2], [0, 0]] {
            let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let bad = RemovalPlan::new(&twice, 3);
                a.remove_rows_drop(&bad)
            }));
            assert!(refused.is_err());
            assert_eq!(read(&a).len(), 3, "nothing moved");
        }
    }
}
