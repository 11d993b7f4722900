//! Running a planned SELECT: projection, sort and top-k, aggregation, LIMIT / OFFSET.
//!
//! - **Project**: items are evaluated column-at-a-time over each batch; with a LIMIT the scan
//!   stops as soon as enough rows are out.
//! - **Top-k** (ORDER BY + LIMIT): a bounded heap of `offset + limit` candidates. Only sort
//!   keys are computed during the scan (for a single numeric-column key, straight from the
//!   column as an order-preserving integer); the items are computed afterwards for the few
//!   rows that survive (late materialisation).
//! - **Sort** (ORDER BY without LIMIT): the same candidates, all kept, then sorted.
//! - **Aggregate**: see [`crate::execute::aggregate`]; groups are then ordered, limited and
//!   projected.
//!
//! Ties on every ORDER BY key are broken by ascending entity (index, then generation), and
//! groups by their GROUP BY values, so ordered results are deterministic.

mod order;

use std::cmp::Ordering;

use ecsdb_engine::{Entity, Value, World};

use crate::error::{Error, ErrorKind};
use crate::execute::aggregate::{AggregateSink, CountSink, GroupRows, counts_rows_only};
use crate::execute::scan::{FunctionSets, Sink, TableCtx, run_scan};
use crate::expr::Evaluator;
use crate::expr::eval_constant;
use crate::expr::ops::sort_cmp;
use crate::expr::{Expr, ExprKind};
use crate::plan::logical::SelectPlan;
use crate::plan::physical::ScanPlan;
use crate::plan::{PhysicalSelect, Strategy};
use crate::result::ResultSet;
use order::{RowRef, cmp_keys, ordered_rows, sorted_rows};

/// LIMIT and OFFSET as numbers.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Rows skipped.
    pub offset: usize,
    /// Rows returned at most (`None`: all).
    pub limit: Option<usize>,
}

impl Bounds {
    /// Rows that must be produced before the first `limit` are known: `offset + limit`.
    pub fn needed(&self) -> Option<usize> {
        self.limit.map(|l| l.saturating_add(self.offset))
    }
}

fn bound_value(e: &Expr, params: &[Value], what: &str) -> Result<Option<i64>, Error> {
    match eval_constant(e, params)? {
        Value::Null => Ok(None),
        Value::Int(i) => Ok(Some(i)),
        v => {
            Err(Error::new(ErrorKind::Type, format!("{what} must be an integer, found {}", v.describe()))
                .with_span(e.span))
        }
    }
}

/// Evaluates LIMIT and OFFSET (negative LIMIT: no limit; negative OFFSET: none, as SQLite).
pub fn bounds(plan: &SelectPlan, params: &[Value]) -> Result<Bounds, Error> {
    let limit = match &plan.limit {
        Some(e) => bound_value(e, params, "LIMIT")?.and_then(|l| usize::try_from(l).ok()),
        None => None,
    };
    let offset = match &plan.offset {
        Some(e) => bound_value(e, params, "OFFSET")?.map_or(0, |o| usize::try_from(o).unwrap_or(0)),
        None => 0,
    };
    Ok(Bounds { offset, limit })
}

/// Runs a planned SELECT.
pub fn execute_select(phys: &PhysicalSelect, world: &World, params: &[Value]) -> Result<ResultSet, Error> {
    let plan = &*phys.logical;
    let columns: Vec<String> = plan.items.iter().map(|i| i.name.clone()).collect();
    let bounds = bounds(plan, params)?;
    if bounds.limit == Some(0) {
        return Ok(ResultSet::empty(columns));
    }
    Ok(ResultSet { columns, rows: result_rows(phys, world, params, bounds)? })
}

/// The result rows of a planned SELECT under `bounds` (LIMIT 0 already answered).
fn result_rows(
    phys: &PhysicalSelect,
    world: &World,
    params: &[Value],
    bounds: Bounds,
) -> Result<Vec<Vec<Value>>, Error> {
    let plan = &*phys.logical;
    Ok(match phys.strategy {
        Strategy::Project => {
            let out = ProjectOut::Collect(Vec::new());
            let mut sink = ProjectSink { plan, params, out, skip: bounds.offset, left: bounds.limit };
            run_scan(&phys.scan, world, params, &mut sink)?;
            match sink.out {
                ProjectOut::Collect(rows) => rows,
                ProjectOut::Stream { .. } => Vec::new(),
            }
        }
        Strategy::Sort | Strategy::TopK => {
            let order = match ordered_rows(phys, world, params, bounds)? {
                Some(order) => order,
                None => sorted_rows(phys, world, params, bounds)?,
            };
            materialize(&phys.scan, plan, world, params, &order)?
        }
        Strategy::Aggregate if counts_rows_only(plan) => {
            let row = counted_row(plan, count_rows(phys, world, params)?, params)?;
            if shows_one_row(bounds) { vec![row] } else { Vec::new() }
        }
        Strategy::Aggregate => {
            let mut sink = AggregateSink::new(plan, params);
            run_scan(&phys.scan, world, params, &mut sink)?;
            project_groups(plan, sink.finish(), params, bounds)?
        }
    })
}

