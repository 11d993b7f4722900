//! `STORAGE SPARSE | TABLE` from text and `ALTER COMPONENT … SET STORAGE`: the same answers
//! whichever the storage, through systems, indexes, change tracking, prepared statements and
//! a save and load; the catalog and EXPLAIN say which it is.

mod common;

use common::db::{db_with, explain, int, rows, run};
use ecsdb::query::{Database, ErrorKind};
use ecsdb::{SaveOptions, Value, World};

const SCHEMA: &str = "CREATE COMPONENT Unit (id u32, team u8, name string);
    CREATE COMPONENT Pos (x f32, y f32);
    CREATE COMPONENT Burning (t f32, by entity REFERENCES ON DELETE SET NULL) STORAGE SPARSE;
    CREATE COMPONENT Stunned STORAGE SPARSE;
    CREATE INDEX ON Burning (t) USING btree";

/// `n` units, every `burning`-th of them burning (set by `by` to the first unit), every
/// seventh stunned.
fn world(n: usize, burning: usize) -> Database {
    let mut db = db_with(SCHEMA);
    for i in 0..n {
        run(&mut db, &format!("SPAWN Unit {{id: {i}, team: {}, name: 'u{i}'}}, Pos {{x: {i}, y: 0}}", i % 3));
    }
    run(&mut db, &format!("ADD Burning {{t: 1, by: 0v0}} WHERE Unit.id % {burning} = 0"));
    run(&mut db, "UPDATE Burning SET t = Unit.id / 10");
    run(&mut db, "ADD Stunned WHERE Unit.id % 7 = 0");
    db
}

/// Queries whose answers must not depend on the storage.
const QUERIES: [&str; 9] = [
    "SELECT entity, Unit.id, Burning.t, Burning.by FROM Unit, Burning ORDER BY entity",
    "SELECT Unit.team, count(*), sum(Burning.t) FROM Unit, Burning GROUP BY Unit.team ORDER BY Unit.team",
    "SELECT count(*) FROM Unit, !Burning",
    "SELECT Unit.id FROM Unit, Stunned, ?Burning WHERE Burning.t IS NULL ORDER BY Unit.id",
    "SELECT Unit.id FROM Unit WHERE has(Burning) AND NOT has(Stunned) ORDER BY Unit.id LIMIT 5",
    "SELECT Unit.id FROM Unit, Burning | Stunned ORDER BY Unit.id",
    "SELECT Unit.id FROM Burning, Unit WHERE Burning.t BETWEEN 2 AND 4 ORDER BY Unit.id",
    "SELECT Pos.x FROM Pos, Burning WHERE Burning.t > 5 ORDER BY Pos.x DESC LIMIT 3",
    "SELECT count(*) FROM Burning",
];

fn answers(db: &Database) -> Vec<Vec<Vec<Value>>> {
    QUERIES.iter().map(|q| rows(db, q)).collect()
}

fn s(v: &str) -> Value {
    Value::Str(v.into())
}

#[test]
fn the_catalog_shows_the_storage_and_the_words_stay_names() {
    let mut db = world(20, 4);
    let shown: Vec<(Value, Value)> =
        rows(&db, "SHOW COMPONENTS").into_iter().map(|r| (r[0].clone(), r[2].clone())).collect();
    assert_eq!(
        shown,
        vec![(s("Unit"), s("table")), (s("Pos"), s("table")), (s("Burning"), s("sparse")), (s("Stunned"), s("sparse"))]
    );
    assert_eq!(rows(&db, "DESCRIBE Burning")[0], vec![s("t"), s("f32"), Value::Null, s("sparse")]);
    assert_eq!(rows(&db, "DESCRIBE Stunned"), vec![vec![Value::Null, Value::Null, Value::Null, s("sparse")]]);
    run(&mut db, "ALTER COMPONENT Stunned SET STORAGE TABLE");
    assert_eq!(rows(&db, "DESCRIBE Stunned")[0][3], s("table"));
    // STORAGE, SPARSE and TABLE are contextual: still names.
    run(&mut db, "CREATE COMPONENT Storage (table u32, sparse f32) STORAGE TABLE");
    run(&mut db, "SPAWN Storage {table: 1, sparse: 2}");
    assert_eq!(
        rows(&db, "SELECT Storage.table, Storage.sparse FROM Storage"),
        vec![vec![Value::Int(1), Value::Float(2.0)]]
    );
    let e = db.execute("CREATE COMPONENT Bad (v f32) STORAGE DENSE", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Syntax, "{e}");
    let e = db.execute("ALTER COMPONENT Burnin SET STORAGE TABLE", ()).unwrap_err();
    assert!(e.to_string().contains("Burning"), "a did-you-mean: {e}");
}

