//! Spatial queries on 1,000,000 entities with a 3D `Position`, uniformly spread over a cube
//! of side 1000 (one entity per 1000 cubic units), answered by ecsdb's `rtree` index, by a
//! full scan in ecsdb, and by SQLite's R*Tree virtual table (in memory, bundled build).
//!
//! - `radius`: entities within distance 28.8 of a random point (about 100 of them).
//! - `box`: entities inside a random axis-aligned cube of side 46.4 (about 100).
//! - `knn10`: the 10 entities nearest a random point, in order.
//! - `move_10k`: one frame of a game: the same 10,000 of the 1M entities (those with a
//!   `Velocity`) move by their velocity (about one unit per axis, bouncing off the walls),
//!   then the index is brought up to date. Time per frame, moves included.
//!
//! Libraries:
//! - `ecsdb`: the index through an [`IndexReader`](ecsdb::index::IndexReader) made once (a
//!   reader refreshes when made, then answers for as long as the world does not change: one
//!   per frame or statement). For `move_10k`, `query_mut` moves the entities and
//!   `refresh_indexes` updates the default (loose-box) R-tree.
//! - `ecsdb-per_row` (`move_10k`): the same with every moved entity removed and re-inserted.
//! - `ecsdb-rebuild` (`move_10k`): the same, rebuilding the tree by bulk loading.
//! - `ecsdb-scan`: a typed query over every `Position`, the same float operations.
//! - `sqlite`: `CREATE VIRTUAL TABLE pos USING rtree(id, minX, maxX, minY, maxY, minZ, maxZ)`,
//!   points as degenerate boxes, prepared statements: a box query refined by the exact
//!   distance for `radius`; the box query for `box`; for `knn10` (R*Tree has no
//!   nearest-neighbour search) a box query growing until 10 entities lie in its inscribed
//!   ball; for `move_10k` one `UPDATE … WHERE id = ?` per moved entity in one transaction.

use std::collections::BinaryHeap;
use std::time::Instant;

use ecsdb::index::{IndexDef, IndexKind, IndexPredicate, RtreeUpdate, distance};
use ecsdb::{Entity, World};
use rusqlite::{Connection, Statement, params};

use crate::data::Rng;
use crate::data::typed::{Position, Velocity};
use crate::harness::{Suite, human, human_bytes, iter};

const N: usize = 1_000_000;
const MOVERS: usize = 10_000;
const SIDE: f64 = 1000.0;
/// Radius holding about 100 entities: 4/3·π·r³ · 10⁻³ ≈ 100.
const RADIUS: f64 = 28.8;
/// Half the side of a cube holding about 100 entities: (2h)³ · 10⁻³ ≈ 100.
const HALF_BOX: f64 = 23.2;
const K: usize = 10;
/// Queries cycle through this many random points.
const QUERIES: usize = 1024;

/// A uniform point in the cube of side [`SIDE`].
fn point(r: &mut Rng) -> [f32; 3] {
    [(r.unit_f64() * SIDE) as f32, (r.unit_f64() * SIDE) as f32, (r.unit_f64() * SIDE) as f32]
}

/// Positions of every entity (index = entity index = SQLite id) and the movers' velocities.
struct Data {
    points: Vec<[f32; 3]>,
    velocities: Vec<[f32; 3]>,
    queries: Vec<[f64; 3]>,
}

fn data() -> Data {
    let mut r = Rng(0x005e_ed0f_5a11);
    let points = (0..N).map(|_| point(&mut r)).collect();
    let velocities = (0..MOVERS)
        .map(|_| {
            [(r.unit_f64() * 2.0 - 1.0) as f32, (r.unit_f64() * 2.0 - 1.0) as f32, (r.unit_f64() * 2.0 - 1.0) as f32]
        })
        .collect();
    let queries = (0..QUERIES).map(|_| point(&mut r).map(|c| c as f64)).collect();
    Data { points, velocities, queries }
}

/// One step of a mover: `p += v`, reflecting `v` at the walls. The same for every library.
#[inline]
fn step(p: &mut [f32; 3], v: &mut [f32; 3]) {
    for i in 0..3 {
        p[i] += v[i];
        if !(0.0..SIDE as f32).contains(&p[i]) {
            v[i] = -v[i];
            p[i] += 2.0 * v[i];
        }
    }
}

/// The world: static entities first, then the movers (entity index = position in `points`).
fn build_world(d: &Data, mode: RtreeUpdate) -> (World, String, f64) {
    let mut world = World::new();
    let pos = |p: &[f32; 3]| Position { x: p[0], y: p[1], z: p[2] };
    world.spawn_batch(d.points[..N - MOVERS].iter().map(pos));
    world.spawn_batch(
        d.points[N - MOVERS..].iter().zip(&d.velocities).map(|(p, v)| (pos(p), Velocity { x: v[0], y: v[1], z: v[2] })),
    );
    let start = Instant::now();
    let name = world.create_index(IndexDef::new("Position", &[], IndexKind::Rtree)).expect("Position is vector-like");
    let built = start.elapsed().as_secs_f64();
    world.set_rtree_update(&name, mode).expect("the index exists");
    world.refresh_indexes();
    (world, name, built)
}

