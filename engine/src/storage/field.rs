//! Typed, checked, strided views of one field across the rows of a column: the safe read path
//! of the text query engine.
//!
//! A [`FieldColumn<T>`] reads the field at `data + row * size + offset` as a `T`, row by row,
//! with no per-row virtual call and no [`Value`](crate::Value). It is obtained from the world
//! ([`World::table_field`](crate::World::table_field), [`World::sparse_field`](crate::World::sparse_field)), which checks that the component is known
//! to *this* world, that the field exists, and that its schema type is `T`'s: only then is the
//! strided read sound, so the view itself is safe to use.
//!
//! # Safety contract
//! `T` is restricted to [`FieldScalar`], a sealed trait implemented exactly for the Rust types
//! of [`FieldType`](crate::FieldType). The world's schema guarantees that every row of a component's column holds
//! an initialised, aligned value of the field's type at the field's offset (run-time layouts
//! are computed by the engine; Rust types vouch for theirs by the `unsafe impl Component`,
//! checked for size, alignment and overlap at registration).

use std::marker::PhantomData;

use crate::storage::Column;

/// The Rust types a field of each [`FieldType`](crate::FieldType) holds: the engine's one sealed mapping,
/// [`SchemaField`](crate::SchemaField), under the name the typed field views use.
pub use crate::component::SchemaField as FieldScalar;

/// One field of every row of a column, read as `&T`: a strided slice.
pub struct FieldColumn<'a, T> {
    /// Address of row 0's field (dangling-but-aligned when the column is empty).
    base: *const u8,
    /// Address of the column's row 0: views of fields of one column share it.
    origin: *const u8,
    stride: usize,
    len: usize,
    _marker: PhantomData<&'a [T]>,
}

// SAFETY: a `FieldColumn` is a shared borrow of `T`s (like `&'a [T]`); `T: Sync`.
unsafe impl<T: Sync> Send for FieldColumn<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for FieldColumn<'_, T> {}

impl<T> Clone for FieldColumn<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for FieldColumn<'_, T> {}

impl<'a, T: FieldScalar> FieldColumn<'a, T> {
    /// # Safety
    /// Every row of `column` must hold an initialised, aligned `T` at `offset`, for `'a`.
    pub(crate) unsafe fn new(column: &'a Column, offset: usize) -> Self {
        debug_assert!(offset + std::mem::size_of::<T>() <= column.item_size());
        // SAFETY: the offset lies inside the first value (or the column is empty and the
        // pointer is never dereferenced: every read is bounds-checked against `len`).
        let origin = column.data_ptr();
        let base = origin.wrapping_add(offset);
        FieldColumn { base, origin, stride: column.item_size(), len: column.len(), _marker: PhantomData }
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no rows.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Row `row`'s value, or `None` past the end.
    #[inline]
    pub fn get(&self, row: usize) -> Option<&'a T> {
        if row < self.len {
            // SAFETY: row < len; by construction row `row` holds a `T` at this address.
            Some(unsafe { &*(self.base.add(row * self.stride) as *const T) })
        } else {
            None
        }
    }

    /// Tests rows `start .. start + 64` (fewer at the end of the column) with `keep`: bit `i`
    /// of the result is set when row `start + i` passes. The filter primitive of the query
    /// engine: no per-row bounds check, no loop-carried dependency but the OR, so the loop
    /// unrolls; the caller then visits only the set bits.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 0.0 });
    /// for i in 1..100 { world.spawn(Hp { v: i as f32 }); }
    /// let t = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let col = world.table_field::<f32>(t, world.component_id("Hp").unwrap(), 0).unwrap();
    /// assert_eq!(col.mask64(0, |v| *v < 3.0), 0b111);
    /// assert_eq!(col.mask64(64, |v| *v >= 98.0), 0b11 << 34);
    /// assert_eq!(col.mask64(100, |_| true), 0);
    /// ```
    #[inline]
    pub fn mask64(&self, start: usize, mut keep: impl FnMut(&T) -> bool) -> u64 {
        let end = self.len.min(start.saturating_add(64));
        let mut bits = 0u64;
        if end == start.wrapping_add(64) {
            for j in 0..64 {
                // SAFETY: start + j < end <= len, so the row holds a `T` (see `new`).
                let v = unsafe { &*(self.base.add((start + j) * self.stride) as *const T) };
                bits |= (keep(v) as u64) << j;
            }
        } else {
            for i in start..end {
                // SAFETY: i < end <= len.
                let v = unsafe { &*(self.base.add(i * self.stride) as *const T) };
                bits |= (keep(v) as u64) << (i - start);
            }
        }
        bits
    }

