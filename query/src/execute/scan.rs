//! Scanning matched tables: column readers, selection vectors, column kernels, sparse joins
//! and the access paths.
//!
//! For each matched table the scan starts from every row (or the rows the access path names),
//! applies the sparse presence checks, then each filter step in turn, narrowing a selection
//! vector of row numbers. A [`FilterStep::Compare`] runs as a tight loop over one field of one
//! column (`scan/kernels.rs`): no `Value` is built and there is no per-row dispatch. The
//! surviving rows go to a [`Sink`] in batches.

use std::cell::RefCell;
use std::rc::Rc;

use ecsdb_engine::index::IndexPredicate;
use ecsdb_engine::storage::{ArchetypeTable, FieldPlace, FieldView, SparseSet, TableId};
use ecsdb_engine::{ChangeWindow, ComponentId, Entity, FieldType, Value, World};
use roaring::RoaringBitmap;

use crate::error::{Error, ErrorKind};
use crate::execute::pace;
use crate::expr::Expr;
use crate::expr::compiled::Program;
use crate::expr::{Evaluator, Leaves, eval_error};
use crate::plan::physical::{
    Access, FilterStep, IndexCount, PhysicalSlot, RowCheck, ScanPlan, SlotSource, TableFilter,
};

mod kernels;

pub use kernels::compare_kernel;

/// Rows handed to a sink at a time (bounds the memory of evaluated columns).
pub const BATCH: usize = 1024;

/// How one slot reads in the current table.
pub enum SlotReader<'w> {
    /// The table lacks it: reads null.
    Absent,
    /// A column of the table: one reader per field.
    Dense(Vec<FieldView<'w>>),
    /// A sparse set: per entity, its dense row, then the readers.
    Sparse(&'w SparseSet, Vec<FieldView<'w>>),
}

/// Everything needed to read the rows of one matched table.
pub struct TableCtx<'w> {
    /// The table.
    pub table: &'w ArchetypeTable,
    /// The entity of each row.
    pub entities: &'w [Entity],
    /// Per slot, how it reads here.
    pub slots: Vec<SlotReader<'w>>,
    /// The plan's slots (names and fields, for errors).
    pub meta: &'w [PhysicalSlot],
    /// The position of this table in the plan's matched tables.
    pub plan_index: usize,
    /// The world.
    pub world: &'w World,
    /// The answers of the function indexes the statement calls.
    pub function_sets: Rc<FunctionSets<'w>>,
    /// The rows `changed(C)` and `added(C)` count as new in this run.
    pub changes: ChangeWindow,
    /// Expressions compiled against this table's columns, by the address of the plan's
    /// expression (`None`: it does not compile); see [`TableCtx::compiled`].
    pub(crate) compiled: CompiledCache<'w>,
}

impl TableCtx<'_> {
    /// Whether field `field` of slot `slot` is a declared reference: its handles to despawned
    /// entities (left by `ON DELETE NO ACTION`) read as null.
    pub(crate) fn is_reference(&self, slot: usize, field: usize) -> bool {
        self.meta.get(slot).is_some_and(|m| self.world.reference(m.id, field).is_some())
    }

    /// Whether `reader` (of field `field` of slot `slot`) reads a reference, whose values
    /// must go through the leaves to read dangling handles as null.
    pub(crate) fn reads_reference(&self, reader: &FieldView<'_>, slot: usize, field: usize) -> bool {
        matches!(reader, FieldView::Entity(_)) && self.is_reference(slot, field)
    }
}

/// The compiled programs of a table's expressions (see [`crate::expr::compiled`]).
pub(crate) type CompiledCache<'w> = RefCell<Vec<(usize, Option<Rc<Program<'w>>>)>>;

/// The maintained answers of function indexes (`visible(Position)`), fetched once per
/// statement on first use and shared by its tables: a call reads the index's bitmap rather
/// than running the Rust predicate, which the index re-evaluates only for changed rows.
pub struct FunctionSets<'w> {
    world: &'w World,
    sets: RefCell<Vec<(String, Option<Rc<RoaringBitmap>>)>>,
}

