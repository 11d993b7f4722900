//! Value indexes on 1,000,000 entities with `Team { id: u8 }` (4 values, uniform) and
//! `Health { hp: f32 }` (uniform in [0, 1000)), answered by ecsdb's `bitmap` and `btree`
//! indexes, by a full scan in ecsdb, and by SQLite in memory with ordinary B-tree indexes
//! (`CREATE INDEX t_team ON t(team)`, `CREATE INDEX t_hp ON t(hp)`).
//!
//! - `eq_bitmap`: the entities of one team (`team = ?`, 250,000 of them).
//! - `range_btree`: `hp BETWEEN a AND a + 1` (about 1,000 entities).
//! - `upkeep_80k`: 80,000 keys of the btree written and taken in (`index_upkeep.rs`, run
//!   after these).
//!
//! What each library produces:
//! - `sqlite`: the ids stepped out of a prepared `SELECT id FROM t WHERE …` into a `Vec`, in
//!   the index's order.
//! - `ecsdb`: for `eq_bitmap` the index's `RoaringBitmap` of entity indices (what the planner
//!   combines with AND/OR); for `range_btree` the same product as SQLite, the matching entity
//!   indices in key order (`IndexPredicate::Ordered` over the range) collected into a `Vec`.
//! - `ecsdb-set` (`range_btree`): the range as a `RoaringBitmap` (`IndexPredicate::Range`):
//!   the ids sorted into a set, ready for AND/OR.
//! - `ecsdb-scan`: a typed query over every row, the matching indices into a `Vec`.

use std::ops::Bound;
use std::time::Instant;

use ecsdb::index::{IndexDef, IndexKind, IndexPredicate};
use ecsdb::{Component, Entity, Value, World};
use rusqlite::{Connection, Statement, params};

use crate::data::Rng;
use crate::harness::{Suite, human_bytes, iter};

const N: usize = 1_000_000;
const TEAMS: u8 = 4;
const HP_MAX: f64 = 1000.0;
const QUERIES: usize = 1024;

#[derive(Component, Clone, Copy, Debug)]
struct Team {
    id: u8,
}

#[derive(Component, Clone, Copy, Debug)]
pub(crate) struct Health {
    pub(crate) hp: f32,
}

fn sqlite_ids(st: &mut Statement<'_>, p: impl rusqlite::Params) -> Vec<i64> {
    let mut out = Vec::new();
    let mut rows = st.query(p).expect("query");
    while let Some(row) = rows.next().expect("row") {
        out.push(row.get(0).expect("id"));
    }
    out
}

fn scan_team(world: &World, t: u8) -> Vec<u32> {
    world.query::<(Entity, &Team)>().filter(|(_, x)| x.id == t).map(|(e, _)| e.index()).collect()
}

pub(crate) fn scan_hp(world: &World, lo: f64, hi: f64) -> Vec<u32> {
    world
        .query::<(Entity, &Health)>()
        .filter(|(_, h)| lo <= h.hp as f64 && h.hp as f64 <= hi)
        .map(|(e, _)| e.index())
        .collect()
}

fn sorted(ids: Vec<i64>) -> Vec<u32> {
    let mut v: Vec<u32> = ids.into_iter().map(|i| i as u32).collect();
    v.sort_unstable();
    v
}

