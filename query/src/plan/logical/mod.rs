//! The logical plan: *what* a statement computes, with every name resolved.
//!
//! The binder turns the AST into these types: component names become [`ComponentId`]s held in
//! a slot table ([`Source::slots`]), field names become field positions, every expression
//! carries its inferred [`DataType`] and its source [`Span`]. Nothing here knows about
//! archetype tables, columns or indexes: that is the physical plan's business
//! ([`crate::plan::physical`]).
//!
//! A SELECT is a fixed pipeline, kept as one struct whose `Display` prints it as a tree:
//!
//! ```text
//! Limit 10
//!   Sort Health.hp DESC
//!     Project entity, Health.hp
//!       Filter Team.name = 'red'
//!         Scan Health, Team
//! ```

use std::fmt;
use std::sync::Arc;

use ecsdb_engine::{ComponentDef, ComponentId, Entity, Value};

use crate::error::Span;
use crate::functions::{Function, IndexCall};

mod display;

pub use display::{DisplayContext, ExprDisplay, literal_text, render_terms};

/// The type of an expression, inferred by the binder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// Only ever null (the `null` literal).
    Null,
    /// `true` / `false`.
    Bool,
    /// Every integer field type and integer literal: i64.
    Int,
    /// Every float field type and float literal: f64.
    Float,
    /// Strings.
    Str,
    /// Entity handles.
    Entity,
    /// 2-vectors of f64.
    Vec2,
    /// 3-vectors of f64.
    Vec3,
    /// A whole component as an object.
    Object,
    /// Not known before execution: a parameter, or a registered function's result.
    Any,
}

impl DataType {
    /// The language's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Null => "null",
            DataType::Bool => "bool",
            DataType::Int => "int",
            DataType::Float => "float",
            DataType::Str => "string",
            DataType::Entity => "entity",
            DataType::Vec2 => "vec2",
            DataType::Vec3 => "vec3",
            DataType::Object => "component",
            DataType::Any => "any",
        }
    }

    /// The type of a value.
    pub fn of(v: &Value) -> DataType {
        match v {
            Value::Null => DataType::Null,
            Value::Bool(_) => DataType::Bool,
            Value::Int(_) => DataType::Int,
            Value::Float(_) => DataType::Float,
            Value::Str(_) => DataType::Str,
            Value::Entity(_) => DataType::Entity,
            Value::Vec2(_) => DataType::Vec2,
            Value::Vec3(_) => DataType::Vec3,
            Value::Object(_) => DataType::Object,
        }
    }

    /// Int or float.
    pub fn is_numeric(self) -> bool {
        matches!(self, DataType::Int | DataType::Float)
    }

    /// Vec2 or vec3.
    pub fn is_vector(self) -> bool {
        matches!(self, DataType::Vec2 | DataType::Vec3)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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

/// How a FROM term (or the implicit-required rule) constrains one or more components.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// The entity has the component. `implicit` when added by the implicit-required rule.
    Required {
        /// The component.
        slot: Slot,
        /// Added because the component is named in an expression, not in FROM.
        implicit: bool,
    },
    /// `!C`: the entity lacks the component.
    Not(Slot),
    /// `?C`: the component may be absent (its fields read null).
    Optional(Slot),
    /// `A | B`: the entity has at least one of them.
    AnyOf(Vec<Slot>),
}

/// Where rows come from: the entities matching the terms, restricted by the filter.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// Every component the statement names.
    pub slots: Vec<ComponentSlot>,
    /// The FROM terms plus the implicitly required components.
    pub terms: Vec<Term>,
    /// The WHERE condition.
    pub filter: Option<Expr>,
    /// An entity target (`DESPAWN 12v0`, `UPDATE … FROM $1`): only this entity, which must be
    /// alive (a stale one is an error, not an empty result).
    pub target: Option<EntityRef>,
}

impl Source {
    /// The slot of a component, if the statement names it.
    pub fn slot_of(&self, id: ComponentId) -> Option<Slot> {
        self.slots.iter().position(|s| s.id == id)
    }

