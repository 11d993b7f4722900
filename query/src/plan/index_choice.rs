//! Choosing secondary indexes for a scan: which WHERE conjuncts indexes can answer, what each
//! candidate estimates, how answers combine, and the lookups the executor runs.
//!
//! An index narrows the rows a scan visits; the choice changes speed, never answers. The
//! executor evaluates the WHERE clause on every row the indexes return, except the
//! conjuncts an index of an exact kind (all but `skip`) answered whole, alone or in an
//! intersection ([`IndexScan::exact_conjuncts`]): its answer holds exactly their rows.
//!
//! **Answerable conjuncts** compare indexed fields with constants (literals or parameters):
//! `C.f op k` (`=`, `!=`, `<`, `<=`, `>`, `>=`, either side), `C.f IN (k, …)`,
//! `C.f BETWEEN a AND b`, `within(C, center, r)`, `distance(C, center) < r` (or `<=`),
//! `inside(C, lo, hi)` (where `C` is a vector-like component or `C.f` a vector field), a call of
//! a function index `name(C)`, `has(C)`, and a required term `C` with an index that knows which
//! entities have `C` (a presence bitmap: `CREATE INDEX ON Frozen USING bitmap`). An `OR` whose
//! every side is answerable is answered by the union of their answers.
//!
//! **Combining**: the conjuncts' answers are entity bitmaps, intersected before any row is
//! touched. [`choose_index`] starts from the cheapest and adds another only while the rows it
//! is expected to remove cost more to visit than its answer costs to compute (the engine's
//! estimates, in scan-row units, with independent predicates).
//!
//! **Ordering**: [`choose_ordered`] answers `ORDER BY distance(C, p) [, more keys] LIMIT k`
//! from an rtree's nearest-first stream and `ORDER BY C.f [DESC] [, more keys] LIMIT k` from a
//! btree's ordered stream, when walking the stream is expected to touch fewer rows than the
//! best WHERE access path.

use std::ops::Bound;
use std::sync::Arc;

use ecsdb_engine::IndexReader;
use ecsdb_engine::index::{Estimate, IndexId, IndexKind, IndexPredicate, IndexRef, Wanted};
use ecsdb_engine::{ComponentId, StorageKind, Value, World};
use roaring::RoaringBitmap;

use crate::error::{Error, Span};
use crate::expr::{Expr, ExprKind, Slot};
use crate::functions::Function;
use crate::plan::PlanOptions;
use crate::plan::index_lookup::{IndexLookup, IndexScan, Operand};
use crate::plan::logical::{SelectPlan, Source, Term};
use crate::types::Builtin;
use crate::types::{BinaryOp, HierarchyFunc};

/// Visiting one row an index returned (find its entity's table and row, then run the residual
/// filter there), in the engine's scan-row cost units: random accesses, measured at 25–35×
/// testing one row of a sequential column scan on a 1M-entity world (`btree` range answers
/// of 0.1–50% of the rows, against the same query scanning). An index pays only where it
/// saves that many visits.
const ROW_VISIT: f64 = 30.0;

/// Rows a predicate on a parameter is assumed to match when planning without its value (the
/// executor checks the bound value: see [`IndexLookup::lookup`]).
const PARAM_ROWS: f64 = 16.0;

/// A predicate shape with its constants still unresolved (parameters bind at run time).
#[derive(Clone, Debug)]
enum Shape {
    Eq(Operand),
    NotEq(Operand),
    In(Vec<Operand>),
    Range(Bound<Operand>, Bound<Operand>),
    Radius { center: Operand, radius: Operand, inclusive: bool },
    Box { lo: Operand, hi: Operand },
    Function(String),
    Present,
    Descendant { ancestor: Operand, max: Option<Operand> },
}

impl Shape {
    fn resolve(&self, params: &[Value]) -> Option<IndexPredicate> {
        let v = |o: &Operand| o.resolve(params).clone();
        Some(match self {
            Shape::Eq(o) => IndexPredicate::Eq(v(o)),
            Shape::NotEq(o) => IndexPredicate::NotEq(v(o)),
            Shape::In(os) => IndexPredicate::In(os.iter().map(v).collect()),
            Shape::Range(lo, hi) => {
                IndexPredicate::Range { low: resolve_bound(lo, params), high: resolve_bound(hi, params) }
            }
            Shape::Radius { center, radius, inclusive } => IndexPredicate::WithinRadius {
                center: coords(&v(center))?,
                radius: v(radius).as_f64()?,
                inclusive: *inclusive,
            },
            Shape::Box { lo, hi } => IndexPredicate::InsideBox { lo: coords(&v(lo))?, hi: coords(&v(hi))? },
            Shape::Function(name) => IndexPredicate::Function { name: name.clone() },
            Shape::Present => IndexPredicate::Present,
            Shape::Descendant { ancestor, max } => IndexPredicate::DescendantOf {
                ancestor: v(ancestor),
                max_depth: match max.as_ref().map(v) {
                    None => None,
                    Some(Value::Int(m)) if m >= 0 => Some(m as u64),
                    Some(_) => return None,
                },
            },
        })
    }

