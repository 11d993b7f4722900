//! The readers' copies of a live world against the world itself: after any sequence of
//! writes and tick boundaries, the state a reader sees answers every query exactly as the
//! writer's world does at the tick it was published. The copies are brought up to date
//! incrementally (rows whose values changed, entities spawned, despawned or moved) while the
//! layout (components, indexes, references, systems) stays, and rebuilt from a snapshot
//! otherwise; both paths, and their mix, must agree with the reference.

mod common;

use common::db::rows;

use std::time::Duration;

use ecsdb::query::live::{Publisher, Reader, WAIT_LIMIT};
use ecsdb::{Database, Params};
use ecsdb_engine::{ComponentDef, FieldType};
use proptest::prelude::*;

/// Every component, every field, every entity: sorted rows.
/// The last two read the names' string heads, which a copy keeps between states: `answers`
/// checks them against the second.
const DUMPS: [&str; 6] = [
    "SELECT entity, Pos.x, Pos.y, Pos.z FROM Pos ORDER BY entity",
    "SELECT entity, Name.s FROM Name ORDER BY entity",
    "SELECT entity, Boost.v FROM Boost ORDER BY entity",
    "SELECT entity FROM Tag ORDER BY entity",
    "SELECT entity FROM Name WHERE Name.s LIKE 'r1%' ORDER BY entity",
    "SELECT entity FROM Name WHERE Name.s = 'n12' OR Name.s LIKE 's2%' ORDER BY entity",
];

/// The rows of the names dump whose name passes `keep`, as the heads' dumps give them.
fn names_where(names: &[Vec<ecsdb::Value>], keep: impl Fn(&str) -> bool) -> Vec<Vec<ecsdb::Value>> {
    names
        .iter()
        .filter(|row| matches!(&row[1], ecsdb::Value::Str(s) if keep(s)))
        .map(|row| vec![row[0].clone()])
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    /// Values only: the incremental path.
    MoveAll(i32),
    MoveSome(i32),
    Rename(u8),
    BoostSome(i32),
    /// Structure: entities come, go and move between tables.
    Spawn(i32),
    DespawnSome(i32),
    Tag(i32),
    Untag,
    BoostNew(i32),
    /// Layout: the full path.
    CreateIndex,
    /// A tick boundary with nothing written.
    Idle,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (-5..5i32).prop_map(Op::MoveAll),
        4 => (0..50i32).prop_map(Op::MoveSome),
        2 => any::<u8>().prop_map(Op::Rename),
        2 => (0..50i32).prop_map(Op::BoostSome),
        1 => (0..50i32).prop_map(Op::Spawn),
        1 => (0..50i32).prop_map(Op::DespawnSome),
        1 => (0..50i32).prop_map(Op::Tag),
        1 => Just(Op::Untag),
        1 => (0..50i32).prop_map(Op::BoostNew),
        1 => Just(Op::CreateIndex),
        2 => Just(Op::Idle),
    ]
}

fn world() -> Database {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Pos (x f32, y f32, z f32); CREATE COMPONENT Name (s string); CREATE COMPONENT Tag ()",
    )
    .unwrap();
    let boost = ComponentDef::new("Boost", &[("v", FieldType::I32)]).sparse();
    db.world_mut().define_component(&boost).unwrap();
    for i in 0..300 {
        db.execute(&format!("SPAWN Pos {{x: {i}, y: 0, z: 1}}, Name {{s: 'n{i}'}}"), ()).unwrap();
    }
    db
}

fn apply(db: &mut Database, op: &Op) {
    let text = match op {
        Op::MoveAll(d) => format!("UPDATE Pos SET x = Pos.x + {d}, y = Pos.y - 1"),
        Op::MoveSome(k) => format!("UPDATE Pos SET z = Pos.z * 2 WHERE Pos.x > {}", k * 6),
        Op::Rename(n) => format!("UPDATE Name SET s = 'r{n}' WHERE Pos.x < {}", n % 100),
        Op::BoostSome(k) => format!("UPDATE Boost SET v = Boost.v + {k}"),
        Op::Spawn(k) => format!("SPAWN Pos {{x: {k}, y: 1, z: 2}}, Name {{s: 's{k}'}}"),
        Op::DespawnSome(k) => format!("DESPAWN WHERE Pos.x > {} AND Pos.x < {}", k * 6, k * 6 + 3),
        Op::Tag(k) => format!("ADD Tag WHERE Pos.x < {k}"),
        Op::Untag => "REMOVE Tag WHERE Pos.x >= 0".into(),
        Op::BoostNew(k) => format!("ADD Boost {{v: {k}}} WHERE Pos.x > {}", 300 - k),
        Op::CreateIndex => "CREATE INDEX ON Pos (x) USING btree".into(),
        Op::Idle => return,
    };
    // Some writes are refused (the index exists already): nothing changes then.
    let _ = db.execute(&text, ());
}