    /// The component names of the non-negated FROM terms, in order (the columns of `*`).
    pub fn star_slots(&self) -> Vec<Slot> {
        let mut out = Vec::new();
        for t in &self.terms {
            match t {
                Term::Required { slot, implicit: false } | Term::Optional(slot) => out.push(*slot),
                Term::AnyOf(slots) => out.extend(slots.iter().copied()),
                _ => {}
            }
        }
        out
    }
}

/// An entity named by a statement's target.
#[derive(Clone, Debug, PartialEq)]
pub enum EntityRef {
    /// `12v0`.
    Literal(Entity, Span),
    /// `$1` / `$name`.
    Param(usize, Span),
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

/// The hierarchy functions over a reference field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HierarchyFunc {
    /// `depth(F)`: hops to the top of the chain.
    Depth,
    /// `root(F)`: the top of the chain.
    Root,
    /// `descendant_of(F, e [, max_depth])`.
    DescendantOf,
}

impl HierarchyFunc {
    /// The function's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            HierarchyFunc::Depth => "depth",
            HierarchyFunc::Root => "root",
            HierarchyFunc::DescendantOf => "descendant_of",
        }
    }

    /// The function named `lower` (lower case).
    pub fn from_name(lower: &str) -> Option<HierarchyFunc> {
        [HierarchyFunc::Depth, HierarchyFunc::Root, HierarchyFunc::DescendantOf].into_iter().find(|f| f.name() == lower)
    }
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `||`
    Concat,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `AND`
    And,
    /// `OR`
    Or,
}

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
            BinaryOp::Eq => "=",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
        }
    }

    /// `=`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge)
    }

    /// The comparison with its operands swapped (`a < b` ⇔ `b > a`).
    pub fn flip(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::Le => BinaryOp::Ge,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::Ge => BinaryOp::Le,
            other => other,
        }
    }

    /// Binding strength for printing (higher binds tighter).
    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Concat => 5,
            BinaryOp::Add | BinaryOp::Sub => 6,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => 7,
        }
    }
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// `count(*)` (no argument) or `count(x)` (non-null values).
    Count,
    /// `sum(x)`
    Sum,
    /// `avg(x)`
    Avg,
    /// `min(x)`
    Min,
    /// `max(x)`
    Max,
}

impl AggFunc {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Avg => "avg",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
        }
    }

    /// The aggregate of this name (lowercase).
    pub fn from_name(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "avg" => AggFunc::Avg,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            _ => return None,
        })
    }
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
    pub ty: DataType,
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
        let ty = DataType::of(&v);
        Expr { kind: ExprKind::Literal(v), ty, span }
    }

    /// The direct sub-expressions.
    pub fn children(&self) -> Vec<&Expr> {
        self.child_iter().collect()
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

    /// Prints the expression with component and field names from `slots`.
    pub fn display<'a>(&'a self, ctx: &'a DisplayContext<'a>) -> ExprDisplay<'a> {
        ExprDisplay { expr: self, ctx }
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
    pub ty: DataType,
}

/// One output column.
#[derive(Clone, Debug)]
pub struct Item {
    /// The column name.
    pub name: String,
    /// Its value (over input rows, or over groups when the query aggregates).
    pub expr: Expr,
}

/// One ORDER BY key.
#[derive(Clone, Debug)]
pub struct SortKey {
    /// The key (over input rows, or over groups when the query aggregates).
    pub expr: Expr,
    /// `DESC`.
    pub descending: bool,
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

/// A bound SELECT.
#[derive(Clone, Debug, Default)]
pub struct SelectPlan {
    /// Rows: terms and WHERE.
    pub source: Source,
    /// The output columns.
    pub items: Vec<Item>,
    /// GROUP BY keys (over input rows).
    pub group_by: Vec<Expr>,
    /// The aggregates the items and ORDER BY use (over input rows).
    pub aggregates: Vec<AggregateExpr>,
    /// Whether output rows are groups (GROUP BY or any aggregate).
    pub aggregated: bool,
    /// ORDER BY keys.
    pub order_by: Vec<SortKey>,
    /// LIMIT (a constant or parameter).
    pub limit: Option<Expr>,
    /// OFFSET (a constant or parameter).
    pub offset: Option<Expr>,
}

/// A component value to write (SPAWN, ADD): the fields given; the rest are zero.
#[derive(Clone, Debug)]
pub struct ComponentValue {
    /// The component.
    pub id: ComponentId,
    /// Its name.
    pub name: String,
    /// (field position, value) for each field given.
    pub fields: Vec<(usize, Expr)>,
    /// Where it was written.
    pub span: Span,
}

/// What `SHOW` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowKind {
    /// `SHOW COMPONENTS`
    Components,
    /// `SHOW TABLES`
    Tables,
    /// `SHOW INDEXES`
    Indexes,
    /// `SHOW SYSTEMS`
    Systems,
}

