//! Columnar field writes: new values for one field of many rows of one table (or sparse set),
//! already converted to the field's Rust type, written straight into the column with the
//! rows' changed ticks stamped. The text UPDATE computes and checks every value first, then
//! writes with these; secondary indexes see the writes through the change ticks, as they see
//! typed `Mut<T>` writes.

use crate::component::ComponentId;
use crate::entity::Entity;
use crate::error::Result;
use crate::storage::{Column, TableId, TypedFieldValues};
use crate::world::World;

/// Writes each value into its row of `rows` of `column`, at the field's `offset` (runs of
/// consecutive rows are written by [`ValuesLeft`]).
///
/// # Safety
/// The field at `offset` must have `values`' type, and every row written must be
/// `< column.len()`.
pub(super) unsafe fn write_values(column: &mut Column, offset: usize, rows: &[u32], values: TypedFieldValues) {
    macro_rules! each {
        ($($variant:ident),*) => {
            match values {
                // SAFETY: the caller's contract, arm by arm.
                $(TypedFieldValues::$variant(v) => unsafe { write_rows(column, offset, rows, v) },)*
            }
        };
    }
    each!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, Str, Entity, Vec2, Vec3)
}

/// Writes `values[i]` at row `rows[i]` of `column`, at the field's `offset`.
///
/// # Safety
/// Every row of `column` must hold an initialised, aligned `T` at `offset` (the schema says
/// the field has `T`'s type), and every row written must be `< column.len()`.
unsafe fn write_rows<T>(column: &mut Column, offset: usize, rows: &[u32], values: Vec<T>) {
    let stride = column.item_size();
    let base = column.data_ptr();
    for (&r, v) in rows.iter().zip(values) {
        // SAFETY: r < len (caller), so the field of row r lies inside the column's buffer and
        // holds an initialised `T`; assignment drops the old value (strings) and moves the new.
        unsafe { *(base.add(r as usize * stride + offset) as *mut T) = v };
    }
}

/// The values of one field not yet written into a run of rows: a vector whose
/// elements are moved out front to back, each exactly once.
pub(super) struct Left<T> {
    /// The buffer, with length 0: its first `len` slots hold the values, owned by `Left`.
    buf: Vec<T>,
    len: usize,
    /// How many values from the front have been moved out.
    moved: usize,
}

impl<T> Left<T> {
    fn new(mut values: Vec<T>) -> Left<T> {
        let len = values.len();
        // SAFETY: shrinking the length never exposes uninitialised slots; the values stay in
        // the buffer, owned by `Left` from here (moved out by `write_next`, or dropped by
        // `Drop`), so the vector never drops them.
        unsafe { values.set_len(0) };
        Left { buf: values, len, moved: 0 }
    }

    /// Moves the next `count` values into the field at `offset` of rows `row..row + count`.
    ///
    /// # Safety
    /// The field at `offset` of `column` has type `T`, and `row + count <= column.len()`.
    unsafe fn write_next(&mut self, column: &mut Column, offset: usize, row: usize, count: usize) {
        assert!(self.moved + count <= self.len, "more values written than given");
        let stride = column.item_size();
        let first = column.data_ptr().wrapping_add(row * stride + offset);
        let src = self.buf.as_ptr().wrapping_add(self.moved);
        let size = std::mem::size_of::<T>();
        // SAFETY: the caller's contract makes each destination row `row + i`'s field, an
        // initialised `T` (assignment drops it); the sources are the values `moved..moved +
        // count`, initialised and owned by `self`, each read once (`moved` advances past them).
        unsafe {
            match stride {
                s if s == size => move_run::<T, 1>(first as *mut T, src, count),
                s if s == 2 * size => move_run::<T, 2>(first as *mut T, src, count),
                s if s == 3 * size => move_run::<T, 3>(first as *mut T, src, count),
                s if s == 4 * size => move_run::<T, 4>(first as *mut T, src, count),
                _ => {
                    for i in 0..count {
                        *(first.add(i * stride) as *mut T) = src.add(i).read();
                    }
                }
            }
        }
        self.moved += count;
    }
}

impl<T> Left<T> {
    /// The emptied vector, its room kept; values not moved out are dropped first.
    fn into_spent(self) -> Vec<T> {
        let mut left = std::mem::ManuallyDrop::new(self);
        for i in left.moved..left.len {
            // SAFETY: values `moved..len` are initialised and still owned here; each is
            // dropped once (`left` is never dropped).
            unsafe { std::ptr::drop_in_place(left.buf.as_mut_ptr().add(i)) };
        }
        // The vector has length 0 (see `new`): taking it out leaves an empty one, which
        // owns nothing, in a `Left` that is never dropped.
        std::mem::take(&mut left.buf)
    }
}

