//! Random worlds: the schema defined through `CREATE COMPONENT` (`ChildOf` and `Link` are
//! `STORAGE SPARSE` in some worlds; with [`Storage::AllSparse`] every component is, and with
//! [`Storage::MovedToSparse`] every one is moved there by `ALTER COMPONENT … SET STORAGE
//! SPARSE` once the world is built), entities spawned with random component subsets and values — through `SPAWN`
//! text and through the engine API, in some worlds with ids spread over several skip-index
//! blocks — some despawned and their ids recycled, some moved between archetypes by adding
//! and removing components. Every step is applied to the [`Model`] as well, from the values
//! written.
//!
//! Then the links between entities ([`link_entities`]): `ChildOf.parent` forests several
//! levels deep and `Link.to` edges, declared `REFERENCES` (some `ON DELETE` policy, sometimes
//! `ACYCLIC`) in some worlds and plain entity fields in others; loops where nothing forbids
//! them, null targets, stale targets (written directly into plain fields, left behind by
//! despawning `NO ACTION` targets), and despawns that apply the policies.

use ecsdb::query::Database;
use ecsdb::{EngineError, Entity, FieldType, OnDelete, Value};

use super::r#gen::{NAMES, TEAMS};
use super::model::{Model, RefDecl, Schema};
use super::reference::RefError;
use super::relations;
use super::rng::{Rng, mix};

/// A database and the model of the same data.
pub struct TestWorld {
    pub db: Database,
    pub model: Model,
    /// Entities that were alive once (stale handles for literals).
    pub dead: Vec<Entity>,
}

/// How often an entity gets each component.
fn presence(name: &str) -> f64 {
    match name {
        "Position" | "Health" => 0.6,
        "Team" | "Level" => 0.5,
        "Velocity" | "Name" | "Score" | "Flags" => 0.4,
        "Cell" | "Player" | "Monster" => 0.3,
        // Given structure afterwards by `link_entities`.
        "ChildOf" | "Link" => 0.0,
        _ => 0.2,
    }
}

/// A value for a field, as written (the model stores what the engine reads back).
pub fn field_value(rng: &mut Rng, comp: &str, field: &str, ty: FieldType, live: &[Entity], dead: &[Entity]) -> Value {
    let half = |rng: &mut Rng, lo: i64, hi: i64| rng.range(lo * 2, hi * 2) as f64 / 2.0;
    match ty {
        FieldType::Bool => Value::Bool(rng.chance(0.5)),
        FieldType::F32 => match rng.below(10) {
            0 => Value::Float(0.0),
            1 => Value::Float(*rng.pick(&[0.1, -1.75, 3.3, 1e-3, 100.25, -0.5, -0.0])),
            2 => Value::Int(rng.range(-20, 20)),
            _ => Value::Float(half(rng, -20, 20)),
        },
        FieldType::F64 => match rng.below(6) {
            0 => Value::Float(1.0 / 3.0),
            _ => Value::Float(rng.range(-40, 40) as f64 / 4.0),
        },
        FieldType::String if comp == "Team" => Value::Str(rng.pick(&TEAMS).to_string()),
        FieldType::String => Value::Str(rng.pick(&NAMES).to_string()),
        FieldType::I32 => Value::Int(rng.range(-5, 30)),
        FieldType::I64 => {
            Value::Int(if rng.chance(0.1) { rng.range(-1_000_000, 1_000_000) } else { rng.range(-1000, 1000) })
        }
        FieldType::I16 => Value::Int(rng.range(-10, 10)),
        FieldType::U8 => Value::Int(if rng.chance(0.5) { *rng.pick(&[0, 1, 7, 255]) } else { rng.range(0, 255) }),
        FieldType::Entity => match rng.below(10) {
            0..=3 => Value::Null,
            4..=8 if !live.is_empty() => Value::Entity(*rng.pick(live)),
            _ if !dead.is_empty() => Value::Entity(*rng.pick(dead)),
            _ => Value::Null,
        },
        FieldType::Vec2 => Value::Vec2([half(rng, -10, 10), half(rng, -10, 10)]),
        FieldType::Vec3 => Value::Vec3([half(rng, -10, 10), half(rng, -10, 10), half(rng, -10, 10)]),
        other => panic!("no generator for {other:?} ({comp}.{field})"),
    }
}

