//! Text queries against a hand-written typed loop and SQLite, on one world of 1,000,000
//! entities.
//!
//! The world: every entity has Position and Velocity (x, y, z: f32), Health (hp, max: f32),
//! Team (name: one of 4 strings) and Level (value: i32); half are Player and half Monster
//! (tags), one in ten is Frozen. Values come from a fixed-seed generator.
//!
//! Libraries:
//! - `ecsdb-prepared`: the statement prepared once (`db.prepare`), its rows read with
//!   `Prepared::query_each` into the same shape the typed loop and SQLite build (for
//!   `project_filter`, a `Vec` of 3-tuples; the other results are a few rows);
//! - `ecsdb-resultset` (`project_filter` only): the same statement collected into a
//!   `ResultSet` (`Prepared::query`): one `Vec<Value>` per row;
//! - `ecsdb-text`: `db.query(text, ())` every time: parse, bind, plan and run;
//! - `ecsdb-typed`: a hand-written loop over a typed `QueryState` built once (what a system
//!   would write: the same filter, the same result shape as the text query's rows);
//! - `sqlite`: rusqlite (bundled) in memory, one table per component keyed by entity
//!   (`entity INTEGER PRIMARY KEY`), the same joins, cached prepared statements, no
//!   secondary indexes (ecsdb has none in this run either).
//!
//! Workloads: `count_filter`, `project_filter`, `group_by`, `top_k` (the query text is printed
//! under the table) and `parse_plan` (parse + bind + plan of `count_filter`'s text, without
//! running it; SQLite: `prepare` of its text).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

use ecsdb::query::{Database, Params, Prepared};
use ecsdb::{Component, Entity, QueryState, Value, World};

use rusqlite::Connection;

use crate::data::typed::{Health, Position, Velocity};
use crate::data::{Row, TEAMS, game_world};
use crate::harness::{Suite, iter};

const N: usize = 1_000_000;

#[derive(Component, Clone)]
struct Team {
    name: String,
}

#[derive(Component, Clone, Copy)]
struct Level {
    value: i32,
}

#[derive(Component)]
struct Player;
#[derive(Component)]
struct Monster;
#[derive(Component)]
struct Frozen;

const COUNT_FILTER: &str = "SELECT count(*) WHERE Health.hp < 50 AND Team.name = 'red'";
const PROJECT_FILTER: &str = "SELECT Position.x, Position.y, Health.hp WHERE Health.hp < 1";
const GROUP_BY: &str = "SELECT Team.name, avg(Health.hp), max(Health.hp) GROUP BY Team.name";
const TOP_K: &str = "SELECT entity, Health.hp ORDER BY Health.hp DESC LIMIT 10";

const SQL_COUNT_FILTER: &str =
    "SELECT count(*) FROM health h JOIN team t ON t.entity = h.entity WHERE h.hp < 50 AND t.name = 'red'";
const SQL_PROJECT_FILTER: &str =
    "SELECT p.x, p.y, h.hp FROM position p JOIN health h ON h.entity = p.entity WHERE h.hp < 1";
const SQL_GROUP_BY: &str =
    "SELECT t.name, avg(h.hp), max(h.hp) FROM team t JOIN health h ON h.entity = t.entity GROUP BY t.name";
const SQL_TOP_K: &str = "SELECT h.entity, h.hp FROM health h ORDER BY h.hp DESC LIMIT 10";

/// The game world of `N` entities (`data::game_world`), the same on every run.
fn rows() -> Vec<Row> {
    game_world(N)
}

fn build_world(rows: &[Row]) -> World {
    let mut world = World::new();
    for r in rows {
        let p = Position { x: r.pos[0], y: r.pos[1], z: r.pos[2] };
        let v = Velocity { x: r.vel[0], y: r.vel[1], z: r.vel[2] };
        let h = Health { hp: r.hp, max: r.max };
        let t = Team { name: TEAMS[r.team].to_string() };
        let l = Level { value: r.level };
        let e = if r.player { world.spawn((p, v, h, t, l, Player)) } else { world.spawn((p, v, h, t, l, Monster)) };
        if r.frozen {
            world.insert(e, Frozen).expect("just spawned");
        }
    }
    world
}