impl<T> Drop for Left<T> {
    fn drop(&mut self) {
        for i in self.moved..self.len {
            // SAFETY: values `moved..len` are initialised and still owned here; each is
            // dropped once.
            unsafe { std::ptr::drop_in_place(self.buf.as_mut_ptr().add(i)) };
        }
    }
}

/// `*dst.add(i * K) = src.add(i).read()` for `i < count`, with a compile-time stride.
///
/// # Safety
/// Each `dst.add(i * K)` must be an initialised, aligned `T` the caller may overwrite; each
/// `src.add(i)` an initialised `T` the caller gives up.
#[inline(always)]
unsafe fn move_run<T, const K: usize>(dst: *mut T, src: *const T, count: usize) {
    // A whole chunk gets a loop of a length the compiler knows, which it unrolls and
    // vectorises (strided stores of small values); the last, shorter one the same loop unsized.
    if count == RUN_CHUNK {
        for i in 0..RUN_CHUNK {
            // SAFETY: the caller's contract, `count` being `RUN_CHUNK`.
            unsafe { *dst.add(i * K) = src.add(i).read() };
        }
    } else {
        for i in 0..count {
            // SAFETY: the caller's contract.
            unsafe { *dst.add(i * K) = src.add(i).read() };
        }
    }
}

macro_rules! values_left {
    ($($variant:ident: $t:ty),*) => {
        /// [`Left`] values of any field type.
        pub(super) enum ValuesLeft {
            $($variant(Left<$t>),)*
        }

        impl ValuesLeft {
            pub(super) fn new(values: TypedFieldValues) -> ValuesLeft {
                match values {
                    $(TypedFieldValues::$variant(v) => ValuesLeft::$variant(Left::new(v)),)*
                }
            }

            /// See [`Left::into_spent`].
            pub(super) fn into_spent(self) -> TypedFieldValues {
                match self {
                    $(ValuesLeft::$variant(left) => TypedFieldValues::$variant(left.into_spent()),)*
                }
            }

            /// See [`Left::write_next`].
            ///
            /// # Safety
            /// As [`Left::write_next`], with `T` these values' type.
            unsafe fn write_next(&mut self, column: &mut Column, offset: usize, row: usize, count: usize) {
                match self {
                    // SAFETY: the caller's contract, arm by arm.
                    $(ValuesLeft::$variant(left) => unsafe { left.write_next(column, offset, row, count) },)*
                }
            }
        }
    };
}

values_left!(
    Bool: bool, I8: i8, I16: i16, I32: i32, I64: i64, U8: u8, U16: u16, U32: u32, U64: u64, F32: f32, F64: f64,
    Str: String, Entity: Entity, Vec2: [f32; 2], Vec3: [f32; 3]
);

/// Writes each field's values into rows `start..end` of `column`, [`RUN_CHUNK`] rows at a
/// time, every field of those rows before the next ones, so each line of the column is read
/// and written once.
///
/// # Safety
/// Field `i` lies at `offsets[i]` and has `values[i]`'s type, `end <= column.len()`, and
/// each field has at least `end - start` values.
pub(super) unsafe fn write_run(
    column: &mut Column,
    offsets: &[usize],
    values: &mut [ValuesLeft],
    start: usize,
    end: usize,
) {
    for row in (start..end).step_by(RUN_CHUNK) {
        let count = RUN_CHUNK.min(end - row);
        for (values, offset) in values.iter_mut().zip(offsets) {
            // SAFETY: the caller's contract: each field's type is its values', `offset` is the
            // field's, rows `row..row + count` lie inside `start..end` (in range), and each
            // field has `end - start` values, `row - start` of them written.
            unsafe { values.write_next(column, *offset, row, count) };
        }
    }
}

/// Rows written per field before moving to the next field, in [`World::write_fields_run`]: a
/// few KiB of each column, so a row's cache lines are still there for its next field (fewer
/// under Miri, so that the short runs its tests can take still span several chunks).
const RUN_CHUNK: usize = if cfg!(miri) { 32 } else { 256 };

