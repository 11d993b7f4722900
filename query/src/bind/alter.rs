//! Binding `ALTER COMPONENT` and `RENAME COMPONENT`: names checked against the catalog, with
//! did-you-mean hints, and defaults evaluated, before anything changes. What only the data
//! can refuse (an index or a system depending on a field) is found when it runs.

use ecsdb_engine::{ComponentChange, ReferenceDef};

use super::statements::field_default;
use super::*;
use crate::plan::logical::{AlterChange, AlterPlan};

impl Binder<'_> {
    pub(super) fn alter_component(&mut self, a: &ast::AlterComponent) -> Result<LogicalPlan, Error> {
        let component = self.alterable(&a.component)?;
        let info = self.world.components().info(component);
        let name = info.name().to_string();
        let existing = |field: &ast::Ident| -> Result<(), Error> {
            match info.field_index(&field.name) {
                Some(_) => Ok(()),
                None => {
                    let mut e = err(
                        ErrorKind::UnknownField,
                        format!("component '{name}' has no field '{}'", field.name),
                        field.span,
                    );
                    if let Some(s) = suggest(&field.name, info.fields().iter().map(|f| f.name.as_str())) {
                        e = e.with_suggestion(s);
                    }
                    Err(e)
                }
            }
        };
        let fresh = |field: &ast::Ident| -> Result<(), Error> {
            if info.field_index(&field.name).is_some() {
                return Err(err(
                    ErrorKind::Constraint,
                    format!("component '{name}' already has a field '{}'", field.name),
                    field.span,
                ));
            }
            Ok(())
        };
        let change = match &a.change {
            ast::FieldChange::Add(decl) => {
                fresh(&decl.name)?;
                let default = decl.default.as_ref().map(|d| field_default(&name, decl, d)).transpose()?;
                let reference = match &decl.reference {
                    Some(r) if decl.ty != ecsdb_engine::FieldType::Entity => {
                        return Err(type_err(
                            format!("only an entity field can be a reference; '{}' is {}", decl.name.name, decl.ty),
                            r.span,
                        ));
                    }
                    Some(r) => Some(ReferenceDef::new(&name, &decl.name.name, r.on_delete, r.acyclic)),
                    None => None,
                };
                let add = ComponentChange::AddField { name: decl.name.name.clone(), ty: decl.ty, default };
                AlterChange::Engine(add, reference)
            }
            ast::FieldChange::Drop(field) => {
                existing(field)?;
                AlterChange::Engine(ComponentChange::DropField(field.name.clone()), None)
            }
            ast::FieldChange::Rename { from, to } => {
                existing(from)?;
                fresh(to)?;
                let rename = ComponentChange::RenameField { from: from.name.clone(), to: to.name.clone() };
                AlterChange::Engine(rename, None)
            }
            ast::FieldChange::Retype { field, ty, ty_span, using } => {
                existing(field)?;
                let from = info.field(&field.name).expect("checked above").ty;
                if using.is_none() && !ty.holds_every(from) {
                    return Err(type_err(
                        format!(
                            "changing '{name}.{}' from {from} to {ty} could lose information: say how with \
                             USING, for example USING {name}.{}",
                            field.name, field.name
                        ),
                        *ty_span,
                    ));
                }
                // The new values: `USING expr` (or the field) for every entity with the
                // component, computed before the change.
                let value = using.clone().unwrap_or(ast::Expr {
                    kind: ast::ExprKind::Field { component: a.component.clone(), field: field.clone() },
                    span: field.span,
                });
                let value_span = value.span;
                let entity = ast::Expr { kind: ast::ExprKind::EntityId, span: a.component.span };
                let item =
                    |expr: ast::Expr| ast::SelectItem::Expr { span: expr.span, expr, alias: None, text: String::new() };
                let from = ast::Term { kind: ast::TermKind::Required(a.component.clone()), span: a.component.span };
                let select = ast::Select::new(vec![item(entity), item(value)], vec![from], a.span);
                let values = Arc::new(self.select(&select)?);
                if values.aggregated {
                    return Err(type_err("USING gives one value per row: it cannot aggregate", value_span));
                }
                AlterChange::Retype { field: field.name.clone(), ty: *ty, values, value_span }
            }
            ast::FieldChange::SetDefault { field, default } => {
                existing(field)?;
                let value = match default {
                    Some(d) => {
                        let ty = info.field(&field.name).expect("checked above").ty;
                        let decl = ast::FieldDecl {
                            name: field.clone(),
                            ty,
                            ty_span: field.span,
                            reference: None,
                            default: None,
                            span: field.span,
                        };
                        Some(field_default(&name, &decl, d)?)
                    }
                    None => None,
                };
                AlterChange::Default { field: field.name.clone(), value }
            }
            ast::FieldChange::SetStorage(kind) => AlterChange::Engine(ComponentChange::SetStorage(*kind), None),
        };
        Ok(LogicalPlan::AlterComponent(AlterPlan { component, change, span: a.span }))
    }

    pub(super) fn rename_component(&mut self, r: &ast::RenameComponent) -> Result<LogicalPlan, Error> {
        let component = self.alterable(&r.from)?;
        if self.world.components().id_by_name(&r.to.name).is_some() {
            return Err(err(ErrorKind::Constraint, format!("component '{}' already exists", r.to.name), r.to.span));
        }
        let change = AlterChange::Engine(ComponentChange::Rename(r.to.name.clone()), None);
        Ok(LogicalPlan::AlterComponent(AlterPlan { component, change, span: r.span }))
    }

    /// The component `name` if text may change it: one defined at run time, not by a Rust
    /// type (whose program changes it by changing the type).
    fn alterable(&self, name: &ast::Ident) -> Result<ComponentId, Error> {
        let id = self.component_id(name)?;
        let info = self.world.components().info(id);
        if !info.is_dynamic() {
            return Err(err(
                ErrorKind::Unsupported,
                format!(
                    "component '{}' is defined by a Rust type: the program changes it by changing the type",
                    info.name()
                ),
                name.span,
            ));
        }
        Ok(id)
    }
}
