//! SPAWN, DESPAWN, ADD, REMOVE and UPDATE, atomically.
//!
//! Every statement runs in two phases. **Check**: find every target (exactly as SELECT would
//! select it), compute every new value from the state before the statement, and convert each
//! value to its field's type — stale entities, type errors and out-of-range values all surface
//! here, with the span of the text responsible. **Write**: apply the changes through the
//! engine's infallible-after-checks paths. A statement therefore changes everything or nothing.
//!
//! References (`REFERENCES`) are checked for the whole statement at once, on its final state
//! ([`World::check_reference_writes`]): each target live or null, no `ACYCLIC` loop. DESPAWN
//! applies `ON DELETE` through [`World::despawn_many`], which decides everything (cascades,
//! `RESTRICT`) before its first change; its count includes the cascades.

use ecsdb_engine::{convert_value, ComponentId, Entity, FieldValue, ReferenceWrite, Value, World};

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

/// `SPAWN …`: one new entity.
pub fn spawn(world: &mut World, comps: &[ComponentValue], params: &[Value]) -> Result<ResultSet, Error> {
    let ev = Evaluator::new(&NoRows, params);
    let mut built: Vec<(String, Vec<(String, Value)>)> = Vec::with_capacity(comps.len());
    for c in comps {
        let values: Vec<Value> = c.fields.iter().map(|(_, e)| ev.eval_one(e)).collect::<Result<_, _>>()?;
        built.push((c.name.clone(), convert_component(world, c, &values)?));
    }
    let fields: Vec<Vec<(&str, Value)>> =
        built.iter().map(|(_, fs)| fs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect()).collect();
    let spec: Vec<(&str, &[(&str, Value)])> =
        built.iter().zip(&fields).map(|((name, _), fs)| (name.as_str(), fs.as_slice())).collect();
    let e = world.spawn_values(&spec)?;
    Ok(ResultSet { columns: vec!["entity".into()], rows: vec![vec![Value::Entity(e)]] })
}

/// `DESPAWN …`.
pub fn despawn(world: &mut World, scan: &ScanPlan, params: &[Value]) -> Result<ResultSet, Error> {
    let (entities, _) = targets(scan, world, params, &[])?;
    let n = world.despawn_many(&entities).map_err(|e| match e {
        ecsdb_engine::EngineError::Constraint(_) => Error::from(e),
        e => write_failed(e),
    })?;
    Ok(count(n))
}

/// `ADD …`.
pub fn add(world: &mut World, comps: &[ComponentValue], scan: &ScanPlan, params: &[Value]) -> Result<ResultSet, Error> {
    let exprs: Vec<&Expr> = comps.iter().flat_map(|c| c.fields.iter().map(|(_, e)| e)).collect();
    let (entities, values) = targets(scan, world, params, &exprs)?;
    // Check every conversion for every target before the first write.
    let mut plans: Vec<Vec<NamedValue>> = Vec::with_capacity(entities.len());
    for t in 0..entities.len() {
        let mut k = 0;
        let mut per_target = Vec::with_capacity(comps.len());
        for c in comps {
            let vs: Vec<Value> =
                (0..c.fields.len()).map(|i| values[k + i].get(t).cloned().unwrap_or(Value::Null)).collect();
            k += c.fields.len();
            per_target.push((c.name.clone(), convert_component(world, c, &vs)?));
        }
        plans.push(per_target);
    }
    let mut refs = Vec::new();
    for (e, per_target) in entities.iter().zip(&plans) {
        for (c, (_, fields)) in comps.iter().zip(per_target) {
            // A reference field left out is written as the null entity, which needs no check.
            let given = c.fields.iter().zip(fields).map(|((index, _), (_, v))| (*index, v));
            reference_writes(world, *e, c.id, given, &mut refs);
        }
    }
    world.check_reference_writes(&refs)?;
    for (e, per_target) in entities.iter().zip(&plans) {
        let fields: Vec<Vec<(&str, Value)>> =
            per_target.iter().map(|(_, fs)| fs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect()).collect();
        let spec: Vec<(&str, &[(&str, Value)])> =
            per_target.iter().zip(&fields).map(|((name, _), fs)| (name.as_str(), fs.as_slice())).collect();
        world.insert_values_unchecked(*e, &spec).map_err(write_failed)?;
    }
    Ok(count(entities.len()))
}

/// `REMOVE …`.
pub fn remove(
    world: &mut World,
    comps: &[(ComponentId, String)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    let (entities, _) = targets(scan, world, params, &[])?;
    let mut affected = 0;
    for e in &entities {
        let mut any = false;
        for (id, _) in comps {
            any |= world.remove_by_id(*e, *id).map_err(write_failed)?;
        }
        affected += any as usize;
    }
    Ok(count(affected))
}

/// `UPDATE C SET …`.
pub fn update(
    world: &mut World,
    component: ComponentId,
    assignments: &[(usize, Expr)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    let exprs: Vec<&Expr> = assignments.iter().map(|(_, e)| e).collect();
    let (entities, values) = targets(scan, world, params, &exprs)?;
    let info = world.components().info(component);
    let mut writes: Vec<Vec<(usize, FieldValue)>> = Vec::with_capacity(entities.len());
    for t in 0..entities.len() {
        let mut fields = Vec::with_capacity(assignments.len());
        for (k, (index, expr)) in assignments.iter().enumerate() {
            let field = info.fields().get(*index).ok_or_else(|| Error::internal("field index out of range"))?;
            let v = values[k].get(t).unwrap_or(&Value::Null);
            fields.push((*index, convert_value(info.name(), field, v).map_err(|e| conversion_error(e, expr))?));
        }
        writes.push(fields);
    }
    let mut refs = Vec::new();
    for (t, e) in entities.iter().enumerate() {
        let given =
            assignments.iter().enumerate().map(|(k, (index, _))| (*index, values[k].get(t).unwrap_or(&Value::Null)));
        reference_writes(world, *e, component, given, &mut refs);
    }
    world.check_reference_writes(&refs)?;
    for (e, fields) in entities.iter().zip(writes) {
        world.write_fields_unchecked(*e, component, fields).map_err(write_failed)?;
    }
    Ok(count(entities.len()))
}

/// Appends the reference writes among `fields` ((field position, value) of component `id` on
/// `entity`) to `out`: only fields declared `REFERENCES`, with entity or null values (the
/// conversions have been checked).
fn reference_writes<'v>(
    world: &World,
    entity: Entity,
    id: ComponentId,
    fields: impl Iterator<Item = (usize, &'v Value)>,
    out: &mut Vec<ReferenceWrite>,
) {
    for (field, v) in fields {
        if world.reference(id, field).is_none() {
            continue;
        }
        let target = match v {
            Value::Entity(t) => *t,
            _ => Entity::NULL,
        };
        out.push(ReferenceWrite { entity: Some(entity), component: id, field, target });
    }
}

/// A write failed after every check passed: a bug, reported rather than hidden.
fn write_failed(e: ecsdb_engine::EngineError) -> Error {
    Error::new(ErrorKind::Internal, format!("a write failed after its checks passed: {e}"))
}
