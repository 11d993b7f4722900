//! The typed syntax tree that [`parse_statement`](super::parse_statement) produces.
//!
//! Every node keeps the [`Span`] of its source text, so every later stage can point at the
//! text it complains about. Names are kept exactly as written ([`Ident`]); nothing here is
//! checked against a catalog: that is the binder's job.
//!
//! Conventions the binder relies on:
//! - a dotted name `C.f` is [`ExprKind::Field`]; a bare name `C` in an expression is
//!   [`ExprKind::Component`] (the component as a vector or object); the keyword `entity` is
//!   [`ExprKind::EntityId`];
//! - `count(*)` is [`ExprKind::CountStar`]; every other call, `count(x)` included, is
//!   [`ExprKind::Call`] with the function name as written (functions are looked up
//!   case-insensitively, like keywords);
//! - a negative number literal (`-7`, `-0.25`, `-9223372036854775808`) is one
//!   [`Literal`], not a negation;
//! - a vector literal has 2 or 3 elements (checked by the parser), each any expression;
//! - an expression's span covers its whole text, including the parentheses around it.

use std::fmt;

use ecsdb_engine::FieldType;

pub use crate::error::Span;

/// A name as written in the source: a component, field, function, index, alias or kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    /// The name, case preserved.
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

impl Ident {
    /// A name at `span`.
    pub fn new(name: impl Into<String>, span: Span) -> Ident {
        Ident { name: name.into(), span }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// One statement of the language.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `SELECT …`, or a bare term list (`Position, !Frozen`).
    Select(Select),
    /// `EXPLAIN <select>`.
    Explain(Explain),
    /// `SPAWN C {…}, …`.
    Spawn(Spawn),
    /// `DESPAWN <target>`.
    Despawn(Despawn),
    /// `ADD C {…}, … TO <entity>` or `ADD C {…}, … [FROM …] [WHERE …]`.
    Add(Add),
    /// `REMOVE C, … FROM <entity>` or `REMOVE C, … [FROM …] [WHERE …]`.
    Remove(Remove),
    /// `UPDATE C SET f = e, … [FROM <entity> | [FROM …] [WHERE …]]`.
    Update(Update),
    /// `CREATE COMPONENT C [(f type, …)]`.
    CreateComponent(CreateComponent),
    /// `CREATE INDEX [name] ON C [(f, …)] USING kind`.
    CreateIndex(CreateIndex),
    /// `DROP INDEX name`.
    DropIndex(DropIndex),
    /// `SHOW COMPONENTS`, `SHOW TABLES`, `SHOW INDEXES`.
    Show(Show),
    /// `DESCRIBE C`.
    Describe(Describe),
    /// `CREATE SYSTEM name [IN PHASE p] [AFTER …] [BEFORE …] AS <body>`.
    CreateSystem(CreateSystem),
    /// `DROP SYSTEM [IF EXISTS] name`.
    DropSystem(DropSystem),
    /// `EXPLAIN SCHEDULE`.
    ExplainSchedule(Span),
    /// `SET name = value`.
    Set(SetSetting),
    /// `TICK [n] [DT seconds]`.
    Tick(Tick),
}

impl Statement {
    /// The statement's source text, without a trailing `;`.
    pub fn span(&self) -> Span {
        match self {
            Statement::Select(s) => s.span,
            Statement::Explain(s) => s.span,
            Statement::Spawn(s) => s.span,
            Statement::Despawn(s) => s.span,
            Statement::Add(s) => s.span,
            Statement::Remove(s) => s.span,
            Statement::Update(s) => s.span,
            Statement::CreateComponent(s) => s.span,
            Statement::CreateIndex(s) => s.span,
            Statement::DropIndex(s) => s.span,
            Statement::Show(s) => s.span,
            Statement::Describe(s) => s.span,
            Statement::CreateSystem(s) => s.span,
            Statement::DropSystem(s) => s.span,
            Statement::ExplainSchedule(span) => *span,
            Statement::Set(s) => s.span,
            Statement::Tick(s) => s.span,
        }
    }
}

/// `SELECT <items> [FROM <terms>] [WHERE <cond>] [GROUP BY …] [ORDER BY …] [LIMIT n] [OFFSET m]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    /// The items, in order; at least one.
    pub items: Vec<SelectItem>,
    /// The FROM terms; empty when there is no FROM.
    pub from: Vec<Term>,
    /// The WHERE condition.
    pub where_: Option<Expr>,
    /// The GROUP BY keys; empty when there is no GROUP BY.
    pub group_by: Vec<Expr>,
    /// The ORDER BY keys; empty when there is no ORDER BY.
    pub order_by: Vec<OrderKey>,
    /// The LIMIT expression.
    pub limit: Option<Expr>,
    /// The OFFSET expression.
    pub offset: Option<Expr>,
    /// Whether this was written as a bare term list (`Position, Velocity`), the shorthand for
    /// `SELECT * FROM Position, Velocity`. Its one item is a [`SelectItem::Star`] spanning the
    /// term list.
    pub bare: bool,
    /// The whole statement.
    pub span: Span,
}

