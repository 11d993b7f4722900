//! Mutation statements (SPAWN, DESPAWN, ADD, REMOVE, UPDATE) as text, and their effect on the
//! model, computed from the parsed statement by the reference evaluator's row selection.
//!
//! Choices where the spec leaves room:
//! - REMOVE names one component (with several, "implies the term C" is ambiguous);
//! - an entity target (`UPDATE C … FROM 12v0`) is affected only if it has what a filter would
//!   require (C, and the components named in the statement); else the count is 0;
//! - a value of static type null (the literal) stored into a non-entity field is a type error
//!   even when no entity is targeted (the binder checks types before execution): the generator
//!   keeps `null` literals out of UPDATE values of non-entity fields;
//! - ADD's component values are converted for the targets: a value that does not fit its field
//!   (`Level {value: 3.5}`) is an error only when some entity is targeted; a value whose type the
//!   field cannot hold (`Name {value: 3.5}`) is a type error whatever the targets;
//! - with several errors in one statement, unknown names come first, then a stale entity
//!   target, then values that do not fit, then the checks of declared references (a stale
//!   target, then an `ACYCLIC` loop), made on the statement's final state;
//! - DESPAWN applies the declared `ON DELETE` policies (`relations::despawn`).

use ecsdb::query::parse::{ComponentValue, Statement, Target};
use ecsdb::{Entity, FieldType, Value};

use super::r#gen::{Gen, Ty};
use super::model::{Fields, Model};
use super::reference::{RefError, Reference};
use super::relations::{self, Write};
use super::rng::Rng;
use super::world_gen::{components_text, field_value, literal};

