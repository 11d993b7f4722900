//! Building expressions: operands, operators and brackets from pest's flat token sequences
//! into [`Expr`] trees, with precedence applied by an operator stack.

use pest::iterators::Pair;

use super::{Builder, MAX_RECURSION, Result, Rule, first, ident, parameter, span_of, unescape};
use crate::error::Error;
use crate::parse::ast::*;
use crate::parse::number::{NumberKind, number_kind, number_literal};
use crate::parse::precedence::{Infix, Nested, OperatorStack, internal, too_deep};

impl Infix {
    fn of(token: &Pair<'_, Rule>) -> Option<Infix> {
        Some(Infix::Binary(match token.as_rule() {
            Rule::op_or => BinaryOp::Or,
            Rule::op_and => BinaryOp::And,
            Rule::op_compare | Rule::op_arith => match token.as_str() {
                "==" | "=" => BinaryOp::Eq,
                "!=" | "<>" => BinaryOp::NotEq,
                "<" => BinaryOp::Lt,
                "<=" => BinaryOp::LtEq,
                ">" => BinaryOp::Gt,
                ">=" => BinaryOp::GtEq,
                "||" => BinaryOp::Concat,
                "+" => BinaryOp::Add,
                "-" => BinaryOp::Sub,
                "*" => BinaryOp::Mul,
                "/" => BinaryOp::Div,
                "%" => BinaryOp::Mod,
                _ => return None,
            },
            Rule::op_like => return Some(Infix::Like { negated: false }),
            Rule::op_not_like => return Some(Infix::Like { negated: true }),
            _ => return None,
        }))
    }
}

impl OperatorStack {
    /// Takes a token that needs no recursion: a prefix or infix operator, `IS [NOT] NULL`,
    /// or a leaf operand (with a `-` directly before a number folded into the literal).
    fn token<'i>(
        &mut self,
        token: Pair<'i, Rule>,
        rest: &mut std::iter::Peekable<pest::iterators::Pairs<'i, Rule>>,
    ) -> Result<()> {
        let rule = token.as_rule();
        let start = self.base + token.as_span().start();
        match rule {
            Rule::op_neg => match rest.next_if(|t| {
                t.as_rule() == Rule::number && matches!(number_kind(t.as_str()), NumberKind::Int | NumberKind::Float)
            }) {
                // `-7`, `-0.25`, `-9223372036854775808`: one literal.
                Some(number) => {
                    let span = Span::new(start, self.base + number.as_span().end());
                    let int = number_kind(number.as_str()) == NumberKind::Int;
                    self.push_checked((number_literal(number.as_str(), int, true, span)?, 1))
                }
                None => {
                    self.prefix(false, start);
                    Ok(())
                }
            },
            Rule::op_not => {
                self.prefix(true, start);
                Ok(())
            }
            Rule::is_null => {
                let negated = token.clone().into_inner().any(|p| p.as_rule() == Rule::kw_not);
                self.is_null(negated, span_of(&token, self.base).end)
            }
            _ => match Infix::of(&token) {
                Some(op) => self.infix(op),
                None => self.push_checked((leaf(token, self.base)?, 1)),
            },
        }
    }

    /// Pushes a token built from the expressions in it (`parts`, with their heights): a
    /// parenthesised expression, a vector, a call, or BETWEEN / IN applied to the operand
    /// before it.
    fn nested(&mut self, token: Pair<'_, Rule>, parts: Vec<(Expr, usize)>) -> Result<()> {
        let span = span_of(&token, self.base);
        let negated = || token.clone().into_inner().any(|p| p.as_rule() == Rule::op_negate);
        let nested = match token.as_rule() {
            Rule::paren_expr => Nested::Paren,
            Rule::vector => Nested::Vector,
            Rule::name_ref => Nested::Call(ident(&first(token.clone(), Rule::ref_name), self.base)),
            Rule::in_list => Nested::InList { negated: negated() },
            _ => Nested::Between { negated: negated() },
        };
        self.push_nested(nested, span, parts)
    }
}

impl Builder {
    // ----- expressions -------------------------------------------------------------------

    /// Builds an `expr` (or `bound`) pair: its flat sequence of operands and operators, with
    /// precedence applied.
    pub(super) fn expr(&mut self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let mut out = Vec::with_capacity(1);
        self.expr_into(pair, &mut out).map_err(|e| *e)?;
        out.pop().map(|(e, _)| e).ok_or_else(|| internal("an expression built nothing"))
    }

    // The next three functions are the only recursion of the builder (through brackets:
    // parentheses, vectors, calls, IN lists, BETWEEN bounds; [`prepare`] bounds it).
    // Their stack frames are what each bracket level costs, so they keep few locals, return
    // `Step` (a pointer-sized result) and leave all other work to non-recursive helpers.
    // Operator precedence is applied with an explicit operator stack (shunting-yard), not by
    // recursion, so long operator chains cost no stack at all.

    /// Builds an `expr` or `bound` pair and pushes it, with its height, onto `out`.
    fn expr_into(&mut self, pair: Pair<'_, Rule>, out: &mut Vec<(Expr, usize)>) -> Step {
        if self.depth >= MAX_RECURSION {
            return Err(Box::new(too_deep(span_of(&pair, self.base))));
        }
        self.depth += 1;
        let mut stack = self.spare_stacks.pop().unwrap_or_default();
        stack.base = self.base;
        let result = self.expr_tokens(pair, &mut stack);
        self.depth -= 1;
        result?;
        stack.finish_into(out).map_err(Box::new)?;
        // (Only a stack left empty is reused; one left behind by an error is dropped.)
        self.spare_stacks.push(stack);
        Ok(())
    }