/// One item of a SELECT list.
#[derive(Clone, Debug, PartialEq)]
pub enum SelectItem {
    /// `*`: the entity, then each non-negated FROM term's component.
    Star {
        /// The `*` (or the bare term list).
        span: Span,
    },
    /// An expression, optionally named with `AS`.
    Expr {
        /// The value.
        expr: Expr,
        /// The `AS` name.
        alias: Option<Ident>,
        /// The expression's source text with whitespace runs (and comments) collapsed to single
        /// spaces, outside string literals: the column name when there is no alias.
        text: String,
        /// The item, alias included.
        span: Span,
    },
}

impl SelectItem {
    /// The item's source text.
    pub fn span(&self) -> Span {
        match self {
            SelectItem::Star { span } | SelectItem::Expr { span, .. } => *span,
        }
    }

    /// The column name of an expression item (its alias, else its text); `None` for `*`,
    /// which expands to several columns.
    pub fn column_name(&self) -> Option<&str> {
        match self {
            SelectItem::Star { .. } => None,
            SelectItem::Expr { alias: Some(alias), .. } => Some(&alias.name),
            SelectItem::Expr { text, .. } => Some(text),
        }
    }
}

/// One FROM term.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// What the term asks of the entity.
    pub kind: TermKind,
    /// The term, prefix included.
    pub span: Span,
}

/// What a FROM term asks of the entity.
#[derive(Clone, Debug, PartialEq)]
pub enum TermKind {
    /// `C`: the entity has C.
    Required(Ident),
    /// `!C` or `NOT C`: the entity does not have C.
    Not(Ident),
    /// `?C` or `OPTIONAL C`: C may be absent.
    Optional(Ident),
    /// `A | B | C`: at least one of them (two or more names).
    AnyOf(Vec<Ident>),
}

impl Term {
    /// The component names the term mentions.
    pub fn components(&self) -> &[Ident] {
        match &self.kind {
            TermKind::Required(c) | TermKind::Not(c) | TermKind::Optional(c) => std::slice::from_ref(c),
            TermKind::AnyOf(cs) => cs,
        }
    }
}

/// One ORDER BY key.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderKey {
    /// The key: any expression, or an item's alias (then an [`ExprKind::Component`] naming it).
    pub expr: Expr,
    /// `DESC` (else `ASC`, the default).
    pub desc: bool,
    /// The key, direction included.
    pub span: Span,
}

/// `EXPLAIN <select>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Explain {
    /// The explained query.
    pub select: Box<Select>,
    /// The whole statement.
    pub span: Span,
}

/// `SPAWN C {f: v, …}, …`. The component list may be empty (`SPAWN` makes an empty entity).
#[derive(Clone, Debug, PartialEq)]
pub struct Spawn {
    /// The components of the new entity.
    pub components: Vec<ComponentValue>,
    /// The whole statement.
    pub span: Span,
}

/// A component with field values: `Health {hp: 10}`, or just `Frozen`.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentValue {
    /// The component.
    pub component: Ident,
    /// The given fields, in written order (a field may be repeated: the binder rejects it).
    pub fields: Vec<FieldInit>,
    /// The component value, braces included.
    pub span: Span,
}

/// `field: value` inside a component value.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldInit {
    /// The field.
    pub field: Ident,
    /// Its value.
    pub value: Expr,
    /// `field: value`.
    pub span: Span,
}

/// `DESPAWN <target>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Despawn {
    /// The entities to despawn.
    pub target: Target,
    /// The whole statement.
    pub span: Span,
}

