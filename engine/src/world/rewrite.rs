//! f32 fields rewritten in place, a row at a time, all or nothing.
//!
//! The columnar writes ([`World::write_fields_run`]) take values computed beforehand, so a
//! bulk write reads its inputs in one pass and its new values in another. A rewrite reads a
//! row's inputs, computes and writes its new values in one pass, keeping each old value in
//! an undo list: when the caller refuses a row (a value it cannot store), every row already
//! rewritten is put back, so the world is as it was.

use crate::component::{ComponentId, FieldType, StorageKind};
use crate::error::{EngineError, Result};
use crate::storage::TableId;
use crate::world::World;

/// Where one f32 field of one table lies: its first row's value, the row stride and the
/// column (its position in the table).
#[derive(Clone, Copy)]
struct FieldAt {
    first: *mut u8,
    stride: usize,
    column: usize,
}

impl FieldAt {
    /// Row `row`'s value.
    ///
    /// # Safety
    /// `row` is below the column's length and nothing else refers to the value.
    #[inline(always)]
    unsafe fn read(self, row: usize) -> f32 {
        // SAFETY: the caller's contract; `first` is the field of row 0 of a column whose rows
        // are `stride` bytes apart, each holding an initialised f32 at that field (checked
        // in `fields_at`).
        unsafe { (self.first.add(row * self.stride) as *const f32).read_unaligned() }
    }

    /// Writes row `row`'s value.
    ///
    /// # Safety
    /// As [`FieldAt::read`], and the column is held exclusively.
    #[inline(always)]
    unsafe fn write(self, row: usize, value: f32) {
        // SAFETY: as in `read`; an f32 needs no drop.
        unsafe { (self.first.add(row * self.stride) as *mut f32).write_unaligned(value) }
    }
}

/// `N` f32 fields of one table, and whether they lie side by side in one column (each 4
/// bytes after the one before), so that a row's `N` values are one read or write.
#[derive(Clone, Copy)]
struct FieldsAt<const N: usize> {
    at: [FieldAt; N],
    side_by_side: bool,
}

impl<const N: usize> FieldsAt<N> {
    fn new(at: [FieldAt; N]) -> Self {
        // One column's fields (two columns' allocations may happen to touch).
        let side_by_side =
            at.iter().enumerate().all(|(k, f)| f.column == at[0].column && f.first == at[0].first.wrapping_add(4 * k));
        FieldsAt { at, side_by_side }
    }

    /// Row `row`'s values, read as one `[f32; N]` when `SIDE_BY_SIDE` (which must then be
    /// `self.side_by_side`).
    ///
    /// # Safety
    /// As [`FieldAt::read`].
    #[inline(always)]
    unsafe fn read<const SIDE_BY_SIDE: bool>(&self, row: usize) -> [f32; N] {
        if SIDE_BY_SIDE && N > 0 {
            let first = self.at[0];
            // SAFETY: the caller's contract; the fields lie side by side, so the `4 * N`
            // bytes from the first one's are the row's `N` initialised f32s.
            unsafe { (first.first.add(row * first.stride) as *const [f32; N]).read_unaligned() }
        } else {
            // SAFETY: the caller's contract.
            std::array::from_fn(|k| unsafe { self.at[k].read(row) })
        }
    }

    /// Writes row `row`'s values, as one `[f32; N]` when `SIDE_BY_SIDE` (see `read`).
    ///
    /// # Safety
    /// As [`FieldAt::write`].
    #[inline(always)]
    unsafe fn write<const SIDE_BY_SIDE: bool>(&self, row: usize, values: [f32; N]) {
        if SIDE_BY_SIDE && N > 0 {
            let first = self.at[0];
            // SAFETY: as in `read`; f32s need no drop.
            unsafe { (first.first.add(row * first.stride) as *mut [f32; N]).write_unaligned(values) }
        } else {
            for (at, v) in self.at.iter().zip(values) {
                // SAFETY: the caller's contract.
                unsafe { at.write(row, v) };
            }
        }
    }
}