fn build_sqlite(rows: &[Row]) -> Connection {
    let mut conn = Connection::open_in_memory().expect("sqlite in memory");
    conn.execute_batch(
        "CREATE TABLE position (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
         CREATE TABLE velocity (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
         CREATE TABLE health (entity INTEGER PRIMARY KEY, hp REAL, max REAL);
         CREATE TABLE team (entity INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE level (entity INTEGER PRIMARY KEY, value INTEGER);
         CREATE TABLE player (entity INTEGER PRIMARY KEY);
         CREATE TABLE monster (entity INTEGER PRIMARY KEY);
         CREATE TABLE frozen (entity INTEGER PRIMARY KEY);",
    )
    .expect("schema");
    let tx = conn.transaction().expect("transaction");
    {
        let mut pos = tx.prepare("INSERT INTO position VALUES (?1, ?2, ?3, ?4)").expect("prepare");
        let mut vel = tx.prepare("INSERT INTO velocity VALUES (?1, ?2, ?3, ?4)").expect("prepare");
        let mut health = tx.prepare("INSERT INTO health VALUES (?1, ?2, ?3)").expect("prepare");
        let mut team = tx.prepare("INSERT INTO team VALUES (?1, ?2)").expect("prepare");
        let mut level = tx.prepare("INSERT INTO level VALUES (?1, ?2)").expect("prepare");
        let mut player = tx.prepare("INSERT INTO player VALUES (?1)").expect("prepare");
        let mut monster = tx.prepare("INSERT INTO monster VALUES (?1)").expect("prepare");
        let mut frozen = tx.prepare("INSERT INTO frozen VALUES (?1)").expect("prepare");
        for (i, r) in rows.iter().enumerate() {
            let e = i as i64;
            pos.execute(rusqlite::params![e, r.pos[0] as f64, r.pos[1] as f64, r.pos[2] as f64]).expect("insert");
            vel.execute(rusqlite::params![e, r.vel[0] as f64, r.vel[1] as f64, r.vel[2] as f64]).expect("insert");
            health.execute(rusqlite::params![e, r.hp as f64, r.max as f64]).expect("insert");
            team.execute(rusqlite::params![e, TEAMS[r.team]]).expect("insert");
            level.execute(rusqlite::params![e, r.level]).expect("insert");
            if r.player {
                player.execute([e]).expect("insert");
            } else {
                monster.execute([e]).expect("insert");
            }
            if r.frozen {
                frozen.execute([e]).expect("insert");
            }
        }
    }
    tx.commit().expect("commit");
    conn
}

fn prepared(db: &mut Database, text: &str) -> Prepared {
    db.prepare(text).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn run_prepared(p: &mut Prepared, db: &Database) -> usize {
    p.query_each(db, Params::new(), |row| {
        black_box(row);
    })
    .expect("query runs")
}

fn run_resultset(p: &mut Prepared, db: &Database) -> usize {
    p.query(db, ()).expect("query runs").rows.len()
}

fn run_text(db: &Database, text: &str) -> usize {
    db.query(text, ()).expect("query runs").rows.len()
}

pub fn run(s: &mut Suite) {
    eprintln!("   building 1,000,000 entities (ecsdb and SQLite)…");
    let data = rows();
    let mut db = Database::from_world(build_world(&data));
    let conn = build_sqlite(&data);
    drop(data);
    let db = &mut db;
    let conn = &conn;

    check_answers(db, conn);

    s.workload("count_filter", |w| {
        let mut p = prepared(db, COUNT_FILTER);
        let mut typed: QueryState<(&Health, &Team)> = db.world_mut().query_state();
        let db: &Database = db;
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, db)));
        w.lib("ecsdb-text", iter(move || run_text(db, COUNT_FILTER)));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                let mut n = 0u64;
                typed.for_each(db.world(), |(h, t)| {
                    if h.hp < 50.0 && t.name == "red" {
                        n += 1;
                    }
                });
                vec![vec![Value::Int(n as i64)]]
            }),
        );
        let mut stmt = conn.prepare(SQL_COUNT_FILTER).expect("prepare");
        w.lib("sqlite", iter(move || stmt.query_row([], |r| r.get::<_, i64>(0)).expect("count")));
    });

    s.workload("project_filter", |w| {
        let mut p = prepared(db, PROJECT_FILTER);
        let mut p2 = prepared(db, PROJECT_FILTER);
        let mut typed: QueryState<(&Position, &Health)> = db.world_mut().query_state();
        let db: &Database = db;
        let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        w.lib(
            "ecsdb-prepared",
            iter(move || {
                let mut out: Vec<(f64, f64, f64)> = Vec::new();
                p.query_each(db, Params::new(), |r| out.push((f(&r[0]), f(&r[1]), f(&r[2])))).expect("query runs");
                out
            }),
        );
        w.lib("ecsdb-resultset", iter(move || run_resultset(&mut p2, db)));
        w.lib("ecsdb-text", iter(move || run_text(db, PROJECT_FILTER)));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                let mut out: Vec<(f32, f32, f32)> = Vec::new();
                typed.for_each(db.world(), |(p, h)| {
                    if h.hp < 1.0 {
                        out.push((p.x, p.y, h.hp));
                    }
                });
                out
            }),
        );
        let mut stmt = conn.prepare(SQL_PROJECT_FILTER).expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let rows = stmt
                    .query_map([], |r| Ok((r.get::<_, f64>(0)?, r.get::<_, f64>(1)?, r.get::<_, f64>(2)?)))
                    .expect("query");
                rows.collect::<Result<Vec<_>, _>>().expect("rows")
            }),
        );
    });

    s.workload("group_by", |w| {
        let mut p = prepared(db, GROUP_BY);
        let mut typed: QueryState<(&Team, &Health)> = db.world_mut().query_state();
        let db: &Database = db;
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, db)));
        w.lib("ecsdb-text", iter(move || run_text(db, GROUP_BY)));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                // A small list searched linearly: what one writes knowing there are few teams.
                let mut groups: Vec<(&str, f64, u64, f32)> = Vec::new();
                typed.for_each(db.world(), |(t, h)| {
                    let name = t.name.as_str();
                    match groups.iter_mut().find(|g| g.0 == name) {
                        Some(g) => {
                            g.1 += h.hp as f64;
                            g.2 += 1;
                            g.3 = g.3.max(h.hp);
                        }
                        None => groups.push((name, h.hp as f64, 1, h.hp)),
                    }
                });
                groups.iter().map(|g| (g.0.to_string(), g.1 / g.2 as f64, g.3)).collect::<Vec<_>>()
            }),
        );
        let mut stmt = conn.prepare(SQL_GROUP_BY).expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let rows = stmt
                    .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?, r.get::<_, f64>(2)?)))
                    .expect("query");
                rows.collect::<Result<Vec<_>, _>>().expect("rows")
            }),
        );
    });

    s.workload("top_k", |w| {
        let mut p = prepared(db, TOP_K);
        let mut typed: QueryState<(Entity, &Health)> = db.world_mut().query_state();
        let db: &Database = db;
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, db)));
        w.lib("ecsdb-text", iter(move || run_text(db, TOP_K)));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                // The 10 largest hp, ties by ascending entity: a min-heap of the best 10.
                let mut heap: BinaryHeap<Reverse<(OrdF32, Reverse<Entity>)>> = BinaryHeap::with_capacity(11);
                typed.for_each(db.world(), |(e, h)| {
                    let item = Reverse((OrdF32(h.hp), Reverse(e)));
                    if heap.len() < 10 {
                        heap.push(item);
                    } else {
                        if let Some(mut top) = heap.peek_mut()
                            && item < *top
                        {
                            *top = item;
                        }
                    }
                });
                let mut v: Vec<(Entity, f32)> = heap.into_iter().map(|Reverse((h, Reverse(e)))| (e, h.0)).collect();
                v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                v
            }),
        );
        let mut stmt = conn.prepare(SQL_TOP_K).expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))).expect("query");
                rows.collect::<Result<Vec<_>, _>>().expect("rows")
            }),
        );
    });

    s.workload("parse_plan", |w| {
        let db2: &mut Database = db;
        w.lib("ecsdb-text", iter(move || db2.prepare(COUNT_FILTER).expect("prepares")));
        w.lib("sqlite", iter(move || conn.prepare(SQL_COUNT_FILTER).expect("prepares").column_count()));
    });

    s.workload("parse_plan_cached", |w| {
        let db2: &Database = db;
        w.lib("ecsdb-text", iter(move || db2.prepare_cached(COUNT_FILTER).expect("prepares")));
        w.lib("sqlite", iter(move || conn.prepare_cached(SQL_COUNT_FILTER).expect("prepares").column_count()));
    });

    s.note(format!("count_filter: `{COUNT_FILTER}`"));
    s.note(format!(
        "project_filter: `{PROJECT_FILTER}` (about 10,000 rows, read into a Vec of 3-tuples by \
         ecsdb-prepared (query_each), ecsdb-typed and sqlite; ecsdb-resultset builds a ResultSet, \
         one Vec<Value> per row)"
    ));
    s.note(format!("group_by: `{GROUP_BY}`"));
    s.note(format!("top_k: `{TOP_K}`"));
    s.note("parse_plan: parse + bind + plan of count_filter's text (SQLite: prepare of its SQL)");
    s.note(
        "parse_plan_cached: the same through the statement cache (ecsdb: `Database::prepare_cached`, a copy \
         of the kept plan; SQLite: rusqlite's `prepare_cached`, its LRU cache of statements)",
    );
    s.note("ecsdb-typed: a hand-written loop over a prepared typed QueryState; sqlite: in memory, one table per component, no secondary indexes");
}

