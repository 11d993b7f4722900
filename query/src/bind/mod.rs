//! The bind stage: the AST checked against the world's catalog, typed, and turned into a
//! [`LogicalPlan`].
//!
//! - Component, field and function names are resolved; unknown names are errors at their
//!   span with the closest known name as a suggestion.
//! - Every expression gets a [`DataType`]; type errors are found here, before anything runs.
//! - The implicit-required rule: a component named anywhere in the statement (items, WHERE,
//!   GROUP BY, ORDER BY, values) that the FROM list does not mention under `?`, `!` or `|` is
//!   required, as if listed. `has(C)` names C without requiring it.
//! - Aggregation: with GROUP BY or any aggregate, every item and ORDER BY key is rewritten
//!   over the group (GROUP BY values and aggregate results); a column that is neither grouped
//!   nor aggregated is an error.
//! - Parameters get numbers (`$1` and `$name` alike); their types are checked when they are
//!   bound, at run time.

pub mod types;

use std::sync::Arc;

use ecsdb_engine::{ComponentDef, ComponentId, Entity, Value, World};

use crate::error::{suggest, Error, ErrorKind, Span};
use crate::functions::{Builtin, Function, FunctionRegistry, IndexCall};
use crate::parse::ast;
use crate::plan::logical::{
    AggFunc, AggregateExpr, BinaryOp, ComponentSlot, ComponentValue, DataType, EntityRef, Expr, ExprKind,
    HierarchyFunc, Item, LogicalPlan, ParamKey, ParamSpec, PathHop, ScheduleOp, SelectPlan, ShowKind, Slot, SortKey,
    Source, Term,
};

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

    // ----- expressions -----------------------------------------------------------------------

    fn expr(&mut self, e: &ast::Expr, place: Place) -> Result<Expr, Error> {
        let span = e.span;
        let mk = |kind: ExprKind, ty: DataType| Expr { kind, ty, span };
        Ok(match &e.kind {
            ast::ExprKind::Literal(lit) => Expr::literal(
                match lit {
                    ast::Literal::Int(i) => Value::Int(*i),
                    ast::Literal::Float(f) => Value::Float(*f),
                    ast::Literal::Str(s) => Value::Str(s.clone()),
                    ast::Literal::Bool(b) => Value::Bool(*b),
                    ast::Literal::Null => Value::Null,
                },
                span,
            ),
            ast::ExprKind::EntityLit { index, generation } => {
                Expr::literal(Value::Entity(Entity::from_parts(*index, *generation)), span)
            }
            ast::ExprKind::Param(p) => {
                let n = self.param(p, span)?;
                mk(ExprKind::Param(n), DataType::Any)
            }
            ast::ExprKind::Vector(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let x = self.expr(item, place)?;
                    if !(x.ty.is_numeric() || matches!(x.ty, DataType::Null | DataType::Any)) {
                        return Err(type_err(format!("vector elements must be numbers, found {}", x.ty), x.span));
                    }
                    out.push(x);
                }
                let ty = match out.len() {
                    2 => DataType::Vec2,
                    3 => DataType::Vec3,
                    n => return Err(type_err(format!("a vector has 2 or 3 elements, not {n}"), span)),
                };
                mk(ExprKind::Vector(out), ty)
            }
            ast::ExprKind::Field { component, field } => {
                self.no_row_in_constant(place, span)?;
                let slot = self.slot(component)?;
                let index = self.field_index(slot, field)?;
                self.mention(slot);
                let info = self.world.components().info(self.slots[slot].id);
                let ty = types::field_type(info.fields()[index].ty);
                mk(ExprKind::Field { slot, field: index }, ty)
            }
            ast::ExprKind::Path { base, steps } => {
                self.no_row_in_constant(place, span)?;
                let base = self.expr(base, place)?;
                self.path(base, steps, span)?
            }
            ast::ExprKind::Component(name) => {
                self.no_row_in_constant(place, span)?;
                let slot = self.slot(name)?;
                self.mention(slot);
                mk(ExprKind::Component(slot), DataType::Object)
            }
            ast::ExprKind::EntityId => {
                self.no_row_in_constant(place, span)?;
                mk(ExprKind::Entity, DataType::Entity)
            }
            ast::ExprKind::Unary { op: ast::UnaryOp::Neg, expr } => {
                let x = self.vector_operand(expr, place)?;
                let ty = types::negate(x.ty).map_err(|m| type_err(m, span))?;
                mk(ExprKind::Neg(Box::new(x)), ty)
            }
            ast::ExprKind::Not(expr) => {
                let x = self.expr(expr, place)?;
                if !types::is_condition(x.ty) {
                    return Err(type_err(format!("NOT needs a condition (bool), found {}", x.ty), x.span));
                }
                mk(ExprKind::Not(Box::new(x)), DataType::Bool)
            }
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let op = binary_op(*op);
                let (l, r) = match op {
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Concat => (self.expr(lhs, place)?, self.expr(rhs, place)?),
                    _ => (self.vector_operand(lhs, place)?, self.vector_operand(rhs, place)?),
                };
                let ty = types::binary(op, l.ty, r.ty).map_err(|m| type_err(m, span))?;
                mk(ExprKind::Binary { op, left: Box::new(l), right: Box::new(r) }, ty)
            }
            ast::ExprKind::Between { expr, low, high, negated } => {
                let x = self.vector_operand(expr, place)?;
                let lo = self.vector_operand(low, place)?;
                let hi = self.vector_operand(high, place)?;
                for bound in [&lo, &hi] {
                    types::binary(BinaryOp::Le, x.ty, bound.ty).map_err(|m| type_err(m, span))?;
                }
                mk(
                    ExprKind::Between { expr: Box::new(x), low: Box::new(lo), high: Box::new(hi), negated: *negated },
                    DataType::Bool,
                )
            }
            ast::ExprKind::InList { expr, list, negated } => {
                let x = self.vector_operand(expr, place)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let v = self.vector_operand(item, place)?;
                    types::binary(BinaryOp::Eq, x.ty, v.ty).map_err(|m| type_err(m, v.span))?;
                    items.push(v);
                }
                mk(ExprKind::InList { expr: Box::new(x), list: items, negated: *negated }, DataType::Bool)
            }
            ast::ExprKind::Like { expr, pattern, negated } => {
                let x = self.expr(expr, place)?;
                let p = self.expr(pattern, place)?;
                for v in [&x, &p] {
                    if !matches!(v.ty, DataType::Str | DataType::Null | DataType::Any) {
                        return Err(type_err(format!("LIKE needs strings, found {}", v.ty), v.span));
                    }
                }
                mk(ExprKind::Like { expr: Box::new(x), pattern: Box::new(p), negated: *negated }, DataType::Bool)
            }
            ast::ExprKind::IsNull { expr, negated } => {
                let x = self.expr(expr, place)?;
                mk(ExprKind::IsNull { expr: Box::new(x), negated: *negated }, DataType::Bool)
            }
            ast::ExprKind::CountStar => self.aggregate(AggFunc::Count, None, place, span)?,
            ast::ExprKind::Call { name, args } => self.call(name, args, place, span)?,
        })
    }

    fn no_row_in_constant(&self, place: Place, span: Span) -> Result<(), Error> {
        if place == Place::Constant {
            return Err(type_err("a constant is needed here: components and the entity cannot be read", span));
        }
        Ok(())
    }

    /// An operand of an operator or function that takes vectors: a vector-like component
    /// reads as a vector.
    fn vector_operand(&mut self, e: &ast::Expr, place: Place) -> Result<Expr, Error> {
        let x = self.expr(e, place)?;
        self.as_vector(x)
    }

    fn as_vector(&self, x: Expr) -> Result<Expr, Error> {
        if let ExprKind::Component(slot) = x.kind {
            let s = &self.slots[slot];
            return match s.vector_len {
                Some(2) => Ok(Expr { kind: ExprKind::ComponentVector(slot), ty: DataType::Vec2, span: x.span }),
                Some(3) => Ok(Expr { kind: ExprKind::ComponentVector(slot), ty: DataType::Vec3, span: x.span }),
                _ => Err(type_err(
                    format!(
                        "component '{}' is not a vector: only components with 2 or 3 numeric fields read as vectors \
                         (use a field, like {}.<field>)",
                        s.name, s.name
                    ),
                    x.span,
                )),
            };
        }
        Ok(x)
    }

    /// A value to store in a field of type `ty`: a vector-like component stored in a vector
    /// field reads as a vector.
    fn value_for(&mut self, e: &ast::Expr, place: Place, ty: ecsdb_engine::FieldType) -> Result<Expr, Error> {
        let x = self.expr(e, place)?;
        if matches!(ty, ecsdb_engine::FieldType::Vec2 | ecsdb_engine::FieldType::Vec3) && x.ty == DataType::Object {
            return self.as_vector(x);
        }
        Ok(x)
    }

    fn aggregate(&mut self, func: AggFunc, arg: Option<&ast::Expr>, place: Place, span: Span) -> Result<Expr, Error> {
        match place {
            Place::Projection => {}
            Place::InAggregate => {
                return Err(type_err(format!("{}() cannot be nested inside another aggregate", func.name()), span))
            }
            Place::Row | Place::Constant => {
                return Err(type_err(
                    format!("aggregate {}() is not allowed here (only in SELECT items and ORDER BY)", func.name()),
                    span,
                ))
            }
        }
        let arg = match arg {
            Some(a) => Some(self.expr(a, Place::InAggregate)?),
            None => None,
        };
        let ty = types::aggregate(func, arg.as_ref().map(|a| a.ty)).map_err(|m| type_err(m, span))?;
        let agg = AggregateExpr { func, arg, ty };
        let n = match self.aggregates.iter().position(|a| *a == agg) {
            Some(n) => n,
            None => {
                self.aggregates.push(agg);
                self.aggregates.len() - 1
            }
        };
        Ok(Expr { kind: ExprKind::Aggregate(n), ty, span })
    }

    /// Binds the steps of a path after its first field `base`.
    fn path(&mut self, base: Expr, steps: &[ast::PathStep], span: Span) -> Result<Expr, Error> {
        let mut ty = base.ty;
        let mut hops = Vec::with_capacity(steps.len());
        let mut at = base.span;
        for (i, s) in steps.iter().enumerate() {
            if ty != DataType::Entity {
                return Err(type_err(format!("a path steps through entity fields; this is {ty}"), at));
            }
            let id = self.component_id(&s.component)?;
            let info = self.world.components().info(id);
            let mut text = format!(".{}", info.name());
            let field = match &s.field {
                Some(g) => {
                    let j = self.field_of(id, g)?;
                    text.push('.');
                    text.push_str(&g.name);
                    ty = types::field_type(info.fields()[j].ty);
                    at = g.span;
                    Some(j)
                }
                None if i + 1 == steps.len() => {
                    ty = DataType::Object;
                    None
                }
                None => {
                    return Err(type_err(
                        format!("'{}' is a component: name one of its fields to step on", info.name()),
                        s.component.span,
                    ))
                }
            };
            hops.push(PathHop { component: id, field, text });
        }
        Ok(Expr { kind: ExprKind::Path { base: Box::new(base), steps: hops }, ty, span })
    }

    /// The position of field `name` of component `id`.
    fn field_of(&self, id: ComponentId, name: &ast::Ident) -> Result<usize, Error> {
        let info = self.world.components().info(id);
        info.field_index(&name.name).ok_or_else(|| {
            let mut e = err(
                ErrorKind::UnknownField,
                format!("component '{}' has no field '{}'", info.name(), name.name),
                name.span,
            );
            if let Some(s) = suggest(&name.name, info.fields().iter().map(|f| f.name.as_str())) {
                e = e.with_suggestion(s);
            }
            e
        })
    }

    /// `depth(C.f)`, `root(C.f)`, `descendant_of(C.f, e [, max])`: C is not required.
    fn hierarchy(&mut self, func: HierarchyFunc, args: &[ast::Expr], place: Place, span: Span) -> Result<Expr, Error> {
        let arity_ok = match func {
            HierarchyFunc::DescendantOf => (2..=3).contains(&args.len()),
            _ => args.len() == 1,
        };
        let usage = match func {
            HierarchyFunc::DescendantOf => "descendant_of(C.f, entity [, max_depth])",
            HierarchyFunc::Depth => "depth(C.f)",
            HierarchyFunc::Root => "root(C.f)",
        };
        let Some(ast::ExprKind::Field { component, field }) = args.first().map(|a| &a.kind).filter(|_| arity_ok) else {
            return Err(type_err(format!("{}() is used as {usage}, with C.f an entity field", func.name()), span));
        };
        self.no_row_in_constant(place, span)?;
        let slot = self.slot(component)?;
        let id = self.slots[slot].id;
        let index = self.field_of(id, field)?;
        let info = self.world.components().info(id);
        if info.fields()[index].ty != ecsdb_engine::FieldType::Entity {
            return Err(type_err(
                format!(
                    "{}() follows an entity field; '{}.{}' is {}",
                    func.name(),
                    info.name(),
                    field.name,
                    info.fields()[index].ty
                ),
                args[0].span,
            ));
        }
        let text = format!("{}.{}", info.name(), field.name);
        let mut rest = Vec::new();
        for (k, a) in args[1..].iter().enumerate() {
            let x = self.expr(a, place)?;
            let ok = match k {
                0 => matches!(x.ty, DataType::Entity | DataType::Null | DataType::Any),
                _ => matches!(x.ty, DataType::Int | DataType::Null | DataType::Any),
            };
            if !ok {
                let want = if k == 0 { "an entity" } else { "an int (the maximum depth)" };
                return Err(type_err(format!("descendant_of() takes {want} here, found {}", x.ty), x.span));
            }
            rest.push(x);
        }
        let ty = match func {
            HierarchyFunc::Depth => DataType::Int,
            HierarchyFunc::Root => DataType::Entity,
            HierarchyFunc::DescendantOf => DataType::Bool,
        };
        Ok(Expr { kind: ExprKind::Hierarchy { func, slot, component: id, field: index, text, args: rest }, ty, span })
    }

    fn call(&mut self, name: &ast::Ident, args: &[ast::Expr], place: Place, span: Span) -> Result<Expr, Error> {
        let lower = name.name.to_ascii_lowercase();
        if let Some(func) = HierarchyFunc::from_name(&lower) {
            return self.hierarchy(func, args, place, span);
        }
        if matches!(lower.as_str(), "has" | "changed" | "added") {
            let [arg] = args else {
                return Err(type_err(
                    format!("{lower}() takes one component name, got {} arguments", args.len()),
                    span,
                ));
            };
            let ast::ExprKind::Component(c) = &arg.kind else {
                return Err(type_err(format!("{lower}() takes a component name, like {lower}(Frozen)"), arg.span));
            };
            self.no_row_in_constant(place, span)?;
            let slot = self.slot(c)?;
            let kind = match lower.as_str() {
                "has" => ExprKind::Has(slot),
                other => ExprKind::Changed { slot, added: other == "added" },
            };
            return Ok(Expr { kind, ty: DataType::Bool, span });
        }
        if let Some(func) = AggFunc::from_name(&lower) {
            let scalar_minmax = matches!(func, AggFunc::Min | AggFunc::Max) && args.len() >= 2;
            if !scalar_minmax {
                return match args {
                    [arg] => self.aggregate(func, Some(arg), place, span),
                    _ => Err(type_err(format!("{}() takes one argument, got {}", func.name(), args.len()), span)),
                };
            }
        }
        if let Some(b) = Builtin::from_name(&lower) {
            let mut bound = Vec::with_capacity(args.len());
            for a in args {
                let x = self.expr(a, place)?;
                bound.push(if b.takes_vectors() { self.as_vector(x)? } else { x });
            }
            if let Some(obj) = bound.iter().find(|x| x.ty == DataType::Object) {
                return Err(type_err(format!("{}() cannot take a whole component", b.name()), obj.span));
            }
            let tys: Vec<DataType> = bound.iter().map(|x| x.ty).collect();
            let ty = b.result_type(&tys).map_err(|m| type_err(m, span))?;
            return Ok(Expr { kind: ExprKind::Call { func: Function::Builtin(b), args: bound }, ty, span });
        }
        if let Some((fname, f)) = self.functions.get(&lower) {
            let mut bound = Vec::with_capacity(args.len());
            for a in args {
                bound.push(self.expr(a, place)?);
            }
            return Ok(Expr {
                kind: ExprKind::Call { func: Function::Registered(fname, f), args: bound },
                ty: DataType::Any,
                span,
            });
        }
        if let Some(func) = self.index_function(&name.name) {
            return self.index_call(func, args, place, span);
        }
        let index_names: Vec<String> = self
            .world
            .indexes()
            .into_iter()
            .filter(|ix| ix.kind == ecsdb_engine::index::IndexKind::Function)
            .map(|ix| ix.name)
            .collect();
        let known: Vec<&str> = Builtin::ALL
            .iter()
            .map(|b| b.name())
            .chain(["count", "sum", "avg", "has", "depth", "root", "descendant_of"])
            .chain(self.functions.names())
            .chain(index_names.iter().map(String::as_str))
            .collect();
        let mut e = err(ErrorKind::UnknownFunction, format!("unknown function '{}'", name.name), name.span);
        if let Some(s) = suggest(&name.name, known) {
            e = e.with_suggestion(s);
        }
        Err(e)
    }

    /// The function index called `name`: its exact name, else the only one whose name
    /// matches ignoring case (function names are case-insensitive, index names are not).
    fn index_function(&self, name: &str) -> Option<ecsdb_engine::index::IndexFunction> {
        if let Some(f) = self.world.index_function(name) {
            return Some(f);
        }
        let mut matches = self
            .world
            .indexes()
            .into_iter()
            .filter(|ix| ix.kind == ecsdb_engine::index::IndexKind::Function && ix.name.eq_ignore_ascii_case(name));
        match (matches.next(), matches.next()) {
            (Some(ix), None) => self.world.index_function(&ix.name),
            _ => None,
        }
    }

    /// `name(C)` where `name` is a function index over `C`.
    fn index_call(
        &mut self,
        func: ecsdb_engine::index::IndexFunction,
        args: &[ast::Expr],
        place: Place,
        span: Span,
    ) -> Result<Expr, Error> {
        let component = self.world.components().info(func.component()).name().to_string();
        let usage = || {
            format!("{}() is a function index over {component}: call it as {}({component})", func.name(), func.name())
        };
        let [arg] = args else {
            return Err(type_err(format!("{} (got {} arguments)", usage(), args.len()), span));
        };
        let ast::ExprKind::Component(c) = &arg.kind else { return Err(type_err(usage(), arg.span)) };
        self.no_row_in_constant(place, span)?;
        let slot = self.slot(c)?;
        if self.slots[slot].id != func.component() {
            return Err(type_err(usage(), arg.span));
        }
        self.mention(slot);
        Ok(Expr { kind: ExprKind::IndexCall { func: IndexCall(func), slot }, ty: DataType::Bool, span })
    }

    fn condition(&mut self, e: &ast::Expr, what: &str) -> Result<Expr, Error> {
        let x = self.expr(e, Place::Row)?;
        if !types::is_condition(x.ty) {
            return Err(type_err(format!("{what} needs a condition (bool), found {}", x.ty), x.span));
        }
        Ok(x)
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

    // ----- statements ------------------------------------------------------------------------

    fn statement(&mut self, stmt: &ast::Statement) -> Result<LogicalPlan, Error> {
        match stmt {
            ast::Statement::Select(s) => Ok(LogicalPlan::Select(Arc::new(self.select(s)?))),
            ast::Statement::Explain(x) => Ok(LogicalPlan::Explain(Arc::new(self.select(&x.select)?))),
            ast::Statement::Spawn(s) => {
                let values = self.component_values(&s.components, Place::Constant)?;
                Ok(LogicalPlan::Spawn(values))
            }
            ast::Statement::Despawn(d) => {
                let (terms, filter, target) = self.target(&d.target)?;
                Ok(LogicalPlan::Despawn(self.source(terms, filter, target)))
            }
            ast::Statement::Add(a) => {
                let values = self.component_values(&a.components, Place::Row)?;
                for v in &values {
                    if self.world.components().info(v.id).is_opaque() {
                        return Err(err(
                            ErrorKind::Unsupported,
                            format!("component '{}' is opaque: it cannot be built from text", v.name),
                            v.span,
                        ));
                    }
                }
                let (terms, filter, target) = self.target(&a.target)?;
                Ok(LogicalPlan::Add(values, self.source(terms, filter, target)))
            }
            ast::Statement::Remove(r) => {
                let mut comps: Vec<(ComponentId, String)> = Vec::new();
                let mut slots = Vec::new();
                for c in &r.components {
                    let slot = self.slot(c)?;
                    let id = self.slots[slot].id;
                    if !comps.iter().any(|(x, _)| *x == id) {
                        comps.push((id, self.slots[slot].name.clone()));
                        slots.push(slot);
                    }
                }
                let (mut terms, filter, target) = self.target(&r.target)?;
                // REMOVE C implies the term C (REMOVE A, B: at least one of them), whatever
                // FROM says: an entity without them has nothing to remove.
                terms.push(if slots.len() == 1 {
                    Term::Required { slot: slots[0], implicit: false }
                } else {
                    Term::AnyOf(slots)
                });
                Ok(LogicalPlan::Remove(comps, self.source(terms, filter, target)))
            }
            ast::Statement::Update(u) => self.update(u),
            ast::Statement::CreateComponent(c) => self.create_component(c),
            ast::Statement::CreateIndex(c) => self.create_index(c),
            ast::Statement::DropIndex(d) => Ok(LogicalPlan::DropIndex(d.name.name.clone(), d.name.span)),
            ast::Statement::Show(s) => Ok(LogicalPlan::Show(match s.what {
                ast::ShowWhat::Components => ShowKind::Components,
                ast::ShowWhat::Tables => ShowKind::Tables,
                ast::ShowWhat::Indexes => ShowKind::Indexes,
                ast::ShowWhat::Systems => ShowKind::Systems,
            })),
            ast::Statement::Describe(d) => Ok(LogicalPlan::Describe(self.component_id(&d.component)?)),
            ast::Statement::CreateSystem(c) => Ok(LogicalPlan::Schedule(ScheduleOp::CreateSystem(c.clone()))),
            ast::Statement::DropSystem(d) => Ok(LogicalPlan::Schedule(ScheduleOp::DropSystem {
                name: d.name.name.clone(),
                if_exists: d.if_exists,
                span: d.name.span,
            })),
            ast::Statement::ExplainSchedule(_) => Ok(LogicalPlan::Schedule(ScheduleOp::ExplainSchedule)),
            ast::Statement::Set(s) => self.set_setting(s),
            ast::Statement::Tick(t) => self.tick(t),
        }
    }

    fn set_setting(&mut self, s: &ast::SetSetting) -> Result<LogicalPlan, Error> {
        if !s.name.name.eq_ignore_ascii_case("fixed_hz") {
            return Err(err(
                ErrorKind::Constraint,
                format!("unknown setting '{}' (settings: fixed_hz)", s.name),
                s.name.span,
            ));
        }
        match constant_number(&s.value) {
            Some(hz) if hz.fract() == 0.0 && (1.0..=1_000_000.0).contains(&hz) => {
                Ok(LogicalPlan::Schedule(ScheduleOp::SetFixedHz(hz as u32)))
            }
            _ => Err(type_err("fixed_hz takes a whole number of ticks per second from 1 to 1000000", s.value.span)),
        }
    }

    fn tick(&mut self, t: &ast::Tick) -> Result<LogicalPlan, Error> {
        let count = match &t.count {
            None => 1,
            Some(e) => match constant_number(e) {
                Some(n) if n.fract() == 0.0 && n >= 0.0 && n <= u32::MAX as f64 => n as u64,
                _ => return Err(type_err("TICK takes a whole number of ticks (0 or more)", e.span)),
            },
        };
        let dt_ns = match &t.dt {
            // 1/60 s, rounded to the nanosecond.
            None => 16_666_667,
            Some(e) => match constant_number(e) {
                Some(s) if s < 0.0 => return Err(type_err("DT cannot be negative", e.span)),
                Some(s) if s <= 1e9 => (s * 1e9).round() as u64,
                _ => return Err(type_err("DT takes a number of seconds (0 to 1e9)", e.span)),
            },
        };
        Ok(LogicalPlan::Schedule(ScheduleOp::Tick { count, dt_ns }))
    }

    fn target(&mut self, t: &ast::Target) -> Result<TargetParts, Error> {
        match t {
            ast::Target::Entity(e) => {
                let r = match &e.kind {
                    ast::ExprKind::EntityLit { index, generation } => {
                        EntityRef::Literal(Entity::from_parts(*index, *generation), e.span)
                    }
                    ast::ExprKind::Param(p) => EntityRef::Param(self.param(p, e.span)?, e.span),
                    _ => return Err(type_err("expected an entity (like 12v0) or a parameter", e.span)),
                };
                Ok((Vec::new(), None, Some(r)))
            }
            ast::Target::Filter(f) => {
                let terms = self.terms(&f.from)?;
                let filter = match &f.where_ {
                    Some(w) => Some(self.condition(w, "WHERE")?),
                    None => None,
                };
                Ok((terms, filter, None))
            }
        }
    }

    fn component_values(&mut self, comps: &[ast::ComponentValue], place: Place) -> Result<Vec<ComponentValue>, Error> {
        let mut out: Vec<ComponentValue> = Vec::with_capacity(comps.len());
        for c in comps {
            let id = self.component_id(&c.component)?;
            if out.iter().any(|v| v.id == id) {
                return Err(err(
                    ErrorKind::Constraint,
                    format!("component '{}' given twice", c.component.name),
                    c.component.span,
                ));
            }
            let info = self.world.components().info(id);
            let name = info.name().to_string();
            let mut fields: Vec<(usize, Expr)> = Vec::with_capacity(c.fields.len());
            // Resolve field names against the component without making it a slot of the
            // statement (adding a component does not require it).
            for f in &c.fields {
                if info.is_opaque() {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("component '{name}' is opaque: its fields are not writable by name"),
                        f.field.span,
                    ));
                }
                let index = info.field_index(&f.field.name).ok_or_else(|| {
                    let mut e = err(
                        ErrorKind::UnknownField,
                        format!("component '{name}' has no field '{}'", f.field.name),
                        f.field.span,
                    );
                    if let Some(s) = suggest(&f.field.name, info.fields().iter().map(|x| x.name.as_str())) {
                        e = e.with_suggestion(s);
                    }
                    e
                })?;
                if fields.iter().any(|(i, _)| *i == index) {
                    return Err(err(
                        ErrorKind::Constraint,
                        format!("field '{name}.{}' given twice", f.field.name),
                        f.field.span,
                    ));
                }
                let value = self.value_for(&f.value, place, info.fields()[index].ty)?;
                check_storable(info.fields()[index].ty, &value, &name, &f.field.name)?;
                fields.push((index, value));
            }
            out.push(ComponentValue { id, name, fields, span: c.span });
        }
        Ok(out)
    }

    fn update(&mut self, u: &ast::Update) -> Result<LogicalPlan, Error> {
        let slot = self.slot(&u.component)?;
        let id = self.slots[slot].id;
        let name = self.slots[slot].name.clone();
        let mut assignments: Vec<(usize, Expr)> = Vec::new();
        for a in &u.assignments {
            let index = self.field_index(slot, &a.field)?;
            if assignments.iter().any(|(i, _)| *i == index) {
                return Err(err(
                    ErrorKind::Constraint,
                    format!("field '{name}.{}' assigned twice", a.field.name),
                    a.field.span,
                ));
            }
            let ty = self.world.components().info(id).fields()[index].ty;
            let value = self.value_for(&a.value, Place::Row, ty)?;
            check_storable(ty, &value, &name, &a.field.name)?;
            assignments.push((index, value));
        }
        let (mut terms, filter, target) = self.target(&u.target)?;
        // UPDATE C implies the term C, whatever FROM says (`?C`, `A | C`): only an entity that
        // has C can have its fields set.
        terms.insert(0, Term::Required { slot, implicit: false });
        let source = self.source(terms, filter, target);
        Ok(LogicalPlan::Update { component: id, name, assignments, source })
    }

    fn create_component(&mut self, c: &ast::CreateComponent) -> Result<LogicalPlan, Error> {
        if self.world.components().id_by_name(&c.name.name).is_some() {
            return Err(err(ErrorKind::Constraint, format!("component '{}' already exists", c.name.name), c.name.span));
        }
        let mut fields: Vec<(String, ecsdb_engine::FieldType)> = Vec::new();
        let mut references = Vec::new();
        for f in &c.fields {
            if fields.iter().any(|(n, _)| *n == f.name.name) {
                return Err(err(ErrorKind::Constraint, format!("field '{}' declared twice", f.name.name), f.name.span));
            }
            fields.push((f.name.name.clone(), f.ty));
            if let Some(r) = &f.reference {
                if f.ty != ecsdb_engine::FieldType::Entity {
                    return Err(type_err(
                        format!("only an entity field can be a reference; '{}' is {}", f.name.name, f.ty),
                        r.span,
                    ));
                }
                references.push(ecsdb_engine::ReferenceDef::new(&c.name.name, &f.name.name, r.on_delete, r.acyclic));
            }
        }
        let def = ComponentDef { name: c.name.name.clone(), fields, storage: ecsdb_engine::StorageKind::Table };
        Ok(LogicalPlan::CreateComponent(def, references))
    }

    fn create_index(&mut self, c: &ast::CreateIndex) -> Result<LogicalPlan, Error> {
        let id = self.component_id(&c.component)?;
        let info = self.world.components().info(id);
        let mut field_names = Vec::new();
        for f in &c.fields {
            if info.field_index(&f.name).is_none() {
                let mut e = err(
                    ErrorKind::UnknownField,
                    format!("component '{}' has no field '{}'", info.name(), f.name),
                    f.span,
                );
                if let Some(s) = suggest(&f.name, info.fields().iter().map(|x| x.name.as_str())) {
                    e = e.with_suggestion(s);
                }
                return Err(e);
            }
            field_names.push(f.name.clone());
        }
        let Some(kind) = ecsdb_engine::index::IndexKind::from_name(&c.kind.name) else {
            let kinds = index_kinds();
            let mut e = err(
                ErrorKind::Unsupported,
                format!("unknown index kind '{}' (the kinds are {})", c.kind.name, kinds.join(", ")),
                c.kind.span,
            );
            if let Some(s) = suggest(&c.kind.name, kinds) {
                e = e.with_suggestion(s);
            }
            return Err(e);
        };
        let def = ecsdb_engine::index::IndexDef {
            name: c.name.as_ref().map(|n| n.name.clone()),
            component: info.name().to_string(),
            fields: field_names,
            kind,
        };
        Ok(LogicalPlan::CreateIndex { def, span: c.kind.span })
    }

    fn select(&mut self, s: &ast::Select) -> Result<SelectPlan, Error> {
        let terms = self.terms(&s.from)?;
        let filter = match &s.where_ {
            Some(w) => Some(self.condition(w, "WHERE")?),
            None => None,
        };
        // Items: `*` expands to the entity and each non-negated FROM term's component.
        let star_slots: Vec<Slot> =
            Source { slots: Vec::new(), terms: terms.clone(), filter: None, target: None }.star_slots();
        let mut items: Vec<Item> = Vec::new();
        let mut aliases: Vec<(String, Expr)> = Vec::new();
        for item in &s.items {
            match item {
                ast::SelectItem::Star { span } => {
                    items.push(Item {
                        name: "entity".into(),
                        expr: Expr { kind: ExprKind::Entity, ty: DataType::Entity, span: *span },
                    });
                    for &slot in &star_slots {
                        items.push(Item {
                            name: self.slots[slot].name.clone(),
                            expr: Expr { kind: ExprKind::Component(slot), ty: DataType::Object, span: *span },
                        });
                    }
                }
                ast::SelectItem::Expr { expr, alias, text, .. } => {
                    let bound = self.expr(expr, Place::Projection)?;
                    if let Some(a) = alias {
                        aliases.push((a.name.clone(), bound.clone()));
                    }
                    let name = match alias {
                        Some(a) => a.name.clone(),
                        None => match &expr.kind {
                            ast::ExprKind::Field { component, field } => format!("{}.{}", component.name, field.name),
                            ast::ExprKind::EntityId => "entity".to_string(),
                            ast::ExprKind::Component(c) => c.name.clone(),
                            _ => text.clone(),
                        },
                    };
                    items.push(Item { name, expr: bound });
                }
            }
        }
        // GROUP BY: an item's alias, an item's position, or any expression (not an aggregate).
        let mut group_by = Vec::with_capacity(s.group_by.len());
        for g in &s.group_by {
            let by_item = match &g.kind {
                ast::ExprKind::Component(name) => aliases.iter().find(|(a, _)| *a == name.name).map(|(_, e)| e.clone()),
                ast::ExprKind::Literal(ast::Literal::Int(n)) => {
                    let n = *n;
                    match usize::try_from(n).ok().and_then(|i| i.checked_sub(1)).and_then(|i| items.get(i)) {
                        Some(item) => Some(item.expr.clone()),
                        None => {
                            return Err(type_err(
                                format!("GROUP BY position {n} is not an item (there are {} items)", items.len()),
                                g.span,
                            ))
                        }
                    }
                }
                _ => None,
            };
            let x = match by_item {
                Some(e) => {
                    if e.any(&mut |x| matches!(x.kind, ExprKind::Aggregate(_))) {
                        return Err(type_err("cannot group by an aggregate", g.span));
                    }
                    e
                }
                None => self.expr(g, Place::Row)?,
            };
            if matches!(x.ty, DataType::Object) {
                return Err(type_err("cannot group by a whole component (use its fields)", x.span));
            }
            group_by.push(x);
        }
        // ORDER BY: an item's alias, an item's position, or any expression.
        let mut order_by = Vec::with_capacity(s.order_by.len());
        for k in &s.order_by {
            let aliased = match &k.expr.kind {
                ast::ExprKind::Component(name) => aliases.iter().find(|(a, _)| *a == name.name).map(|(_, e)| e.clone()),
                ast::ExprKind::Literal(ast::Literal::Int(n)) => {
                    let n = *n;
                    match usize::try_from(n).ok().and_then(|i| i.checked_sub(1)).and_then(|i| items.get(i)) {
                        Some(item) => Some(item.expr.clone()),
                        None => {
                            return Err(type_err(
                                format!("ORDER BY position {n} is not an item (there are {} items)", items.len()),
                                k.expr.span,
                            ))
                        }
                    }
                }
                _ => None,
            };
            let expr = match aliased {
                Some(e) => Expr { span: k.expr.span, ..e },
                None => self.expr(&k.expr, Place::Projection)?,
            };
            if matches!(expr.ty, DataType::Object) {
                return Err(type_err("cannot order by a whole component (use its fields)", expr.span));
            }
            order_by.push(SortKey { expr, descending: k.desc });
        }
        let limit = match &s.limit {
            Some(l) => Some(self.bound_expr(l, "LIMIT")?),
            None => None,
        };
        let offset = match &s.offset {
            Some(o) => Some(self.bound_expr(o, "OFFSET")?),
            None => None,
        };
        let aggregated = !group_by.is_empty() || !self.aggregates.is_empty();
        if aggregated {
            let fields = crate::plan::logical::slot_fields(self.world, &self.slots);
            let ctx = crate::plan::logical::DisplayContext {
                slots: &self.slots,
                fields: &fields,
                group_by: &[],
                aggregates: &[],
                params: &self.params,
            };
            let name = |e: &Expr| e.display(&ctx).to_string();
            for item in &mut items {
                item.expr = over_groups(&item.expr, &group_by, &name)?;
            }
            for key in &mut order_by {
                key.expr = over_groups(&key.expr, &group_by, &name)?;
            }
        }
        let source = self.source(terms, filter, None);
        Ok(SelectPlan {
            source,
            items,
            group_by,
            aggregates: std::mem::take(&mut self.aggregates),
            aggregated,
            order_by,
            limit,
            offset,
        })
    }

    fn bound_expr(&mut self, e: &ast::Expr, what: &str) -> Result<Expr, Error> {
        let x = self.expr(e, Place::Constant)?;
        if !matches!(x.ty, DataType::Int | DataType::Null | DataType::Any) {
            return Err(type_err(format!("{what} must be an integer, found {}", x.ty), x.span));
        }
        Ok(x)
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
    if storable(ty, value.ty) {
        Ok(())
    } else {
        Err(type_err(format!("cannot store {} in field '{component}.{field}' of type {ty}", value.ty), value.span))
    }
}