/// Rows rewritten between two looks at whether one was refused: the row loop itself has no
/// branch on it, and a refusal costs at most this many rows computed in vain.
const REFUSAL_BLOCK: usize = 1024;

/// The computation of a [`World::rewrite_f32_rows`]: each row's new values from its inputs,
/// and, a block of rows at a time, whether every row so far is accepted.
///
/// Splitting the two lets a rewrite test its rows with no branch in the row loop: `row`
/// folds what it must check into its own state (the largest magnitude written, say) and
/// `accepted` looks at it once a block. [`RowByRow`] makes one of a closure that answers
/// each row.
pub trait RowRewrite<const R: usize, const W: usize> {
    /// Sets `values`, the row's written fields (their current values on entry), from
    /// `inputs`, the row's read fields.
    fn row(&mut self, inputs: &[f32; R], values: &mut [f32; W]);

    /// Whether every row computed so far is accepted. False undoes the whole rewrite.
    fn accepted(&mut self) -> bool;
}

/// A [`RowRewrite`] from a closure that answers each row: false for a refused one.
pub struct RowByRow<F> {
    row: F,
    accepted: bool,
}

impl<F> RowByRow<F> {
    /// The rewrite whose rows `row` computes and answers.
    pub fn new(row: F) -> Self {
        RowByRow { row, accepted: true }
    }
}

impl<const R: usize, const W: usize, F: FnMut(&[f32; R], &mut [f32; W]) -> bool> RowRewrite<R, W> for RowByRow<F> {
    #[inline(always)]
    fn row(&mut self, inputs: &[f32; R], values: &mut [f32; W]) {
        self.accepted &= (self.row)(inputs, values);
    }

    fn accepted(&mut self) -> bool {
        self.accepted
    }
}

/// Rewrites rows `0..len` of one table (see [`World::rewrite_f32_rows`]), keeping each row's
/// old values at `kept` from row `*done` on and counting them in `*done`; false once
/// `rewrite` no longer accepts its rows. `OUT` and `IN` say whether the written and the read
/// fields lie side by side.
///
/// # Safety
/// The fields lie where `outputs` and `inputs` say in a table of `len` rows held exclusively,
/// with no reference into its columns alive; `kept` has room for `W` values of `len` rows
/// from row `*done`.
#[inline(always)]
unsafe fn rewrite_table<const W: usize, const R: usize, const OUT: bool, const IN: bool>(
    (outputs, inputs, len): (FieldsAt<W>, FieldsAt<R>, usize),
    kept: *mut f32,
    done: &mut usize,
    rewrite: &mut impl RowRewrite<R, W>,
) -> bool {
    let mut start = 0;
    while start < len {
        let end = len.min(start + REFUSAL_BLOCK);
        for r in start..end {
            // SAFETY: the caller's contract, `r` below the table's length.
            unsafe {
                let args = inputs.read::<IN>(r);
                let old = outputs.read::<OUT>(r);
                kept.add(*done * W).cast::<[f32; W]>().write_unaligned(old);
                *done += 1;
                let mut new = old;
                rewrite.row(&args, &mut new);
                outputs.write::<OUT>(r, new);
            }
        }
        if !rewrite.accepted() {
            return false;
        }
        start = end;
    }
    true
}