/// f32 ordered by `total_cmp` (hp values are never NaN).
#[derive(Clone, Copy, PartialEq)]
struct OrdF32(f32);
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The answers agree before anything is timed.
fn check_answers(db: &Database, conn: &Connection) {
    let count = db.query(COUNT_FILTER, ()).expect("count_filter runs").rows[0][0].clone();
    let sql: i64 = conn.query_row(SQL_COUNT_FILTER, [], |r| r.get(0)).expect("sqlite count");
    assert_eq!(count, Value::Int(sql), "count_filter answers differ");
    let top = db.query(TOP_K, ()).expect("top_k runs");
    let mut stmt = conn.prepare(SQL_TOP_K).expect("prepare");
    let sql_top: Vec<i64> = stmt.query_map([], |r| r.get(0)).expect("query").map(|r| r.expect("row")).collect();
    let ours: Vec<i64> = top
        .rows
        .iter()
        .map(|r| match r[0] {
            Value::Entity(e) => e.index() as i64,
            _ => -1,
        })
        .collect();
    assert_eq!(ours, sql_top, "top_k answers differ");
    let groups = db.query(GROUP_BY, ()).expect("group_by runs");
    assert_eq!(groups.len(), 4);
    let proj = db.query(PROJECT_FILTER, ()).expect("project_filter runs");
    let n: i64 = conn.query_row("SELECT count(*) FROM health WHERE hp < 1", [], |r| r.get(0)).expect("sqlite count");
    assert_eq!(proj.len() as i64, n, "project_filter answers differ");
    black_box(());
}
