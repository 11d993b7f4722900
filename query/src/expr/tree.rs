//! The bound expression tree: what an expression computes, with every name resolved to a
//! slot, field position or function, and its inferred type.

use std::fmt;

use ecsdb_engine::{ComponentId, Value, ValueType};

use crate::error::{Error, ErrorKind, Span};
use crate::functions::{Function, IndexCall};
use crate::types::{AggFunc, BinaryOp, HierarchyFunc};

/// A component a statement refers to: its position in [`Source::slots`].
pub type Slot = usize;

/// A resolved component reference.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentSlot {
    /// The component.
    pub id: ComponentId,
    /// Its name (for EXPLAIN and column names).
    pub name: String,
    /// `Some(2)` / `Some(3)` when the component reads as a vector.
    pub vector_len: Option<usize>,
}

/// One step of a path: a component on the entity reached so far, and its field.
#[derive(Clone, Debug, PartialEq)]
pub struct PathHop {
    /// The component.
    pub component: ComponentId,
    /// Its field; `None` for the whole component as an object (last step only).
    pub field: Option<usize>,
    /// `.D.g` as written, for printing.
    pub text: String,
}

/// A bound expression: what it computes, its type and where it was written.
///
/// Equality compares what is computed only (not spans or types), so that `GROUP BY Team.name`
/// matches the item `Team.name` wherever each was written.
#[derive(Clone, Debug)]
pub struct Expr {
    /// The computation.
    pub kind: ExprKind,
    /// The inferred type.
    pub ty: ValueType,
    /// The source text it came from.
    pub span: Span,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.kind == other.kind
    }
}