/// A value as a literal of the language.
pub fn literal(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Str(s) => {
            let mut out = String::from("'");
            for c in s.chars() {
                if c == '\'' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('\'');
            out
        }
        Value::Entity(e) => e.to_string(),
        Value::Vec2([a, b]) => format!("[{a:?}, {b:?}]"),
        Value::Vec3([a, b, c]) => format!("[{a:?}, {b:?}, {c:?}]"),
        Value::Object(_) => panic!("no literal for objects"),
    }
}

/// Random component values for a new entity: `(component, given fields)`; fields left out
/// take their zero value.
pub fn random_components(rng: &mut Rng, model: &Model, dead: &[Entity]) -> Vec<(String, Vec<(String, Value)>)> {
    let live: Vec<Entity> = model.entities.keys().copied().collect();
    let mut out = Vec::new();
    for c in &model.schema.comps {
        if !rng.chance(presence(&c.name)) {
            continue;
        }
        let mut fields = Vec::new();
        for (f, ty) in &c.fields {
            if rng.chance(0.93) {
                fields.push((f.clone(), field_value(rng, &c.name, f, *ty, &live, dead)));
            }
        }
        rng.shuffle(&mut fields);
        out.push((c.name.clone(), fields));
    }
    rng.shuffle(&mut out);
    out
}

/// `C {f: v, …}, …` as written in SPAWN and ADD.
pub fn components_text(comps: &[(String, Vec<(String, Value)>)]) -> String {
    let parts: Vec<String> = comps
        .iter()
        .map(|(c, fields)| {
            if fields.is_empty() && c.len() % 2 == 0 {
                c.clone()
            } else {
                let fs: Vec<String> = fields.iter().map(|(f, v)| format!("{f}: {}", literal(v))).collect();
                format!("{c} {{{}}}", fs.join(", "))
            }
        })
        .collect();
    parts.join(", ")
}

/// Applies `SPAWN`-like component values to the model entity `e` (adding or overwriting).
pub fn model_insert(model: &mut Model, e: Entity, comps: &[(String, Vec<(String, Value)>)]) -> Result<(), String> {
    let mut built = Vec::new();
    for (c, fields) in comps {
        built.push((c.clone(), model.build(c, fields)?));
    }
    let entry = model.entities.entry(e).or_default();
    for (c, fields) in built {
        entry.insert(c, fields);
    }
    Ok(())
}

fn exec(db: &mut Database, text: &str) -> Result<ecsdb::query::ResultSet, String> {
    db.execute(text, ()).map_err(|e| format!("`{text}` failed: {} error: {}", e.kind.as_str(), e.message))
}

fn spawned_entity(rs: &ecsdb::query::ResultSet, text: &str) -> Result<Entity, String> {
    match rs.rows.as_slice() {
        [row] if rs.columns == ["entity"] => match row.as_slice() {
            [Value::Entity(e)] => Ok(*e),
            other => Err(format!("`{text}` returned {other:?}, expected one entity")),
        },
        _ => Err(format!("`{text}` returned columns {:?} and {} rows, expected one `entity`", rs.columns, rs.len())),
    }
}

/// Spawns one entity with random components, through text or the engine API.
pub fn spawn_random(rng: &mut Rng, w: &mut TestWorld) -> Result<Entity, String> {
    // A few entities have no component at all.
    let comps = if rng.chance(0.03) { Vec::new() } else { random_components(rng, &w.model, &w.dead) };
    let e = if rng.chance(0.5) {
        let text = if comps.is_empty() { "SPAWN".to_string() } else { format!("SPAWN {}", components_text(&comps)) };
        let rs = exec(&mut w.db, &text)?;
        spawned_entity(&rs, &text)?
    } else {
        let owned: Vec<(&str, Vec<(&str, Value)>)> = comps
            .iter()
            .map(|(c, fs)| (c.as_str(), fs.iter().map(|(f, v)| (f.as_str(), v.clone())).collect()))
            .collect();
        let args: Vec<(&str, &[(&str, Value)])> = owned.iter().map(|(c, fs)| (*c, fs.as_slice())).collect();
        w.db.world_mut().spawn_values(&args).map_err(|e| format!("spawn_values({comps:?}) failed: {e}"))?
    };
    if w.model.is_alive(e) {
        return Err(format!("spawn returned {e}, which is already alive"));
    }
    model_insert(&mut w.model, e, &comps)?;
    w.model.entities.entry(e).or_default();
    Ok(e)
}

/// Where a world's components are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// In the tables, but `ChildOf` and `Link` sparse in some worlds.
    Mixed,
    /// Every component created `STORAGE SPARSE`.
    AllSparse,
    /// Every component created in the tables and moved to sparse sets by `ALTER COMPONENT …
    /// SET STORAGE SPARSE` once the world is built (its values, change ticks and references
    /// moved on a live world).
    MovedToSparse,
}

