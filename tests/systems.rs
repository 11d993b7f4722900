//! Systems: CREATE/DROP SYSTEM, ordering, staging, failures, FixedUpdate, TICK, parallel
//! batches against a one-by-one model.

mod common;

use common::db::{db_with, int, rows};

use ecsdb::query::{Database, ErrorKind};
use ecsdb_engine::Value;
use proptest::prelude::*;

#[test]
fn movement_and_staged_death() {
    let mut db = db_with(
        "CREATE COMPONENT Position (x f64, y f64);
         CREATE COMPONENT Velocity (x f64, y f64);
         CREATE COMPONENT Health (hp f64);
         SPAWN Position {x: 0, y: 0}, Velocity {x: 1, y: 2}, Health {hp: 2};
         CREATE SYSTEM movement IN PHASE OnUpdate AS
           UPDATE Position SET x = Position.x + Velocity.x * $dt, y = Position.y + Velocity.y * $dt FROM Position, Velocity;
         CREATE SYSTEM decay BEFORE movement AS UPDATE Health SET hp = Health.hp - 1;
         CREATE SYSTEM death AFTER movement AS BEGIN
           DESPAWN WHERE Health.hp <= 0;
           SELECT count(*) WHERE Health.hp <= 0;
         END",
    );
    let order: Vec<Value> = rows(&db, "SHOW SYSTEMS").into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(order, [Value::Str("decay".into()), Value::Str("movement".into()), Value::Str("death".into())]);
    let r = db.execute("TICK 1 DT 0.5", ()).unwrap();
    assert!(r.rows.is_empty(), "{:?}", r.rows);
    assert_eq!(rows(&db, "SELECT Position.x, Position.y"), [[Value::Float(0.5), Value::Float(1.0)]]);
    db.execute("TICK", ()).unwrap();
    assert_eq!(int(&db, "SELECT count(*)"), 0, "hp reached 0 in the second tick: despawned at the phase's end");
    assert_eq!(db.ticks_run(), 2);
}

#[test]
fn staged_writes_wait_for_the_end_of_the_phase() {
    let mut db = db_with(
        "CREATE COMPONENT A (v i64);
         CREATE COMPONENT Seen (n i64);
         SPAWN Seen {n: 0};
         CREATE SYSTEM spawner AS SPAWN A {v: 1};
         CREATE SYSTEM counter AFTER spawner AS UPDATE Seen SET n = Seen.n + 0;
         CREATE SYSTEM watcher AFTER counter AS SELECT count(*) FROM A",
    );
    db.execute("TICK", ()).unwrap();
    assert_eq!(int(&db, "SELECT count(*) FROM A"), 1);
    let stats = db.system_stats();
    let watcher = stats.iter().find(|s| s.0 == "watcher").unwrap();
    assert_eq!(watcher.2, 1, "the aggregate's one row: the spawned entity was not there yet");
}

#[test]
fn blocks_see_their_own_updates_and_failures_skip_the_rest() {
    let mut db = db_with(
        "CREATE COMPONENT C (v i64);
         CREATE COMPONENT D (v i64);
         SPAWN C {v: 1}, D {v: 0};
         CREATE SYSTEM s AS BEGIN
           UPDATE C SET v = C.v * 10;
           UPDATE D SET v = C.v;
         END;
         CREATE SYSTEM bad AS BEGIN
           UPDATE D SET v = D.v + 1;
           UPDATE C SET v = 1 / 0;
           UPDATE D SET v = 1000;
         END",
    );
    let r = db.execute("TICK", ()).unwrap();
    assert_eq!(r.columns, ["tick", "system", "error"]);
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0][0], Value::Int(0));
    assert_eq!(r.rows[0][1], Value::Str("bad".into()));
    assert_eq!(rows(&db, "SELECT C.v, D.v"), [[Value::Int(10), Value::Int(11)]]);
    let show = db.query("SHOW SYSTEMS", ()).unwrap();
    assert_eq!(
        show.columns,
        ["name", "phase", "position", "reads", "writes", "runs", "rows", "total_ms", "last_error"]
    );
    assert!(matches!(&show.rows[1][8], Value::Str(e) if e.contains("null")), "{:?}", show.rows[1]);
    assert_eq!(show.rows[0][8], Value::Null);
}

