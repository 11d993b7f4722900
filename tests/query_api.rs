//! The Rust API: parameters, prepared statements, scripts, registered functions, typed
//! selection, JSON.

mod common;

use common::db::rows;

use ecsdb::query::{Database, ErrorKind, Params, ResultSet, is_read_only};
use ecsdb::{Component, Entity, Value};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Velocity {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Health {
    hp: f32,
}

#[derive(Component, Debug, Clone, PartialEq)]
struct Name {
    value: String,
}

#[derive(Component)]
struct Frozen;

fn world() -> (Database, Vec<Entity>) {
    let mut db = Database::new();
    let w = db.world_mut();
    let es = vec![
        w.spawn((Position { x: 0.0, y: 0.0 }, Velocity { x: 1.0, y: 0.0 }, Health { hp: 10.0 })),
        w.spawn((Position { x: 5.0, y: 5.0 }, Velocity { x: 0.0, y: 1.0 }, Health { hp: 80.0 })),
        w.spawn((Position { x: 9.0, y: 9.0 }, Velocity { x: 1.0, y: 1.0 }, Health { hp: 30.0 }, Frozen)),
        w.spawn((Name { value: "ziggy".into() }, Health { hp: 1.0 })),
    ];
    (db, es)
}

fn ints(rs: &ResultSet) -> Vec<i64> {
    rs.rows
        .iter()
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("not an int: {v:?}"),
        })
        .collect()
}

#[test]
fn params_positional_and_named() {
    let (db, es) = world();
    let p = Params::positional([50]);
    assert_eq!(ints(&db.query("SELECT count(*) WHERE Health.hp < $1", &p).unwrap()), [3]);
    let p = Params::new().bind(5).bind(85.5);
    assert_eq!(ints(&db.query("SELECT count(*) WHERE Health.hp BETWEEN $1 AND $2", &p).unwrap()), [3]);
    let p = Params::new().set("name", "ziggy").set("$min", 0);
    assert_eq!(ints(&db.query("SELECT count(*) WHERE Name.value = $name AND Health.hp > $min", &p).unwrap()), [1]);
    // The same parameter used twice is one value.
    let p = Params::positional([30]);
    assert_eq!(ints(&db.query("SELECT count(*) WHERE Health.hp >= $1 AND Health.hp <= $1", &p).unwrap()), [1]);
    let p = Params::positional([Value::Entity(es[1])]);
    let rs = db.query("SELECT Health.hp WHERE entity = $1", &p).unwrap();
    assert_eq!(rs.rows, [[Value::Float(80.0)]]);
    // Never spliced into text: a quote is just a character.
    let p = Params::positional(["x' OR '1' = '1"]);
    assert_eq!(ints(&db.query("SELECT count(*) WHERE Name.value = $1", &p).unwrap()), [0]);
    // Missing, wrong type.
    assert_eq!(db.query("SELECT $1", ()).unwrap_err().kind, ErrorKind::Parameter);
    let e = db.query("SELECT count(*) WHERE Health.hp < $1", Params::positional(["ten"])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    // Null compares as null: no rows.
    assert_eq!(
        ints(&db.query("SELECT count(*) WHERE Health.hp < $1", Params::positional([Value::Null])).unwrap()),
        [0]
    );
}

#[test]
fn prepared_statements_pick_up_new_tables() {
    let (mut db, _) = world();
    let mut low = db.prepare("SELECT count(*) WHERE Health.hp < $1").unwrap();
    assert_eq!(low.columns(), ["count(*)"]);
    assert!(low.is_read_only());
    assert_eq!(low.parameters(), ["$1"]);
    assert_eq!(ints(&low.query(&db, Params::positional([50])).unwrap()), [3]);
    // A new archetype (Health + Name + Velocity) and a new component appear after prepare.
    #[derive(Component)]
    struct Shield;
    db.world_mut().spawn((Health { hp: 2.0 }, Name { value: "new".into() }, Velocity { x: 0.0, y: 0.0 }));
    db.world_mut().spawn((Health { hp: 3.0 }, Shield));
    db.execute("CREATE COMPONENT Mana (v f32)", ()).unwrap();
    db.execute("SPAWN Health {hp: 4}, Mana {v: 1}", ()).unwrap();
    assert_eq!(ints(&low.query(&db, Params::positional([50])).unwrap()), [6]);
    assert_eq!(ints(&low.execute(&mut db, Params::positional([3.5])).unwrap()), [3]);
    let plan = low.explain(&db).unwrap().join("\n");
    assert!(plan.contains("Health.hp < $1 [f32 column kernel]"), "{plan}");
    // Prepared mutations run again and again.
    let mut heal = db.prepare("UPDATE Health SET hp = Health.hp + $1 WHERE Health.hp < 50").unwrap();
    assert_eq!(heal.columns(), ["count"]);
    assert!(!heal.is_read_only());
    assert_eq!(ints(&heal.execute(&mut db, Params::positional([10])).unwrap()), [6]);
    assert_eq!(ints(&heal.execute(&mut db, Params::positional([10])).unwrap()), [6]);
    let e = heal.query(&db, Params::positional([1])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Constraint);
    // A prepared statement belongs to its database.
    let other = Database::new();
    assert_eq!(low.query(&other, Params::positional([1])).unwrap_err().kind, ErrorKind::Constraint);
    // Preparing validates everything that does not need data.
    assert_eq!(db.prepare("SELECT Nope.x").unwrap_err().kind, ErrorKind::UnknownComponent);
}

#[test]
fn scripts() {
    let mut db = Database::new();
    let results = db
        .execute_script(
            "-- a comment
             CREATE COMPONENT Hp (v f32);
             SPAWN Hp {v: 1}; SPAWN Hp {v: 2};;
             SELECT sum(Hp.v);",
        )
        .unwrap();
    assert_eq!(results.len(), 4);
    assert_eq!(results[3].rows, [[Value::Float(3.0)]]);
    // Stops at the first error; earlier statements stay applied.
    let e = db.execute_script("SPAWN Hp {v: 3}; SPAWN Hp {v: 'x'}; SPAWN Hp {v: 4}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    assert_eq!(ints(&db.query("SELECT count(*)", ()).unwrap()), [3]);
    // execute_script_each reports every statement and can go on after errors.
    let text = "SPAWN Hp {v: 5}; SELECT Nope.v; SELECT count(*) WHERE Hp.v > $1";
    let mut seen = Vec::new();
    db.execute_script_each(text, Params::positional([0]), |s, r| {
        seen.push((s.index, s.span.text(text).to_string(), r.as_ref().map(|rs| rs.rows.clone()).map_err(|e| e.kind)));
        true
    })
    .unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].1, "SPAWN Hp {v: 5}");
    assert_eq!(seen[1].2, Err(ErrorKind::UnknownComponent));
    assert_eq!(seen[2].2, Ok(vec![vec![Value::Int(4)]]));
    // Each statement says whether it could change the world, from its syntax tree.
    let mut read_only = Vec::new();
    db.execute_script_each("SELECT count(*); TICK; SET fixed_hz = 50; EXPLAIN SELECT Hp.v", (), |s, _| {
        read_only.push(s.read_only);
        true
    })
    .unwrap();
    assert_eq!(read_only, [true, false, false, true]);
    let mut n = 0;
    db.execute_script_each("SELECT Nope.v; SPAWN Hp {v: 6}", Params::new(), |_, _| {
        n += 1;
        false
    })
    .unwrap();
    assert_eq!(n, 1);
    assert_eq!(ints(&db.query("SELECT count(*)", ()).unwrap()), [4]);
    // A script that does not parse runs nothing.
    assert_eq!(
        db.execute_script_each("SPAWN Hp; SELEC 1", Params::new(), |_, _| true).unwrap_err().kind,
        ErrorKind::Syntax
    );
    assert_eq!(ints(&db.query("SELECT count(*)", ()).unwrap()), [4]);
}

