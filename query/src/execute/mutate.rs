//! SPAWN, DESPAWN, ADD, REMOVE and UPDATE, atomically.
//!
//! Every statement runs in two phases. **Check**: find every target (exactly as SELECT would
//! select it), compute every new value from the state before the statement, and convert each
//! value to its field's type — stale entities, type errors and out-of-range values all surface
//! here, with the span of the text responsible. **Write**: apply the changes through the
//! engine's infallible-after-checks paths. A statement therefore changes everything or nothing.
//! The two phases are separate ([`Staged`]) so that systems can run the check of several
//! statements at once on a shared world and apply them later, in order.

use ecsdb_engine::{convert_value, ComponentId, Entity, FieldValue, Value, World};

use crate::error::{Error, ErrorKind};
use crate::execute::eval::{Evaluator, NoRows};
use crate::execute::scan::{run_scan, Sink, TableCtx};
use crate::plan::logical::{ComponentValue, Expr};
use crate::plan::physical::ScanPlan;
use crate::result::ResultSet;

/// Collects the targets and the values of some expressions for each, from the state before
/// the statement.
struct TargetSink<'e> {
    exprs: &'e [&'e Expr],
    params: &'e [Value],
    entities: Vec<Entity>,
    /// Per expression, the values for each target (in target order).
    values: Vec<Vec<Value>>,
}

impl<'w> Sink<'w> for TargetSink<'_> {
    fn rows(&mut self, ctx: &TableCtx<'w>, rows: &[u32]) -> Result<bool, Error> {
        self.entities.extend(rows.iter().filter_map(|&r| ctx.entities.get(r as usize).copied()));
        let ev = Evaluator::new(ctx, self.params);
        for (i, e) in self.exprs.iter().enumerate() {
            let v = ev.eval(e, rows)?;
            self.values[i].extend(v);
        }
        Ok(true)
    }
}

fn targets(
    scan: &ScanPlan,
    world: &World,
    params: &[Value],
    exprs: &[&Expr],
) -> Result<(Vec<Entity>, Vec<Vec<Value>>), Error> {
    let mut sink = TargetSink { exprs, params, entities: Vec::new(), values: vec![Vec::new(); exprs.len()] };
    run_scan(scan, world, params, &mut sink)?;
    Ok((sink.entities, sink.values))
}

/// A component by name with its fields' values.
type NamedValue = (String, Vec<(String, Value)>);

fn count(n: usize) -> ResultSet {
    ResultSet { columns: vec!["count".into()], rows: vec![vec![Value::Int(n as i64)]] }
}

fn conversion_error(e: ecsdb_engine::EngineError, at: &Expr) -> Error {
    Error::from(e).with_span(at.span)
}

/// Converts a component value's fields for one target (values in `values[k][target]`).
fn convert_component(world: &World, c: &ComponentValue, values: &[Value]) -> Result<Vec<(String, Value)>, Error> {
    let info = world.components().info(c.id);
    let mut out = Vec::with_capacity(c.fields.len());
    for ((index, expr), v) in c.fields.iter().zip(values) {
        let field = info.fields().get(*index).ok_or_else(|| Error::internal("field index out of range"))?;
        convert_value(info.name(), field, v).map_err(|e| conversion_error(e, expr))?;
        out.push((field.name.clone(), v.clone()));
    }
    Ok(out)
}

/// A statement's changes, computed and checked from the state when it ran and not yet
/// applied: what a system stages until the end of its phase (and what every statement
/// applies at once outside systems).
#[derive(Debug)]
pub(crate) enum Staged {
    /// SPAWN: the new entity's components.
    Spawn(Vec<NamedValue>),
    /// DESPAWN: the targets.
    Despawn(Vec<Entity>),
    /// ADD: each target with its components.
    Add(Vec<(Entity, Vec<NamedValue>)>),
    /// REMOVE: the targets and the components removed.
    Remove(Vec<Entity>, Vec<ComponentId>),
    /// UPDATE: the component and each target's converted field values.
    Update(ComponentId, Vec<(Entity, Vec<(usize, FieldValue)>)>),
}

impl Staged {
    /// How many entities it changes (1 for SPAWN).
    pub(crate) fn len(&self) -> usize {
        match self {
            Staged::Spawn(_) => 1,
            Staged::Despawn(e) | Staged::Remove(e, _) => e.len(),
            Staged::Add(t) => t.len(),
            Staged::Update(_, w) => w.len(),
        }
    }

    /// Whether it is an UPDATE (seen by the systems after it, not staged to the phase's end).
    pub(crate) fn is_update(&self) -> bool {
        matches!(self, Staged::Update(..))
    }

