//! The planner's use of secondary indexes from text: function indexes called as
//! `name(Component)`, several indexes intersected or united, presence bitmaps, and ORDER BY
//! answered by walking an index's ordered stream. Every answer is checked against the same
//! query without indexes; EXPLAIN is checked to show the path under test.

mod common;

use common::db::{explain, rows, sorted};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ecsdb::query::{Database, ErrorKind, Params, PlanOptions};
use ecsdb::{Component, ComponentDef, Value};

const TEAMS: [&str; 4] = ["red", "blue", "green", "gold"];

/// `n` entities on a 60-wide grid: Position, Health (hp = i % 97), Team (4 names), Level
/// (i % 13) on two thirds; Frozen (a sparse tag) on every 50th.
fn world_of(n: usize) -> Database {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Position (x f32, y f32, z f32);
         CREATE COMPONENT Health (hp f32, max f32);
         CREATE COMPONENT Team (name string);
         CREATE COMPONENT Level (value i32)",
    )
    .unwrap();
    let w = db.world_mut();
    w.define_component(&ComponentDef::new("Frozen", &[]).sparse()).unwrap();
    let f = |x: usize| Value::Float(x as f64);
    for i in 0..n {
        let position = [("x", f(i % 60)), ("y", f(i / 60)), ("z", f(0))];
        let health = [("hp", f(i % 97)), ("max", f(100 + i % 7))];
        let team = [("name", Value::Str(TEAMS[i % 4].into()))];
        let level = [("value", Value::Int((i % 13) as i64))];
        let mut comps: Vec<(&str, &[(&str, Value)])> =
            vec![("Position", &position[..]), ("Health", &health[..]), ("Team", &team[..])];
        if i % 3 != 2 {
            comps.push(("Level", &level[..]));
        }
        let e = w.spawn_values(&comps).unwrap();
        if i % 50 == 0 {
            w.insert_values(e, &[("Frozen", &[])]).unwrap();
        }
    }
    db
}

/// 3,000 entities, planned with every index that applies (on a world this small the cost
/// model would mostly scan; `cost_model_chooses_by_estimate` checks its choices).
fn world() -> Database {
    let mut db = world_of(3000);
    db.set_plan_options(PlanOptions { prefer_indexes: true });
    db
}

fn east_of(x: f64) -> impl Fn(&Value) -> bool + Send + Sync + 'static {
    move |p: &Value| match p {
        Value::Object(fields) => fields[0].1.as_f64().is_some_and(|px| px > x),
        _ => false,
    }
}