/// Where two dumps first differ, short enough to read.
fn first_difference(seen: &[Vec<Vec<ecsdb::Value>>], expected: &[Vec<Vec<ecsdb::Value>>]) -> String {
    for (q, (a, b)) in DUMPS.iter().zip(seen.iter().zip(expected)) {
        if a.len() != b.len() {
            return format!("{q}: {} rows seen, {} expected", a.len(), b.len());
        }
        if let Some((x, y)) = a.iter().zip(b).find(|(x, y)| x != y) {
            return format!("{q}: saw {x:?}, expected {y:?}");
        }
    }
    "no difference".into()
}

/// Ends ticks (writing nothing more) until readers see the newest one, and returns it: the
/// copier skips a tick while it is busy.
fn publish(publisher: &mut Publisher, db: &mut Database, reader: &Reader) -> u64 {
    loop {
        publisher.end_tick(db);
        let tick = publisher.tick();
        if reader.wait_for_tick(tick, Duration::from_millis(20)).is_some_and(|s| s.tick == tick) {
            return tick;
        }
    }
}

/// The reader's newest state answers every dump as `db` does.
fn assert_reader_sees(reader: &Reader, db: &Database) {
    let seen = reader.with_state(|s| answers(&s.db)).unwrap();
    let expected = answers(db);
    assert!(seen == expected, "{}", first_difference(&seen, &expected));
}

fn answers(db: &Database) -> Vec<Vec<Vec<ecsdb::Value>>> {
    let dumps: Vec<_> = DUMPS.iter().map(|q| db.query(q, ()).unwrap().rows).collect();
    assert_eq!(dumps[4], names_where(&dumps[1], |s| s.starts_with("r1")), "{}", DUMPS[4]);
    assert_eq!(dumps[5], names_where(&dumps[1], |s| s == "n12" || s.starts_with("s2")), "{}", DUMPS[5]);
    dumps
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_reader_sees_the_writer_world_of_its_tick(ops in prop::collection::vec(op(), 1..30)) {
        let mut db = world();
        let mut publisher = Publisher::with_pool_size(1);
        let reader = publisher.reader();
        for op in &ops {
            apply(&mut db, op);
            let expected = answers(&db);
            publish(&mut publisher, &mut db, &reader);
            let (tick, _) = reader.query("SELECT count(*)", ()).unwrap();
            prop_assert_eq!(tick, publisher.tick());
            let seen = reader.with_state(|s| answers(&s.db)).unwrap();
            prop_assert!(seen == expected, "after {:?}: {}", op, first_difference(&seen, &expected));
        }
        let stats = reader.copy_stats();
        // Spawns, despawns and moves between tables are copied incrementally too: only a new
        // index (a change of layout) makes a full copy besides the first.
        let layout_changes = ops.iter().filter(|o| matches!(o, Op::CreateIndex)).count() as u64;
        prop_assert!(stats.full <= 1 + layout_changes, "only the first state and layout changes make full copies: {:?}", stats);
        prop_assert!(stats.full + stats.incremental >= 1);
    }
}

/// The writer writes again at once after every tick boundary: copies in progress are
/// recalled and skipped, answers stay exact, and the writer is never held up for a whole copy.
#[test]
fn a_writer_that_comes_back_early_recalls_its_world() {
    let mut db = world();
    for i in 0..20_000 {
        db.execute(&format!("SPAWN Pos {{x: {i}, y: 0, z: 0}}"), ()).unwrap();
    }
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    publisher.end_tick(&mut db);
    reader.wait_for_tick(1, WAIT_LIMIT).unwrap();
    for _ in 0..200 {
        db.execute("UPDATE Pos SET y = Pos.y + 1", ()).unwrap();
        publisher.end_tick(&mut db);
    }
    // Let the last copy finish, then check it.
    publish(&mut publisher, &mut db, &reader);
    assert_reader_sees(&reader, &db);
    let stats = reader.copy_stats();
    assert_eq!(stats.full, 1, "{stats:?}");
    assert!(stats.incremental >= 1, "{stats:?}");
}

