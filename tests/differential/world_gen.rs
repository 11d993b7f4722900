//! Random worlds: the schema defined through `CREATE COMPONENT` (the sparse component through
//! the engine API, which the language has no syntax for), entities spawned with random
//! component subsets and values — through `SPAWN` text and through the engine API — some
//! despawned and their ids recycled, some moved between archetypes by adding and removing
//! components. Every step is applied to the [`Model`] as well, from the values written.

use ecsdb::query::Database;
use ecsdb::{ComponentDef, Entity, FieldType, Value};

use super::gen::{NAMES, TEAMS};
use super::model::{Model, Schema};
use super::rng::Rng;

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
    db.execute(text).map_err(|e| format!("`{text}` failed: {} error: {}", e.kind.as_str(), e.message))
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

/// Builds a random world from `seed`.
pub fn build(seed: u64) -> Result<TestWorld, String> {
    let mut rng = Rng::new(seed);
    let schema = Schema::standard();
    let mut db = Database::new();
    for c in &schema.comps {
        if c.sparse {
            let fields: Vec<(&str, FieldType)> = c.fields.iter().map(|(n, t)| (n.as_str(), *t)).collect();
            db.world_mut()
                .define_component(&ComponentDef::new(c.name.clone(), &fields).sparse())
                .map_err(|e| format!("define_component({}) failed: {e}", c.name))?;
        } else {
            exec(&mut db, &c.create_text())?;
        }
    }
    let mut w = TestWorld { db, model: Model::new(schema), dead: Vec::new() };
    // Mostly 10 to 120 entities; now and then an empty or a tiny world.
    let n = match rng.below(20) {
        0 => 0,
        1 => rng.range(1, 3) as usize,
        _ => rng.range(10, 120) as usize,
    };
    for _ in 0..n {
        spawn_random(&mut rng, &mut w)?;
    }
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
    Ok(w)
}
