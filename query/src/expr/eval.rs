//! The vectorized evaluator: an expression over a batch of rows, node by node, into typed
//! [`Vector`]s.
//!
//! Leaves (fields, components, `entity`, `has`, function-index calls, group keys and
//! aggregates) come from a [`Leaves`] source: the rows of a table
//! ([`crate::execute::scan::TableCtx`], which reads column memory straight into typed
//! vectors), groups after aggregation, or no rows at all ([`NoRows`], for constants). Each
//! inner node runs one kernel over the whole batch. `AND` and `OR` evaluate their right side
//! only for the rows the left side leaves open; [`Evaluator::filter`] narrows a selection
//! through `AND`s so each conjunct sees only the rows still in.

use std::marker::PhantomData;
use std::rc::Rc;

use ecsdb_engine::{Value, ValueType, World};

use crate::error::{Error, ErrorKind};
use crate::expr::compare::{self, InSet};
use crate::expr::compiled::Program;
use crate::expr::relations;
use crate::expr::vector::{Prim, Validity, Vector};
use crate::expr::{Expr, ExprKind, eval_error};
use crate::expr::{arith, functions, like};
use crate::functions::Function;
use crate::types::{BinaryOp, HierarchyFunc};

/// Where the leaves of an expression get their values.
pub trait Leaves<'w> {
    /// The value of leaf `e` for each of `rows`.
    fn leaf(&self, e: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error>;

    /// The world the rows are in, for expressions that follow entities (paths, hierarchy
    /// functions); `None` where there are no table rows.
    fn world(&self) -> Option<&'w World> {
        None
    }

    /// Expression `e` compiled against this source's columns ([`crate::expr::compiled`]),
    /// when it compiles; sources without table columns have none.
    fn compiled(&self, _e: &Expr, _params: &[Value]) -> Option<Rc<Program<'w>>> {
        None
    }
}

/// A source without rows: every leaf is an error (used for constants).
pub struct NoRows;

impl<'w> Leaves<'w> for NoRows {
    fn leaf(&self, e: &Expr, _rows: &[u32]) -> Result<Vector<'w>, Error> {
        Err(Error::new(ErrorKind::Type, "this value cannot read components or the entity here").with_span(e.span))
    }
}

fn call_error(e: &Expr, func: &Function, m: String) -> Error {
    let kind = match func {
        Function::Registered(..) => ErrorKind::Constraint,
        Function::Builtin(_) => ErrorKind::Type,
    };
    Error::new(kind, m).with_span(e.span)
}

/// Evaluates expressions over batches of rows of one source.
pub struct Evaluator<'s, 'w, S: Leaves<'w> + ?Sized> {
    source: &'s S,
    params: &'s [Value],
    _world: PhantomData<&'w ()>,
}

