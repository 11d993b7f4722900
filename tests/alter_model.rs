//! `ALTER COMPONENT` against a model: random sequences of field changes (add with and
//! without a default, drop, rename, widen, set and drop a default) mixed with spawns and
//! updates, on a component held in two tables and, in another run, stored sparse. After
//! every step the world's rows must be the model's: a list of named, typed fields and each
//! entity's values. A change a stored system depends on is refused, and the world stays
//! exactly the model's.

mod common;

use ecsdb::query::Database;
use ecsdb::{ComponentDef, FieldType, Value};
use proptest::prelude::*;

/// The field types the model uses, with the type each widens to.
const TYPES: [(&str, Option<&str>); 4] =
    [("u8", Some("u32")), ("i32", Some("i64")), ("f32", Some("f64")), ("string", None)];

#[derive(Clone, Debug)]
enum Op {
    Add {
        ty: usize,
        default: bool,
    },
    Drop(usize),
    Rename(usize),
    Widen(usize),
    SetDefault(usize),
    DropDefault(usize),
    Spawn,
    Update(usize),
    /// `SET STORAGE SPARSE` (true) or `TABLE`.
    Storage(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..TYPES.len(), any::<bool>()).prop_map(|(ty, default)| Op::Add { ty, default }),
        2 => (0..8usize).prop_map(Op::Drop),
        2 => (0..8usize).prop_map(Op::Rename),
        2 => (0..8usize).prop_map(Op::Widen),
        1 => (0..8usize).prop_map(Op::SetDefault),
        1 => (0..8usize).prop_map(Op::DropDefault),
        2 => Just(Op::Spawn),
        2 => (0..8usize).prop_map(Op::Update),
        1 => any::<bool>().prop_map(Op::Storage),
    ]
}

/// The model: fields (name, type, default) and each entity's values, in spawn order.
struct Model {
    fields: Vec<(String, String, Option<Value>)>,
    sparse: bool,
    rows: Vec<Vec<Value>>,
    next_name: usize,
}

impl Model {
    fn zero(ty: &str) -> Value {
        match ty {
            "string" => Value::Str(String::new()),
            "f32" | "f64" => Value::Float(0.0),
            _ => Value::Int(0),
        }
    }

    /// A value of `ty` that depends on `seed`, exact in every type the model uses.
    fn value(ty: &str, seed: usize) -> Value {
        match ty {
            "string" => Value::Str(format!("s{seed}")),
            "f32" | "f64" => Value::Float((seed % 64) as f64 * 0.5),
            "i32" | "i64" => Value::Int(seed as i64 % 1000 - 500),
            _ => Value::Int((seed % 200) as i64),
        }
    }

    fn literal(v: &Value) -> String {
        match v {
            Value::Str(s) => format!("'{s}'"),
            other => other.to_string(),
        }
    }

    fn start_of(&self, ty: usize) -> Value {
        Model::zero(TYPES[ty].0)
    }
}