/// Generates one mutation statement.
pub fn mutation(g: &mut Gen, model: &Model, dead: &[Entity]) -> String {
    let live: Vec<Entity> = model.entities.keys().copied().collect();
    let mut rng = g.rng.fork();
    g.allow_params = false;
    let target_entity = |rng: &mut Rng, g: &mut Gen| -> String {
        if live.is_empty() || rng.chance(0.08) { g.entity_lit() } else { rng.pick(&live).to_string() }
    };
    // `[FROM …] [WHERE …]`; `own` is the statement's component (UPDATE C, REMOVE C), which FROM
    // sometimes marks too (`!C`, `?C`, `C | X`: the statement still implies the term C).
    let filter = |rng: &mut Rng, g: &mut Gen, own: Option<&str>| -> String {
        let mut out = String::new();
        if let (Some(c), true) = (own, rng.chance(0.15)) {
            let other = &rng.pick(&model.schema.comps).name;
            let term = match rng.below(4) {
                0 => format!("!{c}"),
                1 => format!("?{c}"),
                2 if other != c => format!("{c} | {other}"),
                _ => c.to_string(),
            };
            out += &format!(" FROM {term}");
        } else if rng.chance(0.3) {
            let c = rng.pick(&model.schema.comps).name.clone();
            out += &format!(" FROM {}{c}", if rng.chance(0.3) { "!" } else { "" });
        }
        if rng.chance(0.85) {
            out += &format!(" WHERE {}", g.cond(rng.range(1, 2) as u32).text);
        }
        out
    };
    // Component values with literals; now and then a value that does not fit its field.
    let values = |rng: &mut Rng, n: usize| -> String {
        let mut comps = Vec::new();
        let mut names: Vec<usize> = (0..model.schema.comps.len()).collect();
        rng.shuffle(&mut names);
        for &i in names.iter().take(n) {
            let c = &model.schema.comps[i];
            let mut fields = Vec::new();
            for (f, ty) in &c.fields {
                if rng.chance(0.85) {
                    let v = if rng.chance(0.04) {
                        match rng.below(4) {
                            0 => Value::Float(3.5),
                            1 => Value::Int(300),
                            2 => Value::Str("x".into()),
                            _ => Value::Int(70000),
                        }
                    } else {
                        field_value(rng, &c.name, f, *ty, &live, dead)
                    };
                    fields.push((f.clone(), v));
                }
            }
            comps.push((c.name.clone(), fields));
        }
        components_text(&comps)
    };
    match rng.weighted(&[18, 8, 4, 12, 7, 8, 6, 22, 6, 3]) {
        0 => {
            let n = rng.below(4);
            if n == 0 { "SPAWN".into() } else { format!("SPAWN {}", values(&mut rng, n)) }
        }
        1 => format!("DESPAWN {}", target_entity(&mut rng, g)),
        2 => {
            // Selective, so the world is not emptied.
            format!("DESPAWN WHERE Level.value > {} AND {}", rng.range(20, 30), g.cond(1).text)
        }
        3 => {
            let n = rng.range(1, 2) as usize;
            format!("ADD {} TO {}", values(&mut rng, n), target_entity(&mut rng, g))
        }
        4 => format!("ADD {}{}", values(&mut rng, 1), filter(&mut rng, g, None)),
        5 => {
            let c = rng.pick(&model.schema.comps).name.clone();
            format!("REMOVE {c} FROM {}", target_entity(&mut rng, g))
        }
        6 => {
            let c = rng.pick(&model.schema.comps).name.clone();
            format!("REMOVE {c}{}", filter(&mut rng, g, Some(&c)))
        }
        7 | 8 => {
            let with_fields: Vec<_> = model.schema.comps.iter().filter(|c| !c.is_tag()).collect();
            let c = (*rng.pick(&with_fields)).clone();
            g.focus(&[&c.name]);
            let mut fields = c.fields.clone();
            rng.shuffle(&mut fields);
            let n = rng.range(1, fields.len() as i64) as usize;
            let mut sets = Vec::new();
            for (f, ty) in fields.iter().take(n) {
                let ty = Ty::of_field_type(*ty);
                // A `null`-typed value (the literal) into a non-entity field is a static type
                // error even when nothing is targeted: leave nulls to run time.
                let without_null = |g: &mut Gen, depth: u32| loop {
                    let e = g.expr(ty, depth).text;
                    if ty == Ty::Ent || !e.to_ascii_lowercase().contains("null") {
                        break e;
                    }
                };
                let e = if rng.chance(0.5) {
                    // Mostly the field itself, changed a little: the update usually fits.
                    match ty {
                        Ty::Int => format!("{}.{f} + {}", c.name, rng.range(-3, 3)),
                        Ty::Float => {
                            format!("{}.{f} * {}", c.name, literal(&Value::Float(rng.range(-4, 4) as f64 / 2.0)))
                        }
                        Ty::Str => format!("lower({}.{f}) || '{}'", c.name, rng.pick(&["", "x", "!"])),
                        Ty::Bool => format!("NOT {}.{f}", c.name),
                        _ => without_null(g, 0),
                    }
                } else {
                    let depth = rng.range(0, 2) as u32;
                    without_null(g, depth)
                };
                sets.push(format!("{f} = {e}"));
            }
            let target = if rng.weighted(&[3, 1]) == 1 {
                let with: Vec<Entity> = live.iter().copied().filter(|e| model.has(*e, &c.name)).collect();
                if with.is_empty() { filter(&mut rng, g, Some(&c.name)) } else { format!(" FROM {}", rng.pick(&with)) }
            } else {
                filter(&mut rng, g, Some(&c.name))
            };
            format!("UPDATE {} SET {}{target}", c.name, sets.join(", "))
        }
        _ => {
            // Unknown names.
            match rng.below(3) {
                0 => "SPAWN Helth {hp: 1}".into(),
                1 => format!("ADD Health {{hp: 1, mx: 2}} TO {}", target_entity(&mut rng, g)),
                _ => "UPDATE Health SET hpp = 1".into(),
            }
        }
    }
}

/// What a mutation does to the model.
#[derive(Debug)]
pub enum Effect {
    /// A SPAWN: the entity gets these components (the engine picks the id).
    Spawn(Vec<(String, Fields)>),
    /// Affected `count` entities; the new model.
    Count(usize, Box<Model>),
}

