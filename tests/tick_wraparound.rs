//! Change ticks across the 32-bit counter's wraparound: every index kind and prepared
//! statements stay exact when the world's counter starts near `u32::MAX` and runs past it.
//! Each answer through indexes is compared with the same query on a twin world without
//! indexes, changed the same way.

mod common;

use common::db::rows;

use ecsdb::query::{Database, Params, PlanOptions};
use ecsdb::{ComponentDef, Value};

const SETUP: &str = "CREATE COMPONENT Position (x f32, y f32, z f32);
     CREATE COMPONENT Health (hp f32);
     CREATE COMPONENT Team (name string)";
const INDEXES: &str = "CREATE INDEX ON Position USING rtree;
     CREATE INDEX ON Health (hp) USING btree;
     CREATE INDEX ON Team (name) USING bitmap;
     CREATE INDEX ON Frozen USING bitmap";
/// Queries answered through an index; the last one (the function index) is asked of the twin
/// as the plain predicate it stands for.
const QUERIES: [&str; 5] = [
    "SELECT COUNT(*) FROM Health WHERE Health.hp < 20",
    "SELECT COUNT(*) FROM Team WHERE Team.name = 'red'",
    "SELECT COUNT(*) FROM Frozen",
    "SELECT COUNT(*) FROM Position WHERE within(Position, [5, 5, 0], 4)",
    "SELECT COUNT(*) FROM Health WHERE low(Health)",
];
const LOW_PLAIN: &str = "SELECT COUNT(*) FROM Health WHERE Health.hp < 10";

fn db(indexed: bool) -> Database {
    let mut db = Database::new();
    db.execute_script(SETUP).unwrap();
    db.world_mut().define_component(&ComponentDef::new("Frozen", &[]).sparse()).unwrap();
    let low =
        |v: &Value| matches!(v, Value::Object(f) if matches!(f.first(), Some((_, Value::Float(hp))) if *hp < 10.0));
    if indexed {
        db.execute_script(INDEXES).unwrap();
        db.create_function_index("low", "Health", low).unwrap();
        db.set_plan_options(PlanOptions { prefer_indexes: true });
    }
    for i in 0..200 {
        db.execute(
            &format!(
                "SPAWN Position {{ x: {}, y: {}, z: 0 }}, Health {{ hp: {} }}, Team {{ name: '{}' }}",
                i % 20,
                i / 20,
                i % 50,
                ["red", "blue"][i % 2]
            ),
            (),
        )
        .unwrap();
    }
    db
}

fn answers(db: &Database, indexed: bool) -> Vec<Value> {
    let count = |q: &str| rows(db, q)[0][0].clone();
    let mut out: Vec<Value> = QUERIES[..4].iter().map(|q| count(q)).collect();
    out.push(count(if indexed { QUERIES[4] } else { LOW_PLAIN }));
    out
}

#[test]
fn indexes_and_prepared_statements_stay_exact_across_wraparound() {
    let (mut fast, mut slow) = (db(true), db(false));
    let mut prepared = fast.prepare("SELECT COUNT(*) FROM Health WHERE Health.hp >= $min").unwrap();
    let min = Params::new().set("min", Value::Float(45.0));
    // Reach the end of the 32-bit history in hops shorter than the largest tick age, reading
    // (so the indexes refresh) in between.
    let hop = |db: &Database| (u32::MAX - 150 - db.world().change_tick()) as u64 / 4;
    let (hop_fast, hop_slow) = (hop(&fast), hop(&slow));
    for _ in 0..4 {
        fast.world_mut().advance_change_tick(hop_fast);
        slow.world_mut().advance_change_tick(hop_slow);
        assert_eq!(answers(&fast, true), answers(&slow, false));
    }
    let before = fast.world().change_tick();
    assert!(before > u32::MAX - 1000, "{before}");
    for step in 0..40 {
        let script = format!(
            "UPDATE Health SET hp = (Health.hp + 7) % 50 WHERE Team.name = '{team}' AND Position.x = {x};
             UPDATE Team SET name = 'red' WHERE Position.y = {y};
             SPAWN Position {{ x: {x}, y: 5, z: 0 }}, Health {{ hp: {step} }}, Team {{ name: 'blue' }};
             DESPAWN WHERE Health.hp = {hp}",
            team = ["red", "blue"][step % 2],
            x = step % 20,
            y = step % 10,
            hp = (step * 3) % 50,
        );
        for db in [&mut fast, &mut slow] {
            db.execute_script(&script).unwrap();
            let frozen = db.select_entities("WHERE Health.hp < 3", ()).unwrap();
            for e in frozen.into_iter().take(2) {
                db.world_mut().insert_values(e, &[("Frozen", &[])]).unwrap();
            }
        }
        assert_eq!(answers(&fast, true), answers(&slow, false), "step {step} (tick {})", fast.world().change_tick());
        let expect = slow.query("SELECT COUNT(*) FROM Health WHERE Health.hp >= $min", &min).unwrap().rows;
        assert_eq!(prepared.query(&fast, &min).unwrap().rows, expect, "step {step}");
    }
    assert!(fast.world().change_tick() < before, "the counter wrapped");
}
