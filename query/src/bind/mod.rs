//! The bind stage: the AST checked against the world's catalog, typed, and turned into a
//! [`LogicalPlan`].
//!
//! - Component, field and function names are resolved; unknown names are errors at their
//!   span with the closest known name as a suggestion.
//! - Every expression gets a [`ValueType`]; type errors are found here, before anything runs.
//! - The implicit-required rule: a component named anywhere in the statement (items, WHERE,
//!   GROUP BY, ORDER BY, values) that the FROM list does not mention under `?`, `!` or `|` is
//!   required, as if listed. `has(C)` names C without requiring it.
//! - Aggregation: with GROUP BY or any aggregate, every item and ORDER BY key is rewritten
//!   over the group (GROUP BY values and aggregate results); a column that is neither grouped
//!   nor aggregated is an error.
//! - Parameters get numbers (`$1` and `$name` alike); their types are checked when they are
//!   bound, at run time.

mod alter;
mod expr;
mod statements;

use std::sync::Arc;

use ecsdb_engine::{ComponentDef, ComponentId, Entity, Value, World};

use crate::error::{Error, ErrorKind, Span, suggest};
use crate::expr::{AggregateExpr, ComponentSlot, Expr, ExprKind, ParamKey, ParamSpec, PathHop, Slot};
use crate::functions::{Function, FunctionRegistry, IndexCall};
use crate::parse::ast;
use crate::plan::logical::{
    ComponentValue, EntityRef, Item, LogicalPlan, ScheduleOp, SelectPlan, ShowKind, SortKey, Source, Term,
};
use crate::types::Builtin;
use crate::types::{AggFunc, BinaryOp, HierarchyFunc};

/// A bound statement: its logical plan and its parameters.
#[derive(Clone, Debug)]
pub struct Bound {
    /// The logical plan.
    pub plan: LogicalPlan,
    /// The parameters, numbered as the plan refers to them.
    pub params: Vec<ParamSpec>,
}

/// Binds one parsed statement against the world's catalog and the registered functions.
pub fn bind_statement(stmt: &ast::Statement, world: &World, functions: &FunctionRegistry) -> Result<Bound, Error> {
    let mut b = Binder::new(world, functions);
    let plan = b.statement(stmt)?;
    Ok(Bound { plan, params: b.params })
}

/// The value of a constant expression: one that reads no component, row or parameter (a
/// literal, a vector, `-3`, `2 * 3`, a built-in function of constants). Text that tools turn
/// into a value (`--param` values, settings) goes through here, so it means what it would in
/// a statement.
pub fn constant_value(e: &ast::Expr) -> Result<Value, Error> {
    let world = World::new();
    let functions = FunctionRegistry::default();
    let mut b = Binder::new(&world, &functions);
    let bound = b.expr(e, Place::Constant).map_err(|err| match err.kind {
        ErrorKind::UnknownComponent | ErrorKind::UnknownField => {
            Error::new(ErrorKind::Type, "a value must be a constant: it cannot name a component").with_span(e.span)
        }
        _ => err,
    })?;
    if bound.has_params() {
        return Err(type_err("a value must be a constant: it cannot use a parameter", e.span));
    }
    crate::expr::eval_constant(&bound, &[])
}

/// The value `text` writes in the language, as a statement would read it there: `12`, `.5`,
/// `-3`, `'red'`, `12v0`, `[1, 2, 3]`, `true`, `null`, or any constant expression.
///
/// ```
/// use ecsdb_query::parse_value;
/// use ecsdb_engine::{Entity, Value};
/// assert_eq!(parse_value(".5").unwrap(), Value::Float(0.5));
/// assert_eq!(parse_value("12v0").unwrap(), Value::Entity(Entity::from_parts(12, 0)));
/// assert_eq!(parse_value("'red'").unwrap(), Value::Str("red".into()));
/// assert_eq!(parse_value("2 * -3").unwrap(), Value::Int(-6));
/// assert!(parse_value("Health.hp").is_err());
/// assert!(parse_value("12V0").is_err()); // not a value: a name
/// ```
pub fn parse_value(text: &str) -> Result<Value, Error> {
    constant_value(&crate::parse::parse_expression(text)?)
}

/// Index kinds the language names: the index layer's.
fn index_kinds() -> Vec<&'static str> {
    ecsdb_engine::index::IndexKind::ALL.iter().map(|k| k.name()).collect()
}