/// `ADD <components> TO <entity>` or `ADD <components> [FROM …] [WHERE …]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Add {
    /// The components to add (or overwrite).
    pub components: Vec<ComponentValue>,
    /// The entities to add them to.
    pub target: Target,
    /// The whole statement.
    pub span: Span,
}

/// `REMOVE C, … FROM <entity>` or `REMOVE C, … [FROM …] [WHERE …]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Remove {
    /// The components to remove.
    pub components: Vec<Ident>,
    /// The entities to remove them from.
    pub target: Target,
    /// The whole statement.
    pub span: Span,
}

/// `UPDATE C SET f = e, … <target>`. An entity target is written `FROM 12v0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// The component updated.
    pub component: Ident,
    /// The assignments, in written order.
    pub assignments: Vec<Assignment>,
    /// The entities updated.
    pub target: Target,
    /// The whole statement.
    pub span: Span,
}

/// `field = value` in UPDATE … SET.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// The field of the updated component.
    pub field: Ident,
    /// The new value, computed from the state before the statement.
    pub value: Expr,
    /// `field = value`.
    pub span: Span,
}

/// Which entities a DESPAWN, ADD, REMOVE or UPDATE changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// One entity. The expression is an [`ExprKind::EntityLit`] or an [`ExprKind::Param`]
    /// (the parser allows nothing else here).
    Entity(Expr),
    /// The entities a SELECT with this FROM and WHERE would select.
    Filter(Filter),
}

/// `[FROM <terms>] [WHERE <cond>]`; both may be absent (then every entity is targeted, subject
/// to the terms the statement implies, such as UPDATE's component).
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// The FROM terms; empty when there is no FROM.
    pub from: Vec<Term>,
    /// The WHERE condition.
    pub where_: Option<Expr>,
    /// The filter (empty, at its position, when both parts are absent).
    pub span: Span,
}

/// `CREATE COMPONENT C [(field type, …)]`; no fields makes a tag.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateComponent {
    /// The new component's name.
    pub name: Ident,
    /// Its fields in declaration order (names may repeat: the binder rejects it).
    pub fields: Vec<FieldDecl>,
    /// The whole statement.
    pub span: Span,
}

/// `name type` in CREATE COMPONENT.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDecl {
    /// The field name.
    pub name: Ident,
    /// The field type (type names are case-insensitive).
    pub ty: FieldType,
    /// Where the type is written.
    pub ty_span: Span,
    /// `REFERENCES …`, for an `entity` field declared a reference.
    pub reference: Option<ReferenceClause>,
    /// `name type`.
    pub span: Span,
}

/// `REFERENCES [ON DELETE action] [ACYCLIC]` in a field declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceClause {
    /// What despawning a target does (`NO ACTION` when not written).
    pub on_delete: ecsdb_engine::OnDelete,
    /// `ACYCLIC`.
    pub acyclic: bool,
    /// The clause.
    pub span: Span,
}

/// One step of a path after `C.f`: `.D` and optionally `.g`.
#[derive(Clone, Debug, PartialEq)]
pub struct PathStep {
    /// The component on the entity reached so far.
    pub component: Ident,
    /// Its field; `None` for the component as an object (only as the last step).
    pub field: Option<Ident>,
}

/// `CREATE INDEX [name] ON C [(f, …)] USING kind`.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateIndex {
    /// The index name, if given (the default is `<component>_<fields>_<kind>`).
    pub name: Option<Ident>,
    /// The indexed component.
    pub component: Ident,
    /// The indexed fields; empty when not given (an rtree on a vector-like component, or a
    /// tag index).
    pub fields: Vec<Ident>,
    /// The index kind as written (`rtree`, `bitmap`, `btree`, `function`, …).
    pub kind: Ident,
    /// The whole statement.
    pub span: Span,
}

/// `DROP INDEX name`.
#[derive(Clone, Debug, PartialEq)]
pub struct DropIndex {
    /// The index.
    pub name: Ident,
    /// The whole statement.
    pub span: Span,
}

/// `SHOW COMPONENTS | TABLES | INDEXES`.
#[derive(Clone, Debug, PartialEq)]
pub struct Show {
    /// What to list.
    pub what: ShowWhat,
    /// The whole statement.
    pub span: Span,
}

/// What SHOW lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShowWhat {
    /// `SHOW COMPONENTS`: name, fields, storage, entity count.
    Components,
    /// `SHOW TABLES`: archetype tables, their components and rows.
    Tables,
    /// `SHOW INDEXES`: name, kind, component, fields, entries.
    Indexes,
    /// `SHOW SYSTEMS`: the schedule's systems and their run statistics.
    Systems,
}