#[test]
fn function_index_is_callable_from_text_and_answers_from_the_index() {
    let mut db = world();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = {
        let calls = calls.clone();
        let east = east_of(56.0);
        move |p: &Value| {
            calls.fetch_add(1, Ordering::Relaxed);
            east(p)
        }
    };
    assert_eq!(db.create_function_index("east", "Position", counted).unwrap(), "east");
    let q = "SELECT entity, Position.x WHERE east(Position)";
    let same = "SELECT entity, Position.x WHERE Position.x > 56";
    assert_eq!(sorted(&db, q), sorted(&db, same));
    assert_eq!(sorted(&db, q).len(), 150);
    let plan = explain(&db, q);
    assert!(plan.contains("USING INDEX east (function) FOR east(Position)"), "{plan}");

    // Built once (3,000 calls); unchanged rows are never evaluated again, by queries or refreshes.
    let built = calls.load(Ordering::Relaxed);
    assert_eq!(built, 3000);
    for _ in 0..3 {
        assert_eq!(rows(&db, "SELECT count(*) WHERE east(Position)"), [[Value::Int(150)]]);
        // In a scan (combined with something else) and as a projected value, too.
        rows(&db, "SELECT east(Position), count(*) FROM Position GROUP BY east(Position)");
    }
    assert_eq!(calls.load(Ordering::Relaxed), built);
    // Two rows change: exactly two evaluations.
    db.execute("UPDATE Position SET x = 59 WHERE Position.x = 0 AND Position.y < 2", ()).unwrap();
    assert_eq!(rows(&db, "SELECT count(*) WHERE east(Position)"), [[Value::Int(152)]]);
    assert_eq!(calls.load(Ordering::Relaxed), built + 2);
    assert_eq!(sorted(&db, q), sorted(&db, same));

    // Null where the entity lacks the component; GROUP BY over it; a spawned entity lacking it.
    db.execute("SPAWN Health {hp: 1, max: 1}", ()).unwrap();
    let groups = sorted(&db, "SELECT east(Position) AS e, count(*) FROM ?Position GROUP BY east(Position)");
    assert_eq!(
        groups,
        [
            vec![Value::Bool(false), Value::Int(2848)],
            vec![Value::Bool(true), Value::Int(152)],
            vec![Value::Null, Value::Int(1)]
        ]
    );
    // Names are case-insensitive like other functions; combined with other predicates.
    assert_eq!(
        sorted(&db, "SELECT entity WHERE EAST(Position) AND Team.name = 'red'"),
        sorted(&db, "SELECT entity WHERE Position.x > 56 AND Team.name = 'red'")
    );
    assert_eq!(
        sorted(&db, "SELECT entity WHERE NOT east(Position) AND Health.hp < 3"),
        sorted(&db, "SELECT entity WHERE Position.x <= 56 AND Health.hp < 3")
    );

    // A prepared statement outlives the index: its predicate then runs per row, same answer.
    let mut prepared = db.prepare("SELECT count(*) WHERE east(Position)").unwrap();
    db.execute("DROP INDEX east", ()).unwrap();
    assert_eq!(prepared.execute(&mut db, ()).unwrap().rows, [[Value::Int(152)]]);
    // Without the index the name is unknown again.
    let err = db.query("SELECT count(*) WHERE east(Position)", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::UnknownFunction);
}

#[test]
fn function_index_calls_are_checked() {
    let mut db = world();
    db.create_function_index("east", "Position", east_of(30.0)).unwrap();
    let msg = |q: &str| {
        let e = db.query(q, ()).unwrap_err();
        (e.kind, e.to_string())
    };
    let (kind, text) = msg("SELECT entity WHERE east(Health)");
    assert_eq!(kind, ErrorKind::Type);
    assert!(text.contains("east() is a function index over Position: call it as east(Position)"), "{text}");
    assert_eq!(msg("SELECT entity WHERE east()").0, ErrorKind::Type);
    assert_eq!(msg("SELECT entity WHERE east(Position.x)").0, ErrorKind::Type);
    let e = db.query("SELECT entity WHERE eats(Position)", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownFunction);
    assert!(e.render("SELECT entity WHERE eats(Position)").contains("east"), "suggests the index's name");
    // Names a built-in or a registered function would shadow are refused.
    assert!(db.create_function_index("abs", "Position", east_of(0.0)).is_err());
    db.register_function("twice", |a| Ok(a[0].clone()));
    let e = db.create_function_index("TWICE", "Position", east_of(0.0)).unwrap_err();
    assert!(e.to_string().contains("registered function"), "{e}");
}

#[derive(Component)]
struct Hp {
    hp: f32,
}

#[test]
fn typed_function_index_from_text() {
    let mut db = Database::new();
    db.set_plan_options(PlanOptions { prefer_indexes: true });
    for i in 0..200 {
        db.world_mut().spawn((Hp { hp: i as f32 },));
    }
    db.create_function_index_typed("dying", |h: &Hp| h.hp < 5.0).unwrap();
    assert_eq!(rows(&db, "SELECT count(*) WHERE dying(Hp)"), [[Value::Int(5)]]);
    db.execute("UPDATE Hp SET hp = 0 WHERE Hp.hp >= 195", ()).unwrap();
    assert_eq!(rows(&db, "SELECT count(*) WHERE dying(Hp)"), [[Value::Int(10)]]);
}

