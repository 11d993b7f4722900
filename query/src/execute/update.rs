//! `UPDATE C SET f = expr, …`, column by column.
//!
//! For each batch of target rows of each matched table, every assigned expression is
//! evaluated into a typed vector and converted into the field's Rust type
//! ([`TypedFieldValues`]), checking each value as [`convert_value`] would (same rules, same
//! errors). Only when every batch of every table has converted does anything change: each
//! batch's values are then written straight into their column rows
//! ([`World::write_field_rows`]), which stamps the changed ticks that secondary indexes and
//! change detection read. Every target's new values are computed from the state before the
//! statement, and a failing statement changes nothing.

use ecsdb_engine::storage::TableId;
use ecsdb_engine::{
    convert_value, ComponentId, ComponentWriter, Entity, FieldInfo, FieldRows, FieldType, ReferenceWrite,
    TypedFieldValues, Value, World,
};

use crate::error::Error;
use crate::execute::mutate::write_failed;
use crate::execute::scan::{rows_in_batches, run_scan, Sink, SlotReader, TableCtx};
use std::rc::Rc;

use crate::expr::compiled::{as_range, sized, Bail, ChunkBuffers, Numbers, Program, RowSet};
use crate::expr::{Evaluator, Leaves, Vector};
use crate::plan::logical::Expr;
use crate::plan::physical::ScanPlan;
use crate::result::ResultSet;

/// The converted values of one batch, waiting for every check to pass.
struct PendingBatch {
    /// Where the rows are: a table's rows, or the entities of a sparse component.
    at: PendingRows,
    /// The entity of each row (empty for table rows when no reference field is written).
    entities: Vec<Entity>,
    /// Per assignment, the new values.
    values: Vec<TypedFieldValues>,
}

enum PendingRows {
    Table(ecsdb_engine::storage::TableId, Vec<u32>),
    /// Consecutive rows `start..end` of a table (a whole scan batch).
    TableRun(ecsdb_engine::storage::TableId, u32, u32),
    Sparse(Vec<Entity>),
}

struct UpdateSink<'a> {
    scan: &'a ScanPlan,
    slot: usize,
    component_name: &'a str,
    fields: Vec<&'a FieldInfo>,
    assignments: &'a [(usize, Expr)],
    params: &'a [Value],
    pending: Vec<PendingBatch>,
    targets: usize,
    /// Whether an assigned field is a reference (its writes are checked per entity).
    writes_references: bool,
}

impl UpdateSink<'_> {
    /// Every assignment's new values over `rows` (`n` of them) from its compiled program,
    /// converted straight into the field's type; `None` (an assignment that does not compile,
    /// a null, a value that does not convert) leaves the rows to the evaluator, which reports
    /// what is wrong.
    fn compiled_values(&self, ctx: &TableCtx<'_>, rows: RowSet<'_>, n: usize) -> Option<Vec<TypedFieldValues>> {
        let programs: Vec<(Rc<Program<'_>>, FieldType)> = self
            .assignments
            .iter()
            .zip(&self.fields)
            .map(|((_, expr), field)| Some((ctx.compiled(expr, self.params)?, field.ty)))
            .collect::<Option<_>>()?;
        convert_compiled(&programs, rows, n)
    }

    /// The table of the current matched table, where the target component is a column of it.
    fn dense_table(&self, ctx: &TableCtx<'_>) -> Result<Option<TableId>, Error> {
        if !matches!(ctx.slots.get(self.slot), Some(SlotReader::Dense(_))) {
            return Ok(None);
        }
        let table = self.scan.tables.get(ctx.plan_index).map(|t| t.table);
        table.map(Some).ok_or_else(|| Error::internal("matched table out of range"))
    }
}