/// Builds a random world from `seed`.
pub fn build(seed: u64) -> Result<TestWorld, String> {
    build_with(seed, Storage::Mixed)
}

/// Builds a random world from `seed`, its components stored as `storage` says.
pub fn build_with(seed: u64, storage: Storage) -> Result<TestWorld, String> {
    let mut rng = Rng::new(seed);
    let mut schema = Schema::standard();
    declare_references(&mut rng, &mut schema);
    // Knobs drawn apart from `rng`, so that adding them left every other draw as it was.
    let mut knobs = Rng::new(mix(seed, 0x5ba75e));
    // `ChildOf` and `Link` are each sparse in about a third of the worlds (at least one in
    // over half): references, paths, hierarchy walks and ON DELETE must not depend on the
    // storage.
    for c in ["ChildOf", "Link"] {
        if knobs.chance(0.35) {
            schema.comps.iter_mut().find(|d| d.name == c).expect("in the schema").sparse = true;
        }
    }
    for c in schema.comps.iter_mut() {
        match storage {
            Storage::Mixed => {}
            Storage::AllSparse => c.sparse = true,
            Storage::MovedToSparse => c.sparse = false,
        }
    }
    let mut db = Database::new();
    for c in &schema.comps {
        exec(&mut db, &c.create_text())?;
    }
    let mut w = TestWorld { db, model: Model::new(schema), dead: Vec::new() };
    // Mostly 10 to 120 entities; now and then an empty or a tiny world.
    let n = match rng.below(20) {
        0 => 0,
        1 => rng.range(1, 3) as usize,
        _ => rng.range(10, 120) as usize,
    };
    // A third of the worlds spread their ids over two to four skip-index blocks (1024 ids
    // each): empty entities issued between theirs and despawned once the world is spawned
    // (recycled ids then land in the gaps).
    let gap = if knobs.chance(0.33) { 2 * knobs.range(1200, 3500) as usize / n.max(1) } else { 0 };
    let mut pad = Vec::new();
    for _ in 0..n {
        for _ in 0..knobs.below(gap + 1) {
            pad.push(w.db.world_mut().spawn_values(&[]).map_err(|e| format!("spawn_values(&[]) failed: {e}"))?);
        }
        spawn_random(&mut rng, &mut w)?;
    }
    w.db.world_mut().despawn_many(&pad).map_err(|e| format!("despawning the padding failed: {e}"))?;
    // Despawn some, then spawn more: recycled indices with new generations.
    let live: Vec<Entity> = w.model.entities.keys().copied().collect();
    for e in live {
        if rng.chance(0.15) {
            if rng.chance(0.5) {
                exec(&mut w.db, &format!("DESPAWN {e}"))?;
            } else {
                w.db.world_mut().despawn(e).map_err(|err| format!("despawn({e}) failed: {err}"))?;
            }
            w.model.entities.remove(&e);
            w.dead.push(e);
        }
    }
    for _ in 0..rng.below(n / 5 + 1) {
        spawn_random(&mut rng, &mut w)?;
    }
    // Move some entities between archetypes through the engine API.
    let live: Vec<Entity> = w.model.entities.keys().copied().collect();
    for e in live {
        if rng.chance(0.1) {
            let c = rng.pick(&w.model.schema.comps).clone();
            if presence(&c.name) == 0.0 {
                continue;
            }
            if w.model.has(e, &c.name) {
                w.db.world_mut().remove_component(e, &c.name).map_err(|err| format!("remove {c:?}: {err}"))?;
                w.model.entities.get_mut(&e).expect("alive").remove(&c.name);
            } else {
                let live: Vec<Entity> = w.model.entities.keys().copied().collect();
                let fields: Vec<(String, Value)> = c
                    .fields
                    .iter()
                    .map(|(f, t)| (f.clone(), field_value(&mut rng, &c.name, f, *t, &live, &w.dead)))
                    .collect();
                let args: Vec<(&str, Value)> = fields.iter().map(|(f, v)| (f.as_str(), v.clone())).collect();
                w.db.world_mut()
                    .insert_values(e, &[(c.name.as_str(), args.as_slice())])
                    .map_err(|err| format!("insert {}: {err}", c.name))?;
                model_insert(&mut w.model, e, &[(c.name.clone(), fields)])?;
            }
        }
    }
    link_entities(&mut rng, &mut w)?;
    if storage == Storage::MovedToSparse {
        for c in w.model.schema.comps.iter_mut() {
            exec(&mut w.db, &format!("ALTER COMPONENT {} SET STORAGE SPARSE", c.name))?;
            c.sparse = true;
        }
    }
    Ok(w)
}

