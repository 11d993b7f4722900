//! `ALTER COMPONENT` and `RENAME COMPONENT` run against the database: the engine changes the
//! component, then every stored text system is bound again against the new catalog. A change
//! that one of them no longer binds against is taken back, and the error names the system
//! (as PostgreSQL names the views that depend on a column).

use std::sync::Arc;

use ecsdb_engine::{ComponentChange, ComponentId, Entity, FieldInfo, FieldType, FieldValue, Value, convert_value};

use super::{Database, PreparedBody, parse};
use crate::error::{Error, ErrorKind, Span};
use crate::execute::select;
use crate::plan::PhysicalSelect;
use crate::plan::logical::{AlterChange, AlterPlan, SelectPlan};
use crate::result::ResultSet;
use crate::schedule::Body;

impl Database {
    /// Runs a bound `ALTER COMPONENT` or `RENAME COMPONENT`.
    pub(super) fn run_alter(&mut self, plan: &AlterPlan, params: &[Value]) -> Result<ResultSet, Error> {
        let at = |e: ecsdb_engine::EngineError| Error::from(e).with_span(plan.span);
        let mut retyped = None;
        let (change, reference) = match &plan.change {
            AlterChange::Default { field, value } => {
                // New values only: nothing stored or planned depends on a default.
                self.world.get_mut().set_field_default(plan.component, field, value.as_ref()).map_err(at)?;
                return Ok(ResultSet::default());
            }
            AlterChange::Engine(change, reference) => (change.clone(), reference.as_ref()),
            AlterChange::Retype { field, ty, values, value_span } => {
                let converted = self.retyped_values(plan.component, field, *ty, values, *value_span, params)?;
                retyped = Some(converted);
                (ComponentChange::RetypeField { name: field.clone(), ty: *ty }, None)
            }
        };
        let world = self.world.get_mut();
        let altered = world.alter_component(plan.component, &change).map_err(at)?;
        if let Some(r) = reference
            && let Err(e) = world.declare_reference(r)
        {
            world.undo_alter(altered);
            return Err(at(e));
        }
        match self.rebind_text_systems() {
            Ok(bodies) => {
                for (i, (statements, access, exclusive)) in bodies {
                    let system = &mut self.schedule.systems[i];
                    if let Body::Text { statements: old, .. } = &mut system.body {
                        *old = statements;
                    }
                    system.access = access;
                    system.exclusive = exclusive;
                }
                if let Some((field, values)) = retyped {
                    let world = self.world.get_mut();
                    for (e, v) in values {
                        // Converted for the new field above: only a bug fails here.
                        if let Err(err) = world.write_fields(e, plan.component, vec![(field, v)]) {
                            world.undo_alter(altered);
                            return Err(Error::internal(format!("a retyped value did not store: {err}")));
                        }
                    }
                }
                drop(altered);
                // Saved systems that did not bind may now.
                self.bind_saved_systems();
                Ok(ResultSet::default())
            }
            Err((system, e)) => {
                self.world.get_mut().undo_alter(altered);
                let name = self.world.get().components().info(plan.component).name().to_string();
                Err(Error::new(
                    ErrorKind::Constraint,
                    format!("cannot change component '{name}': system '{system}' depends on it ({})", e.message),
                )
                .with_span(plan.span))
            }
        }
    }

    /// The new values of `field` as type `ty` for `ALTER FIELD … TYPE`, each converted for
    /// the new field: `(field position, [(entity, value)])`. A value that does not convert
    /// is an error at `span` naming the entity, before anything changes.
    fn retyped_values(
        &self,
        component: ComponentId,
        field: &str,
        ty: FieldType,
        values: &Arc<SelectPlan>,
        span: Span,
        params: &[Value],
    ) -> Result<(usize, Vec<(Entity, FieldValue)>), Error> {
        let world = self.world.get();
        let info = world.components().info(component);
        let position = info.field_index(field).ok_or_else(|| Error::internal("the binder checked the field"))?;
        let physical = PhysicalSelect::new(values.clone(), world, self.plan_options);
        let rows = select::execute_select(&physical, world, params)?.rows;
        let new_field = FieldInfo { name: field.to_string(), ty, offset: 0 };
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let (Value::Entity(e), v) = (&row[0], &row[1]) else {
                return Err(Error::internal("the values of a retype start with the entity"));
            };
            let converted = convert_value(info.name(), &new_field, v).map_err(|_| {
                Error::new(
                    ErrorKind::Type,
                    format!("cannot store {} of entity {e} in '{}.{field}' as {ty}", v.describe(), info.name()),
                )
                .with_span(span)
            })?;
            out.push((*e, converted));
        }
        Ok((position, out))
    }

    /// Every bound text system prepared again against the world as it is now, by its
    /// position in the schedule; the first that fails, by name, with its error.
    fn rebind_text_systems(&self) -> Result<Vec<(usize, PreparedBody)>, (String, Error)> {
        let mut bodies = Vec::new();
        for (i, system) in self.schedule.systems.iter().enumerate() {
            let Body::Text { text, .. } = &system.body else { continue };
            let body = parse::parse_system_body(text)
                .and_then(|body| self.prepare_system_body(&body))
                .map_err(|e| (system.name.clone(), e))?;
            bodies.push((i, body));
        }
        Ok(bodies)
    }
}