#[test]
fn creation_errors_change_nothing() {
    let mut db = db_with(
        "CREATE COMPONENT C (v i64);
         CREATE SYSTEM a AS UPDATE C SET v = 1;
         CREATE SYSTEM b AFTER a AS UPDATE C SET v = 2;
         CREATE SYSTEM f IN PHASE FixedUpdate AS UPDATE C SET v = 3",
    );
    let before = rows(&db, "SHOW SYSTEMS");
    let cases = [
        ("CREATE SYSTEM c AFTER b BEFORE a AS UPDATE C SET v = 4", ErrorKind::Constraint, "cycle"),
        ("CREATE SYSTEM a AS UPDATE C SET v = 4", ErrorKind::Constraint, "already"),
        ("CREATE SYSTEM c AFTER nope AS UPDATE C SET v = 4", ErrorKind::Constraint, "no system"),
        ("CREATE SYSTEM c AFTER f AS UPDATE C SET v = 4", ErrorKind::Constraint, "phase"),
        ("CREATE SYSTEM c IN PHASE Later AS UPDATE C SET v = 4", ErrorKind::Constraint, "unknown phase"),
        ("CREATE SYSTEM c AS UPDATE C SET v = $1", ErrorKind::Parameter, "$dt"),
        ("CREATE SYSTEM c AS UPDATE Nope SET v = 1", ErrorKind::UnknownComponent, "Nope"),
        ("DROP SYSTEM nope", ErrorKind::Constraint, "no system"),
        ("TICK 1 DT -1", ErrorKind::Type, "negative"),
    ];
    for (text, kind, word) in cases {
        let e = db.execute(text, ()).unwrap_err();
        assert_eq!(e.kind, kind, "{text}: {e}");
        assert!(e.to_string().contains(word), "{text}: {e}");
        assert!(e.span.is_some(), "{text}: {e}");
    }
    assert_eq!(rows(&db, "SHOW SYSTEMS"), before);
    db.execute("DROP SYSTEM IF EXISTS nope", ()).unwrap();
    db.execute("DROP SYSTEM a", ()).unwrap();
    assert_eq!(rows(&db, "SHOW SYSTEMS").len(), 2);
}

#[test]
fn fixed_update_runs_for_accumulated_whole_steps() {
    let mut db = db_with(
        "CREATE COMPONENT N (fixed i64, ticks i64);
         SPAWN N {fixed: 0, ticks: 0};
         SET fixed_hz = 10;
         CREATE SYSTEM f IN PHASE FixedUpdate AS UPDATE N SET fixed = N.fixed + 1;
         CREATE SYSTEM t AS UPDATE N SET ticks = N.ticks + 1",
    );
    // 0.05 + 0.05 = one step; 0.25 = 2 steps (0.05 left); 0.06 -> 0.11 = 1 step; 0 -> none;
    // 5 s = 50 steps, capped at 8 and the rest dropped.
    let mut expected = 0;
    for (dt, runs) in [(0.05, 0), (0.05, 1), (0.25, 2), (0.06, 1), (0.0, 0), (5.0, 8), (0.1, 1)] {
        db.execute(&format!("TICK DT {dt}"), ()).unwrap();
        expected += runs;
        assert_eq!(int(&db, "SELECT N.fixed"), expected, "after DT {dt}");
    }
    assert_eq!(int(&db, "SELECT N.ticks"), 7);
    db.execute("TICK 0", ()).unwrap();
    assert_eq!(int(&db, "SELECT N.ticks"), 7);
}