/// Runs a planned SELECT, handing each result row to `f` in order instead of collecting a
/// [`ResultSet`]: a plain projection streams straight from the scan, one batch of columns at
/// a time, with no allocation per row; sorted and aggregated results are computed first (they
/// are small or need every row anyway). Returns the number of rows.
pub fn stream_select(
    phys: &PhysicalSelect,
    world: &World,
    params: &[Value],
    f: &mut dyn FnMut(&[Value]),
) -> Result<usize, Error> {
    let plan = &*phys.logical;
    let bounds = bounds(plan, params)?;
    if bounds.limit == Some(0) {
        return Ok(0);
    }
    if phys.strategy == Strategy::Aggregate && counts_rows_only(plan) {
        // The one row is handed over where it is made (a lone `count(*)` with no row vector).
        let n = count_rows(phys, world, params)?;
        if !shows_one_row(bounds) {
            return Ok(0);
        }
        match &plan.items[..] {
            [item] if matches!(item.expr.kind, ExprKind::Aggregate(_)) => f(&[Value::Int(n as i64)]),
            _ => f(&counted_row(plan, n, params)?),
        }
        return Ok(1);
    }
    if phys.strategy != Strategy::Project {
        let rows = result_rows(phys, world, params, bounds)?;
        rows.iter().for_each(|r| f(r));
        return Ok(rows.len());
    }
    let out = ProjectOut::Stream { f, count: 0, row: Vec::new(), cols: Vec::new() };
    let mut sink = ProjectSink { plan, params, out, skip: bounds.offset, left: bounds.limit };
    run_scan(&phys.scan, world, params, &mut sink)?;
    Ok(match sink.out {
        ProjectOut::Stream { count, .. } => count,
        ProjectOut::Collect(rows) => rows.len(),
    })
}

/// Where projected rows go.
enum ProjectOut<'f> {
    /// Into the result's rows.
    Collect(Vec<Vec<Value>>),
    /// To a callback, through one reused row.
    Stream {
        f: &'f mut dyn FnMut(&[Value]),
        count: usize,
        row: Vec<Value>,
        /// One column of values per item, reused batch to batch.
        cols: Vec<Vec<Value>>,
    },
}

struct ProjectSink<'p, 'f> {
    plan: &'p SelectPlan,
    params: &'p [Value],
    out: ProjectOut<'f>,
    skip: usize,
    left: Option<usize>,
}

impl<'w> Sink<'w> for ProjectSink<'_, '_> {
    fn expect_rows(&mut self, n: usize) {
        let n = n.saturating_sub(self.skip);
        if let ProjectOut::Collect(rows) = &mut self.out {
            rows.reserve(self.left.map_or(n, |l| l.min(n)));
        }
    }

    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        let mut rows = rows;
        if self.skip > 0 {
            let s = self.skip.min(rows.len());
            self.skip -= s;
            rows = &rows[s..];
        }
        if let Some(left) = self.left {
            rows = &rows[..left.min(rows.len())];
        }
        if rows.is_empty() {
            return Ok(self.left != Some(0));
        }
        match &mut self.out {
            ProjectOut::Collect(out) => project_into(out, self.plan, ctx, rows, self.params)?,
            ProjectOut::Stream { f, count, row, cols } => {
                project_columns(cols, self.plan, ctx, rows, self.params)?;
                for i in 0..rows.len() {
                    row.clear();
                    row.extend(cols.iter_mut().map(|c| std::mem::take(&mut c[i])));
                    f(row);
                }
                *count += rows.len();
            }
        }
        if let Some(left) = &mut self.left {
            *left -= rows.len();
            return Ok(*left > 0);
        }
        Ok(true)
    }
}

