//! The batch evaluator: computes an expression for a batch of rows at once.
//!
//! Each node is evaluated over the whole batch before its parent (so the per-node dispatch is
//! paid once per batch, not once per row); leaves read columns through a [`RowSource`]: table
//! rows ([`crate::execute::scan::TableCtx`]), groups after aggregation, or no rows at all
//! ([`NoRows`], for constants). `AND` and `OR` evaluate their right side only for the rows the
//! left side does not decide.

use ecsdb_engine::{Value, World};

use crate::error::{Error, ErrorKind};
use crate::execute::{ops, relations};
use crate::functions::Function;
use crate::plan::logical::{BinaryOp, Expr, ExprKind};

/// Where the leaves of an expression (fields, components, `entity`, `has`, group keys,
/// aggregates) get their values.
pub trait RowSource {
    /// Appends the value of leaf `expr` for each of `rows` to `out`.
    fn leaf(&self, expr: &Expr, rows: &[u32], out: &mut Vec<Value>) -> Result<(), Error>;

    /// The world the rows are in, for expressions that follow entities (paths, hierarchy
    /// functions); `None` where there are no table rows.
    fn world(&self) -> Option<&World> {
        None
    }
}

/// A source without rows: every leaf is an error (used for constants).
pub struct NoRows;

impl RowSource for NoRows {
    fn leaf(&self, expr: &Expr, _rows: &[u32], _out: &mut Vec<Value>) -> Result<(), Error> {
        Err(Error::new(ErrorKind::Type, "this value cannot read components or the entity here").with_span(expr.span))
    }
}

/// An error of the evaluator at an expression.
pub fn eval_error(e: &Expr, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Type, message).with_span(e.span)
}

/// Evaluates expressions over batches of rows of one source.
pub struct Evaluator<'a, S: RowSource + ?Sized> {
    source: &'a S,
    params: &'a [Value],
}

impl<'a, S: RowSource + ?Sized> Evaluator<'a, S> {
    /// An evaluator reading leaves from `source`, with the statement's parameter values.
    pub fn new(source: &'a S, params: &'a [Value]) -> Self {
        Evaluator { source, params }
    }

    /// The value of a row-free expression.
    pub fn eval_one(&self, e: &Expr) -> Result<Value, Error> {
        Ok(self.eval(e, &[0])?.pop().unwrap_or(Value::Null))
    }