#[test]
fn parameters_tick_and_time() {
    let mut db = db_with(
        "CREATE COMPONENT Clock (tick i64, time f64, dt f64);
         SPAWN Clock {tick: -1, time: -1, dt: -1};
         CREATE SYSTEM c AS UPDATE Clock SET tick = $tick, time = $time, dt = $dt",
    );
    db.execute("TICK 3 DT 0.5", ()).unwrap();
    assert_eq!(
        rows(&db, "SELECT Clock.tick, Clock.time, Clock.dt"),
        [[Value::Int(2), Value::Float(1.0), Value::Float(0.5)]]
    );
}

#[test]
fn explain_schedule_batches_independent_systems() {
    let db = db_with(
        "CREATE COMPONENT A (v i64); CREATE COMPONENT B (v i64);
         CREATE SYSTEM a AS UPDATE A SET v = A.v + 1;
         CREATE SYSTEM b AS UPDATE B SET v = B.v + 1;
         CREATE SYSTEM c AS UPDATE A SET v = A.v + B.v",
    );
    let lines: Vec<String> = rows(&db, "EXPLAIN SCHEDULE").into_iter().map(|r| format!("{:?}", r[0])).collect();
    assert!(lines.iter().any(|l| l.contains("together: a, b")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("c -- waits on a, b")), "{lines:?}");
}

/// One random system: a statement over components `C0..C3`.
fn statement(kind: u8, c: usize, d: usize, k: i64) -> String {
    let d = if d == c { (c + 1) % 4 } else { d };
    match kind % 6 {
        0 => format!("UPDATE C{c} SET v = C{c}.v + C{d}.v % 7 + {k} FROM C{c}, C{d}"),
        1 => format!("UPDATE C{c} SET v = C{c}.v * 2 - {k} WHERE C{c}.v < 1000"),
        2 => format!("SPAWN C{c} {{v: {k}}}, C{d} {{v: $tick}}"),
        3 => format!("DESPAWN WHERE C{c}.v % 5 = {}", k % 5),
        4 => format!("ADD C{d} {{v: C{c}.v + 1}} FROM C{c}, !C{d} WHERE C{c}.v % 3 = 0"),
        _ => format!("UPDATE C{c} SET v = 10 / (C{c}.v % 4)"),
    }
}

fn dump(db: &Database) -> Vec<Vec<Value>> {
    rows(db, "SELECT entity, C0.v, C1.v, C2.v, C3.v FROM ?C0, ?C1, ?C2, ?C3 ORDER BY entity")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 24 } else { 200 }))]

    /// Random schedules run by the scheduler on 1, 2 and 4 threads and by a model that runs
    /// each system's statements one by one (UPDATEs applied at once, structural writes at the
    /// end of each phase) give identical worlds.
    #[test]
    fn scheduler_matches_sequential_model(
        systems in prop::collection::vec((0u8..3, prop::collection::vec((0u8..6, 0usize..4, 0usize..4, 0i64..9), 1..3)), 1..7),
        ticks in 1u64..4,
    ) {
        let mut setup = String::from("CREATE COMPONENT C0 (v i64); CREATE COMPONENT C1 (v i64); CREATE COMPONENT C2 (v i64); CREATE COMPONENT C3 (v i64);");
        for i in 0..12 {
            setup += &format!("SPAWN C{} {{v: {i}}}, C{} {{v: {}}};", i % 4, (i + 1) % 4, i * 3);
        }
        let phases = ["PreUpdate", "OnUpdate", "PostUpdate"];
        let mut defs = Vec::new();
        for (n, (phase, stmts)) in systems.iter().enumerate() {
            let body: Vec<String> = stmts.iter().map(|&(k, c, d, x)| statement(k, c, d, x)).collect();
            defs.push((phases[*phase as usize], body));
            let _ = n;
        }
        let create = |db: &mut Database| {
            for (n, (phase, body)) in defs.iter().enumerate() {
                db.execute(&format!("CREATE SYSTEM s{n} IN PHASE {phase} AS BEGIN {}; END", body.join("; ")), ()).unwrap();
            }
        };
        let mut results = Vec::new();
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let (world, failures, bytes) = pool.install(|| {
                let mut db = db_with(&setup);
                create(&mut db);
                let r = db.execute(&format!("TICK {ticks}"), ()).unwrap();
                // Byte for byte: the saved world, change ticks and schedule included.
                let opts = ecsdb::SaveOptions { change_ticks: true, ..Default::default() };
                let bytes = db.world().save_to_vec(&opts).unwrap();
                (dump(&db), r.rows, bytes)
            });
            results.push((world, failures, bytes));
        }
        prop_assert_eq!(&results[0], &results[1]);
        prop_assert_eq!(&results[0], &results[2]);

        // The model: plain statements, phase by phase, system by system.
        let mut model = db_with(&setup);
        for tick in 0..ticks {
            for phase in phases {
                let mut staged: Vec<String> = Vec::new();
                for (p, body) in &defs {
                    if *p != phase {
                        continue;
                    }
                    for s in body {
                        let structural = !s.starts_with("UPDATE");
                        if structural {
                            // Staged: targets and values from now, applied at the phase's end.
                            let targets = stage_in_model(&mut model, s, tick);
                            match targets {
                                Ok(list) => staged.extend(list),
                                Err(()) => break,
                            }
                        } else if model.execute(s, ecsdb::query::Params::new().set("tick", tick as i64)).is_err() {
                            break;
                        }
                    }
                }
                for s in staged {
                    // (A target despawned earlier in the phase is skipped, as the scheduler does.)
                    let _ = model.execute(&s, ());
                }
            }
        }
        prop_assert_eq!(&results[0].0, &dump(&model));
    }
}