impl<'w> FunctionSets<'w> {
    /// An empty cache for one statement over `world`.
    pub fn new(world: &'w World) -> Rc<FunctionSets<'w>> {
        Rc::new(FunctionSets { world, sets: RefCell::new(Vec::new()) })
    }

    /// The entities (by index) for which function index `name` holds; `None` when there is
    /// no such index (dropped since the statement was prepared).
    pub(crate) fn answer(&self, name: &str) -> Option<Rc<RoaringBitmap>> {
        if let Some((_, set)) = self.sets.borrow().iter().find(|(n, _)| n == name) {
            return set.clone();
        }
        let pred = IndexPredicate::Function { name: name.to_string() };
        let set = match self.world.index_answer(name, &pred) {
            Ok(Some(answer)) => Some(Rc::new(answer.into_set(None))),
            _ => None,
        };
        self.sets.borrow_mut().push((name.to_string(), set.clone()));
        set
    }
}

impl<'w> TableCtx<'w> {
    /// Builds the readers of a matched table.
    pub fn new(
        world: &'w World,
        plan: &'w ScanPlan,
        plan_index: usize,
        function_sets: &Rc<FunctionSets<'w>>,
    ) -> Option<TableCtx<'w>> {
        let tp = plan.tables.get(plan_index)?;
        let table = world.tables().get(tp.table.index())?;
        let slots = plan
            .slots
            .iter()
            .zip(&tp.sources)
            .map(|(slot, source)| match source {
                SlotSource::Absent => SlotReader::Absent,
                SlotSource::Column => SlotReader::Dense(
                    (0..slot.fields.len())
                        .map(|f| FieldView::new(world, FieldPlace::Table(tp.table), slot.id, f))
                        .collect(),
                ),
                SlotSource::Sparse => match world.sparse_set(slot.id) {
                    Some(set) => SlotReader::Sparse(
                        set,
                        (0..slot.fields.len()).map(|f| FieldView::new(world, FieldPlace::Sparse, slot.id, f)).collect(),
                    ),
                    None => SlotReader::Absent,
                },
            })
            .collect();
        Some(TableCtx {
            table,
            entities: table.entities(),
            slots,
            meta: &plan.slots,
            plan_index,
            world,
            function_sets: function_sets.clone(),
            changes: plan.change_window(),
            compiled: RefCell::new(Vec::new()),
        })
    }

    /// The reader of a field of a slot stored in a column of this table.
    #[inline]
    pub fn dense_reader(&self, slot: usize, field: usize) -> Option<&FieldView<'w>> {
        match self.slots.get(slot) {
            Some(SlotReader::Dense(readers)) => readers.get(field),
            _ => None,
        }
    }

    /// Reports a u64 field value above i64::MAX read by `e`.
    pub fn out_of_range(&self, e: &Expr, slot: usize, field: usize, v: u64) -> Error {
        out_of_range(e, self.meta, slot, field, v)
    }

    /// The row where the slot's values are for table row `row`, and its field readers; `None`
    /// where the entity lacks the component.
    #[inline]
    pub fn locate(&self, slot: usize, row: u32) -> Option<(usize, &[FieldView<'w>])> {
        match self.slots.get(slot)? {
            SlotReader::Absent => None,
            SlotReader::Dense(fields) => Some((row as usize, fields)),
            SlotReader::Sparse(set, fields) => {
                let e = *self.entities.get(row as usize)?;
                set.row(e).map(|r| (r, fields.as_slice()))
            }
        }
    }

    /// Whether the entity of row `row` has the slot's component.
    #[inline]
    pub fn has(&self, slot: usize, row: u32) -> bool {
        match self.slots.get(slot) {
            Some(SlotReader::Dense(_)) => true,
            Some(SlotReader::Sparse(set, _)) => self.entities.get(row as usize).is_some_and(|e| set.contains(*e)),
            _ => false,
        }
    }
}