#[test]
fn several_indexes_intersect_and_unite() {
    let mut db = world();
    let queries = [
        // AND of two selective indexes: intersected before any row is read.
        ("SELECT entity WHERE Health.hp < 8 AND within(Position, [30, 25, 0], 9)", "USING INDEXES"),
        // OR of indexable predicates: a union.
        ("SELECT entity WHERE Health.hp = 3 OR Level.value = 11 AND Health.hp < 20", " OR "),
        ("SELECT entity WHERE (Health.hp < 2 OR within(Position, [1, 1, 0], 2)) AND Team.name = 'red'", " OR "),
        // A sparse tag's presence bitmap, alone and with another index.
        ("SELECT entity FROM Frozen", "presence on Frozen"),
        ("SELECT entity FROM Frozen WHERE Health.hp < 40", "presence on Frozen"),
        ("SELECT entity WHERE has(Frozen) AND Team.name != 'red'", "presence on Frozen"),
    ];
    let before: Vec<_> = queries.iter().map(|(q, _)| sorted(&db, q)).collect();
    db.execute_script(
        "CREATE INDEX ON Health (hp) USING btree;
         CREATE INDEX ON Level (value) USING btree;
         CREATE INDEX ON Team (name) USING bitmap;
         CREATE INDEX ON Position USING rtree;
         CREATE INDEX ON Frozen USING bitmap",
    )
    .unwrap();
    for ((q, how), expected) in queries.iter().zip(&before) {
        assert_eq!(&sorted(&db, q), expected, "{q}");
        let plan = explain(&db, q);
        assert!(plan.contains(how), "{q}:\n{plan}");
    }
    // Conjuncts the intersected exact indexes answered are not tested again; a union's
    // conjunct is.
    let plan = explain(&db, queries[0].0);
    assert!(plan.contains("Health.hp < 8 [decided by the index]"), "{plan}");
    assert!(!plan.contains("column kernel"), "{plan}");
    let plan = explain(&db, queries[2].0);
    assert!(plan.contains("Team.name = 'red' [decided by the index]") && plan.contains("[evaluator]"), "{plan}");
}

/// On 30,000 entities the cost model decides: an index where it saves row visits, a scan
/// where it would not, a second index only where intersecting pays, a walk only where it
/// pulls fewer rows than the WHERE clause's best access.
#[test]
fn cost_model_chooses_by_estimate() {
    let mut db = world_of(30_000);
    db.execute_script(
        "CREATE INDEX ON Health (hp) USING btree;
         CREATE INDEX ON Level (value) USING btree;
         CREATE INDEX ON Team (name) USING bitmap;
         CREATE INDEX ON Position USING rtree",
    )
    .unwrap();
    let cases = [
        // ~310 rows of 30,000: the btree.
        ("SELECT entity WHERE Health.hp = 3", "USING INDEX Health_hp_btree"),
        // A quarter of the rows: scanning is cheaper than visiting them one by one, and
        // EXPLAIN says that an index applied but cost more.
        ("SELECT entity WHERE Team.name = 'red'", "SCAN"),
        (
            "SELECT entity WHERE Team.name = 'red'",
            "Team_name_bitmap (bitmap) FOR = on Team(name) would cost more than scanning",
        ),
        ("SELECT entity WHERE Health.max = 100", "no index applies"),
        ("SELECT entity WHERE Health.hp < 60", "SCAN"),
        // A cheap bitmap narrows a selective btree answer: intersected.
        ("SELECT entity WHERE Health.hp = 3 AND Team.name = 'red'", "USING INDEXES"),
        // A large btree range costs more to compute than it saves: one index.
        ("SELECT entity WHERE Health.hp = 3 AND Level.value > 1", "USING INDEX Health_hp_btree"),
        // ORDER BY a btree field with a small LIMIT: walk the stream.
        ("SELECT entity ORDER BY Health.hp DESC LIMIT 5", "ordered walk"),
        ("SELECT entity WHERE Team.name = 'blue' ORDER BY Level.value LIMIT 5", "ordered walk"),
        // ... unless the WHERE clause's index finds fewer rows than the walk would pull.
        ("SELECT entity WHERE Health.hp = 3 AND Team.name = 'red' ORDER BY Level.value LIMIT 5", "USING INDEXES"),
        ("SELECT entity ORDER BY distance(Position, [9, 9, 0]) LIMIT 5", "nearest-neighbour walk"),
    ];
    for (q, how) in cases {
        let plan = explain(&db, q);
        assert!(plan.contains(how), "{q}:\n{plan}");
        if how == "USING INDEXES" || how == "SCAN" || how.starts_with("USING INDEX ") {
            assert!(!plan.contains("walk"), "{q}:\n{plan}");
        }
    }
    // The answers are those of a scan.
    let indexed: Vec<_> = cases.iter().map(|(q, _)| rows(&db, q)).collect();
    let mut scan = Database::from_world(std::mem::take(db.world_mut()));
    for name in ["Health_hp_btree", "Level_value_btree", "Team_name_bitmap", "Position_x_y_z_rtree"] {
        scan.execute(&format!("DROP INDEX {name}"), ()).unwrap();
    }
    for ((q, _), expected) in cases.iter().zip(&indexed) {
        assert_eq!(&rows(&scan, q), expected, "{q}");
    }
}

