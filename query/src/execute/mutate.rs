//! SPAWN, DESPAWN, ADD and REMOVE, atomically (UPDATE is [`crate::execute::update`]).
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
//!
//! The two phases are separate values (`Staged`) so that systems can check the statements
//! of several systems at once on a shared world and write them later, in order. Writing
//! re-checks what may have changed since: targets that died meanwhile are skipped, and
//! references are checked against the world being written.

use ecsdb_engine::{
    BulkValues, ComponentId, ComponentValues, Entity, FieldValue, ReferenceWrite, Value, World, convert_value,
};

use crate::error::Error;
use crate::execute::outcome::{count, write_failed};
use crate::execute::scan::{Sink, TableCtx, entities_answered, run_scan};
use crate::execute::update::StagedUpdate;
use crate::expr::{Evaluator, NoRows};
use crate::expr::{Expr, ExprKind};
use crate::plan::logical::ComponentValue;
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
            self.values[i].extend(v.into_values());
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

/// The targets of a statement that needs only their set, not their order (`REMOVE`): a
/// sparse set's entities as they are when the set answers the whole scan, else the scan's.
fn target_set(scan: &ScanPlan, world: &World, params: &[Value]) -> Result<Vec<Entity>, Error> {
    match entities_answered(scan, world) {
        Some(entities) => Ok(entities),
        None => Ok(targets(scan, world, params, &[])?.0),
    }
}

fn conversion_error(e: ecsdb_engine::EngineError, at: &Expr) -> Error {
    Error::from(e).with_span(at.span)
}

/// Converts a component value's fields for one target (`value(k)`: the value of its `k`-th
/// field expression), ready for the engine's bulk writes.
fn convert_component<'v>(
    world: &World,
    c: &ComponentValue,
    value: impl Fn(usize) -> &'v Value,
) -> Result<Vec<(usize, FieldValue)>, Error> {
    let info = world.components().info(c.id);
    let mut out = Vec::with_capacity(c.fields.len());
    for (k, (index, expr)) in c.fields.iter().enumerate() {
        let field = info.fields().get(*index).ok_or_else(|| Error::internal("field index out of range"))?;
        out.push((*index, convert_value(info.name(), field, value(k)).map_err(|e| conversion_error(e, expr))?));
    }
    Ok(out)
}

/// The checked values of one SPAWN: its components and their converted fields.
pub struct SpawnValues {
    /// The components, in statement order.
    pub ids: Vec<ComponentId>,
    /// Per component, its converted fields.
    pub fields: Vec<Vec<(usize, FieldValue)>>,
}

impl SpawnValues {
    /// Whether a component is opaque (the engine then refuses to write it).
    pub fn has_opaque(&self, world: &World) -> bool {
        self.ids.iter().any(|&c| world.components().info(c).is_opaque())
    }
}

/// The check phase of `SPAWN …`: every value computed and converted.
pub fn spawn_values(world: &World, comps: &[ComponentValue], params: &[Value]) -> Result<SpawnValues, Error> {
    let ev = Evaluator::new(&NoRows, params);
    let mut fields = Vec::with_capacity(comps.len());
    for c in comps {
        let values: Vec<Value> = c.fields.iter().map(|(_, e)| ev.eval_one(e)).collect::<Result<_, _>>()?;
        fields.push(convert_component(world, c, |k| &values[k])?);
    }
    let ids: Vec<ComponentId> = comps.iter().map(|c| c.id).collect();
    check_spawn_references(world, &ids, &fields)?;
    Ok(SpawnValues { ids, fields })
}

/// Checks the references a SPAWN of components `ids` with `fields` would write.
pub fn check_spawn_references(
    world: &World,
    ids: &[ComponentId],
    fields: &[Vec<(usize, FieldValue)>],
) -> Result<(), Error> {
    let mut refs = Vec::new();
    for (id, f) in ids.iter().zip(fields) {
        reference_writes(world, None, *id, f, &mut refs);
    }
    world.check_reference_writes(&refs)?;
    Ok(())
}