pub(crate) fn out_of_range(e: &Expr, meta: &[PhysicalSlot], slot: usize, field: usize, v: u64) -> Error {
    let name = meta
        .get(slot)
        .map(|m| format!("{}.{}", m.name, m.fields.get(field).map_or("?", |f| f.name.as_str())))
        .unwrap_or_default();
    Error::new(ErrorKind::Type, format!("value {v} of '{name}' (u64) is out of range for int")).with_span(e.span)
}

/// The rows of a table that pass so far.
#[derive(Clone, Debug)]
pub enum Selection {
    /// Rows `0..n`.
    All(usize),
    /// These rows, ascending.
    Rows(Vec<u32>),
}

impl Selection {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Selection::All(n) => *n,
            Selection::Rows(r) => r.len(),
        }
    }

    /// Whether no row passes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(test)]
    /// The rows as a list.
    pub fn into_rows(self) -> Vec<u32> {
        match self {
            Selection::All(n) => (0..n as u32).collect(),
            Selection::Rows(r) => r,
        }
    }

    /// Keeps the rows for which `keep(row)` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(u32) -> bool) {
        match self {
            Selection::All(n) => {
                let rows: Vec<u32> = (0..*n as u32).filter(|&r| keep(r)).collect();
                *self = Selection::Rows(rows);
            }
            Selection::Rows(rows) => rows.retain(|&r| keep(r)),
        }
    }
}

/// Receives the rows a scan selects.
pub trait Sink<'w> {
    /// Whether the sink only counts rows (then [`Sink::count`] is called instead of
    /// [`Sink::rows`] and no row list is built where none exists).
    fn count_only(&self) -> bool {
        false
    }

    /// Adds `n` rows (count-only sinks).
    fn count(&mut self, _n: usize) {}

    /// `n` rows of the next table are about to arrive (sinks that keep rows reserve room).
    fn expect_rows(&mut self, _n: usize) {}

    /// Takes a batch of selected rows of one table; returns `false` to stop the scan.
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error>;

    /// Takes every row `0..n` of one table (no filter narrowed it). By default, in batches
    /// through [`Sink::rows`]; sinks that can read whole columns override it.
    fn rows_all(&mut self, ctx: &TableCtx<'w>, n: usize) -> Result<bool, Error> {
        rows_in_batches(self, ctx, n)
    }
}

/// Hands rows `0..n` of a table to `sink` in batches of [`BATCH`] through [`Sink::rows`]: the
/// default of [`Sink::rows_all`], for sinks that override it only for some tables.
pub fn rows_in_batches<'w, S: Sink<'w> + ?Sized>(sink: &mut S, ctx: &TableCtx<'w>, n: usize) -> Result<bool, Error> {
    let mut start = 0u32;
    let mut buf = Vec::with_capacity(BATCH.min(n));
    while (start as usize) < n {
        let end = (start as usize + BATCH).min(n) as u32;
        buf.clear();
        buf.extend(start..end);
        pace::point();
        if !sink.rows(ctx, &buf)? {
            return Ok(false);
        }
        start = end;
    }
    Ok(true)
}

/// Runs a filter step over a selection.
fn apply_step(step: &FilterStep, ctx: &TableCtx<'_>, sel: &mut Selection, params: &[Value]) -> Result<(), Error> {
    match step {
        FilterStep::Compare { slot, field, op, rhs, expr, ty } => {
            // A string field's `=` and `!=` test the field's heads (the compiled tier), not
            // every string.
            if *ty == FieldType::String && select_compiled(expr, ctx, sel, params) {
                return Ok(());
            }
            // A reference's dangling handles read as null, which the kernel cannot see: the
            // evaluator reads them through the leaves, which do.
            if *ty == FieldType::Entity && ctx.is_reference(*slot, *field) {
                return filter_by_expr(expr, ctx, sel, params);
            }
            let rhs = rhs.resolve(params);
            let reader = match ctx.slots.get(*slot) {
                Some(SlotReader::Dense(readers)) => readers.get(*field).copied().unwrap_or(FieldView::Missing),
                _ => FieldView::Missing,
            };
            compare_kernel(&reader, *op, rhs, sel).map_err(|m| eval_error(expr, m))
        }
        FilterStep::Expr(expr) => {
            if select_compiled(expr, ctx, sel, params) {
                return Ok(());
            }
            filter_by_expr(expr, ctx, sel, params)
        }
    }
}