/// Where [`World::write_field_rows`] writes.
#[derive(Clone, Copy, Debug)]
pub enum FieldRows<'a> {
    /// Rows of an archetype table that stores the component.
    Table(TableId, &'a [u32]),
    /// The consecutive rows `start..end` of an archetype table that stores the component (a
    /// whole batch of a scan): written as one strided run, ticks stamped as one fill.
    TableRun {
        /// The table.
        table: TableId,
        /// The first row.
        start: u32,
        /// One past the last row.
        end: u32,
    },
    /// Entities holding the (sparse) component.
    Sparse(&'a [Entity]),
}

impl World {
    /// Writes several fields of component `id` over the consecutive rows `start..end` of
    /// `table`, one value per row in each field's values: every field checked first (nothing
    /// is written if one fails), then written a few hundred rows at a time, every field of
    /// those rows before the next ones, so each line of the column is read and written once;
    /// the rows' changed ticks are stamped once. Returns the fields' vectors, emptied with
    /// their room kept, for a caller that writes runs again and again to fill next time
    /// (allocating and freeing megabytes each time costs page faults).
    ///
    /// ```
    /// use ecsdb_engine::{Component, TypedFieldValues, World};
    /// #[derive(Component)] struct P { x: f32, y: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(P { x: 1.0, y: 2.0 });
    /// let table = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let id = world.component_id("P").unwrap();
    /// let fields = vec![(0, TypedFieldValues::F32(vec![5.0])), (1, TypedFieldValues::F32(vec![6.0]))];
    /// let spent = world.write_fields_run(id, table, 0, 1, fields).unwrap();
    /// assert_eq!((world.get::<P>(e).unwrap().x, world.get::<P>(e).unwrap().y), (5.0, 6.0));
    /// assert!(spent.iter().all(|v| v.is_empty()));
    /// ```
    pub fn write_fields_run(
        &mut self,
        id: ComponentId,
        table: TableId,
        start: u32,
        end: u32,
        fields: Vec<(usize, TypedFieldValues)>,
    ) -> Result<Vec<TypedFieldValues>> {
        self.component_writer(id)?.write_fields_run(table, start, end, fields)
    }

    /// Writes new values for field `field` of component `id` into many rows at once, stamping
    /// each row's changed tick. Everything is checked before the first write: the component
    /// is stored where `at` says, the field exists with `values`' type, every row exists and
    /// there is one value per row.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World, FieldRows, TypedFieldValues};
    /// #[derive(Component)] struct Health { hp: f32, max: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 1.0, max: 10.0 });
    /// world.spawn(Health { hp: 2.0, max: 10.0 });
    /// let table = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let id = world.component_id("Health").unwrap();
    /// world.write_field_rows(id, 0, FieldRows::Table(table, &[0, 1]), TypedFieldValues::F32(vec![5.0, 6.0])).unwrap();
    /// assert_eq!(world.get::<Health>(e).unwrap().hp, 5.0);
    /// ```
    pub fn write_field_rows(
        &mut self,
        id: ComponentId,
        field: usize,
        at: FieldRows<'_>,
        values: TypedFieldValues,
    ) -> Result<()> {
        self.component_writer(id)?.write_field_rows(field, at, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ComponentDef, FieldType, Value};

    #[test]
    fn writes_are_checked_then_applied_with_ticks() {
        let mut world = World::new();
        let id = world
            .define_component(&ComponentDef::new("N", &[("name", FieldType::String), ("v", FieldType::I32)]))
            .unwrap();
        let a = world.spawn_values(&[("N", &[("name", Value::Str("a".into()))])]).unwrap();
        let b = world.spawn_values(&[("N", &[("name", Value::Str("b".into()))])]).unwrap();
        let table = TableId(world.location(a).unwrap().table);
        // A reader's tick: every later write is stamped newer than it.
        let before = world.read_change_tick();
        // Wrong type, wrong field, row out of range, length mismatch: nothing written.
        assert!(world.write_field_rows(id, 1, FieldRows::Table(table, &[0]), TypedFieldValues::I64(vec![1])).is_err());
        assert!(world.write_field_rows(id, 7, FieldRows::Table(table, &[0]), TypedFieldValues::I32(vec![1])).is_err());
        assert!(world.write_field_rows(id, 1, FieldRows::Table(table, &[5]), TypedFieldValues::I32(vec![1])).is_err());
        assert!(
            world.write_field_rows(id, 1, FieldRows::Table(table, &[0, 1]), TypedFieldValues::I32(vec![1])).is_err()
        );
        assert_eq!(world.get_field(a, "N", "v").unwrap(), Value::Int(0));
        world
            .write_field_rows(
                id,
                0,
                FieldRows::Table(table, &[1, 0]),
                TypedFieldValues::Str(vec!["B".into(), "A".into()]),
            )
            .unwrap();
        assert_eq!(world.get_field(a, "N", "name").unwrap(), Value::Str("A".into()));
        assert_eq!(world.get_field(b, "N", "name").unwrap(), Value::Str("B".into()));
        let col = world.tables()[table.index()].column(id).unwrap();
        assert!(col.changed_ticks().iter().all(|t| *t > before));
    }

    #[test]
    fn several_fields_of_a_run_are_checked_then_written_together() {
        let mut world = World::new();
        let id = world
            .define_component(&ComponentDef::new("P", &[("x", FieldType::F32), ("n", FieldType::String)]))
            .unwrap();
        // Rows `start..end` of `n` are written.
        let n: u32 = crate::test_size(600, 120);
        let (start, end) = (n / 12, n - n / 60);
        let rows = start as usize..end as usize;
        let es: Vec<_> = (0..n).map(|_| world.spawn_values(&[("P", &[])]).unwrap()).collect();
        let table = TableId(world.location(es[0]).unwrap().table);
        let before = world.read_change_tick();
        let xs = |n: u32| TypedFieldValues::F32((0..n).map(|i| i as f32).collect());
        let names = |n: u32| TypedFieldValues::Str((0..n).map(|i| format!("n{i}")).collect());
        // A wrong type, a length mismatch, a run past the end: nothing written.
        assert!(world.write_fields_run(id, table, 0, n, vec![(0, xs(n)), (1, xs(n))]).is_err());
        assert!(world.write_fields_run(id, table, 0, n, vec![(0, xs(n)), (1, names(n - 1))]).is_err());
        assert!(world.write_fields_run(id, table, n / 6, n / 6 + n, vec![(0, xs(n))]).is_err());
        let col = world.tables()[table.index()].column(id).unwrap();
        assert!(col.changed_ticks().iter().all(|t| *t <= before));
        let spent =
            world.write_fields_run(id, table, start, end, vec![(0, xs(end - start)), (1, names(end - start))]).unwrap();
        // The vectors come back empty (every string moved into the column), their room kept.
        assert_eq!(spent.len(), 2);
        assert!(spent.iter().all(|v| v.is_empty()));
        assert!(matches!(&spent[1], TypedFieldValues::Str(v) if v.capacity() >= (end - start) as usize));
        for (i, e) in es.iter().enumerate() {
            let (x, name) = (world.get_field(*e, "P", "x").unwrap(), world.get_field(*e, "P", "n").unwrap());
            if rows.contains(&i) {
                assert_eq!(
                    (x, name),
                    (Value::Float((i - rows.start) as f64), Value::Str(format!("n{}", i - rows.start)))
                );
            } else {
                assert_eq!((x, name), (Value::Float(0.0), Value::Str(String::new())));
            }
        }
        let col = world.tables()[table.index()].column(id).unwrap();
        let stamped: Vec<bool> = col.changed_ticks().iter().map(|t| *t > before).collect();
        assert!(stamped.iter().enumerate().all(|(i, s)| *s == rows.contains(&i)));
    }

    #[test]
    fn runs_of_rows_are_checked_then_written_with_ticks() {
        let mut world = World::new();
        let id = world.define_component(&ComponentDef::new("N", &[("v", FieldType::F32)])).unwrap();
        let es: Vec<_> = (0..5).map(|_| world.spawn_values(&[("N", &[])]).unwrap()).collect();
        let table = TableId(world.location(es[0]).unwrap().table);
        let run = |start, end| FieldRows::TableRun { table, start, end };
        let before = world.read_change_tick();
        // Past the end, backwards, length mismatch, wrong type: nothing written.
        assert!(world.write_field_rows(id, 0, run(4, 6), TypedFieldValues::F32(vec![1.0, 2.0])).is_err());
        assert!(world.write_field_rows(id, 0, run(3, 1), TypedFieldValues::F32(vec![])).is_err());
        assert!(world.write_field_rows(id, 0, run(1, 3), TypedFieldValues::F32(vec![1.0])).is_err());
        assert!(world.write_field_rows(id, 0, run(1, 3), TypedFieldValues::F64(vec![1.0, 2.0])).is_err());
        let col = world.tables()[table.index()].column(id).unwrap();
        assert!(col.changed_ticks().iter().all(|t| *t <= before));
        world.write_field_rows(id, 0, run(1, 4), TypedFieldValues::F32(vec![10.0, 20.0, 30.0])).unwrap();
        let values: Vec<Value> = es.iter().map(|e| world.get_field(*e, "N", "v").unwrap()).collect();
        assert_eq!(values, [0.0, 10.0, 20.0, 30.0, 0.0].map(Value::Float));
        let col = world.tables()[table.index()].column(id).unwrap();
        let stamped: Vec<bool> = col.changed_ticks().iter().map(|t| *t > before).collect();
        assert_eq!(stamped, [false, true, true, true, false]);
    }
}