/// A bound statement: the logical plan of any statement kind.
#[derive(Clone, Debug)]
pub enum LogicalPlan {
    /// SELECT (and the bare term list).
    Select(Arc<SelectPlan>),
    /// EXPLAIN SELECT.
    Explain(Arc<SelectPlan>),
    /// SPAWN.
    Spawn(Vec<ComponentValue>),
    /// DESPAWN.
    Despawn(Source),
    /// ADD … TO / WHERE.
    Add(Vec<ComponentValue>, Source),
    /// REMOVE … FROM / WHERE.
    Remove(Vec<(ComponentId, String)>, Source),
    /// UPDATE C SET ….
    Update {
        /// The component written.
        component: ComponentId,
        /// Its name.
        name: String,
        /// (field position, new value).
        assignments: Vec<(usize, Expr)>,
        /// The targets.
        source: Source,
    },
    /// CREATE COMPONENT, with the references its fields declare.
    CreateComponent(ComponentDef, Vec<ecsdb_engine::ReferenceDef>),
    /// CREATE INDEX: built by the engine's index layer.
    CreateIndex {
        /// What to build (the engine resolves default fields and the default name).
        def: ecsdb_engine::index::IndexDef,
        /// Where the statement's index kind was written (errors point there).
        span: Span,
    },
    /// DROP INDEX.
    DropIndex(String, Span),
    /// SHOW ….
    Show(ShowKind),
    /// DESCRIBE C.
    Describe(ComponentId),
    /// A statement about the schedule (CREATE/DROP SYSTEM, EXPLAIN SCHEDULE, SET, TICK): run
    /// by the database's schedule, which binds system bodies itself.
    Schedule(ScheduleOp),
}

/// A statement about the schedule, checked as far as it can be without the schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum ScheduleOp {
    /// `CREATE SYSTEM`.
    CreateSystem(crate::parse::ast::CreateSystem),
    /// `DROP SYSTEM [IF EXISTS] name`.
    DropSystem {
        /// The system.
        name: String,
        /// `IF EXISTS`.
        if_exists: bool,
        /// Where the name is written.
        span: Span,
    },
    /// `EXPLAIN SCHEDULE`.
    ExplainSchedule,
    /// `SET fixed_hz = n`.
    SetFixedHz(u32),
    /// `TICK [n] [DT s]`.
    Tick {
        /// How many ticks.
        count: u64,
        /// Each tick's time step, in nanoseconds.
        dt_ns: u64,
    },
}

