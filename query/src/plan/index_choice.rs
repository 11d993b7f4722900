//! Choosing a secondary index for a scan: which WHERE conjuncts an index can answer, what each
//! candidate index estimates, and the lookup the executor runs.
//!
//! An index only ever narrows the rows a scan visits: the executor still evaluates the whole
//! WHERE clause on every row the index returns, so the choice changes speed, never answers.
//! A conjunct is answerable when it compares indexed fields with constants (literals or
//! parameters): `C.f op k` (`=`, `<`, `<=`, `>`, `>=`, either side), `C.f IN (k, …)`,
//! `C.f BETWEEN a AND b`, `within(C, center, r)`, `distance(C, center) < r` (or `<=`), and
//! `inside(C, lo, hi)`, where `C` is a vector-like component or `C.f` a vector field.

use std::ops::Bound;
use std::sync::Arc;

use ecsdb_engine::index::{IndexKind, IndexPredicate};
use ecsdb_engine::{Value, World};
use roaring::RoaringBitmap;

use crate::error::Error;
use crate::functions::{Builtin, Function};
use crate::plan::logical::{BinaryOp, Expr, ExprKind, SelectPlan, Source, Term};
use crate::plan::physical::{IndexLookup, IndexScan, Operand};

/// A predicate shape with its constants still unresolved (parameters bind at run time).
#[derive(Clone, Debug)]
enum Shape {
    Eq(Operand),
    In(Vec<Operand>),
    Range(Bound<Operand>, Bound<Operand>),
    Radius { center: Operand, radius: Operand, inclusive: bool },
    Box { lo: Operand, hi: Operand },
}

impl Shape {
    fn resolve(&self, params: &[Value]) -> Option<IndexPredicate> {
        let v = |o: &Operand| o.resolve(params).clone();
        let bound = |b: &Bound<Operand>| match b {
            Bound::Included(o) => Bound::Included(v(o)),
            Bound::Excluded(o) => Bound::Excluded(v(o)),
            Bound::Unbounded => Bound::Unbounded,
        };
        Some(match self {
            Shape::Eq(o) => IndexPredicate::Eq(v(o)),
            Shape::In(os) => IndexPredicate::In(os.iter().map(v).collect()),
            Shape::Range(lo, hi) => IndexPredicate::Range { low: bound(lo), high: bound(hi) },
            Shape::Radius { center, radius, inclusive } => IndexPredicate::WithinRadius {
                center: coords(&v(center))?,
                radius: v(radius).as_f64()?,
                inclusive: *inclusive,
            },
            Shape::Box { lo, hi } => IndexPredicate::InsideBox { lo: coords(&v(lo))?, hi: coords(&v(hi))? },
        })
    }

    fn kinds(&self) -> &'static [IndexKind] {
        match self {
            Shape::Eq(_) | Shape::In(_) => &[IndexKind::Bitmap, IndexKind::Btree],
            Shape::Range(..) => &[IndexKind::Btree],
            Shape::Radius { .. } | Shape::Box { .. } => &[IndexKind::Rtree],
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Shape::Eq(_) => "=",
            Shape::In(_) => "IN",
            Shape::Range(..) => "range",
            Shape::Radius { .. } => "radius",
            Shape::Box { .. } => "box",
        }
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
        BinaryOp::Eq => BinaryOp::Eq,
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
        _ => return None,
    };
    Some(Candidate { slot, fields, shape })
}

/// Runs the chosen index at execution time. If the index was dropped since the plan was
/// made, or declines the bound values, it answers every live entity: the scan's own filter
/// then decides, so the answer is the same, only slower.
struct EngineLookup {
    index: String,
    shape: Shape,
}

impl IndexLookup for EngineLookup {
    fn lookup(&self, world: &World, params: &[Value]) -> Result<RoaringBitmap, Error> {
        if let Some(pred) = self.shape.resolve(params) {
            if let Ok(Some(answer)) = world.index_answer(&self.index, &pred) {
                return Ok(answer.into_set(None));
            }
        }
        let mut all = RoaringBitmap::new();
        for t in world.tables() {
            all.extend(t.entities().iter().map(|e| e.index()));
        }
        Ok(all)
    }
}

