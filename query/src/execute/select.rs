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

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ecsdb_engine::{Entity, Value, World};

use crate::error::{Error, ErrorKind};
use crate::execute::aggregate::{counts_rows_only, AggregateSink, CountSink, GroupRows};
use crate::execute::ops::sort_cmp;
use crate::execute::scan::{run_scan, FunctionSets, Sink, SlotReader, TableCtx, BATCH};
use crate::expr::compiled::RowSet;
use crate::expr::eval_constant;
use crate::expr::{Evaluator, Leaves, Vector};
use crate::plan::logical::{DataType, Expr, ExprKind, SelectPlan};
use crate::plan::physical::ScanPlan;
use crate::plan::{PhysicalSelect, Strategy};
use crate::result::ResultSet;
use ecsdb_engine::storage::FieldView;
use ecsdb_engine::storage::{FieldColumn, FieldNum};

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
            if shows_one_row(bounds) {
                vec![row]
            } else {
                Vec::new()
            }
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
        // A column of the table: straight from the column into the rows.
        if let ExprKind::Field { slot, field } = item.expr.kind {
            if let Some(reader) = ctx.dense_reader(slot, field) {
                let dest = &mut out[first..];
                reader
                    .for_each_value(rows, |i, v| dest[i].push(v))
                    .map_err(|v| ctx.out_of_range(&item.expr, slot, field, v))?;
                continue;
            }
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
        if let ExprKind::Field { slot, field } = item.expr.kind {
            if let Some(reader) = ctx.dense_reader(slot, field) {
                reader
                    .for_each_value(rows, |_, v| col.push(v))
                    .map_err(|v| ctx.out_of_range(&item.expr, slot, field, v))?;
                continue;
            }
        }
        *col = ev.eval_values(&item.expr, rows)?;
    }
    Ok(())
}

/// A row that survived the scan: where it is, for late materialisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct RowRef {
    entity: Entity,
    table_plan: u32,
    row: u32,
}

/// A single numeric key as an integer whose order is the ORDER BY order (nulls first
/// ascending, last descending).
fn fast_key(x: Option<f64>, desc: bool) -> (u8, u64) {
    match x {
        None => (if desc { 1 } else { 0 }, 0),
        Some(f) => {
            let f = if f == 0.0 { 0.0 } else { f };
            let bits = f.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            if desc {
                (0, !ordered)
            } else {
                (1, ordered)
            }
        }
    }
}

/// Candidates with general keys, ordered by the ORDER BY keys then entity.
struct GeneralCand<'a> {
    keys: Vec<Value>,
    at: RowRef,
    desc: &'a [bool],
}

fn cmp_keys(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    for ((x, y), d) in a.iter().zip(b).zip(desc) {
        let o = sort_cmp(x, y);
        let o = if *d { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

impl PartialEq for GeneralCand<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for GeneralCand<'_> {}
impl PartialOrd for GeneralCand<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for GeneralCand<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_keys(&self.keys, &other.keys, self.desc).then_with(|| self.at.entity.cmp(&other.at.entity))
    }
}

/// Keeps the best `k` items (or all, without a bound) of a stream.
struct Best<T: Ord> {
    k: Option<usize>,
    heap: BinaryHeap<T>,
    all: Vec<T>,
}

impl<T: Ord> Best<T> {
    fn new(k: Option<usize>) -> Self {
        Best { k, heap: BinaryHeap::new(), all: Vec::new() }
    }

    /// Whether a candidate this good could enter (cheap pre-check before building it).
    #[inline]
    fn admits(&self, better_than_worst: impl FnOnce(&T) -> bool) -> bool {
        match self.k {
            None => true,
            Some(k) if self.heap.len() < k => true,
            Some(_) => self.heap.peek().is_some_and(better_than_worst),
        }
    }

    #[inline]
    fn push(&mut self, item: T) {
        match self.k {
            None => self.all.push(item),
            Some(k) => {
                if self.heap.len() < k {
                    self.heap.push(item);
                } else if let Some(mut top) = self.heap.peek_mut() {
                    if item < *top {
                        *top = item;
                    }
                }
            }
        }
    }

    fn into_sorted(self) -> Vec<T> {
        let mut v = if self.k.is_some() { self.heap.into_vec() } else { self.all };
        v.sort_unstable();
        v
    }
}

/// Top-k (or a full sort) on one numeric key compared as an integer: a plain numeric field
/// read through its column, or any float expression evaluated a batch at a time into a typed
/// vector; no `Value` is built per row.
struct FastSortSink<'p> {
    key: FastKey<'p>,
    desc: bool,
    best: Best<((u8, u64), RowRef)>,
    /// The worst key kept once the heap is full: rows with a larger key cannot enter.
    threshold: Option<(u8, u64)>,
    xs: Vec<f64>,
    /// Which of `xs` are not null (compiled keys).
    valid: Vec<bool>,
}