#[test]
fn read_only_checks() {
    assert_eq!(is_read_only("SELECT 1"), Ok(true));
    assert_eq!(is_read_only("EXPLAIN SELECT 1"), Ok(true));
    assert_eq!(is_read_only("Position, !Frozen"), Ok(true));
    assert_eq!(is_read_only("SHOW TABLES"), Ok(true));
    assert_eq!(is_read_only("DESCRIBE X"), Ok(true));
    for t in ["SPAWN", "DESPAWN 1v0", "ADD A TO 1v0", "REMOVE A FROM 1v0", "UPDATE A SET x = 1", "CREATE COMPONENT A"] {
        assert_eq!(is_read_only(t), Ok(false), "{t}");
    }
    assert_eq!(is_read_only("SELEC 1").unwrap_err().kind, ErrorKind::Syntax);
    assert_eq!(is_read_only("SELEC"), Ok(true), "a bare term list naming a component");
    let (db, _) = world();
    let e = db.query("SPAWN", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Constraint);
    assert!(e.message.contains("mutates"));
}

#[test]
fn registered_functions() {
    let (mut db, _) = world();
    db.register_function("Visible", |args| match args {
        [Value::Float(x), Value::Float(y)] => Ok(Value::Bool(x + y < 12.0)),
        [Value::Null, _] | [_, Value::Null] => Ok(Value::Null),
        _ => Err("visible(x, y) takes two numbers".into()),
    });
    let rs = db.query("SELECT count(*) WHERE VISIBLE(Position.x, Position.y)", ()).unwrap();
    assert_eq!(ints(&rs), [2]);
    let rs = db.query("SELECT visible(Position.x, Position.y) AS v FROM Position ORDER BY v", ()).unwrap();
    assert_eq!(rs.rows, [[Value::Bool(false)], [Value::Bool(true)], [Value::Bool(true)]]);
    let e = db.query("SELECT visible(1)", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Constraint);
    assert!(e.message.contains("visible(x, y) takes two numbers"), "{}", e.message);
    // Suggested when misspelt; built-ins cannot be replaced.
    let e = db.query("SELECT visibel(1, 2)", ()).unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("visible"));
    assert!(db.try_register_function("sqrt", |_| Ok(Value::Null)).is_err());
    assert!(db.try_register_function("2bad", |_| Ok(Value::Null)).is_err());
    db.register_function("sqrt", |_| Ok(Value::Int(0)));
    assert_eq!(rows(&db, "SELECT sqrt(16) FROM Frozen"), [[Value::Float(4.0)]]);
    // A function's result has no static type: it may feed anything it fits.
    db.register_function("double", |args| match args {
        [Value::Float(x)] => Ok(Value::Float(x * 2.0)),
        [v] => Ok(v.clone()),
        _ => Err("one argument".into()),
    });
    assert_eq!(
        rows(&db, "SELECT sum(double(Health.hp)) + 1"),
        [[Value::Float(2.0 * (10.0 + 80.0 + 30.0 + 1.0) + 1.0)]]
    );
    db.execute("UPDATE Health SET hp = double(Health.hp) WHERE Health.hp < 5", ()).unwrap();
    assert_eq!(rows(&db, "SELECT Health.hp WHERE has(Name)"), [[Value::Float(2.0)]]);
}

