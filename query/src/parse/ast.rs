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

mod expr;

use std::fmt;

use ecsdb_engine::{FieldType, StorageKind};

pub use crate::error::Span;
pub(crate) use expr::prec;
pub use expr::{BinaryOp, Expr, ExprKind, Literal, Param, PathStep, UnaryOp};

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
    /// `ALTER COMPONENT C <change>`.
    AlterComponent(AlterComponent),
    /// `RENAME COMPONENT C TO D`.
    RenameComponent(RenameComponent),
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
            Statement::AlterComponent(s) => s.span,
            Statement::RenameComponent(s) => s.span,
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

impl Select {
    /// A SELECT of `items` from `from`, with no other clause.
    pub fn new(items: Vec<SelectItem>, from: Vec<Term>, span: Span) -> Select {
        Select {
            items,
            from,
            where_: None,
            group_by: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            bare: false,
            span,
        }
    }
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
    /// `STORAGE SPARSE | TABLE` (table when not written).
    pub storage: StorageKind,
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
    /// `DEFAULT expr`: a constant the binder evaluates and converts to the field's type.
    pub default: Option<Expr>,
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

/// `ALTER COMPONENT C <change>`.
#[derive(Clone, Debug, PartialEq)]
pub struct AlterComponent {
    /// The component.
    pub component: Ident,
    /// What changes.
    pub change: FieldChange,
    /// The whole statement.
    pub span: Span,
}

/// The change of an `ALTER COMPONENT`.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldChange {
    /// `ADD FIELD f type [DEFAULT expr] [REFERENCES …]`.
    Add(FieldDecl),
    /// `DROP FIELD f`.
    Drop(Ident),
    /// `RENAME FIELD a TO b`.
    Rename {
        /// The field.
        from: Ident,
        /// Its new name.
        to: Ident,
    },
    /// `ALTER FIELD f TYPE t [USING expr]`.
    Retype {
        /// The field.
        field: Ident,
        /// The new type.
        ty: FieldType,
        /// Where the type is written.
        ty_span: Span,
        /// Each row's new value; without it, the old value (a type that holds every value
        /// of the old one).
        using: Option<Expr>,
    },
    /// `ALTER FIELD f SET DEFAULT expr` (`Some`) or `ALTER FIELD f DROP DEFAULT` (`None`).
    SetDefault {
        /// The field.
        field: Ident,
        /// The new default.
        default: Option<Expr>,
    },
    /// `SET STORAGE SPARSE | TABLE`.
    SetStorage(StorageKind),
}

/// `RENAME COMPONENT C TO D`.
#[derive(Clone, Debug, PartialEq)]
pub struct RenameComponent {
    /// The component.
    pub from: Ident,
    /// Its new name.
    pub to: Ident,
    /// The whole statement.
    pub span: Span,
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

#[cfg(test)]
mod tests;