// -------------------------------------------------------------------------------------------------
// Links between entities

/// Declares `ChildOf.parent` (mostly) and `Link.to` (half the time) references, each with a
/// random policy; `ChildOf` is often `ACYCLIC`, `Link` rarely.
fn declare_references(rng: &mut Rng, schema: &mut Schema) {
    let policy = |rng: &mut Rng| {
        [OnDelete::Cascade, OnDelete::SetNull, OnDelete::Remove, OnDelete::Restrict, OnDelete::NoAction]
            [rng.weighted(&[3, 2, 2, 2, 2])]
    };
    if rng.chance(0.7) {
        let on_delete = policy(rng);
        schema.declare("ChildOf", "parent", RefDecl { on_delete, acyclic: rng.chance(0.6) });
    }
    if rng.chance(0.5) {
        let on_delete = policy(rng);
        schema.declare("Link", "to", RefDecl { on_delete, acyclic: rng.chance(0.2) });
    }
}

/// An engine error as the language names its kind (`Ok` when there is none).
fn engine_kind(r: Result<(), EngineError>) -> Result<(), &'static str> {
    r.map_err(|e| match e {
        EngineError::StaleEntity(_) => "stale_entity",
        EngineError::Constraint(_) => "constraint",
        _ => "other",
    })
}

/// What the model expects, named as [`engine_kind`] names it.
fn expected_kind(r: &Result<(), RefError>) -> Result<(), &'static str> {
    r.as_ref().map(|_| ()).map_err(|e| match e {
        RefError::Stale(_) => "stale_entity",
        RefError::Constraint(_) => "constraint",
        _ => "other",
    })
}

/// Sets `comp.field` of `e` to `target` in the database (text `ADD` or the engine API) and,
/// when the model says the write is allowed, in the model; the database must agree on whether
/// it is.
fn write_link(
    rng: &mut Rng,
    w: &mut TestWorld,
    e: Entity,
    comp: &str,
    field: &str,
    target: Value,
) -> Result<(), String> {
    let mut next = w.model.clone();
    let fields = next.build(comp, &[(field.to_string(), target.clone())])?;
    next.entities.get_mut(&e).expect("alive").insert(comp.to_string(), fields.clone());
    let writes = [(Some(e), comp.to_string(), field.to_string(), target.clone())];
    let expected = relations::check_writes(&w.model, &next, &writes);
    let got = if rng.chance(0.5) {
        let text = format!("ADD {comp} {{{field}: {}}} TO {e}", literal(&target));
        w.db.execute(&text, ()).map(|_| ()).map_err(|err| err.kind.as_str())
    } else {
        engine_kind(w.db.world_mut().insert_values(e, &[(comp, &[(field, target.clone())])]))
    };
    match (expected_kind(&expected), got) {
        (Ok(()), Ok(())) => {
            w.model = next;
            Ok(())
        }
        (want, got) if want == got => Ok(()),
        (want, got) => Err(format!(
            "setting {comp}.{field} of {e} to {}: the model expects {want:?} ({expected:?}), the engine gave {got:?}",
            literal(&target)
        )),
    }
}