/// The cheapest index scan answering one WHERE conjunct, if any is cheaper than scanning
/// half of `scan_rows`.
pub fn choose_index(source: &Source, world: &World, scan_rows: usize) -> Option<IndexScan> {
    let filter = source.filter.as_ref()?;
    let mut best: Option<(usize, IndexScan)> = None;
    for c in filter.conjuncts() {
        let Some(cand) = candidate(c, source, world) else { continue };
        let Some(slot) = source.slots.get(cand.slot) else { continue };
        let info = world.components().info(slot.id);
        let want: Vec<String> = match &cand.fields {
            Some(f) => f.clone(),
            None => info.fields().iter().map(|f| f.name.clone()).collect(),
        };
        for ix in world.indexes_on(slot.id) {
            if ix.fields != want || !cand.shape.kinds().contains(&ix.kind) {
                continue;
            }
            // With parameters the values are unknown at plan time: assume a selective lookup.
            let estimate = match cand.shape.resolve(&[]) {
                Some(pred) if !has_param(&cand.shape) => match world.index_estimate(&ix.name, &pred) {
                    Ok(Some(e)) => e.rows as usize,
                    _ => continue,
                },
                _ => scan_rows / 10,
            };
            if best.as_ref().is_none_or(|(rows, _)| estimate < *rows) {
                let scan = IndexScan {
                    index: ix.name.clone(),
                    kind: ix.kind.name().to_string(),
                    predicate: format!("{} on {}({})", cand.shape.describe(), info.name(), want.join(", ")),
                    estimated_rows: estimate,
                    lookup: Arc::new(EngineLookup { index: ix.name.clone(), shape: cand.shape.clone() }),
                };
                best = Some((estimate, scan));
            }
        }
    }
    best.filter(|(rows, _)| *rows <= scan_rows / 2).map(|(_, s)| s)
}

fn has_param(shape: &Shape) -> bool {
    let p = |o: &Operand| matches!(o, Operand::Param(_));
    let b = |b: &Bound<Operand>| matches!(b, Bound::Included(o) | Bound::Excluded(o) if p(o));
    match shape {
        Shape::Eq(o) => p(o),
        Shape::In(os) => os.iter().any(p),
        Shape::Range(lo, hi) => b(lo) || b(hi),
        Shape::Radius { center, radius, .. } => p(center) || p(radius),
        Shape::Box { lo, hi } => p(lo) || p(hi),
    }
}

/// `ORDER BY distance(C, point) LIMIT k` answered from an rtree on `C`.
#[derive(Clone, Debug)]
pub struct NearestPlan {
    /// The rtree's name.
    pub index: String,
    /// The query point (a literal or a parameter).
    pub point: Operand,
}

impl NearestPlan {
    /// The query point's coordinates, once parameters are bound.
    pub fn point(&self, params: &[Value]) -> Option<Vec<f64>> {
        coords(self.point.resolve(params))
    }
}

/// The nearest-neighbour plan for a SELECT, when its only ORDER BY key is ascending
/// `distance` between a required vector-like component and a constant point, and an rtree
/// covers that component's fields. The index streams entities by (distance, entity), the
/// language's own order for that key, so a prefix of the stream that yields enough rows
/// passing the WHERE clause holds exactly the first rows of the answer.
pub fn choose_nearest(plan: &SelectPlan, world: &World) -> Option<NearestPlan> {
    let [key] = plan.order_by.as_slice() else { return None };
    if key.descending || plan.aggregated {
        return None;
    }
    let ExprKind::Call { func: Function::Builtin(Builtin::Distance), args } = &key.expr.kind else { return None };
    let source = &plan.source;
    let ((slot, fields), point) = match (indexed_operand(&args[0], source, world), constant(&args[1])) {
        (Some(p), Some(c)) => (p, c),
        _ => (indexed_operand(&args[1], source, world)?, constant(&args[0])?),
    };
    // Entities lacking C would sort first (null distance): only a required C qualifies.
    if !source.terms.iter().any(|t| matches!(t, Term::Required { slot: s, .. } if *s == slot)) {
        return None;
    }
    let id = source.slots.get(slot)?.id;
    let info = world.components().info(id);
    let want: Vec<String> = match fields {
        Some(f) => f,
        None => info.fields().iter().map(|f| f.name.clone()).collect(),
    };
    let ix = world.indexes_on(id).into_iter().find(|ix| ix.kind == IndexKind::Rtree && ix.fields == want)?;
    Some(NearestPlan { index: ix.name, point })
}