    /// The expression's value for each row.
    pub fn eval(&self, e: &Expr, rows: &[u32]) -> Result<Vec<Value>, Error> {
        let n = rows.len();
        let wrap = |r: Result<Value, String>| r.map_err(|m| eval_error(e, m));
        Ok(match &e.kind {
            ExprKind::Literal(v) => vec![v.clone(); n],
            ExprKind::Param(p) => vec![self.params.get(*p).cloned().unwrap_or(Value::Null); n],
            ExprKind::Entity
            | ExprKind::Field { .. }
            | ExprKind::Component(_)
            | ExprKind::ComponentVector(_)
            | ExprKind::Has(_)
            | ExprKind::IndexCall { .. }
            | ExprKind::GroupKey(_)
            | ExprKind::Aggregate(_) => {
                let mut out = Vec::with_capacity(n);
                self.source.leaf(e, rows, &mut out)?;
                out
            }
            ExprKind::Path { base, steps } => {
                let world = self.world_for(e)?;
                let start = self.eval(base, rows)?;
                start.iter().map(|v| relations::follow_path(world, v, steps, e)).collect::<Result<_, _>>()?
            }
            ExprKind::Hierarchy { func, component, field, args, .. } => {
                let world = self.world_for(e)?;
                let this = Expr { kind: ExprKind::Entity, ty: crate::plan::logical::DataType::Entity, span: e.span };
                let mut entities = Vec::with_capacity(n);
                self.source.leaf(&this, rows, &mut entities)?;
                let cols: Vec<Vec<Value>> = args.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                let mut out = Vec::with_capacity(n);
                for (i, v) in entities.iter().enumerate() {
                    let extra: Vec<&Value> = cols.iter().map(|c| &c[i]).collect();
                    out.push(relations::hierarchy(world, *func, *component, *field, v, &extra, e)?);
                }
                out
            }
            ExprKind::Neg(x) => self.eval(x, rows)?.iter().map(|v| wrap(ops::neg(v))).collect::<Result<_, _>>()?,
            ExprKind::Not(x) => self.eval(x, rows)?.iter().map(|v| wrap(ops::not(v))).collect::<Result<_, _>>()?,
            ExprKind::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right } => {
                self.logic(*op, left, right, rows)?
            }
            ExprKind::Binary { op, left, right } => {
                let l = self.eval(left, rows)?;
                let r = self.eval(right, rows)?;
                l.iter().zip(&r).map(|(a, b)| wrap(ops::binary(*op, a, b))).collect::<Result<_, _>>()?
            }
            ExprKind::Between { expr, low, high, negated } => {
                let x = self.eval(expr, rows)?;
                let lo = self.eval(low, rows)?;
                let hi = self.eval(high, rows)?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let ge = wrap(ops::binary(BinaryOp::Ge, &x[i], &lo[i]))?;
                    let le = wrap(ops::binary(BinaryOp::Le, &x[i], &hi[i]))?;
                    let v = wrap(ops::binary(BinaryOp::And, &ge, &le))?;
                    out.push(if *negated { wrap(ops::not(&v))? } else { v });
                }
                out
            }
            ExprKind::InList { expr, list, negated } => {
                let x = self.eval(expr, rows)?;
                let items: Vec<Vec<Value>> = list.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                let mut out = Vec::with_capacity(n);
                for (i, xv) in x.iter().enumerate() {
                    // SQL: true if any equal; else null if the value or any candidate is null.
                    let mut result = Some(false);
                    if xv.is_null() {
                        result = if items.is_empty() { Some(false) } else { None };
                    } else {
                        for item in &items {
                            match wrap(ops::equals(xv, &item[i]).map(|b| b.map(Value::Bool).unwrap_or(Value::Null)))? {
                                Value::Bool(true) => {
                                    result = Some(true);
                                    break;
                                }
                                Value::Null => result = None,
                                _ => {}
                            }
                        }
                    }
                    let result = if *negated { result.map(|b| !b) } else { result };
                    out.push(result.map_or(Value::Null, Value::Bool));
                }
                out
            }
            ExprKind::Like { expr, pattern, negated } => {
                let s = self.eval(expr, rows)?;
                let p = self.eval(pattern, rows)?;
                let mut out = Vec::with_capacity(n);
                for (a, b) in s.iter().zip(&p) {
                    let m = ops::like_values(a, b).map_err(|m| eval_error(e, m))?;
                    out.push(m.map(|m| m != *negated).map_or(Value::Null, Value::Bool));
                }
                out
            }
            ExprKind::IsNull { expr, negated } => {
                self.eval(expr, rows)?.iter().map(|v| Value::Bool(v.is_null() != *negated)).collect()
            }
            ExprKind::Vector(items) => {
                let cols: Vec<Vec<Value>> = items.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let mut xs = [0.0f64; 3];
                    let mut null = false;
                    for (k, col) in cols.iter().enumerate().take(3) {
                        match &col[i] {
                            Value::Null => null = true,
                            v => {
                                xs[k] = v.as_f64().ok_or_else(|| {
                                    eval_error(e, format!("vector elements must be numbers, found {}", v.describe()))
                                })?
                            }
                        }
                    }
                    out.push(match (null, cols.len()) {
                        (true, _) => Value::Null,
                        (false, 2) => Value::Vec2([xs[0], xs[1]]),
                        (false, 3) => Value::Vec3(xs),
                        (false, k) => return Err(eval_error(e, format!("a vector has 2 or 3 elements, not {k}"))),
                    });
                }
                out
            }
            ExprKind::Call { func, args } => {
                let cols: Vec<Vec<Value>> = args.iter().map(|c| self.eval(c, rows)).collect::<Result<_, _>>()?;
                let mut out = Vec::with_capacity(n);
                let mut argv = Vec::with_capacity(cols.len());
                for i in 0..n {
                    argv.clear();
                    argv.extend(cols.iter().map(|c| c[i].clone()));
                    out.push(call(func, &argv).map_err(|m| call_error(e, func, m))?);
                }
                out
            }
        })
    }

    fn world_for(&self, e: &Expr) -> Result<&World, Error> {
        self.source.world().ok_or_else(|| eval_error(e, "entities can only be followed from table rows here"))
    }

    fn logic(&self, op: BinaryOp, left: &Expr, right: &Expr, rows: &[u32]) -> Result<Vec<Value>, Error> {
        let mut l = self.eval(left, rows)?;
        // Rows the left side decides: false for AND, true for OR.
        let decided = Value::Bool(op == BinaryOp::Or);
        let open: Vec<usize> = (0..l.len()).filter(|&i| l[i] != decided).collect();
        if open.is_empty() {
            for v in &l {
                ops::truth(v).map_err(|m| eval_error(left, m))?;
            }
            return Ok(l);
        }
        let sub: Vec<u32> = open.iter().map(|&i| rows[i]).collect();
        let r = self.eval(right, &sub)?;
        for (k, &i) in open.iter().enumerate() {
            l[i] = ops::binary(op, &l[i], &r[k]).map_err(|m| {
                let bad_left = ops::truth(&l[i]).is_err();
                eval_error(if bad_left { left } else { right }, m)
            })?;
        }
        Ok(l)
    }
}

