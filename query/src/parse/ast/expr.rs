//! Expressions of the syntax tree: operands, operators and literals, and how they print
//! back as query text with only the parentheses precedence needs.

use std::fmt;

use super::{Ident, Span};

/// One step of a path after `C.f`: `.D` and optionally `.g`.
#[derive(Clone, Debug, PartialEq)]
pub struct PathStep {
    /// The component on the entity reached so far.
    pub component: Ident,
    /// Its field; `None` for the component as an object (only as the last step).
    pub field: Option<Ident>,
}

/// An expression and the text it was parsed from.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it computes.
    pub kind: ExprKind,
    /// Its source text, including any parentheses around it.
    pub span: Span,
}

/// What an expression computes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A number, string, boolean or null.
    Literal(Literal),
    /// An entity literal `12v0`.
    EntityLit {
        /// The entity index (never `u32::MAX`, which is the null entity's).
        index: u32,
        /// The generation.
        generation: u32,
    },
    /// A parameter `$1` or `$name`, bound from outside the text.
    Param(Param),
    /// A vector literal `[x, y]` or `[x, y, z]`.
    Vector(Vec<Expr>),
    /// `C.f`: a field of a component.
    Field {
        /// The component.
        component: Ident,
        /// The field (may be any word, reserved words included).
        field: Ident,
    },
    /// `C.f.D.g…`: a path through the entity field `C.f` (see [`PathStep`]).
    Path {
        /// The first field `C.f` (a [`ExprKind::Field`]; `C` is required of the row's entity).
        base: Box<Expr>,
        /// The steps after it (at least one).
        steps: Vec<PathStep>,
    },
    /// A bare name `C`: the component as a vector (2 or 3 numeric fields) or object, or an
    /// item's alias in ORDER BY.
    Component(Ident),
    /// The keyword `entity`: the entity's id.
    EntityId,
    /// A prefix operator other than NOT.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        expr: Box<Expr>,
    },
    /// A binary operator.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `NOT expr`.
    Not(Box<Expr>),
    /// `expr [NOT] BETWEEN low AND high` (inclusive).
    Between {
        /// The tested value.
        expr: Box<Expr>,
        /// Lower bound.
        low: Box<Expr>,
        /// Upper bound.
        high: Box<Expr>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `expr [NOT] IN (list)`; the list may be empty (then IN is false).
    InList {
        /// The tested value.
        expr: Box<Expr>,
        /// The alternatives.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `expr [NOT] LIKE pattern`.
    Like {
        /// The tested string.
        expr: Box<Expr>,
        /// The pattern (`%` any run, `_` one character).
        pattern: Box<Expr>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `expr IS [NOT] NULL`.
    IsNull {
        /// The tested value.
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// A function call `name(args)` (scalar, aggregate or registered).
    Call {
        /// The function name as written.
        name: Ident,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `count(*)`.
    CountStar,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An `int`.
    Int(i64),
    /// A `float` (always finite).
    Float(f64),
    /// A string, escapes resolved.
    Str(String),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

/// A parameter reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// `$1`, `$2`, …: numbered from 1.
    Positional(u32),
    /// `$name`.
    Named(String),
}

/// A prefix operator (NOT is [`ExprKind::Not`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `=` or `==`.
    Eq,
    /// `!=` or `<>`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    LtEq,
    /// `>`.
    Gt,
    /// `>=`.
    GtEq,
    /// `AND`.
    And,
    /// `OR`.
    Or,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Mod,
    /// `||` (string concatenation).
    Concat,
}

impl BinaryOp {
    /// The operator as the language writes it (`=`, `!=`, `AND`, `||`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
        }
    }

    /// Whether it is one of the six comparisons.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
    }

    /// Binding strength: higher binds tighter (OR is 1, `* / %` are 7).
    pub(crate) fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => prec::OR,
            BinaryOp::And => prec::AND,
            BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => {
                prec::COMPARE
            }
            BinaryOp::Concat => prec::CONCAT,
            BinaryOp::Add | BinaryOp::Sub => prec::ADD,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => prec::MUL,
        }
    }
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Operator precedence levels, lowest first (like SQLite, with `||` below `+ -`).
pub(crate) mod prec {
    pub const OR: u8 = 1;
    pub const AND: u8 = 2;
    pub const NOT: u8 = 3;
    /// Comparisons, IS, BETWEEN, IN, LIKE.
    pub const COMPARE: u8 = 4;
    pub const CONCAT: u8 = 5;
    pub const ADD: u8 = 6;
    pub const MUL: u8 = 7;
    pub const NEG: u8 = 8;
    /// Literals, names, calls, vectors: never need parentheses.
    pub const ATOM: u8 = 9;
}