/// Gives entities `ChildOf` and `Link` components: a forest (parents picked among the
/// entities before in a random order: the last few, so chains get long, or the first few,
/// so some trees get big), then loops
/// where `ChildOf` is not `ACYCLIC`, then `Link` edges anywhere; then despawns a few
/// entities, applying the declared `ON DELETE` policies.
fn link_entities(rng: &mut Rng, w: &mut TestWorld) -> Result<(), String> {
    let mut order: Vec<Entity> = w.model.entities.keys().copied().collect();
    rng.shuffle(&mut order);
    let child_decl = w.model.schema.get("ChildOf").and_then(|c| c.reference("parent"));
    let link_decl = w.model.schema.get("Link").and_then(|c| c.reference("to"));
    // A stale target: written to a plain field; tried (and refused) now and then on a
    // declared one.
    let stale = |rng: &mut Rng, w: &TestWorld, declared: bool| -> Option<Value> {
        let p = if declared { 0.02 } else { 0.08 };
        (!w.dead.is_empty() && rng.chance(p)).then(|| Value::Entity(*rng.pick(&w.dead)))
    };
    for i in 0..order.len() {
        if !rng.chance(0.85) {
            continue;
        }
        let target = match stale(rng, w, child_decl.is_some()) {
            Some(v) => v,
            None if i == 0 || rng.chance(0.05) => Value::Null,
            None => {
                // One of the last few (long chains), of the first few (a few big trees), or any.
                let (lo, hi) = match rng.weighted(&[45, 35, 20]) {
                    0 => (i.saturating_sub(3), i - 1),
                    1 => (0, (i - 1).min(4)),
                    _ => (0, i - 1),
                };
                Value::Entity(order[rng.range(lo as i64, hi as i64) as usize])
            }
        };
        write_link(rng, w, order[i], "ChildOf", "parent", target)?;
    }
    // Loops: an entity re-pointed at one of its descendants or at itself (refused when
    // ACYCLIC, which is checked too, now and then).
    let may_loop = child_decl.is_none_or(|d| !d.acyclic);
    if !order.is_empty() && rng.chance(if may_loop { 0.6 } else { 0.15 }) {
        for _ in 0..rng.range(1, 3) {
            let top = *rng.pick(&order);
            if !w.model.is_alive(top) {
                continue;
            }
            let below: Vec<Entity> = w
                .model
                .entities
                .keys()
                .copied()
                .filter(|x| relations::chain(&w.model, *x, "ChildOf", "parent").0.contains(&top))
                .collect();
            let target = if below.is_empty() || rng.chance(0.2) { top } else { *rng.pick(&below) };
            write_link(rng, w, top, "ChildOf", "parent", Value::Entity(target))?;
        }
    }
    for &e in &order {
        if !rng.chance(0.3) || !w.model.is_alive(e) {
            continue;
        }
        let target = match stale(rng, w, link_decl.is_some()) {
            Some(v) => v,
            None if rng.chance(0.15) => Value::Null,
            None => Value::Entity(*rng.pick(&order)),
        };
        write_link(rng, w, e, "Link", "to", target)?;
    }
    // Despawns under the policies: stale handles (NO ACTION, plain fields), nulls, removed
    // components, cascades, refusals.
    let live: Vec<Entity> = w.model.entities.keys().copied().collect();
    // Half the victims have referrers, so the policies have something to do.
    let referred: Vec<Entity> = live
        .iter()
        .copied()
        .filter(|t| {
            let holds = |x: &Entity| {
                ["ChildOf", "Link"]
                    .iter()
                    .any(|c| w.model.entities[x].get(*c).is_some_and(|fs| fs[0].1 == Value::Entity(*t)))
            };
            live.iter().any(holds)
        })
        .collect();
    for _ in 0..rng.below(4) {
        if live.is_empty() {
            break;
        }
        let victim = if !referred.is_empty() && rng.chance(0.5) { *rng.pick(&referred) } else { *rng.pick(&live) };
        if !w.model.is_alive(victim) {
            continue;
        }
        let expected = relations::despawn(&w.model, &[victim]);
        let got: Result<Option<usize>, EngineError> = if rng.chance(0.5) {
            let text = format!("DESPAWN {victim}");
            match w.db.execute(&text, ()) {
                Ok(rs) => match rs.rows.as_slice() {
                    [row] => match row.as_slice() {
                        [Value::Int(n)] => Ok(Some(*n as usize)),
                        other => return Err(format!("`{text}` returned {other:?}")),
                    },
                    _ => return Err(format!("`{text}` returned {} rows", rs.len())),
                },
                Err(err) if err.kind.as_str() == "constraint" => Err(EngineError::Constraint(err.message)),
                Err(err) => return Err(format!("`{text}` failed: {}", err.message)),
            }
        } else {
            w.db.world_mut().despawn(victim).map(|()| None)
        };
        match (expected, got) {
            (Ok((next, n)), Ok(count)) => {
                if count.is_some_and(|c| c != n) {
                    return Err(format!("DESPAWN {victim}: the model despawns {n} entities, the engine {count:?}"));
                }
                w.dead.extend(w.model.entities.keys().filter(|x| !next.is_alive(**x)));
                w.model = next;
            }
            (Err(RefError::Constraint(_)), Err(EngineError::Constraint(_))) => {}
            (want, got) => {
                let want = want.map(|(_, n)| n);
                return Err(format!("DESPAWN {victim}: the model expects {want:?}, the engine gave {got:?}"));
            }
        }
    }
    Ok(())
}