/// Narrows `sel` to the rows where `expr` holds, with the batch evaluator.
fn filter_by_expr(expr: &Expr, ctx: &TableCtx<'_>, sel: &mut Selection, params: &[Value]) -> Result<(), Error> {
    let ev = Evaluator::new(ctx, params);
    let rows = std::mem::replace(sel, Selection::Rows(Vec::new()));
    let mut kept = Vec::with_capacity(rows.len());
    match rows {
        Selection::All(n) => {
            let mut buf = Vec::with_capacity(BATCH.min(n));
            for start in (0..n).step_by(BATCH) {
                buf.clear();
                buf.extend(start as u32..(start + BATCH).min(n) as u32);
                kept.extend(ev.filter(expr, &buf)?);
            }
        }
        Selection::Rows(rows) => {
            for chunk in rows.chunks(BATCH) {
                kept.extend(ev.filter(expr, chunk)?);
            }
        }
    }
    *sel = Selection::Rows(kept);
    Ok(())
}

/// Narrows `sel` to the rows where `expr` holds with its compiled program; `false` (and `sel`
/// untouched) where it does not compile or a row needs the evaluator's general rules.
fn select_compiled(expr: &Expr, ctx: &TableCtx<'_>, sel: &mut Selection, params: &[Value]) -> bool {
    let Some(program) = ctx.compiled(expr, params) else { return false };
    let Some(cond) = program.as_cond() else { return false };
    let mut kept = Vec::new();
    let done = match &*sel {
        Selection::All(n) => Program::select_all(cond, *n, &mut kept),
        Selection::Rows(rows) => Program::select(cond, rows, &mut kept),
    };
    if done.is_err() {
        return false;
    }
    *sel = Selection::Rows(kept);
    true
}

/// The number of rows of `sel` that pass `step`, when it can be counted without listing
/// them (a compiled condition); `None` to apply the step instead.
fn count_step(step: &FilterStep, ctx: &TableCtx<'_>, sel: &Selection, params: &[Value]) -> Option<usize> {
    let expr = match step {
        FilterStep::Expr(expr) => expr,
        // As in `apply_step`: a string field's comparison may compile (`=` and `!=` do).
        FilterStep::Compare { ty: FieldType::String, expr, .. } => expr,
        FilterStep::Compare { .. } => return None,
    };
    let program = ctx.compiled(expr, params)?;
    let cond = program.as_cond()?;
    match sel {
        Selection::All(n) => Program::count_all(cond, *n),
        Selection::Rows(rows) => Program::count(cond, rows),
    }
    .ok()
}

fn apply_check(check: &RowCheck, ctx: &TableCtx<'_>, sel: &mut Selection) {
    match check {
        RowCheck::Has(slot) => sel.retain(|r| ctx.has(*slot, r)),
        RowCheck::Lacks(slot) => sel.retain(|r| !ctx.has(*slot, r)),
        RowCheck::AnyOf(slots) => sel.retain(|r| slots.iter().any(|s| ctx.has(*s, r))),
    }
}