/// `CREATE SYSTEM name [IN PHASE p] [AFTER a, …] [BEFORE b, …] AS <body>`.
#[derive(Clone, Debug, PartialEq)]
pub struct CreateSystem {
    /// The system's name.
    pub name: Ident,
    /// The `IN PHASE` name as written (checked by the schedule).
    pub phase: Option<Ident>,
    /// The systems it runs after.
    pub after: Vec<Ident>,
    /// The systems it runs before.
    pub before: Vec<Ident>,
    /// The body's statements, in order.
    pub body: Vec<Statement>,
    /// The body's source text (`BEGIN … END` or the one statement), comments blanked: what
    /// is saved with the world and read back with
    /// [`parse_system_body`](super::parse_system_body).
    pub body_text: String,
    /// The whole statement.
    pub span: Span,
}

/// `DROP SYSTEM [IF EXISTS] name`.
#[derive(Clone, Debug, PartialEq)]
pub struct DropSystem {
    /// The system dropped.
    pub name: Ident,
    /// `IF EXISTS`: an unknown name is not an error.
    pub if_exists: bool,
    /// The whole statement.
    pub span: Span,
}

/// `SET name = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct SetSetting {
    /// The setting (`fixed_hz`).
    pub name: Ident,
    /// Its new value.
    pub value: Expr,
    /// The whole statement.
    pub span: Span,
}

/// `TICK [n] [DT seconds]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// How many ticks (default 1).
    pub count: Option<Expr>,
    /// The seconds each tick simulates (default 1/60).
    pub dt: Option<Expr>,
    /// The whole statement.
    pub span: Span,
}

