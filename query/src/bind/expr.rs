//! Binding expressions: names to fields and functions, types checked, aggregates, paths
//! through references and hierarchy functions.

use super::*;
use crate::types::rules;
use ecsdb_engine::ValueType;

impl Binder<'_> {
    pub(super) fn expr(&mut self, e: &ast::Expr, place: Place) -> Result<Expr, Error> {
        let span = e.span;
        let mk = |kind: ExprKind, ty: ValueType| Expr { kind, ty, span };
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
                mk(ExprKind::Param(n), ValueType::Any)
            }
            ast::ExprKind::Vector(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let x = self.expr(item, place)?;
                    if !(x.ty.is_numeric() || matches!(x.ty, ValueType::Null | ValueType::Any)) {
                        return Err(type_err(format!("vector elements must be numbers, found {}", x.ty), x.span));
                    }
                    out.push(x);
                }
                let ty = match out.len() {
                    2 => ValueType::Vec2,
                    3 => ValueType::Vec3,
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
                let ty = rules::field_type(info.fields()[index].ty);
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
                mk(ExprKind::Component(slot), ValueType::Object)
            }
            ast::ExprKind::EntityId => {
                self.no_row_in_constant(place, span)?;
                mk(ExprKind::Entity, ValueType::Entity)
            }
            ast::ExprKind::Unary { op: ast::UnaryOp::Neg, expr } => {
                let x = self.vector_operand(expr, place)?;
                let ty = rules::negate(x.ty).map_err(|m| type_err(m, span))?;
                mk(ExprKind::Neg(Box::new(x)), ty)
            }
            ast::ExprKind::Not(expr) => {
                let x = self.expr(expr, place)?;
                if !rules::is_condition(x.ty) {
                    return Err(type_err(format!("NOT needs a condition (bool), found {}", x.ty), x.span));
                }
                mk(ExprKind::Not(Box::new(x)), ValueType::Bool)
            }
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let op = binary_op(*op);
                let (l, r) = match op {
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Concat => (self.expr(lhs, place)?, self.expr(rhs, place)?),
                    _ => (self.vector_operand(lhs, place)?, self.vector_operand(rhs, place)?),
                };
                let ty = rules::binary(op, l.ty, r.ty).map_err(|m| type_err(m, span))?;
                mk(ExprKind::Binary { op, left: Box::new(l), right: Box::new(r) }, ty)
            }
            ast::ExprKind::Between { expr, low, high, negated } => {
                let x = self.vector_operand(expr, place)?;
                let lo = self.vector_operand(low, place)?;
                let hi = self.vector_operand(high, place)?;
                for bound in [&lo, &hi] {
                    rules::binary(BinaryOp::Le, x.ty, bound.ty).map_err(|m| type_err(m, span))?;
                }
                mk(
                    ExprKind::Between { expr: Box::new(x), low: Box::new(lo), high: Box::new(hi), negated: *negated },
                    ValueType::Bool,
                )
            }
            ast::ExprKind::InList { expr, list, negated } => {
                let x = self.vector_operand(expr, place)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let v = self.vector_operand(item, place)?;
                    rules::binary(BinaryOp::Eq, x.ty, v.ty).map_err(|m| type_err(m, v.span))?;
                    items.push(v);
                }
                mk(ExprKind::InList { expr: Box::new(x), list: items, negated: *negated }, ValueType::Bool)
            }
            ast::ExprKind::Like { expr, pattern, negated } => {
                let x = self.expr(expr, place)?;
                let p = self.expr(pattern, place)?;
                for v in [&x, &p] {
                    if !matches!(v.ty, ValueType::Str | ValueType::Null | ValueType::Any) {
                        return Err(type_err(format!("LIKE needs strings, found {}", v.ty), v.span));
                    }
                }
                mk(ExprKind::Like { expr: Box::new(x), pattern: Box::new(p), negated: *negated }, ValueType::Bool)
            }
            ast::ExprKind::IsNull { expr, negated } => {
                let x = self.expr(expr, place)?;
                mk(ExprKind::IsNull { expr: Box::new(x), negated: *negated }, ValueType::Bool)
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
                Some(2) => Ok(Expr { kind: ExprKind::ComponentVector(slot), ty: ValueType::Vec2, span: x.span }),
                Some(3) => Ok(Expr { kind: ExprKind::ComponentVector(slot), ty: ValueType::Vec3, span: x.span }),
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
    pub(super) fn value_for(
        &mut self,
        e: &ast::Expr,
        place: Place,
        ty: ecsdb_engine::FieldType,
    ) -> Result<Expr, Error> {
        let x = self.expr(e, place)?;
        if matches!(ty, ecsdb_engine::FieldType::Vec2 | ecsdb_engine::FieldType::Vec3) && x.ty == ValueType::Object {
            return self.as_vector(x);
        }
        Ok(x)
    }

    fn aggregate(&mut self, func: AggFunc, arg: Option<&ast::Expr>, place: Place, span: Span) -> Result<Expr, Error> {
        match place {
            Place::Projection => {}
            Place::InAggregate => {
                return Err(type_err(format!("{}() cannot be nested inside another aggregate", func.name()), span));
            }
            Place::Row | Place::Constant => {
                return Err(type_err(
                    format!("aggregate {}() is not allowed here (only in SELECT items and ORDER BY)", func.name()),
                    span,
                ));
            }
        }
        let arg = match arg {
            Some(a) => Some(self.expr(a, Place::InAggregate)?),
            None => None,
        };
        let ty = rules::aggregate(func, arg.as_ref().map(|a| a.ty)).map_err(|m| type_err(m, span))?;
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
            if ty != ValueType::Entity {
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
                    ty = rules::field_type(info.fields()[j].ty);
                    at = g.span;
                    Some(j)
                }
                None if i + 1 == steps.len() => {
                    ty = ValueType::Object;
                    None
                }
                None => {
                    return Err(type_err(
                        format!("'{}' is a component: name one of its fields to step on", info.name()),
                        s.component.span,
                    ));
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
                0 => matches!(x.ty, ValueType::Entity | ValueType::Null | ValueType::Any),
                _ => matches!(x.ty, ValueType::Int | ValueType::Null | ValueType::Any),
            };
            if !ok {
                let want = if k == 0 { "an entity" } else { "an int (the maximum depth)" };
                return Err(type_err(format!("descendant_of() takes {want} here, found {}", x.ty), x.span));
            }
            rest.push(x);
        }
        let ty = match func {
            HierarchyFunc::Depth => ValueType::Int,
            HierarchyFunc::Root => ValueType::Entity,
            HierarchyFunc::DescendantOf => ValueType::Bool,
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
            return Ok(Expr { kind, ty: ValueType::Bool, span });
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
            if let Some(obj) = bound.iter().find(|x| x.ty == ValueType::Object) {
                return Err(type_err(format!("{}() cannot take a whole component", b.name()), obj.span));
            }
            let tys: Vec<ValueType> = bound.iter().map(|x| x.ty).collect();
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
                ty: ValueType::Any,
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
    fn index_function(&self, name: &str) -> Option<ecsdb_engine::IndexFunction> {
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
        func: ecsdb_engine::IndexFunction,
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
        Ok(Expr { kind: ExprKind::IndexCall { func: IndexCall(func), slot }, ty: ValueType::Bool, span })
    }

    pub(super) fn condition(&mut self, e: &ast::Expr, what: &str) -> Result<Expr, Error> {
        let x = self.expr(e, Place::Row)?;
        if !rules::is_condition(x.ty) {
            return Err(type_err(format!("{what} needs a condition (bool), found {}", x.ty), x.span));
        }
        Ok(x)
    }
}
