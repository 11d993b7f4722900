//! Copying values between columns of two worlds whose components have the same fields but
//! maybe not the same layout: how a read-only copy of a world follows the world (see
//! `World::mirror_from`). A value is copied as one run of bytes when both sides are the same
//! plain data, and field by field otherwise (strings cloned, into the destination's own
//! layout).

use std::ops::Range;

use super::Column;
use crate::component::{ComponentInfo, FieldType};
use crate::tick::Tick;

/// How to copy a value of one component (the source) into a column of another (the
/// destination) with the same fields: made only by [`ValueCopy::between`], which checks that
/// the copy it describes makes valid destination values.
#[derive(Clone, Debug)]
pub(crate) struct ValueCopy {
    how: How,
    /// The destination component, for its zero value (a row appended field by field starts
    /// as it).
    zero: Option<ComponentInfo>,
}

#[derive(Clone, Debug)]
enum How {
    /// Both are the same plain data (same layout, same fields at the same offsets, nothing
    /// to drop): the whole value as bytes.
    Bytes,
    /// Field by field from the source's offsets to the destination's.
    Fields(Vec<FieldCopy>),
}

#[derive(Clone, Copy, Debug)]
struct FieldCopy {
    from: usize,
    to: usize,
    /// Bytes of a plain field, or `None` for a string (cloned).
    plain: Option<usize>,
}

impl ValueCopy {
    /// The copy from `src` values into `dst` columns: `None` unless both have the same fields
    /// (names and types, in order), neither is opaque, and either both are the same plain data
    /// or `dst` is a run-time component, whose value its fields describe entirely (a Rust type
    /// may hold more than its schema names).
    pub(crate) fn between(src: &ComponentInfo, dst: &ComponentInfo) -> Option<ValueCopy> {
        if src.is_opaque() || dst.is_opaque() || src.fields().len() != dst.fields().len() {
            return None;
        }
        let pairs = || src.fields().iter().zip(dst.fields());
        if !pairs().all(|(a, b)| a.name == b.name && a.ty == b.ty) {
            return None;
        }
        let same_bytes = src.layout() == dst.layout()
            && src.drop_fn().is_none()
            && dst.drop_fn().is_none()
            && pairs().all(|(a, b)| a.offset == b.offset);
        if same_bytes {
            return Some(ValueCopy { how: How::Bytes, zero: None });
        }
        if !dst.is_dynamic() {
            return None;
        }
        let fields = pairs()
            .map(|(a, b)| FieldCopy {
                from: a.offset,
                to: b.offset,
                plain: (a.ty != FieldType::String).then(|| a.ty.layout().size()),
            })
            .collect();
        Some(ValueCopy { how: How::Fields(fields), zero: Some(dst.clone()) })
    }

    /// Copies the value at `src` over the initialised value at `dst` (its strings reuse their
    /// buffers).
    ///
    /// # Safety
    /// `src` points to a valid value of the source component, `dst` to a valid value of the
    /// destination's, in another allocation.
    unsafe fn assign(&self, src: *const u8, dst: *mut u8, size: usize) {
        // SAFETY: forwarded; `between` checked that the fields pair up with equal types, so
        // each plain field's bytes are a valid value of the destination field, and a string
        // field holds an initialised `String` on both sides.
        unsafe {
            match &self.how {
                How::Bytes => std::ptr::copy_nonoverlapping(src, dst, size),
                How::Fields(fields) => {
                    for f in fields {
                        match f.plain {
                            Some(n) => std::ptr::copy_nonoverlapping(src.add(f.from), dst.add(f.to), n),
                            None => (*(dst.add(f.to) as *mut String)).clone_from(&*(src.add(f.from) as *const String)),
                        }
                    }
                }
            }
        }
    }

    /// Writes a copy of the value at `src` to the uninitialised `dst`.
    ///
    /// # Safety
    /// `src` points to a valid value of the source component; `dst` is valid for writes of
    /// the destination's size, aligned, and holds nothing to drop.
    unsafe fn write_new(&self, src: *const u8, dst: *mut u8, size: usize) {
        // SAFETY: forwarded. Field by field, the destination is a run-time component
        // (`between`): its zero value is a valid value, which `assign` then overwrites.
        unsafe {
            if let Some(zero) = &self.zero {
                zero.write_zero(dst);
            }
            self.assign(src, dst, size);
        }
    }
}