/// A mutation's target: its FROM terms, its WHERE condition, or its entity.
type TargetParts = (Vec<Term>, Option<Expr>, Option<EntityRef>);

/// Where an expression is bound: what it may contain.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A SELECT item or ORDER BY key: aggregates allowed.
    Projection,
    /// WHERE, GROUP BY, UPDATE/ADD values: row values, no aggregates.
    Row,
    /// Inside an aggregate's argument.
    InAggregate,
    /// No row at all (SPAWN values, LIMIT, OFFSET).
    Constant,
}

struct Binder<'a> {
    world: &'a World,
    functions: &'a FunctionRegistry,
    slots: Vec<ComponentSlot>,
    /// Slots named in expressions (not through `has`), in order of first mention.
    mentioned: Vec<Slot>,
    params: Vec<ParamSpec>,
    aggregates: Vec<AggregateExpr>,
}

fn err(kind: ErrorKind, message: impl Into<String>, span: Span) -> Error {
    Error::new(kind, message).with_span(span)
}

fn type_err(message: impl Into<String>, span: Span) -> Error {
    err(ErrorKind::Type, message, span)
}

impl<'a> Binder<'a> {
    fn new(world: &'a World, functions: &'a FunctionRegistry) -> Self {
        Binder {
            world,
            functions,
            slots: Vec::new(),
            mentioned: Vec::new(),
            params: Vec::new(),
            aggregates: Vec::new(),
        }
    }

    // ----- names -----------------------------------------------------------------------------

    fn component_id(&self, name: &ast::Ident) -> Result<ComponentId, Error> {
        self.world.components().id_by_name(&name.name).ok_or_else(|| {
            let mut e = err(ErrorKind::UnknownComponent, format!("unknown component '{}'", name.name), name.span);
            if let Some(s) = suggest(&name.name, self.world.components().names()) {
                e = e.with_suggestion(s);
            }
            e
        })
    }

    fn slot(&mut self, name: &ast::Ident) -> Result<Slot, Error> {
        let id = self.component_id(name)?;
        if let Some(s) = self.slots.iter().position(|s| s.id == id) {
            return Ok(s);
        }
        let info = self.world.components().info(id);
        let vector_len = info.is_vector_like().then_some(info.fields().len());
        self.slots.push(ComponentSlot { id, name: info.name().to_string(), vector_len });
        Ok(self.slots.len() - 1)
    }

    fn mention(&mut self, slot: Slot) {
        if !self.mentioned.contains(&slot) {
            self.mentioned.push(slot);
        }
    }

    fn field_index(&self, slot: Slot, field: &ast::Ident) -> Result<usize, Error> {
        let info = self.world.components().info(self.slots[slot].id);
        if info.is_opaque() {
            return Err(err(
                ErrorKind::Unsupported,
                format!("component '{}' is opaque: its fields are not readable by name", info.name()),
                field.span,
            ));
        }
        info.field_index(&field.name).ok_or_else(|| {
            let mut e = err(
                ErrorKind::UnknownField,
                format!("component '{}' has no field '{}'", info.name(), field.name),
                field.span,
            );
            if let Some(s) = suggest(&field.name, info.fields().iter().map(|f| f.name.as_str())) {
                e = e.with_suggestion(s);
            }
            e
        })
    }

    fn param(&mut self, p: &ast::Param, span: Span) -> Result<usize, Error> {
        let key = match p {
            ast::Param::Positional(0) => {
                return Err(err(ErrorKind::Parameter, "parameters are numbered from $1", span));
            }
            ast::Param::Positional(n) => ParamKey::Position(*n as usize),
            ast::Param::Named(name) => ParamKey::Name(name.clone()),
        };
        if let Some(i) = self.params.iter().position(|s| s.key == key) {
            return Ok(i);
        }
        self.params.push(ParamSpec { key, span });
        Ok(self.params.len() - 1)
    }

    // ----- terms -----------------------------------------------------------------------------

    /// The FROM terms, and the slots they mark `?`, `!` or `|` (not implicitly required).
    fn terms(&mut self, from: &[ast::Term]) -> Result<Vec<Term>, Error> {
        let mut out = Vec::with_capacity(from.len());
        for t in from {
            out.push(match &t.kind {
                ast::TermKind::Required(c) => Term::Required { slot: self.slot(c)?, implicit: false },
                ast::TermKind::Not(c) => Term::Not(self.slot(c)?),
                ast::TermKind::Optional(c) => Term::Optional(self.slot(c)?),
                ast::TermKind::AnyOf(cs) => {
                    Term::AnyOf(cs.iter().map(|c| self.slot(c)).collect::<Result<Vec<_>, _>>()?)
                }
            });
        }
        Ok(out)
    }

