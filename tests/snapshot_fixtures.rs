//! The snapshot format is a promise: files written by earlier builds load in this one.
//!
//! `tests/fixtures/` holds one file per format version, written by the build that introduced
//! it from the script kept here beside it (`V2_SCRIPT` for `world-v2.ecsdb`). Each test loads
//! the committed file and holds it against a world built now from the same script: the same
//! entities, values, tables, indexes, references, systems, allocator and change ticks. A
//! format change adds a fixture for its version (write it with `ECSDB_WRITE_FIXTURES=1 cargo
//! test --test snapshot_fixtures`) and keeps every older one loading, or bumps the version with
//! a converter. A fixture is never rewritten.

use std::path::PathBuf;

use ecsdb::query::Database;
use ecsdb::{ComponentDef, Entity, FieldType, SaveOptions, Value, World};

/// The world of `world-v2.ecsdb` (format version 2): every field type, a tag, a sparse
/// component, a reference with its relation index, rtree, btree and bitmap indexes, a text
/// system that has run, and despawned ids whose generations moved on.
const V2_SCRIPT: &str = r#"
CREATE COMPONENT Pos (x f32, y f32);
CREATE COMPONENT Every (b bool, i_8 i8, i_16 i16, i_32 i32, i_64 i64, u_8 u8, u_16 u16, u_32 u32,
    u_64 u64, f_32 f32, f_64 f64, s string, who entity, v_2 vec2, v_3 vec3);
CREATE COMPONENT Frozen;
CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC);
CREATE INDEX ON Pos USING rtree;
CREATE INDEX ON Every (i_32) USING btree;
CREATE INDEX ON Every (s) USING bitmap;
CREATE INDEX ON ChildOf (parent) USING relation;
SPAWN Pos {x: 1.5, y: -2};
SPAWN Pos {x: 0.1, y: 3.4e38};
SPAWN Pos {x: -0.0, y: 1e-40};
SPAWN Every {b: true, i_8: -128, i_16: -32768, i_32: -2147483648, i_64: -9223372036854775807,
    u_8: 255, u_16: 65535, u_32: 4294967295, u_64: 9223372036854775807, f_32: 0.1,
    f_64: 2.2250738585072014e-308, s: 'quote \' and ☃', who: 1v0, v_2: [1, 2], v_3: [0.5, -1, 3]};
SPAWN Every {s: ''};
SPAWN Every {i_32: 7, s: 'seven'}, Frozen;
SPAWN Frozen;
SPAWN Frozen;
DESPAWN WHERE Pos.x = 1.5;
SPAWN Pos {x: 9, y: 9};
SPAWN ChildOf {parent: 4v0};
SPAWN ChildOf {parent: 8v0};
ADD Frozen WHERE Pos.x = 9;
DESPAWN 6v0;
CREATE SYSTEM drift AS UPDATE Pos SET x = Pos.x + 1 WHERE Pos.y > 0;
TICK 3
"#;

/// The world of `world-v3.ecsdb` (format version 3): `V2_SCRIPT`'s, and a component with
/// field defaults of several types.
const V3_EXTRA: &str = r#"
CREATE COMPONENT Unit (hp f32 DEFAULT 100, name string DEFAULT 'grunt \' ☃', lvl u8 DEFAULT 3,
    at vec2 DEFAULT [1, -1], boss entity DEFAULT 1v0 REFERENCES ON DELETE SET NULL, kills i32);
SPAWN Unit {kills: 2};
SPAWN Unit {name: 'chief', boss: null}
"#;

/// The sparse component (not selectable from text): added from Rust to two entities.
fn add_sparse(db: &mut Database) {
    let world = db.world_mut();
    world.define_component(&ComponentDef::new("Mark", &[("n", FieldType::U16)]).sparse()).unwrap();
    for (index, n) in [(2, 40), (7, 41)] {
        let e = Entity::from_parts(index, 0);
        world.insert_values(e, &[("Mark", &[("n", Value::Int(n))])]).unwrap();
    }
}

fn v2_world() -> Database {
    let mut db = Database::new();
    db.execute_script(V2_SCRIPT).unwrap();
    add_sparse(&mut db);
    db
}