impl<'s, 'w, S: Leaves<'w> + ?Sized> Evaluator<'s, 'w, S> {
    /// An evaluator reading leaves from `source`, with the statement's parameter values.
    pub fn new(source: &'s S, params: &'s [Value]) -> Self {
        Evaluator { source, params, _world: PhantomData }
    }

    /// The value of a row-free expression.
    pub fn eval_one(&self, e: &Expr) -> Result<Value, Error> {
        let v = self.eval(e, &[0])?;
        Ok(if v.is_empty() { Value::Null } else { v.value(0) })
    }

    /// The expression's value for each row, as [`Value`]s (for the edges: results, keys).
    pub fn eval_values(&self, e: &Expr, rows: &[u32]) -> Result<Vec<Value>, Error> {
        Ok(self.eval(e, rows)?.into_values())
    }

    /// The rows of `rows` (in order) for which condition `e` is true.
    pub fn filter(&self, e: &Expr, rows: &[u32]) -> Result<Vec<u32>, Error> {
        if let ExprKind::Binary { op: BinaryOp::And, left, right } = &e.kind {
            let kept = self.filter(left, rows)?;
            if kept.is_empty() {
                return Ok(kept);
            }
            return self.filter(right, &kept);
        }
        if let Some(cond) = self.compiled(e)
            && let Some(c) = cond.as_cond()
        {
            let mut out = Vec::with_capacity(rows.len());
            if Program::select(c, rows, &mut out).is_ok() {
                return Ok(out);
            }
        }
        let v = self.eval(e, rows)?;
        if let Vector::Bool(p) = &v {
            return Ok(select(rows, &p.values, p.valid.as_deref()));
        }
        let (t, _) = compare::truth(&v, rows.len()).map_err(|m| eval_error(e, m))?;
        Ok(select(rows, &t, None))
    }

    /// The expression's value for each row.
    pub fn eval(&self, e: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let n = rows.len();
        // A part that reads no row (parameters and what is computed from them, such as
        // `[$x * 2, $y, 0]`) has one value for the whole batch: computed once, on one row, by
        // the same kernels, rather than once per row.
        if n > 1 && !matches!(e.kind, ExprKind::Literal(_) | ExprKind::Param(_)) && !e.reads_row() {
            let one = self.eval(e, &rows[..1])?;
            return Ok(Vector::Scalar(if one.is_empty() { Value::Null } else { one.value(0) }, n));
        }
        if let Some(program) = self.compiled(e)
            && let Ok(v) = program.eval(rows)
        {
            return Ok(v);
        }
        // A row needs the general rules (an overflow, say): evaluate it here.
        let at = |m: String| eval_error(e, m);
        Ok(match &e.kind {
            ExprKind::Literal(v) => Vector::Scalar(v.clone(), n),
            ExprKind::Param(p) => Vector::Scalar(self.params.get(*p).cloned().unwrap_or(Value::Null), n),
            ExprKind::Entity
            | ExprKind::Field { .. }
            | ExprKind::Component(_)
            | ExprKind::ComponentVector(_)
            | ExprKind::Has(_)
            | ExprKind::Changed { .. }
            | ExprKind::IndexCall { .. }
            | ExprKind::GroupKey(_)
            | ExprKind::Aggregate(_) => self.source.leaf(e, rows)?,
            // Following entities: row by row through the world (the entity graph is not
            // columnar); the results become typed vectors again.
            ExprKind::Path { base, steps } => {
                let world = self.world_for(e)?;
                let start = self.eval(base, rows)?;
                if let Some(v) = relations::typed_path(world, &start, steps) {
                    return Ok(v);
                }
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(relations::follow_path(world, &start.value(i), steps, e)?);
                }
                Vector::from_values(out)
            }
            ExprKind::Hierarchy { func, component, field, args, .. } => {
                let world = self.world_for(e)?;
                let this = Expr { kind: ExprKind::Entity, ty: ValueType::Entity, span: e.span };
                let entities = self.source.leaf(&this, rows)?;
                let cols: Vec<Vector<'w>> = args.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                if *func == HierarchyFunc::DescendantOf
                    && let Some(extra) = cols.iter().map(Vector::as_scalar).collect::<Option<Vec<&Value>>>()
                {
                    return relations::descendant_of_batch(world, *component, *field, &entities, &extra, e);
                }
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let extra: Vec<Value> = cols.iter().map(|c| c.value(i)).collect();
                    let extra: Vec<&Value> = extra.iter().collect();
                    out.push(relations::hierarchy(world, *func, *component, *field, &entities.value(i), &extra, e)?);
                }
                Vector::from_values(out)
            }
            ExprKind::Neg(x) => arith::neg(&self.eval(x, rows)?, n).map_err(at)?,
            ExprKind::Not(x) => compare::not(&self.eval(x, rows)?, n).map_err(at)?,
            ExprKind::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right } => {
                self.logic(*op, left, right, rows)?
            }
            ExprKind::Binary { op, left, right } => {
                let l = self.eval(left, rows)?;
                let r = self.eval(right, rows)?;
                if op.is_comparison() {
                    compare::compare(*op, &l, &r, n).map_err(at)?
                } else {
                    arith::binary(*op, &l, &r, n).map_err(at)?
                }
            }
            ExprKind::Between { expr, low, high, negated } => {
                let x = self.eval(expr, rows)?;
                let lo = self.eval(low, rows)?;
                let hi = self.eval(high, rows)?;
                let ge = compare::compare(BinaryOp::Ge, &x, &lo, n).map_err(at)?;
                let le = compare::compare(BinaryOp::Le, &x, &hi, n).map_err(at)?;
                let both = and_or(BinaryOp::And, &ge, &le, n).map_err(at)?;
                if *negated { compare::not(&both, n).map_err(at)? } else { both }
            }
            ExprKind::InList { expr, list, negated } => {
                let x = self.eval(expr, rows)?;
                let items: Vec<Vector<'w>> = list.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                let constants: Option<Vec<&Value>> = items.iter().map(Vector::as_scalar).collect();
                let fast = constants
                    .filter(|c| !c.is_empty() && c.iter().all(|v| !v.is_null()))
                    .and_then(|c| InSet::build(&x, &c))
                    .and_then(|set| set.test(&x, n, *negated));
                match fast {
                    Some(v) => v,
                    None => compare::in_list_rows(&x, &items, n, *negated).map_err(at)?,
                }
            }
            ExprKind::Like { expr, pattern, negated } => {
                let s = self.eval(expr, rows)?;
                let p = self.eval(pattern, rows)?;
                like::like(&s, &p, n, *negated).map_err(at)?
            }
            ExprKind::IsNull { expr, negated } => compare::is_null(&self.eval(expr, rows)?, n, *negated),
            ExprKind::Vector(items) => {
                let cols: Vec<Vector<'w>> = items.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                build_vector(&cols, n).map_err(at)?
            }
            ExprKind::Call { func, args } => {
                let cols: Vec<Vector<'w>> = args.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                functions::call(func, &cols, n).map_err(|m| call_error(e, func, m))?
            }
        })
    }

    /// `e` compiled against the source's columns, for the operators the compiled tier runs
    /// (leaves are read directly either way).
    fn compiled(&self, e: &Expr) -> Option<Rc<Program<'w>>> {
        match e.kind {
            ExprKind::Neg(_)
            | ExprKind::Not(_)
            | ExprKind::Binary { .. }
            | ExprKind::Between { .. }
            | ExprKind::InList { .. }
            | ExprKind::Like { .. }
            | ExprKind::IsNull { .. }
            | ExprKind::Call { .. } => self.source.compiled(e, self.params),
            _ => None,
        }
    }

    fn world_for(&self, e: &Expr) -> Result<&'w World, Error> {
        self.source.world().ok_or_else(|| eval_error(e, "entities can only be followed from table rows here"))
    }

    /// `AND` / `OR`, three-valued, with the right side evaluated only where the left side does
    /// not decide (false for `AND`, true for `OR`).
    fn logic(&self, op: BinaryOp, left: &Expr, right: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let n = rows.len();
        let (mut values, lvalid) = owned_truth(self.eval(left, rows)?, n).map_err(|m| eval_error(left, m))?;
        let decides = op == BinaryOp::Or;
        // The rows the left side leaves open, branch-free (see `select`).
        let mut open = vec![0u32; n];
        let mut k = 0;
        for i in 0..n {
            open[k] = i as u32;
            let decided = values[i] == decides && lvalid.as_ref().is_none_or(|m| m[i]);
            k += !decided as usize;
        }
        open.truncate(k);
        if open.is_empty() {
            return Ok(Vector::Bool(Prim { values, valid: lvalid }));
        }
        let sub: Vec<u32> = open.iter().map(|&i| rows[i as usize]).collect();
        let (rt, rvalid) = owned_truth(self.eval(right, &sub)?, sub.len()).map_err(|m| eval_error(right, m))?;
        if lvalid.is_none() && rvalid.is_none() {
            // No nulls: an open row's left side is the neutral value, so the right decides.
            for (&i, &r) in open.iter().zip(&rt) {
                values[i as usize] = r;
            }
            return Ok(Vector::Bool(Prim { values, valid: None }));
        }
        let is_valid = |v: &Validity, i: usize| v.as_ref().is_none_or(|m| m[i]);
        let mut valid = lvalid.clone();
        for (k, &i) in open.iter().enumerate() {
            let i = i as usize;
            let (a, b) = (is_valid(&lvalid, i).then_some(values[i]), is_valid(&rvalid, k).then_some(rt[k]));
            let out = three_valued(op, a, b);
            values[i] = out.unwrap_or(false);
            if out.is_none() {
                valid.get_or_insert_with(|| vec![true; n])[i] = false;
            } else if let Some(m) = &mut valid {
                m[i] = true;
            }
        }
        Ok(Vector::Bool(Prim { values, valid }))
    }
}