/// The f64 a fast key was made from (`None` for null).
fn key_value(key: (u8, u64), desc: bool) -> Option<f64> {
    let (rank, bits) = key;
    if rank == u8::from(!desc) {
        let ordered = if desc { !bits } else { bits };
        let raw = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
        Some(f64::from_bits(raw))
    } else {
        None
    }
}

/// What a [`FastSortSink`] sorts by.
enum FastKey<'p> {
    /// A plain numeric field.
    Field { slot: usize, field: usize },
    /// A float expression.
    Expr { expr: &'p Expr, params: &'p [Value] },
}

impl FastSortSink<'_> {
    /// Every row of a dense numeric column: 64 rows at a time, only those at least as good as
    /// the current worst kept row are looked at.
    fn all_rows<T: FieldNum>(&mut self, col: FieldColumn<'_, T>, ctx: &TableCtx<'_>, n: usize) {
        let table_plan = ctx.plan_index as u32;
        let n = n.min(col.len());
        let mut start = 0usize;
        while start < n {
            let bound = self.threshold.and_then(|t| key_value(t, self.desc));
            let mut bits = match (bound, self.threshold) {
                // Nulls sort last descending / first ascending: with a null worst, all pass.
                (Some(t), _) if self.desc => col.mask64(start, |v| v.to_f64().partial_cmp(&t) != Some(Ordering::Less)),
                (Some(t), _) => col.mask64(start, |v| v.to_f64().partial_cmp(&t) != Some(Ordering::Greater)),
                _ => u64::MAX,
            };
            let chunk = (n - start).min(64);
            if chunk < 64 {
                bits &= (1u64 << chunk) - 1;
            }
            while bits != 0 {
                let r = start + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let x = col.get(r).map(|v| v.to_f64());
                let e = ctx.entities.get(r).copied().unwrap_or(Entity::NULL);
                self.offer(fast_key(x, self.desc), e, table_plan, r as u32);
            }
            start += 64;
        }
    }

    #[inline]
    /// Offers the rows of one batch with keys from the key expression's compiled program,
    /// computed into the sink's buffers (no vector per batch); `false` when the key does not
    /// compile or a row needs the evaluator, before anything is offered.
    fn compiled_keys(&mut self, ctx: &TableCtx<'_>, rows: RowSet<'_>) -> bool {
        let FastKey::Expr { expr, params } = self.key else { return false };
        let Some(program) = ctx.compiled(expr, params) else { return false };
        let (mut xs, mut valid) = (std::mem::take(&mut self.xs), std::mem::take(&mut self.valid));
        let ok = program.floats(rows, &mut xs, &mut valid).is_ok();
        if ok {
            let table_plan = ctx.plan_index as u32;
            let row_at = |i: usize| match rows {
                RowSet::Range(start, _) => (start + i) as u32,
                RowSet::List(list) => list[i],
            };
            for (i, (&x, &ok)) in xs.iter().zip(&valid).enumerate() {
                let key = fast_key(ok.then_some(x), self.desc);
                // Most rows cannot enter a full heap: skip them before looking anything up.
                if self.threshold.is_some_and(|t| key > t) {
                    continue;
                }
                let r = row_at(i);
                let entity = ctx.entities.get(r as usize).copied().unwrap_or(Entity::NULL);
                self.offer(key, entity, table_plan, r);
            }
        }
        (self.xs, self.valid) = (xs, valid);
        ok
    }

    fn offer(&mut self, key: (u8, u64), entity: Entity, table_plan: u32, row: u32) {
        if self.threshold.is_some_and(|t| key > t) {
            return;
        }
        if !self.best.admits(|worst| (key, entity) < (worst.0, worst.1.entity)) {
            return;
        }
        self.best.push((key, RowRef { entity, table_plan, row }));
        if self.best.k.is_some_and(|k| self.best.heap.len() >= k) {
            self.threshold = self.best.heap.peek().map(|w| w.0);
        }
    }
}

