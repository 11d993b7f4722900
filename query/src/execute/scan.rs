//! Scanning matched tables: column readers, selection vectors, column kernels, sparse joins
//! and the access paths.
//!
//! For each matched table the scan starts from every row (or the rows the access path names),
//! applies the sparse presence checks, then each filter step in turn, narrowing a selection
//! vector of row numbers. A [`FilterStep::Compare`] runs as a tight loop over one field of one
//! column, read through the engine's typed strided view ([`FieldColumn`]): no `Value` is built
//! and there is no per-row dispatch. The surviving rows go to a [`Sink`] in batches.

use std::cell::RefCell;
use std::rc::Rc;

use ecsdb_engine::index::IndexPredicate;
use ecsdb_engine::storage::{
    ArchetypeTable, FieldColumn, FieldNum, FieldPlace, FieldScalar, FieldView, SparseSet, TableId,
};
use ecsdb_engine::{ChangeWindow, Entity, FieldType, Value, World};
use roaring::RoaringBitmap;

use crate::error::{Error, ErrorKind};
use crate::expr::compiled::Program;
use crate::expr::{eval_error, Evaluator, Leaves};
use crate::plan::logical::{BinaryOp, Expr};
use crate::plan::physical::{
    Access, FilterStep, IndexCount, PhysicalSlot, RowCheck, ScanPlan, SlotSource, TableFilter,
};

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

/// Narrows the selection to rows whose field passes `keep`: the column kernel.
///
/// From every row it works 64 rows at a time, choosing per chunk by the previous chunk's
/// selectivity: when nearly all or nearly no rows pass, a plain loop whose branch the CPU
/// predicts; otherwise a branch-free bitmask ([`FieldColumn::mask64`]) whose set bits are then
/// visited. From a row list, it compacts the list in place without branches.
#[inline]
fn filter_column<T: FieldScalar>(col: FieldColumn<'_, T>, sel: &mut Selection, mut keep: impl FnMut(&T) -> bool) {
    match sel {
        Selection::All(n) => {
            let n = (*n).min(col.len());
            let mut out: Vec<u32> = Vec::new();
            let mut start = 0usize;
            let mut last_kept = 0usize;
            while start < n {
                let end = (start + 64).min(n);
                let before = out.len();
                if last_kept <= 4 || last_kept >= 60 {
                    col.for_each_in(start, end, |row, v| {
                        if keep(v) {
                            out.push(row as u32);
                        }
                    });
                } else {
                    let mut bits = col.mask64(start, &mut keep);
                    while bits != 0 {
                        out.push(start as u32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
                last_kept = out.len() - before;
                start = end;
            }
            *sel = Selection::Rows(out);
        }
        Selection::Rows(rows) => {
            let mut k = 0usize;
            for i in 0..rows.len() {
                let r = rows[i];
                let pass = col.get(r as usize).is_some_and(&mut keep);
                rows[k] = r;
                k += pass as usize;
            }
            rows.truncate(k);
        }
    }
}

/// A comparison chosen at compile time, so each kernel loop is specialised.
trait Cmp {
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool;
}
struct Eq;
struct Ne;
struct Lt;
struct Le;
struct Gt;
struct Ge;
impl Cmp for Eq {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a == b
    }
}
impl Cmp for Ne {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        // NaN compares as null: neither equal nor unequal.
        matches!(a.partial_cmp(b), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Greater))
    }
}
impl Cmp for Lt {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a < b
    }
}
impl Cmp for Le {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a <= b
    }
}
impl Cmp for Gt {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a > b
    }
}
impl Cmp for Ge {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a >= b
    }
}

/// `conv(field) op c` over the selection, with the constant held by value (in a register, not
/// reloaded through a closure's captures after every store).
#[inline]
fn compare_column<T: FieldScalar, K: PartialOrd + Copy, O: Cmp>(
    col: FieldColumn<'_, T>,
    sel: &mut Selection,
    conv: impl Fn(&T) -> K + Copy,
    c: K,
) {
    filter_column(col, sel, move |v| O::test(&conv(v), &c))
}

fn num_kernel<T: FieldNum, O: Cmp>(col: FieldColumn<'_, T>, rhs: &Value, sel: &mut Selection) {
    match *rhs {
        Value::Int(c) if T::INT => compare_column::<T, i64, O>(col, sel, |v| v.to_i64(), c),
        Value::Int(c) => compare_column::<T, f64, O>(col, sel, |v| v.to_f64(), c as f64),
        Value::Float(c) => compare_column::<T, f64, O>(col, sel, |v| v.to_f64(), c),
        _ => *sel = Selection::Rows(Vec::new()),
    }
}