/// [`compare::truth`] of a vector the caller gives up: a bool vector's values are reused
/// (null rows read false) instead of copied.
fn owned_truth(v: Vector<'_>, n: usize) -> Result<(Vec<bool>, Validity), String> {
    match v {
        Vector::Bool(Prim { mut values, valid }) => {
            if let Some(m) = &valid {
                for (x, ok) in values.iter_mut().zip(m) {
                    *x &= *ok;
                }
            }
            Ok((values, valid))
        }
        other => compare::truth(&other, n),
    }
}

/// The rows whose condition is true (and not null): a branch-free compaction, since a
/// filter's outcome per row is as good as random to the branch predictor.
fn select(rows: &[u32], truth: &[bool], valid: Option<&[bool]>) -> Vec<u32> {
    let n = rows.len().min(truth.len());
    let mut out = vec![0u32; n];
    let mut k = 0;
    match valid {
        None => {
            for (&r, &t) in rows[..n].iter().zip(&truth[..n]) {
                out[k] = r;
                k += t as usize;
            }
        }
        Some(valid) => {
            for ((&r, &t), &ok) in rows[..n].iter().zip(&truth[..n]).zip(valid) {
                out[k] = r;
                k += (t & ok) as usize;
            }
        }
    }
    out.truncate(k);
    out
}

