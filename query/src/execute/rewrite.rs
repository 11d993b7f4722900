//! An UPDATE rewritten in place: whole tables, f32 fields, affine assignments.
//!
//! The general UPDATE ([`crate::execute::update`]) computes every new value into vectors,
//! checks them all, then writes them: two passes over the rows and megabytes of staged values
//! in between. When every target row of every matched table is written (no WHERE, no index)
//! and every assignment is an f32 field computed from the row's f32 fields by affine
//! arithmetic ([`AffineF32`], `x = Position.x + Velocity.x * $dt`), the engine rewrites the
//! rows in place in one pass ([`World::rewrite_f32_rows`]): each row's inputs read, its new
//! values computed and written, its old ones kept. A value that cannot be stored (a finite
//! result too large for an f32) refuses its row: the engine puts every row back, and the
//! statement runs the general way, which reports the error exactly as it always does.

use ecsdb_engine::storage::TableId;
use ecsdb_engine::{ComponentId, FieldType, RowByRow, RowRewrite, TypedFieldValues, Value, World};

use crate::error::Error;
use crate::execute::affine::{AffineF32, AffineSide, Combine};
use crate::execute::convert::StagingBuffers;
use crate::execute::outcome::write_failed;
use crate::expr::Expr;
use crate::plan::physical::{Access, ScanPlan, SlotSource, TableFilter};

/// Fewest target rows rewritten in place: below it the general path is as quick, and a plan
/// (made each run) would cost more than it saves.
const IN_PLACE_MIN_ROWS: usize = 4096;

/// Most assignments rewritten in place (each count is a separate instance of the row loop).
const MOST_FIELDS: usize = 4;

/// How an UPDATE is rewritten in place: found by [`InPlace::plan`], run by [`InPlace::run`].
#[derive(Clone, Debug)]
pub(crate) struct InPlace {
    target: ComponentId,
    /// The assigned fields, in assignment order.
    written: Vec<usize>,
    /// The fields read, as `(component, field)`: each assignment's second side's, after its
    /// first side's unless `own_first`.
    inputs: Vec<(ComponentId, usize)>,
    /// Whether every assignment's first side is the assigned field itself, bare
    /// (`x = Position.x + …`): its value is then the row's old value, which the engine hands
    /// over anyway, not a field read again.
    own_first: bool,
    assignments: Vec<AffineF32>,
    /// The matched tables with rows.
    tables: Vec<TableId>,
    /// Their rows.
    rows: usize,
}

impl InPlace {
    /// The in-place rewrite of `UPDATE component SET assignments` over `scan` (refreshed for
    /// this run), if it qualifies: a full scan whose every matched table has every row
    /// selected and holds every component read as a column, at least [`IN_PLACE_MIN_ROWS`]
    /// rows, and 1 to 4 assignments of f32 fields, each an [`AffineF32`].
    pub(crate) fn plan(
        world: &World,
        component: ComponentId,
        assignments: &[(usize, Expr)],
        scan: &ScanPlan,
        params: &[Value],
    ) -> Option<InPlace> {
        if !matches!(scan.access, Access::Scan { .. }) || !(1..=MOST_FIELDS).contains(&assignments.len()) {
            return None;
        }
        let target_slot = scan.slots.iter().position(|s| s.id == component)?;
        let fields = &scan.slots[target_slot].fields;
        let mut affine = Vec::with_capacity(assignments.len());
        for (field, expr) in assignments {
            if fields.get(*field)?.ty != FieldType::F32 {
                return None;
            }
            affine.push(AffineF32::of(expr, &scan.slots, params)?);
        }
        let slots_read: Vec<usize> = affine.iter().flat_map(|a| [a.a.slot, a.b.slot]).collect();
        let (mut tables, mut rows) = (Vec::with_capacity(scan.tables.len()), 0);
        for tp in &scan.tables {
            let every_row = match &*tp.filter {
                TableFilter::Never => continue,
                TableFilter::Steps(steps) => steps.is_empty() && tp.checks.is_empty(),
            };
            let columns = |slot: usize| matches!(tp.sources.get(slot), Some(SlotSource::Column));
            if !every_row || !columns(target_slot) || !slots_read.iter().all(|&s| columns(s)) {
                return None;
            }
            let len = world.tables().get(tp.table.index())?.len();
            if len > 0 {
                tables.push(tp.table);
                rows += len;
            }
        }
        if rows < IN_PLACE_MIN_ROWS {
            return None;
        }
        let own_first = affine
            .iter()
            .zip(assignments)
            .all(|(a, (field, _))| a.a.slot == target_slot && a.a.field == *field && a.a.is_bare());
        let id = |side: &AffineSide| (scan.slots[side.slot].id, side.field);
        let inputs =
            affine.iter().flat_map(|a| if own_first { vec![id(&a.b)] } else { vec![id(&a.a), id(&a.b)] }).collect();
        Some(InPlace {
            target: component,
            written: assignments.iter().map(|(f, _)| *f).collect(),
            inputs,
            own_first,
            assignments: affine,
            tables,
            rows,
        })
    }