impl Column {
    /// Copies the values of rows `rows` of `src` over the same rows here, stamping them
    /// changed at `tick` (noted in the write log, so indexes see them).
    ///
    /// # Panics
    /// When a row is out of bounds in either column.
    ///
    /// # Safety
    /// `copy` was made by [`ValueCopy::between`] for `src`'s component (the source) and this
    /// column's (the destination), and `src` is another column than this one.
    pub(crate) unsafe fn assign_rows_from(&mut self, src: &Column, rows: Range<usize>, copy: &ValueCopy, tick: Tick) {
        assert!(rows.start <= rows.end && rows.end <= self.len && rows.end <= src.len, "rows out of range");
        let (size, src_size) = (self.item.size(), src.item.size());
        if matches!(copy.how, How::Bytes) {
            // SAFETY: one layout of plain data on both sides (`copy` was made for these two
            // components by `ValueCopy::between`: the caller's contract), the rows exist in
            // both (checked), and the columns are different allocations (`self` is borrowed
            // exclusively while `src` is shared).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.data.as_ptr().add(rows.start * size),
                    self.data.as_ptr().add(rows.start * size),
                    rows.len() * size,
                );
            }
        } else {
            for row in rows.clone() {
                // SAFETY: both rows exist (checked) and hold valid values of the pair of
                // components `copy` was made for (the caller's contract).
                unsafe { copy.assign(src.data.as_ptr().add(row * src_size), self.data.as_ptr().add(row * size), size) };
            }
        }
        self.fill_changed(rows, tick);
    }

    /// Puts a copy of row `src_row` of `src` in row `row` here, in place of a value that
    /// belonged to another entity: the row is stamped added and changed at `tick`.
    ///
    /// # Panics
    /// When a row is out of bounds.
    ///
    /// # Safety
    /// `copy` was made by [`ValueCopy::between`] for `src`'s component (the source) and this
    /// column's (the destination), and `src` is another column than this one.
    pub(crate) unsafe fn replace_row_from(
        &mut self,
        row: usize,
        src: &Column,
        src_row: usize,
        copy: &ValueCopy,
        tick: Tick,
    ) {
        assert!(row < self.len && src_row < src.len, "rows out of range");
        // SAFETY: both rows exist (checked) and hold valid values of the pair `copy` was made
        // for, in two columns (the caller's contract).
        unsafe { copy.assign(src.get_ptr(src_row), self.get_ptr(row), self.item.size()) };
        self.added.set(self.len, row, tick);
        *self.changed_tick_logged(row) = tick;
    }

    /// Appends a copy of row `src_row` of `src`, stamped added at `tick`.
    ///
    /// # Panics
    /// When `src_row` is out of bounds.
    ///
    /// # Safety
    /// `copy` was made by [`ValueCopy::between`] for `src`'s component (the source) and this
    /// column's (the destination), and `src` is another column than this one.
    pub(crate) unsafe fn push_row_from(&mut self, src: &Column, src_row: usize, copy: &ValueCopy, tick: Tick) {
        assert!(src_row < src.len, "row out of range");
        let size = self.item.size();
        // SAFETY: `push_uninit` hands out a fresh row, which `write_new` initialises with a
        // copy of a valid source value (of the component `copy` was made for: the caller's
        // contract) before anything reads it.
        unsafe {
            let dst = self.push_uninit(tick);
            copy.write_new(src.get_ptr(src_row), dst, size);
        }
    }

    /// Appends copies of rows `rows` of `src`, stamped added and changed at `tick`: one copy
    /// of the bytes for plain data, value by value otherwise ([`Column::push_row_from`] for
    /// a run of rows, such as a table's rows appended to its copy).
    ///
    /// # Panics
    /// When a row is out of bounds.
    ///
    /// # Safety
    /// `copy` was made by [`ValueCopy::between`] for `src`'s component (the source) and this
    /// column's (the destination), and `src` is another column than this one.
    pub(crate) unsafe fn extend_rows_from(&mut self, src: &Column, rows: Range<usize>, copy: &ValueCopy, tick: Tick) {
        assert!(rows.start <= rows.end && rows.end <= src.len, "rows out of range");
        let n = rows.len();
        self.reserve(n);
        let (size, src_size, at) = (self.item.size(), src.item.size(), self.len);
        if matches!(copy.how, How::Bytes) {
            // SAFETY: one layout of plain data on both sides (the caller's contract), the
            // source rows exist (checked), `reserve` made room for `n` rows from `at`, and the
            // columns are different allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.data.as_ptr().add(rows.start * size),
                    self.data.as_ptr().add(at * size),
                    n * size,
                );
            }
        } else {
            for (i, row) in rows.enumerate() {
                // SAFETY: the source row exists (checked) and holds a valid value of the pair
                // `copy` was made for (the caller's contract); row `at + i` is room reserved
                // above, uninitialised until `write_new` initialises it. A panic here leaves
                // the length as it was: the values written so far leak, none is dropped twice.
                unsafe {
                    copy.write_new(src.data.as_ptr().add(row * src_size), self.data.as_ptr().add((at + i) * size), size)
                };
            }
        }
        self.log_note_range(at..at + n, at + n);
        self.added.push_n(at, n, tick);
        self.changed.extend(std::iter::repeat_n(tick, n));
        self.len = at + n;
    }

    /// Drops the rows from `len` on.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let old = self.len;
        // Shorten first so a panicking drop leaks rather than drops twice.
        self.len = len;
        self.added.truncate(len);
        self.changed.truncate(len);
        if let Some(heads) = self.heads_mut() {
            heads.truncate(len);
        }
        if let Some(d) = &self.drop {
            for row in len..old {
                // SAFETY: rows below the old length were initialised; each is dropped once,
                // and no longer counted as a row.
                unsafe { d.call(self.data.as_ptr().add(row * self.item.size())) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldType;
    use crate::component::{ComponentDef, Components};

    fn info(def: &ComponentDef) -> ComponentInfo {
        let mut c = Components::default();
        let id = c.define(def).unwrap();
        c.info(id).clone()
    }

    /// A column of `S {n: i32, s: string}` values, one per number.
    fn strings(info: &ComponentInfo, copy: &ValueCopy, from: &Column, rows: &[usize]) -> Column {
        let mut c = Column::new(info);
        for &r in rows {
            // SAFETY: `copy` was made for this component on both sides; two columns.
            unsafe { c.push_row_from(from, r, copy, 1) };
        }
        c
    }

    fn read(c: &Column, info: &ComponentInfo) -> Vec<(i32, String)> {
        let (n, s) = (&info.fields()[0], &info.fields()[1]);
        (0..c.len())
            .map(|r| {
                let p = c.get_ptr(r);
                // SAFETY: rows below len hold valid values with these fields.
                unsafe { (*(p.add(n.offset) as *const i32), (*(p.add(s.offset) as *const String)).clone()) }
            })
            .collect()
    }

    fn seed(info: &ComponentInfo, values: &[(i32, &str)]) -> Column {
        let mut c = Column::new(info);
        for (n, s) in values {
            // SAFETY: the zero value, then its fields written with their own types.
            unsafe {
                let p = c.push_uninit(1);
                info.write_zero(p);
                *(p.add(info.fields()[0].offset) as *mut i32) = *n;
                *(p.add(info.fields()[1].offset) as *mut String) = s.to_string();
            }
        }
        c
    }

    #[test]
    fn values_with_strings_copy_field_by_field_and_drop_once() {
        let def = ComponentDef::new("S", &[("n", FieldType::I32), ("s", FieldType::String)]);
        let i = info(&def);
        let copy = ValueCopy::between(&i, &i).unwrap();
        assert!(matches!(copy.how, How::Fields(_)), "strings are not bytes");
        let src = seed(&i, &[(1, "one"), (2, "two"), (3, "three")]);
        let mut dst = strings(&i, &copy, &src, &[2, 0]);
        assert_eq!(read(&dst, &i), [(3, "three".into()), (1, "one".into())]);
        // SAFETY: as above.
        unsafe { dst.replace_row_from(0, &src, 1, &copy, 5) };
        assert_eq!(dst.added_ticks().get(0), Some(5));
        // SAFETY: as above.
        unsafe { dst.assign_rows_from(&src, 0..2, &copy, 6) };
        assert_eq!(read(&dst, &i), [(1, "one".into()), (2, "two".into())]);
        assert_eq!(dst.changed_ticks(), [6, 6]);
        dst.truncate(1);
        assert_eq!(read(&dst, &i), [(1, "one".into())]);
        dst.truncate(3);
        assert_eq!(dst.len(), 1);
    }

    /// A run of rows appended at once holds what appending them one by one holds: the values
    /// (strings cloned, bytes copied), and the rows stamped added and changed at the tick.
    #[test]
    fn runs_of_rows_append_like_rows_one_by_one() {
        let s = info(&ComponentDef::new("S", &[("n", FieldType::I32), ("s", FieldType::String)]));
        let copy = ValueCopy::between(&s, &s).unwrap();
        let src = seed(&s, &[(1, "one"), (2, "two"), (3, "three"), (4, "four")]);
        let mut dst = strings(&s, &copy, &src, &[3]);
        // SAFETY: `copy` was made for this component on both sides; two columns.
        unsafe { dst.extend_rows_from(&src, 1..3, &copy, 7) };
        assert_eq!(read(&dst, &s), [(4, "four".into()), (2, "two".into()), (3, "three".into())]);
        assert_eq!(dst.changed_ticks(), [1, 7, 7]);
        assert_eq!((0..3).map(|r| dst.added_ticks().get(r)).collect::<Vec<_>>(), [Some(1), Some(7), Some(7)]);
        drop(src);
        assert_eq!(read(&dst, &s)[1], (2, "two".into()), "the strings are the copy's own");

        let p = info(&ComponentDef::new("P", &[("x", FieldType::F32), ("n", FieldType::I64)]));
        let copy = ValueCopy::between(&p, &p).unwrap();
        let mut src = Column::new(&p);
        for k in 0..5i64 {
            // SAFETY: the zero value, then its fields written with their own types.
            unsafe {
                let row = src.push_uninit(1);
                p.write_zero(row);
                *(row.add(p.fields()[0].offset) as *mut f32) = k as f32 / 2.0;
                *(row.add(p.fields()[1].offset) as *mut i64) = -k;
            }
        }
        let mut dst = Column::new(&p);
        // SAFETY: as above.
        unsafe {
            dst.extend_rows_from(&src, 0..0, &copy, 2);
            dst.extend_rows_from(&src, 2..5, &copy, 3);
        }
        let values: Vec<(f32, i64)> = (0..dst.len())
            .map(|r| {
                let row = dst.get_ptr(r);
                // SAFETY: rows below len hold valid values with these fields.
                unsafe {
                    (*(row.add(p.fields()[0].offset) as *const f32), *(row.add(p.fields()[1].offset) as *const i64))
                }
            })
            .collect();
        assert_eq!(values, [(1.0, -2), (1.5, -3), (2.0, -4)]);
        assert_eq!(dst.changed_ticks(), [3, 3, 3]);
    }

    #[test]
    fn plain_values_copy_as_bytes_and_other_fields_refuse() {
        let p = info(&ComponentDef::new("P", &[("x", FieldType::F32), ("n", FieldType::I64)]));
        let copy = ValueCopy::between(&p, &p).unwrap();
        assert!(matches!(copy.how, How::Bytes));
        let other = info(&ComponentDef::new("P", &[("x", FieldType::F64), ("n", FieldType::I64)]));
        assert!(ValueCopy::between(&p, &other).is_none(), "another field type");
        let renamed = info(&ComponentDef::new("P", &[("y", FieldType::F32), ("n", FieldType::I64)]));
        assert!(ValueCopy::between(&p, &renamed).is_none(), "another field name");
    }
}