/// Registers the suite.
pub fn run(s: &mut Suite) {
    eprintln!("   building the 1M-entity world and SQLite table (not timed)…");
    let mut r = Rng(0x1dec_5eed);
    let rows: Vec<(u8, f32)> =
        (0..N).map(|_| ((r.next() % TEAMS as u64) as u8, (r.unit_f64() * HP_MAX) as f32)).collect();
    let ranges: Vec<f64> = (0..QUERIES).map(|_| (r.unit_f64() * (HP_MAX - 1.0)).floor()).collect();

    let mut world = World::new();
    world.spawn_batch(rows.iter().map(|&(t, hp)| (Team { id: t }, Health { hp })));
    let start = Instant::now();
    let team = world.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).expect("Team.id");
    let team_built = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let hp = world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)).expect("Health.hp");
    let hp_built = start.elapsed().as_secs_f64();

    let conn = Connection::open_in_memory().expect("SQLite opens in memory");
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, team INTEGER NOT NULL, hp REAL NOT NULL)")
        .expect("create");
    {
        let tx = conn.unchecked_transaction().expect("begin");
        {
            let mut st = tx.prepare("INSERT INTO t VALUES (?1, ?2, ?3)").expect("prepare");
            for (i, &(t, h)) in rows.iter().enumerate() {
                st.execute(params![i as i64, t as i64, h as f64]).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let start = Instant::now();
    conn.execute_batch("CREATE INDEX t_team ON t(team); CREATE INDEX t_hp ON t(hp)").expect("index");
    let sqlite_indexed = start.elapsed().as_secs_f64();

    // The answers agree before anything is timed.
    {
        let reader = world.index_reader();
        let mut eq = conn.prepare("SELECT id FROM t WHERE team = ?1").expect("prepare");
        let mut between = conn.prepare("SELECT id FROM t WHERE hp BETWEEN ?1 AND ?2").expect("prepare");
        for t in 0..TEAMS {
            let ours =
                reader.answer(&team, &IndexPredicate::Eq(Value::Int(t as i64))).expect("answered").into_vec(None);
            assert_eq!(ours, scan_team(&world, t), "eq: index vs scan");
            assert_eq!(ours, sorted(sqlite_ids(&mut eq, params![t as i64])), "eq: index vs SQLite");
        }
        for &a in ranges.iter().take(8) {
            let ours = reader.answer(&hp, &IndexPredicate::between(a, a + 1.0)).expect("answered").into_vec(None);
            assert_eq!(ours, scan_hp(&world, a, a + 1.0), "range: index vs scan");
            assert_eq!(ours, sorted(sqlite_ids(&mut between, params![a, a + 1.0])), "range: index vs SQLite");
            let p = IndexPredicate::Ordered {
                low: Bound::Included(Value::Float(a)),
                high: Bound::Included(Value::Float(a + 1.0)),
                descending: false,
                limit: None,
            };
            let listed = reader.answer(&hp, &p).expect("answered").into_vec(None);
            assert_eq!(sorted(listed.iter().map(|&i| i as i64).collect()), ours, "range: ordered vs set");
        }
    }
    let infos = world.indexes();
    let bytes = |name: &str| infos.iter().find(|i| i.name == name).map_or(0, |i| i.memory_bytes);

    s.workload("eq_bitmap", |w| {
        let reader = world.index_reader();
        let team = &team;
        let mut i = 0u8;
        w.lib(
            "ecsdb",
            iter(move || {
                i = (i + 1) % TEAMS;
                reader.answer(team, &IndexPredicate::Eq(Value::Int(i as i64))).map(|a| a.into_set(None).len())
            }),
        )
        .extra("index_bytes", bytes(team));
        let world = &world;
        let mut j = 0u8;
        w.lib(
            "ecsdb-scan",
            iter(move || {
                j = (j + 1) % TEAMS;
                scan_team(world, j).len()
            }),
        );
        let mut st = conn.prepare("SELECT id FROM t WHERE team = ?1").expect("prepare");
        let mut k = 0u8;
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % TEAMS;
                sqlite_ids(&mut st, params![k as i64]).len()
            }),
        );
    });

    s.workload("range_btree", |w| {
        let reader = world.index_reader();
        let (hp, ranges) = (&hp, &ranges);
        let mut i = 0;
        w.lib(
            "ecsdb",
            iter(move || {
                i = (i + 1) % QUERIES;
                let a = ranges[i];
                let p = IndexPredicate::Ordered {
                    low: Bound::Included(Value::Float(a)),
                    high: Bound::Included(Value::Float(a + 1.0)),
                    descending: false,
                    limit: None,
                };
                reader.answer(hp, &p).map(|a| a.into_vec(None))
            }),
        )
        .extra("index_bytes", bytes(hp));
        // A second reader of the unchanged world (readers nest).
        let reader2 = world.index_reader();
        let mut i = 0;
        w.lib(
            "ecsdb-set",
            iter(move || {
                i = (i + 1) % QUERIES;
                let a = ranges[i];
                reader2.answer(hp, &IndexPredicate::between(a, a + 1.0)).map(|a| a.into_set(None).len())
            }),
        );
        let world = &world;
        let mut j = 0;
        w.lib(
            "ecsdb-scan",
            iter(move || {
                j = (j + 1) % QUERIES;
                scan_hp(world, ranges[j], ranges[j] + 1.0).len()
            }),
        );
        let mut st = conn.prepare("SELECT id FROM t WHERE hp BETWEEN ?1 AND ?2").expect("prepare");
        let mut k = 0;
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % QUERIES;
                sqlite_ids(&mut st, params![ranges[k], ranges[k] + 1.0]).len()
            }),
        );
    });

    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap_or(0);
    let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap_or(0);
    s.note(format!(
        "bitmap on Team.id (4 values) built in {:.2} s, {}; btree on Health.hp (1M distinct floats) built in {:.2} s, {} \
         ({:.0} B/entity); SQLite built both indexes in {:.2} s (whole database {})",
        team_built,
        human_bytes(bytes(&team) as f64),
        hp_built,
        human_bytes(bytes(&hp) as f64),
        bytes(&hp) as f64 / N as f64,
        sqlite_indexed,
        human_bytes((pages * page) as f64),
    ));
    s.note("answers of index, scan and SQLite were checked equal before timing");
}
