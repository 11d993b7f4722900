//! Rust systems in the schedule: run side by side in one batch when their queries do not
//! overlap, alone when they write a sparse component, mixed with text systems; the result is
//! the same on 1, 2 and 4 threads, change ticks and all.

mod common;

use common::db::rows;

use ecsdb::query::Database;
use ecsdb::query::schedule::{Phase, SystemContext};
use ecsdb_engine::query::QueryIter;
use ecsdb_engine::{Changed, Component, Value};
use proptest::prelude::*;

macro_rules! int_components {
    ($($name:ident),*) => {$(
        #[derive(Component)]
        struct $name {
            v: i64,
        }
        impl Int for $name {
            fn v(&self) -> i64 {
                self.v
            }
            fn set(&mut self, v: i64) {
                self.v = v;
            }
        }
    )*};
}

/// Components with one integer field, read and written by generic systems.
trait Int: Component {
    fn v(&self) -> i64;
    fn set(&mut self, v: i64);
}

int_components!(C0, C1, C2, C3);

#[derive(Component)]
#[component(storage = "sparse")]
struct S {
    v: i64,
}

/// A world of 12 entities, each with two of `C0..C3`, a third of them with `S`.
fn world() -> Database {
    let mut db = Database::new();
    let w = db.world_mut();
    for i in 0..12i64 {
        let (a, b) = (i * 3, i);
        let e = match i % 4 {
            0 => w.spawn((C0 { v: a }, C1 { v: b })),
            1 => w.spawn((C1 { v: a }, C2 { v: b })),
            2 => w.spawn((C2 { v: a }, C3 { v: b })),
            _ => w.spawn((C3 { v: a }, C0 { v: b })),
        };
        if i % 3 == 0 {
            w.insert(e, S { v: i }).unwrap();
        }
    }
    db
}

/// Adds Rust system `name` of kind `kind` writing `W`, reading (or filtering on) `R`.
fn add<W: Int, R: Int>(db: &mut Database, name: &str, phase: Phase, kind: u8, k: i64) {
    let b = db.add_system(name).in_phase(phase);
    match kind % 3 {
        0 => b.run(move |q: QueryIter<(&mut W, &R), ()>, _: &SystemContext| {
            q.for_each(|(mut w, r)| {
                let v = w.v().wrapping_add(r.v() % 7).wrapping_add(k);
                w.set(v)
            })
        }),
        1 => b.run(move |q: QueryIter<&mut W, Changed<R>>, ctx: &SystemContext| {
            q.for_each(|mut w| {
                let v = w.v().wrapping_mul(3).wrapping_add(ctx.tick as i64);
                w.set(v)
            })
        }),
        _ => b.run(move |q: QueryIter<(&mut S, &R), ()>, _: &SystemContext| {
            q.for_each(|(mut s, r)| s.v = s.v.wrapping_add(r.v()).wrapping_add(k))
        }),
    }
    .unwrap();
}

/// [`add`] with the components chosen by number (`w != r`).
fn add_numbered(db: &mut Database, name: &str, phase: Phase, kind: u8, w: usize, r: usize, k: i64) {
    macro_rules! pick {
        ($($w:literal $wt:ident, $r:literal $rt:ident;)*) => {
            match (w, r) {
                $(($w, $r) => add::<$wt, $rt>(db, name, phase, kind, k),)*
                _ => unreachable!("w != r, both below 4"),
            }
        };
    }
    pick!(0 C0, 1 C1; 0 C0, 2 C2; 0 C0, 3 C3; 1 C1, 0 C0; 1 C1, 2 C2; 1 C1, 3 C3;
          2 C2, 0 C0; 2 C2, 1 C1; 2 C2, 3 C3; 3 C3, 0 C0; 3 C3, 1 C1; 3 C3, 2 C2;);
}

/// A text system's statement over `C0..C3`.
fn text(kind: u8, c: usize, d: usize, k: i64) -> String {
    match kind % 4 {
        0 => format!("UPDATE C{c} SET v = C{c}.v + C{d}.v % 5 + {k} FROM C{c}, C{d}"),
        1 => format!("UPDATE C{c} SET v = C{c}.v - {k} WHERE C{c}.v > 20"),
        2 => format!("SPAWN C{c} {{v: {k}}}, C{d} {{v: $tick}}"),
        _ => format!("DESPAWN WHERE C{c}.v % 7 = {}", k % 7),
    }
}

fn dump(db: &Database) -> Vec<Vec<Value>> {
    rows(db, "SELECT entity, C0.v, C1.v, C2.v, C3.v, S.v FROM ?C0, ?C1, ?C2, ?C3, ?S ORDER BY entity")
}

#[derive(Clone, Debug)]
enum Def {
    Rust { kind: u8, w: usize, r: usize, k: i64 },
    Text { kind: u8, c: usize, d: usize, k: i64 },
}

