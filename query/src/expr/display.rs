//! Expressions as the language writes them: what `EXPLAIN` prints and what names an
//! unaliased select item's column.

use std::fmt;

use ecsdb_engine::Value;

use crate::expr::tree::*;

/// Names needed to print expressions.
pub struct DisplayContext<'a> {
    /// The statement's component slots.
    pub slots: &'a [ComponentSlot],
    /// Field names per slot.
    pub fields: &'a [Vec<String>],
    /// The GROUP BY keys (to print [`ExprKind::GroupKey`]).
    pub group_by: &'a [Expr],
    /// The aggregates (to print [`ExprKind::Aggregate`]).
    pub aggregates: &'a [AggregateExpr],
    /// The statement's parameters.
    pub params: &'a [ParamSpec],
}

impl Expr {
    /// Prints the expression with component and field names from `slots`.
    pub fn display<'a>(&'a self, ctx: &'a DisplayContext<'a>) -> ExprDisplay<'a> {
        ExprDisplay { expr: self, ctx }
    }
}

/// `Display` of an expression (see [`Expr::display`]).
pub struct ExprDisplay<'a> {
    pub(super) expr: &'a Expr,
    pub(super) ctx: &'a DisplayContext<'a>,
}

/// A value as the language writes it (strings quoted and escaped).
pub fn literal_text(v: &Value) -> String {
    match v {
        Value::Str(s) => {
            let mut out = String::from("'");
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c => out.push(c),
                }
            }
            out.push('\'');
            out
        }
        other => other.to_string(),
    }
}

impl ExprDisplay<'_> {
    fn child<'b>(&'b self, e: &'b Expr) -> ExprDisplay<'b> {
        ExprDisplay { expr: e, ctx: self.ctx }
    }

    fn slot_name(&self, slot: Slot) -> &str {
        self.ctx.slots.get(slot).map_or("?", |s| s.name.as_str())
    }

    fn operand(&self, e: &Expr, parent: u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let needs = match &e.kind {
            ExprKind::Binary { op, .. } => op.precedence() <= parent,
            ExprKind::Between { .. } | ExprKind::InList { .. } | ExprKind::Like { .. } | ExprKind::IsNull { .. } => {
                parent >= 4
            }
            ExprKind::Not(_) => parent >= 3,
            _ => false,
        };
        if needs { write!(f, "({})", self.child(e)) } else { write!(f, "{}", self.child(e)) }
    }
}

impl fmt::Display for ExprDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = |negated: bool| if negated { "NOT " } else { "" };
        match &self.expr.kind {
            ExprKind::Literal(v) => f.write_str(&literal_text(v)),
            ExprKind::Param(n) => match self.ctx.params.get(*n) {
                Some(p) => write!(f, "{}", p.key),
                None => write!(f, "$?{n}"),
            },
            ExprKind::Entity => f.write_str("entity"),
            ExprKind::Field { slot, field } => {
                let fname = self.ctx.fields.get(*slot).and_then(|fs| fs.get(*field)).map_or("?", |s| s.as_str());
                write!(f, "{}.{}", self.slot_name(*slot), fname)
            }
            ExprKind::Component(slot) | ExprKind::ComponentVector(slot) => f.write_str(self.slot_name(*slot)),
            ExprKind::Has(slot) => write!(f, "has({})", self.slot_name(*slot)),
            ExprKind::Changed { slot, added } => {
                write!(f, "{}({})", if *added { "added" } else { "changed" }, self.slot_name(*slot))
            }
            ExprKind::Path { base, steps } => {
                write!(f, "{}", self.child(base))?;
                steps.iter().try_for_each(|s| f.write_str(&s.text))
            }
            ExprKind::Hierarchy { func, text, args, .. } => {
                write!(f, "{}({text}", func.name())?;
                for e in args {
                    write!(f, ", {}", self.child(e))?;
                }
                f.write_str(")")
            }
            ExprKind::IndexCall { func, slot } => write!(f, "{}({})", func.name(), self.slot_name(*slot)),
            ExprKind::Neg(e) => {
                f.write_str("-")?;
                self.operand(e, 8, f)
            }
            ExprKind::Not(e) => {
                f.write_str("NOT ")?;
                self.operand(e, 3, f)
            }
            ExprKind::Binary { op, left, right } => {
                let p = op.precedence();
                self.operand(left, p - 1, f)?;
                write!(f, " {} ", op.symbol())?;
                self.operand(right, p, f)
            }
            ExprKind::Between { expr, low, high, negated } => {
                self.operand(expr, 4, f)?;
                write!(f, " {}BETWEEN ", not(*negated))?;
                self.operand(low, 4, f)?;
                f.write_str(" AND ")?;
                self.operand(high, 4, f)
            }
            ExprKind::InList { expr, list, negated } => {
                self.operand(expr, 4, f)?;
                write!(f, " {}IN (", not(*negated))?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", self.child(e))?;
                }
                f.write_str(")")
            }
            ExprKind::Like { expr, pattern, negated } => {
                self.operand(expr, 4, f)?;
                write!(f, " {}LIKE ", not(*negated))?;
                self.operand(pattern, 4, f)
            }
            ExprKind::IsNull { expr, negated } => {
                self.operand(expr, 4, f)?;
                write!(f, " IS {}NULL", not(*negated))
            }
            ExprKind::Vector(items) => {
                f.write_str("[")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", self.child(e))?;
                }
                f.write_str("]")
            }
            ExprKind::Call { func, args } => {
                write!(f, "{}(", func.name())?;
                for (i, e) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", self.child(e))?;
                }
                f.write_str(")")
            }
            ExprKind::GroupKey(n) => match self.ctx.group_by.get(*n) {
                Some(e) => write!(f, "{}", self.child(e)),
                None => write!(f, "#key{n}"),
            },
            ExprKind::Aggregate(n) => match self.ctx.aggregates.get(*n) {
                Some(a) => {
                    write!(f, "{}(", a.func.name())?;
                    match &a.arg {
                        Some(e) => write!(f, "{}", self.child(e))?,
                        None => f.write_str("*")?,
                    }
                    f.write_str(")")
                }
                None => write!(f, "#agg{n}"),
            },
        }
    }
}