    /// Adds a required term for every mentioned slot the terms do not mention.
    fn implicit_terms(&self, terms: &mut Vec<Term>) {
        for &slot in &self.mentioned {
            let listed = terms.iter().any(|t| match t {
                Term::Required { slot: s, .. } | Term::Not(s) | Term::Optional(s) => *s == slot,
                Term::AnyOf(ss) => ss.contains(&slot),
            });
            if !listed {
                terms.push(Term::Required { slot, implicit: true });
            }
        }
    }

    fn source(&mut self, terms: Vec<Term>, filter: Option<Expr>, target: Option<EntityRef>) -> Source {
        let mut terms = terms;
        self.implicit_terms(&mut terms);
        Source { slots: self.slots.clone(), terms, filter, target }
    }
}

fn binary_op(op: ast::BinaryOp) -> BinaryOp {
    match op {
        ast::BinaryOp::Eq => BinaryOp::Eq,
        ast::BinaryOp::NotEq => BinaryOp::Ne,
        ast::BinaryOp::Lt => BinaryOp::Lt,
        ast::BinaryOp::LtEq => BinaryOp::Le,
        ast::BinaryOp::Gt => BinaryOp::Gt,
        ast::BinaryOp::GtEq => BinaryOp::Ge,
        ast::BinaryOp::And => BinaryOp::And,
        ast::BinaryOp::Or => BinaryOp::Or,
        ast::BinaryOp::Add => BinaryOp::Add,
        ast::BinaryOp::Sub => BinaryOp::Sub,
        ast::BinaryOp::Mul => BinaryOp::Mul,
        ast::BinaryOp::Div => BinaryOp::Div,
        ast::BinaryOp::Mod => BinaryOp::Mod,
        ast::BinaryOp::Concat => BinaryOp::Concat,
    }
}

/// Checks at bind time that a value of this type can be stored in a field of type `ty`
/// (values of unknown type are checked when converted).
fn check_storable(ty: ecsdb_engine::FieldType, value: &Expr, component: &str, field: &str) -> Result<(), Error> {
    if crate::types::rules::storable(ty, value.ty) {
        Ok(())
    } else {
        Err(type_err(format!("cannot store {} in field '{component}.{field}' of type {ty}", value.ty), value.span))
    }
}

/// Rewrites an item or ORDER BY key of an aggregate query over the groups: GROUP BY
/// expressions become [`ExprKind::GroupKey`]s; reading a row outside an aggregate is an error.
fn over_groups(e: &Expr, group_by: &[Expr], name: &dyn Fn(&Expr) -> String) -> Result<Expr, Error> {
    if let Some(k) = group_by.iter().position(|g| g == e) {
        return Ok(Expr { kind: ExprKind::GroupKey(k), ty: e.ty, span: e.span });
    }
    match &e.kind {
        ExprKind::Aggregate(_) | ExprKind::Literal(_) | ExprKind::Param(_) => Ok(e.clone()),
        ExprKind::Entity
        | ExprKind::Field { .. }
        | ExprKind::Component(_)
        | ExprKind::ComponentVector(_)
        | ExprKind::Has(_)
        | ExprKind::Changed { .. }
        | ExprKind::IndexCall { .. } => {
            Err(type_err(format!("'{}' must appear in GROUP BY or be used in an aggregate function", name(e)), e.span))
        }
        _ => {
            let mut failure = None;
            let mapped = e.map_children(&mut |c| match over_groups(c, group_by, name) {
                Ok(x) => x,
                Err(err) => {
                    failure.get_or_insert(err);
                    c.clone()
                }
            });
            match failure {
                Some(err) => Err(err),
                None => Ok(mapped),
            }
        }
    }
}