impl<'w> Sink<'w> for UpdateSink<'_> {
    fn rows_all(&mut self, ctx: &TableCtx<'w>, n: usize) -> Result<bool, Error> {
        // A whole table whose new values all compile: one batch, written as one run.
        if let Some(table) = self.dense_table(ctx)? {
            if !self.writes_references {
                if let Some(values) = self.compiled_values(ctx, RowSet::Range(0, n), n) {
                    let at = PendingRows::TableRun(table, 0, n as u32);
                    self.targets += n;
                    self.pending.push(PendingBatch { at, entities: Vec::new(), values });
                    return Ok(true);
                }
            }
        }
        rows_in_batches(self, ctx, n)
    }

    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        let values = match self.compiled_values(ctx, RowSet::List(rows), rows.len()) {
            Some(values) => values,
            None => {
                let ev = Evaluator::new(ctx, self.params);
                let mut values = Vec::with_capacity(self.assignments.len());
                for ((_, expr), field) in self.assignments.iter().zip(&self.fields) {
                    let v = ev.eval(expr, rows)?;
                    values.push(
                        convert_vector(&v, rows.len(), self.component_name, field)
                            .map_err(|e| Error::from(e).with_span(expr.span))?,
                    );
                }
                values
            }
        };
        let entity_list =
            || rows.iter().filter_map(|&r| ctx.entities.get(r as usize).copied()).collect::<Vec<Entity>>();
        let (at, entities) = match self.dense_table(ctx)? {
            Some(table) => {
                // The entities are needed only to check reference fields.
                let entities = if self.writes_references { entity_list() } else { Vec::new() };
                let at = match as_range(rows) {
                    Some((start, end)) => PendingRows::TableRun(table, start as u32, end as u32),
                    None => PendingRows::Table(table, rows.to_vec()),
                };
                (at, entities)
            }
            None => {
                let entities = entity_list();
                (PendingRows::Sparse(entities.clone()), entities)
            }
        };
        self.targets += rows.len();
        self.pending.push(PendingBatch { at, entities, values });
        Ok(true)
    }
}

/// An UPDATE's new values, computed, converted and reference-checked, not yet written. Its
/// rows are table positions, so it must be written before any structural change (systems
/// write a batch's UPDATEs right after the batch).
pub(crate) struct StagedUpdate {
    component: ComponentId,
    /// The assigned fields, in assignment order.
    fields: Vec<usize>,
    pending: Vec<PendingBatch>,
    targets: usize,
}

impl StagedUpdate {
    /// How many rows it writes.
    pub(crate) fn len(&self) -> usize {
        self.targets
    }

    /// The component it writes.
    pub(crate) fn component(&self) -> ComponentId {
        self.component
    }

    /// Writes every batch's values into their column rows.
    pub(crate) fn apply(self, world: &mut World) -> Result<ResultSet, Error> {
        let mut writer = world.component_writer(self.component).map_err(write_failed)?;
        self.apply_to(&mut writer)
    }

    /// [`StagedUpdate::apply`] through a writer of its component (several UPDATEs of
    /// different components may be written at once, each through its own).
    pub(crate) fn apply_to(self, writer: &mut ComponentWriter<'_>) -> Result<ResultSet, Error> {
        if writer.component() != self.component {
            return Err(Error::internal("an UPDATE applied through another component's writer"));
        }
        for batch in self.pending {
            if let PendingRows::TableRun(table, start, end) = batch.at {
                // Every field of the run in one pass over the column.
                let fields = self.fields.iter().copied().zip(batch.values).collect();
                writer.write_fields_run(table, start, end, fields).map_err(write_failed)?;
                continue;
            }
            for (index, values) in self.fields.iter().zip(batch.values) {
                let at = match &batch.at {
                    PendingRows::Table(t, rows) => FieldRows::Table(*t, rows),
                    PendingRows::TableRun(table, start, end) => {
                        FieldRows::TableRun { table: *table, start: *start, end: *end }
                    }
                    PendingRows::Sparse(entities) => FieldRows::Sparse(entities),
                };
                writer.write_field_rows(*index, at, values).map_err(write_failed)?;
            }
        }
        Ok(ResultSet { columns: vec!["count".into()], rows: vec![vec![Value::Int(self.targets as i64)]] })
    }
}

