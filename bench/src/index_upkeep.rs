//! The `index` suite's upkeep workload, `upkeep_80k`: 80,000 of the 1,000,000 keys of a btree
//! on `Health.hp` (f32, uniform in [0, 1000)) change per run, as a tick's writes do, and the
//! index is brought up to date.
//!
//! - `ecsdb`: the writes (`World::get_mut`), then `World::refresh_indexes`: the index takes
//!   in the changed rows.
//! - `ecsdb-rebuild`: the same writes, then the index dropped and created again from every row.
//! - `ecsdb-none`: the same writes to a world with no index: what the writes alone cost, so
//!   that the upkeep is `ecsdb` − `ecsdb-none`.
//! - `sqlite`: `UPDATE t SET hp = ?2 WHERE id = ?1` for the same rows in one transaction, on a
//!   table with `CREATE INDEX t_hp ON t(hp)`.
//!
//! Each run writes another draw of 80,000 distinct rows with new values, the same draws for
//! every library; the answers are checked equal to a scan after the first runs.

use std::ops::Bound;

use ecsdb::index::{IndexDef, IndexKind, IndexPredicate};
use ecsdb::{Entity, Value, World};
use rusqlite::{Connection, params};

use crate::data::Rng;
use crate::harness::{Sampler, Suite, iter};
use crate::index::{Health, scan_hp};

const N: usize = 1_000_000;
const WRITES: usize = 80_000;
/// Draws of written rows, cycled through.
const DRAWS: usize = 8;

/// `DRAWS` lists of `WRITES` distinct rows, each with its new value.
fn draws() -> Vec<Vec<(u32, f32)>> {
    let mut r = Rng(0x0b7e_e0b7);
    (0..DRAWS)
        .map(|_| {
            let mut picked = vec![false; N];
            let mut rows = Vec::with_capacity(WRITES);
            while rows.len() < WRITES {
                let i = (r.next() % N as u64) as usize;
                if !std::mem::replace(&mut picked[i], true) {
                    rows.push((i as u32, (r.unit_f64() * 1000.0) as f32));
                }
            }
            rows
        })
        .collect()
}

fn world(indexed: bool) -> (World, Vec<Entity>) {
    let mut r = Rng(0x1dec_0b7e);
    let mut world = World::new();
    let entities = world.spawn_batch((0..N).map(|_| Health { hp: (r.unit_f64() * 1000.0) as f32 }));
    if indexed {
        world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).expect("Health.hp");
    }
    (world, entities)
}

fn write(world: &mut World, entities: &[Entity], rows: &[(u32, f32)]) {
    for &(i, hp) in rows {
        world.get_mut::<Health>(entities[i as usize]).expect("a live entity").hp = hp;
    }
}

/// The entities with `hp` in `[lo, hi]`, by the index and by a scan, sorted.
fn both_ways(world: &World, lo: f64, hi: f64) -> (Vec<u32>, Vec<u32>) {
    let reader = world.index_reader();
    let name = world.indexes().into_iter().next().expect("the index").name;
    let p = IndexPredicate::Range { low: Bound::Included(Value::Float(lo)), high: Bound::Included(Value::Float(hi)) };
    let by_index = reader.answer(&name, &p).expect("answered").into_vec(None);
    let mut by_scan = scan_hp(world, lo, hi);
    by_scan.sort_unstable();
    (by_index, by_scan)
}

/// Each run writes the next draw, then brings the world's indexes (if any) up to date.
fn writes_then_refresh(mut world: World, entities: Vec<Entity>, draws: &[Vec<(u32, f32)>]) -> Sampler<'_> {
    let mut k = 0;
    iter(move || {
        k = (k + 1) % DRAWS;
        write(&mut world, &entities, &draws[k]);
        world.refresh_indexes();
    })
}

pub fn run(s: &mut Suite) {
    if !s.enabled("upkeep_80k") {
        return;
    }
    eprintln!("   building three 1M-entity worlds with a btree and a SQLite table (not timed)…");
    let draws = draws();
    s.workload("upkeep_80k", |w| {
        let (mut world, entities) = world(true);
        // A few runs' worth of writes, then the index agrees with a scan.
        for rows in &draws[..2] {
            write(&mut world, &entities, rows);
            world.refresh_indexes();
        }
        let (by_index, by_scan) = both_ways(&world, 100.0, 110.0);
        assert_eq!(by_index, by_scan, "the btree after upkeep answers as a scan does");
        let draws = &draws;
        w.lib("ecsdb", writes_then_refresh(world, entities, draws));
        let (mut world, entities) = self::world(true);
        let mut k = 0;
        w.lib(
            "ecsdb-rebuild",
            iter(move || {
                k = (k + 1) % DRAWS;
                write(&mut world, &entities, &draws[k]);
                let name = world.indexes().into_iter().next().expect("the index").name;
                world.drop_index(&name).expect("drop");
                world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).expect("create");
            }),
        );
        let (world, entities) = self::world(false);
        w.lib("ecsdb-none", writes_then_refresh(world, entities, draws));
        let conn = sqlite();
        let mut k = 0;
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % DRAWS;
                let tx = conn.unchecked_transaction().expect("begin");
                {
                    let mut st = tx.prepare_cached("UPDATE t SET hp = ?2 WHERE id = ?1").expect("prepare");
                    for &(i, hp) in &draws[k] {
                        st.execute(params![i as i64, hp as f64]).expect("update");
                    }
                }
                tx.commit().expect("commit");
            }),
        );
    });
    s.note(format!(
        "upkeep_80k: {WRITES} of {N} Health.hp keys (btree) written per run, then the index brought up to date; \
         ecsdb-rebuild drops and creates it instead, ecsdb-none has no index (the writes alone); SQLite updates the same rows of an indexed column in one \
         transaction"
    ));
}

/// SQLite in memory: `t(id, hp)` with the same values as [`world`], and an index on `hp`.
fn sqlite() -> Connection {
    let conn = Connection::open_in_memory().expect("SQLite opens in memory");
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, hp REAL NOT NULL)").expect("create");
    let mut r = Rng(0x1dec_0b7e);
    {
        let tx = conn.unchecked_transaction().expect("begin");
        {
            let mut st = tx.prepare("INSERT INTO t VALUES (?1, ?2)").expect("prepare");
            for i in 0..N {
                st.execute(params![i as i64, (r.unit_f64() * 1000.0) as f32 as f64]).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    conn.execute_batch("CREATE INDEX t_hp ON t(hp)").expect("index");
    conn
}