#[test]
fn typed_selection() {
    let (mut db, es) = world();
    // The example of the issue: text filters, typed mutation.
    db.select::<(&mut Position, &Velocity)>("FROM Position, Velocity WHERE Health.hp < $1", Params::positional([50]))
        .unwrap()
        .for_each(|(mut p, v)| {
            p.x += v.x;
            p.y += v.y;
        });
    let w = db.world();
    assert_eq!(w.get::<Position>(es[0]).unwrap(), &Position { x: 1.0, y: 0.0 });
    assert_eq!(w.get::<Position>(es[1]).unwrap(), &Position { x: 5.0, y: 5.0 });
    assert_eq!(w.get::<Position>(es[2]).unwrap(), &Position { x: 10.0, y: 10.0 });
    // WHERE alone, a SELECT, a bare term list.
    let n = db.select::<&Health>("WHERE Health.hp > 20", ()).unwrap().count();
    assert_eq!(n, 2);
    let mut got: Vec<Entity> = db.select::<Entity>("SELECT entity FROM Position, !Frozen", ()).unwrap().collect();
    got.sort();
    assert_eq!(got, [es[0], es[1]]);
    assert_eq!(db.select::<Entity>("Position, Frozen", ()).unwrap().count(), 1);
    // ORDER BY + LIMIT choose the set.
    let top: Vec<Entity> = db.select::<Entity>("SELECT entity ORDER BY Health.hp DESC LIMIT 2", ()).unwrap().collect();
    assert_eq!(top.len(), 2);
    assert!(top.contains(&es[1]) && top.contains(&es[2]));
    // Selected entities that do not match the typed query are skipped.
    assert_eq!(db.select::<&Position>("WHERE Health.hp < 5", ()).unwrap().count(), 0);
    let ents = db.select_entities("-- hi\n  where Health.hp < 5", ()).unwrap();
    assert_eq!(ents, [es[3]]);
    // Errors: bad text with positions in the caller's text, mutations, aggregates, aliasing.
    let text = "WHERE Helth.hp < 5";
    let e = db.select::<Entity>(text, ()).err().unwrap();
    assert_eq!(e.line_col(text), Some((1, 7)));
    let text = "FROM Position WHERE (";
    let e = db.select::<Entity>(text, ()).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert!(e.span.unwrap().start <= text.len());
    assert!(db.select::<Entity>("DESPAWN 0v0", ()).is_err());
    assert!(db.select::<Entity>("SELECT count(*)", ()).is_err());
    assert!(db.select::<(&mut Position, &Position)>("Position", ()).is_err());
}

#[test]
fn json_results() {
    let (db, _) = world();
    let rs = db.query("SELECT entity, Name.value, Health.hp, Health, [1, 2], null, true, 3 FROM Name", ()).unwrap();
    assert_eq!(
        rs.to_json_string(),
        r#"{"columns":["entity","Name.value","Health.hp","Health","[1, 2]","null","true","3"],"rows":[["3v0","ziggy",1.0,{"hp":1.0},[1.0,2.0],null,true,3]]}"#
    );
    assert_eq!(rs.column_index("Health.hp"), Some(2));
    let empty = db.query("SELECT entity WHERE Health.hp > 1000", ()).unwrap();
    assert_eq!(empty.to_json_string(), r#"{"columns":["entity"],"rows":[]}"#);
    assert!(empty.is_empty());
}