/// The result of a SPAWN.
pub fn spawned(e: Entity) -> ResultSet {
    ResultSet { columns: vec!["entity".into()], rows: vec![vec![Value::Entity(e)]] }
}

/// SPAWNs whose checks passed, written together: the consecutive SPAWNs of a script become
/// one bulk spawn ([`World::spawn_mixed`]), however their components differ.
#[derive(Default)]
pub struct SpawnBatch {
    /// The distinct component lists seen, in statement order.
    sets: Vec<Vec<ComponentId>>,
    /// Per waiting SPAWN, its component list in `sets`.
    order: Vec<u32>,
    /// Every waiting SPAWN's converted fields per component, one SPAWN after another.
    values: ComponentValues,
}

impl SpawnBatch {
    /// Adds a checked SPAWN.
    pub fn push(&mut self, v: SpawnValues) {
        for fields in v.fields {
            self.values.push_component(fields);
        }
        self.push_converted(&v.ids);
    }

    /// The converted fields of the waiting SPAWNs.
    pub(crate) fn values(&self) -> &ComponentValues {
        &self.values
    }

    /// The converted fields of the waiting SPAWNs, to add a SPAWN's
    /// ([`SpawnBatch::push_converted`] then adds the SPAWN).
    pub(crate) fn values_mut(&mut self) -> &mut ComponentValues {
        &mut self.values
    }

    /// Adds a checked SPAWN of components `ids`, whose converted fields were added to
    /// [`SpawnBatch::values_mut`].
    pub(crate) fn push_converted(&mut self, ids: &[ComponentId]) {
        // (Scripts alternate between few component lists: the latest ones are checked first.)
        let set = match self.sets.iter().rposition(|s| s == ids) {
            Some(set) => set,
            None => {
                self.sets.push(ids.to_vec());
                self.sets.len() - 1
            }
        };
        self.order.push(set as u32);
    }

    /// Number of SPAWNs waiting.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Spawns every waiting entity, in order; the batch is empty afterwards.
    pub fn flush(&mut self, world: &mut World) -> Result<Vec<Entity>, Error> {
        if self.order.is_empty() {
            return Ok(Vec::new());
        }
        let sets: Vec<&[ComponentId]> = self.sets.iter().map(Vec::as_slice).collect();
        let spawned = world.spawn_mixed(&sets, &self.order, &mut self.values).map_err(write_failed);
        self.sets.clear();
        self.order.clear();
        // (Emptied by the spawn, but not when it failed.)
        self.values.truncate(0);
        spawned
    }
}

/// A statement's changes, computed and checked from the state when it ran and not yet
/// written: what a system stages until the end of its batch (UPDATE) or phase (the others),
/// and what every statement outside systems writes at once.
pub(crate) enum Staged {
    /// SPAWN: the new entity's components.
    Spawn(SpawnValues),
    /// DESPAWN: the targets (ON DELETE is decided when written).
    Despawn(Vec<Entity>),
    /// ADD: the targets, the components and their converted fields.
    Add { entities: Vec<Entity>, ids: Vec<ComponentId>, fields: BulkValues },
    /// REMOVE: the targets and the components removed.
    Remove(Vec<Entity>, Vec<ComponentId>),
    /// UPDATE: the converted values of every target row.
    Update(StagedUpdate),
}

impl Staged {
    /// How many entities it changes (1 for SPAWN).
    pub(crate) fn len(&self) -> usize {
        match self {
            Staged::Spawn(_) => 1,
            Staged::Despawn(e) | Staged::Remove(e, _) | Staged::Add { entities: e, .. } => e.len(),
            Staged::Update(u) => u.len(),
        }
    }

    /// Whether it is an UPDATE (seen by the systems after it, not staged to the phase's end).
    pub(crate) fn is_update(&self) -> bool {
        matches!(self, Staged::Update(_))
    }

    /// Whether it is an UPDATE rewritten in place when applied: its values are computed then.
    pub(crate) fn is_in_place(&self) -> bool {
        matches!(self, Staged::Update(u) if u.is_in_place())
    }