fn v3_world() -> Database {
    let mut db = v2_world();
    db.execute_script(V3_EXTRA).unwrap();
    db
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The statements whose answers a loaded fixture must share with the world built now.
const PROBES: &[&str] = &[
    "SELECT entity, Pos.x, Pos.y ORDER BY entity",
    "SELECT * FROM Every ORDER BY entity",
    "SELECT entity FROM Frozen ORDER BY entity",
    "SELECT entity, ChildOf.parent ORDER BY entity",
    "SELECT entity, Mark.n ORDER BY entity",
    "SELECT entity WHERE Every.i_32 = 7",
    "SELECT count(*) WHERE Every.s = 'seven'",
    "SELECT entity WHERE Pos.x > 0 AND Pos.x < 20 AND Pos.y > 0 AND Pos.y < 20",
    "SELECT entity, Pos.x WHERE changed(Pos) ORDER BY entity",
    "SHOW COMPONENTS",
    "SHOW INDEXES",
    "SHOW TABLES",
    "DESCRIBE Every",
];

/// Each probe's answer as JSON, without `memory_bytes` (an index loaded in bulk is laid out
/// more tightly than one grown row by row).
fn probe_answers(db: &Database, extra: &[&str]) -> Vec<String> {
    PROBES
        .iter()
        .chain(extra)
        .map(|q| {
            let mut rs = db.query(q, ()).unwrap();
            if let Some(i) = rs.columns.iter().position(|c| c == "memory_bytes") {
                rs.columns.remove(i);
                for row in &mut rs.rows {
                    row.remove(i);
                }
            }
            format!("{q}\n{}", rs.to_json_string())
        })
        .collect()
}

/// Systems as saved: name, phase, position and access (run counts and times are the
/// program's, not the file's).
fn systems(db: &Database) -> Vec<Vec<Value>> {
    let rs = db.query("SHOW SYSTEMS", ()).unwrap();
    let keep: Vec<usize> = ["name", "phase", "position", "reads", "writes"]
        .iter()
        .map(|c| rs.columns.iter().position(|n| n == c).unwrap_or_else(|| panic!("SHOW SYSTEMS has no {c}")))
        .collect();
    rs.rows.iter().map(|r| keep.iter().map(|&i| r[i].clone()).collect()).collect()
}

/// Holds `loaded` against `built`: the same answers (`changed(Pos)` among them, so the saved
/// change ticks), and the same allocator and references as `built` saved and loaded by
/// this build.
fn assert_same(loaded: &Database, built: &Database, extra: &[&str]) {
    for (a, b) in probe_answers(loaded, extra).iter().zip(probe_answers(built, extra)) {
        assert_eq!(a, &b);
    }
    assert_eq!(systems(loaded), systems(built));
    let opts = SaveOptions { change_ticks: true, ..SaveOptions::default() };
    let now = Database::from_world(World::load_from_bytes(&built.world().save_to_vec(&opts).unwrap()).unwrap());
    let (lw, bw) = (loaded.world(), now.world());
    assert_eq!(lw.entities().state(), bw.entities().state(), "allocator");
    assert_eq!(lw.reference_definitions(), bw.reference_definitions());
}

/// Loads fixture `name` (writing it first from `build` with `ECSDB_WRITE_FIXTURES` set, if it
/// is missing), checks its format version and holds it against `build()`; returns both.
fn check_fixture(name: &str, version: u32, build: fn() -> Database, extra: &[&str]) -> (Database, Database) {
    let path = fixture(name);
    if std::env::var_os("ECSDB_WRITE_FIXTURES").is_some() && !path.exists() {
        let opts = SaveOptions { change_ticks: true, ..SaveOptions::default() };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        build().world().save(&path, &opts).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("tests/fixtures/{name} is committed: {e}"));
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), version, "the file's format version");
    let mut loaded = Database::from_world(World::load_from_bytes(&bytes).unwrap());
    let mut built = build();
    assert_same(&loaded, &built, extra);
    // Both go on the same way: the system runs, the allocator hands out the same ids.
    loaded.tick(1, 1.0 / 60.0).unwrap();
    built.tick(1, 1.0 / 60.0).unwrap();
    assert_same(&loaded, &built, extra);
    let spawn = "SPAWN Pos {x: 1, y: 1}";
    assert_eq!(loaded.execute(spawn, ()).unwrap().to_json_string(), built.execute(spawn, ()).unwrap().to_json_string());
    (loaded, built)
}

#[test]
fn a_version_2_file_loads_with_everything_it_was_written_with() {
    let (loaded, _) = check_fixture("world-v2.ecsdb", 2, v2_world, &[]);
    // A few values by hand, so that a build which reads and writes both worlds wrongly in
    // the same way still fails.
    let every = loaded.query("SELECT Every.u_64, Every.s, Every.who FROM Every WHERE Every.b", ()).unwrap();
    assert_eq!(every.rows[0][0], Value::Int(i64::MAX));
    assert_eq!(every.rows[0][1], Value::Str("quote ' and \u{2603}".into()));
    assert_eq!(every.rows[0][2], Value::Entity(Entity::from_parts(1, 0)));
    assert_eq!(loaded.query("SELECT count(*) FROM Frozen", ()).unwrap().rows[0][0], Value::Int(3));
}

#[test]
fn a_version_3_file_loads_with_its_field_defaults() {
    let extra = ["SELECT * FROM Unit ORDER BY entity", "DESCRIBE Unit"];
    let (mut loaded, _) = check_fixture("world-v3.ecsdb", 3, v3_world, &extra);
    let d = loaded.query("DESCRIBE Unit", ()).unwrap();
    assert_eq!(d.rows[1][2], Value::Str("grunt ' \u{2603}".into()));
    assert_eq!(d.rows[4][2], Value::Entity(Entity::from_parts(1, 0)));
    let e = loaded.execute("SPAWN Unit {}", ()).unwrap().rows[0][0].clone();
    let rs = loaded.query("SELECT Unit.hp, Unit.lvl, Unit.at WHERE entity = $1", [e]).unwrap();
    assert_eq!(rs.rows[0], vec![Value::Float(100.0), Value::Int(3), Value::Vec2([1.0, -1.0])]);
}