fn call(func: &Function, args: &[Value]) -> Result<Value, String> {
    func.call(args)
}

fn call_error(e: &Expr, func: &Function, m: String) -> Error {
    let kind = match func {
        Function::Registered(..) => ErrorKind::Constraint,
        Function::Builtin(_) => ErrorKind::Type,
    };
    Error::new(kind, m).with_span(e.span)
}

/// Folds the parts of an expression that read no row and no parameter into literals, where
/// evaluating them succeeds (a failing part is left to fail at run time, if a row reaches it).
pub fn fold_constants(e: &Expr) -> Expr {
    if matches!(e.kind, ExprKind::Literal(_)) {
        return e.clone();
    }
    if !e.reads_row() && !e.has_params() && !calls_registered(e) {
        if let Ok(v) = Evaluator::new(&NoRows, &[]).eval_one(e) {
            return Expr { kind: ExprKind::Literal(v), ty: e.ty, span: e.span };
        }
        return e.clone();
    }
    let mapped = crate::plan::physical::map_children(e, &mut fold_constants);
    // Three-valued shortcuts that hold whatever the other side is.
    if let ExprKind::Binary { op, left, right } = &mapped.kind {
        let lit = |x: &Expr| match &x.kind {
            ExprKind::Literal(Value::Bool(b)) => Some(*b),
            _ => None,
        };
        let lit_ty = |b: bool| Expr { kind: ExprKind::Literal(Value::Bool(b)), ty: e.ty, span: e.span };
        match op {
            BinaryOp::And if lit(left) == Some(false) || lit(right) == Some(false) => return lit_ty(false),
            BinaryOp::Or if lit(left) == Some(true) || lit(right) == Some(true) => return lit_ty(true),
            BinaryOp::And if lit(left) == Some(true) => return (**right).clone(),
            BinaryOp::And if lit(right) == Some(true) => return (**left).clone(),
            BinaryOp::Or if lit(left) == Some(false) => return (**right).clone(),
            BinaryOp::Or if lit(right) == Some(false) => return (**left).clone(),
            _ => {}
        }
    }
    mapped
}

fn calls_registered(e: &Expr) -> bool {
    e.any(&mut |x| matches!(&x.kind, ExprKind::Call { func: Function::Registered(..), .. }))
}
