//! Operator precedence: the shunting-yard stacks that turn an expression's flat sequence of
//! operands and operators into a tree. Both parsers feed it (the pest tree builder and the
//! hand-written script reader), so precedence, spans and height limits are the same in both.

use super::MAX_EXPR_DEPTH;
use super::ast::*;
use crate::error::Error;

type Result<T, E = Error> = std::result::Result<T, E>;

/// An operator between two operands in an expression's flat sequence.
#[derive(Clone, Copy)]
pub(super) enum Infix {
    Binary(BinaryOp),
    Like { negated: bool },
}

impl Infix {
    pub(super) fn precedence(self) -> u8 {
        match self {
            Infix::Binary(op) => op.precedence(),
            Infix::Like { .. } => prec::COMPARE,
        }
    }
}

/// What a token that contains expressions builds (see [`OperatorStack::push_nested`]).
pub(super) enum Nested {
    /// `( expr )`.
    Paren,
    /// `[a, b]` or `[a, b, c]`.
    Vector,
    /// `name(args…)`.
    Call(Ident),
    /// `[NOT] IN (list…)` after an operand.
    InList { negated: bool },
    /// `[NOT] BETWEEN low AND high` after an operand.
    Between { negated: bool },
}

/// An operator waiting on the [`OperatorStack`] for its right operand.
#[derive(Clone, Copy)]
enum Pending {
    /// `-` (`not: false`) or `NOT`, starting at byte `start`.
    Prefix {
        not: bool,
        start: usize,
    },
    Infix(Infix),
}

impl Pending {
    fn precedence(self) -> u8 {
        match self {
            Pending::Prefix { not: true, .. } => prec::NOT,
            Pending::Prefix { not: false, .. } => prec::NEG,
            Pending::Infix(op) => op.precedence(),
        }
    }
}

/// The two stacks of the shunting-yard algorithm: built operands (with their heights) and
/// operators waiting for their right operand.
#[derive(Default)]
pub(super) struct OperatorStack {
    operands: Vec<(Expr, usize)>,
    operators: Vec<Pending>,
    /// Where the text pest parsed starts in the whole text (the pest builder's tokens are
    /// positioned in it; the script reader's are already absolute, 0).
    pub(super) base: usize,
}

impl OperatorStack {
    /// Applies waiting operators that bind at least as tightly as `precedence` (all binary
    /// operators are left-associative).
    fn reduce_while(&mut self, precedence: u8) -> Result<()> {
        while let Some(&top) = self.operators.last() {
            if top.precedence() < precedence {
                break;
            }
            self.operators.pop();
            let (rhs, rhs_height) = self.pop_operand()?;
            let built = match top {
                Pending::Prefix { not, start } => {
                    let span = Span::new(start, rhs.span.end);
                    let kind = if not {
                        ExprKind::Not(Box::new(rhs))
                    } else {
                        ExprKind::Unary { op: UnaryOp::Neg, expr: Box::new(rhs) }
                    };
                    (Expr::new(kind, span), rhs_height + 1)
                }
                Pending::Infix(op) => {
                    let (lhs, lhs_height) = self.pop_operand()?;
                    let span = lhs.span.to(rhs.span);
                    let (lhs, rhs) = (Box::new(lhs), Box::new(rhs));
                    let kind = match op {
                        Infix::Binary(op) => ExprKind::Binary { op, lhs, rhs },
                        Infix::Like { negated } => ExprKind::Like { expr: lhs, pattern: rhs, negated },
                    };
                    (Expr::new(kind, span), lhs_height.max(rhs_height) + 1)
                }
            };
            self.push_checked(built)?;
        }
        Ok(())
    }

    /// Takes a prefix operator (`NOT` if `not`, else `-`) starting at byte `start`.
    pub(super) fn prefix(&mut self, not: bool, start: usize) {
        self.operators.push(Pending::Prefix { not, start });
    }

    /// Takes an infix operator: applies the waiting ones that bind at least as tightly.
    pub(super) fn infix(&mut self, op: Infix) -> Result<()> {
        self.reduce_while(op.precedence())?;
        self.operators.push(Pending::Infix(op));
        Ok(())
    }

