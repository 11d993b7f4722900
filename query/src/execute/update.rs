//! `UPDATE C SET f = expr, …`, column by column.
//!
//! For each batch of target rows of each matched table, every assigned expression is
//! evaluated into a typed vector and converted into the field's Rust type
//! ([`TypedFieldValues`]), checking each value as [`ecsdb_engine::convert_value`] would (same rules, same
//! errors). Only when every batch of every table has converted does anything change: each
//! batch's values are then written straight into their column rows
//! ([`World::write_field_rows`]), which stamps the changed ticks that secondary indexes and
//! change detection read. Every target's new values are computed from the state before the
//! statement, and a failing statement changes nothing.

use std::rc::Rc;

use ecsdb_engine::storage::TableId;
use ecsdb_engine::{
    ComponentId, ComponentWriter, Entity, FieldInfo, FieldRows, FieldType, ReferenceWrite, TypedFieldValues, Value,
    World,
};

use crate::error::Error;
use crate::execute::convert::{StagingBuffers, convert_compiled, convert_vector};
use crate::execute::outcome::{count, write_failed};
use crate::execute::rewrite::InPlace;
use crate::execute::scan::{Sink, SlotReader, TableCtx, rows_in_batches, run_scan};
use crate::expr::Expr;
use crate::expr::compiled::{Program, RowSet, as_range};
use crate::expr::{Evaluator, Leaves};
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
    buffers: &'a StagingBuffers,
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
        convert_compiled(&programs, rows, n, self.buffers)
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
        if let Some(table) = self.dense_table(ctx)?
            && !self.writes_references
            && let Some(values) = self.compiled_values(ctx, RowSet::Range(0, n), n)
        {
            let at = PendingRows::TableRun(table, 0, n as u32);
            self.targets += n;
            self.pending.push(PendingBatch { at, entities: Vec::new(), values });
            return Ok(true);
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

/// An UPDATE's new values, computed, converted and reference-checked, not yet written; or
/// one to be rewritten in place when it is applied. Its rows are table positions, so it must
/// be written before any structural change (systems write a batch's UPDATEs right after the
/// batch).
pub(crate) struct StagedUpdate {
    component: ComponentId,
    /// The assigned fields, in assignment order.
    fields: Vec<usize>,
    pending: Vec<PendingBatch>,
    targets: usize,
    /// Where the vectors go once written, for the statement's next run.
    buffers: StagingBuffers,
    /// Set (and `pending` empty) when the UPDATE is rewritten in place as it is applied.
    deferred: Option<Box<Deferred>>,
}

/// An UPDATE rewritten in place when it is applied ([`InPlace`]), with what the general path
/// needs when a value refuses (to report it, or to store values the rewrite does not).
struct Deferred {
    in_place: InPlace,
    assignments: Vec<(usize, Expr)>,
    scan: ScanPlan,
    params: Vec<Value>,
}

impl StagedUpdate {
    /// How many rows it writes.
    pub(crate) fn len(&self) -> usize {
        self.targets
    }

    /// Whether it is rewritten in place when applied.
    pub(crate) fn is_in_place(&self) -> bool {
        self.deferred.is_some()
    }

    /// The component it writes.
    pub(crate) fn component(&self) -> ComponentId {
        self.component
    }

    /// Writes every batch's values into their column rows (or rewrites the rows in place).
    pub(crate) fn apply(self, world: &mut World) -> Result<ResultSet, Error> {
        if let Some(d) = self.deferred {
            if d.in_place.run(world, &self.buffers)? {
                return Ok(count(self.targets));
            }
            let Deferred { assignments, scan, params, .. } = *d;
            let general = stage_update(world, self.component, &assignments, &scan, &params, &self.buffers, false)?;
            return general.apply(world);
        }
        let mut writer = world.component_writer(self.component).map_err(write_failed)?;
        self.apply_to(&mut writer)
    }

    /// [`StagedUpdate::apply`] through a writer of its component (several UPDATEs of
    /// different components may be written at once, each through its own).
    pub(crate) fn apply_to(self, writer: &mut ComponentWriter<'_>) -> Result<ResultSet, Error> {
        if writer.component() != self.component {
            return Err(Error::internal("an UPDATE applied through another component's writer"));
        }
        if self.deferred.is_some() {
            return Err(Error::internal("an UPDATE rewritten in place is applied to the world, not a writer"));
        }
        for batch in self.pending {
            if let PendingRows::TableRun(table, start, end) = batch.at {
                // Every field of the run in one pass over the column.
                let fields = self.fields.iter().copied().zip(batch.values).collect();
                let spent = writer.write_fields_run(table, start, end, fields).map_err(write_failed)?;
                self.buffers.give(spent);
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
        Ok(count(self.targets))
    }
}

/// `UPDATE C SET …`, staging its new values in `buffers` (kept by a prepared statement for
/// its next run).
pub fn update(
    world: &mut World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
    buffers: &StagingBuffers,
) -> Result<ResultSet, Error> {
    stage_update(world, component, assignments, scan, params, buffers, true)?.apply(world)
}

/// `UPDATE C SET …`, every new value computed, converted and checked but none written. With
/// `in_place`, an UPDATE that can be rewritten in place ([`InPlace::plan`]) computes nothing
/// yet: it is rewritten when applied to the world, which must then be the world it was staged
/// on, unchanged in the columns it reads (not applied through a [`ComponentWriter`]).
pub(crate) fn stage_update(
    world: &World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
    buffers: &StagingBuffers,
    in_place: bool,
) -> Result<StagedUpdate, Error> {
    if in_place && let Some(plan) = InPlace::plan(world, component, assignments, scan, params) {
        let deferred =
            Deferred { in_place: plan, assignments: assignments.to_vec(), scan: scan.clone(), params: params.to_vec() };
        return Ok(StagedUpdate {
            component,
            fields: assignments.iter().map(|(i, _)| *i).collect(),
            pending: Vec::new(),
            targets: deferred.in_place.rows(),
            buffers: buffers.clone(),
            deferred: Some(Box::new(deferred)),
        });
    }
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
        buffers,
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
    let fields = assignments.iter().map(|(i, _)| *i).collect();
    Ok(StagedUpdate { component, fields, pending, targets, buffers: buffers.clone(), deferred: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prepared UPDATE stages its next run's values in the vectors of the last one, and
    /// writes the same values as with fresh ones.
    #[test]
    fn a_prepared_update_stages_in_the_vectors_of_its_last_run() {
        use crate::Database;
        use ecsdb_engine::ComponentDef;
        let mut world = World::new();
        world.define_component(&ComponentDef::new("C", &[("v", FieldType::F32), ("w", FieldType::I32)])).unwrap();
        let es: Vec<Entity> = (0..500)
            .map(|i| world.spawn_values(&[("C", &[("v", Value::Float(i as f64)), ("w", Value::Int(i))])]).unwrap())
            .collect();
        let mut db = Database::from_world(world);
        let mut p = db.prepare("UPDATE C SET v = C.v + 0.5, w = C.w - 1").unwrap();
        assert_eq!(p.staging_buffers_kept(), Some(0));
        for run in 1..=3 {
            p.execute(&mut db, ()).unwrap();
            assert_eq!(p.staging_buffers_kept(), Some(2), "run {run}: one vector a field, kept");
            for (i, e) in es.iter().enumerate() {
                let (v, w) = (i as f64 + 0.5 * run as f64, i as i64 - run);
                assert_eq!(db.world().get_field(*e, "C", "v").unwrap(), Value::Float(v));
                assert_eq!(db.world().get_field(*e, "C", "w").unwrap(), Value::Int(w));
            }
        }
    }

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
            let err = db.execute(bad, ()).expect_err(bad);
            assert!(err.span.is_some(), "{bad}: {err:?}");
            assert_eq!(snapshot(&db), before, "{bad} changed something");
        }
        db.execute("UPDATE C SET v = C.v - 1, f = C.f / 2 + C.v", ()).unwrap();
        for (i, e) in es.iter().enumerate() {
            let (v, f) = ((i % 100) as i64, i as f64 / 4.0);
            assert_eq!(db.world().get_field(*e, "C", "v").unwrap(), Value::Int(v - 1));
            assert_eq!(db.world().get_field(*e, "C", "f").unwrap(), Value::Float(((f / 2.0 + v as f64) as f32) as f64));
        }
        // Infinity computed in f64 stays infinity in f32 (no finite value is lost): the
        // batches holding one are checked value by value, and pass.
        db.execute("UPDATE C SET f = C.f * 1e300 * 1e300", ()).unwrap();
        let infinite =
            es.iter().filter(|e| db.world().get_field(**e, "C", "f").unwrap() == Value::Float(f64::INFINITY));
        assert_eq!(infinite.count(), es.len() - 1, "every row but the one at 0");
    }

    /// Whole tables longer than a block of the run path: every block's values are the
    /// evaluator's (f32 fields computed straight into their vectors, an int field chunk by
    /// chunk, side by side), and a value that does not convert in the last block leaves every
    /// earlier block unwritten.
    #[test]
    fn long_runs_convert_block_by_block_or_change_nothing() {
        use crate::Database;
        use ecsdb_engine::ComponentDef;
        let n = 2 * 1024 + 300;
        let mut world = World::new();
        let fields = [("f", FieldType::F32), ("g", FieldType::F32), ("v", FieldType::I16)];
        world.define_component(&ComponentDef::new("C", &fields)).unwrap();
        let es: Vec<Entity> = (0..n)
            .map(|i| {
                let fields = [
                    ("f", Value::Float(i as f64 / 3.0)),
                    ("g", Value::Float(1.0 - i as f64 / 7.0)),
                    ("v", Value::Int(i as i64 % 1000)),
                ];
                world.spawn_values(&[("C", &fields)]).unwrap()
            })
            .collect();
        let mut db = Database::from_world(world);
        let read = |db: &Database, e: Entity, f: &str| db.world().get_field(e, "C", f).unwrap().as_f64().unwrap();
        let before: Vec<[f64; 3]> =
            es.iter().map(|e| [read(&db, *e, "f"), read(&db, *e, "g"), read(&db, *e, "v")]).collect();
        // From row 2,127 on (the third block), `f * 4.8e35` overflows an f32.
        let err = db.execute("UPDATE C SET g = C.g + C.f, f = C.f * 4.8e35", ()).expect_err("out of range");
        assert!(err.span.is_some(), "{err:?}");
        let after: Vec<[f64; 3]> =
            es.iter().map(|e| [read(&db, *e, "f"), read(&db, *e, "g"), read(&db, *e, "v")]).collect();
        assert_eq!(after, before, "a failed UPDATE changed something");
        db.execute("UPDATE C SET f = C.f * 0.5 + C.g, v = C.v - 3, g = min(C.g, C.f + 1)", ()).unwrap();
        for (e, [f, g, v]) in es.iter().zip(&before) {
            let (f32_of, (f, g)) = (|x: f64| (x as f32) as f64, (*f, *g));
            assert_eq!(read(&db, *e, "f"), f32_of(f * 0.5 + g), "{e:?}");
            assert_eq!(read(&db, *e, "g"), f32_of(g.min(f + 1.0)), "{e:?}");
            assert_eq!(read(&db, *e, "v"), v - 3.0, "{e:?}");
        }
    }
}