#[test]
fn order_by_is_answered_by_walking_an_index() {
    let mut db = world();
    let queries = [
        // One key: the stream's order is the answer's order (ties by entity).
        ("SELECT entity, Health.hp ORDER BY Health.hp LIMIT 10", "ordered walk"),
        ("SELECT entity, Health.hp ORDER BY Health.hp DESC LIMIT 7 OFFSET 3", "ordered walk"),
        // A range on the same field bounds the stream; other filters make the prefix grow.
        (
            "SELECT entity, Health.hp WHERE Health.hp > 50 AND Team.name = 'gold' ORDER BY Health.hp LIMIT 12",
            "ordered walk",
        ),
        ("SELECT entity, Level.value FROM Level ORDER BY Level.value DESC LIMIT 5", "ordered walk"),
        // More keys: rows tied with the last one kept on the first key are fetched again.
        ("SELECT entity, Health.hp, Team.name ORDER BY Health.hp, Team.name DESC LIMIT 9", "fetched again"),
        ("SELECT entity ORDER BY Health.hp DESC, Health.max, entity DESC LIMIT 25", "fetched again"),
        (
            "SELECT entity, Team.name ORDER BY distance(Position, [20.5, 10, 0]), Team.name DESC LIMIT 6",
            "nearest-neighbour walk",
        ),
        ("SELECT entity ORDER BY distance(Position, [3, 3, 0]), Health.hp DESC LIMIT 4 OFFSET 1", "fetched again"),
    ];
    let before: Vec<_> = queries.iter().map(|(q, _)| rows(&db, q)).collect();
    db.execute_script(
        "CREATE INDEX ON Health (hp) USING btree;
         CREATE INDEX ON Level (value) USING btree;
         CREATE INDEX ON Team (name) USING bitmap;
         CREATE INDEX ON Position USING rtree",
    )
    .unwrap();
    for ((q, how), expected) in queries.iter().zip(&before) {
        assert_eq!(&rows(&db, q), expected, "{q}");
        let plan = explain(&db, q);
        assert!(plan.contains(how), "{q}:\n{plan}");
    }
    // Optional components could sort by null: no walk.
    let q = "SELECT entity FROM ?Level ORDER BY Level.value LIMIT 3";
    assert!(!explain(&db, q).contains("walk"), "{}", explain(&db, q));
    // Parameters: the bounds and the point bind at run time.
    let mut p = db.prepare("SELECT entity ORDER BY distance(Position, $1), Health.hp LIMIT 3").unwrap();
    let with = |x: f64| Params::positional([Value::Vec3([x, 4.0, 0.0])]);
    let a = p.query(&db, with(10.0)).unwrap().rows;
    let b = p.query(&db, with(40.0)).unwrap().rows;
    db.execute("DROP INDEX Position_x_y_z_rtree", ()).unwrap();
    assert_eq!(rows(&db, "SELECT entity ORDER BY distance(Position, [10, 4, 0]), Health.hp LIMIT 3"), a);
    assert_eq!(rows(&db, "SELECT entity ORDER BY distance(Position, [40, 4, 0]), Health.hp LIMIT 3"), b);
}