    /// Applies `IS [NOT] NULL`, which ends at byte `end`, to the operand before it.
    pub(super) fn is_null(&mut self, negated: bool, end: usize) -> Result<()> {
        let (expr, height) = self.take_postfix_operand()?;
        let span = Span::new(expr.span.start, end);
        let kind = ExprKind::IsNull { expr: Box::new(expr), negated };
        self.push_checked((Expr::new(kind, span), height + 1))
    }

    /// Applies the waiting operators that bind tighter than a postfix operator and takes the
    /// operand it applies to.
    fn take_postfix_operand(&mut self) -> Result<(Expr, usize)> {
        self.reduce_while(prec::COMPARE)?;
        self.pop_operand()
    }

    /// Pushes `nested`, which spans `span` and holds the expressions `parts` (with their
    /// heights).
    pub(super) fn push_nested(&mut self, nested: Nested, span: Span, parts: Vec<(Expr, usize)>) -> Result<()> {
        let height = parts.iter().map(|&(_, h)| h).max().unwrap_or(0);
        let mut exprs: Vec<Expr> = parts.into_iter().map(|(e, _)| e).collect();
        let built = match nested {
            Nested::Paren => {
                let inner = exprs.pop().ok_or_else(|| internal("empty parentheses"))?;
                // The parenthesised expression spans its parentheses.
                (Expr::new(inner.kind, span), height)
            }
            Nested::Vector => (Expr::new(vector(exprs, span)?, span), height + 1),
            Nested::Call(name) => (Expr::new(ExprKind::Call { name, args: exprs }, span), height + 1),
            Nested::InList { negated } | Nested::Between { negated } => {
                let (lhs, lhs_height) = self.take_postfix_operand()?;
                let span = lhs.span.to(span);
                let expr = Box::new(lhs);
                let kind = if matches!(nested, Nested::InList { .. }) {
                    ExprKind::InList { expr, list: exprs, negated }
                } else {
                    let mut bounds = exprs.into_iter();
                    match (bounds.next(), bounds.next()) {
                        (Some(low), Some(high)) => {
                            ExprKind::Between { expr, low: Box::new(low), high: Box::new(high), negated }
                        }
                        _ => return Err(internal("BETWEEN without two bounds")),
                    }
                };
                (Expr::new(kind, span), lhs_height.max(height) + 1)
            }
        };
        self.push_checked(built)
    }

    /// Applies every waiting operator and pushes the one expression left onto `out`.
    pub(super) fn finish_into(&mut self, out: &mut Vec<(Expr, usize)>) -> Result<()> {
        self.reduce_while(0)?;
        match (self.operands.pop(), self.operands.is_empty()) {
            (Some(result), true) => {
                out.push(result);
                Ok(())
            }
            _ => Err(internal("an expression left operands over")),
        }
    }

    fn pop_operand(&mut self) -> Result<(Expr, usize)> {
        self.operands.pop().ok_or_else(|| internal("an operator without an operand"))
    }

    /// Pushes a built operand, rejecting it if the tree got too high.
    pub(super) fn push_checked(&mut self, (expr, height): (Expr, usize)) -> Result<()> {
        if height > MAX_EXPR_DEPTH {
            return Err(too_deep(expr.span));
        }
        self.operands.push((expr, height));
        Ok(())
    }
}

#[cold]
pub(super) fn internal(what: &str) -> Error {
    Error::internal(format!("parser: {what}"))
}

pub(super) fn too_deep(span: Span) -> Error {
    Error::syntax(format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"), span)
}

/// The vector of `items`, which must be 2 or 3.
pub(super) fn vector(items: Vec<Expr>, span: Span) -> Result<ExprKind> {
    if !(2..=3).contains(&items.len()) {
        return Err(Error::syntax(format!("a vector has 2 or 3 elements, this one has {}", items.len()), span));
    }
    Ok(ExprKind::Vector(items))
}