    /// Calls `f(row, value)` for rows `start..end` (clamped to the column), in row order: the
    /// tightest loop over a strided field (no per-row bounds check or `Option`).
    #[inline]
    pub fn for_each_in(&self, start: usize, end: usize, mut f: impl FnMut(usize, &'a T)) {
        let end = end.min(self.len);
        for row in start.min(end)..end {
            // SAFETY: row < end <= len, so the row holds a `T` (see `new`).
            f(row, unsafe { &*(self.base.add(row * self.stride) as *const T) });
        }
    }

    /// `f` of the values of rows `start..end` (clamped to the column), in row order, collected:
    /// the gather of the query engine. The loop counts rows rather than walking an iterator, so
    /// the collect writes into exact-size storage with no per-row capacity check and
    /// vectorises where `f` does.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 1.0, max: 9.0 });
    /// world.spawn(Hp { v: 2.0, max: 9.0 });
    /// let t = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let col = world.table_field::<f32>(t, world.component_id("Hp").unwrap(), 0).unwrap();
    /// assert_eq!(col.map_range(0, 5, |v| *v as f64 * 2.0), [2.0, 4.0]);
    /// ```
    #[inline]
    pub fn map_range<R>(&self, start: usize, end: usize, mut f: impl FnMut(&'a T) -> R) -> Vec<R> {
        let end = end.min(self.len);
        let start = start.min(end);
        (start..end)
            .map(|row| {
                // SAFETY: start <= row < end <= len, so the row holds a `T` (see `new`).
                f(unsafe { &*(self.base.add(row * self.stride) as *const T) })
            })
            .collect()
    }

    /// Writes `f` of the values of rows `start .. start + out.len()` into `out`: the chunk
    /// gather of the compiled expression tier, into caller-owned (stack) storage.
    ///
    /// # Panics
    /// When the rows run past the end of the column.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 1.0, max: 9.0 });
    /// world.spawn(Hp { v: 2.0, max: 9.0 });
    /// let t = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let col = world.table_field::<f32>(t, world.component_id("Hp").unwrap(), 0).unwrap();
    /// let mut out = [0.0f64; 2];
    /// col.fill_range(0, &mut out, |v| *v as f64);
    /// assert_eq!(out, [1.0, 2.0]);
    /// ```
    #[inline]
    pub fn fill_range<R>(&self, start: usize, out: &mut [R], mut f: impl FnMut(&'a T) -> R) {
        self.merge_range(start, out, |slot, v| *slot = f(v));
    }

    /// Calls `f(&mut out[j], value of row start + j)` for each slot of `out`: a gather that
    /// combines each row's value with what the slot holds (`out[j] += x`), so an operation
    /// with a field operand reads the column once, with no buffer of the field's values.
    ///
    /// # Panics
    /// When the rows run past the end of the column.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 1.0, max: 9.0 });
    /// world.spawn(Hp { v: 2.0, max: 9.0 });
    /// let t = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let col = world.table_field::<f32>(t, world.component_id("Hp").unwrap(), 0).unwrap();
    /// let mut out = [10.0f64, 20.0];
    /// col.merge_range(0, &mut out, |o, v| *o += *v as f64);
    /// assert_eq!(out, [11.0, 22.0]);
    /// ```
    #[inline]
    pub fn merge_range<R>(&self, start: usize, out: &mut [R], mut f: impl FnMut(&mut R, &'a T)) {
        assert!(start.checked_add(out.len()).is_some_and(|end| end <= self.len), "rows past the end of the column");
        let first = self.base.wrapping_add(start.wrapping_mul(self.stride)) as *const T;
        // A stride the compiler knows lets it vectorise the walk: the field of a component of
        // one to four fields of its type (positions, velocities, health pairs) has one of these.
        let size = std::mem::size_of::<T>();
        // SAFETY: rows start .. start + out.len() are in range (asserted above). In each of
        // the four walks the stride is `K` values of `T`, so `first.add(j * K)` is row
        // `start + j`'s field, an initialised, aligned `T` (see `new`); the last arm steps by
        // the stride in bytes to the same rows.
        unsafe {
            match self.stride {
                s if s == size => walk::<T, R, 1>(first, out, f),
                s if s == 2 * size => walk::<T, R, 2>(first, out, f),
                s if s == 3 * size => walk::<T, R, 3>(first, out, f),
                s if s == 4 * size => walk::<T, R, 4>(first, out, f),
                _ => {
                    for (j, slot) in out.iter_mut().enumerate() {
                        f(slot, &*(first as *const u8).add(j * self.stride).cast::<T>());
                    }
                }
            }
        }
    }

    /// Calls `f(&mut out[j], self's value of row start + j, other's value of that row)` for
    /// each slot of `out`: two fields of one table walked together, so an operation of two
    /// field operands (`Position.x + Velocity.x * dt`, `hp < max / 2`) reads both columns in
    /// one pass with no buffer of either's values. Two columns of the same stride (two fields
    /// of one component, or of two components of one shape) get a compile-time stride.
    ///
    /// # Panics
    /// When the rows run past the end of either column.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Hp { v: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 1.0, max: 9.0 });
    /// world.spawn(Hp { v: 2.0, max: 8.0 });
    /// let (t, hp) = (ecsdb_engine::storage::TableId(world.location(e).unwrap().table), world.component_id("Hp").unwrap());
    /// let v = world.table_field::<f32>(t, hp, 0).unwrap();
    /// let max = world.table_field::<f32>(t, hp, 1).unwrap();
    /// let mut out = [0.0f64; 2];
    /// v.zip_range(&max, 0, &mut out, |o, a, b| *o = (*b - *a) as f64);
    /// assert_eq!(out, [8.0, 6.0]);
    /// ```
    #[inline]
    pub fn zip_range<R>(
        &self,
        other: &FieldColumn<'a, T>,
        start: usize,
        out: &mut [R],
        mut f: impl FnMut(&mut R, &'a T, &'a T),
    ) {
        let end = start.checked_add(out.len());
        assert!(end.is_some_and(|end| end <= self.len && end <= other.len), "rows past the end of the column");
        let first = self.base.wrapping_add(start.wrapping_mul(self.stride)) as *const T;
        let second = other.base.wrapping_add(start.wrapping_mul(other.stride)) as *const T;
        let size = std::mem::size_of::<T>();
        // SAFETY: rows start .. start + out.len() are in range of both columns (asserted
        // above). With equal strides of `K` values of `T`, `first.add(j * K)` and
        // `second.add(j * K)` are row `start + j`'s fields, initialised, aligned `T`s (see
        // `new`); the last arm steps each column by its own stride in bytes to the same rows.
        unsafe {
            match (self.stride, other.stride) {
                (s, t) if s == t && s == size => walk2::<T, R, 1>(first, second, out, f),
                (s, t) if s == t && s == 2 * size => walk2::<T, R, 2>(first, second, out, f),
                (s, t) if s == t && s == 3 * size => walk2::<T, R, 3>(first, second, out, f),
                (s, t) if s == t && s == 4 * size => walk2::<T, R, 4>(first, second, out, f),
                (s, t) => {
                    for (j, slot) in out.iter_mut().enumerate() {
                        let a = &*(first as *const u8).add(j * s).cast::<T>();
                        let b = &*(second as *const u8).add(j * t).cast::<T>();
                        f(slot, a, b);
                    }
                }
            }
        }
    }

    /// Writes `f` of the values of `rows` into `out` (`out[i]` for `rows[i]`; `out` at least
    /// as long as `rows`): the chunk gather for a selection of rows.
    ///
    /// # Panics
    /// When a row is past the end of the column, or `out` is shorter than `rows`.
    #[inline]
    pub fn fill_rows<R>(&self, rows: &[u32], out: &mut [R], mut f: impl FnMut(&'a T) -> R) {
        self.merge_rows(rows, out, |slot, v| *slot = f(v));
    }

    /// Calls `f(&mut out[i], value of rows[i])` for each of `rows` (see
    /// [`FieldColumn::merge_range`]).
    ///
    /// # Panics
    /// When a row is past the end of the column, or `out` is shorter than `rows`.
    #[inline]
    pub fn merge_rows<R>(&self, rows: &[u32], out: &mut [R], mut f: impl FnMut(&mut R, &'a T)) {
        assert!(out.len() >= rows.len(), "output shorter than the rows");
        // One check for the whole list (a fold, so it vectorises), none per row.
        let max = rows.iter().fold(0u32, |m, &r| m.max(r));
        assert!(rows.is_empty() || (max as usize) < self.len, "rows past the end of the column");
        for (slot, &row) in out.iter_mut().zip(rows) {
            // SAFETY: row <= max < len (asserted above), so the row holds a `T` (see `new`).
            f(slot, unsafe { &*(self.base.add(row as usize * self.stride) as *const T) });
        }
    }

    /// Every row's value, in row order.
    #[inline]
    pub fn iter(&self) -> FieldIter<'a, T> {
        self.range(0, self.len)
    }

    /// The values of rows `start..end` (clamped to the column), in row order.
    #[inline]
    pub fn range(&self, start: usize, end: usize) -> FieldIter<'a, T> {
        let end = end.min(self.len);
        let start = start.min(end);
        FieldIter {
            // Stays inside the allocation (or one past it) for every in-range start.
            ptr: self.base.wrapping_add(start * self.stride),
            stride: self.stride,
            remaining: end - start,
            _marker: PhantomData,
        }
    }
}

/// `f(&mut out[j], *first.add(j * K))`: a strided walk whose stride is a compile-time constant.
///
/// # Safety
/// `first.add(j * K)` must point to an initialised, aligned `T` that lives for `'a`, for every
/// `j < out.len()`.
#[inline(always)]
unsafe fn walk<'a, T: 'a, R, const K: usize>(first: *const T, out: &mut [R], mut f: impl FnMut(&mut R, &'a T)) {
    // A batch of the expression layer's chunk size gets a loop of a length the compiler
    // knows, which it unrolls and vectorises; other lengths take the same loop, unsized.
    #[inline(always)]
    unsafe fn slots<'a, T: 'a, R, const K: usize>(first: *const T, out: &mut [R], f: &mut impl FnMut(&mut R, &'a T)) {
        for (j, slot) in out.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            f(slot, unsafe { &*first.add(j * K) });
        }
    }
    if out.len() == FIXED_WALK {
        // SAFETY: the caller's contract, for the same `out`.
        unsafe { slots::<T, R, K>(first, &mut out[..FIXED_WALK], &mut f) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { slots::<T, R, K>(first, out, &mut f) }
    }
}

/// `f(&mut out[j], *first.add(j * K), *second.add(j * K))`: [`walk`] over two columns of one
/// stride.
///
/// # Safety
/// `first.add(j * K)` and `second.add(j * K)` must point to initialised, aligned `T`s that
/// live for `'a`, for every `j < out.len()`.
#[inline(always)]
unsafe fn walk2<'a, T: 'a, R, const K: usize>(
    first: *const T,
    second: *const T,
    out: &mut [R],
    mut f: impl FnMut(&mut R, &'a T, &'a T),
) {
    #[inline(always)]
    unsafe fn slots<'a, T: 'a, R, const K: usize>(
        first: *const T,
        second: *const T,
        out: &mut [R],
        f: &mut impl FnMut(&mut R, &'a T, &'a T),
    ) {
        for (j, slot) in out.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            f(slot, unsafe { &*first.add(j * K) }, unsafe { &*second.add(j * K) });
        }
    }
    if out.len() == FIXED_WALK {
        // SAFETY: the caller's contract, for the same `out`.
        unsafe { slots::<T, R, K>(first, second, &mut out[..FIXED_WALK], &mut f) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { slots::<T, R, K>(first, second, out, &mut f) }
    }
}

/// The batch length [`walk`] compiles a fixed-length loop for: the compiled expression
/// tier's chunk of 64 rows.
const FIXED_WALK: usize = 64;

/// Iterator over rows of a [`FieldColumn`]: a pointer walk, no per-row bounds check.
pub struct FieldIter<'a, T> {
    ptr: *const u8,
    stride: usize,
    remaining: usize,
    _marker: PhantomData<&'a T>,
}

impl<'a, T: FieldScalar> Iterator for FieldIter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        if self.remaining == 0 {
            return None;
        }
        // SAFETY: `remaining > 0` rows are left, so `ptr` is a row inside the column, holding
        // a `T` (see `FieldColumn::new`); the borrow lives as long as the column's.
        let v = unsafe { &*(self.ptr as *const T) };
        self.ptr = self.ptr.wrapping_add(self.stride);
        self.remaining -= 1;
        Some(v)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<T: FieldScalar> ExactSizeIterator for FieldIter<'_, T> {}

impl<'a> FieldColumn<'a, f32> {
    /// This field and `y` and `z` read together, one `[f32; 3]` a row, when all three are
    /// fields of one column lying side by side (`y` 4 bytes after this one, `z` 8 after): a
    /// vector-like component's coordinates (`Position (x f32, y f32, z f32)`) in one strided
    /// walk instead of three. `None` otherwise.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)] struct Pos { x: f32, y: f32, z: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Pos { x: 1.0, y: 2.0, z: 3.0 });
    /// let id = world.component_id("Pos").unwrap();
    /// let table = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let field = |f| world.table_field::<f32>(table, id, f).unwrap();
    /// let xyz = field(0).with_adjacent(&field(1), &field(2)).unwrap();
    /// assert_eq!(xyz.get(0), Some(&[1.0, 2.0, 3.0]));
    /// assert!(field(1).with_adjacent(&field(0), &field(2)).is_none(), "not side by side");
    /// ```
    pub fn with_adjacent(
        &self,
        y: &FieldColumn<'a, f32>,
        z: &FieldColumn<'a, f32>,
    ) -> Option<FieldColumn<'a, [f32; 3]>> {
        let one_column = self.origin == y.origin
            && self.origin == z.origin
            && self.stride == y.stride
            && self.stride == z.stride
            && self.len == y.len
            && self.len == z.len;
        let side_by_side = y.base == self.base.wrapping_add(4) && z.base == self.base.wrapping_add(8);
        // Every row of the column holds an `f32` at each of the three fields' offsets (see
        // `new`), so the 12 bytes from this field's offset are three initialised `f32`s: an
        // aligned `[f32; 3]` (alignment 4), inside the row's value.
        (one_column && side_by_side).then_some(FieldColumn {
            base: self.base,
            origin: self.origin,
            stride: self.stride,
            len: self.len,
            _marker: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::storage::TableId;
    use crate::{ComponentDef, ComponentId, FieldType, Value, World};

    #[test]
    fn typed_views_are_checked() {
        let mut world = World::new();
        let def = ComponentDef::new(
            "Mixed",
            &[("a", FieldType::U8), ("name", FieldType::String), ("b", FieldType::F64), ("v", FieldType::Vec3)],
        );
        let id = world.define_component(&def).unwrap();
        let sparse = world.define_component(&ComponentDef::new("S", &[("k", FieldType::I32)]).sparse()).unwrap();
        let mut last = None;
        for i in 0..10 {
            let e = world
                .spawn_values(&[
                    (
                        "Mixed",
                        &[
                            ("a", Value::Int(i)),
                            ("name", Value::Str(format!("n{i}"))),
                            ("b", Value::Float(i as f64 / 2.0)),
                        ],
                    ),
                    ("S", &[("k", Value::Int(-i))]),
                ])
                .unwrap();
            last = Some(e);
        }
        let table = TableId(world.location(last.unwrap()).unwrap().table);
        let a = world.table_field::<u8>(table, id, 0).unwrap();
        assert_eq!(a.iter().map(|&x| x as i64).sum::<i64>(), 45);
        let names = world.table_field::<String>(table, id, 1).unwrap();
        assert_eq!(names.get(3).map(String::as_str), Some("n3"));
        assert_eq!(names.get(10), None);
        let b = world.table_field::<f64>(table, id, 2).unwrap();
        assert_eq!(b.iter().len(), 10);
        assert_eq!(*b.get(9).unwrap(), 4.5);
        assert_eq!(world.table_field::<[f32; 3]>(table, id, 3).unwrap().get(0), Some(&[0.0; 3]));
        // Wrong type, missing field, unknown component, table without the column.
        assert!(world.table_field::<f32>(table, id, 2).is_none());
        assert!(world.table_field::<u8>(table, id, 4).is_none());
        assert!(world.table_field::<u8>(table, ComponentId(99), 0).is_none());
        assert!(world.table_field::<u8>(TableId::EMPTY, id, 0).is_none());
        assert!(world.table_field::<u8>(TableId(1000), id, 0).is_none());
        let k = world.sparse_field::<i32>(sparse, 0).unwrap();
        let set = world.sparse_set(sparse).unwrap();
        let row = set.row(last.unwrap()).unwrap();
        assert_eq!(*k.get(row).unwrap(), -9);
        assert!(world.sparse_field::<i64>(sparse, 0).is_none());
    }

    #[test]
    fn adjacent_fields_of_one_column_read_as_one_vector() {
        let mut world = World::new();
        fn f(n: &str) -> (&str, FieldType) {
            (n, FieldType::F32)
        }
        let pos = world.define_component(&ComponentDef::new("P", &[f("x"), f("y"), f("z"), f("w")])).unwrap();
        let other = world.define_component(&ComponentDef::new("Q", &[f("x"), f("y"), f("z")])).unwrap();
        let mut last = None;
        for i in 0..5 {
            let v = |k: i64| Value::Float((i * 10 + k) as f64);
            let p = [("x", v(1)), ("y", v(2)), ("z", v(3)), ("w", v(4))];
            let q = [("x", v(5)), ("y", v(6)), ("z", v(7))];
            last = Some(world.spawn_values(&[("P", &p[..]), ("Q", &q[..])]).unwrap());
        }
        let table = TableId(world.location(last.unwrap()).unwrap().table);
        let w = &world;
        let p = |k: usize| w.table_field::<f32>(table, pos, k).unwrap();
        let q = |k: usize| w.table_field::<f32>(table, other, k).unwrap();
        let yzw = p(1).with_adjacent(&p(2), &p(3)).unwrap();
        let mut out = [[0.0f32; 3]; 5];
        yzw.merge_range(0, &mut out, |o, v| *o = *v);
        assert_eq!(out[4], [42.0, 43.0, 44.0]);
        assert!(p(0).with_adjacent(&p(2), &p(3)).is_none(), "y is not next to x here");
        assert!(p(0).with_adjacent(&p(1), &q(2)).is_none(), "another component's column");
        assert!(q(0).with_adjacent(&q(1), &q(2)).is_some());
    }

    #[test]
    fn chunk_gathers_read_the_rows_asked_for() {
        let mut world = World::new();
        let id =
            world.define_component(&ComponentDef::new("P", &[("x", FieldType::F32), ("y", FieldType::I16)])).unwrap();
        let mut last = None;
        for i in 0..70 {
            last = Some(world.spawn_values(&[("P", &[("x", Value::Float(i as f64)), ("y", Value::Int(-i))])]).unwrap());
        }
        let table = TableId(world.location(last.unwrap()).unwrap().table);
        let y = world.table_field::<i16>(table, id, 1).unwrap();
        let mut out = [0i64; 64];
        y.fill_range(6, &mut out, |v| *v as i64);
        assert_eq!(out[0], -6);
        assert_eq!(out[63], -69);
        let x = world.table_field::<f32>(table, id, 0).unwrap();
        let mut some = [0.0f64; 4];
        x.fill_rows(&[69, 0, 5], &mut some, |v| *v as f64);
        assert_eq!(some, [69.0, 0.0, 5.0, 0.0]);
        // Combining with what the output holds, over a range and over listed rows.
        let mut sums = [1.0f64; 3];
        x.merge_range(10, &mut sums, |o, v| *o += *v as f64);
        assert_eq!(sums, [11.0, 12.0, 13.0]);
        x.merge_rows(&[2, 4], &mut sums, |o, v| *o *= *v as f64);
        assert_eq!(sums, [22.0, 48.0, 13.0]);
        x.fill_range(70, &mut [], |v| *v as f64);
        let past = std::panic::catch_unwind(|| x.fill_range(7, &mut [0.0f64; 64], |v| *v as f64));
        assert!(past.is_err());
        let past = std::panic::catch_unwind(|| x.fill_rows(&[3, 70], &mut [0.0f64; 2], |v| *v as f64));
        assert!(past.is_err());
    }

    #[test]
    fn two_columns_walk_together() {
        let mut world = World::new();
        let f = |n| (n, FieldType::F64);
        let pair = world.define_component(&ComponentDef::new("P", &[f("a"), f("b")])).unwrap();
        let wide = world.define_component(&ComponentDef::new("W", &[f("x"), f("y"), f("z")])).unwrap();
        let mut last = None;
        for i in 0..70 {
            let v = |k: i64| Value::Float((i * 10 + k) as f64);
            let p = [("a", v(1)), ("b", v(2))];
            let w = [("x", v(3)), ("y", v(4)), ("z", v(5))];
            last = Some(world.spawn_values(&[("P", &p[..]), ("W", &w[..])]).unwrap());
        }
        let table = TableId(world.location(last.unwrap()).unwrap().table);
        let col = |c, k| world.table_field::<f64>(table, c, k).unwrap();
        // One stride (two fields of one component), a whole chunk of 64 and a short run.
        let mut out = [0.0f64; 64];
        col(pair, 1).zip_range(&col(pair, 0), 6, &mut out, |o, b, a| *o = b - a);
        assert!(out.iter().all(|d| *d == 1.0));
        let mut out = [0.0f64; 3];
        col(pair, 0).zip_range(&col(pair, 1), 67, &mut out, |o, a, b| *o = a + b);
        assert_eq!(out, [1343.0, 1363.0, 1383.0]);
        // Two strides: the general walk, each column by its own.
        let mut out = [0.0f64; 64];
        col(wide, 2).zip_range(&col(pair, 0), 0, &mut out, |o, z, a| *o = z - a);
        assert!(out.iter().all(|d| *d == 4.0));
        let (a, x) = (col(pair, 0), col(wide, 0));
        let past = std::panic::catch_unwind(|| a.zip_range(&x, 7, &mut [0.0; 64], |_, _, _| ()));
        assert!(past.is_err());
    }
}
