//! `ALTER COMPONENT` and `RENAME COMPONENT` run against the database: the engine changes the
//! component, then every stored text system is bound again against the new catalog. A change
//! that one of them no longer binds against is taken back, and the error names the system
//! (as PostgreSQL names the views that depend on a column).

use super::{Database, PreparedBody, parse};
use crate::error::{Error, ErrorKind};
use crate::plan::logical::{AlterChange, AlterPlan};
use crate::result::ResultSet;
use crate::schedule::Body;

impl Database {
    /// Runs a bound `ALTER COMPONENT` or `RENAME COMPONENT`.
    pub(super) fn run_alter(&mut self, plan: &AlterPlan) -> Result<ResultSet, Error> {
        let at = |e: ecsdb_engine::EngineError| Error::from(e).with_span(plan.span);
        let (change, reference) = match &plan.change {
            AlterChange::Default { field, value } => {
                // New values only: nothing stored or planned depends on a default.
                self.world.get_mut().set_field_default(plan.component, field, value.as_ref()).map_err(at)?;
                return Ok(ResultSet::default());
            }
            AlterChange::Engine(change, reference) => (change, reference),
        };
        let world = self.world.get_mut();
        let altered = world.alter_component(plan.component, change).map_err(at)?;
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