/// `UPDATE C SET …`.
pub fn update(
    world: &mut World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    stage_update(world, component, assignments, scan, params)?.apply(world)
}

/// `UPDATE C SET …`, every new value computed, converted and checked but none written.
pub(crate) fn stage_update(
    world: &World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<StagedUpdate, Error> {
    let info = world.components().info(component);
    let fields: Vec<&FieldInfo> = assignments
        .iter()
        .map(|(i, _)| info.fields().get(*i).ok_or_else(|| Error::internal("field index out of range")))
        .collect::<Result<_, _>>()?;
    let slot = scan
        .slots
        .iter()
        .position(|s| s.id == component)
        .ok_or_else(|| Error::internal("UPDATE target not in its scan"))?;
    let mut sink = UpdateSink {
        scan,
        slot,
        component_name: info.name(),
        fields,
        assignments,
        params,
        pending: Vec::new(),
        targets: 0,
        writes_references: assignments.iter().any(|(i, _)| world.reference(component, *i).is_some()),
    };
    run_scan(scan, world, params, &mut sink)?;
    let (pending, targets) = (sink.pending, sink.targets);
    // References on the statement's final state: each new target live or null, no ACYCLIC loop.
    let mut refs = Vec::new();
    for batch in &pending {
        for ((index, _), values) in assignments.iter().zip(&batch.values) {
            if world.reference(component, *index).is_none() {
                continue;
            }
            if let TypedFieldValues::Entity(targets) = values {
                for (e, target) in batch.entities.iter().zip(targets) {
                    refs.push(ReferenceWrite { entity: Some(*e), component, field: *index, target: *target });
                }
            }
        }
    }
    if !refs.is_empty() {
        world.check_reference_writes(&refs)?;
    }
    Ok(StagedUpdate { component, fields: assignments.iter().map(|(i, _)| *i).collect(), pending, targets })
}

/// Converts row by row with `conv`; at the first row it refuses, the error
/// [`convert_value`] gives for that row's value.
fn rows_with<T>(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
    conv: impl Fn(&Value) -> Option<T>,
) -> Result<Vec<T>, ecsdb_engine::EngineError> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let value = v.value(i);
        match conv(&value) {
            Some(x) => out.push(x),
            None => {
                return Err(convert_value(component, field, &value).err().unwrap_or_else(|| {
                    ecsdb_engine::EngineError::Invalid(format!(
                        "cannot store {} in {component}.{}",
                        value.describe(),
                        field.name
                    ))
                }))
            }
        }
    }
    Ok(out)
}

/// The language's lossless integer conversion: ints, and floats without a fraction.
fn int_of<T: TryFrom<i128>>(v: &Value) -> Option<T> {
    let i = match *v {
        Value::Int(i) => i as i128,
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => f as i128,
        _ => return None,
    };
    T::try_from(i).ok()
}

/// The nearest f32 to `x`, unless a finite `x` rounds to infinity (its value would be lost).
fn f32_of(x: f64) -> Option<f32> {
    // The finite values that round to infinity are those from 2^128 - 2^103 up (half an f32
    // ulp above f32::MAX; the tie goes to the even neighbour, 2^128): said with two f64
    // comparisons, which vectorise, rather than by classifying both values.
    const ROUNDS_TO_INFINITY: f64 = 340_282_356_779_733_661_637_539_395_458_142_568_448.0;
    let a = x.abs();
    (!(ROUNDS_TO_INFINITY..f64::INFINITY).contains(&a)).then_some(x as f32)
}

/// The Rust type of a numeric field, with the language's conversions into it (the rules of
/// [`convert_value`]): one definition for the vector path and the compiled path. Each
/// conversion is a test and a cast, so a batch is checked in one pass and cast in another,
/// both vectorised.
trait NumericField: Copy + Default {
    /// Whether float `x` converts.
    fn fits_f64(x: f64) -> bool;
    /// `x` converted, where it fits.
    fn cast_f64(x: f64) -> Self;
    /// Whether int `x` converts.
    fn fits_i64(x: i64) -> bool;
    /// `x` converted, where it fits.
    fn cast_i64(x: i64) -> Self;
    fn values(xs: Vec<Self>) -> TypedFieldValues;