/// A structural statement turned into the statements that apply it later, computed now.
fn stage_in_model(db: &mut Database, s: &str, tick: u64) -> Result<Vec<String>, ()> {
    if let Some(rest) = s.strip_prefix("SPAWN ") {
        return Ok(vec![format!("SPAWN {}", rest.replace("$tick", &tick.to_string()))]);
    }
    if let Some(cond) = s.strip_prefix("DESPAWN ") {
        // One statement, as the system's DESPAWN is one (a bulk despawn frees its ids in its
        // own order, which later SPAWNs reuse).
        let targets = db.query(&format!("SELECT entity {cond}"), ()).map_err(|_| ())?;
        if targets.rows.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = targets.rows.iter().map(|r| entity_text(&r[0])).collect();
        return Ok(vec![format!("DESPAWN WHERE entity IN ({})", list.join(", "))]);
    }
    // ADD C{d} {v: C{c}.v + 1} FROM C{c}, !C{d} WHERE …
    let (head, filter) = s.split_once(" FROM ").unwrap();
    let (comp, value) = head.strip_prefix("ADD ").unwrap().split_once(" {v: ").unwrap();
    let value = value.trim_end_matches('}');
    let targets = db.query(&format!("SELECT entity, {value} FROM {filter}"), ()).map_err(|_| ())?;
    Ok(targets
        .rows
        .iter()
        .map(|r| format!("ADD {comp} {{v: {}}} TO {}", value_text(&r[1]), entity_text(&r[0])))
        .collect())
}

fn entity_text(v: &Value) -> String {
    match v {
        Value::Entity(e) => format!("{}v{}", e.index(), e.generation()),
        other => panic!("{other:?}"),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        other => panic!("{other:?}"),
    }
}

fn snapshot(db: &Database) -> Vec<u8> {
    let mut bytes = Vec::new();
    db.world().save_to_writer(&mut bytes, &ecsdb_engine::SaveOptions::default()).unwrap();
    bytes
}