/// Whether a value of this type may go into a field of type `ty` at all (its value may still
/// not fit: `3.5` into an `i32`, `300` into a `u8`). A mismatch is a type error found before
/// execution, whatever the statement targets.
fn storable_type(ty: FieldType, v: &Value) -> bool {
    match v {
        Value::Int(_) | Value::Float(_) => ty.is_numeric(),
        Value::Bool(_) => ty == FieldType::Bool,
        Value::Str(_) => ty == FieldType::String,
        Value::Entity(_) | Value::Null => ty == FieldType::Entity,
        Value::Vec2(_) => ty == FieldType::Vec2,
        Value::Vec3(_) => ty == FieldType::Vec3,
        Value::Object(_) => false,
    }
}

/// The checks made before execution on component values, in text order: unknown components
/// and fields, and values of a type the field cannot hold.
pub fn check_names(model: &Model, r: &Reference, comps: &[ComponentValue]) -> Result<(), RefError> {
    for cv in comps {
        let name = &cv.component.name;
        let def = model.schema.get(name).ok_or_else(|| RefError::Unknown("component", name.clone()))?;
        for fi in &cv.fields {
            let ty = def
                .field(&fi.field.name)
                .ok_or_else(|| RefError::Unknown("field", format!("{name}.{}", fi.field.name)))?;
            let v = r.eval_constant(&fi.value)?;
            if !storable_type(ty, &v) {
                return Err(RefError::Store(format!("{name}.{}: a {} cannot hold {v:?}", fi.field.name, ty.name())));
            }
        }
    }
    Ok(())
}

pub fn build_values(model: &Model, r: &Reference, comps: &[ComponentValue]) -> Result<Vec<(String, Fields)>, RefError> {
    check_names(model, r, comps)?;
    let mut out: Vec<(String, Fields)> = Vec::new();
    for cv in comps {
        let name = &cv.component.name;
        let mut given = Vec::new();
        for fi in &cv.fields {
            given.push((fi.field.name.clone(), r.eval_constant(&fi.value)?));
        }
        if out.iter().any(|(c, _)| c == name) {
            return Err(RefError::Invalid(format!("{name} given twice")));
        }
        out.push((name.clone(), model.build(name, &given).map_err(RefError::Store)?));
    }
    Ok(out)
}

/// Every field value of `values` as written to `entity` (`None`: a new one), for the
/// reference checks (which skip the fields that are not declared references).
pub fn writes_of(entity: Option<Entity>, values: &[(String, Fields)]) -> Vec<Write> {
    let mut out = Vec::new();
    for (c, fields) in values {
        for (f, v) in fields {
            out.push((entity, c.clone(), f.clone(), v.clone()));
        }
    }
    out
}

/// The entities a statement targets.
pub fn targets(
    model: &Model,
    r: &Reference,
    target: &Target,
    implied: &[String],
    more: &[&ecsdb::query::parse::Expr],
) -> Result<Vec<Entity>, RefError> {
    match target {
        // One entity, which must be alive; it is affected only if it has what the statement
        // requires (the implied term, and components named in its expressions), as with a
        // filter. (The spec leaves this open; it is how the engine reads it, and consistent
        // with "removing a component an entity lacks … does not count it".)
        Target::Entity(x) => match r.eval_constant(x)? {
            Value::Entity(e) if model.is_alive(e) => {
                let matching = r.targets(&[], None, implied, more)?;
                Ok(if matching.contains(&e) { vec![e] } else { Vec::new() })
            }
            Value::Entity(e) => Err(RefError::Stale(e)),
            other => Err(RefError::Invalid(format!("entity target {other:?}"))),
        },
        Target::Filter(f) => r.targets(&f.from, f.where_.as_ref(), implied, more),
    }
}

/// The effect of `stmt` on `model` (computed from the state before the statement).
pub fn effect(model: &Model, stmt: &Statement) -> Result<Effect, RefError> {
    effect_with(model, stmt, &[])
}