    /// The rows it writes.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Rewrites the rows, keeping their old values in a vector of `buffers`. False, with
    /// nothing changed, when a value cannot be stored: the general path then reports it.
    pub(crate) fn run(&self, world: &mut World, buffers: &StagingBuffers) -> Result<bool, Error> {
        let mut undo = buffers.take_f32s();
        let done = match (self.assignments.len(), self.own_first) {
            (1, true) => self.run_own::<1>(world, &mut undo),
            (2, true) => self.run_own::<2>(world, &mut undo),
            (3, true) => self.run_own::<3>(world, &mut undo),
            (4, true) => self.run_own::<4>(world, &mut undo),
            (1, false) => self.run_general::<1, 2>(world, &mut undo),
            (2, false) => self.run_general::<2, 4>(world, &mut undo),
            (3, false) => self.run_general::<3, 6>(world, &mut undo),
            (4, false) => self.run_general::<4, 8>(world, &mut undo),
            _ => Err(Error::internal("an in-place UPDATE of an unplanned number of fields")),
        };
        undo.clear();
        buffers.give([TypedFieldValues::F32(undo)]);
        done
    }

    /// Whether every assignment combines its sides as `c`.
    fn all_combine(&self, c: Combine) -> bool {
        self.assignments.iter().all(|a| a.combine == c)
    }

    /// [`InPlace::run`] where every assignment's first side is its own field's old value
    /// (`own_first`), one input a row for each. The shape `f = C.f ± D.g * k` (a position moved
    /// by a velocity, a value damped) gets a row loop of its own with nothing else in it.
    fn run_own<const W: usize>(&self, world: &mut World, undo: &mut Vec<f32>) -> Result<bool, Error> {
        let scaled = self.assignments.iter().all(|a| a.b.is_scaled());
        let plus = |old: f32, y: f64| old as f64 + y;
        let minus = |old: f32, y: f64| old as f64 - y;
        if scaled && self.all_combine(Combine::Add) {
            self.rewrite::<W, W>(world, undo, |a, old, i| plus(old[0], a.b.scaled(i[0])))
        } else if scaled && self.all_combine(Combine::Sub) {
            self.rewrite::<W, W>(world, undo, |a, old, i| minus(old[0], a.b.scaled(i[0])))
        } else {
            self.rewrite::<W, W>(world, undo, |a, old, i| a.value(old[0], i[0]))
        }
    }

    /// [`InPlace::run`] for `W` assignments, `R` (twice `W`) inputs: the row loop made for
    /// the one way every assignment combines its sides where they share one, so it has no
    /// branch on it.
    fn run_general<const W: usize, const R: usize>(
        &self,
        world: &mut World,
        undo: &mut Vec<f32>,
    ) -> Result<bool, Error> {
        macro_rules! combining {
            ($($c:expr_2021),*) => {
                $(if self.all_combine($c) {
                    return self.rewrite::<W, R>(world, undo, |a, _, i| a.value_as($c, i[0], i[1]));
                })*
            };
        }
        combining!(Combine::Add, Combine::Sub, Combine::Mul, Combine::First);
        self.rewrite::<W, R>(world, undo, |a, _, i| a.value(i[0], i[1]))
    }

