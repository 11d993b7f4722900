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

use ecsdb_engine::{
    convert_value, ComponentId, Entity, FieldInfo, FieldRows, FieldType, ReferenceWrite, TypedFieldValues, Value, World,
};

use crate::error::Error;
use crate::execute::mutate::write_failed;
use crate::execute::scan::{run_scan, Sink, SlotReader, TableCtx};
use crate::expr::compiled::as_range;
use crate::expr::{Evaluator, Vector};
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

impl<'w> Sink<'w> for UpdateSink<'_> {
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        let ev = Evaluator::new(ctx, self.params);
        let mut values = Vec::with_capacity(self.assignments.len());
        for ((_, expr), field) in self.assignments.iter().zip(&self.fields) {
            let v = ev.eval(expr, rows)?;
            values.push(
                convert_vector(&v, rows.len(), self.component_name, field)
                    .map_err(|e| Error::from(e).with_span(expr.span))?,
            );
        }
        let entity_list =
            || rows.iter().filter_map(|&r| ctx.entities.get(r as usize).copied()).collect::<Vec<Entity>>();
        let (at, entities) = match ctx.slots.get(self.slot) {
            Some(SlotReader::Dense(_)) => {
                let table = self.scan.tables.get(ctx.plan_index).map(|t| t.table);
                let table = table.ok_or_else(|| Error::internal("matched table out of range"))?;
                // The entities are needed only to check reference fields.
                let entities = if self.writes_references { entity_list() } else { Vec::new() };
                let at = match as_range(rows) {
                    Some((start, end)) => PendingRows::TableRun(table, start as u32, end as u32),
                    None => PendingRows::Table(table, rows.to_vec()),
                };
                (at, entities)
            }
            _ => {
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

    /// Writes every batch's values into their column rows.
    pub(crate) fn apply(self, world: &mut World) -> Result<ResultSet, Error> {
        for batch in self.pending {
            for (index, values) in self.fields.iter().zip(batch.values) {
                let at = match &batch.at {
                    PendingRows::Table(t, rows) => FieldRows::Table(*t, rows),
                    PendingRows::TableRun(table, start, end) => {
                        FieldRows::TableRun { table: *table, start: *start, end: *end }
                    }
                    PendingRows::Sparse(entities) => FieldRows::Sparse(entities),
                };
                world.write_field_rows(self.component, *index, at, values).map_err(write_failed)?;
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

fn f32_of(x: f64) -> Option<f32> {
    let y = x as f32;
    // Rounding to the nearest f32 is expected; overflowing to infinity loses the value.
    (!(x.is_finite() && y.is_infinite())).then_some(y)
}

/// Typed fast paths: a float or int vector without nulls converts without building values.
/// The loops convert every value and remember whether any failed, with no early exit, so they
/// write exact-size storage and vectorise; a failure is then reported by the row-by-row path.
fn numeric_fast<T: Default>(
    v: &Vector<'_>,
    float: impl Fn(f64) -> Option<T>,
    int: impl Fn(i64) -> Option<T>,
) -> Option<Vec<T>> {
    fn all<S: Copy, T: Default>(xs: &[S], f: impl Fn(S) -> Option<T>) -> Option<Vec<T>> {
        let mut ok = true;
        let out: Vec<T> = xs
            .iter()
            .map(|x| {
                let r = f(*x);
                ok &= r.is_some();
                r.unwrap_or_default()
            })
            .collect();
        ok.then_some(out)
    }
    match v {
        Vector::Float(p) if p.valid.is_none() => all(&p.values, float),
        Vector::Int(p) if p.valid.is_none() => all(&p.values, int),
        _ => None,
    }
}

/// A vector's values converted into a field's type, checked as [`convert_value`] checks.
pub fn convert_vector(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
) -> Result<TypedFieldValues, ecsdb_engine::EngineError> {
    macro_rules! int_field {
        ($variant:ident, $t:ty) => {{
            let fast = numeric_fast(v, |f| int_of::<$t>(&Value::Float(f)), |i| <$t>::try_from(i).ok());
            TypedFieldValues::$variant(match fast {
                Some(xs) => xs,
                None => rows_with(v, n, component, field, int_of::<$t>)?,
            })
        }};
    }
    Ok(match field.ty {
        FieldType::Bool => TypedFieldValues::Bool(match v {
            Vector::Bool(p) if p.valid.is_none() => p.values.clone(),
            _ => rows_with(v, n, component, field, |x| if let Value::Bool(b) = x { Some(*b) } else { None })?,
        }),
        FieldType::I8 => int_field!(I8, i8),
        FieldType::I16 => int_field!(I16, i16),
        FieldType::I32 => int_field!(I32, i32),
        FieldType::I64 => int_field!(I64, i64),
        FieldType::U8 => int_field!(U8, u8),
        FieldType::U16 => int_field!(U16, u16),
        FieldType::U32 => int_field!(U32, u32),
        FieldType::U64 => int_field!(U64, u64),
        FieldType::F32 => TypedFieldValues::F32(match numeric_fast(v, f32_of, |i| f32_of(i as f64)) {
            Some(xs) => xs,
            None => rows_with(v, n, component, field, |x| x.as_f64().and_then(f32_of))?,
        }),
        FieldType::F64 => TypedFieldValues::F64(match numeric_fast(v, Some, |i| Some(i as f64)) {
            Some(xs) => xs,
            None => rows_with(v, n, component, field, Value::as_f64)?,
        }),
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