#[test]
fn systems_survive_save_and_load_text_and_unbound_rust() {
    #[derive(ecsdb_engine::Component)]
    struct Speed {
        v: f64,
    }
    let mut db = db_with(
        "CREATE COMPONENT C (v i64);
         SPAWN C {v: 0};
         SET fixed_hz = 4;
         CREATE SYSTEM inc IN PHASE FixedUpdate AS BEGIN UPDATE C SET v = C.v + 1; END;
         CREATE SYSTEM later AFTER inc IN PHASE FixedUpdate AS SELECT C.v",
    );
    db.world_mut().spawn((Speed { v: 1.0 },));
    db.add_system("speedup")
        .run(|q: ecsdb_engine::query::QueryIter<&mut Speed, ()>, _ctx: &ecsdb::query::schedule::SystemContext| {
            q.for_each(|mut s| s.v *= 2.0)
        })
        .unwrap();
    db.execute("TICK 1 DT 0.3", ()).unwrap();
    let bytes = snapshot(&db);
    let mut loaded = Database::from_world(ecsdb_engine::World::load_from_bytes(&bytes).unwrap());
    assert_eq!(snapshot(&loaded), bytes, "saving a loaded world gives the same bytes");
    let names = |db: &Database| rows(db, "SHOW SYSTEMS").into_iter().map(|r| r[0].clone()).collect::<Vec<_>>();
    assert_eq!(names(&loaded), names(&db));
    assert_eq!(loaded.ticks_run(), 1);
    let e = loaded.execute("TICK", ()).unwrap_err();
    assert!(e.to_string().contains("speedup"), "{e}");
    loaded
        .add_system("speedup")
        .run(|q: ecsdb_engine::query::QueryIter<&mut Speed, ()>, _ctx: &ecsdb::query::schedule::SystemContext| {
            q.for_each(|mut s| s.v *= 2.0)
        })
        .unwrap();
    // 0.3 s at 4 Hz left 0.05 s in the accumulator: 0.2 s more make one more step.
    loaded.execute("TICK 1 DT 0.2", ()).unwrap();
    db.execute("TICK 1 DT 0.2", ()).unwrap();
    assert_eq!(int(&loaded, "SELECT C.v"), 2);
    assert_eq!(dumpf(&loaded), dumpf(&db));
    // Dropping the unbound system also lets TICK run.
    let mut again = Database::from_world(ecsdb_engine::World::load_from_bytes(&bytes).unwrap());
    again.execute("DROP SYSTEM speedup", ()).unwrap();
    again.execute("TICK", ()).unwrap();
}

fn dumpf(db: &Database) -> Vec<Vec<Value>> {
    rows(db, "SELECT C.v FROM C")
}