fn compare_with<O: Cmp>(reader: &FieldView<'_>, rhs: &Value, sel: &mut Selection) -> Result<(), String> {
    let numeric = matches!(rhs, Value::Int(_) | Value::Float(_));
    match (reader, rhs) {
        (_, Value::Null) => *sel = Selection::Rows(Vec::new()),
        (FieldView::I8(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I16(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I64(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U8(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U16(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::F32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::F64(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::Str(c), Value::Str(s)) => filter_column(*c, sel, |v| O::test(v.as_str(), s.as_str())),
        (FieldView::Bool(c), Value::Bool(b)) => filter_column(*c, sel, |v| O::test(v, b)),
        (FieldView::Entity(c), Value::Entity(e)) => filter_column(*c, sel, |v| !v.is_null() && O::test(v, e)),
        (FieldView::Missing, _) => *sel = Selection::Rows(Vec::new()),
        (_, other) => return Err(format!("cannot compare this field with {}", other.describe())),
    }
    Ok(())
}

/// The next f32 above `x` (identity for NaN and +inf).
fn f32_next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let bits = x.to_bits();
    f32::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

fn f32_next_down(x: f32) -> f32 {
    -f32_next_up(-x)
}

/// `f32 field op c` with `c` an f64: the same answer as comparing in f64 (the language reads
/// an f32 as f64), computed in f32 against a bound rounded the right way, so the loop neither
/// converts each value nor reloads a wide constant.
fn f32_kernel(col: FieldColumn<'_, f32>, op: BinaryOp, c: f64, sel: &mut Selection) -> Result<(), String> {
    if c.is_nan() {
        *sel = Selection::Rows(Vec::new());
        return Ok(());
    }
    let r = c as f32;
    let exact = r as f64 == c;
    // The least f32 >= c and the greatest f32 <= c (infinities where c is out of range).
    let up = if r as f64 >= c { r } else { f32_next_up(r) };
    let down = if r as f64 <= c { r } else { f32_next_down(r) };
    let id = |v: &f32| *v;
    match op {
        BinaryOp::Eq if exact => compare_column::<f32, f32, Eq>(col, sel, id, r),
        BinaryOp::Eq => *sel = Selection::Rows(Vec::new()),
        BinaryOp::Ne if exact => compare_column::<f32, f32, Ne>(col, sel, id, r),
        // Every value but NaN differs from a constant no f32 equals.
        BinaryOp::Ne => compare_column::<f32, f32, Ge>(col, sel, id, f32::NEG_INFINITY),
        BinaryOp::Lt => compare_column::<f32, f32, Lt>(col, sel, id, up),
        BinaryOp::Le => compare_column::<f32, f32, Le>(col, sel, id, down),
        BinaryOp::Gt => compare_column::<f32, f32, Gt>(col, sel, id, down),
        BinaryOp::Ge => compare_column::<f32, f32, Ge>(col, sel, id, up),
        _ => return Err(format!("'{}' is not a comparison", op.symbol())),
    }
    Ok(())
}

/// Runs a compare kernel: `field op rhs` over the selected rows.
pub fn compare_kernel(reader: &FieldView<'_>, op: BinaryOp, rhs: &Value, sel: &mut Selection) -> Result<(), String> {
    if let (FieldView::F32(col), Some(c)) = (reader, rhs.as_f64()) {
        return f32_kernel(*col, op, c, sel);
    }
    match op {
        BinaryOp::Eq => compare_with::<Eq>(reader, rhs, sel),
        BinaryOp::Ne => compare_with::<Ne>(reader, rhs, sel),
        BinaryOp::Lt => compare_with::<Lt>(reader, rhs, sel),
        BinaryOp::Le => compare_with::<Le>(reader, rhs, sel),
        BinaryOp::Gt => compare_with::<Gt>(reader, rhs, sel),
        BinaryOp::Ge => compare_with::<Ge>(reader, rhs, sel),
        _ => Err(format!("'{}' is not a comparison", op.symbol())),
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
    }
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
                        )))
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
    if sink.count_only() {
        if let Some(n) = counted_by_index(plan, world, params)? {
            sink.count(n);
            return Ok(());
        }
    }
    let restrict = access_rows(plan, world, params)?;
    // Conjuncts the index answer decided exactly are not tested again on its rows.
    let decided: &[crate::error::Span] = match (&plan.access, &restrict) {
        (Access::Index(ix), Some(_)) => &ix.exact_conjuncts,
        _ => &[],
    };
    let live = |s: &&FilterStep| !decided.contains(&s.expr().span);
    // Made for the first table whose rows are read (a bare count reads none).
    let mut function_sets = None;
    for (plan_index, tp) in plan.tables.iter().enumerate() {
        let steps = match &*tp.filter {
            TableFilter::Never => continue,
            TableFilter::Steps(steps) => steps,
        };
        let Some(table) = world.tables().get(tp.table.index()) else { continue };
        let left = if decided.is_empty() { steps.len() } else { steps.iter().filter(live).count() };
        let bare_count = left == 0 && tp.checks.is_empty() && sink.count_only();
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
        for check in &tp.checks {
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
                    if !sink.rows(&ctx, chunk)? {
                        return Ok(());
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecsdb_engine::{ComponentDef, FieldType, Value};

    /// The f32 kernel agrees with comparing in f64, at the awkward constants.
    #[test]
    fn f32_kernel_matches_f64_semantics() {
        let mut world = World::new();
        let id = world.define_component(&ComponentDef::new("F", &[("v", FieldType::F32)])).unwrap();
        let values = [
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.5,
            -0.0,
            0.0,
            f32::from_bits(1),
            0.1,
            1.0,
            16_777_217.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
        ];
        let mut table = None;
        for v in values {
            let e = world.spawn_values(&[("F", &[("v", Value::Float(v as f64))])]).unwrap();
            table = Some(TableId(world.location(e).unwrap().table));
        }
        let col = world.table_field::<f32>(table.unwrap(), id, 0).unwrap();
        let constants = [
            0.1f64,
            -0.0,
            0.0,
            1.0,
            1e-50,
            -1e-50,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            16_777_217.0,
            f64::NAN,
        ];
        let ops = [BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge];
        for c in constants {
            for op in ops {
                let mut sel = Selection::All(values.len());
                f32_kernel(col, op, c, &mut sel).unwrap();
                let want: Vec<u32> = (0..values.len() as u32)
                    .filter(|&r| {
                        let v = Value::Float(values[r as usize] as f64);
                        crate::execute::ops::binary(op, &v, &Value::Float(c)) == Ok(Value::Bool(true))
                    })
                    .collect();
                assert_eq!(sel.into_rows(), want, "v {op:?} {c}");
            }
        }
    }
}