#[test]
fn index_walks_stay_exact_after_writes() {
    let mut db = world();
    db.execute_script(
        "CREATE INDEX ON Health (hp) USING btree;
         CREATE INDEX ON Position USING rtree",
    )
    .unwrap();
    let queries = [
        "SELECT entity, Health.hp ORDER BY Health.hp, Team.name LIMIT 15",
        "SELECT entity ORDER BY distance(Position, [12, 12, 0]), Health.hp DESC LIMIT 8",
        "SELECT entity WHERE Health.hp BETWEEN 10 AND 20 OR within(Position, [5, 5, 0], 3)",
    ];
    for (round, team) in TEAMS.iter().enumerate() {
        db.execute(&format!("UPDATE Health SET hp = Health.hp + {round} WHERE Team.name = '{team}'"), ()).unwrap();
        db.execute(&format!("UPDATE Position SET x = Position.x + 1.5 WHERE Health.hp < {}", 10 * round), ()).unwrap();
        db.execute(&format!("DESPAWN WHERE Health.hp = {}", 40 + round), ()).unwrap();
        let indexed: Vec<_> = queries.iter().map(|q| rows(&db, q)).collect();
        let plans: String = queries.iter().map(|q| explain(&db, q)).collect();
        assert!(plans.contains("walk") && plans.contains("USING INDEX"), "{plans}");
        let mut scan = Database::from_world(std::mem::take(db.world_mut()));
        for name in ["Health_hp_btree", "Position_x_y_z_rtree"] {
            scan.execute(&format!("DROP INDEX {name}"), ()).unwrap();
        }
        let scanned: Vec<_> = queries.iter().map(|q| rows(&scan, q)).collect();
        for ((q, a), b) in queries.iter().zip(&indexed).zip(&scanned) {
            let (mut a, mut b) = (a.clone(), b.clone());
            if !q.contains("ORDER BY") {
                a.sort_by_key(|r| format!("{r:?}"));
                b.sort_by_key(|r| format!("{r:?}"));
            }
            assert_eq!(a, b, "round {round}: {q}");
        }
        db = scan;
        db.set_plan_options(PlanOptions { prefer_indexes: true });
        db.execute_script(
            "CREATE INDEX ON Health (hp) USING btree;
             CREATE INDEX ON Position USING rtree",
        )
        .unwrap();
    }
}

/// A prepared statement plans its access path again after `CREATE INDEX` or `DROP INDEX`
/// (as SQLite prepares again after a schema change): a new index is used from the next run,
/// a dropped one no longer named, and the answers never change.
#[test]
fn prepared_statements_follow_index_changes() {
    let mut db = world();
    let mut search = db.prepare("SELECT entity, Health.hp WHERE Health.hp < 3").unwrap();
    let mut walk = db.prepare("SELECT entity, Health.hp ORDER BY Health.hp DESC LIMIT 5").unwrap();
    let mut delete = db.prepare("DESPAWN FROM Health WHERE Health.hp > 95").unwrap();
    let plan = |p: &mut ecsdb::query::Prepared, db: &Database| p.explain(db).unwrap().join("\n");
    let search_rows = search.query(&db, ()).unwrap().rows;
    let walk_rows = walk.query(&db, ()).unwrap().rows;
    assert!(plan(&mut search, &db).contains("SCAN"), "{}", plan(&mut search, &db));
    assert!(!plan(&mut walk, &db).contains("walk"), "{}", plan(&mut walk, &db));

    db.execute("CREATE INDEX hp ON Health (hp) USING btree", ()).unwrap();
    assert!(plan(&mut search, &db).contains("USING INDEX hp (btree)"), "{}", plan(&mut search, &db));
    assert!(plan(&mut walk, &db).contains("ordered walk USING INDEX hp"), "{}", plan(&mut walk, &db));
    assert_eq!(search.query(&db, ()).unwrap().rows, search_rows);
    assert_eq!(walk.query(&db, ()).unwrap().rows, walk_rows);
    // A mutation's row source follows too: it finds its rows through the new index.
    let doomed = rows(&db, "SELECT count(*) WHERE Health.hp > 95")[0][0].clone();
    assert_eq!(delete.execute(&mut db, ()).unwrap().rows[0][0], doomed);
    assert_eq!(rows(&db, "SELECT count(*) WHERE Health.hp > 95")[0][0], Value::Int(0));

    db.execute("DROP INDEX hp", ()).unwrap();
    assert!(!plan(&mut search, &db).contains("INDEX"), "{}", plan(&mut search, &db));
    assert!(!plan(&mut walk, &db).contains("walk"), "{}", plan(&mut walk, &db));
    assert_eq!(search.query(&db, ()).unwrap().rows, search_rows);
    let after_delete = rows(&db, "SELECT entity, Health.hp ORDER BY Health.hp DESC LIMIT 5");
    assert_eq!(walk.query(&db, ()).unwrap().rows, after_delete);
}