impl<'w> Sink<'w> for FastSortSink<'_> {
    fn rows_all(&mut self, ctx: &TableCtx<'w>, n: usize) -> Result<bool, Error> {
        let dense = match self.key {
            FastKey::Field { slot, field } => ctx.dense_reader(slot, field).copied(),
            FastKey::Expr { .. } => None,
        };
        match dense {
            Some(FieldView::I8(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::I16(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::I32(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::U8(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::U16(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::U32(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::F32(c)) => self.all_rows(c, ctx, n),
            Some(FieldView::F64(c)) => self.all_rows(c, ctx, n),
            _ => {
                let mut rows = Vec::with_capacity(BATCH.min(n));
                for start in (0..n).step_by(BATCH) {
                    let end = (start + BATCH).min(n);
                    if !self.compiled_keys(ctx, RowSet::Range(start, end)) {
                        rows.clear();
                        rows.extend(start as u32..end as u32);
                        self.rows(ctx, &rows)?;
                    }
                }
            }
        }
        Ok(true)
    }

    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        let table_plan = ctx.plan_index as u32;
        let entity = |r: u32| ctx.entities.get(r as usize).copied().unwrap_or(Entity::NULL);
        let (slot, field) = match self.key {
            FastKey::Field { slot, field } => (slot, field),
            FastKey::Expr { expr, params } => {
                if self.compiled_keys(ctx, RowSet::List(rows)) {
                    return Ok(true);
                }
                let keys = Evaluator::new(ctx, params).eval(expr, rows)?;
                match &keys {
                    Vector::Float(p) => {
                        for (i, &r) in rows.iter().enumerate() {
                            self.offer(fast_key(p.get(i), self.desc), entity(r), table_plan, r);
                        }
                    }
                    other => {
                        for (i, &r) in rows.iter().enumerate() {
                            self.offer(fast_key(other.value(i).as_f64(), self.desc), entity(r), table_plan, r);
                        }
                    }
                }
                return Ok(true);
            }
        };
        let dense = match ctx.slots.get(slot) {
            Some(SlotReader::Dense(readers)) => readers.get(field).copied(),
            _ => None,
        };
        let mut xs = std::mem::take(&mut self.xs);
        xs.clear();
        if dense.is_some_and(|reader| reader.read_f64_rows(rows, &mut xs)) {
            // The column in one pass, then keys compared as integers.
            for (&r, &x) in rows.iter().zip(&xs) {
                self.offer(fast_key(Some(x), self.desc), entity(r), table_plan, r);
            }
        } else {
            for &r in rows {
                let x = ctx.locate(slot, r).and_then(|(dr, readers)| readers.get(field)?.f64_at(dr));
                self.offer(fast_key(x, self.desc), entity(r), table_plan, r);
            }
        }
        self.xs = xs;
        Ok(true)
    }
}

struct GeneralSortSink<'p, 'd> {
    plan: &'p SelectPlan,
    params: &'p [Value],
    desc: &'d [bool],
    best: Best<GeneralCand<'d>>,
}

impl<'w> Sink<'w> for GeneralSortSink<'_, '_> {
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        let ev = Evaluator::new(ctx, self.params);
        let cols: Vec<Vec<Value>> =
            self.plan.order_by.iter().map(|k| ev.eval_values(&k.expr, rows)).collect::<Result<_, _>>()?;
        for (i, &r) in rows.iter().enumerate() {
            let keys: Vec<Value> = cols.iter().map(|c| c[i].clone()).collect();
            let entity = ctx.entities.get(r as usize).copied().unwrap_or(Entity::NULL);
            let cand =
                GeneralCand { keys, at: RowRef { entity, table_plan: ctx.plan_index as u32, row: r }, desc: self.desc };
            if self.best.admits(|worst| cand < *worst) {
                self.best.push(cand);
            }
        }
        Ok(true)
    }
}

/// The rows of a sorted SELECT, in output order, after OFFSET and LIMIT.
fn sorted_rows(phys: &PhysicalSelect, world: &World, params: &[Value], bounds: Bounds) -> Result<Vec<RowRef>, Error> {
    let plan = &*phys.logical;
    let k = bounds.needed();
    // One float key (any expression) sorts on integer keys too.
    let float_key = match plan.order_by.as_slice() {
        [key] if key.expr.ty == DataType::Float => Some(&key.expr),
        _ => None,
    };
    let fast_key = match (phys.fast_sort_key, float_key) {
        (Some((slot, field)), _) => Some(FastKey::Field { slot, field }),
        (None, Some(expr)) => Some(FastKey::Expr { expr, params }),
        (None, None) => None,
    };
    let refs: Vec<RowRef> = if let Some(key) = fast_key {
        let desc = plan.order_by.first().is_some_and(|k| k.descending);
        let mut sink =
            FastSortSink { key, desc, best: Best::new(k), threshold: None, xs: Vec::new(), valid: Vec::new() };
        run_scan(&phys.scan, world, params, &mut sink)?;
        sink.best.into_sorted().into_iter().map(|(_, r)| r).collect()
    } else {
        let desc: Vec<bool> = plan.order_by.iter().map(|k| k.descending).collect();
        let mut sink = GeneralSortSink { plan, params, desc: &desc, best: Best::new(k) };
        run_scan(&phys.scan, world, params, &mut sink)?;
        sink.best.into_sorted().into_iter().map(|c| c.at).collect()
    };
    let end = bounds.limit.map_or(refs.len(), |l| bounds.offset.saturating_add(l).min(refs.len()));
    Ok(refs.get(bounds.offset.min(end)..end).map(<[RowRef]>::to_vec).unwrap_or_default())
}

/// A fixed entity set as an index answer (one prefix of an index's ordered stream).
struct FixedEntities(roaring::RoaringBitmap);

impl crate::plan::physical::IndexLookup for FixedEntities {
    fn lookup(&self, _: &World, _: &[Value], _: usize, visit: &mut dyn FnMut(&[u32])) -> Result<bool, Error> {
        ecsdb_engine::index::visit_in_batches(self.0.iter(), visit);
        Ok(true)
    }
}

/// The physical plan restricted to a fixed set of entities (the scan's filters unchanged).
fn restricted(phys: &PhysicalSelect, ids: roaring::RoaringBitmap, what: &str) -> PhysicalSelect {
    use crate::plan::physical::{Access, IndexScan};
    let mut scan = phys.scan.clone();
    scan.access = Access::Index(IndexScan {
        indexes: Vec::new(),
        description: what.to_string(),
        estimated_rows: ids.len() as usize,
        exact_conjuncts: Vec::new(),
        lookup: std::sync::Arc::new(FixedEntities(ids)),
    });
    PhysicalSelect {
        logical: phys.logical.clone(),
        scan,
        strategy: phys.strategy,
        fast_sort_key: phys.fast_sort_key,
        ordered: None,
    }
}

/// `ORDER BY <key> … LIMIT k` through an index's ordered stream (an rtree's nearest-first,
/// a btree's key order): takes growing prefixes of the stream and runs the ordinary top-k over
/// just those entities, until a prefix yields `offset + limit` rows passing the WHERE clause
/// or the stream ends. The stream's order is the first key's order with ties by entity, so
/// with one key that prefix holds exactly the first rows. With more keys, rows outside the
/// prefix may tie with the last row kept on the first key and beat it on the next: those are
/// fetched by a second lookup (every entity whose first key is at or before that row's) and
/// the top-k runs once more over them. `None` when the plan has no ordered path or the index
/// declines (then the caller scans).
fn ordered_rows(
    phys: &PhysicalSelect,
    world: &World,
    params: &[Value],
    bounds: Bounds,
) -> Result<Option<Vec<RowRef>>, Error> {
    let (Some(ordered), Some(need)) = (&phys.ordered, bounds.needed()) else { return Ok(None) };
    let window = |refs: Vec<RowRef>| {
        let end = refs.len().min(need);
        refs.get(bounds.offset.min(end)..end).map(<[RowRef]>::to_vec).unwrap_or_default()
    };
    let mut fetch = need.max(32);
    loop {
        let Some(pred) = ordered.stream(params, fetch) else { return Ok(None) };
        let ids = match world.index_answer(&ordered.index, &pred) {
            Ok(Some(answer)) => answer.into_vec(Some(fetch)),
            _ => return Ok(None),
        };
        let exhausted = ids.len() < fetch;
        let prefix = restricted(phys, ids.into_iter().collect(), "an ordered index stream's prefix");
        let refs = sorted_rows(&prefix, world, params, Bounds { offset: 0, limit: Some(need) })?;
        if exhausted {
            return Ok(Some(window(refs)));
        }
        if refs.len() >= need {
            if !ordered.more_keys {
                return Ok(Some(window(refs)));
            }
            let Some(last) = refs.get(need - 1) else { return Ok(None) };
            let key = first_key(&prefix, world, params, last)?;
            let Some(pred) = ordered.up_to(params, &key) else { return Ok(None) };
            let ids = match world.index_answer(&ordered.index, &pred) {
                Ok(Some(answer)) => answer.into_set(None),
                _ => return Ok(None),
            };
            let tied = restricted(phys, ids, "rows up to the last kept row's first key");
            let refs = sorted_rows(&tied, world, params, Bounds { offset: 0, limit: Some(need) })?;
            return Ok(Some(window(refs)));
        }
        fetch = fetch.saturating_mul(4);
    }
}

/// The first ORDER BY key of one row.
fn first_key(phys: &PhysicalSelect, world: &World, params: &[Value], at: &RowRef) -> Result<Value, Error> {
    let Some(key) = phys.logical.order_by.first() else { return Ok(Value::Null) };
    let function_sets = FunctionSets::new(world);
    let Some(ctx) = TableCtx::new(world, &phys.scan, at.table_plan as usize, &function_sets) else {
        return Ok(Value::Null);
    };
    Ok(Evaluator::new(&ctx, params).eval_values(&key.expr, &[at.row])?.pop().unwrap_or(Value::Null))
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

/// Whether `e` is a plain reference to a field (used by the planner for fast sort keys).
pub fn plain_field(e: &Expr) -> Option<(usize, usize)> {
    match e.kind {
        ExprKind::Field { slot, field } => Some((slot, field)),
        _ => None,
    }
}