    /// Writes the changes and returns the statement's result, all or nothing. Targets that
    /// died since the statement ran (a DESPAWN staged earlier in the phase) are skipped.
    pub(crate) fn apply(self, world: &mut World) -> Result<ResultSet, Error> {
        match self {
            Staged::Spawn(v) => {
                let mut refs = Vec::new();
                for (id, f) in v.ids.iter().zip(&v.fields) {
                    reference_writes(world, None, *id, f, &mut refs);
                }
                world.check_reference_writes(&refs)?;
                let e = world.spawn_many(1, &v.ids, v.fields).map_err(write_failed)?;
                Ok(spawned(e[0]))
            }
            Staged::Despawn(mut entities) => {
                entities.retain(|e| world.is_alive(*e));
                let n = world.despawn_many(&entities).map_err(|e| match e {
                    ecsdb_engine::EngineError::Constraint(_) => Error::from(e),
                    e => write_failed(e),
                })?;
                Ok(count(n))
            }
            Staged::Add { mut entities, ids, mut fields } => {
                if entities.iter().any(|e| !world.is_alive(*e)) {
                    if let BulkValues::PerTarget(per_target) = &mut fields {
                        let per = ids.len();
                        let mut kept = Vec::with_capacity(per_target.len());
                        for (e, f) in entities.iter().zip(per_target.chunks_mut(per)) {
                            if world.is_alive(*e) {
                                kept.extend(f.iter_mut().map(std::mem::take));
                            }
                        }
                        *per_target = kept;
                    }
                    entities.retain(|e| world.is_alive(*e));
                }
                // Checked when the statement ran; again here, against the world being written
                // (a target may have died since, or a loop formed).
                check_add_references(world, &entities, &ids, &fields)?;
                write_add(world, &entities, &ids, fields)
            }
            Staged::Remove(mut entities, ids) => {
                entities.retain(|e| world.is_alive(*e));
                Ok(count(world.remove_many(&entities, &ids).map_err(write_failed)?))
            }
            Staged::Update(u) => u.apply(world),
        }
    }
}

/// `SPAWN …`: one new entity.
pub fn spawn(world: &mut World, comps: &[ComponentValue], params: &[Value]) -> Result<ResultSet, Error> {
    stage_spawn(world, comps, params)?.apply(world)
}

/// `SPAWN …`, checked but not written.
pub(crate) fn stage_spawn(world: &World, comps: &[ComponentValue], params: &[Value]) -> Result<Staged, Error> {
    spawn_values(world, comps, params).map(Staged::Spawn)
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
    // (Written at once: nothing changed since the checks, so they are not run again.)
    match stage_add(world, comps, scan, params)? {
        Staged::Add { entities, ids, fields } => write_add(world, &entities, &ids, fields),
        _ => Err(Error::internal("ADD staged as another statement")),
    }
}

