//! The logical plan: *what* a statement computes, with every name resolved.
//!
//! The binder turns the AST into these types: component names become [`ComponentId`]s held in
//! a slot table ([`Source::slots`]), field names become field positions, every expression
//! carries its inferred [`ValueType`] and its source [`Span`]. Nothing here knows about
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

use std::sync::Arc;

use ecsdb_engine::{ComponentDef, ComponentId, Entity};

use crate::error::Span;
use crate::expr::{AggregateExpr, ComponentSlot, Expr, ExprKind, Slot};

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
        /// (field position, new value).
        assignments: Vec<(usize, Expr)>,
        /// The targets.
        source: Source,
    },
    /// CREATE COMPONENT, with the references its fields declare.
    /// The definition, its references, and its fields' defaults (constants that fit them).
    CreateComponent(ComponentDef, Vec<ecsdb_engine::ReferenceDef>, Vec<(String, ecsdb_engine::Value)>),
    /// ALTER COMPONENT and RENAME COMPONENT: run by the database, which checks its stored
    /// systems against the changed catalog.
    AlterComponent(AlterPlan),
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

/// A bound `ALTER COMPONENT` or `RENAME COMPONENT`.
#[derive(Clone, Debug)]
pub struct AlterPlan {
    /// The component.
    pub component: ComponentId,
    /// What changes.
    pub change: AlterChange,
    /// The statement (errors found when it runs point here).
    pub span: Span,
}

/// The change of an [`AlterPlan`].
#[derive(Clone, Debug)]
pub enum AlterChange {
    /// A change of fields or name the engine makes; for an added field declared a
    /// reference, its declaration.
    Engine(ecsdb_engine::ComponentChange, Option<ecsdb_engine::ReferenceDef>),
    /// `ALTER FIELD … TYPE`: `values` gives each entity with the component (first item) its
    /// field's new value (second item), computed before the change and converted after.
    Retype {
        /// The field.
        field: String,
        /// Its new type.
        ty: ecsdb_engine::FieldType,
        /// The new values.
        values: Arc<SelectPlan>,
        /// Where they are written (`USING expr`, else the field name).
        value_span: Span,
    },
    /// A field's default set (`Some`) or taken away (`None`).
    Default {
        /// The field.
        field: String,
        /// The default, a constant that fits the field.
        value: Option<ecsdb_engine::Value>,
    },
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
            | LogicalPlan::AlterComponent(..)
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

impl SelectPlan {}

/// The terms as the language writes them (`Position, !Frozen, ?Velocity, A | B`).
pub fn render_terms(source: &Source) -> String {
    let name = |s: &Slot| source.slots.get(*s).map_or("?", |c| c.name.as_str()).to_string();
    let parts: Vec<String> = source
        .terms
        .iter()
        .map(|t| match t {
            Term::Required { slot, .. } => name(slot),
            Term::Not(s) => format!("!{}", name(s)),
            Term::Optional(s) => format!("?{}", name(s)),
            Term::AnyOf(ss) => ss.iter().map(name).collect::<Vec<_>>().join(" | "),
        })
        .collect();
    if parts.is_empty() { "all entities".to_string() } else { parts.join(", ") }
}