    fn kinds(&self) -> &'static [IndexKind] {
        match self {
            Shape::Eq(_) | Shape::In(_) => &[IndexKind::Bitmap, IndexKind::Btree, IndexKind::Relation, IndexKind::Skip],
            Shape::NotEq(_) => &[IndexKind::Bitmap, IndexKind::Btree, IndexKind::Skip],
            Shape::Range(..) => &[IndexKind::Btree, IndexKind::Skip],
            Shape::Radius { .. } | Shape::Box { .. } => &[IndexKind::Rtree],
            Shape::Function(_) => &[IndexKind::Function],
            Shape::Present => &[IndexKind::Bitmap],
            Shape::Descendant { .. } => &[IndexKind::Relation],
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Shape::Eq(_) => "=",
            Shape::NotEq(_) => "!=",
            Shape::In(_) => "IN",
            Shape::Range(..) => "range",
            Shape::Radius { .. } => "radius",
            Shape::Box { .. } => "box",
            Shape::Function(_) => "function",
            Shape::Present => "presence",
            Shape::Descendant { .. } => "descendant_of",
        }
    }

    fn has_param(&self) -> bool {
        let p = |o: &Operand| matches!(o, Operand::Param(_));
        let b = |b: &Bound<Operand>| matches!(b, Bound::Included(o) | Bound::Excluded(o) if p(o));
        match self {
            Shape::Eq(o) | Shape::NotEq(o) => p(o),
            Shape::In(os) => os.iter().any(p),
            Shape::Range(lo, hi) => b(lo) || b(hi),
            Shape::Radius { center, radius, .. } => p(center) || p(radius),
            Shape::Box { lo, hi } => p(lo) || p(hi),
            Shape::Function(_) | Shape::Present => false,
            Shape::Descendant { ancestor, max } => p(ancestor) || max.as_ref().is_some_and(p),
        }
    }
}