/// `n` entities of Zone in clustered order: `id = i / 1000` (ids arrive zone by zone),
/// `heat = i * 7 % 100` (spread over every block).
fn zones(n: usize) -> Database {
    let mut db = Database::new();
    db.execute_script("CREATE COMPONENT Zone (id i32, heat f32)").unwrap();
    let w = db.world_mut();
    for i in 0..n {
        let zone = [("id", Value::Int((i / 1000) as i64)), ("heat", Value::Float((i * 7 % 100) as f64))];
        w.spawn_values(&[("Zone", &zone[..])]).unwrap();
    }
    db
}

#[test]
fn skip_index_prunes_clustered_blocks_and_never_changes_an_answer() {
    let queries = [
        "SELECT count(*) WHERE Zone.id = 17",
        "SELECT count(*) WHERE Zone.id IN (3, 40, 99)",
        "SELECT count(*) WHERE Zone.id BETWEEN 10 AND 12",
        "SELECT count(*) WHERE Zone.id > 47",
        "SELECT count(*) WHERE Zone.id != 5",
        "SELECT count(*) WHERE Zone.id = 17 AND Zone.heat < 50",
        "SELECT count(*) WHERE Zone.heat = 21",
        "SELECT sum(Zone.heat) WHERE Zone.id = 2.5 OR Zone.id = 30",
    ];
    let mut plain = zones(100_000);
    let mut indexed = zones(100_000);
    indexed.execute("CREATE INDEX ON Zone (id) USING skip", ()).unwrap();
    indexed.execute("CREATE INDEX ON Zone (heat) USING skip", ()).unwrap();
    let same = |plain: &Database, indexed: &Database| {
        for q in queries {
            assert_eq!(rows(indexed, q), rows(plain, q), "{q}");
        }
    };
    same(&plain, &indexed);
    // Zone 17 spans ids 17000..18000: two of the 98 blocks of 1024 ids.
    let plan = explain(&indexed, "SELECT count(*) WHERE Zone.id = 17");
    assert!(plan.contains("USING INDEX Zone_id_skip (skip) FOR = on Zone(id) [2 of 98 blocks kept]"), "{plan}");
    // Heat is spread over every block: the summaries keep them all, so the planner scans.
    let plan = explain(&indexed, "SELECT count(*) WHERE Zone.heat = 21");
    assert!(plan.contains("SCAN Zone") && plan.contains("98 of 98 blocks kept"), "{plan}");

    // Writes widen the summaries; answers stay exact. Then a snapshot keeps the indexes.
    for db in [&mut plain, &mut indexed] {
        db.execute("UPDATE Zone SET id = 17 WHERE Zone.id = 30 AND Zone.heat < 10", ()).unwrap();
        db.execute("DESPAWN WHERE Zone.id = 40", ()).unwrap();
        db.execute("SPAWN Zone {id: 40, heat: 1}", ()).unwrap();
    }
    same(&plain, &indexed);
    let bytes = indexed.world().save_to_vec(&Default::default()).unwrap();
    let reloaded = Database::from_world(ecsdb::World::load_from_bytes(&bytes).unwrap());
    same(&plain, &reloaded);
    let plan = explain(&reloaded, "SELECT count(*) WHERE Zone.id = 17");
    assert!(plan.contains("Zone_id_skip (skip)"), "{plan}");
}