/// A caller that keeps a published state does not stop publishing: the copier gives up on
/// that copy and makes the next state in full.
#[test]
fn a_state_kept_by_a_caller_does_not_stop_publishing() {
    let mut db = world();
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    publisher.end_tick(&mut db);
    let kept = reader.wait_for_tick(1, WAIT_LIMIT).unwrap();
    for round in 0..3 {
        db.execute(&format!("UPDATE Pos SET y = {round}"), ()).unwrap();
        publish(&mut publisher, &mut db, &reader);
        assert_reader_sees(&reader, &db);
    }
    assert_eq!(kept.tick, 1, "the kept state is still the one it was");
    assert!(reader.copy_stats().full >= 2, "{:?}", reader.copy_stats());
}

/// Tool writes from another thread, applied by a writer that does not tick (as `ecsdb serve
/// --hz 0` runs): each `exec` waits until readers see its tick, and that wait must not hold
/// the older copy, or the copier gives up on it and every other state is a full copy.
#[test]
fn tool_writes_from_another_thread_are_copied_incrementally() {
    let mut db = world();
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                publisher.wait_for_work(Duration::from_millis(5));
                publisher.apply_queued(&mut db);
                publisher.publish(&mut db);
            }
        });
        reader.wait_for_tick(0, WAIT_LIMIT).unwrap();
        for round in 0..12 {
            let out = reader.exec(&format!("UPDATE Pos SET y = {round}"), ()).unwrap();
            let (tick, rs) =
                reader.query("SELECT count(*) FROM Pos WHERE Pos.y = $r", Params::new().set("r", round)).unwrap();
            assert!(tick >= out.tick, "read your writes: tick {tick} before {}", out.tick);
            assert_eq!(rs.rows[0][0], ecsdb::Value::Int(300), "round {round}");
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
    });
    let stats = reader.copy_stats();
    assert_eq!(stats.full, 1, "only the first state is a full copy: {stats:?}");
    assert!(stats.incremental >= 12, "{stats:?}");
}