#[test]
fn a_component_of_a_rust_type_keeps_its_storage() {
    #[derive(ecsdb::Component, Clone, Copy)]
    struct Speed {
        v: f32,
    }
    let mut db = Database::new();
    db.world_mut().register::<Speed>().unwrap();
    let e = db.execute("ALTER COMPONENT Speed SET STORAGE SPARSE", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
}

#[test]
fn moving_a_component_either_way_changes_no_answer() {
    let mut db = world(200, 3);
    let before = answers(&db);
    for (c, kind) in
        [("Burning", "TABLE"), ("Unit", "SPARSE"), ("Stunned", "TABLE"), ("Burning", "SPARSE"), ("Unit", "TABLE")]
    {
        run(&mut db, &format!("ALTER COMPONENT {c} SET STORAGE {kind}"));
        assert_eq!(answers(&db), before, "after {c} to {kind}");
    }
    // The reference still follows a despawn of its target, and the index still answers.
    run(&mut db, "DESPAWN 0v0");
    assert_eq!(int(&db, "SELECT count(*) FROM Burning WHERE Burning.by IS NOT NULL"), 0);
    db.set_plan_options(ecsdb::query::PlanOptions { prefer_indexes: true });
    assert!(explain(&db, "SELECT entity FROM Burning WHERE Burning.t = 3").contains("Burning_t_btree"));
    assert_eq!(int(&db, "SELECT count(*) FROM Burning WHERE Burning.t = 3"), 4);
}

#[test]
fn systems_and_change_tracking_run_on_across_a_move() {
    let run_with = |moves: bool| {
        let mut db = world(60, 2);
        run(&mut db, "CREATE SYSTEM cool AS UPDATE Burning SET t = Burning.t - 1");
        run(&mut db, "CREATE SYSTEM out AS REMOVE Burning WHERE Burning.t < 0");
        run(&mut db, "CREATE SYSTEM catch AS ADD Burning {t: 3} WHERE Unit.id % 11 = 0 AND NOT has(Burning)");
        let mut changed =
            db.prepare("SELECT Unit.id FROM Unit, Burning WHERE changed(Burning) ORDER BY Unit.id").unwrap();
        let mut seen = Vec::new();
        for round in 0..6 {
            if moves {
                let kind = if round % 2 == 0 { "TABLE" } else { "SPARSE" };
                run(&mut db, &format!("ALTER COMPONENT Burning SET STORAGE {kind}"));
                // A statement prepared before a storage change is prepared again.
                let e = changed.execute(&mut db, ()).unwrap_err();
                assert!(e.to_string().contains("prepare"), "{e}");
                changed =
                    db.prepare("SELECT Unit.id FROM Unit, Burning WHERE changed(Burning) ORDER BY Unit.id").unwrap();
                changed.execute(&mut db, ()).unwrap();
            } else {
                changed.execute(&mut db, ()).unwrap();
            }
            assert!(db.tick(1, 0.1).unwrap().is_empty());
            seen.push(answers(&db));
            // Only what the tick wrote counts as changed: a move is not a write.
            seen.push(vec![changed.execute(&mut db, ()).unwrap().rows]);
        }
        seen
    };
    assert_eq!(run_with(true), run_with(false));
}

#[test]
fn a_moved_component_saves_and_loads_with_its_storage() {
    let mut db = world(50, 5);
    run(&mut db, "ALTER COMPONENT Burning SET STORAGE TABLE");
    run(&mut db, "ALTER COMPONENT Pos SET STORAGE SPARSE");
    let before = answers(&db);
    let bytes = db.world().save_to_vec(&SaveOptions::default()).unwrap();
    let mut loaded = Database::from_world(World::load_from_bytes(&bytes).unwrap());
    assert_eq!(answers(&loaded), before);
    let storage: Vec<Value> = rows(&loaded, "SHOW COMPONENTS").into_iter().map(|r| r[2].clone()).collect();
    assert_eq!(storage, vec![s("table"), s("sparse"), s("table"), s("sparse")]);
    run(&mut loaded, "ALTER COMPONENT Pos SET STORAGE TABLE");
    assert_eq!(answers(&loaded), before);
}

#[test]
fn a_small_sparse_set_drives_the_scan_and_a_large_one_does_not() {
    let mut db = world(2000, 200);
    let plan = explain(&db, "SELECT Unit.id FROM Unit, Burning");
    assert!(plan.contains("USING SPARSE SET Burning (10 entities, each located)"), "{plan}");
    let table = {
        let mut t = world(2000, 200);
        run(&mut t, "ALTER COMPONENT Burning SET STORAGE TABLE");
        t
    };
    assert_eq!(answers(&db), answers(&table));
    run(&mut db, "ADD Burning {t: 1} WHERE Unit.id % 2 = 0");
    let plan = explain(&db, "SELECT Unit.id FROM Unit, Burning");
    // The cached plan says what it does now; a fresh one scans and says why.
    assert!(plan.contains("SPARSE SET Burning (1000 entities: too many to drive the scan now"), "{plan}");
    let fresh = explain(&db, "SELECT Unit.id, Unit.team FROM Unit, Burning");
    assert!(fresh.contains("the sparse set of Burning (1000 entities) is not small enough"), "{fresh}");
    // A statement prepared on an empty world checks the sizes on every run.
    let mut empty = db_with(SCHEMA);
    let mut q = empty.prepare("SELECT count(*), sum(Unit.id) FROM Unit, Burning").unwrap();
    for (n, every) in [(100, 50), (400, 2), (400, 100)] {
        run(&mut empty, "DESPAWN WHERE has(Unit)");
        for i in 0..n {
            run(&mut empty, &format!("SPAWN Unit {{id: {i}}}"));
        }
        run(&mut empty, &format!("ADD Burning {{t: 0}} WHERE Unit.id % {every} = 0"));
        let expected: i64 = (0..n).filter(|i| i % every == 0).sum();
        let got = q.execute(&mut empty, ()).unwrap().rows;
        assert_eq!(got, vec![vec![Value::Int(n / every), Value::Int(expected)]], "{n} units, every {every}");
    }
}

#[test]
fn a_sparse_set_alone_answers_remove_and_count_only_where_every_table_passes() {
    let build = |storage: &str| {
        let mut db = world(2000, 200);
        run(&mut db, &format!("ALTER COMPONENT Burning SET STORAGE {storage}"));
        // Burning entities without a Unit: in a table `FROM Unit` does not match.
        for t in [3, 7, 9] {
            run(&mut db, &format!("SPAWN Burning {{t: {t}}}, Stunned"));
        }
        db
    };
    let (mut sparse, mut table) = (build("SPARSE"), build("TABLE"));
    for db in [&mut sparse, &mut table] {
        assert_eq!(int(db, "SELECT count(*) FROM Burning"), 13);
        assert_eq!(int(db, "SELECT count(*) FROM Unit, Burning"), 10);
        // A residual filter, then a table the set's holders need not lie in.
        run(db, "REMOVE Burning WHERE has(Burning) AND Burning.t = 9");
        assert_eq!(int(db, "SELECT count(*) FROM Burning"), 12);
        run(db, "REMOVE Burning WHERE has(Burning) AND has(Unit)");
        assert_eq!(int(db, "SELECT count(*) FROM Burning"), 2);
        run(db, "REMOVE Stunned WHERE has(Burning)");
        assert_eq!(int(db, "SELECT count(*) FROM Stunned"), 287);
        // Every holder, wherever it lies: the set alone answers it.
        run(db, "REMOVE Burning WHERE has(Burning)");
        assert_eq!(int(db, "SELECT count(*) FROM Burning"), 0);
    }
    assert_eq!(answers(&sparse), answers(&table));
    assert!(explain(&sparse, "SELECT count(*) FROM Burning").contains("SPARSE SET Burning"));
}