fn ecsdb_move(world: &mut World) {
    for (mut p, mut v) in world.query_mut::<(&mut Position, &mut Velocity)>() {
        let (mut pp, mut vv) = ([p.x, p.y, p.z], [v.x, v.y, v.z]);
        step(&mut pp, &mut vv);
        (p.x, p.y, p.z) = (pp[0], pp[1], pp[2]);
        if vv != [v.x, v.y, v.z] {
            (v.x, v.y, v.z) = (vv[0], vv[1], vv[2]);
        }
    }
    world.refresh_indexes();
}

fn position(p: &Position) -> [f64; 3] {
    [p.x as f64, p.y as f64, p.z as f64]
}

fn scan_radius(world: &World, c: &[f64; 3], r: f64) -> Vec<u32> {
    world
        .query::<(Entity, &Position)>()
        .filter(|(_, p)| distance(&position(p), c) <= r)
        .map(|(e, _)| e.index())
        .collect()
}

fn scan_box(world: &World, lo: &[f64; 3], hi: &[f64; 3]) -> Vec<u32> {
    world
        .query::<(Entity, &Position)>()
        .filter(|(_, p)| {
            let q = position(p);
            (0..3).all(|i| lo[i] <= q[i] && q[i] <= hi[i])
        })
        .map(|(e, _)| e.index())
        .collect()
}