    /// The rewrite: assignment `j`'s value by `value(assignment, &old[j..], &inputs[j * R / W..])`.
    #[inline(always)]
    fn rewrite<const W: usize, const R: usize>(
        &self,
        world: &mut World,
        undo: &mut Vec<f32>,
        value: impl Fn(&AffineF32, &[f32], &[f32]) -> f64,
    ) -> Result<bool, Error> {
        let (Ok(written), Ok(inputs), Ok(assignments)) = (
            <[usize; W]>::try_from(&self.written[..]),
            <[(ComponentId, usize); R]>::try_from(&self.inputs[..]),
            <[AffineF32; W]>::try_from(&self.assignments[..]),
        ) else {
            return Err(Error::internal("an in-place UPDATE's parts do not match its field count"));
        };
        // A finite value that narrows to an infinity is too large for an f32 and refuses its
        // row; an infinite value from an infinite input stores. The first pass refuses any
        // infinity, looking only at the largest magnitude written (a `max` a value, no branch);
        // only if one turns up does a second pass tell the two apart, a row at a time.
        let mut fast = Affine { assignments, value: &value, largest: [0.0; W] };
        if world.rewrite_f32_rows(self.target, written, inputs, &self.tables, undo, &mut fast).map_err(write_failed)? {
            return Ok(true);
        }
        let exact = |input: &[f32; R], out: &mut [f32; W]| {
            let mut refused = false;
            let old = *out;
            for (j, a) in assignments.iter().enumerate() {
                let wide = value(a, &old[j..], &input[j * (R / W)..]);
                let v = wide as f32;
                refused |= v.is_infinite() & wide.is_finite();
                out[j] = v;
            }
            !refused
        };
        world
            .rewrite_f32_rows(self.target, written, inputs, &self.tables, undo, &mut RowByRow::new(exact))
            .map_err(write_failed)
    }
}

/// The row computation of an in-place UPDATE's first pass: every assignment's value, with
/// the largest magnitude written kept per field, so that a block of rows is judged by `W`
/// comparisons instead of each row by its own.
struct Affine<'a, const W: usize, V> {
    assignments: [AffineF32; W],
    /// Assignment `j`'s value from the row's old values from `j` on and its inputs from
    /// `j * R / W` on.
    value: &'a V,
    /// The largest magnitude written to each field so far (a NaN counts as none).
    largest: [f32; W],
}

impl<const R: usize, const W: usize, V: Fn(&AffineF32, &[f32], &[f32]) -> f64> RowRewrite<R, W> for Affine<'_, W, V> {
    #[inline(always)]
    fn row(&mut self, input: &[f32; R], out: &mut [f32; W]) {
        let old = *out;
        for (j, a) in self.assignments.iter().enumerate() {
            let v = (self.value)(a, &old[j..], &input[j * (R / W)..]) as f32;
            let m = v.abs();
            // Written as the comparison `maxps` makes, so the fields' maxima are one instruction.
            self.largest[j] = if m > self.largest[j] { m } else { self.largest[j] };
            out[j] = v;
        }
    }

    fn accepted(&mut self) -> bool {
        self.largest.iter().all(|m| m.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    /// The first pass refuses any infinity; the second stores one that comes from an infinite
    /// input and refuses one that a finite value overflows to, changing nothing.
    #[test]
    fn an_infinite_input_stores_and_an_overflow_refuses() {
        let n = IN_PLACE_MIN_ROWS + 100;
        let mut db = Database::new();
        db.execute("CREATE COMPONENT P (x f32, y f32)", ()).unwrap();
        let es: Vec<_> = (0..n)
            .map(|i| {
                let y = if i == n / 2 { f64::INFINITY } else { 1.0 };
                db.world_mut().spawn_values(&[("P", &[("x", Value::Float(i as f64)), ("y", Value::Float(y))])]).unwrap()
            })
            .collect();
        let x = |db: &Database, i: usize| db.world().get_field(es[i], "P", "x").unwrap();
        let buffers = StagingBuffers::default();
        let mut update = db.prepare("UPDATE P SET x = P.x + P.y * $1").unwrap();

        let plan = update.in_place(db.world(), &[Value::Float(0.5)]).expect("rewritten in place");
        assert_eq!(plan.rows(), n);
        assert!(plan.run(db.world_mut(), &buffers).unwrap(), "an infinity from an infinite input stores");
        assert_eq!(x(&db, 7), Value::Float(7.5));
        assert_eq!(x(&db, n / 2), Value::Float(f64::INFINITY));

        let plan = update.in_place(db.world(), &[Value::Float(1e39)]).expect("rewritten in place");
        assert!(!plan.run(db.world_mut(), &buffers).unwrap(), "1e39 is too large for an f32");
        assert_eq!(x(&db, 7), Value::Float(7.5));
        assert_eq!(x(&db, n - 1), Value::Float((n - 1) as f64 + 0.5));
    }
}
