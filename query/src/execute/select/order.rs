//! Ordered and top-k results: the ORDER BY / LIMIT machinery of a SELECT, from sort keys
//! gathered during the scan (bounded heap or full sort) to index-ordered prefixes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ecsdb_engine::storage::FieldView;
use ecsdb_engine::storage::{FieldColumn, FieldNum};
use ecsdb_engine::{Entity, Value, ValueType, World};

use super::Bounds;
use crate::error::Error;
use crate::execute::scan::{BATCH, FunctionSets, Sink, SlotReader, TableCtx, run_scan};
use crate::expr::Expr;
use crate::expr::compiled::RowSet;
use crate::expr::ops::sort_cmp;
use crate::expr::{Evaluator, Leaves, Vector};
use crate::plan::PhysicalSelect;
use crate::plan::logical::SelectPlan;

/// A row that survived the scan: where it is, for late materialisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RowRef {
    pub(super) entity: Entity,
    pub(super) table_plan: u32,
    pub(super) row: u32,
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
            if desc { (0, !ordered) } else { (1, ordered) }
        }
    }
}

/// Candidates with general keys, ordered by the ORDER BY keys then entity.
struct GeneralCand<'a> {
    keys: Vec<Value>,
    at: RowRef,
    desc: &'a [bool],
}

pub(super) fn cmp_keys(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
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
                } else {
                    if let Some(mut top) = self.heap.peek_mut()
                        && item < *top
                    {
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
pub(super) fn sorted_rows(
    phys: &PhysicalSelect,
    world: &World,
    params: &[Value],
    bounds: Bounds,
) -> Result<Vec<RowRef>, Error> {
    let plan = &*phys.logical;
    let k = bounds.needed();
    // One float key (any expression) sorts on integer keys too.
    let float_key = match plan.order_by.as_slice() {
        [key] if key.expr.ty == ValueType::Float => Some(&key.expr),
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

impl crate::plan::index_lookup::IndexLookup for FixedEntities {
    fn lookup(&self, _: &World, _: &[Value], _: usize, visit: &mut dyn FnMut(&[u32])) -> Result<bool, Error> {
        ecsdb_engine::index::visit_in_batches(self.0.iter(), visit);
        Ok(true)
    }
}

/// The physical plan restricted to a fixed set of entities (the scan's filters unchanged).
fn restricted(phys: &PhysicalSelect, ids: roaring::RoaringBitmap, what: &str) -> PhysicalSelect {
    use crate::plan::index_lookup::IndexScan;
    use crate::plan::physical::Access;
    let mut scan = phys.scan.clone();
    scan.access = Access::Index(IndexScan {
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
pub(super) fn ordered_rows(
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