/// Total order on (distance, index) for the scans' top-k.
struct Near(f64, u32);
impl PartialEq for Near {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Near {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

fn scan_knn(world: &World, c: &[f64; 3], k: usize) -> Vec<u32> {
    let mut heap: BinaryHeap<Near> = BinaryHeap::with_capacity(k + 1);
    for (e, p) in world.query::<(Entity, &Position)>() {
        let n = Near(distance(&position(p), c), e.index());
        if heap.len() < k {
            heap.push(n);
        } else if heap.peek().is_some_and(|top| n < *top) {
            heap.pop();
            heap.push(n);
        }
    }
    heap.into_sorted_vec().into_iter().map(|n| n.1).collect()
}

fn sqlite_db(d: &Data) -> (Connection, f64) {
    let conn = Connection::open_in_memory().expect("SQLite opens in memory");
    conn.execute_batch("CREATE VIRTUAL TABLE pos USING rtree(id, minX, maxX, minY, maxY, minZ, maxZ)")
        .expect("the bundled SQLite has R*Tree");
    let start = Instant::now();
    {
        let tx = conn.unchecked_transaction().expect("begin");
        {
            let mut st = tx.prepare("INSERT INTO pos VALUES (?1, ?2, ?2, ?3, ?3, ?4, ?4)").expect("prepare");
            for (i, p) in d.points.iter().enumerate() {
                st.execute(params![i as i64, p[0] as f64, p[1] as f64, p[2] as f64]).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    (conn, start.elapsed().as_secs_f64())
}

const SQL_BOX: &str = "SELECT id, minX, minY, minZ FROM pos WHERE minX >= ?1 AND maxX <= ?2 AND minY >= ?3 AND maxY <= ?4 AND minZ >= ?5 AND maxZ <= ?6";

/// `(id, point)` of every entity inside the box.
fn sqlite_box(st: &mut Statement<'_>, lo: &[f64; 3], hi: &[f64; 3], out: &mut Vec<(i64, [f64; 3])>) {
    out.clear();
    let mut rows = st.query(params![lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]]).expect("query");
    while let Some(row) = rows.next().expect("row") {
        let get = |i| row.get::<_, f64>(i).expect("a float column");
        out.push((row.get(0).expect("id"), [get(1), get(2), get(3)]));
    }
}

fn sqlite_radius(st: &mut Statement<'_>, c: &[f64; 3], r: f64, buf: &mut Vec<(i64, [f64; 3])>) -> Vec<i64> {
    sqlite_box(st, &c.map(|x| x - r), &c.map(|x| x + r), buf);
    buf.iter().filter(|(_, p)| distance(p, c) <= r).map(|(id, _)| *id).collect()
}

/// k nearest by a growing box: done once k candidates lie within the box's inscribed ball.
fn sqlite_knn(st: &mut Statement<'_>, c: &[f64; 3], k: usize, buf: &mut Vec<(i64, [f64; 3])>) -> Vec<i64> {
    // The ball of radius 16 holds about 17 entities.
    let mut h = 16.0;
    loop {
        sqlite_box(st, &c.map(|x| x - h), &c.map(|x| x + h), buf);
        let mut near: Vec<(f64, i64)> = buf.iter().map(|(id, p)| (distance(p, c), *id)).collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if near.iter().filter(|(d, _)| *d <= h).count() >= k || h > SIDE * 2.0 {
            return near.into_iter().take(k).map(|(_, id)| id).collect();
        }
        h *= 2.0;
    }
}

fn sqlite_page_bytes(conn: &Connection) -> u64 {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap_or(0);
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap_or(0);
    (pages * size) as u64
}

fn as_u32(ids: Vec<i64>) -> Vec<u32> {
    let mut v: Vec<u32> = ids.into_iter().map(|i| i as u32).collect();
    v.sort_unstable();
    v
}

/// Registers the suite.
pub fn run(s: &mut Suite) {
    eprintln!("   building 1M-entity worlds and the SQLite R*Tree (not timed)…");
    let d = data();
    let (mut world, rtree, built) = build_world(&d, RtreeUpdate::Loose);
    let (conn, sqlite_load) = sqlite_db(&d);
    let info = world.index_info(&rtree).expect("the index exists");

    // The answers agree before anything is timed.
    {
        let r = world.index_reader();
        let mut st = conn.prepare(SQL_BOX).expect("prepare");
        let mut buf = Vec::new();
        for c in d.queries.iter().take(8) {
            let p = IndexPredicate::WithinRadius { center: c.to_vec(), radius: RADIUS, inclusive: true };
            let ours = r.answer(&rtree, &p).expect("answered").into_vec(None);
            assert_eq!(ours, scan_radius(&world, c, RADIUS), "radius: index vs scan");
            assert_eq!(ours, as_u32(sqlite_radius(&mut st, c, RADIUS, &mut buf)), "radius: index vs SQLite");
            let p = IndexPredicate::Nearest { point: c.to_vec(), k: K };
            let ours = r.answer(&rtree, &p).expect("answered").into_vec(Some(K));
            assert_eq!(ours, scan_knn(&world, c, K), "knn: index vs scan");
            let theirs: Vec<u32> = sqlite_knn(&mut st, c, K, &mut buf).into_iter().map(|i| i as u32).collect();
            assert_eq!(ours, theirs, "knn: index vs SQLite");
        }
    }

    let mut refresh_idle = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        world.refresh_indexes();
        refresh_idle = refresh_idle.min(t.elapsed().as_secs_f64());
    }

    s.workload("radius", |w| {
        let r = world.index_reader();
        let (rtree, queries) = (&rtree, &d.queries);
        let mut i = 0;
        w.lib(
            "ecsdb",
            iter(move || {
                i = (i + 1) % QUERIES;
                let p = IndexPredicate::WithinRadius { center: queries[i].to_vec(), radius: RADIUS, inclusive: true };
                r.answer(rtree, &p).map(|a| a.into_set(None).len())
            }),
        )
        .extra("index_bytes", info.memory_bytes);
        let world = &world;
        let mut j = 0;
        w.lib(
            "ecsdb-scan",
            iter(move || {
                j = (j + 1) % QUERIES;
                scan_radius(world, &queries[j], RADIUS).len()
            }),
        );
        let mut st = conn.prepare(SQL_BOX).expect("prepare");
        let (mut k, mut buf) = (0, Vec::new());
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % QUERIES;
                sqlite_radius(&mut st, &queries[k], RADIUS, &mut buf).len()
            }),
        );
    });

