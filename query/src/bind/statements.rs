//! Binding statements: each statement's parts bound in turn into its logical plan.

use super::*;
use ecsdb_engine::ValueType;

impl Binder<'_> {
    pub(super) fn statement(&mut self, stmt: &ast::Statement) -> Result<LogicalPlan, Error> {
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
            ast::Statement::AlterComponent(a) => self.alter_component(a),
            ast::Statement::RenameComponent(r) => self.rename_component(r),
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
        Ok(LogicalPlan::Update { component: id, assignments, source })
    }

    fn create_component(&mut self, c: &ast::CreateComponent) -> Result<LogicalPlan, Error> {
        if self.world.components().id_by_name(&c.name.name).is_some() {
            return Err(err(ErrorKind::Constraint, format!("component '{}' already exists", c.name.name), c.name.span));
        }
        let mut fields: Vec<(String, ecsdb_engine::FieldType)> = Vec::new();
        let mut references = Vec::new();
        let mut defaults = Vec::new();
        for f in &c.fields {
            if fields.iter().any(|(n, _)| *n == f.name.name) {
                return Err(err(ErrorKind::Constraint, format!("field '{}' declared twice", f.name.name), f.name.span));
            }
            fields.push((f.name.name.clone(), f.ty));
            if let Some(d) = &f.default {
                defaults.push((f.name.name.clone(), field_default(&c.name.name, f, d)?));
            }
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
        let def = ComponentDef { name: c.name.name.clone(), fields, storage: c.storage };
        Ok(LogicalPlan::CreateComponent(def, references, defaults))
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

    pub(super) fn select(&mut self, s: &ast::Select) -> Result<SelectPlan, Error> {
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
                        expr: Expr { kind: ExprKind::Entity, ty: ValueType::Entity, span: *span },
                    });
                    for &slot in &star_slots {
                        items.push(Item {
                            name: self.slots[slot].name.clone(),
                            expr: Expr { kind: ExprKind::Component(slot), ty: ValueType::Object, span: *span },
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
                            ));
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
            if matches!(x.ty, ValueType::Object) {
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
                            ));
                        }
                    }
                }
                _ => None,
            };
            let expr = match aliased {
                Some(e) => Expr { span: k.expr.span, ..e },
                None => self.expr(&k.expr, Place::Projection)?,
            };
            if matches!(expr.ty, ValueType::Object) {
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
            let ctx = crate::expr::DisplayContext {
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
        if !matches!(x.ty, ValueType::Int | ValueType::Null | ValueType::Any) {
            return Err(type_err(format!("{what} must be an integer, found {}", x.ty), x.span));
        }
        Ok(x)
    }
}

/// The value of `DEFAULT expr` for field declaration `f` of component `component`: a
/// constant, converted to the field's type as a write would convert it.
pub(super) fn field_default(component: &str, f: &ast::FieldDecl, d: &ast::Expr) -> Result<Value, Error> {
    let value = super::constant_value(d).map_err(|e| match e.kind {
        ErrorKind::Type | ErrorKind::UnknownFunction => {
            type_err(format!("the default of '{component}.{}' must be a constant: {}", f.name.name, e.message), d.span)
        }
        _ => e,
    })?;
    let field = ecsdb_engine::FieldInfo { name: f.name.name.clone(), ty: f.ty, offset: 0 };
    ecsdb_engine::convert_value(component, &field, &value).map_err(|_| {
        type_err(
            format!("cannot use {} as the default of '{component}.{}' of type {}", value.describe(), f.name.name, f.ty),
            d.span,
        )
    })?;
    Ok(value)
}