/// `ADD …`, every value computed and converted but nothing added.
pub(crate) fn stage_add(
    world: &World,
    comps: &[ComponentValue],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<Staged, Error> {
    // Values that are the same for every target (literals and parameters, the usual `ADD
    // Burning {t: 1} WHERE …`) are computed and converted once, not per row.
    let constant = |e: &Expr| matches!(e.kind, ExprKind::Literal(_) | ExprKind::Param(_));
    let all_constant = comps.iter().all(|c| c.fields.iter().all(|(_, e)| constant(e)));
    let exprs: Vec<&Expr> =
        if all_constant { Vec::new() } else { comps.iter().flat_map(|c| c.fields.iter().map(|(_, e)| e)).collect() };
    let (entities, values) = targets(scan, world, params, &exprs)?;
    // Check every conversion for every target before the first write. Components given
    // without fields (tags, or every field zero) take their zero values with nothing built
    // per target; constant values are converted once and shared by every target.
    let fields = if comps.iter().all(|c| c.fields.is_empty()) || entities.is_empty() {
        BulkValues::Zero
    } else if all_constant {
        let ev = Evaluator::new(&NoRows, params);
        let mut once = Vec::with_capacity(comps.len());
        for c in comps {
            let values: Vec<Value> = c.fields.iter().map(|(_, e)| ev.eval_one(e)).collect::<Result<_, _>>()?;
            once.push(convert_component(world, c, |k| &values[k])?);
        }
        BulkValues::Same(once)
    } else {
        let mut per_target = Vec::with_capacity(entities.len() * comps.len());
        for t in 0..entities.len() {
            let mut k = 0;
            for c in comps {
                per_target.push(convert_component(world, c, |i| values[k + i].get(t).unwrap_or(&Value::Null))?);
                k += c.fields.len();
            }
        }
        BulkValues::PerTarget(per_target)
    };
    // References too, as SPAWN and UPDATE check theirs: a refusal is this statement's, so in
    // a system it ends the block.
    let ids: Vec<ComponentId> = comps.iter().map(|c| c.id).collect();
    check_add_references(world, &entities, &ids, &fields)?;
    Ok(Staged::Add { entities, ids, fields })
}

/// Checks the references an ADD of components `ids` to `entities` would write, on the
/// statement's final state: each target live or null, no `ACYCLIC` loop.
fn check_add_references(
    world: &World,
    entities: &[Entity],
    ids: &[ComponentId],
    fields: &BulkValues,
) -> Result<(), Error> {
    // A tag, or components without reference fields (the common ADD): nothing to check.
    let declares =
        |id: &ComponentId| (0..world.components().info(*id).fields().len()).any(|f| world.reference(*id, f).is_some());
    if !ids.iter().any(declares) {
        return Ok(());
    }
    let mut refs = Vec::new();
    let mut check = |e: Entity, per_component: &[Vec<(usize, FieldValue)>]| {
        for (id, f) in ids.iter().zip(per_component) {
            reference_writes(world, Some(e), *id, f, &mut refs);
        }
    };
    match fields {
        // Zero values write null references: nothing to check.
        BulkValues::Zero => {}
        BulkValues::Same(once) => entities.iter().for_each(|&e| check(e, once)),
        BulkValues::PerTarget(v) => entities.iter().zip(v.chunks(ids.len().max(1))).for_each(|(&e, f)| check(e, f)),
    }
    world.check_reference_writes(&refs)?;
    Ok(())
}

/// Writes a checked ADD.
fn write_add(
    world: &mut World,
    entities: &[Entity],
    ids: &[ComponentId],
    fields: BulkValues,
) -> Result<ResultSet, Error> {
    world.insert_many(entities, ids, fields).map_err(write_failed)?;
    Ok(count(entities.len()))
}

/// `REMOVE …`.
pub fn remove(
    world: &mut World,
    comps: &[(ComponentId, String)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<ResultSet, Error> {
    // (Written at once: every target is live, so they are not checked again.)
    let ids: Vec<ComponentId> = comps.iter().map(|(id, _)| *id).collect();
    let entities = target_set(scan, world, params)?;
    Ok(count(world.remove_many(&entities, &ids).map_err(write_failed)?))
}

/// `REMOVE …`, its targets picked but nothing removed.
pub(crate) fn stage_remove(
    world: &World,
    comps: &[(ComponentId, String)],
    scan: &ScanPlan,
    params: &[Value],
) -> Result<Staged, Error> {
    let entities = target_set(scan, world, params)?;
    Ok(Staged::Remove(entities, comps.iter().map(|(id, _)| *id).collect()))
}

/// Appends the reference writes among `fields` (converted values of component `id`, by field
/// position) to `out`: only fields declared `REFERENCES`. `entity` is the referrer (`None` for
/// a new entity). A reference field left out is written as the null entity: nothing to check.
pub fn reference_writes(
    world: &World,
    entity: Option<Entity>,
    id: ComponentId,
    fields: &[(usize, FieldValue)],
    out: &mut Vec<ReferenceWrite>,
) {
    for (field, v) in fields {
        if world.reference(id, *field).is_none() {
            continue;
        }
        let target = v.as_entity().unwrap_or(Entity::NULL);
        out.push(ReferenceWrite { entity, component: id, field: *field, target });
    }
}