impl Expr {
    /// An expression of `kind` at `span`.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    /// The direct subexpressions, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Literal(_)
            | ExprKind::EntityLit { .. }
            | ExprKind::Param(_)
            | ExprKind::Field { .. }
            | ExprKind::Path { .. }
            | ExprKind::Component(_)
            | ExprKind::EntityId
            | ExprKind::CountStar => Vec::new(),
            ExprKind::Vector(items) => items.iter().collect(),
            ExprKind::Call { args, .. } => args.iter().collect(),
            ExprKind::Unary { expr, .. } | ExprKind::Not(expr) | ExprKind::IsNull { expr, .. } => vec![expr],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Like { expr, pattern, .. } => vec![expr, pattern],
            ExprKind::Between { expr, low, high, .. } => vec![expr, low, high],
            ExprKind::InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
        }
    }

    /// Calls `f` on this expression and every subexpression, parents before children, left to
    /// right. (Parsed trees are at most [`MAX_EXPR_DEPTH`](crate::parse::MAX_EXPR_DEPTH) deep.)
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        for child in self.children() {
            child.walk(f);
        }
    }

    /// How tightly the expression binds when printed (see [`prec`]).
    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary { op, .. } => op.precedence(),
            ExprKind::Not(_) => prec::NOT,
            ExprKind::Between { .. } | ExprKind::InList { .. } | ExprKind::Like { .. } | ExprKind::IsNull { .. } => {
                prec::COMPARE
            }
            ExprKind::Unary { .. } => prec::NEG,
            ExprKind::Literal(Literal::Int(i)) if *i < 0 => prec::NEG,
            ExprKind::Literal(Literal::Float(x)) if x.is_sign_negative() => prec::NEG,
            _ => prec::ATOM,
        }
    }
}

/// Writes `e`, in parentheses if it binds looser than `min`.
fn write_operand(f: &mut fmt::Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
    if e.precedence() < min { write!(f, "({e})") } else { write!(f, "{e}") }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// Prints the expression in the language, with the parentheses precedence needs and no
/// others; keywords in upper case. Parsing the output gives the same tree (spans aside).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = |negated: bool| if negated { "NOT " } else { "" };
        match &self.kind {
            ExprKind::Literal(lit) => write!(f, "{lit}"),
            ExprKind::EntityLit { index, generation } => write!(f, "{index}v{generation}"),
            ExprKind::Param(p) => write!(f, "{p}"),
            ExprKind::Vector(items) => {
                f.write_str("[")?;
                write_list(f, items)?;
                f.write_str("]")
            }
            ExprKind::Field { component, field } => write!(f, "{component}.{field}"),
            ExprKind::Path { base, steps } => {
                write!(f, "{base}")?;
                for s in steps {
                    write!(f, ".{}", s.component)?;
                    if let Some(g) = &s.field {
                        write!(f, ".{g}")?;
                    }
                }
                Ok(())
            }
            ExprKind::Component(c) => write!(f, "{c}"),
            ExprKind::EntityId => f.write_str("entity"),
            ExprKind::Unary { op: UnaryOp::Neg, expr } => {
                f.write_str("-")?;
                // Parenthesize a number (`-5` would read back as one literal) and anything
                // starting with `-` (`--` starts a comment).
                if matches!(expr.kind, ExprKind::Literal(Literal::Int(_) | Literal::Float(_))) {
                    write!(f, "({expr})")
                } else {
                    write_operand(f, expr, prec::NEG + 1)
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                write_operand(f, lhs, p)?;
                write!(f, " {op} ")?;
                write_operand(f, rhs, p + 1)
            }
            ExprKind::Not(expr) => {
                f.write_str("NOT ")?;
                write_operand(f, expr, prec::NOT)
            }
            ExprKind::Between { expr, low, high, negated } => {
                write_operand(f, expr, prec::COMPARE)?;
                write!(f, " {}BETWEEN ", not(*negated))?;
                write_operand(f, low, prec::CONCAT)?;
                f.write_str(" AND ")?;
                write_operand(f, high, prec::CONCAT)
            }
            ExprKind::InList { expr, list, negated } => {
                write_operand(f, expr, prec::COMPARE)?;
                write!(f, " {}IN (", not(*negated))?;
                write_list(f, list)?;
                f.write_str(")")
            }
            ExprKind::Like { expr, pattern, negated } => {
                write_operand(f, expr, prec::COMPARE)?;
                write!(f, " {}LIKE ", not(*negated))?;
                write_operand(f, pattern, prec::COMPARE + 1)
            }
            ExprKind::IsNull { expr, negated } => {
                write_operand(f, expr, prec::COMPARE)?;
                write!(f, " IS {}NULL", not(*negated))
            }
            ExprKind::Call { name, args } => {
                write!(f, "{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            ExprKind::CountStar => f.write_str("count(*)"),
        }
    }
}

/// Prints the literal as the language writes it (strings single-quoted and escaped; floats
/// always with a `.` or an exponent, so they read back as floats).
impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Str(s) => {
                f.write_str("'")?;
                for c in s.chars() {
                    match c {
                        '\\' => f.write_str("\\\\")?,
                        '\'' => f.write_str("\\'")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("'")
            }
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("null"),
        }
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Param::Positional(n) => write!(f, "${n}"),
            Param::Named(name) => write!(f, "${name}"),
        }
    }
}