/// The TICK failure rows as (system, error) pairs.
fn failures(r: &ecsdb::query::ResultSet) -> Vec<(String, String)> {
    r.rows
        .iter()
        .map(|row| match (&row[1], &row[2]) {
            (Value::Str(s), Value::Str(e)) => (s.clone(), e.clone()),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Asserts a failure row: its system, and an error `kind error: …` that mentions `word`.
fn assert_failure(got: &(String, String), system: &str, kind: &str, word: &str) {
    assert_eq!(got.0, system, "{got:?}");
    assert!(got.1.starts_with(&format!("{kind} error: ")) && got.1.contains(word), "{got:?}");
}

fn last_error(db: &Database, system: &str) -> Value {
    let show = db.query("SHOW SYSTEMS", ()).unwrap();
    show.rows.into_iter().find(|r| r[0] == Value::Str(system.into())).unwrap()[8].clone()
}

/// An ADD's references are checked when it runs, as SPAWN's and UPDATE's are: a stale target
/// or an ACYCLIC loop fails the statement then and skips the rest of its block.
#[test]
fn a_refused_add_ends_its_block() {
    let mut db = db_with(
        "CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC);
         CREATE COMPONENT Frozen; CREATE COMPONENT Thawed;
         SPAWN; SPAWN; DESPAWN 1v0;
         CREATE SYSTEM stale AS BEGIN ADD ChildOf {parent: 1v0} TO 0v0; SPAWN Frozen END;
         CREATE SYSTEM looping AS BEGIN ADD ChildOf {parent: 0v0} TO 0v0; SPAWN Frozen END;
         CREATE SYSTEM fine AS BEGIN ADD ChildOf {parent: null} TO 0v0; SPAWN Thawed END",
    );
    let r = db.execute("TICK", ()).unwrap();
    let got = failures(&r);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], ("stale".into(), "stale_entity error: stale entity 1v0".into()));
    assert_failure(&got[1], "looping", "constraint", "ACYCLIC");
    assert_eq!(int(&db, "SELECT count(*) FROM Frozen"), 0, "the SPAWNs after the refused ADDs did not run");
    assert_eq!(int(&db, "SELECT count(*) FROM Thawed"), 1);
    assert_eq!(int(&db, "SELECT count(*) FROM ChildOf WHERE ChildOf.parent IS NULL"), 1, "the ADD of null was written");
}

/// An ADD checked when it ran is checked again when applied: its target may die earlier in
/// the phase. Failures found then are reported like the others, `kind error: message`.
#[test]
fn failures_at_the_end_of_the_phase_carry_their_kind() {
    let mut db = db_with(
        "CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC);
         CREATE COMPONENT Target (of entity REFERENCES ON DELETE RESTRICT);
         CREATE COMPONENT Frozen;
         SPAWN; SPAWN; SPAWN; SPAWN Target {of: 2v0};
         CREATE SYSTEM kill AS DESPAWN 1v0;
         CREATE SYSTEM adopt AS BEGIN ADD ChildOf {parent: 1v0} TO 0v0; SPAWN Frozen END;
         CREATE SYSTEM swap AS BEGIN ADD ChildOf {parent: 0v0} TO 2v0; ADD ChildOf {parent: 2v0} TO 0v0 END;
         CREATE SYSTEM restricted AS DESPAWN 2v0",
    );
    let r = db.execute("TICK", ()).unwrap();
    let got = failures(&r);
    assert_eq!(got.len(), 3, "{got:?}");
    // 1v0 was alive when `adopt` ran: its ADD passed and the block went on.
    assert_eq!(got[0], ("adopt".into(), "stale_entity error: stale entity 1v0".into()));
    // Each ADD alone makes no loop; the second, applied after the first, does.
    assert_failure(&got[1], "swap", "constraint", "ACYCLIC");
    assert_failure(&got[2], "restricted", "constraint", "RESTRICT");
    assert_eq!(int(&db, "SELECT count(*) FROM Frozen"), 1);
    for (system, error) in &got {
        assert_eq!(last_error(&db, system), Value::Str(error.clone()));
    }
    assert_eq!(last_error(&db, "kill"), Value::Null);
}

/// A saved system that no longer binds (its function is not registered by this program) is
/// reported by every TICK in the same `kind error: message` form.
#[test]
fn a_saved_system_that_does_not_bind_reports_its_kind() {
    let mut db = db_with("CREATE COMPONENT C (v i64); SPAWN C {v: 1}");
    db.register_function("twice", |args| match args {
        [Value::Int(i)] => Ok(Value::Int(i * 2)),
        _ => Err("twice() takes one int".into()),
    });
    db.execute("CREATE SYSTEM double AS UPDATE C SET v = twice(C.v)", ()).unwrap();
    db.execute("TICK", ()).unwrap();
    let mut loaded = Database::from_world(ecsdb_engine::World::load_from_bytes(&snapshot(&db)).unwrap());
    let got = failures(&loaded.execute("TICK", ()).unwrap());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_failure(&got[0], "double", "unknown_function", "saved system does not bind: unknown function 'twice'");
    assert!(got[0].1.ends_with("(at line 1, column 18 of its text)"), "{got:?}");
    assert_eq!(int(&loaded, "SELECT C.v"), 2);
}

/// `END` right after a bare SPAWN ends its block.
#[test]
fn a_bare_spawn_may_end_a_block() {
    let mut db = db_with(
        "CREATE COMPONENT End;
         CREATE SYSTEM a AS BEGIN SPAWN END;
         CREATE SYSTEM b AS BEGIN SELECT 1; SPAWN End {} END;
         SPAWN End",
    );
    let r = db.execute("TICK 2", ()).unwrap();
    assert!(r.rows.is_empty(), "{:?}", r.rows);
    assert_eq!(int(&db, "SELECT count(*)"), 5);
    assert_eq!(int(&db, "SELECT count(*) FROM End"), 3);
}