/// The statement for `op` and what the model becomes if the world takes it (`None`: the
/// world must refuse it; the system reads field `kept`).
fn step(m: &mut Model, op: &Op, seed: usize) -> Option<(String, bool)> {
    let pick = |k: usize| if m.fields.is_empty() { None } else { Some(k % m.fields.len()) };
    // Field 0 is `kept`: the system reads it, so it is never dropped or renamed (a wider
    // type, the system binds against again).
    let refused = |i: usize| i == 0;
    Some(match op {
        Op::Add { ty, default } => {
            let name = format!("f{}", m.next_name);
            m.next_name += 1;
            let ty_name = TYPES[*ty].0;
            let d = default.then(|| Model::value(ty_name, seed));
            let start = d.clone().unwrap_or_else(|| m.start_of(*ty));
            for row in &mut m.rows {
                row.push(start.clone());
            }
            let text = match &d {
                Some(d) => format!("ALTER COMPONENT Unit ADD FIELD {name} {ty_name} DEFAULT {}", Model::literal(d)),
                None => format!("ALTER COMPONENT Unit ADD FIELD {name} {ty_name}"),
            };
            m.fields.push((name, ty_name.to_string(), d));
            (text, true)
        }
        Op::Drop(k) => {
            let i = pick(*k)?;
            let text = format!("ALTER COMPONENT Unit DROP FIELD {}", m.fields[i].0);
            if refused(i) {
                return Some((text, false));
            }
            m.fields.remove(i);
            for row in &mut m.rows {
                row.remove(i);
            }
            (text, true)
        }
        Op::Rename(k) => {
            let i = pick(*k)?;
            let to = format!("f{}", m.next_name);
            m.next_name += 1;
            let text = format!("ALTER COMPONENT Unit RENAME FIELD {} TO {to}", m.fields[i].0);
            if refused(i) {
                return Some((text, false));
            }
            m.fields[i].0 = to;
            (text, true)
        }
        Op::Widen(k) => {
            let i = pick(*k)?;
            let wider = TYPES.iter().find(|(t, _)| *t == m.fields[i].1).and_then(|(_, w)| *w)?;
            let text = format!("ALTER COMPONENT Unit ALTER FIELD {} TYPE {wider}", m.fields[i].0);
            m.fields[i].1 = wider.to_string();
            (text, true)
        }
        Op::SetDefault(k) => {
            let i = pick(*k)?;
            let d = Model::value(&m.fields[i].1, seed);
            let text = format!("ALTER COMPONENT Unit ALTER FIELD {} SET DEFAULT {}", m.fields[i].0, Model::literal(&d));
            m.fields[i].2 = Some(d);
            (text, true)
        }
        Op::DropDefault(k) => {
            let i = pick(*k)?;
            m.fields[i].2 = None;
            (format!("ALTER COMPONENT Unit ALTER FIELD {} DROP DEFAULT", m.fields[i].0), true)
        }
        Op::Storage(sparse) => {
            m.sparse = *sparse;
            (format!("ALTER COMPONENT Unit SET STORAGE {}", if *sparse { "SPARSE" } else { "TABLE" }), true)
        }
        Op::Spawn => {
            // Half the spawns give every field, half only `kept` (the rest take defaults).
            let full = seed.is_multiple_of(2);
            let mut given = Vec::new();
            let mut row = Vec::new();
            for (j, (name, ty, d)) in m.fields.iter().enumerate() {
                let v = if full || j == 0 {
                    let v = Model::value(ty, seed + j);
                    given.push(format!("{name}: {}", Model::literal(&v)));
                    v
                } else {
                    d.clone().unwrap_or_else(|| Model::zero(ty))
                };
                row.push(v);
            }
            m.rows.push(row);
            let tag = if seed.is_multiple_of(3) { ", Tag" } else { "" };
            (format!("SPAWN Unit {{{}}}{tag}", given.join(", ")), true)
        }
        Op::Update(k) => {
            let i = pick(*k)?;
            let (name, ty, _) = &m.fields[i];
            let v = Model::value(ty, seed);
            for row in &mut m.rows {
                row[i] = v.clone();
            }
            (format!("UPDATE Unit SET {name} = {}", Model::literal(&v)), true)
        }
    })
}

fn dump(db: &Database, m: &Model) -> Vec<Vec<Value>> {
    let cols: Vec<String> = m.fields.iter().map(|(n, _, _)| format!("Unit.{n}")).collect();
    let text = format!("SELECT {} FROM Unit ORDER BY entity", cols.join(", "));
    common::db::rows(db, &text)
}

fn world(sparse: bool) -> (Database, Model) {
    let mut db = Database::new();
    let def = ComponentDef::new("Unit", &[("kept", FieldType::I32)]);
    db.world_mut().define_component(&if sparse { def.sparse() } else { def }).unwrap();
    db.execute("CREATE COMPONENT Tag", ()).unwrap();
    db.execute("CREATE SYSTEM keep AS UPDATE Unit SET kept = Unit.kept + 0", ()).unwrap();
    let mut m = Model { fields: vec![("kept".into(), "i32".into(), None)], sparse, rows: Vec::new(), next_name: 0 };
    for seed in 0..6 {
        let (text, _) = step(&mut m, &Op::Spawn, seed).unwrap();
        db.execute(&text, ()).unwrap();
    }
    (db, m)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn stored_values_follow_every_change(ops in prop::collection::vec(op(), 1..24), sparse in any::<bool>()) {
        let (mut db, mut m) = world(sparse);
        for (seed, op) in ops.iter().enumerate() {
            let Some((text, accepted)) = step(&mut m, op, seed + 100) else { continue };
            let result = db.execute(&text, ());
            prop_assert_eq!(result.is_ok(), accepted, "{}: {:?}", text, result);
            prop_assert_eq!(dump(&db, &m), m.rows.clone(), "after {}", text);
            let storage = Value::Str(if m.sparse { "sparse" } else { "table" }.into());
            let described: Vec<Vec<Value>> = m
                .fields
                .iter()
                .map(|(n, t, d)| vec![Value::Str(n.clone()), Value::Str(t.clone()), d.clone().unwrap_or(Value::Null), storage.clone()])
                .collect();
            prop_assert_eq!(common::db::rows(&db, "DESCRIBE Unit"), described, "after {}", text);
        }
        // The system was planned again after every change and still runs.
        prop_assert!(db.tick(1, 0.1).unwrap().is_empty());
        prop_assert_eq!(dump(&db, &m), m.rows.clone());
    }
}
