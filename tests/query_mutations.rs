//! SPAWN, DESPAWN, ADD, REMOVE, UPDATE, CREATE COMPONENT, SHOW, DESCRIBE — and atomicity: a
//! statement that fails halfway leaves the world exactly as it was.

use ecsdb::query::{Database, ErrorKind, Params, ResultSet};
use ecsdb::{ComponentDef, EntitiesState, Entity, FieldType, Value, World};

mod common;
use common::values::{e, f, i, s};

fn world() -> Database {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Position (x f32, y f32);
         CREATE COMPONENT Health (hp f32, max f32);
         CREATE COMPONENT Team (name string);
         CREATE COMPONENT Level (value i32);
         CREATE COMPONENT Small (v i8);
         CREATE COMPONENT Link (to entity);
         CREATE COMPONENT Frozen;
         SPAWN Position {x: 1, y: 2}, Health {hp: 10, max: 100}, Team {name: 'red'}, Level {value: 1};
         SPAWN Position {x: 3, y: 4}, Health {hp: 60, max: 100}, Team {name: 'blue'}, Level {value: 3};
         SPAWN Position {x: 5, y: 6}, Health {hp: 30, max: 50}, Team {name: 'red'}, Level {value: 7}, Frozen;",
    )
    .unwrap();
    db
}

fn q(db: &Database, text: &str) -> Vec<Vec<Value>> {
    db.query(text, ()).unwrap_or_else(|e| panic!("{}", e.render(text))).rows
}