    /// Applies the changes and returns the statement's result. Targets that died since the
    /// statement ran (a staged DESPAWN earlier in the phase) are skipped.
    pub(crate) fn apply(self, world: &mut World) -> Result<ResultSet, Error> {
        fn spec_of(
            components: &[NamedValue],
            f: impl FnOnce(&[(&str, &[(&str, Value)])]) -> Result<(), Error>,
        ) -> Result<(), Error> {
            let fields: Vec<Vec<(&str, Value)>> =
                components.iter().map(|(_, fs)| fs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect()).collect();
            let spec: Vec<(&str, &[(&str, Value)])> =
                components.iter().zip(&fields).map(|((name, _), fs)| (name.as_str(), fs.as_slice())).collect();
            f(&spec)
        }
        match self {
            Staged::Spawn(components) => {
                let mut spawned = Entity::NULL;
                spec_of(&components, |spec| {
                    spawned = world.spawn_values(spec)?;
                    Ok(())
                })?;
                Ok(ResultSet { columns: vec!["entity".into()], rows: vec![vec![Value::Entity(spawned)]] })
            }
            Staged::Despawn(entities) => {
                let mut n = 0;
                for e in entities {
                    if world.is_alive(e) {
                        world.despawn(e).map_err(write_failed)?;
                        n += 1;
                    }
                }
                Ok(count(n))
            }
            Staged::Add(targets) => {
                let mut n = 0;
                for (e, components) in &targets {
                    if world.is_alive(*e) {
                        spec_of(components, |spec| world.insert_values(*e, spec).map_err(write_failed))?;
                        n += 1;
                    }
                }
                Ok(count(n))
            }
            Staged::Remove(entities, components) => {
                let mut affected = 0;
                for e in entities {
                    if !world.is_alive(e) {
                        continue;
                    }
                    let mut any = false;
                    for id in &components {
                        any |= world.remove_by_id(e, *id).map_err(write_failed)?;
                    }
                    affected += any as usize;
                }
                Ok(count(affected))
            }
            Staged::Update(component, writes) => {
                let mut n = 0;
                for (e, fields) in writes {
                    if world.is_alive(e) {
                        world.write_fields(e, component, fields).map_err(write_failed)?;
                        n += 1;
                    }
                }
                Ok(count(n))
            }
        }
    }
}

/// `SPAWN …`: one new entity.
pub fn spawn(world: &mut World, comps: &[ComponentValue], params: &[Value]) -> Result<ResultSet, Error> {
    stage_spawn(world, comps, params)?.apply(world)
}

/// `SPAWN …`, checked but not applied.
pub(crate) fn stage_spawn(world: &World, comps: &[ComponentValue], params: &[Value]) -> Result<Staged, Error> {
    let ev = Evaluator::new(&NoRows, params);
    let mut built: Vec<NamedValue> = Vec::with_capacity(comps.len());
    for c in comps {
        let values: Vec<Value> = c.fields.iter().map(|(_, e)| ev.eval_one(e)).collect::<Result<_, _>>()?;
        built.push((c.name.clone(), convert_component(world, c, &values)?));
    }
    Ok(Staged::Spawn(built))
}

/// `DESPAWN …`.
pub fn despawn(world: &mut World, scan: &ScanPlan, params: &[Value]) -> Result<ResultSet, Error> {
    stage_despawn(world, scan, params)?.apply(world)
}

/// `DESPAWN …`, its targets picked but not despawned.
pub(crate) fn stage_despawn(world: &World, scan: &ScanPlan, params: &[Value]) -> Result<Staged, Error> {
    let (entities, _) = targets(scan, world, params, &[])?;
    Ok(Staged::Despawn(entities))
}

/// `ADD …`.
pub fn add(world: &mut World, comps: &[ComponentValue], scan: &ScanPlan, params: &[Value]) -> Result<ResultSet, Error> {
    stage_add(world, comps, scan, params)?.apply(world)
}

/// `ADD …`, every value computed and converted but none added.
pub(crate) fn stage_add(
    world: &World,
    comps: &[ComponentValue],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<Staged, Error> {
    let exprs: Vec<&Expr> = comps.iter().flat_map(|c| c.fields.iter().map(|(_, e)| e)).collect();
    let (entities, values) = targets(scan, world, params, &exprs)?;
    // Check every conversion for every target before the first write.
    let mut plans: Vec<(Entity, Vec<NamedValue>)> = Vec::with_capacity(entities.len());
    for (t, e) in entities.into_iter().enumerate() {
        let mut k = 0;
        let mut per_target = Vec::with_capacity(comps.len());
        for c in comps {
            let vs: Vec<Value> =
                (0..c.fields.len()).map(|i| values[k + i].get(t).cloned().unwrap_or(Value::Null)).collect();
            k += c.fields.len();
            per_target.push((c.name.clone(), convert_component(world, c, &vs)?));
        }
        plans.push((e, per_target));
    }
    Ok(Staged::Add(plans))
}

/// `REMOVE …`.
pub fn remove(
    world: &mut World,
    comps: &[(ComponentId, String)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    stage_remove(world, comps, scan, params)?.apply(world)
}

/// `REMOVE …`, its targets picked but nothing removed.
pub(crate) fn stage_remove(
    world: &World,
    comps: &[(ComponentId, String)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<Staged, Error> {
    let (entities, _) = targets(scan, world, params, &[])?;
    Ok(Staged::Remove(entities, comps.iter().map(|(id, _)| *id).collect()))
}

/// `UPDATE C SET …`.
pub fn update(
    world: &mut World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    stage_update(world, component, assignments, scan, params)?.apply(world)
}

/// `UPDATE C SET …`, every new value computed and converted but none written.
pub(crate) fn stage_update(
    world: &World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<Staged, Error> {
    let exprs: Vec<&Expr> = assignments.iter().map(|(_, e)| e).collect();
    let (entities, values) = targets(scan, world, params, &exprs)?;
    let info = world.components().info(component);
    let mut writes: Vec<(Entity, Vec<(usize, FieldValue)>)> = Vec::with_capacity(entities.len());
    for (t, e) in entities.into_iter().enumerate() {
        let mut fields = Vec::with_capacity(assignments.len());
        for (k, (index, expr)) in assignments.iter().enumerate() {
            let field = info.fields().get(*index).ok_or_else(|| Error::internal("field index out of range"))?;
            let v = values[k].get(t).unwrap_or(&Value::Null);
            fields.push((*index, convert_value(info.name(), field, v).map_err(|e| conversion_error(e, expr))?));
        }
        writes.push((e, fields));
    }
    Ok(Staged::Update(component, writes))
}

/// A write failed after every check passed: a bug, reported rather than hidden.
fn write_failed(e: ecsdb_engine::EngineError) -> Error {
    Error::new(ErrorKind::Internal, format!("a write failed after its checks passed: {e}"))
}
