//! Many rows at once: the bulk moves and removals behind ADD, REMOVE and DESPAWN of many
//! entities. Rows are given ascending and distinct; values are copied as runs of consecutive
//! rows; removal swap-removes from the highest row down, so every hole is filled by a row
//! that stays.

use super::{AddedView, Column};

impl Column {
    /// Moves `rows` (ascending, distinct, in bounds) to the end of `dst` (same component) in
    /// that order, keeping their ticks, and removes them here as
    /// [`Column::remove_rows_forget`] does.
    pub(crate) fn move_rows_to(&mut self, rows: &[u32], dst: &mut Column) {
        debug_assert_eq!(self.item, dst.item);
        check_rows(rows, self.len);
        dst.reserve(rows.len());
        let size = self.item.size();
        let mut i = 0;
        while i < rows.len() {
            // A run of consecutive rows is one copy.
            let start = rows[i] as usize;
            let mut end = start + 1;
            i += 1;
            while i < rows.len() && rows[i] as usize == end {
                end += 1;
                i += 1;
            }
            let n = end - start;
            // SAFETY: rows start..end are initialised values here (checked in bounds above);
            // `reserve` made room for them after dst's last row; the two allocations are
            // distinct. The values now belong to `dst`: they are forgotten here below.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.data.as_ptr().add(start * size),
                    dst.data.as_ptr().add(dst.len * size),
                    n * size,
                );
            }
            let src_added = match self.added.view(self.len) {
                AddedView::Same(t, _) => AddedView::Same(t, n),
                AddedView::Rows(r) => AddedView::Rows(&r[start..end]),
            };
            dst.added.extend(dst.len, src_added);
            dst.len += n;
            dst.changed.extend_from_slice(&self.changed[start..end]);
            let len = dst.len;
            dst.log_note_range(len - n..len, len);
        }
        // SAFETY: every value of `rows` was moved to `dst` above.
        unsafe { self.remove_rows_forget(rows) };
    }

    /// Removes `rows` (ascending, distinct, in bounds) without dropping their values, by
    /// swap-removing from the highest row down.
    ///
    /// # Safety
    /// The values of `rows` must have been moved out already.
    pub(crate) unsafe fn remove_rows_forget(&mut self, rows: &[u32]) {
        check_rows(rows, self.len);
        let size = self.item.size();
        for &row in rows.iter().rev() {
            let row = row as usize;
            let last = self.len - 1;
            if row != last {
                // SAFETY: both rows are in bounds (rows above `row` were removed first, so
                // `last` is not one of `rows`); the value at `row` is gone (caller's
                // contract), the one at `last` moves into its place.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.data.as_ptr().add(last * size),
                        self.data.as_ptr().add(row * size),
                        size,
                    )
                };
            }
            self.len = last;
            self.added.swap_remove(row);
            self.changed.swap_remove(row);
            self.note_moved_into(row);
        }
    }

    /// Drops the values of `rows` (ascending, distinct, in bounds) and removes them as
    /// [`Column::remove_rows_forget`] does.
    pub(crate) fn remove_rows_drop(&mut self, rows: &[u32]) {
        check_rows(rows, self.len);
        if let Some(d) = &self.drop {
            let size = self.item.size();
            for &row in rows {
                // SAFETY: the row is in bounds and initialised; it is dropped once and then
                // removed without a second drop below.
                unsafe { d.call(self.data.as_ptr().add(row as usize * size)) };
            }
        }
        // SAFETY: the values were dropped above.
        unsafe { self.remove_rows_forget(rows) };
    }
}

/// Rows must be strictly ascending and below `len`: the bulk operations rely on it.
fn check_rows(rows: &[u32], len: usize) {
    assert!(rows.last().is_none_or(|&r| (r as usize) < len), "row out of bounds ({len} rows)");
    debug_assert!(rows.windows(2).all(|w| w[0] < w[1]), "rows must be ascending and distinct");
}

#[cfg(test)]
mod tests {
    use std::alloc::Layout;

    use super::*;
    use crate::component::{drop_ptr, DropFn};

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
        a.move_rows_to(&[1, 2, 4], &mut b);
        let s = |x: &str, t| (x.to_string(), t);
        assert_eq!(read(&b), [s("z", 1), s("b", 2), s("c", 3), s("e", 5)]);
        // Highest first: f fills 4, then f fills 2, then d fills 1.
        assert_eq!(read(&a), [s("a", 1), s("d", 4), s("f", 6)]);
        a.remove_rows_drop(&[0, 2]);
        assert_eq!(read(&a), [s("d", 4)]);
    }
}
