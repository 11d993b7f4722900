//! Constant folding: the planner evaluates the parts of an expression that read no row and no
//! parameter once, with the same evaluator execution uses.

use ecsdb_engine::Value;

use crate::error::Error;
use crate::expr::eval::{Evaluator, NoRows};
use crate::expr::{Expr, ExprKind};
use crate::functions::Function;
use crate::types::BinaryOp;

/// Evaluates a row-free expression (LIMIT, OFFSET, SPAWN values) with the parameters.
pub fn eval_constant(e: &Expr, params: &[Value]) -> Result<Value, Error> {
    Evaluator::new(&NoRows, params).eval_one(e)
}

/// Folds the parts of an expression that read no row and no parameter into literals, where
/// evaluating them succeeds (a failing part is left to fail at run time, if a row reaches it).
pub fn fold_constants(e: &Expr) -> Expr {
    if matches!(e.kind, ExprKind::Literal(_)) {
        return e.clone();
    }
    if !e.reads_row() && !e.has_params() && !calls_registered(e) {
        if let Ok(v) = eval_constant(e, &[]) {
            return Expr { kind: ExprKind::Literal(v), ty: e.ty, span: e.span };
        }
        return e.clone();
    }
    let mapped = e.map_children(&mut fold_constants);
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
