//! The `ecs` suite's storage workloads: one text-created component stored sparse against
//! the same component stored in the tables, on 1,000,000 entities holding
//! `Unit (id u32, team u8)`, `Pos (x f32, y f32, z f32)` and `Vel (x f32, y f32, z f32)`.
//!
//! - `toggle_text`: one tick of a status effect: `REMOVE Burning WHERE has(Burning)` takes it
//!   off the 10% that have it, then `ADD Burning {t: 1} WHERE Unit.id % 10 = $1` puts it on
//!   another tenth (the next decile each run), both through `Database::execute`.
//!   `ecsdb-sparse`: `CREATE COMPONENT Burning (t f32) STORAGE SPARSE`; `ecsdb-table`: the
//!   same component in the tables, where each toggle moves the entity's row between tables.
//! - `sparse_join`: `SELECT entity, Pos.x, Burning.t FROM Pos, Burning` with Burning on 1%
//!   of the entities (every hundredth), as a query result of 10,000 rows.

use ecsdb::Value;
use ecsdb::query::Database;

use crate::harness::{Suite, iter};

const N: usize = 1_000_000;

/// A world of `N` units, with `Burning` stored as `storage` on every entity whose id is a
/// multiple of `every` (none when 0).
fn world(storage: &str, every: u32) -> Database {
    let mut db = Database::new();
    let schema = format!(
        "CREATE COMPONENT Unit (id u32, team u8); CREATE COMPONENT Pos (x f32, y f32, z f32); \
         CREATE COMPONENT Vel (x f32, y f32, z f32); CREATE COMPONENT Burning (t f32) STORAGE {storage}"
    );
    db.execute_script(&schema).unwrap();
    let world = db.world_mut();
    for i in 0..N as u32 {
        let f = i as f64;
        world
            .spawn_values(&[
                ("Unit", &[("id", Value::Int(i as i64)), ("team", Value::Int((i % 4) as i64))]),
                ("Pos", &[("x", Value::Float(f)), ("y", Value::Float(0.0)), ("z", Value::Float(1.0))]),
                ("Vel", &[("x", Value::Float(1.0)), ("y", Value::Float(0.0)), ("z", Value::Float(0.0))]),
            ])
            .unwrap();
    }
    if every > 0 {
        db.execute(&format!("ADD Burning {{t: 2}} WHERE Unit.id % {every} = 0"), ()).unwrap();
    }
    db
}

pub fn run(s: &mut Suite) {
    toggle_text(s);
    sparse_join(s);
    s.note(format!(
        "{N} entities × Unit (id u32, team u8), Pos (x f32, y f32, z f32), Vel (x f32, y f32, z f32); Burning (t f32) \
         from text, STORAGE SPARSE or TABLE"
    ));
}

fn toggle_text(s: &mut Suite) {
    s.workload("toggle_text", |w| {
        for (lib, storage) in [("ecsdb-sparse", "SPARSE"), ("ecsdb-table", "TABLE")] {
            let mut db = world(storage, 10);
            let mut decile = 0i64;
            w.lib(
                lib,
                iter(move || {
                    decile = (decile + 1) % 10;
                    let removed = db.execute("REMOVE Burning WHERE has(Burning)", ()).unwrap();
                    let added = db.execute("ADD Burning {t: 1} WHERE Unit.id % 10 = $1", [Value::Int(decile)]).unwrap();
                    assert_eq!(db.world().component_count(db.world().component_id("Burning").unwrap()), N / 10);
                    (removed, added)
                }),
            );
        }
    });
}

fn sparse_join(s: &mut Suite) {
    s.workload("sparse_join", |w| {
        for (lib, storage) in [("ecsdb-sparse", "SPARSE"), ("ecsdb-table", "TABLE")] {
            let db = world(storage, 100);
            let rows = db.query("SELECT entity, Pos.x, Burning.t FROM Pos, Burning", ()).unwrap();
            assert_eq!(rows.len(), N / 100);
            w.lib(lib, iter(move || db.query("SELECT entity, Pos.x, Burning.t FROM Pos, Burning", ()).unwrap()));
        }
    });
}