fn resolve_bound(b: &Bound<Operand>, params: &[Value]) -> Bound<Value> {
    match b {
        Bound::Included(o) => Bound::Included(o.resolve(params).clone()),
        Bound::Excluded(o) => Bound::Excluded(o.resolve(params).clone()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn coords(v: &Value) -> Option<Vec<f64>> {
    match v {
        Value::Vec2(a) => Some(a.to_vec()),
        Value::Vec3(a) => Some(a.to_vec()),
        _ => None,
    }
}

/// A conjunct the index layer could answer: which component and fields, and the shape.
struct Candidate {
    slot: usize,
    /// Field names the index must cover, in order; `None` means "all of a vector-like
    /// component's fields".
    fields: Option<Vec<String>>,
    shape: Shape,
}

fn constant(e: &Expr) -> Option<Operand> {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => Operand::from_expr(e),
        // `[1, 2, 3]` with literal numbers.
        ExprKind::Vector(items) => {
            let xs = items
                .iter()
                .map(|i| match &i.kind {
                    ExprKind::Literal(v) => v.as_f64(),
                    _ => None,
                })
                .collect::<Option<Vec<f64>>>()?;
            match xs[..] {
                [a, b] => Some(Operand::Value(Value::Vec2([a, b]))),
                [a, b, c] => Some(Operand::Value(Value::Vec3([a, b, c]))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The component slot and fields an indexable operand reads.
fn indexed_operand(e: &Expr, source: &Source, world: &World) -> Option<(usize, Option<Vec<String>>)> {
    match &e.kind {
        ExprKind::Field { slot, field } => {
            let id = source.slots.get(*slot)?.id;
            let name = world.components().info(id).fields().get(*field)?.name.clone();
            Some((*slot, Some(vec![name])))
        }
        ExprKind::ComponentVector(slot) => Some((*slot, None)),
        ExprKind::Component(slot) if source.slots.get(*slot)?.vector_len.is_some() => Some((*slot, None)),
        _ => None,
    }
}

fn flip(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Eq | BinaryOp::Ne => op,
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::Le => BinaryOp::Ge,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Ge => BinaryOp::Le,
        _ => return None,
    })
}

fn candidate(c: &Expr, source: &Source, world: &World) -> Option<Candidate> {
    let field_op = |e: &Expr| indexed_operand(e, source, world).filter(|(_, f)| f.is_some());
    let (slot, fields, shape) = match &c.kind {
        ExprKind::Binary { op, left, right } => {
            // `distance(p, c) < r` first: its left side is a call, not a field.
            if let (ExprKind::Call { func: Function::Builtin(Builtin::Distance), args }, Some(r)) =
                (&left.kind, constant(right))
            {
                let inclusive = match op {
                    BinaryOp::Lt => false,
                    BinaryOp::Le => true,
                    _ => return None,
                };
                let (p, center) = match (indexed_operand(&args[0], source, world), constant(&args[1])) {
                    (Some(p), Some(center)) => (p, center),
                    _ => (indexed_operand(&args[1], source, world)?, constant(&args[0])?),
                };
                (p.0, p.1, Shape::Radius { center, radius: r, inclusive })
            } else {
                let (field, op, k) = match (field_op(left), constant(right)) {
                    (Some(f), Some(k)) => (f, *op, k),
                    _ => (field_op(right)?, flip(*op)?, constant(left)?),
                };
                let shape = match op {
                    BinaryOp::Eq => Shape::Eq(k),
                    BinaryOp::Ne => Shape::NotEq(k),
                    BinaryOp::Lt => Shape::Range(Bound::Unbounded, Bound::Excluded(k)),
                    BinaryOp::Le => Shape::Range(Bound::Unbounded, Bound::Included(k)),
                    BinaryOp::Gt => Shape::Range(Bound::Excluded(k), Bound::Unbounded),
                    BinaryOp::Ge => Shape::Range(Bound::Included(k), Bound::Unbounded),
                    _ => return None,
                };
                (field.0, field.1, shape)
            }
        }
        ExprKind::InList { expr, list, negated: false } => {
            let (slot, fields) = field_op(expr)?;
            let ks = list.iter().map(constant).collect::<Option<Vec<_>>>()?;
            (slot, fields, Shape::In(ks))
        }
        ExprKind::Between { expr, low, high, negated: false } => {
            let (slot, fields) = field_op(expr)?;
            (slot, fields, Shape::Range(Bound::Included(constant(low)?), Bound::Included(constant(high)?)))
        }
        ExprKind::Call { func: Function::Builtin(b), args } if args.len() == 3 => {
            let (slot, fields) = indexed_operand(&args[0], source, world)?;
            let shape = match b {
                Builtin::Within => {
                    Shape::Radius { center: constant(&args[1])?, radius: constant(&args[2])?, inclusive: true }
                }
                Builtin::Inside => Shape::Box { lo: constant(&args[1])?, hi: constant(&args[2])? },
                _ => return None,
            };
            (slot, fields, shape)
        }
        ExprKind::IndexCall { func, slot } => (*slot, Some(Vec::new()), Shape::Function(func.name().to_string())),
        ExprKind::Has(slot) => (*slot, Some(Vec::new()), Shape::Present),
        ExprKind::Hierarchy { func: HierarchyFunc::DescendantOf, slot, component, field, args, .. } => {
            let name = world.components().info(*component).fields().get(*field)?.name.clone();
            let shape = Shape::Descendant {
                ancestor: constant(args.first()?)?,
                max: match args.get(1) {
                    Some(m) => Some(constant(m)?),
                    None => None,
                },
            };
            (*slot, Some(vec![name]), shape)
        }
        _ => return None,
    };
    Some(Candidate { slot, fields, shape })
}

/// One index answering one predicate.
#[derive(Clone, Debug)]
struct IndexLeaf {
    index: String,
    /// Where the index was found when planning: each run finds it there without a search
    /// by name (a stale id falls back to the name).
    id: Option<IndexId>,
    kind: IndexKind,
    /// The component the index is over.
    component: ComponentId,
    shape: Shape,
    /// `= on Team(name)`, for EXPLAIN.
    predicate: String,
    /// What the index adds to EXPLAIN (a skip index: `2 of 977 blocks kept`).
    note: Option<String>,
    /// The WHERE conjunct it answers, when it answers one whole and exactly.
    conjunct: Option<Span>,
    /// Whether the index is over a reference field, whose handles to despawned entities read
    /// as null: such a handle never equals a value (see [`IndexLeaf::live_predicate`]).
    over_reference: bool,
}

impl IndexLeaf {
    /// `pred` as this index must be asked it on `world`: over a reference field, a despawned
    /// entity among its values matches nothing (the index still lists the rows whose handle
    /// dangles, which read as null); `None`: the answer is empty.
    fn live_predicate(&self, world: &World, pred: IndexPredicate) -> Option<IndexPredicate> {
        if !self.over_reference {
            return Some(pred);
        }
        let live = |v: &Value| !matches!(v, Value::Entity(e) if !world.is_alive(*e));
        match pred {
            IndexPredicate::Eq(v) => live(&v).then_some(IndexPredicate::Eq(v)),
            IndexPredicate::In(vs) => Some(IndexPredicate::In(vs.into_iter().filter(live).collect())),
            IndexPredicate::DescendantOf { ancestor, max_depth } => {
                live(&ancestor).then_some(IndexPredicate::DescendantOf { ancestor, max_depth })
            }
            other => Some(other),
        }
    }

    fn index_ref(&self) -> IndexRef<'_> {
        IndexRef::found(&self.index, self.id)
    }
}

/// Index answers and how they combine: evaluated into one entity set before any row is read.
#[derive(Clone, Debug)]
enum IndexTree {
    Leaf(IndexLeaf),
    /// Every child holds (intersection).
    And(Vec<IndexTree>),
    /// Some child holds (union).
    Or(Vec<IndexTree>),
}

impl IndexTree {
    /// The entities (by index) that may satisfy the condition; `None` means every entity (an
    /// index dropped since planning, or declining the bound values).
    fn answer(&self, world: &World, r: &IndexReader<'_>, params: &[Value]) -> Option<RoaringBitmap> {
        match self {
            IndexTree::Leaf(leaf) => match leaf.live_predicate(world, leaf.shape.resolve(params)?) {
                Some(pred) => Some(r.answer(leaf.index_ref(), &pred)?.into_set(None)),
                None => Some(RoaringBitmap::new()),
            },
            IndexTree::And(children) => {
                let mut sets: Vec<RoaringBitmap> = children.iter().filter_map(|c| c.answer(world, r, params)).collect();
                sets.sort_by_key(|s| s.len());
                let mut it = sets.into_iter();
                let mut acc = it.next()?;
                for s in it {
                    acc &= s;
                }
                Some(acc)
            }
            IndexTree::Or(children) => {
                let mut acc = RoaringBitmap::new();
                for c in children {
                    acc |= c.answer(world, r, params)?;
                }
                Some(acc)
            }
        }
    }

    fn describe(&self, top: bool) -> String {
        match self {
            IndexTree::Leaf(l) => match &l.note {
                Some(note) => format!("{} ({}) FOR {} [{note}]", l.index, l.kind.name(), l.predicate),
                None => format!("{} ({}) FOR {}", l.index, l.kind.name(), l.predicate),
            },
            IndexTree::And(cs) => cs.iter().map(|c| c.describe(false)).collect::<Vec<_>>().join(" AND "),
            IndexTree::Or(cs) => {
                let inner = cs.iter().map(|c| c.describe(false)).collect::<Vec<_>>().join(" OR ");
                if top { inner } else { format!("({inner})") }
            }
        }
    }

    /// Estimated rows and cost of [`answer`](Self::answer) with these parameter values;
    /// `None` when it would answer every entity.
    fn estimate(&self, r: &IndexReader<'_>, params: &[Value]) -> Option<(f64, f64)> {
        match self {
            IndexTree::Leaf(leaf) => {
                r.estimate(leaf.index_ref(), &leaf.shape.resolve(params)?).map(|e| (e.rows as f64, e.cost))
            }
            IndexTree::And(children) => {
                let parts: Vec<(f64, f64)> = children.iter().filter_map(|c| c.estimate(r, params)).collect();
                let rows = parts.iter().map(|p| p.0).reduce(f64::min)?;
                Some((rows, parts.iter().map(|p| p.1).sum()))
            }
            IndexTree::Or(children) => children.iter().try_fold((0.0, 0.0), |(rows, cost), c| {
                let (r2, c2) = c.estimate(r, params)?;
                Some((rows + r2, cost + c2))
            }),
        }
    }

    /// Whether a leaf takes a parameter (the plan assumed a selective value).
    fn has_param(&self) -> bool {
        match self {
            IndexTree::Leaf(leaf) => leaf.shape.has_param(),
            IndexTree::And(cs) | IndexTree::Or(cs) => cs.iter().any(|c| c.has_param()),
        }
    }

    /// The conjuncts the answer decides exactly: those of the leaves it intersects (a union's
    /// leaves decide only their disjuncts).
    fn exact_conjuncts(&self) -> Vec<Span> {
        match self {
            IndexTree::Leaf(leaf) => leaf.conjunct.into_iter().collect(),
            IndexTree::And(cs) => cs.iter().flat_map(|c| c.exact_conjuncts()).collect(),
            IndexTree::Or(_) => Vec::new(),
        }
    }

    fn indexes(&self, out: &mut Vec<String>) {
        match self {
            IndexTree::Leaf(l) => {
                if !out.contains(&l.index) {
                    out.push(l.index.clone());
                }
            }
            IndexTree::And(cs) | IndexTree::Or(cs) => cs.iter().for_each(|c| c.indexes(out)),
        }
    }
}

/// A planned tree with its estimated rows and cost of computing its answer.
struct Planned {
    tree: IndexTree,
    rows: f64,
    cost: f64,
}

/// What the planner needs while choosing: the reader (one refresh per statement) and sizes.
struct Chooser<'a, 'w> {
    reader: &'a IndexReader<'w>,
    source: &'a Source,
    world: &'w World,
    /// Rows in the world's tables (what a scan would read at most).
    total_rows: f64,
    /// Take every index that applies.
    prefer: bool,
}

impl Chooser<'_, '_> {
    /// The cheapest index answering one candidate.
    fn leaf(&self, cand: &Candidate) -> Option<Planned> {
        let slot = self.source.slots.get(cand.slot)?;
        let info = self.world.components().info(slot.id);
        let want: Vec<String> = match &cand.fields {
            Some(f) => f.clone(),
            None => info.fields().iter().map(|f| f.name.clone()).collect(),
        };
        let mut best: Option<Planned> = None;
        for ix in self.reader.on(slot.id) {
            if ix.fields != want || !cand.shape.kinds().contains(&ix.kind) {
                continue;
            }
            if let Shape::Function(name) = &cand.shape
                && *name != ix.name
            {
                continue;
            }
            let over_reference = ix.fields.len() == 1
                && info.field_index(&ix.fields[0]).is_some_and(|f| self.world.reference(slot.id, f).is_some());
            // Over a reference, a dangling handle reads as null: `!=` and ranges would have to
            // leave out rows the index keys by their stale handle; the scan reads them right.
            if over_reference && matches!(cand.shape, Shape::NotEq(_) | Shape::Range(..)) {
                continue;
            }
            let (rows, cost, note) = match cand.shape.resolve(&[]) {
                Some(pred) if !cand.shape.has_param() => match self.reader.estimate(&ix.name, &pred) {
                    Some(e) => (e.rows as f64, e.cost, self.reader.explain(&ix.name, &pred)),
                    None => continue,
                },
                // With parameters the values are unknown at plan time: assume a selective
                // value; the executor checks the bound values and scans when they are not.
                _ => (PARAM_ROWS, PARAM_ROWS * 10.0, None),
            };
            if best.as_ref().is_none_or(|b| rows * ROW_VISIT + cost < b.rows * ROW_VISIT + b.cost) {
                let fields = if want.is_empty() { String::new() } else { format!("({})", want.join(", ")) };
                let predicate = match &cand.shape {
                    Shape::Function(name) => format!("{name}({})", info.name()),
                    shape => format!("{} on {}{fields}", shape.describe(), info.name()),
                };
                let leaf = IndexLeaf {
                    index: ix.name.clone(),
                    id: self.reader.id(&ix.name),
                    kind: ix.kind,
                    component: ix.component_id,
                    shape: cand.shape.clone(),
                    predicate,
                    note,
                    conjunct: None,
                    over_reference,
                };
                best = Some(Planned { tree: IndexTree::Leaf(leaf), rows, cost });
            }
        }
        best
    }

    /// The best index plan for one condition: a leaf, a union for `OR`, a combination for a
    /// parenthesised `AND`.
    fn condition(&self, e: &Expr) -> Option<Planned> {
        match &e.kind {
            ExprKind::Binary { op: BinaryOp::Or, .. } => {
                let mut children = Vec::new();
                let (mut rows, mut cost) = (0.0, 0.0);
                for d in disjuncts(e) {
                    let p = self.condition(d)?;
                    rows += p.rows;
                    cost += p.cost;
                    children.push(p.tree);
                }
                Some(Planned { tree: IndexTree::Or(children), rows: rows.min(self.total_rows), cost })
            }
            ExprKind::Binary { op: BinaryOp::And, .. } => {
                let parts: Vec<Planned> = e.conjuncts().into_iter().filter_map(|c| self.condition(c)).collect();
                self.combine(parts)
            }
            _ => self.leaf(&candidate(e, self.source, self.world)?),
        }
    }

    /// Intersects answers greedily, cheapest first, while each saves more row visits than its
    /// answer costs (predicates assumed independent).
    fn combine(&self, mut parts: Vec<Planned>) -> Option<Planned> {
        parts.sort_by(|a, b| (a.rows * ROW_VISIT + a.cost).total_cmp(&(b.rows * ROW_VISIT + b.cost)));
        let mut it = parts.into_iter();
        let first = it.next()?;
        let (mut rows, mut cost) = (first.rows, first.cost);
        let mut chosen = vec![first.tree];
        let n = self.total_rows.max(1.0);
        for p in it {
            let narrowed = rows * (p.rows / n).min(1.0);
            if self.prefer || p.cost < (rows - narrowed) * ROW_VISIT {
                rows = narrowed;
                cost += p.cost;
                chosen.push(p.tree);
            }
        }
        let tree = if chosen.len() == 1 { chosen.pop()? } else { IndexTree::And(chosen) };
        Some(Planned { tree, rows, cost })
    }

    /// Presence answers for required terms: only worth it for sparse components alone (a
    /// table component's presence is the table match itself), but any can narrow others.
    fn presence(&self) -> Vec<(Planned, bool)> {
        let mut out = Vec::new();
        for t in &self.source.terms {
            let Term::Required { slot, .. } = t else { continue };
            let Some(s) = self.source.slots.get(*slot) else { continue };
            let sparse = self.world.components().info(s.id).storage() == StorageKind::Sparse;
            let cand = Candidate { slot: *slot, fields: Some(Vec::new()), shape: Shape::Present };
            if let Some(p) = self.leaf(&cand) {
                out.push((p, sparse));
            }
        }
        out
    }
}

fn disjuncts(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    fn go<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
        match &e.kind {
            ExprKind::Binary { op: BinaryOp::Or, left, right } => {
                go(left, out);
                go(right, out);
            }
            _ => out.push(e),
        }
    }
    go(e, &mut out);
    out
}

/// Runs the chosen indexes at execution time. If an index was dropped since the plan was
/// made, declines the bound values, or (planned without them) finds them not selective, the
/// executor scans: the answer is the same, only the path differs.
struct EngineLookup {
    tree: IndexTree,
    /// The indexes the tree reads: the only ones a lookup refreshes.
    names: Vec<String>,
}

impl IndexLookup for EngineLookup {
    fn lookup(
        &self,
        world: &World,
        params: &[Value],
        scan_rows: usize,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Result<bool, Error> {
        let cheaper = |(rows, cost): (f64, f64)| rows * ROW_VISIT + cost < scan_rows as f64;
        if let IndexTree::Leaf(leaf) = &self.tree {
            let reader = world.index_reader_for(Wanted::One(&leaf.index));
            // One index: its predicate is resolved once, and the answer visited where the
            // index holds it (a point query builds no set).
            let pred = match &leaf.shape {
                // The point query's shape, built in place (a general resolve moves the
                // predicate, a hundred bytes, out through an Option).
                Shape::Eq(o) => IndexPredicate::Eq(o.resolve(params).clone()),
                shape => match shape.resolve(params) {
                    Some(pred) => pred,
                    None => return Ok(false),
                },
            };
            let Some(pred) = leaf.live_predicate(world, pred) else { return Ok(true) };
            if leaf.shape.has_param() {
                let accept = |e: &Estimate| cheaper((e.rows as f64, e.cost));
                return Ok(reader.answer_each_if(leaf.index_ref(), &pred, accept, visit) == Some(true));
            }
            return Ok(reader.answer_each(leaf.index_ref(), &pred, visit).is_some());
        }
        let reader = world.index_reader_for(Wanted::Named(&self.names));
        if self.tree.has_param() && !self.tree.estimate(&reader, params).is_some_and(cheaper) {
            return Ok(false);
        }
        let Some(set) = self.tree.answer(world, &reader, params) else { return Ok(false) };
        ecsdb_engine::index::visit_in_batches(set.iter(), visit);
        Ok(true)
    }

    fn component(&self) -> Option<ComponentId> {
        match &self.tree {
            IndexTree::Leaf(leaf) => Some(leaf.component),
            _ => None,
        }
    }
}

/// [`choose_index`], or why a scan was chosen: no index answers the WHERE clause, or the best
/// combination that does would visit more than a scan (EXPLAIN says which).
pub fn choose_index_or_why(
    source: &Source,
    world: &World,
    scan_rows: usize,
    options: PlanOptions,
) -> Result<IndexScan, String> {
    let Some(planned) = index_plan_with(source, world, options.prefer_indexes) else {
        let none = if world.index_definitions().is_empty() { "no index exists" } else { "no index applies" };
        return Err(none.to_string());
    };
    if !(options.prefer_indexes || planned.rows * ROW_VISIT + planned.cost < scan_rows as f64) {
        return Err(format!(
            "{} would cost more than scanning (index est. {} rows)",
            planned.tree.describe(true),
            planned.rows.round() as usize
        ));
    }
    let mut names = Vec::new();
    planned.tree.indexes(&mut names);
    let exact_conjuncts = planned.tree.exact_conjuncts();
    Ok(IndexScan {
        exact_conjuncts,
        description: format!(
            "{} {}",
            if matches!(planned.tree, IndexTree::Leaf(_)) { "INDEX" } else { "INDEXES" },
            planned.tree.describe(true)
        ),
        estimated_rows: planned.rows.round() as usize,
        lookup: Arc::new(EngineLookup { tree: planned.tree, names }),
    })
}

/// The indexes planning the statement may consult: those over components its WHERE clause
/// names, and presence indexes of its required terms. The others are left to refresh when
/// something reads them (an index on a component the statement only reads may be costly to
/// bring up to date, such as an rtree whose points all moved).
fn consulted_indexes(source: &Source, world: &World) -> Vec<String> {
    let required = |slot: Slot| source.terms.iter().any(|t| matches!(t, Term::Required { slot: s, .. } if *s == slot));
    let in_filter = |slot: Slot| source.filter.as_ref().is_some_and(|f| f.names_slot(slot));
    world
        .index_definitions()
        .into_iter()
        .filter(|def| {
            let Ok(id) = world.component_id(&def.component) else { return false };
            let Some(slot) = source.slot_of(id) else { return false };
            in_filter(slot) || (def.fields.is_empty() && required(slot))
        })
        .filter_map(|def| def.name)
        .collect()
}

fn best_index_plan(source: &Source, world: &World, scan_rows: usize, prefer: bool) -> Option<Planned> {
    let planned = index_plan_with(source, world, prefer)?;
    (prefer || planned.rows * ROW_VISIT + planned.cost < scan_rows as f64).then_some(planned)
}

/// The cheapest combination of index answers for the WHERE clause and terms, whatever a scan
/// would cost (`prefer`: take every answer that narrows, as `PlanOptions::prefer_indexes`).
fn index_plan_with(source: &Source, world: &World, prefer: bool) -> Option<Planned> {
    if world.index_definitions().is_empty() {
        return None;
    }
    let reader = world.index_reader_for(Wanted::Named(&consulted_indexes(source, world)));
    let total_rows = world.tables().iter().map(|t| t.len()).sum::<usize>() as f64;
    let chooser = Chooser { reader: &reader, source, world, total_rows, prefer };
    let conjuncts = source.filter.as_ref().map(|f| f.conjuncts()).unwrap_or_default();
    let mut parts: Vec<Planned> = Vec::new();
    for c in &conjuncts {
        let Some(mut planned) = chooser.condition(c) else { continue };
        // Every kind but `skip` answers exactly (the engine's index contract): such a leaf
        // decides its conjunct, which the scan then need not test again. The span names the
        // conjunct; one shared with another conjunct (text the binder made up) names none.
        if let IndexTree::Leaf(leaf) = &mut planned.tree {
            let unique = c.span.start < c.span.end && conjuncts.iter().filter(|o| o.span == c.span).count() == 1;
            if leaf.kind != IndexKind::Skip && unique {
                leaf.conjunct = Some(c.span);
            }
        }
        parts.push(planned);
    }
    let presence = chooser.presence();
    let alone = parts.is_empty();
    for (p, sparse) in presence {
        if !alone || sparse {
            parts.push(p);
        }
    }
    chooser.combine(parts)
}

/// The WHERE clause's estimated selectivity: from index estimates where a conjunct has one,
/// otherwise a guess by shape (`=`: 0.1, a range: 1/3, anything else: 0.5), conjuncts taken as
/// independent.
fn where_selectivity(source: &Source, world: &World) -> f64 {
    let Some(filter) = &source.filter else { return 1.0 };
    let reader = world.index_reader_for(Wanted::Named(&consulted_indexes(source, world)));
    let total_rows = world.tables().iter().map(|t| t.len()).sum::<usize>() as f64;
    let chooser = Chooser { reader: &reader, source, world, total_rows, prefer: false };
    let mut selectivity = 1.0;
    for c in filter.conjuncts() {
        selectivity *= match chooser.condition(c) {
            Some(p) => (p.rows / total_rows.max(1.0)).min(1.0),
            None => match candidate(c, source, world).map(|c| c.shape) {
                Some(Shape::Eq(_) | Shape::In(_)) => 0.1,
                Some(Shape::Range(..) | Shape::Radius { .. } | Shape::Box { .. }) => 1.0 / 3.0,
                _ => 0.5,
            },
        };
    }
    selectivity.max(1e-9)
}

/// How an ordered index stream is asked for.
#[derive(Clone, Debug)]
pub enum OrderedSource {
    /// An rtree's nearest-first stream from a point (a literal or a parameter).
    Nearest {
        /// The query point.
        point: Operand,
    },
    /// A btree's stream in key order, limited to the range the WHERE clause implies.
    Field {
        /// `DESC`.
        descending: bool,
        /// Lower end from the WHERE clause.
        low: Bound<Operand>,
        /// Upper end from the WHERE clause.
        high: Bound<Operand>,
    },
}

/// `ORDER BY <key> [, more keys] LIMIT k` answered by walking an index's stream, which yields
/// entities in the first key's order (ties by entity, the language's own tie rule).
#[derive(Clone, Debug)]
pub struct OrderedPlan {
    /// The index's name.
    pub index: String,
    /// Its kind (rtree or btree).
    pub kind: IndexKind,
    /// The stream.
    pub source: OrderedSource,
    /// Whether ORDER BY has keys after the first (then ties of the first key are settled by
    /// a second lookup of every row tied with the last one kept).
    pub more_keys: bool,
}

impl OrderedPlan {
    /// The stream's predicate for a prefix of `fetch` entities, once parameters are bound.
    pub fn stream(&self, params: &[Value], fetch: usize) -> Option<IndexPredicate> {
        Some(match &self.source {
            OrderedSource::Nearest { point } => {
                IndexPredicate::Nearest { point: coords(point.resolve(params))?, k: fetch }
            }
            OrderedSource::Field { descending, low, high } => IndexPredicate::Ordered {
                low: resolve_bound(low, params),
                high: resolve_bound(high, params),
                descending: *descending,
                limit: Some(fetch),
            },
        })
    }

    /// Every entity whose first key is at or before `key` in the ORDER BY direction (a
    /// superset of the rows that can sort before a row with that key); `None` for a null key.
    pub fn up_to(&self, params: &[Value], key: &Value) -> Option<IndexPredicate> {
        if matches!(key, Value::Null) {
            return None;
        }
        Some(match &self.source {
            OrderedSource::Nearest { point } => IndexPredicate::WithinRadius {
                center: coords(point.resolve(params))?,
                radius: key.as_f64()?,
                inclusive: true,
            },
            OrderedSource::Field { descending: false, low, .. } => {
                IndexPredicate::Range { low: resolve_bound(low, params), high: Bound::Included(key.clone()) }
            }
            OrderedSource::Field { descending: true, high, .. } => {
                IndexPredicate::Range { low: Bound::Included(key.clone()), high: resolve_bound(high, params) }
            }
        })
    }
}

/// The ordered-stream plan for a top-k SELECT: its first ORDER BY key is ascending
/// `distance` between a required vector-like component and a constant point with an rtree
/// over that component, or a field of a required component with a btree over it; and walking
/// the stream (about `k` divided by the WHERE clause's selectivity rows) is expected to touch
/// fewer rows than the best WHERE access path.
pub fn choose_ordered(plan: &SelectPlan, world: &World, options: PlanOptions) -> Option<OrderedPlan> {
    let key = plan.order_by.first()?;
    if plan.aggregated || world.index_definitions().is_empty() {
        return None;
    }
    let source = &plan.source;
    let required = |slot: usize| source.terms.iter().any(|t| matches!(t, Term::Required { slot: s, .. } if *s == slot));
    let (slot, want, kind, ordered) = match &key.expr.kind {
        ExprKind::Call { func: Function::Builtin(Builtin::Distance), args } if !key.descending => {
            let ((slot, fields), point) = match (indexed_operand(&args[0], source, world), constant(&args[1])) {
                (Some(p), Some(c)) => (p, c),
                _ => (indexed_operand(&args[1], source, world)?, constant(&args[0])?),
            };
            let info = world.components().info(source.slots.get(slot)?.id);
            let want = fields.unwrap_or_else(|| info.fields().iter().map(|f| f.name.clone()).collect());
            (slot, want, IndexKind::Rtree, OrderedSource::Nearest { point })
        }
        ExprKind::Field { slot, field } => {
            let info = world.components().info(source.slots.get(*slot)?.id);
            let f = info.fields().get(*field)?;
            // A null entity sorts first but falls outside every range: keep to fields that
            // cannot be null.
            if f.ty == ecsdb_engine::FieldType::Entity {
                return None;
            }
            let name = f.name.clone();
            // The tightest range on the same field the WHERE clause states.
            let (mut low, mut high) = (Bound::Unbounded, Bound::Unbounded);
            if let Some(filter) = &source.filter {
                for c in filter.conjuncts() {
                    let Some(cand) = candidate(c, source, world) else { continue };
                    if cand.slot != *slot || cand.fields.as_deref() != Some(std::slice::from_ref(&name)) {
                        continue;
                    }
                    let (lo, hi) = match cand.shape {
                        Shape::Range(lo, hi) => (lo, hi),
                        Shape::Eq(k) => (Bound::Included(k.clone()), Bound::Included(k)),
                        _ => continue,
                    };
                    if matches!(low, Bound::Unbounded) {
                        low = lo;
                    }
                    if matches!(high, Bound::Unbounded) {
                        high = hi;
                    }
                }
            }
            (*slot, vec![name], IndexKind::Btree, OrderedSource::Field { descending: key.descending, low, high })
        }
        _ => return None,
    };
    // An entity lacking the component would sort by a null key: only a required one qualifies.
    if !required(slot) {
        return None;
    }
    let id = source.slots.get(slot)?.id;
    let ix = world.indexes_on(id).into_iter().find(|ix| ix.kind == kind && ix.fields == want)?;
    // Compare with the best other way: walking pulls and visits about need / selectivity rows;
    // otherwise every matching row is found (by index or scan) and a top-k keeps `need`.
    let total = world.tables().iter().map(|t| t.len()).sum::<usize>() as f64;
    let need = match plan.limit.as_ref().map(|l| &l.kind) {
        Some(ExprKind::Literal(v)) => v.as_f64().unwrap_or(100.0),
        _ => 100.0,
    } + match plan.offset.as_ref().map(|o| &o.kind) {
        Some(ExprKind::Literal(v)) => v.as_f64().unwrap_or(0.0),
        _ => 0.0,
    };
    if !options.prefer_indexes {
        let walk = need / where_selectivity(source, world) * ROW_VISIT;
        let other = best_index_plan(source, world, total as usize, false)
            .map_or(total, |best| (best.rows * ROW_VISIT + best.cost).min(total));
        if walk > other {
            return None;
        }
    }
    Some(OrderedPlan { index: ix.name, kind, source: ordered, more_keys: plan.order_by.len() > 1 })
}