    fn from_f64(x: f64) -> Option<Self> {
        Self::fits_f64(x).then(|| Self::cast_f64(x))
    }

    fn from_i64(x: i64) -> Option<Self> {
        Self::fits_i64(x).then(|| Self::cast_i64(x))
    }

    /// Appends floats `xs` converted to `out`; whether every one converts.
    fn convert_floats(xs: &[f64], out: &mut Vec<Self>) -> bool {
        convert_all(xs, out, Self::fits_f64, Self::cast_f64)
    }

    /// Appends values already computed in f32 ([`Program::f32s`]) to `out`; whether every
    /// one is what converting its f64 value would give. Only an f32 field takes them.
    fn push_f32s(_xs: &[f32], _out: &mut Vec<Self>) -> bool {
        false
    }
}

macro_rules! int_fields {
    ($($t:ty => $variant:ident),*) => {$(
        impl NumericField for $t {
            fn fits_f64(x: f64) -> bool {
                int_of::<$t>(&Value::Float(x)).is_some()
            }
            fn cast_f64(x: f64) -> $t {
                x as $t
            }
            fn fits_i64(x: i64) -> bool {
                <$t>::try_from(x).is_ok()
            }
            fn cast_i64(x: i64) -> $t {
                x as $t
            }
            fn values(xs: Vec<$t>) -> TypedFieldValues {
                TypedFieldValues::$variant(xs)
            }
        }
    )*};
}
int_fields!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

impl NumericField for f32 {
    fn fits_f64(x: f64) -> bool {
        f32_of(x).is_some()
    }
    /// Cast first, then look for an infinity among the results (four to a vector): only a
    /// batch with one is checked value by value, which is rare.
    fn convert_floats(xs: &[f64], out: &mut Vec<f32>) -> bool {
        let at = out.len();
        sized(xs.len(), |n| out.extend(xs[..n].iter().map(|x| *x as f32)));
        let cast = &out[at..];
        let infinite = sized(cast.len(), |n| cast[..n].iter().fold(false, |inf, y| inf | y.is_infinite()));
        !infinite || xs.iter().all(|x| Self::fits_f64(*x))
    }
    /// An infinity among them may stand for a finite f64 value too large for an f32 (which
    /// does not convert): such a batch is left to the row-by-row path, which tells.
    fn push_f32s(xs: &[f32], out: &mut Vec<f32>) -> bool {
        out.extend_from_slice(xs);
        !sized(xs.len(), |n| xs[..n].iter().fold(false, |inf, y| inf | y.is_infinite()))
    }
    fn cast_f64(x: f64) -> f32 {
        x as f32
    }
    fn fits_i64(x: i64) -> bool {
        f32_of(x as f64).is_some()
    }
    fn cast_i64(x: i64) -> f32 {
        x as f64 as f32
    }
    fn values(xs: Vec<f32>) -> TypedFieldValues {
        TypedFieldValues::F32(xs)
    }
}

impl NumericField for f64 {
    fn fits_f64(_: f64) -> bool {
        true
    }
    fn cast_f64(x: f64) -> f64 {
        x
    }
    fn fits_i64(_: i64) -> bool {
        true
    }
    fn cast_i64(x: i64) -> f64 {
        x as f64
    }
    fn values(xs: Vec<f64>) -> TypedFieldValues {
        TypedFieldValues::F64(xs)
    }
}

/// Appends every value cast with `cast` to `out`; returns whether every one `fits`. Two
/// passes with no early exit, so both vectorise (a failure is reported by the row-by-row path).
fn convert_all<S: Copy, T>(xs: &[S], out: &mut Vec<T>, fits: impl Fn(S) -> bool, cast: impl Fn(S) -> T) -> bool {
    let ok = xs.iter().fold(true, |ok, x| ok & fits(*x));
    out.extend(xs.iter().map(|x| cast(*x)));
    ok
}