#[test]
fn prepared_parameters_use_an_index_when_the_bound_value_is_selective() {
    let mut db = zones(100_000);
    let plain = zones(100_000);
    db.execute("CREATE INDEX ON Zone (id) USING bitmap", ()).unwrap();
    for text in ["SELECT count(*) WHERE Zone.id = $1", "SELECT count(*) WHERE Zone.id != $1"] {
        let mut p = db.prepare(text).unwrap();
        let plan = p.explain(&db).unwrap().join("\n");
        assert!(plan.contains("USING INDEX Zone_id_bitmap"), "planned for a selective value: {plan}");
        // Selective (`= 17`: 1,000 rows) or not (`!= 17`: 99,000 rows, scanned): same answers.
        for v in [Value::Int(17), Value::Int(99), Value::Float(2.5), Value::Null] {
            let params = Params::new().bind(v.clone());
            let got = p.query(&db, &params).unwrap().rows;
            let want = plain.query(text, &params).unwrap().rows;
            assert_eq!(got, want, "{text} with {v:?}");
        }
    }
}

/// `count(*)` answered from an index answer alone: by the answer's size when every table
/// holding the indexed component is counted, by locating each entity when terms leave some
/// out, and by a scan when a check the index cannot decide remains. Each against no index.
#[test]
fn counts_from_an_index_answer_match_a_scan() {
    let mut db = world();
    db.execute_script("CREATE INDEX ON Health (hp) USING btree; CREATE INDEX ON Level (value) USING bitmap").unwrap();
    let plain = world_of(3000);
    for q in [
        "SELECT count(*) WHERE Health.hp = 5",
        "SELECT count(*) FROM Level WHERE Health.hp = 5",
        "SELECT count(*) FROM !Level WHERE Health.hp = 5",
        "SELECT count(*) FROM Position, !Level WHERE Health.hp >= 90",
        "SELECT count(*) WHERE Level.value = 3",
        "SELECT count(*) FROM Team WHERE Level.value IN (1, 2)",
        "SELECT count(*) FROM !Frozen WHERE Health.hp = 0",
    ] {
        assert!(explain(&db, q).contains("INDEX"), "{q}: {}", explain(&db, q));
        assert_eq!(rows(&db, q), rows(&plain, q), "{q}");
    }
    // Prepared, with new tables appearing between runs: one holding Health without Position
    // (every holder of Health had Position, so the second statement counted the answer's
    // size; now it must locate), then one with Level: the plans' count paths follow.
    let mut p = db.prepare("SELECT count(*) FROM Level WHERE Health.hp = $1").unwrap();
    let mut all = db.prepare("SELECT count(*) FROM Position WHERE Health.hp = $1").unwrap();
    let count = |p: &mut ecsdb::query::Prepared, db: &Database| {
        p.query(db, Params::positional([Value::Int(7)])).unwrap().rows[0][0].clone()
    };
    let expect = |db: &Database, q: &str| rows(db, &q.replace("$1", "7"))[0][0].clone();
    for step in ["SPAWN Health {hp: 7, max: 1}", "SPAWN Health {hp: 7, max: 1}, Level {value: 1}, Team {name: 'x'}"] {
        db.execute(step, ()).unwrap();
        assert_eq!(count(&mut p, &db), expect(&db, "SELECT count(*) FROM Level WHERE Health.hp = $1"), "after {step}");
        assert_eq!(
            count(&mut all, &db),
            expect(&db, "SELECT count(*) FROM Position WHERE Health.hp = $1"),
            "after {step}"
        );
    }
}