/// Whether a value of type `value` may be stored in a field of type `ty` (it may still fail
/// to convert: an int out of the field's range).
pub(crate) fn storable(ty: ecsdb_engine::FieldType, value: DataType) -> bool {
    use ecsdb_engine::FieldType as F;
    match value {
        DataType::Any => true,
        DataType::Null => ty == F::Entity,
        DataType::Int => ty.is_numeric(),
        DataType::Float => ty.is_numeric(),
        DataType::Bool => ty == F::Bool,
        DataType::Str => ty == F::String,
        DataType::Entity => ty == F::Entity,
        DataType::Vec2 => ty == F::Vec2,
        DataType::Vec3 => ty == F::Vec3,
        DataType::Object => false,
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

/// The value of a number literal (`-` included), for statements that take a constant.
fn constant_number(e: &ast::Expr) -> Option<f64> {
    match &e.kind {
        ast::ExprKind::Literal(ast::Literal::Int(i)) => Some(*i as f64),
        ast::ExprKind::Literal(ast::Literal::Float(f)) => Some(*f),
        ast::ExprKind::Unary { op: ast::UnaryOp::Neg, expr } => constant_number(expr).map(|v| -v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_statement;
    use ecsdb_engine::{ComponentDef, FieldType};

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
        let tys: Vec<DataType> = p.items.iter().map(|i| i.expr.ty).collect();
        assert_eq!(tys, [DataType::Vec2, DataType::Float, DataType::Int, DataType::Float]);
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