/// A float or int vector without nulls, converted without building values.
fn numeric_fast<T: NumericField>(v: &Vector<'_>) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(v.len());
    let ok = match v {
        Vector::Float(p) if p.valid.is_none() => T::convert_floats(&p.values, &mut out),
        Vector::Int(p) if p.valid.is_none() => convert_all(&p.values, &mut out, T::fits_i64, T::cast_i64),
        _ => false,
    };
    ok.then_some(out)
}

/// A numeric vector converted into a numeric field's type; the row-by-row path reports the
/// first value that does not convert.
fn numeric_field<T: NumericField>(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
) -> Result<TypedFieldValues, ecsdb_engine::EngineError> {
    Ok(T::values(match numeric_fast::<T>(v) {
        Some(xs) => xs,
        None => rows_with(v, n, component, field, |x| match *x {
            Value::Int(i) => T::from_i64(i),
            Value::Float(f) => T::from_f64(f),
            _ => None,
        })?,
    }))
}

/// New values of one numeric field being computed chunk by chunk, in the field's type.
trait StagedNumbers {
    /// Converts and appends a chunk's values.
    fn push(&mut self, chunk: Numbers<'_>);
    /// Appends a chunk's values computed in f32 ([`NumericField::push_f32s`]).
    fn push_f32s(&mut self, xs: &[f32]);
    /// The values, if every one converted.
    fn finish(self: Box<Self>) -> Option<TypedFieldValues>;
}

struct Staged<T> {
    values: Vec<T>,
    ok: bool,
}

impl<T: NumericField> StagedNumbers for Staged<T> {
    fn push(&mut self, chunk: Numbers<'_>) {
        self.ok &= match chunk {
            Numbers::Floats(xs) => T::convert_floats(xs, &mut self.values),
            Numbers::Ints(xs) => convert_all(xs, &mut self.values, T::fits_i64, T::cast_i64),
        };
    }

    fn push_f32s(&mut self, xs: &[f32]) {
        self.ok &= T::push_f32s(xs, &mut self.values);
    }

    fn finish(self: Box<Self>) -> Option<TypedFieldValues> {
        self.ok.then(|| T::values(self.values))
    }
}

fn staged<T: NumericField + 'static>(n: usize) -> Box<dyn StagedNumbers> {
    Box::new(Staged::<T> { values: Vec::with_capacity(n), ok: true })
}

/// Room for `n` new values of a numeric field; `None` for other field types.
fn staged_numbers(ty: FieldType, n: usize) -> Option<Box<dyn StagedNumbers>> {
    Some(match ty {
        FieldType::I8 => staged::<i8>(n),
        FieldType::I16 => staged::<i16>(n),
        FieldType::I32 => staged::<i32>(n),
        FieldType::I64 => staged::<i64>(n),
        FieldType::U8 => staged::<u8>(n),
        FieldType::U16 => staged::<u16>(n),
        FieldType::U32 => staged::<u32>(n),
        FieldType::U64 => staged::<u64>(n),
        FieldType::F32 => staged::<f32>(n),
        FieldType::F64 => staged::<f64>(n),
        _ => return None,
    })
}