/// [`effect`] with bound parameters (`("1", v)` for `$1`, `("p", v)` for `$p`).
pub fn effect_with(model: &Model, stmt: &Statement, params: &[(String, Value)]) -> Result<Effect, RefError> {
    let r = Reference::with_params(model, params);
    let mut next = model.clone();
    let count = match stmt {
        Statement::Spawn(s) => {
            let values = build_values(model, &r, &s.components)?;
            relations::check_writes(model, model, &writes_of(None, &values))?;
            return Ok(Effect::Spawn(values));
        }
        Statement::Despawn(d) => {
            let ts = targets(model, &r, &d.target, &[], &[])?;
            let (after, gone) = relations::despawn(model, &ts)?;
            next = after;
            gone
        }
        Statement::Add(a) => {
            // With both a stale target and a value that does not fit, either error is right;
            // the engine reports unknown names, then the stale target, then the value.
            // Values are converted for the targets: with none, a value that does not fit is no
            // error (the spec only asks that nothing be written; this is the engine's reading).
            check_names(model, &r, &a.components)?;
            let ts = targets(model, &r, &a.target, &[], &[])?;
            if ts.is_empty() {
                return Ok(Effect::Count(0, Box::new(next)));
            }
            let values = build_values(model, &r, &a.components)?;
            let mut writes = Vec::new();
            for e in &ts {
                let entry = next.entities.get_mut(e).expect("target alive");
                for (c, fields) in &values {
                    entry.insert(c.clone(), fields.clone());
                }
                writes.extend(writes_of(Some(*e), &values));
            }
            relations::check_writes(model, &next, &writes)?;
            ts.len()
        }
        Statement::Remove(rm) => {
            let names: Vec<String> = rm.components.iter().map(|c| c.name.clone()).collect();
            for n in &names {
                if model.schema.get(n).is_none() {
                    return Err(RefError::Unknown("component", n.clone()));
                }
            }
            let ts = targets(model, &r, &rm.target, &names, &[])?;
            let mut n = 0;
            for e in &ts {
                let entry = next.entities.get_mut(e).expect("target alive");
                let mut removed = false;
                for c in &names {
                    removed |= entry.remove(c).is_some();
                }
                n += removed as usize;
            }
            n
        }
        Statement::Update(u) => {
            let comp = u.component.name.clone();
            let def = model.schema.get(&comp).ok_or_else(|| RefError::Unknown("component", comp.clone()))?.clone();
            for a in &u.assignments {
                if def.field(&a.field.name).is_none() {
                    return Err(RefError::Unknown("field", format!("{comp}.{}", a.field.name)));
                }
            }
            let more: Vec<&ecsdb::query::parse::Expr> = u.assignments.iter().map(|a| &a.value).collect();
            let ts = targets(model, &r, &u.target, std::slice::from_ref(&comp), &more)?;
            // Every new value first, from the old state; then the writes.
            let mut writes = Vec::new();
            for e in &ts {
                let comps = &model.entities[e];
                let row = super::reference::Row { e: *e, comps };
                for a in &u.assignments {
                    let v = r.eval_row(&a.value, row)?;
                    let ty = def.field(&a.field.name).expect("checked");
                    let stored = super::model::store(ty, &v)
                        .ok_or_else(|| RefError::Store(format!("{comp}.{} = {v:?}", a.field.name)))?;
                    writes.push((*e, a.field.name.clone(), stored));
                }
            }
            let mut checked: Vec<Write> = Vec::new();
            for (e, f, v) in writes {
                let fields = next.entities.get_mut(&e).expect("alive").get_mut(&comp).expect("has it");
                fields.iter_mut().find(|(n, _)| *n == f).expect("field").1 = v.clone();
                checked.push((Some(e), comp.clone(), f, v));
            }
            relations::check_writes(model, &next, &checked)?;
            ts.len()
        }
        other => return Err(RefError::Invalid(format!("not a mutation: {other:?}"))),
    };
    Ok(Effect::Count(count, Box::new(next)))
}