/// What an [`Expr`] computes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A constant.
    Literal(Value),
    /// Parameter number `n` of the statement (see [`ParamSpec`]).
    Param(usize),
    /// The row's entity.
    Entity,
    /// Field `field` (schema position) of the component in `slot`; null where it is absent.
    Field {
        /// The component.
        slot: Slot,
        /// The field's position in the schema.
        field: usize,
    },
    /// The whole component as an object; null where absent.
    Component(Slot),
    /// A vector-like component read as a vector; null where absent.
    ComponentVector(Slot),
    /// `has(C)`.
    Has(Slot),
    /// `changed(C)` (`added` false) or `added(C)` (`added` true): the row holds `C` and its
    /// changed (added) tick is newer than the statement's previous run (every row counts on a
    /// first run).
    Changed {
        /// The component's slot (not required by the expression, as with `has`).
        slot: Slot,
        /// `added(C)` rather than `changed(C)`.
        added: bool,
    },
    /// `C.f.D.g…`: the entity in `base` (an entity field of the row), then for each step the
    /// component `D` on the entity reached and its field `g` (the whole component as an object
    /// when `None`, only as the last step). Null at a null or dead entity or a missing
    /// component.
    Path {
        /// The first field, `C.f`.
        base: Box<Expr>,
        /// The steps.
        steps: Vec<PathHop>,
    },
    /// `depth(C.f)`, `root(C.f)`, `descendant_of(C.f, e [, max_depth])`: following reference
    /// field `field` of `component` up from the row's entity. Does not require the component.
    Hierarchy {
        /// Which function.
        func: HierarchyFunc,
        /// The component's slot (never required by this expression: it only lets the planner
        /// match relation indexes on it).
        slot: Slot,
        /// The component holding the field.
        component: ComponentId,
        /// The entity field.
        field: usize,
        /// `C.f` as written, for printing.
        text: String,
        /// `descendant_of`'s ancestor and optional maximum depth; empty for the others.
        args: Vec<Expr>,
    },
    /// Unary minus.
    Neg(Box<Expr>),
    /// `NOT`.
    Not(Box<Expr>),
    /// A binary operator.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `x [NOT] BETWEEN low AND high`.
    Between {
        /// The tested value.
        expr: Box<Expr>,
        /// Inclusive lower bound.
        low: Box<Expr>,
        /// Inclusive upper bound.
        high: Box<Expr>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `x [NOT] IN (list)`.
    InList {
        /// The tested value.
        expr: Box<Expr>,
        /// The candidates.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `s [NOT] LIKE pattern`.
    Like {
        /// The tested string.
        expr: Box<Expr>,
        /// The pattern (`%`, `_`).
        pattern: Box<Expr>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `x IS [NOT] NULL`.
    IsNull {
        /// The tested value.
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `[a, b]` or `[a, b, c]`.
    Vector(Vec<Expr>),
    /// A scalar function call (built in or registered).
    Call {
        /// The function.
        func: Function,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `name(C)`: the predicate of a function index over the component in `slot`; null where
    /// the entity lacks it. Read from the index's maintained answer, so the Rust predicate runs
    /// only for rows that changed since the index's last refresh.
    IndexCall {
        /// The function index.
        func: IndexCall,
        /// The component it reads.
        slot: Slot,
    },
    /// After aggregation: the value of GROUP BY key `n` for the group.
    GroupKey(usize),
    /// After aggregation: the value of aggregate `n` for the group.
    Aggregate(usize),
}

impl Expr {
    /// A constant expression.
    pub fn literal(v: Value, span: Span) -> Expr {
        let ty = v.value_type();
        Expr { kind: ExprKind::Literal(v), ty, span }
    }

    /// The direct sub-expressions, without collecting them: [`Expr::walk`] and [`Expr::any`]
    /// visit every node of every filter at each plan, where a `Vec` per node would be most of
    /// their cost.
    fn child_iter(&self) -> impl Iterator<Item = &Expr> {
        let none: &[Expr] = &[];
        let (fixed, rest): ([Option<&Expr>; 3], &[Expr]) = match &self.kind {
            ExprKind::Neg(e) | ExprKind::Not(e) | ExprKind::IsNull { expr: e, .. } | ExprKind::Path { base: e, .. } => {
                ([Some(e), None, None], none)
            }
            ExprKind::Binary { left, right, .. } => ([Some(left), Some(right), None], none),
            ExprKind::Between { expr, low, high, .. } => ([Some(expr), Some(low), Some(high)], none),
            ExprKind::InList { expr, list, .. } => ([Some(expr), None, None], list),
            ExprKind::Like { expr, pattern, .. } => ([Some(expr), Some(pattern), None], none),
            ExprKind::Vector(items) | ExprKind::Call { args: items, .. } | ExprKind::Hierarchy { args: items, .. } => {
                ([None; 3], items)
            }
            _ => ([None; 3], none),
        };
        fixed.into_iter().flatten().chain(rest)
    }

    /// Calls `f` on this expression and every sub-expression, parents first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        for c in self.child_iter() {
            c.walk(f);
        }
    }

    /// Whether this expression or a sub-expression names the component in `slot` (a field,
    /// the component itself, `has`, `changed`/`added`, a relation function).
    pub fn names_slot(&self, slot: Slot) -> bool {
        self.any(&mut |e| match &e.kind {
            ExprKind::Field { slot: s, .. }
            | ExprKind::Component(s)
            | ExprKind::ComponentVector(s)
            | ExprKind::Has(s)
            | ExprKind::Changed { slot: s, .. }
            | ExprKind::Hierarchy { slot: s, .. } => *s == slot,
            _ => false,
        })
    }

    /// Whether any sub-expression satisfies `pred`.
    pub fn any(&self, pred: &mut impl FnMut(&Expr) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        self.child_iter().any(|c| c.any(pred))
    }

    /// A copy of `e` with each direct child replaced by `f(child)`.
    pub fn map_children(&self, f: &mut impl FnMut(&Expr) -> Expr) -> Expr {
        let e = self;
        let b = |x: &Expr, f: &mut dyn FnMut(&Expr) -> Expr| Box::new(f(x));
        let kind = match &e.kind {
            ExprKind::Neg(x) => ExprKind::Neg(b(x, f)),
            ExprKind::Not(x) => ExprKind::Not(b(x, f)),
            ExprKind::Binary { op, left, right } => ExprKind::Binary { op: *op, left: b(left, f), right: b(right, f) },
            ExprKind::Between { expr, low, high, negated } => {
                ExprKind::Between { expr: b(expr, f), low: b(low, f), high: b(high, f), negated: *negated }
            }
            ExprKind::InList { expr, list, negated } => {
                ExprKind::InList { expr: b(expr, f), list: list.iter().map(&mut *f).collect(), negated: *negated }
            }
            ExprKind::Like { expr, pattern, negated } => {
                ExprKind::Like { expr: b(expr, f), pattern: b(pattern, f), negated: *negated }
            }
            ExprKind::IsNull { expr, negated } => ExprKind::IsNull { expr: b(expr, f), negated: *negated },
            ExprKind::Vector(items) => ExprKind::Vector(items.iter().map(&mut *f).collect()),
            ExprKind::Call { func, args } => {
                ExprKind::Call { func: func.clone(), args: args.iter().map(&mut *f).collect() }
            }
            ExprKind::Path { base, steps } => ExprKind::Path { base: b(base, f), steps: steps.clone() },
            ExprKind::Hierarchy { func, slot, component, field, text, args } => ExprKind::Hierarchy {
                func: *func,
                slot: *slot,
                component: *component,
                field: *field,
                text: text.clone(),
                args: args.iter().map(&mut *f).collect(),
            },
            other => other.clone(),
        };
        Expr { kind, ty: e.ty, span: e.span }
    }

    /// Whether the value depends on the row (fields, components, `entity`, `has`).
    pub fn reads_row(&self) -> bool {
        self.any(&mut |e| {
            matches!(
                e.kind,
                ExprKind::Entity
                    | ExprKind::Field { .. }
                    | ExprKind::Component(_)
                    | ExprKind::ComponentVector(_)
                    | ExprKind::Has(_)
                    | ExprKind::Changed { .. }
                    | ExprKind::Hierarchy { .. }
                    | ExprKind::IndexCall { .. }
                    | ExprKind::GroupKey(_)
                    | ExprKind::Aggregate(_)
            )
        })
    }

    /// Whether a parameter occurs in it.
    pub fn has_params(&self) -> bool {
        self.any(&mut |e| matches!(e.kind, ExprKind::Param(_)))
    }

    /// Splits `a AND b AND c` into its conjuncts.
    pub fn conjuncts(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        fn go<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
            match &e.kind {
                ExprKind::Binary { op: BinaryOp::And, left, right } => {
                    go(left, out);
                    go(right, out);
                }
                _ => out.push(e),
            }
        }
        go(self, &mut out);
        out
    }
}

/// One aggregate computed per group.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateExpr {
    /// The function.
    pub func: AggFunc,
    /// Its argument; `None` for `count(*)`.
    pub arg: Option<Expr>,
    /// The result type.
    pub ty: ValueType,
}

/// How a parameter is named in the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamKey {
    /// `$1` (1-based).
    Position(usize),
    /// `$name`.
    Name(String),
}

impl fmt::Display for ParamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKey::Position(n) => write!(f, "${n}"),
            ParamKey::Name(s) => write!(f, "${s}"),
        }
    }
}

/// A parameter of a statement: its name and where it first occurs.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    /// `$1` or `$name`.
    pub key: ParamKey,
    /// The first occurrence.
    pub span: Span,
}

/// An error of the evaluator at an expression.
pub fn eval_error(e: &Expr, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Type, message).with_span(e.span)
}