/// The value of a constant number, for statements that take one (`TICK 3`, `SET fixed_hz = 60`).
fn constant_number(e: &ast::Expr) -> Option<f64> {
    constant_value(e).ok()?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_statement;
    use ecsdb_engine::{ComponentDef, FieldType, ValueType};

    fn world() -> World {
        let mut w = World::new();
        w.define_component(&ComponentDef::new("Position", &[("x", FieldType::F32), ("y", FieldType::F32)])).unwrap();
        w.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F32)])).unwrap();
        w.define_component(&ComponentDef::new("Name", &[("value", FieldType::String)])).unwrap();
        w.define_component(&ComponentDef::new("Frozen", &[])).unwrap();
        w
    }

    fn select(w: &World, text: &str) -> SelectPlan {
        let stmt = parse_statement(text).unwrap();
        match bind_statement(&stmt, w, &FunctionRegistry::default()).unwrap().plan {
            LogicalPlan::Select(s) => (*s).clone(),
            other => panic!("not a select: {other:?}"),
        }
    }

    fn terms(plan: &SelectPlan) -> Vec<String> {
        plan.source
            .terms
            .iter()
            .map(|t| match t {
                Term::Required { slot, implicit } => {
                    format!("{}{}", if *implicit { "+" } else { "" }, plan.source.slots[*slot].name)
                }
                Term::Not(s) => format!("!{}", plan.source.slots[*s].name),
                Term::Optional(s) => format!("?{}", plan.source.slots[*s].name),
                Term::AnyOf(ss) => ss.iter().map(|s| plan.source.slots[*s].name.clone()).collect::<Vec<_>>().join("|"),
            })
            .collect()
    }

    #[test]
    fn implicit_required_rule() {
        let w = world();
        let p = select(&w, "SELECT Name.value WHERE Health.hp < 5 AND has(Frozen)");
        assert_eq!(terms(&p), ["+Health", "+Name"]);
        let p = select(&w, "SELECT Name.value FROM ?Name, !Frozen WHERE Position.x > 0");
        assert_eq!(terms(&p), ["?Name", "!Frozen", "+Position"]);
        let p = select(&w, "SELECT Health.hp FROM Position | Health");
        assert_eq!(terms(&p), ["Position|Health"]);
        let p = select(&w, "SELECT count(*) ORDER BY count(*)");
        assert!(p.source.terms.is_empty());
    }

    #[test]
    fn types_and_vectors() {
        let w = world();
        let p = select(&w, "SELECT Position + [1, 2], Health.hp / 2, 7 / 2, distance(Position, [0, 0])");
        let tys: Vec<ValueType> = p.items.iter().map(|i| i.expr.ty).collect();
        assert_eq!(tys, [ValueType::Vec2, ValueType::Float, ValueType::Int, ValueType::Float]);
        assert!(
            matches!(p.items[0].expr.kind, ExprKind::Binary { ref left, .. } if matches!(left.kind, ExprKind::ComponentVector(_)))
        );
        let p = select(&w, "SELECT Position");
        assert!(matches!(p.items[0].expr.kind, ExprKind::Component(_)));
    }

    #[test]
    fn aggregates_are_rewritten_over_groups() {
        let w = world();
        let p = select(&w, "SELECT Name.value, count(*), max(Health.hp) + 1 GROUP BY Name.value ORDER BY count(*)");
        assert!(p.aggregated);
        assert_eq!(p.aggregates.len(), 2, "count(*) is shared by the item and the key");
        assert!(matches!(p.items[0].expr.kind, ExprKind::GroupKey(0)));
        assert!(matches!(p.items[1].expr.kind, ExprKind::Aggregate(0)));
        assert!(matches!(p.order_by[0].expr.kind, ExprKind::Aggregate(0)));
    }

    #[test]
    fn parameters_are_numbered_once() {
        let w = world();
        let stmt = parse_statement("SELECT $2, $name, $2 WHERE Health.hp < $1").unwrap();
        let b = bind_statement(&stmt, &w, &FunctionRegistry::default()).unwrap();
        let keys: Vec<String> = b.params.iter().map(|p| p.key.to_string()).collect();
        assert_eq!(keys, ["$1", "$2", "$name"]);
    }

    #[test]
    fn mutations_imply_their_component() {
        let w = world();
        let stmt = parse_statement("UPDATE Health SET hp = 1 FROM ?Health").unwrap();
        let LogicalPlan::Update { source, .. } = bind_statement(&stmt, &w, &FunctionRegistry::default()).unwrap().plan
        else {
            panic!()
        };
        assert!(matches!(source.terms[0], Term::Required { implicit: false, .. }));
        let stmt = parse_statement("REMOVE Health, Frozen WHERE Position.x > 1").unwrap();
        let LogicalPlan::Remove(comps, source) = bind_statement(&stmt, &w, &FunctionRegistry::default()).unwrap().plan
        else {
            panic!()
        };
        assert_eq!(comps.len(), 2);
        assert!(source.terms.iter().any(|t| matches!(t, Term::AnyOf(ss) if ss.len() == 2)));
    }
}