/// Rows the access path allows, as `(table, row)` sorted and each once (one allocation
/// however many tables they lie in); `None` means every row of every table.
fn access_rows(plan: &ScanPlan, world: &World, params: &[Value]) -> Result<Option<Vec<(TableId, u32)>>, Error> {
    let locate = |e: Entity, map: &mut Vec<(TableId, u32)>| -> bool {
        match world.entities().location(e) {
            Some(loc) => {
                map.push((TableId(loc.table), loc.row));
                true
            }
            None => false,
        }
    };
    let mut map: Vec<(TableId, u32)> = Vec::new();
    match &plan.access {
        Access::Scan { .. } => return Ok(None),
        Access::Entities { entities, must_exist, span, .. } => {
            let at = |e: Error| match span {
                Some(s) => e.with_span(*s),
                None => e,
            };
            for op in entities {
                let v = op.resolve(params);
                let e = match v {
                    Value::Entity(e) => *e,
                    Value::Null if !must_exist => continue,
                    other => {
                        return Err(at(Error::new(
                            if *must_exist { ErrorKind::Parameter } else { ErrorKind::Type },
                            format!("expected an entity, found {}", other.describe()),
                        )));
                    }
                };
                if !locate(e, &mut map) && *must_exist {
                    return Err(at(Error::new(ErrorKind::StaleEntity, format!("stale entity {e}"))));
                }
            }
        }
        Access::Index(ix) => {
            // Room for the answer the plan expected, so a point query's list does not grow
            // step by step.
            map.reserve(ix.estimated_rows.clamp(8, 1 << 12));
            let scan_rows = matched_rows(plan, world);
            let entities = world.entities();
            let mut visit = |ids: &[u32]| {
                map.extend(ids.iter().filter_map(|&i| entities.location_at(i)).map(|l| (TableId(l.table), l.row)));
            };
            if !ix.lookup.lookup(world, params, scan_rows, &mut visit)? {
                return Ok(None);
            }
        }
    }
    map.sort_unstable();
    map.dedup();
    Ok(Some(map))
}

/// Rows of the matched tables: what a scan would visit.
fn matched_rows(plan: &ScanPlan, world: &World) -> usize {
    plan.tables.iter().filter_map(|t| world.tables().get(t.table.index())).map(|t| t.len()).sum()
}

/// A `count(*)` the index answers alone: it decides every conjunct of every matched table
/// exactly, and no table checks sparse components, so the count is the number of the
/// answer's entities that lie in the matched tables. No row list is built or sorted (an
/// index-only count). `None` when that does not hold or the lookup chose a scan.
fn counted_by_index(plan: &ScanPlan, world: &World, params: &[Value]) -> Result<Option<usize>, Error> {
    let Access::Index(ix) = &plan.access else { return Ok(None) };
    let Some(count) = plan.index_count() else { return Ok(None) };
    // Every entity the index answers lies in a matched table: the count is the answer's
    // size, and no entity needs locating.
    if count == IndexCount::AnswerSize {
        let mut n = 0;
        let answered = ix.lookup.lookup(world, params, matched_rows(plan, world), &mut |ids| n += ids.len())?;
        return Ok(answered.then_some(n));
    }
    let counted = |table: u32| plan.table_can_pass(TableId(table));
    let entities = world.entities();
    let mut n = 0;
    // Entities of one answer mostly share a table: the last table's verdict is kept.
    let mut last: Option<(u32, bool)> = None;
    let mut visit = |ids: &[u32]| {
        // (In locals for the loop: the captured ones live behind references.)
        let (mut here, mut seen) = (0, last);
        for &index in ids {
            let Some(loc) = entities.location_at(index) else { continue };
            let yes = match seen {
                Some((table, yes)) if table == loc.table => yes,
                _ => {
                    let yes = counted(loc.table);
                    seen = Some((loc.table, yes));
                    yes
                }
            };
            here += usize::from(yes);
        }
        (n, last) = (n + here, seen);
    };
    let answered = ix.lookup.lookup(world, params, matched_rows(plan, world), &mut visit)?;
    Ok(answered.then_some(n))
}

/// The entities a scan selects, when a sparse set's answer is the whole of it (the set
/// decides every conjunct of every table in use, as for an index-only count): a copy of the
/// set's entities, none located, in the set's order rather than table order, however large
/// the set (a scan would select the same). `None` when that does not hold.
pub fn entities_answered(plan: &ScanPlan, world: &World) -> Option<Vec<Entity>> {
    let Access::Index(ix) = &plan.access else { return None };
    let c = ix.lookup.holders_of()?;
    if plan.index_count() != Some(IndexCount::AnswerSize) {
        return None;
    }
    Some(world.sparse_set(c).map_or_else(Vec::new, |s| s.entities().to_vec()))
}

