//! UPDATEs rewritten in place (whole tables of f32 fields, affine assignments) against the
//! same UPDATEs taking the general path, on worlds large enough for the rewrite: the same
//! values bit for bit, the same answers and errors, the same rows marked changed, and
//! nothing changed by a statement that fails. The general path is forced by a WHERE that
//! every row passes (`Tag.n >= 0`), which the rewrite never takes.

use ecsdb::query::{Database, Params, Prepared};
use ecsdb::{Entity, Value};

mod common;
use common::rng::Rng;

/// Entities of each world: above the rewrite's threshold (4,096 rows), over several tables.
const ROWS: usize = 6000;

/// The values a world has beyond the ordinary and awkward ones.
#[derive(Clone, Copy, PartialEq)]
enum Extremes {
    /// None: every value below 1e30 in size, so most statements store every row (one row too
    /// large for an f32 fails a whole statement).
    None,
    /// Infinities (which store, and stay infinite or become NaN).
    Infinite,
    /// Infinities, values near f32::MAX and any bit pattern: most statements fail.
    All,
}

/// An f32 for a field: mostly ordinary, some awkward (signed zeros, subnormals, NaN, random
/// bit patterns), some `extremes`.
fn value(rng: &mut Rng, extremes: Extremes) -> f64 {
    let awkward = [0.0, -0.0, 1e-45, -1e-40, f32::NAN, 0.1, -7.5];
    let x = match rng.below(20) {
        0 => *rng.pick(&awkward),
        1 if extremes == Extremes::All => *rng.pick(&[f32::MAX, f32::MIN, 3.0e38, f32::INFINITY]),
        1 if extremes == Extremes::Infinite => *rng.pick(&[f32::INFINITY, f32::NEG_INFINITY]),
        2 => loop {
            let x = f32::from_bits(rng.next_u64() as u32);
            if extremes == Extremes::All || x.is_nan() || x.abs() < 1e30 {
                break x;
            }
        },
        _ => (rng.range(-100_000, 100_000) as f32) / 64.0,
    };
    x as f64
}

/// Two identical worlds: P (x, y, z), V (x, y), Q (a, b, c, d), Tag (n ≥ 0) on every entity,
/// Frozen and Extra on some (so several tables match, some not).
fn worlds(seed: u64, extremes: Extremes) -> (Database, Database) {
    let schema = "CREATE COMPONENT P (x f32, y f32, z f32); CREATE COMPONENT V (x f32, y f32);
         CREATE COMPONENT Q (a f32, b f32, c f32, d f32); CREATE COMPONENT Tag (n i32);
         CREATE COMPONENT Frozen; CREATE COMPONENT Extra (k i64);";
    let (mut a, mut b) = (Database::new(), Database::new());
    a.execute_script(schema).expect("schema");
    b.execute_script(schema).expect("schema");
    let mut rng = Rng::new(seed);
    for i in 0..ROWS {
        let mut floats = |names: &[&'static str]| -> Vec<(&'static str, Value)> {
            names.iter().map(|n| (*n, Value::Float(value(&mut rng, extremes)))).collect()
        };
        let (p, v, q) = (floats(&["x", "y", "z"]), floats(&["x", "y"]), floats(&["a", "b", "c", "d"]));
        let tag = [("n", Value::Int(i as i64))];
        let extra = [("k", Value::Int(1))];
        let mut components: Vec<(&str, &[(&str, Value)])> = vec![("P", &p), ("V", &v), ("Q", &q), ("Tag", &tag)];
        match i % 7 {
            0 => components.push(("Frozen", &[])),
            1 | 4 => components.push(("Extra", &extra)),
            _ => {}
        }
        let x = a.world_mut().spawn_values(&components).expect("spawn");
        let y = b.world_mut().spawn_values(&components).expect("spawn");
        assert_eq!(x, y);
    }
    (a, b)
}

/// Every entity's P and Q as bits, in entity order.
fn dump(db: &Database) -> Vec<(Entity, Vec<u64>)> {
    let rs = db.query("SELECT entity, P.x, P.y, P.z, Q.a, Q.b, Q.c, Q.d", ()).expect("dump");
    let mut rows: Vec<(Entity, Vec<u64>)> = rs
        .rows
        .iter()
        .map(|r| {
            let Value::Entity(e) = r[0] else { panic!("{r:?}") };
            (e, r[1..].iter().map(|v| if let Value::Float(x) = v { x.to_bits() } else { u64::MAX }).collect())
        })
        .collect();
    rows.sort_by_key(|(e, _)| *e);
    rows
}

/// Panics at the first entity whose fields differ between the two dumps.
fn assert_same(a: &[(Entity, Vec<u64>)], b: &[(Entity, Vec<u64>)], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: entity counts");
    let differs = a.iter().zip(b).filter(|(x, y)| x != y).count();
    if let Some((x, y)) = a.iter().zip(b).find(|(x, y)| x != y) {
        let floats = |v: &[u64]| v.iter().map(|b| f64::from_bits(*b)).collect::<Vec<_>>();
        panic!("{what}: {differs} entities differ, first {:?}: {:?} against {:?}", x.0, floats(&x.1), floats(&y.1));
    }
}

/// How many rows changed P and Q since this statement's previous run.
fn changed(db: &Database, since: &mut Prepared) -> Vec<Value> {
    since.query(db, ()).expect("changed").rows.remove(0)
}