/// Opaque, with no serde functions: the copies leave it out.
#[derive(ecsdb::Component, Debug)]
#[component(opaque)]
struct Secret(#[allow(dead_code)] Vec<u8>);

/// A world whose tables differ only in an opaque component cannot be mirrored (both would
/// be one table in the copies): every state is then copied from a snapshot of the whole
/// world, and still answers as the world does, without the opaque component.
#[test]
fn tables_that_differ_only_in_an_opaque_component_are_copied_whole() {
    let mut db = world();
    let some: Vec<_> = rows(&db, "SELECT entity FROM Pos WHERE Pos.x < 100").iter().map(|r| r[0].clone()).collect();
    for e in some {
        let ecsdb::Value::Entity(e) = e else { panic!("an entity") };
        db.world_mut().insert(e, (Secret(vec![1, 2, 3]),)).unwrap();
    }
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    for round in 0..3 {
        db.execute(&format!("UPDATE Pos SET y = {round}"), ()).unwrap();
        publish(&mut publisher, &mut db, &reader);
        assert_reader_sees(&reader, &db);
    }
    // Every state whole (`publish` may make more than one a round).
    let stats = reader.copy_stats();
    assert!(stats.full >= 3 && stats.incremental == 0, "{stats:?}");
    let err = reader.query("SELECT count(*) FROM Secret", ()).unwrap_err();
    assert!(err.to_string().contains("Secret"), "{err}");
}

/// `ALTER COMPONENT` on the writer changes the layout: the next copy is a full one, and
/// readers see the new fields, names and defaults, then the values written after.
#[test]
fn a_change_of_fields_reaches_the_readers() {
    let mut db = world();
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    publish(&mut publisher, &mut db, &reader);
    let full_before = reader.copy_stats().full;
    for text in [
        "ALTER COMPONENT Pos ADD FIELD w f32 DEFAULT 4",
        "ALTER COMPONENT Name RENAME FIELD s TO text",
        "ALTER COMPONENT Pos ALTER FIELD w SET DEFAULT 9",
        "ALTER COMPONENT Pos DROP FIELD y",
        "UPDATE Pos SET w = Pos.x WHERE Pos.x < 3",
    ] {
        db.execute(text, ()).unwrap();
        publish(&mut publisher, &mut db, &reader);
        for q in [
            "SELECT entity, Pos.x, Pos.z, Pos.w FROM Pos ORDER BY entity",
            "SELECT entity, Name.text FROM Name WHERE Name.text LIKE 'n1%' ORDER BY entity",
            "DESCRIBE Pos",
            "DESCRIBE Name",
        ] {
            // (A query the writer's world does not bind yet is skipped: the reader must
            // refuse it too.)
            match db.query(q, ()) {
                Ok(expected) => assert_eq!(reader.query(q, ()).unwrap().1.rows, expected.rows, "after {text}: {q}"),
                Err(_) => assert!(reader.query(q, ()).is_err(), "after {text}: {q}"),
            }
        }
    }
    assert!(reader.copy_stats().full >= full_before + 4, "each change of fields makes a full copy");
}

/// `ALTER COMPONENT … SET STORAGE` under readers querying from other threads all along:
/// every answer a reader gets is the writer's answer at the tick it names, whichever side
/// of a move that tick is, and the readers' catalog shows the storage of their tick.
#[test]
fn a_storage_change_under_concurrent_readers_changes_no_answer() {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    const QUERY: &str =
        "SELECT entity, Pos.x, Boost.v, Name.s FROM Pos, ?Boost, Name WHERE Pos.x < 200 ORDER BY entity";
    let mut db = world();
    db.execute("ADD Boost {v: 1} WHERE Pos.x < 150", ()).unwrap();
    let mut publisher = Publisher::with_pool_size(1);
    let reader = publisher.reader();
    let expected: Mutex<HashMap<u64, Vec<Vec<ecsdb::Value>>>> = Mutex::new(HashMap::new());
    let storage_at: Mutex<HashMap<u64, String>> = Mutex::new(HashMap::new());
    // Every tick since the last recorded one holds the same world (`publish` may end several
    // ticks, with no write between them).
    let last = std::cell::Cell::new(0u64);
    let record = |db: &Database, tick: u64| {
        let answer = rows(db, QUERY);
        let names = rows(db, "DESCRIBE Pos").iter().map(|r| format!("{:?}", r[3])).collect::<Vec<_>>().join(",");
        for t in last.get()..=tick {
            expected.lock().unwrap().insert(t, answer.clone());
            storage_at.lock().unwrap().insert(t, names.clone());
        }
        last.set(tick + 1);
    };
    let tick = publish(&mut publisher, &mut db, &reader);
    record(&db, tick);
    let stop = AtomicBool::new(false);
    let checked = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    let (tick, got) = reader.query(QUERY, ()).unwrap();
                    let (dtick, described) = reader.query("DESCRIBE Pos", ()).unwrap();
                    // The writer records a tick's answer just after publishing it.
                    let want = loop {
                        if let Some(w) = expected.lock().unwrap().get(&tick) {
                            break w.clone();
                        }
                        std::thread::yield_now();
                    };
                    assert_eq!(got.rows, want, "at tick {tick}");
                    let storage = loop {
                        if let Some(w) = storage_at.lock().unwrap().get(&dtick) {
                            break w.clone();
                        }
                        std::thread::yield_now();
                    };
                    let shown = described.rows.iter().map(|r| format!("{:?}", r[3])).collect::<Vec<_>>().join(",");
                    assert_eq!(shown, storage, "DESCRIBE at tick {dtick}");
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for round in 0..16 {
            let text = match round % 4 {
                0 => "ALTER COMPONENT Pos SET STORAGE SPARSE",
                1 => "ALTER COMPONENT Name SET STORAGE SPARSE",
                2 => "ALTER COMPONENT Pos SET STORAGE TABLE",
                _ => "ALTER COMPONENT Name SET STORAGE TABLE",
            };
            db.execute(text, ()).unwrap();
            db.execute(&format!("UPDATE Pos SET x = Pos.x + 1 WHERE Pos.x < {}", 100 + round * 5), ()).unwrap();
            db.execute(
                &format!("ADD Boost {{v: {round}}} WHERE Pos.x > {} AND Pos.x < {}", round * 10, round * 10 + 7),
                (),
            )
            .unwrap();
            let tick = publish(&mut publisher, &mut db, &reader);
            record(&db, tick);
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Release);
    });
    assert!(checked.into_inner() >= 2, "the readers ran");
}