    /// Feeds the tokens of an `expr` or `bound` pair to `stack`.
    fn expr_tokens(&mut self, pair: Pair<'_, Rule>, stack: &mut OperatorStack) -> Step {
        let mut tokens = pair.into_inner().peekable();
        while let Some(token) = tokens.next() {
            if matches!(token.as_rule(), Rule::paren_expr | Rule::vector | Rule::between | Rule::in_list)
                || (token.as_rule() == Rule::name_ref && is_call(&token))
            {
                self.nested_into(token, stack)?;
            } else {
                stack.token(token, &mut tokens).map_err(Box::new)?;
            }
        }
        Ok(())
    }

    /// Builds a token that contains expressions (a parenthesised expression, vector, call,
    /// BETWEEN or IN) and pushes it onto `stack`.
    fn nested_into(&mut self, token: Pair<'_, Rule>, stack: &mut OperatorStack) -> Step {
        let mut parts = Vec::new();
        for child in token.clone().into_inner() {
            match child.as_rule() {
                Rule::expr | Rule::bound => self.expr_into(child, &mut parts)?,
                // A call's arguments.
                Rule::call_args => {
                    for arg in child.into_inner() {
                        if arg.as_rule() == Rule::expr {
                            self.expr_into(arg, &mut parts)?;
                        }
                    }
                }
                _ => {}
            }
        }
        stack.nested(token, parts).map_err(Box::new)
    }
}

/// The result of the builder's recursive functions: small, so their frames stay small.
type Step = std::result::Result<(), Box<Error>>;

/// An operand that contains no expression: a literal, parameter, name or `count(*)`.
pub(super) fn leaf(pair: Pair<'_, Rule>, base: usize) -> Result<Expr> {
    let span = span_of(&pair, base);
    let kind = match pair.as_rule() {
        Rule::count_star => ExprKind::CountStar,
        Rule::entity_lit => entity_literal(pair.as_str(), span)?,
        Rule::number => {
            let text = pair.as_str();
            match number_kind(text) {
                NumberKind::Entity => entity_literal(text, span)?,
                NumberKind::BadFloat => {
                    let int = text.split('.').next().unwrap_or(text);
                    return Err(Error::syntax(
                        format!(
                            "'{text}' is not a number: a float needs digits after the point ('{int}.0', not '{int}.')"
                        ),
                        span,
                    ));
                }
                kind => return number_literal(text, kind == NumberKind::Int, false, span),
            }
        }
        Rule::string => ExprKind::Literal(Literal::Str(unescape(pair.as_str(), span.start)?)),
        Rule::unterminated_string => {
            return Err(Error::syntax(
                "unterminated string: this quote is never closed",
                Span::new(span.start, span.start + 1),
            ));
        }
        Rule::param => ExprKind::Param(parameter(pair.as_str(), span)?),
        Rule::lit_true => ExprKind::Literal(Literal::Bool(true)),
        Rule::lit_false => ExprKind::Literal(Literal::Bool(false)),
        Rule::lit_null => ExprKind::Literal(Literal::Null),
        Rule::entity_id => ExprKind::EntityId,
        // `C.f` or `C` (a call is built by the caller).
        Rule::name_ref => {
            let mut names = pair.into_inner().filter(|p| p.as_rule() != Rule::dot);
            let component = ident(&names.next().expect("grammar: a name operand has a name"), base);
            match names.next() {
                Some(field) => {
                    let field = ident(&field, base);
                    let steps: Vec<PathStep> = names
                        .map(|step| {
                            let mut parts = step.into_inner().filter(|p| p.as_rule() != Rule::dot);
                            let component = ident(&parts.next().expect("grammar: a path step has a component"), base);
                            PathStep { component, field: parts.next().map(|f| ident(&f, base)) }
                        })
                        .collect();
                    if steps.is_empty() {
                        ExprKind::Field { component, field }
                    } else {
                        let first = Span::new(component.span.start, field.span.end);
                        ExprKind::Path { base: Box::new(Expr::new(ExprKind::Field { component, field }, first)), steps }
                    }
                }
                None => ExprKind::Component(component),
            }
        }
        other => return Err(internal(&format!("unexpected operand {other:?}"))),
    };
    Ok(Expr::new(kind, span))
}

/// Whether a `name_ref` is a call (has arguments).
fn is_call(pair: &Pair<'_, Rule>) -> bool {
    pair.clone().into_inner().any(|p| p.as_rule() == Rule::call_args)
}

/// `12v0` → index 12, generation 0 (read as the engine reads entity text).
fn entity_literal(text: &str, span: Span) -> Result<ExprKind> {
    let entity: ecsdb_engine::Entity = text.parse().map_err(|_| {
        Error::syntax(
            format!("entity {text} is out of range (index at most {}, generation at most {})", u32::MAX - 1, u32::MAX),
            span,
        )
    })?;
    Ok(ExprKind::EntityLit { index: entity.index(), generation: entity.generation() })
}