/// Runs `set` (`SET …`) on both worlds, in place on `a` and the general way on `b`.
fn compare(a: &mut Database, b: &mut Database, component: &str, set: &str, dt: f64) {
    let params = Params::positional([Value::Float(dt)]);
    let in_place = format!("UPDATE {component} SET {set} FROM P, V, !Frozen");
    let general = format!("UPDATE {component} SET {set} FROM P, V, !Frozen, Tag WHERE Tag.n >= 0");
    let before = dump(a);
    let (x, y) = (a.execute(&in_place, &params), b.execute(&general, &params));
    match (&x, &y) {
        (Ok(x), Ok(y)) => assert_eq!(x.rows, y.rows, "{set}, dt {dt}"),
        (Err(x), Err(y)) => {
            assert_eq!(x.to_string(), y.to_string(), "{set}, dt {dt}");
            assert_same(&dump(a), &before, &format!("{set}, dt {dt}: a failed statement changes nothing"));
        }
        _ => panic!("{set}, dt {dt}: {x:?} against {y:?}"),
    }
    assert_same(&dump(a), &dump(b), &format!("{set}, dt {dt}"));
}

const SETS: [(&str, &str); 9] = [
    ("P", "x = P.x + V.x * $1, y = P.y + V.y * $1"),
    ("P", "x = P.x - V.y * $1"),
    ("P", "z = P.z * 0.5 + 1, x = -P.y"),
    ("P", "x = (P.x + 1) * (2 - V.y), y = V.x * $1 - P.y, z = P.x"),
    ("P", "y = P.x, x = P.y"),
    ("P", "x = P.x * $1"),
    ("P", "x = P.x + V.x * 3.0e38"),
    ("Q", "a = Q.a + V.x * $1, b = Q.b + V.y * $1, c = Q.c - P.z * $1, d = Q.d + Q.a * $1"),
    ("Q", "a = Q.b * Q.c, b = P.x + 2, c = Q.d - 1, d = V.x"),
];

#[test]
fn in_place_updates_match_the_general_path() {
    for (seed, extremes) in [(1, Extremes::None), (2, Extremes::Infinite), (3, Extremes::All)] {
        let (mut a, mut b) = worlds(seed, extremes);
        let text = "SELECT count(*) WHERE changed(P) OR changed(Q)";
        let (mut since_a, mut since_b) = (a.prepare(text).unwrap(), b.prepare(text).unwrap());
        changed(&a, &mut since_a);
        changed(&b, &mut since_b);
        for dt in [0.016, -2.5, 1e30] {
            for (component, set) in SETS {
                compare(&mut a, &mut b, component, set, dt);
                assert_eq!(changed(&a, &mut since_a), changed(&b, &mut since_b), "{set}, dt {dt}");
            }
        }
    }
}

/// The same systems on both worlds, ticked: the same values, the same failures.
#[test]
fn in_place_systems_match_the_general_path() {
    let (mut a, mut b) = worlds(4, Extremes::Infinite);
    for (i, (component, set)) in SETS.iter().enumerate() {
        let set = set.replace("$1", "$dt");
        a.execute(&format!("CREATE SYSTEM s{i} AS UPDATE {component} SET {set} FROM P, V, !Frozen"), ()).unwrap();
        b.execute(
            &format!("CREATE SYSTEM s{i} AS UPDATE {component} SET {set} FROM P, V, !Frozen, Tag WHERE Tag.n >= 0"),
            (),
        )
        .unwrap();
        // One system at a time (its batch of one rewrites in place), then all of them.
        let (x, y) = (a.tick(2, 0.25).unwrap(), b.tick(2, 0.25).unwrap());
        assert_eq!(format!("{x:?}"), format!("{y:?}"), "{set}");
        assert_same(&dump(&a), &dump(&b), &set);
    }
    let (x, y) = (a.tick(3, 1e9).unwrap(), b.tick(3, 1e9).unwrap());
    assert_eq!(format!("{x:?}"), format!("{y:?}"));
    assert!(!x.is_empty(), "some systems fail on values too large for an f32");
    assert_same(&dump(&a), &dump(&b), "every system");
}

/// A component a Rust system counts in.
#[derive(ecsdb::Component)]
struct Counter {
    n: i64,
}

/// A text system alone with a Rust system in one batch (they share no component) rewrites
/// in place after the Rust system has run, with the values of the batch's start.
#[test]
fn an_in_place_system_beside_a_rust_system() {
    use ecsdb::query::schedule::SystemContext;
    use ecsdb_engine::query::QueryIter;
    let (mut a, mut b) = worlds(6, Extremes::Infinite);
    for (db, filter) in [(&mut a, ""), (&mut b, ", Tag WHERE Tag.n >= 0")] {
        let es: Vec<Entity> = db.world().query::<Entity>().collect();
        for e in es {
            db.world_mut().insert(e, Counter { n: 0 }).unwrap();
        }
        db.execute(&format!(
            "CREATE SYSTEM movement AS UPDATE P SET x = P.x + V.x * $dt, y = P.y - V.y * $dt FROM P, V, !Frozen{filter}"
        ), ())
        .unwrap();
        db.add_system("count")
            .run(|q: QueryIter<&mut Counter, ()>, _: &SystemContext| q.for_each(|mut c| c.n += 1))
            .unwrap();
        let schedule = db.query("EXPLAIN SCHEDULE", ()).unwrap();
        let batches: Vec<String> = schedule.rows.iter().map(|r| format!("{r:?}")).collect();
        assert!(batches.iter().any(|r| r.contains("movement") && r.contains("count")), "one batch: {batches:?}");
    }
    let (x, y) = (a.tick(3, 0.5).unwrap(), b.tick(3, 0.5).unwrap());
    assert_eq!(format!("{x:?}"), format!("{y:?}"));
    assert_same(&dump(&a), &dump(&b), "movement beside count");
    let counts = |db: &Database| db.world().query::<&Counter>().map(|c| c.n).collect::<Vec<_>>();
    assert!(counts(&a).iter().all(|n| *n == 3));
    assert_eq!(counts(&a), counts(&b));
}