    s.workload("box", |w| {
        let r = world.index_reader();
        let (rtree, queries) = (&rtree, &d.queries);
        let corners = |c: &[f64; 3]| (c.map(|x| x - HALF_BOX), c.map(|x| x + HALF_BOX));
        let mut i = 0;
        w.lib(
            "ecsdb",
            iter(move || {
                i = (i + 1) % QUERIES;
                let (lo, hi) = corners(&queries[i]);
                let p = IndexPredicate::InsideBox { lo: lo.to_vec(), hi: hi.to_vec() };
                r.answer(rtree, &p).map(|a| a.into_set(None).len())
            }),
        );
        let world = &world;
        let mut j = 0;
        w.lib(
            "ecsdb-scan",
            iter(move || {
                j = (j + 1) % QUERIES;
                let (lo, hi) = corners(&queries[j]);
                scan_box(world, &lo, &hi).len()
            }),
        );
        let mut st = conn.prepare(SQL_BOX).expect("prepare");
        let (mut k, mut buf) = (0, Vec::new());
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % QUERIES;
                let (lo, hi) = corners(&queries[k]);
                sqlite_box(&mut st, &lo, &hi, &mut buf);
                buf.len()
            }),
        );
    });

    s.workload("knn10", |w| {
        let r = world.index_reader();
        let (rtree, queries) = (&rtree, &d.queries);
        let mut i = 0;
        w.lib(
            "ecsdb",
            iter(move || {
                i = (i + 1) % QUERIES;
                let p = IndexPredicate::Nearest { point: queries[i].to_vec(), k: K };
                r.answer(rtree, &p).map(|a| a.into_vec(Some(K)))
            }),
        );
        let world = &world;
        let mut j = 0;
        w.lib(
            "ecsdb-scan",
            iter(move || {
                j = (j + 1) % QUERIES;
                scan_knn(world, &queries[j], K)
            }),
        );
        let mut st = conn.prepare(SQL_BOX).expect("prepare");
        let (mut k, mut buf) = (0, Vec::new());
        w.lib(
            "sqlite",
            iter(move || {
                k = (k + 1) % QUERIES;
                sqlite_knn(&mut st, &queries[k], K, &mut buf)
            }),
        );
    });

    let sqlite_bytes = sqlite_page_bytes(&conn);
    let mut frames = Vec::new();
    if s.enabled("move_10k") {
        let (mut per_row, _, _) = build_world(&d, RtreeUpdate::PerRow);
        let (mut rebuild, _, _) = build_world(&d, RtreeUpdate::Rebuild);
        s.workload("move_10k", |w| {
            let world = &mut world;
            w.lib("ecsdb", iter(move || ecsdb_move(world)));
            let per_row = &mut per_row;
            w.lib("ecsdb-per_row", iter(move || ecsdb_move(per_row)));
            let rebuild = &mut rebuild;
            w.lib("ecsdb-rebuild", iter(move || ecsdb_move(rebuild)));
            let mut pts: Vec<[f32; 3]> = d.points[N - MOVERS..].to_vec();
            let mut vel = d.velocities.clone();
            let mut st = conn
                .prepare(
                    "UPDATE pos SET minX = ?2, maxX = ?2, minY = ?3, maxY = ?3, minZ = ?4, maxZ = ?4 WHERE id = ?1",
                )
                .expect("prepare");
            let conn = &conn;
            w.lib(
                "sqlite",
                iter(move || {
                    conn.execute_batch("BEGIN").expect("begin");
                    for (i, (p, v)) in pts.iter_mut().zip(vel.iter_mut()).enumerate() {
                        step(p, v);
                        let id = (N - MOVERS + i) as i64;
                        st.execute(params![id, p[0] as f64, p[1] as f64, p[2] as f64]).expect("update");
                    }
                    conn.execute_batch("COMMIT").expect("commit");
                }),
            );
        });
        // After the frames: the moved index still answers like a scan.
        let r = world.index_reader();
        for c in d.queries.iter().take(4) {
            let p = IndexPredicate::WithinRadius { center: c.to_vec(), radius: RADIUS, inclusive: true };
            let ours = r.answer(&rtree, &p).expect("answered").into_vec(None);
            assert_eq!(ours, scan_radius(&world, c, RADIUS), "radius after moves: index vs scan");
        }
        frames.push(format!(
            "after move_10k the index holds {}",
            human_bytes(r.info(&rtree).map_or(0, |i| i.memory_bytes) as f64)
        ));
        drop(r);
        // The loose boxes' worst case: a different random 10k entities move each frame (a
        // first move always leaves the point box). Timed here, outside the table.
        let mut times = Vec::new();
        let mut rng = Rng(77);
        let ids: Vec<Entity> = world.query::<(Entity, &Position)>().map(|(e, _)| e).collect();
        for _ in 0..12 {
            let picks: Vec<Entity> = (0..MOVERS).map(|_| ids[(rng.next() % ids.len() as u64) as usize]).collect();
            let t = Instant::now();
            for e in &picks {
                if let Ok(mut p) = world.get_mut::<Position>(*e) {
                    p.x = (p.x + 1.0).min(SIDE as f32 - 1.0);
                }
            }
            world.refresh_indexes();
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        frames.push(format!(
            "a different random 10k entities moving each frame (the loose boxes' worst case): {} per frame",
            human(times[times.len() / 2] * 1e9)
        ));
    }

    s.note(format!(
        "1M points in a cube of side 1000; rtree index built in {:.2} s (bulk load), {} ({:.0} B/entity); \
         SQLite R*Tree loaded in {:.2} s, {} for the whole database",
        built,
        human_bytes(info.memory_bytes as f64),
        info.memory_bytes as f64 / N as f64,
        sqlite_load,
        human_bytes(sqlite_bytes as f64)
    ));
    s.note(format!(
        "refresh with nothing changed (tick scan of 1M rows): {}; a reader made per statement pays it once",
        human(refresh_idle * 1e9)
    ));
    for f in frames {
        s.note(f);
    }
    s.note("answers of index, scan and SQLite were checked equal before timing (radius, knn10) and after move_10k");
}