fn def() -> impl Strategy<Value = (u8, Def)> {
    let rust =
        (0u8..3, 0usize..4, 1usize..4, -3i64..9).prop_map(|(kind, w, dr, k)| Def::Rust { kind, w, r: (w + dr) % 4, k });
    let text =
        (0u8..4, 0usize..4, 1usize..4, 0i64..9).prop_map(|(kind, c, dd, k)| Def::Text { kind, c, d: (c + dd) % 4, k });
    (0u8..2, prop_oneof![3 => rust, 1 => text])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 32 } else { 200 }))]

    /// Mixed schedules give the same world, change ticks and schedule included, byte for
    /// byte, on 1 thread (every system alone, one by one) and on 2 and 4 (Rust systems of
    /// a batch side by side).
    #[test]
    fn rust_systems_side_by_side_match_one_by_one(defs in prop::collection::vec(def(), 1..8), ticks in 1u64..4) {
        let phases = [Phase::PreUpdate, Phase::OnUpdate];
        let build = || {
            let mut db = world();
            for (n, (phase, d)) in defs.iter().enumerate() {
                let phase = phases[*phase as usize];
                match *d {
                    Def::Rust { kind, w, r, k } => add_numbered(&mut db, &format!("r{n}"), phase, kind, w, r, k),
                    Def::Text { kind, c, d, k } => {
                        db.execute(&format!("CREATE SYSTEM t{n} IN PHASE {phase:?} AS {}", text(kind, c, d, k)), ()).unwrap();
                    }
                }
            }
            db
        };
        let mut results = Vec::new();
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            results.push(pool.install(|| {
                let mut db = build();
                let r = db.execute(&format!("TICK {ticks}"), ()).unwrap();
                let opts = ecsdb::SaveOptions { change_ticks: true, ..Default::default() };
                (dump(&db), r.rows, db.world().save_to_vec(&opts).unwrap())
            }));
        }
        prop_assert_eq!(&results[0], &results[1]);
        prop_assert_eq!(&results[0], &results[2]);
    }
}

#[test]
fn independent_rust_systems_share_a_batch_and_sparse_writers_run_alone() {
    let mut db = world();
    add::<C0, C1>(&mut db, "a", Phase::OnUpdate, 0, 1);
    add::<C2, C3>(&mut db, "b", Phase::OnUpdate, 0, 1);
    // `d` filters on changes of C0, which `a` writes: it waits for `a`.
    add::<C1, C0>(&mut db, "d", Phase::OnUpdate, 1, 1);
    // `c` writes the sparse S: alone.
    add::<C3, C0>(&mut db, "c", Phase::OnUpdate, 2, 1);
    let plan: Vec<String> = rows(&db, "EXPLAIN SCHEDULE").into_iter().map(|r| format!("{:?}", r[0])).collect();
    assert!(plan.iter().any(|l| l.contains("together: a (Rust), b (Rust)")), "{plan:?}");
    assert!(plan.iter().any(|l| l.contains("d (Rust) -- waits on a")), "{plan:?}");
    assert!(plan.iter().any(|l| l.contains("c (Rust) -- waits on everything before it (c runs alone)")), "{plan:?}");
    let sum = |db: &Database, c: &str| common::db::int(db, &format!("SELECT sum({c}.v)"));
    let before: Vec<i64> = ["C0", "C1", "C2", "C3", "S"].iter().map(|c| sum(&db, c)).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| db.execute("TICK 1", ()).unwrap());
    let after: Vec<i64> = ["C0", "C1", "C2", "C3", "S"].iter().map(|c| sum(&db, c)).collect();
    // a: C0 += C1 % 7 + 1 on the rows with both (entities 0, 4, 8: C1 = 0, 4, 8).
    assert_eq!(after[0] - before[0], [0i64, 4, 8].iter().map(|v| v % 7 + 1).sum::<i64>());
    // b: C2 += C3 % 7 + 1 (entities 2, 6, 10: C3 = 2, 6, 10).
    assert_eq!(after[2] - before[2], [2i64, 6, 10].iter().map(|v| v % 7 + 1).sum::<i64>());
    // d: C1 = 3 C1 + $tick (0) where C0 changed: entities 0, 4, 8, whose C1 are 0, 4, 8.
    assert_eq!(after[1] - before[1], 2 * (4 + 8));
    // c: S += C0 + 1 on entities with S and C0: 0 (C0 1 after `a`) and 3 (C0 3).
    assert_eq!(after[4] - before[4], (1 + 1) + (3 + 1));
    // SHOW SYSTEMS counts the rows of the tables each visited (before row filters): `c`
    // reads C0 in both tables that hold it, its sparse S on a third of their rows.
    let stats = rows(&db, "SHOW SYSTEMS");
    let rows: Vec<(String, Value, Value)> =
        stats.into_iter().map(|r| (format!("{}", r[0]), r[5].clone(), r[6].clone())).collect();
    let want = [("a", 3), ("b", 3), ("d", 3), ("c", 6)].map(|(n, k)| (n.to_string(), Value::Int(1), Value::Int(k)));
    assert_eq!(rows, want);
}