/// Evaluates the items for `rows` of one table, appending output rows.
fn project_into(
    out: &mut Vec<Vec<Value>>,
    plan: &SelectPlan,
    ctx: &TableCtx<'_>,
    rows: &[u32],
    params: &[Value],
) -> Result<(), Error> {
    let ev = Evaluator::new(ctx, params);
    let first = out.len();
    out.extend(rows.iter().map(|_| Vec::with_capacity(plan.items.len())));
    for item in &plan.items {
        // A column of the table: straight from the column into the rows (but a reference,
        // whose dangling handles read as null: the leaves make them so).
        if let ExprKind::Field { slot, field } = item.expr.kind
            && let Some(reader) = ctx.dense_reader(slot, field).filter(|r| !ctx.reads_reference(r, slot, field))
        {
            let dest = &mut out[first..];
            reader
                .for_each_value(rows, |i, v| dest[i].push(v))
                .map_err(|v| ctx.out_of_range(&item.expr, slot, field, v))?;
            continue;
        }
        let values = ev.eval_values(&item.expr, rows)?;
        for (row, v) in out[first..].iter_mut().zip(values) {
            row.push(v);
        }
    }
    Ok(())
}

/// Evaluates the items for `rows` of one table into one column of values per item.
fn project_columns(
    cols: &mut Vec<Vec<Value>>,
    plan: &SelectPlan,
    ctx: &TableCtx<'_>,
    rows: &[u32],
    params: &[Value],
) -> Result<(), Error> {
    let ev = Evaluator::new(ctx, params);
    cols.resize_with(plan.items.len(), Vec::new);
    for (item, col) in plan.items.iter().zip(cols.iter_mut()) {
        col.clear();
        if let ExprKind::Field { slot, field } = item.expr.kind
            && let Some(reader) = ctx.dense_reader(slot, field).filter(|r| !ctx.reads_reference(r, slot, field))
        {
            reader
                .for_each_value(rows, |_, v| col.push(v))
                .map_err(|v| ctx.out_of_range(&item.expr, slot, field, v))?;
            continue;
        }
        *col = ev.eval_values(&item.expr, rows)?;
    }
    Ok(())
}

/// Computes the items of the given rows (grouped by table, evaluated in batches), in order.
fn materialize(
    scan: &ScanPlan,
    plan: &SelectPlan,
    world: &World,
    params: &[Value],
    order: &[RowRef],
) -> Result<Vec<Vec<Value>>, Error> {
    let mut out: Vec<Vec<Value>> = vec![Vec::new(); order.len()];
    let mut by_table: Vec<(u32, Vec<(usize, u32)>)> = Vec::new();
    for (pos, r) in order.iter().enumerate() {
        match by_table.iter_mut().find(|(t, _)| *t == r.table_plan) {
            Some((_, v)) => v.push((pos, r.row)),
            None => by_table.push((r.table_plan, vec![(pos, r.row)])),
        }
    }
    let function_sets = FunctionSets::new(world);
    for (tp, rows) in by_table {
        let Some(ctx) = TableCtx::new(world, scan, tp as usize, &function_sets) else { continue };
        for chunk in rows.chunks(crate::execute::scan::BATCH) {
            let just_rows: Vec<u32> = chunk.iter().map(|(_, r)| *r).collect();
            let mut values = Vec::new();
            project_into(&mut values, plan, &ctx, &just_rows, params)?;
            for ((pos, _), v) in chunk.iter().zip(values) {
                out[*pos] = v;
            }
        }
    }
    Ok(out)
}

/// Orders, limits and projects the groups of an aggregate query.
/// The row of a statement with one group (no GROUP BY) whose items are bare aggregates or
/// keys, read off the group without evaluating expressions over it; `None` for any other
/// shape. `aggregate(a)` and `key(k)` give the group's values (`None`: not there).
fn one_group_row(
    plan: &SelectPlan,
    aggregate: impl Fn(usize) -> Option<Value>,
    key: impl Fn(usize) -> Option<Value>,
) -> Option<Vec<Value>> {
    if !plan.order_by.is_empty() {
        return None;
    }
    plan.items
        .iter()
        .map(|item| match item.expr.kind {
            ExprKind::Aggregate(a) => aggregate(a),
            ExprKind::GroupKey(k) => key(k),
            _ => None,
        })
        .collect()
}

/// Whether OFFSET and LIMIT leave a one-row answer its row.
fn shows_one_row(bounds: Bounds) -> bool {
    bounds.offset == 0 && bounds.limit != Some(0)
}

/// The rows a statement whose only aggregate is `count(*)` counts, with a [`CountSink`].
fn count_rows(phys: &PhysicalSelect, world: &World, params: &[Value]) -> Result<usize, Error> {
    let mut sink = CountSink::default();
    run_scan(&phys.scan, world, params, &mut sink)?;
    Ok(sink.rows)
}