fn x(db: &mut Database, text: &str) -> ResultSet {
    db.execute(text, ()).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

/// Everything observable about a world: every live entity with every component's value, the
/// allocator's state, and each table's entities in row order.
#[derive(Debug, PartialEq)]
struct Dump {
    entities: Vec<(Entity, Vec<(String, Value)>)>,
    allocator: EntitiesState,
    tables: Vec<Vec<Entity>>,
}

fn dump(world: &World) -> Dump {
    let mut entities: Vec<Entity> = world.iter_entities().collect();
    entities.sort();
    let entities = entities
        .into_iter()
        .map(|ent| {
            let comps = world
                .components_of(ent)
                .unwrap()
                .into_iter()
                .map(|id| (world.components().info(id).name().to_string(), world.get_component_value(ent, id).unwrap()))
                .collect();
            (ent, comps)
        })
        .collect();
    Dump {
        entities,
        allocator: world.entities().state(),
        tables: world.tables().iter().map(|t| t.entities().to_vec()).collect(),
    }
}

/// Runs a statement that must fail with `kind`, and checks the world did not change.
fn fails_atomically(db: &mut Database, text: &str, params: impl Into<Params>, kind: ErrorKind) -> String {
    let before = dump(db.world());
    let err = db.execute(text, params).expect_err(text);
    assert_eq!(err.kind, kind, "{text}: {}", err.render(text));
    assert_eq!(dump(db.world()), before, "{text} changed the world");
    err.message
}

#[test]
fn spawn_returns_the_entity() {
    let mut db = world();
    let rs = x(&mut db, "SPAWN Position {x: 7}, Team {name: 'green'}, Frozen");
    assert_eq!(rs.columns, ["entity"]);
    assert_eq!(rs.rows, [[e(3)]]);
    // Left-out fields are zero.
    assert_eq!(q(&db, "SELECT Position.y, Team.name WHERE entity = 3v0"), [[f(0.0), s("green")]]);
    let rs = x(&mut db, "SPAWN");
    assert_eq!(rs.rows, [[e(4)]]);
    assert_eq!(q(&db, "SELECT count(*)"), [[i(5)]]);
    let rs = db
        .execute(
            "SPAWN Link {to: $1}, Level {value: 2 + 3 * $2}",
            Params::positional([Value::Entity(Entity::from_parts(1, 0)), i(2)]),
        )
        .unwrap();
    let new = rs.rows[0][0].clone();
    assert_eq!(
        db.query("SELECT Link.to, Level.value WHERE entity = $1", Params::positional([new])).unwrap().rows,
        [[e(1), i(8)]]
    );
}

#[test]
fn despawn_by_entity_and_filter() {
    let mut db = world();
    assert_eq!(x(&mut db, "DESPAWN 1v0").rows, [[i(1)]]);
    assert_eq!(x(&mut db, "DESPAWN WHERE Health.hp < 20").rows, [[i(1)]]);
    assert_eq!(x(&mut db, "DESPAWN FROM Frozen WHERE Health.hp > 1000").rows, [[i(0)]]);
    assert_eq!(x(&mut db, "DESPAWN FROM Frozen").rows, [[i(1)]]);
    assert_eq!(q(&db, "SELECT count(*)"), [[i(0)]]);
    // The recycled index gets a new generation; the old handle is stale.
    let rs = x(&mut db, "SPAWN Frozen");
    assert!(rs.rows[0][0].to_string().ends_with("v1"));
    let p = Params::positional([rs.rows[0][0].clone()]);
    assert_eq!(db.execute("DESPAWN $1", &p).unwrap().rows, [[i(1)]]);
    assert_eq!(db.execute("DESPAWN $1", &p).unwrap_err().kind, ErrorKind::StaleEntity);
}

#[test]
fn add_overwrites_and_adds() {
    let mut db = world();
    assert_eq!(x(&mut db, "ADD Frozen, Health {hp: 1} TO 0v0").rows, [[i(1)]]);
    assert_eq!(
        q(&db, "SELECT Health.hp, Health.max, has(Frozen) WHERE entity = 0v0"),
        [[f(1.0), f(0.0), Value::Bool(true)]]
    );
    // Values may read the target's own components (the state before the statement).
    assert_eq!(x(&mut db, "ADD Small {v: Level.value * 10} WHERE Level.value < 5").rows, [[i(2)]]);
    assert_eq!(q(&db, "SELECT entity, Small.v ORDER BY entity"), [[e(0), i(10)], [e(1), i(30)]]);
    assert_eq!(x(&mut db, "ADD Frozen FROM !Frozen").rows, [[i(1)]]);
    assert_eq!(q(&db, "SELECT count(*) FROM Frozen"), [[i(3)]]);
    // An entity target that lacks what the values read is simply not targeted.
    assert_eq!(x(&mut db, "ADD Team {name: 'x'} WHERE entity = 9v0").rows, [[i(0)]]);
}

#[test]
fn remove_counts_entities_that_had_it() {
    let mut db = world();
    assert_eq!(x(&mut db, "REMOVE Frozen FROM 0v0").rows, [[i(0)]]);
    assert_eq!(x(&mut db, "REMOVE Frozen FROM 2v0").rows, [[i(1)]]);
    assert_eq!(x(&mut db, "REMOVE Level, Team WHERE Health.hp > 20").rows, [[i(2)]]);
    assert_eq!(
        q(&db, "SELECT entity, has(Level), has(Team) ORDER BY entity"),
        [
            [e(0), Value::Bool(true), Value::Bool(true)],
            [e(1), Value::Bool(false), Value::Bool(false)],
            [e(2), Value::Bool(false), Value::Bool(false)]
        ]
    );
    assert_eq!(x(&mut db, "REMOVE Level").rows, [[i(1)]]);
    assert_eq!(q(&db, "SELECT count(*) FROM Level"), [[i(0)]]);
}

#[test]
fn update_reads_the_state_before() {
    let mut db = world();
    assert_eq!(x(&mut db, "UPDATE Health SET hp = Health.hp + 10, max = 200 WHERE Team.name = 'red'").rows, [[i(2)]]);
    assert_eq!(
        q(&db, "SELECT Health.hp, Health.max ORDER BY entity"),
        [[f(20.0), f(200.0)], [f(60.0), f(100.0)], [f(40.0), f(200.0)]]
    );
    // Every new value comes from the state before: a swap swaps.
    x(&mut db, "UPDATE Position SET x = Position.y, y = Position.x");
    assert_eq!(
        q(&db, "SELECT Position.x, Position.y ORDER BY entity"),
        [[f(2.0), f(1.0)], [f(4.0), f(3.0)], [f(6.0), f(5.0)]]
    );
    // Other components in the values are required; FROM may exclude.
    assert_eq!(x(&mut db, "UPDATE Position SET x = Position.x + Level.value FROM Position, !Frozen").rows, [[i(2)]]);
    assert_eq!(q(&db, "SELECT Position.x ORDER BY entity"), [[f(3.0)], [f(7.0)], [f(6.0)]]);
    // An entity target.
    assert_eq!(x(&mut db, "UPDATE Level SET value = 0 FROM 1v0").rows, [[i(1)]]);
    assert_eq!(q(&db, "SELECT Level.value WHERE entity = 1v0"), [[i(0)]]);
    let p = Params::new().set("who", Value::Entity(Entity::from_parts(2, 0))).set("v", 42);
    assert_eq!(db.execute("UPDATE Level SET value = $v FROM $who", &p).unwrap().rows, [[i(1)]]);
    assert_eq!(q(&db, "SELECT Level.value WHERE entity = 2v0"), [[i(42)]]);
    // Int literal into f32, integral float into i32.
    x(&mut db, "UPDATE Level SET value = 5.0");
    assert_eq!(q(&db, "SELECT sum(Level.value)"), [[i(15)]]);
}

#[test]
fn schema_statements() {
    let mut db = world();
    let rs = x(&mut db, "CREATE COMPONENT Mana (current f64, regen u8, label string, at vec2, owner entity)");
    assert!(rs.columns.is_empty());
    assert_eq!(
        q(&db, "DESCRIBE Mana"),
        [
            [s("current"), s("f64"), Value::Null, s("table")],
            [s("regen"), s("u8"), Value::Null, s("table")],
            [s("label"), s("string"), Value::Null, s("table")],
            [s("at"), s("vec2"), Value::Null, s("table")],
            [s("owner"), s("entity"), Value::Null, s("table")]
        ]
    );
    x(&mut db, "SPAWN Mana {current: 2.5, at: [1, 2], label: 'hi'}");
    assert_eq!(q(&db, "SELECT Mana.at, Mana.owner, Mana.label"), [[Value::Vec2([1.0, 2.0]), Value::Null, s("hi")]]);
    let rs = db.query("SHOW COMPONENTS", ()).unwrap();
    assert_eq!(rs.columns, ["name", "fields", "storage", "entities"]);
    let health = rs.rows.iter().find(|r| r[0] == s("Health")).unwrap();
    assert_eq!(health, &vec![s("Health"), s("hp f32, max f32"), s("table"), i(3)]);
    let frozen = rs.rows.iter().find(|r| r[0] == s("Frozen")).unwrap();
    assert_eq!(frozen, &vec![s("Frozen"), s(""), s("table"), i(1)]);
    let rs = db.query("SHOW TABLES", ()).unwrap();
    assert_eq!(rs.columns, ["components", "rows"]);
    assert!(rs.rows.contains(&vec![s("Position, Health, Team, Level, Frozen"), i(1)]), "{:?}", rs.rows);
    let rs = db.query("SHOW INDEXES", ()).unwrap();
    assert_eq!(rs.columns, ["name", "kind", "component", "fields", "entries", "memory_bytes"]);
    assert!(rs.is_empty());
    // Indexes: created by text, listed, named by default after component, fields and kind.
    let rs = db.execute("CREATE INDEX team_idx ON Team (name) USING bitmap", ()).unwrap();
    assert_eq!(rs.rows, vec![vec![s("team_idx")]]);
    let rs = db.execute("CREATE INDEX ON Position USING rtree", ()).unwrap();
    assert_eq!(rs.rows, vec![vec![s("Position_x_y_rtree")]]);
    let rs = db.query("SHOW INDEXES", ()).unwrap();
    assert_eq!(rs.rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), [s("team_idx"), s("Position_x_y_rtree")]);
    assert!(db.query("CREATE INDEX ON Team (name) USING btree", ()).is_err(), "query() refuses mutations");
    let err = db.execute("CREATE INDEX ON Team (nme) USING bitmap", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::UnknownField);
    let err = db.execute("CREATE INDEX ON Team (name) USING hash", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    db.execute("DROP INDEX team_idx", ()).unwrap();
    let err = db.execute("DROP INDEX team_idx", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::UnknownIndex);
    // Duplicates.
    assert_eq!(db.execute("CREATE COMPONENT Health (hp f32)", ()).unwrap_err().kind, ErrorKind::Constraint);
    assert_eq!(db.execute("CREATE COMPONENT Twice (a i32, a f32)", ()).unwrap_err().kind, ErrorKind::Constraint);
}

#[test]
fn atomic_update() {
    let mut db = world();
    let none = Params::new();
    // Level 7 * 20 = 140 does not fit i8; entities 0 and 1 (20, 60) would: nothing is written.
    x(&mut db, "ADD Small {v: 1}");
    let m = fails_atomically(&mut db, "UPDATE Small SET v = Level.value * 20", &none, ErrorKind::Type);
    assert!(m.contains("Small.v"), "{m}");
    // A null computed for one target (division by zero) cannot be stored in f32.
    fails_atomically(&mut db, "UPDATE Health SET hp = Health.hp / (Level.value - 3), max = 1", &none, ErrorKind::Type);
    // 3.5 into i32 loses information.
    fails_atomically(&mut db, "UPDATE Level SET value = Level.value + 0.5", &none, ErrorKind::Type);
    // A stale entity target.
    fails_atomically(&mut db, "UPDATE Level SET value = 1 FROM 7v0", &none, ErrorKind::StaleEntity);
    // A runtime error in WHERE on the last row.
    fails_atomically(
        &mut db,
        "UPDATE Level SET value = 0 WHERE 10 / (Level.value - 7) > 0 OR 9223372036854775807 + Level.value > 0",
        &none,
        ErrorKind::Type,
    );
}

#[test]
fn atomic_add_remove_despawn_spawn() {
    let mut db = world();
    let none = Params::new();
    fails_atomically(&mut db, "ADD Small {v: Level.value * 30}", &none, ErrorKind::Type);
    fails_atomically(&mut db, "ADD Frozen, Small {v: 1000} TO 0v0", &none, ErrorKind::Type);
    fails_atomically(&mut db, "ADD Frozen TO 5v0", &none, ErrorKind::StaleEntity);
    fails_atomically(&mut db, "ADD Frozen, Frozen TO 0v0", &none, ErrorKind::Constraint);
    fails_atomically(&mut db, "ADD Health {hp: 1, hp: 2} TO 0v0", &none, ErrorKind::Constraint);
    fails_atomically(&mut db, "REMOVE Frozen FROM 3v0", &none, ErrorKind::StaleEntity);
    fails_atomically(&mut db, "DESPAWN 0v1", &none, ErrorKind::StaleEntity);
    fails_atomically(&mut db, "DESPAWN $1", Params::positional([i(3)]), ErrorKind::Parameter);
    fails_atomically(&mut db, "DESPAWN WHERE Level.value / 0 IS NULL AND $x", &none, ErrorKind::Parameter);
    fails_atomically(&mut db, "SPAWN Level {value: 3.5}", &none, ErrorKind::Type);
    fails_atomically(&mut db, "SPAWN Frozen, Level {value: 99999999999}", &none, ErrorKind::Type);
    fails_atomically(&mut db, "SPAWN Level {value: Health.hp}", &none, ErrorKind::Type);
    fails_atomically(&mut db, "SPAWN Helth {hp: 1}", &none, ErrorKind::UnknownComponent);
    fails_atomically(&mut db, "SPAWN Health {hq: 1}", &none, ErrorKind::UnknownField);
}

#[test]
fn atomic_with_failing_registered_function() {
    let mut db = world();
    // Fails on the third entity it sees: the two before must not have been despawned.
    let seen = std::sync::atomic::AtomicUsize::new(0);
    db.register_function("fragile", move |_| {
        if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2 {
            Err("gave up".into())
        } else {
            Ok(Value::Bool(true))
        }
    });
    let m = fails_atomically(&mut db, "DESPAWN WHERE fragile(entity)", Params::new(), ErrorKind::Constraint);
    assert!(m.contains("fragile(): gave up"), "{m}");
    db.register_function("fragile2", |args| match &args[0] {
        Value::Int(7) => Err("no sevens".into()),
        v => Ok(v.clone()),
    });
    fails_atomically(&mut db, "UPDATE Level SET value = fragile2(Level.value)", Params::new(), ErrorKind::Constraint);
}

#[test]
fn sparse_and_typed_components_mutate() {
    #[derive(ecsdb::Component, Debug, PartialEq, Clone, Copy)]
    struct Speed {
        v: f32,
    }
    let mut db = world();
    db.world_mut().define_component(&ComponentDef::new("Tag", &[("n", FieldType::U32)]).sparse()).unwrap();
    let ent = db.world_mut().spawn(Speed { v: 2.0 });
    assert_eq!(x(&mut db, "UPDATE Speed SET v = Speed.v * 3").rows, [[i(1)]]);
    assert_eq!(db.world().get::<Speed>(ent).unwrap(), &Speed { v: 6.0 });
    // Level is named, so required, unless FROM makes it optional.
    assert_eq!(x(&mut db, "ADD Tag {n: 4} WHERE has(Speed) OR Level.value = 3").rows[0][0], i(1));
    assert_eq!(x(&mut db, "ADD Tag {n: 4} FROM ?Level WHERE has(Speed) OR Level.value = 3").rows[0][0], i(2));
    assert_eq!(q(&db, "SELECT sum(Tag.n)"), [[i(8)]]);
    fails_atomically(&mut db, "UPDATE Tag SET n = Tag.n - 5", Params::new(), ErrorKind::Type);
    assert_eq!(x(&mut db, "REMOVE Tag, Speed WHERE true").rows, [[i(2)]]);
    assert!(db.world().get::<Speed>(ent).is_err());
}

/// A world of many entities over several tables (with and without Frozen, Team, a sparse
/// Tag), for statements whose targets span tables and are written in bulk.
fn many() -> Database {
    let mut db = world();
    db.world_mut().define_component(&ComponentDef::new("Tag", &[("n", FieldType::U32)]).sparse()).unwrap();
    let mut script = String::new();
    for k in 0..300 {
        let team = if k % 3 == 0 { "" } else { ", Team {name: 't'}" };
        let frozen = if k % 4 == 0 { ", Frozen" } else { "" };
        let tag = if k % 5 == 0 { ", Tag {n: 1}" } else { "" };
        script.push_str(&format!("SPAWN Level {{value: {}}}, Health {{hp: {k}, max: 300}}{team}{frozen}{tag};", k % 4));
    }
    db.execute_script(&script).unwrap();
    db
}

#[test]
fn bulk_writes_fail_halfway_without_changing_anything() {
    let mut db = many();
    let none = Params::new();
    // One value in the middle of the targets (entity 150) does not convert; every other would.
    x(&mut db, "UPDATE Level SET value = 10 FROM 150v0");
    fails_atomically(&mut db, "ADD Small {v: Level.value * 13}, Frozen", &none, ErrorKind::Type);
    // Values that stop converting after many targets, in every table.
    fails_atomically(
        &mut db,
        "ADD Tag {n: 200 - Health.hp}, Small {v: 1} WHERE Health.hp > 100",
        &none,
        ErrorKind::Type,
    );
    // A registered function that fails on its 200th call: the scan stops halfway through
    // the targets, after many were found in several tables.
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    db.register_function("fails_late", move |_| {
        if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 199 {
            Err("too late".into())
        } else {
            Ok(Value::Bool(true))
        }
    });
    for text in [
        "DESPAWN WHERE fails_late(entity)",
        "REMOVE Frozen, Team, Tag WHERE fails_late(entity)",
        "ADD Small {v: 1}, Tag {n: 2} WHERE fails_late(entity)",
    ] {
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        fails_atomically(&mut db, text, &none, ErrorKind::Constraint);
    }
    // The same statements with nothing failing write every target.
    calls.store(1000, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(x(&mut db, "ADD Small {v: Level.value}, Tag {n: 2} WHERE Health.hp < 100").rows, [[i(103)]]);
    assert_eq!(q(&db, "SELECT count(*), sum(Small.v), sum(Tag.n) FROM Small, Tag"), [[i(103), i(161), i(206)]]);
    assert_eq!(x(&mut db, "REMOVE Frozen, Tag WHERE Health.hp >= 50").rows, [[i(131)]]);
    assert_eq!(q(&db, "SELECT count(*) FROM Frozen"), [[i(14)]]);
    assert_eq!(x(&mut db, "DESPAWN WHERE has(Team) AND Health.hp < 150").rows, [[i(103)]]);
    assert_eq!(q(&db, "SELECT count(*), sum(Health.hp)"), [[i(200), f(37350.0)]]);
}