fn three_valued(op: BinaryOp, a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match op {
        BinaryOp::And => match (a, b) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        _ => match (a, b) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
    }
}

/// `a AND b` / `a OR b` of two evaluated conditions (both sides over every row).
fn and_or<'a>(op: BinaryOp, a: &Vector<'_>, b: &Vector<'_>, n: usize) -> Result<Vector<'a>, String> {
    let (at, av) = compare::truth(a, n)?;
    let (bt, bv) = compare::truth(b, n)?;
    let ok = |v: &Validity, i: usize| v.as_ref().is_none_or(|m| m[i]);
    let mut valid: Validity = None;
    let values = (0..n)
        .map(|i| {
            let r = three_valued(op, ok(&av, i).then_some(at[i]), ok(&bv, i).then_some(bt[i]));
            if r.is_none() {
                valid.get_or_insert_with(|| vec![true; n])[i] = false;
            }
            r.unwrap_or(false)
        })
        .collect();
    Ok(Vector::Bool(Prim { values, valid }))
}

/// `[a, b]` / `[a, b, c]` from numeric element vectors (a null element makes the row null).
fn build_vector<'a>(cols: &[Vector<'_>], n: usize) -> Result<Vector<'a>, String> {
    if cols.len() != 2 && cols.len() != 3 {
        return Err(format!("a vector has 2 or 3 elements, not {}", cols.len()));
    }
    let mut xs: Vec<Vec<f64>> = Vec::with_capacity(cols.len());
    let mut valid: Validity = None;
    for c in cols {
        match c {
            Vector::Scalar(Value::Null, _) => return Ok(Vector::nulls(n)),
            Vector::Scalar(v, _) => match v.as_f64() {
                Some(x) => xs.push(vec![x; n]),
                None => return Err(format!("vector elements must be numbers, found {}", v.describe())),
            },
            other => {
                match other.f64s() {
                    Some((vals, v)) => {
                        valid = crate::expr::vector::and_validity(&valid, v);
                        xs.push(vals.into_owned());
                    }
                    None => {
                        // Values of run-time type: check each row.
                        let mut out = Vec::with_capacity(n);
                        for i in 0..n {
                            match other.value(i) {
                                Value::Null => {
                                    out.push(0.0);
                                    valid.get_or_insert_with(|| vec![true; n])[i] = false;
                                }
                                v => out.push(v.as_f64().ok_or_else(|| {
                                    format!("vector elements must be numbers, found {}", v.describe())
                                })?),
                            }
                        }
                        xs.push(out);
                    }
                }
            }
        }
    }
    Ok(if xs.len() == 2 {
        Vector::Vec2(Prim { values: (0..n).map(|i| [xs[0][i], xs[1][i]]).collect(), valid })
    } else {
        Vector::Vec3(Prim { values: (0..n).map(|i| [xs[0][i], xs[1][i], xs[2][i]]).collect(), valid })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_true_rows_that_are_not_null() {
        let rows = [3, 5, 8, 13, 21];
        let truth = [true, false, true, true, false];
        assert_eq!(select(&rows, &truth, None), [3, 8, 13]);
        assert_eq!(select(&rows, &truth, Some(&[true, true, false, true, true])), [3, 13]);
        assert_eq!(select(&[], &[], None), Vec::<u32>::new());
        assert_eq!(select(&rows, &[false; 5], None), Vec::<u32>::new());
    }

    #[test]
    fn owned_truth_reads_null_rows_as_false() {
        let v = Vector::Bool(Prim { values: vec![true, true, false], valid: Some(vec![true, false, true]) });
        let (t, valid) = owned_truth(v, 3).unwrap();
        assert_eq!(t, [true, false, false]);
        assert_eq!(valid, Some(vec![true, false, true]));
        assert_eq!(owned_truth(Vector::Scalar(Value::Bool(true), 2), 2).unwrap(), (vec![true, true], None));
    }
}