/// `DESCRIBE C`.
#[derive(Clone, Debug, PartialEq)]
pub struct Describe {
    /// The component described.
    pub component: Ident,
    /// The whole statement.
    pub span: Span,
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
    /// right. (Parsed trees are at most [`MAX_EXPR_DEPTH`](super::MAX_EXPR_DEPTH) deep.)
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
    if e.precedence() < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn e(kind: ExprKind) -> Expr {
        Expr::new(kind, Span::default())
    }
    fn int(i: i64) -> Expr {
        e(ExprKind::Literal(Literal::Int(i)))
    }
    fn name(n: &str) -> Ident {
        Ident::new(n, Span::default())
    }
    fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
        e(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) })
    }

    #[test]
    fn display_adds_only_needed_parentheses() {
        let sum = bin(BinaryOp::Add, int(1), int(2));
        assert_eq!(bin(BinaryOp::Mul, sum.clone(), int(3)).to_string(), "(1 + 2) * 3");
        assert_eq!(bin(BinaryOp::Add, int(3), bin(BinaryOp::Mul, int(1), int(2))).to_string(), "3 + 1 * 2");
        // Left associativity: a right operand of the same level needs parentheses.
        assert_eq!(bin(BinaryOp::Sub, int(1), sum.clone()).to_string(), "1 - (1 + 2)");
        assert_eq!(bin(BinaryOp::Sub, sum.clone(), int(1)).to_string(), "1 + 2 - 1");
        let neg = |x: Expr| e(ExprKind::Unary { op: UnaryOp::Neg, expr: Box::new(x) });
        assert_eq!(neg(int(-5)).to_string(), "-(-5)");
        assert_eq!(neg(neg(int(5))).to_string(), "-(-(5))");
        assert_eq!(neg(int(5)).to_string(), "-(5)");
        assert_eq!(neg(e(ExprKind::EntityId)).to_string(), "-entity");
        assert_eq!(neg(sum.clone()).to_string(), "-(1 + 2)");
        assert_eq!(bin(BinaryOp::Sub, int(1), int(-2)).to_string(), "1 - -2");
        let not = |x: Expr| e(ExprKind::Not(Box::new(x)));
        assert_eq!(bin(BinaryOp::Eq, int(1), not(int(2))).to_string(), "1 = (NOT 2)");
        assert_eq!(not(bin(BinaryOp::Eq, int(1), int(2))).to_string(), "NOT 1 = 2");
        assert_eq!(not(bin(BinaryOp::And, int(1), int(2))).to_string(), "NOT (1 AND 2)");
    }

    #[test]
    fn display_of_every_kind() {
        let c = || e(ExprKind::Component(name("C")));
        let cases: Vec<(Expr, &str)> = vec![
            (e(ExprKind::Literal(Literal::Float(1.0))), "1.0"),
            (e(ExprKind::Literal(Literal::Float(1e-7))), "1e-7"),
            (e(ExprKind::Literal(Literal::Str("it's\\\n\t\"".into()))), r#"'it\'s\\\n\t"'"#),
            (e(ExprKind::Literal(Literal::Bool(true))), "true"),
            (e(ExprKind::Literal(Literal::Null)), "null"),
            (e(ExprKind::EntityLit { index: 12, generation: 3 }), "12v3"),
            (e(ExprKind::Param(Param::Positional(2))), "$2"),
            (e(ExprKind::Param(Param::Named("who".into()))), "$who"),
            (e(ExprKind::Vector(vec![int(1), int(2), int(3)])), "[1, 2, 3]"),
            (e(ExprKind::Field { component: name("C"), field: name("from") }), "C.from"),
            (e(ExprKind::EntityId), "entity"),
            (e(ExprKind::CountStar), "count(*)"),
            (e(ExprKind::Call { name: name("max"), args: vec![int(1), c()] }), "max(1, C)"),
            (
                e(ExprKind::Between {
                    expr: Box::new(c()),
                    low: Box::new(bin(BinaryOp::Or, int(1), int(2))),
                    high: Box::new(bin(BinaryOp::Concat, int(3), int(4))),
                    negated: true,
                }),
                "C NOT BETWEEN (1 OR 2) AND 3 || 4",
            ),
            (e(ExprKind::InList { expr: Box::new(c()), list: vec![], negated: false }), "C IN ()"),
            (e(ExprKind::InList { expr: Box::new(c()), list: vec![int(1), int(2)], negated: true }), "C NOT IN (1, 2)"),
            (e(ExprKind::Like { expr: Box::new(c()), pattern: Box::new(c()), negated: true }), "C NOT LIKE C"),
            (
                e(ExprKind::IsNull { expr: Box::new(bin(BinaryOp::Eq, int(1), int(2))), negated: true }),
                "1 = 2 IS NOT NULL",
            ),
            (
                e(ExprKind::IsNull { expr: Box::new(bin(BinaryOp::And, int(1), int(2))), negated: false }),
                "(1 AND 2) IS NULL",
            ),
        ];
        for (expr, text) in cases {
            assert_eq!(expr.to_string(), text);
        }
        assert_eq!(BinaryOp::NotEq.to_string(), "!=");
        assert!(BinaryOp::GtEq.is_comparison());
        assert!(!BinaryOp::Concat.is_comparison());
    }

    #[test]
    fn walk_and_children() {
        let tree = bin(BinaryOp::Add, int(1), bin(BinaryOp::Mul, int(2), int(3)));
        let mut seen = Vec::new();
        tree.walk(&mut |x| seen.push(x.to_string()));
        assert_eq!(seen, ["1 + 2 * 3", "1", "2 * 3", "2", "3"]);
        assert_eq!(tree.children().len(), 2);
        let list = e(ExprKind::InList { expr: Box::new(int(0)), list: vec![int(1), int(2)], negated: false });
        assert_eq!(list.children().len(), 3);
    }

    #[test]
    fn items_terms_and_statements() {
        let star = SelectItem::Star { span: Span::new(7, 8) };
        assert_eq!(star.column_name(), None);
        assert_eq!(star.span(), Span::new(7, 8));
        let item = SelectItem::Expr { expr: int(1), alias: None, text: "1".into(), span: Span::new(0, 1) };
        assert_eq!(item.column_name(), Some("1"));
        let item = SelectItem::Expr { expr: int(1), alias: Some(name("one")), text: "1".into(), span: Span::new(0, 1) };
        assert_eq!(item.column_name(), Some("one"));
        let term = Term { kind: TermKind::AnyOf(vec![name("A"), name("B")]), span: Span::default() };
        assert_eq!(term.components().len(), 2);
        let term = Term { kind: TermKind::Not(name("A")), span: Span::default() };
        assert_eq!(term.components()[0].as_str(), "A");
        let show = Statement::Show(Show { what: ShowWhat::Tables, span: Span::new(0, 11) });
        assert_eq!(show.span(), Span::new(0, 11));
    }
}