/// Every program's values over `rows` (`n` of them) converted into its field's type: chunk
/// by chunk, every program on a chunk before the next chunk, so the columns they read are
/// brought into cache once. `None` where a program is not numeric, a row is null or a value
/// does not convert.
fn convert_compiled(
    programs: &[(Rc<Program<'_>>, FieldType)],
    rows: RowSet<'_>,
    n: usize,
) -> Option<Vec<TypedFieldValues>> {
    let mut staged: Vec<Box<dyn StagedNumbers>> =
        programs.iter().map(|(_, ty)| staged_numbers(*ty, n)).collect::<Option<_>>()?;
    // An f32 field's values computed in f32 where that gives the same f32s.
    let in_f32: Vec<bool> = programs.iter().map(|(p, ty)| *ty == FieldType::F32 && p.exact_in_f32()).collect();
    let mut buffers = ChunkBuffers::default();
    rows.for_each_chunk(|chunk| {
        for (((program, _), out), &in_f32) in programs.iter().zip(&mut staged).zip(&in_f32) {
            if in_f32 {
                if let Some(done) = program.f32s(chunk, &mut buffers, |xs| out.push_f32s(xs)) {
                    done?;
                    continue;
                }
            }
            program.numbers(chunk, &mut buffers, |numbers| out.push(numbers))?;
        }
        Ok::<(), Bail>(())
    })
    .ok()?;
    staged.into_iter().map(|s| s.finish()).collect()
}

/// A vector's values converted into a field's type, checked as [`convert_value`] checks.
pub fn convert_vector(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
) -> Result<TypedFieldValues, ecsdb_engine::EngineError> {
    Ok(match field.ty {
        FieldType::Bool => TypedFieldValues::Bool(match v {
            Vector::Bool(p) if p.valid.is_none() => p.values.clone(),
            _ => rows_with(v, n, component, field, |x| if let Value::Bool(b) = x { Some(*b) } else { None })?,
        }),
        FieldType::I8 => numeric_field::<i8>(v, n, component, field)?,
        FieldType::I16 => numeric_field::<i16>(v, n, component, field)?,
        FieldType::I32 => numeric_field::<i32>(v, n, component, field)?,
        FieldType::I64 => numeric_field::<i64>(v, n, component, field)?,
        FieldType::U8 => numeric_field::<u8>(v, n, component, field)?,
        FieldType::U16 => numeric_field::<u16>(v, n, component, field)?,
        FieldType::U32 => numeric_field::<u32>(v, n, component, field)?,
        FieldType::U64 => numeric_field::<u64>(v, n, component, field)?,
        FieldType::F32 => numeric_field::<f32>(v, n, component, field)?,
        FieldType::F64 => numeric_field::<f64>(v, n, component, field)?,
        FieldType::String => TypedFieldValues::Str(rows_with(v, n, component, field, |x| match x {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        })?),
        FieldType::Entity => TypedFieldValues::Entity(match v {
            Vector::Entity(p) => (0..n).map(|i| p.get(i).unwrap_or(Entity::NULL)).collect(),
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Entity(e) => Some(*e),
                Value::Null => Some(Entity::NULL),
                _ => None,
            })?,
        }),
        FieldType::Vec2 => TypedFieldValues::Vec2(match v {
            Vector::Vec2(p) if p.valid.is_none() => p.values.iter().map(|[a, b]| [*a as f32, *b as f32]).collect(),
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Vec2([a, b]) => Some([*a as f32, *b as f32]),
                _ => None,
            })?,
        }),
        FieldType::Vec3 => TypedFieldValues::Vec3(match v {
            Vector::Vec3(p) if p.valid.is_none() => {
                p.values.iter().map(|[a, b, c]| [*a as f32, *b as f32, *c as f32]).collect()
            }
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Vec3([a, b, c]) => Some([*a as f32, *b as f32, *c as f32]),
                _ => None,
            })?,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole tables of compiled values: written when every row converts; when one row of
    /// one assignment does not, the statement fails with the evaluator's error and nothing
    /// changes.
    #[test]
    fn compiled_updates_convert_every_row_or_change_nothing() {
        use crate::Database;
        use ecsdb_engine::ComponentDef;
        let mut world = World::new();
        world.define_component(&ComponentDef::new("C", &[("v", FieldType::I8), ("f", FieldType::F32)])).unwrap();
        let es: Vec<Entity> = (0..300)
            .map(|i| {
                let fields = [("v", Value::Int(i % 100)), ("f", Value::Float(i as f64 / 4.0))];
                world.spawn_values(&[("C", &fields)]).unwrap()
            })
            .collect();
        let mut db = Database::from_world(world);
        let snapshot = |db: &Database| -> Vec<(Value, Value)> {
            es.iter()
                .map(|e| (db.world().get_field(*e, "C", "v").unwrap(), db.world().get_field(*e, "C", "f").unwrap()))
                .collect()
        };
        let before = snapshot(&db);
        for bad in [
            "UPDATE C SET f = C.f + 1, v = C.v * 2",
            "UPDATE C SET v = C.v + 1, f = C.f * 1e38",
            "UPDATE C SET v = C.f",
        ] {
            let err = db.execute(bad).expect_err(bad);
            assert!(err.span.is_some(), "{bad}: {err:?}");
            assert_eq!(snapshot(&db), before, "{bad} changed something");
        }
        db.execute("UPDATE C SET v = C.v - 1, f = C.f / 2 + C.v").unwrap();
        for (i, e) in es.iter().enumerate() {
            let (v, f) = ((i % 100) as i64, i as f64 / 4.0);
            assert_eq!(db.world().get_field(*e, "C", "v").unwrap(), Value::Int(v - 1));
            assert_eq!(db.world().get_field(*e, "C", "f").unwrap(), Value::Float(((f / 2.0 + v as f64) as f32) as f64));
        }
        // Infinity computed in f64 stays infinity in f32 (no finite value is lost): the
        // batches holding one are checked value by value, and pass.
        db.execute("UPDATE C SET f = C.f * 1e300 * 1e300").unwrap();
        let infinite =
            es.iter().filter(|e| db.world().get_field(**e, "C", "f").unwrap() == Value::Float(f64::INFINITY));
        assert_eq!(infinite.count(), es.len() - 1, "every row but the one at 0");
    }

    /// The comparison form of `f32_of` agrees with converting and looking at the result.
    #[test]
    fn f32_overflow_is_the_values_that_round_to_infinity() {
        let limit = (2f64.powi(128) - 2f64.powi(103)).abs();
        let below = f64::from_bits(limit.to_bits() - 1);
        for x in
            [0.0, -0.0, 1.5, f32::MAX as f64, below, limit, 1e39, 1e300, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE]
        {
            for x in [x, -x] {
                let y = x as f32;
                let lost = x.is_finite() && y.is_infinite();
                assert_eq!(f32_of(x).is_none(), lost, "{x:e}");
            }
        }
    }

    /// The typed conversions accept and refuse exactly what `convert_value` does.
    #[test]
    fn conversions_match_convert_value() {
        let values = [
            Value::Int(3),
            Value::Int(-1),
            Value::Int(300),
            Value::Int(i64::MAX),
            Value::Float(2.0),
            Value::Float(2.5),
            Value::Float(1e40),
            Value::Float(f64::NAN),
            Value::Float(-0.0),
            Value::Null,
            Value::Bool(true),
            Value::Str("s".into()),
            Value::Vec2([1.0, 2.0]),
            Value::Vec3([1.0, 2.0, 3.0]),
        ];
        let types = [
            FieldType::Bool,
            FieldType::I8,
            FieldType::U8,
            FieldType::I32,
            FieldType::U64,
            FieldType::I64,
            FieldType::F32,
            FieldType::F64,
            FieldType::String,
            FieldType::Entity,
            FieldType::Vec2,
            FieldType::Vec3,
        ];
        for ty in types {
            let field = FieldInfo { name: "f".into(), ty, offset: 0 };
            for v in &values {
                let want = convert_value("C", &field, v).is_ok();
                // As a typed vector of one row and as a constant.
                for vector in [Vector::from_values(vec![v.clone()]), Vector::Scalar(v.clone(), 1)] {
                    let got = convert_vector(&vector, 1, "C", &field);
                    assert_eq!(got.is_ok(), want, "{v:?} into {ty:?} via {vector:?}: {got:?}");
                }
            }
        }
    }
}