impl LogicalPlan {
    /// Whether running it cannot change the world.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            LogicalPlan::Select(_)
                | LogicalPlan::Explain(_)
                | LogicalPlan::Show(_)
                | LogicalPlan::Describe(_)
                | LogicalPlan::Schedule(ScheduleOp::ExplainSchedule)
        )
    }

    /// Calls `f` on each top-level expression of the statement: its filter, items, keys,
    /// aggregate arguments, assigned and spawned values (not on their sub-expressions; see
    /// [`Expr::walk`]).
    pub fn for_each_expr<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        let source = |s: &'a Source, f: &mut dyn FnMut(&'a Expr)| {
            if let Some(filter) = &s.filter {
                f(filter);
            }
        };
        match self {
            LogicalPlan::Select(s) | LogicalPlan::Explain(s) => {
                source(&s.source, f);
                s.items.iter().for_each(|i| f(&i.expr));
                s.group_by.iter().for_each(&mut *f);
                s.order_by.iter().for_each(|k| f(&k.expr));
                s.aggregates.iter().filter_map(|a| a.arg.as_ref()).for_each(&mut *f);
                s.limit.iter().chain(&s.offset).for_each(&mut *f);
            }
            LogicalPlan::Spawn(values) => values.iter().flat_map(|v| &v.fields).for_each(|(_, e)| f(e)),
            LogicalPlan::Add(values, s) => {
                source(s, f);
                values.iter().flat_map(|v| &v.fields).for_each(|(_, e)| f(e));
            }
            LogicalPlan::Despawn(s) | LogicalPlan::Remove(_, s) => source(s, f),
            LogicalPlan::Update { source: s, assignments, .. } => {
                source(s, f);
                assignments.iter().for_each(|(_, e)| f(e));
            }
            LogicalPlan::CreateComponent(..)
            | LogicalPlan::CreateIndex { .. }
            | LogicalPlan::DropIndex(..)
            | LogicalPlan::Show(_)
            | LogicalPlan::Describe(_)
            | LogicalPlan::Schedule(_) => {}
        }
    }

    /// Whether it uses `changed(C)` or `added(C)` (and so tracks its runs).
    pub fn tracks_changes(&self) -> bool {
        let mut found = false;
        self.for_each_expr(&mut |e| found |= e.any(&mut |x| matches!(x.kind, ExprKind::Changed { .. })));
        found
    }
}

/// Field names of every slot, for printing.
pub fn slot_fields(world: &ecsdb_engine::World, slots: &[ComponentSlot]) -> Vec<Vec<String>> {
    slots.iter().map(|s| world.components().info(s.id).fields().iter().map(|f| f.name.clone()).collect()).collect()
}

impl SelectPlan {
    /// Renders the logical plan as an indented tree (one line per step).
    pub fn render(&self, world: &ecsdb_engine::World, params: &[ParamSpec]) -> Vec<String> {
        let fields = slot_fields(world, &self.source.slots);
        let ctx = DisplayContext {
            slots: &self.source.slots,
            fields: &fields,
            group_by: &self.group_by,
            aggregates: &self.aggregates,
            params,
        };
        let mut lines = Vec::new();
        let join = |es: &mut dyn Iterator<Item = String>| es.collect::<Vec<_>>().join(", ");
        if self.limit.is_some() || self.offset.is_some() {
            let mut s = String::from("Limit");
            if let Some(l) = &self.limit {
                s.push_str(&format!(" {}", l.display(&ctx)));
            }
            if let Some(o) = &self.offset {
                s.push_str(&format!(" offset {}", o.display(&ctx)));
            }
            lines.push(s);
        }
        if !self.order_by.is_empty() {
            lines.push(format!(
                "Sort {}",
                join(&mut self.order_by.iter().map(|k| format!(
                    "{}{}",
                    k.expr.display(&ctx),
                    if k.descending { " DESC" } else { "" }
                )))
            ));
        }
        lines.push(format!(
            "Project {}",
            join(&mut self.items.iter().map(|i| format!("{} AS {}", i.expr.display(&ctx), i.name)))
        ));
        if self.aggregated {
            let aggs = join(&mut (0..self.aggregates.len()).map(|n| {
                let e = Expr { kind: ExprKind::Aggregate(n), ty: DataType::Any, span: Span::default() };
                e.display(&ctx).to_string()
            }));
            let keys = join(&mut self.group_by.iter().map(|k| k.display(&ctx).to_string()));
            lines.push(format!("Aggregate [{aggs}] group by [{keys}]"));
        }
        if let Some(f) = &self.source.filter {
            lines.push(format!("Filter {}", f.display(&ctx)));
        }
        lines.push(format!("Scan {}", render_terms(&self.source)));
        lines.iter().enumerate().map(|(i, l)| format!("{}{}", "  ".repeat(i), l)).collect()
    }
}
