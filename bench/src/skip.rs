//! Skip indexes on 1,000,000 entities of `Zone { id: i32, heat: f32 }` spawned zone by zone
//! (1,000 zones of 1,000 entities: the id is clustered in spawn order; heat is uniform in
//! [0, 1000) and clustered nowhere).
//!
//! - `eq_clustered`: `SELECT count(*) WHERE Zone.id = 417` as text. `ecsdb`: with a `skip`
//!   index on `Zone.id`; `ecsdb-scan`: the same statement on the same data without an
//!   index (the column kernel over every row).
//! - `range_clustered`: `SELECT count(*) WHERE Zone.id BETWEEN 400 AND 409`, likewise.
//! - `upkeep_10k`: one tick of 10,000 writes to `Zone.id` of random entities (each moves to
//!   a neighbouring zone, so the data stays clustered), then the index refresh that the next
//!   read would do. `ecsdb`: with the skip index; `ecsdb-bitmap`: with a bitmap index on
//!   the same field instead; `ecsdb-none`: the writes alone. The upkeep of an index is its
//!   time minus `ecsdb-none`'s; the note under the table gives the ratio.
//!
//! Notes under the table: the skip index's memory per row, and the rows the kept blocks
//! hold against a scan's.

use std::hint::black_box;

use ecsdb::index::{IndexDef, IndexKind, IndexPredicate};
use ecsdb::query::Database;
use ecsdb::{Component, Entity, Value, World};

use crate::data::Rng;
use crate::harness::{Suite, iter};

const N: usize = 1_000_000;
const PER_ZONE: usize = 1_000;
const WRITES: usize = 10_000;

const EQ: &str = "SELECT count(*) WHERE Zone.id = 417";
const RANGE: &str = "SELECT count(*) WHERE Zone.id BETWEEN 400 AND 409";

#[derive(Component, Clone, Copy, Debug)]
struct Zone {
    id: i32,
    heat: f32,
}

/// The world, and its entities in spawn order.
fn zones() -> (World, Vec<Entity>) {
    let mut rng = Rng(0x5eed);
    let mut world = World::new();
    let entities = world.spawn_batch((0..N).map(|i| Zone { id: (i / PER_ZONE) as i32, heat: rng.unit() * 1000.0 }));
    (world, entities)
}

fn with_index(kind: Option<IndexKind>) -> (Database, Vec<Entity>) {
    let (mut world, entities) = zones();
    if let Some(kind) = kind {
        world.create_index(IndexDef::new("Zone", &["id"], kind)).expect("index on Zone.id");
    }
    (Database::from_world(world), entities)
}

fn count(db: &Database, text: &str) -> i64 {
    match db.query(text, ()).expect("query runs").rows[0][0] {
        Value::Int(n) => n,
        ref other => panic!("count(*) gave {other:?}"),
    }
}

/// One tick of writes: `WRITES` random entities move to a neighbouring zone.
fn tick(world: &mut World, entities: &[Entity], rng: &mut Rng) {
    for _ in 0..WRITES {
        let e = entities[(rng.next() % entities.len() as u64) as usize];
        let mut z = world.get_mut::<Zone>(e).expect("a live zone");
        z.id = (z.id + (rng.next() % 3) as i32 - 1).clamp(0, (N / PER_ZONE) as i32 - 1);
    }
    world.refresh_indexes();
}

pub fn run(s: &mut Suite) {
    eprintln!("   building 1,000,000 zones (twice)…");
    let (skip, _) = with_index(Some(IndexKind::Skip));
    let (scan, _) = with_index(None);
    for q in [EQ, RANGE] {
        assert_eq!(count(&skip, q), count(&scan, q), "{q}: the index changes no answer");
    }
    let info = skip.world().indexes().into_iter().find(|i| i.kind == IndexKind::Skip).expect("the skip index");
    let kept_rows = |p: &IndexPredicate| skip.world().index_reader().estimate(&info.name, p).map_or(0, |e| e.rows);
    let eq_rows = kept_rows(&IndexPredicate::Eq(Value::Int(417)));
    let range_rows = kept_rows(&IndexPredicate::between(400, 409));

    for (name, text) in [("eq_clustered", EQ), ("range_clustered", RANGE)] {
        s.workload(name, |w| {
            let (skip, scan) = (&skip, &scan);
            w.lib("ecsdb", iter(move || count(skip, text)));
            w.lib("ecsdb-scan", iter(move || count(scan, text)));
        });
    }
    drop(scan);
    drop(skip);

    if s.enabled("upkeep_10k") {
        eprintln!("   building 1,000,000 zones (three times)…");
    }
    s.workload("upkeep_10k", |w| {
        for (lib, kind) in
            [("ecsdb", Some(IndexKind::Skip)), ("ecsdb-bitmap", Some(IndexKind::Bitmap)), ("ecsdb-none", None)]
        {
            let (mut db, entities) = with_index(kind);
            let mut rng = Rng(0x7e57);
            w.lib(
                lib,
                iter(move || {
                    tick(db.world_mut(), &entities, &mut rng);
                    black_box(db.world().len())
                }),
            );
        }
    });

    s.note(format!(
        "skip index on Zone.id: {:.2} bytes per row ({} bytes for {} rows); `Zone.id = 417` visits {} rows of the \
         kept blocks and `BETWEEN 400 AND 409` {} (a scan visits {}): {:.0}× and {:.0}× fewer",
        info.memory_bytes as f64 / info.entries.max(1) as f64,
        info.memory_bytes,
        info.entries,
        eq_rows,
        range_rows,
        N,
        N as f64 / eq_rows.max(1) as f64,
        N as f64 / range_rows.max(1) as f64,
    ));
    s.note("upkeep = time with the index − `ecsdb-none` (the writes alone); compare ecsdb's with ecsdb-bitmap's");
}