/// The one row (no GROUP BY: one group) of a statement whose only aggregate is `count(*)`,
/// which counted `rows`.
fn counted_row(plan: &SelectPlan, rows: usize, params: &[Value]) -> Result<Vec<Value>, Error> {
    let n = Value::Int(rows as i64);
    if let Some(row) = one_group_row(plan, |_| Some(n.clone()), |_| None) {
        return Ok(row);
    }
    let groups = GroupRows::counted(rows, plan.aggregates.len());
    let every = Bounds { offset: 0, limit: None };
    Ok(project_groups(plan, groups, params, every)?.pop().unwrap_or_default())
}

fn project_groups(
    plan: &SelectPlan,
    groups: GroupRows,
    params: &[Value],
    bounds: Bounds,
) -> Result<Vec<Vec<Value>>, Error> {
    let n = groups.keys.len();
    if n == 1 {
        let aggregate = |a: usize| Some(groups.aggs.get(a)?.first().cloned().unwrap_or(Value::Null));
        let key = |k: usize| Some(groups.keys[0].get(k).cloned().unwrap_or(Value::Null));
        if let Some(row) = one_group_row(plan, aggregate, key) {
            return Ok(if shows_one_row(bounds) { vec![row] } else { Vec::new() });
        }
    }
    let all: Vec<u32> = (0..n as u32).collect();
    let ev = Evaluator::new(&groups, params);
    let mut order: Vec<u32> = all.clone();
    let by_group_key = |a: &u32, b: &u32| {
        let ka = &groups.keys[*a as usize];
        let kb = &groups.keys[*b as usize];
        ka.iter().zip(kb).map(|(x, y)| sort_cmp(x, y)).find(|o| *o != Ordering::Equal).unwrap_or(Ordering::Equal)
    };
    if plan.order_by.is_empty() {
        order.sort_by(by_group_key);
    } else {
        let cols: Vec<Vec<Value>> =
            plan.order_by.iter().map(|k| ev.eval_values(&k.expr, &all)).collect::<Result<_, _>>()?;
        let desc: Vec<bool> = plan.order_by.iter().map(|k| k.descending).collect();
        order.sort_by(|a, b| {
            let ka: Vec<Value> = cols.iter().map(|c| c[*a as usize].clone()).collect();
            let kb: Vec<Value> = cols.iter().map(|c| c[*b as usize].clone()).collect();
            cmp_keys(&ka, &kb, &desc).then_with(|| by_group_key(a, b))
        });
    }
    let end = bounds.limit.map_or(n, |l| bounds.offset.saturating_add(l).min(n));
    let chosen = order.get(bounds.offset.min(end)..end).unwrap_or(&[]);
    let mut out: Vec<Vec<Value>> = chosen.iter().map(|_| Vec::with_capacity(plan.items.len())).collect();
    for item in &plan.items {
        for (row, v) in out.iter_mut().zip(ev.eval_values(&item.expr, chosen)?) {
            row.push(v);
        }
    }
    Ok(out)
}

/// A sink collecting the selected entities (targets of mutations, typed selection).
pub struct EntitySink {
    /// The entities, in scan order.
    pub entities: Vec<Entity>,
}

impl<'w> Sink<'w> for EntitySink {
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        self.entities.extend(rows.iter().filter_map(|&r| ctx.entities.get(r as usize).copied()));
        Ok(true)
    }
}

/// The entities a SELECT's rows belong to, honouring ORDER BY, LIMIT and OFFSET.
pub fn selected_entities(phys: &PhysicalSelect, world: &World, params: &[Value]) -> Result<Vec<Entity>, Error> {
    let plan = &*phys.logical;
    if plan.aggregated {
        return Err(Error::new(ErrorKind::Type, "an aggregate query does not select entities"));
    }
    let bounds = bounds(plan, params)?;
    if bounds.limit == Some(0) {
        return Ok(Vec::new());
    }
    match phys.strategy {
        Strategy::Sort | Strategy::TopK => {
            Ok(sorted_rows(phys, world, params, bounds)?.into_iter().map(|r| r.entity).collect())
        }
        _ => {
            let mut sink = EntitySink { entities: Vec::new() };
            run_scan(&phys.scan, world, params, &mut sink)?;
            let end =
                bounds.limit.map_or(sink.entities.len(), |l| bounds.offset.saturating_add(l).min(sink.entities.len()));
            Ok(sink.entities.get(bounds.offset.min(end)..end).map(<[Entity]>::to_vec).unwrap_or_default())
        }
    }
}