/// The pairs of `table` among `pairs` (sorted by table).
fn rows_of(pairs: &[(TableId, u32)], table: TableId) -> &[(TableId, u32)] {
    let lo = pairs.partition_point(|(t, _)| *t < table);
    let len = pairs[lo..].partition_point(|(t, _)| *t == table);
    &pairs[lo..lo + len]
}

/// Runs the scan: every matched table's selected rows go to `sink`, in table order.
pub fn run_scan<'w>(
    plan: &'w ScanPlan,
    world: &'w World,
    params: &[Value],
    sink: &mut dyn Sink<'w>,
) -> Result<(), Error> {
    if sink.count_only()
        && let Some(n) = counted_by_index(plan, world, params)?
    {
        sink.count(n);
        return Ok(());
    }
    let restrict = access_rows(plan, world, params)?;
    // Conjuncts the index answer decided exactly are not tested again on its rows.
    let decided: &[crate::error::Span] = match (&plan.access, &restrict) {
        (Access::Index(ix), Some(_)) => &ix.exact_conjuncts,
        _ => &[],
    };
    let live = |s: &&FilterStep| !decided.contains(&s.expr().span);
    // Every entity a sparse set answers holds its component: that presence check is decided
    // on the answer's rows.
    let held: Option<ComponentId> = match (&plan.access, &restrict) {
        (Access::Index(ix), Some(_)) => ix.lookup.holders_of(),
        _ => None,
    };
    let needed = |c: &&RowCheck| !matches!(c, RowCheck::Has(s) if plan.slots.get(*s).map(|s| s.id) == held);
    // Made for the first table whose rows are read (a bare count reads none).
    let mut function_sets = None;
    for (plan_index, tp) in plan.tables.iter().enumerate() {
        pace::point();
        let steps = match &*tp.filter {
            TableFilter::Never => continue,
            TableFilter::Steps(steps) => steps,
        };
        let Some(table) = world.tables().get(tp.table.index()) else { continue };
        let left = if decided.is_empty() { steps.len() } else { steps.iter().filter(live).count() };
        let checks = || tp.checks.iter().filter(needed);
        let bare_count = left == 0 && checks().next().is_none() && sink.count_only();
        let mut sel = match &restrict {
            None if table.is_empty() => continue,
            None => Selection::All(table.len()),
            Some(pairs) => {
                let rows = rows_of(pairs, tp.table);
                if rows.is_empty() {
                    continue;
                }
                if bare_count {
                    sink.count(rows.len());
                    continue;
                }
                Selection::Rows(rows.iter().map(|&(_, r)| r).collect())
            }
        };
        if bare_count {
            sink.count(sel.len());
            continue;
        }
        let sets = function_sets.get_or_insert_with(|| FunctionSets::new(world));
        let Some(ctx) = TableCtx::new(world, plan, plan_index, sets) else { continue };
        for check in checks() {
            apply_check(check, &ctx, &mut sel);
        }
        let mut counted = None;
        for (i, step) in steps.iter().filter(live).enumerate() {
            if sel.is_empty() {
                break;
            }
            if i + 1 == left && sink.count_only() {
                counted = count_step(step, &ctx, &sel, params);
                if counted.is_some() {
                    break;
                }
            }
            apply_step(step, &ctx, &mut sel, params)?;
        }
        if let Some(n) = counted {
            sink.count(n);
            continue;
        }
        if sel.is_empty() {
            continue;
        }
        if sink.count_only() {
            sink.count(sel.len());
            continue;
        }
        sink.expect_rows(sel.len());
        match sel {
            Selection::All(n) => {
                if !sink.rows_all(&ctx, n)? {
                    return Ok(());
                }
            }
            Selection::Rows(rows) => {
                for chunk in rows.chunks(BATCH) {
                    pace::point();
                    if !sink.rows(&ctx, chunk)? {
                        return Ok(());
                    }
                }
            }
        }
    }
    Ok(())
}