impl World {
    /// Rewrites the f32 fields `written` of component `target` in every row of each of
    /// `tables`, a row at a time: [`RowRewrite::row`] gets the row's `read` fields (f32 fields
    /// of any of the table's components, the target's included, read before the row is
    /// written) and the written fields' current values, and sets their new values.
    ///
    /// All or nothing: once [`RowRewrite::accepted`], asked after each block of rows, says no
    /// (or `row` panics), every row already rewritten gets its old values back from `undo`,
    /// nothing is stamped, and the answer is `Ok(false)`. Otherwise every row's changed tick
    /// is stamped, as any write stamps it, and the answer is `Ok(true)`. Each table is named
    /// once. `undo` is scratch room (each row's old values, `W` a row), kept by a caller that
    /// rewrites again and again.
    ///
    /// ```
    /// use ecsdb_engine::{Component, RowByRow, World};
    /// #[derive(Component)] struct Pos { x: f32, y: f32 }
    /// #[derive(Component)] struct Vel { x: f32, y: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn((Pos { x: 1.0, y: 2.0 }, Vel { x: 10.0, y: 20.0 }));
    /// let table = ecsdb_engine::storage::TableId(world.location(e).unwrap().table);
    /// let (pos, vel) = (world.component_id("Pos").unwrap(), world.component_id("Vel").unwrap());
    /// let mut undo = Vec::new();
    /// let mut step = RowByRow::new(|v: &[f32; 2], p: &mut [f32; 2]| {
    ///     p[0] += v[0];
    ///     p[1] += v[1];
    ///     true
    /// });
    /// let moved = world.rewrite_f32_rows(pos, [0, 1], [(vel, 0), (vel, 1)], &[table], &mut undo, &mut step);
    /// assert_eq!(moved.unwrap(), true);
    /// assert_eq!((world.get::<Pos>(e).unwrap().x, world.get::<Pos>(e).unwrap().y), (11.0, 22.0));
    /// // A refused row leaves everything as it was.
    /// let mut refuse = RowByRow::new(|_: &[f32; 1], _: &mut [f32; 1]| false);
    /// let refused = world.rewrite_f32_rows(pos, [0], [(vel, 0)], &[table], &mut undo, &mut refuse);
    /// assert_eq!(refused.unwrap(), false);
    /// assert_eq!(world.get::<Pos>(e).unwrap().x, 11.0);
    /// ```
    pub fn rewrite_f32_rows<const W: usize, const R: usize>(
        &mut self,
        target: ComponentId,
        written: [usize; W],
        read: [(ComponentId, usize); R],
        tables: &[TableId],
        undo: &mut Vec<f32>,
        rewrite: &mut impl RowRewrite<R, W>,
    ) -> Result<bool> {
        if self.components.len() <= target.index() || self.components.info(target).storage() != StorageKind::Table {
            return Err(EngineError::Invalid("a rewrite's target must be a known table-stored component".into()));
        }
        if W == 0 || (1..W).any(|i| written[..i].contains(&written[i])) {
            return Err(EngineError::Invalid("a rewrite writes each of its fields once, and at least one".into()));
        }
        let mut sorted = tables.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(EngineError::Invalid("a rewrite names a table twice".into()));
        }
        // Every table checked (and every field found) before the first write.
        let mut places = Vec::with_capacity(tables.len());
        for &table in tables {
            places.push(self.fields_at(table, target, written, read)?);
        }
        let tick = self.write_tick();
        let total: usize = places.iter().map(|(_, _, len)| len).sum();
        undo.clear();
        undo.reserve(total * W);
        let kept = undo.as_mut_ptr();
        // Rows whose old values are in `undo`'s room, counted as they are kept (a refused or
        // panicking row's included).
        let mut done = 0usize;
        let rewrite = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // The places by value: in locals, not reloaded after every write through a pointer.
            for &place in &places {
                let (outputs, inputs, _) = place;
                // SAFETY: `fields_at` found the fields in the table; the world is borrowed
                // exclusively (`&mut self`) and no reference into its columns is alive, so these
                // raw reads and writes are the only accesses. `undo` has room for `W` values
                // of each of the `total` rows, and the tables before this one kept `done`.
                let rewritten = unsafe {
                    match (outputs.side_by_side, inputs.side_by_side) {
                        (true, true) => rewrite_table::<W, R, true, true>(place, kept, &mut done, rewrite),
                        (true, false) => rewrite_table::<W, R, true, false>(place, kept, &mut done, rewrite),
                        (false, true) => rewrite_table::<W, R, false, true>(place, kept, &mut done, rewrite),
                        (false, false) => rewrite_table::<W, R, false, false>(place, kept, &mut done, rewrite),
                    }
                };
                if !rewritten {
                    return false;
                }
            }
            true
        }));
        // SAFETY: the first `done * W` values of the room were written above.
        unsafe { undo.set_len(done * W) };
        if !matches!(rewrite, Ok(true)) {
            // Put back every row rewritten: the undo list holds them in order, table by
            // table (the last entry may be a row not yet written, which gets its own values).
            let mut old = undo.chunks_exact(W);
            'tables: for (outputs, _, len) in &places {
                for r in 0..*len {
                    let Some(values) = old.next() else { break 'tables };
                    for (at, v) in outputs.at.iter().zip(values) {
                        // SAFETY: as in the rewrite above.
                        unsafe { at.write(r, *v) };
                    }
                }
            }
        }
        match rewrite {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(false) => Ok(false),
            Ok(true) => {
                for &table in tables {
                    let t = &mut self.storage.tables[table.index()];
                    let len = t.len();
                    let (held, columns) = t.components_and_columns_mut();
                    if let Some(i) = held.iter().position(|c| *c == target) {
                        columns[i].fill_changed(0..len, tick);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Where the written and read fields of a rewrite lie in `table`, and its row count:
    /// every component stored in the table, every field an f32 one.
    #[allow(clippy::type_complexity)]
    fn fields_at<const W: usize, const R: usize>(
        &mut self,
        table: TableId,
        target: ComponentId,
        written: [usize; W],
        read: [(ComponentId, usize); R],
    ) -> Result<(FieldsAt<W>, FieldsAt<R>, usize)> {
        let components = &self.components;
        let t = self
            .storage
            .tables
            .get_mut(table.index())
            .ok_or_else(|| EngineError::Invalid(format!("no table {}", table.index())))?;
        let len = t.len();
        let (held, columns) = t.components_and_columns_mut();
        let mut at = |id: ComponentId, field: usize| -> Result<FieldAt> {
            let info = (id.index() < components.len()).then(|| components.info(id));
            let f = info.filter(|i| !i.is_opaque()).and_then(|i| i.fields().get(field));
            let Some(f) = f.filter(|f| f.ty == FieldType::F32) else {
                return Err(EngineError::Invalid(format!("component {} has no f32 field {field}", id.index())));
            };
            let Some(i) = held.iter().position(|c| *c == id) else {
                return Err(EngineError::Invalid(format!(
                    "table {} does not store component {}",
                    table.index(),
                    id.index()
                )));
            };
            let column = &mut columns[i];
            // The pointer carries the column allocation's provenance (no reference to the
            // values is made), and the schema puts an f32 at `offset` inside each row.
            Ok(FieldAt { first: column.data_ptr().wrapping_add(f.offset), stride: column.item_size(), column: i })
        };
        let mut outputs = [FieldAt { first: std::ptr::null_mut(), stride: 0, column: 0 }; W];
        for (o, field) in outputs.iter_mut().zip(written) {
            *o = at(target, field)?;
        }
        let mut inputs = [FieldAt { first: std::ptr::null_mut(), stride: 0, column: 0 }; R];
        for (i, (id, field)) in inputs.iter_mut().zip(read) {
            *i = at(id, field)?;
        }
        Ok((FieldsAt::new(outputs), FieldsAt::new(inputs), len))
    }
}

#[cfg(test)]
mod tests {
    use crate::query::{Changed, QueryState};
    use crate::storage::TableId;
    use crate::{Component, ComponentId, Entity, RowByRow, RowRewrite, World};

    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    struct Pos {
        x: f32,
        y: f32,
        z: f32,
    }

    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    struct Vel {
        x: f32,
        y: f32,
    }

    #[derive(Component)]
    struct Tag;

    /// A world of two tables of rows with positions and velocities.
    struct Fixture {
        world: World,
        /// The entities, in spawn order.
        es: Vec<Entity>,
        pos: ComponentId,
        vel: ComponentId,
        /// The tables holding them.
        ts: Vec<TableId>,
    }

    fn fixture(rows: usize) -> Fixture {
        let mut world = World::new();
        let es: Vec<Entity> = (0..rows)
            .map(|i| {
                let (p, v) = (Pos { x: i as f32, y: -(i as f32), z: 0.5 }, Vel { x: 1.0, y: 2.0 });
                if i % 3 == 0 { world.spawn((p, v, Tag)) } else { world.spawn((p, v)) }
            })
            .collect();
        let mut ts: Vec<_> = es.iter().map(|e| TableId(world.location(*e).unwrap().table)).collect();
        ts.sort();
        ts.dedup();
        let (pos, vel) = (world.component_id("Pos").unwrap(), world.component_id("Vel").unwrap());
        Fixture { world, es, pos, vel, ts }
    }

    #[test]
    fn every_row_is_rewritten_from_its_own_inputs_and_stamped() {
        let rows = if cfg!(miri) { 20 } else { 500 };
        let Fixture { mut world, es, pos, vel, ts } = fixture(rows);
        let mut changed: QueryState<Entity, Changed<Pos>> = world.query_state();
        assert_eq!(changed.iter(&world).count(), rows, "spawned rows count as changed");
        let mut undo = Vec::new();
        // x reads y and y reads x of the same row: each row's inputs are read before it is written.
        let done = world
            .rewrite_f32_rows(
                pos,
                [0, 1],
                [(pos, 1), (pos, 0), (vel, 1)],
                &ts,
                &mut undo,
                &mut RowByRow::new(|i: &[f32; 3], o: &mut [f32; 2]| {
                    o[0] = i[0] + i[2];
                    o[1] = i[1];
                    true
                }),
            )
            .unwrap();
        assert!(done);
        for (i, e) in es.iter().enumerate() {
            let p = *world.get::<Pos>(*e).unwrap();
            assert_eq!(p, Pos { x: -(i as f32) + 2.0, y: i as f32, z: 0.5 });
        }
        assert_eq!(changed.iter(&world).count(), rows);
    }

    /// Written and read fields side by side in their column or not (a row's values read and
    /// written as one array, or field by field): the same rows.
    #[test]
    fn fields_side_by_side_or_apart_give_the_same_rows() {
        let rows = if cfg!(miri) { 10 } else { 300 };
        let layouts = [([0, 1], [0, 1]), ([0, 1], [1, 0]), ([1, 0], [0, 1]), ([0, 2], [1, 0]), ([2, 1], [0, 0])];
        for (written, read) in layouts {
            let Fixture { mut world, es, pos, vel, ts } = fixture(rows);
            let mut undo = Vec::new();
            let reads = [(vel, read[0]), (vel, read[1])];
            let done = world
                .rewrite_f32_rows(
                    pos,
                    written,
                    reads,
                    &ts,
                    &mut undo,
                    &mut RowByRow::new(|i: &[f32; 2], o: &mut [f32; 2]| {
                        o[0] = o[0] * 10.0 + i[0];
                        o[1] = o[1] * 100.0 + i[1];
                        true
                    }),
                )
                .unwrap();
            assert!(done);
            for (i, e) in es.iter().enumerate() {
                let before = [i as f32, -(i as f32), 0.5];
                let vel = [1.0, 2.0];
                let mut want = before;
                want[written[0]] = before[written[0]] * 10.0 + vel[read[0]];
                want[written[1]] = before[written[1]] * 100.0 + vel[read[1]];
                let p = *world.get::<Pos>(*e).unwrap();
                assert_eq!([p.x, p.y, p.z], want, "{written:?} {read:?}");
            }
        }
    }

    #[test]
    fn a_refused_row_puts_every_table_back() {
        let rows = if cfg!(miri) { 20 } else { 500 };
        let Fixture { mut world, es, pos, vel, ts } = fixture(rows);
        let before: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        let mut changed: QueryState<Entity, Changed<Pos>> = world.query_state();
        changed.iter(&world).count();
        let mut undo = Vec::new();
        let mut seen = 0;
        // Refused in the last table, after every row of the first was rewritten.
        let done = world
            .rewrite_f32_rows(
                pos,
                [0, 1],
                [(vel, 0)],
                &ts,
                &mut undo,
                &mut RowByRow::new(|i: &[f32; 1], o: &mut [f32; 2]| {
                    seen += 1;
                    o[0] += i[0];
                    o[1] = f32::NAN;
                    seen < rows - 1
                }),
            )
            .unwrap();
        assert!(!done);
        let after: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        assert_eq!(before, after);
        assert_eq!(changed.iter(&world).count(), 0);
    }

    /// A rewrite that judges its rows a block at a time (the largest value written against a
    /// bound) is undone once it says no, and stops within a block of the row that passed it.
    #[test]
    fn a_rewrite_judged_a_block_at_a_time_is_undone() {
        struct Bounded {
            largest: f32,
            bound: f32,
            rows: usize,
        }
        impl RowRewrite<1, 1> for Bounded {
            fn row(&mut self, i: &[f32; 1], o: &mut [f32; 1]) {
                self.rows += 1;
                o[0] += i[0];
                self.largest = self.largest.max(o[0].abs());
            }
            fn accepted(&mut self) -> bool {
                self.largest < self.bound
            }
        }
        let rows = if cfg!(miri) { 30 } else { 4 * super::REFUSAL_BLOCK };
        let Fixture { mut world, es, pos, vel, ts } = fixture(rows);
        let before: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        let mut undo = Vec::new();
        let mut bounded = Bounded { largest: 0.0, bound: (rows / 8) as f32, rows: 0 };
        assert!(!world.rewrite_f32_rows(pos, [0], [(vel, 0)], &ts, &mut undo, &mut bounded).unwrap());
        let after: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        assert_eq!(before, after);
        if rows > 2 * super::REFUSAL_BLOCK {
            assert!(bounded.rows < rows, "stopped early: {} rows computed", bounded.rows);
        }
        // Within its bound, the same rewrite writes every row.
        let mut bounded = Bounded { largest: 0.0, bound: f32::INFINITY, rows: 0 };
        assert!(world.rewrite_f32_rows(pos, [0], [(vel, 0)], &ts, &mut undo, &mut bounded).unwrap());
        assert_eq!(bounded.rows, rows);
        assert_eq!(world.get::<Pos>(es[5]).unwrap().x, 6.0);
    }

    #[test]
    fn a_panic_puts_the_rows_back() {
        let Fixture { mut world, es, pos, vel, ts } = fixture(12);
        let before: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        let mut undo = Vec::new();
        let mut n = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut row = RowByRow::new(|i: &[f32; 1], o: &mut [f32; 1]| {
                n += 1;
                assert!(n < 9, "refused by panicking");
                o[0] = i[0] * 100.0;
                true
            });
            world.rewrite_f32_rows(pos, [0], [(vel, 0)], &ts, &mut undo, &mut row)
        }));
        assert!(caught.is_err());
        let after: Vec<Pos> = es.iter().map(|e| *world.get::<Pos>(*e).unwrap()).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn bad_fields_and_tables_are_errors_before_any_write() {
        let Fixture { mut world, pos, vel, ts, .. } = fixture(6);
        let tag = world.component_id("Tag").unwrap();
        let mut undo = Vec::new();
        let ok = &mut RowByRow::new(|_: &[f32; 1], _: &mut [f32; 1]| true);
        assert!(world.rewrite_f32_rows(pos, [3], [(vel, 0)], &ts, &mut undo, ok).is_err(), "no field 3");
        assert!(world.rewrite_f32_rows(pos, [0], [(vel, 2)], &ts, &mut undo, ok).is_err(), "no field 2");
        assert!(world.rewrite_f32_rows(pos, [0], [(tag, 0)], &ts, &mut undo, ok).is_err(), "not in every table");
        assert!(world.rewrite_f32_rows(pos, [0], [(vel, 0)], &[crate::storage::TableId(999)], &mut undo, ok).is_err());
        let both = [ts[0], ts[0]];
        assert!(world.rewrite_f32_rows(pos, [0], [(vel, 0)], &both, &mut undo, ok).is_err(), "a table twice");
        let twice = &mut RowByRow::new(|_: &[f32; 1], _: &mut [f32; 2]| true);
        assert!(world.rewrite_f32_rows(pos, [0, 0], [(vel, 0)], &ts, &mut undo, twice).is_err());
    }
}
