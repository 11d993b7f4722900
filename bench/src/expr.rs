//! Expressions and writes beyond `field op constant`: text statements against a hand-written
//! typed loop (or, for writes, a typed system) and SQLite, on the query suite's world of
//! 1,000,000 entities plus a `Name` component.
//!
//! The world: every entity has Position and Velocity (x, y, z: f32), Health (hp, max: f32),
//! Team (name: one of 4 strings), Level (value: i32) and Name (value: 2–7 letters); half are
//! Player and half Monster (tags), one in ten is Frozen ([`crate::data::game_world`]).
//!
//! Libraries:
//! - `ecsdb-prepared`: the statement prepared once (`db.prepare`), run with
//!   `Prepared::query_each` (reads) or `Prepared::execute` (writes);
//! - `ecsdb-script` (`spawn_script` only): `Database::execute_script` of the whole script text;
//! - `ecsdb-typed`: a hand-written loop over a typed `QueryState` built once; for ADD, REMOVE
//!   and DESPAWN the typed system collects its targets and then calls `World::insert`,
//!   `World::remove` or `World::despawn` for each; for SPAWN, `World::spawn` per entity;
//! - `sqlite`: rusqlite (bundled) in memory, one table per component keyed by entity, the same
//!   joins, cached prepared statements, no secondary indexes.
//!
//! Writes are measured on the same state every iteration: `add_tag` starts with no entity of
//! hp < 20 frozen and `remove_tag` with all of them frozen (the opposite statement runs
//! untimed between iterations); `despawn_where` rebuilds the world (SQLite: rolls the
//! transaction back) between iterations; `spawn_script` starts from an empty database.
//! `update_move` and `update_clamp` write every selected row whatever its value, so they run
//! again and again on the same world (their values drift, the work does not).

use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::hint::black_box;

use ecsdb::query::{Database, Params, Prepared};
use ecsdb::{Component, Entity, QueryState, Value, With, Without, World};

use rusqlite::Connection;

use crate::data::typed::{Health, Position, Velocity};
use crate::data::{Row, TEAMS, entity_name, game_world};
use crate::harness::{Suite, batched, iter, reset_each};

const N: usize = 1_000_000;
/// Statements in the `spawn_script` script.
const SPAWNS: usize = 100_000;

#[derive(Component, Clone)]
struct Team {
    name: String,
}

#[derive(Component, Clone, Copy)]
struct Level {
    value: i32,
}

#[derive(Component, Clone)]
struct Name {
    value: String,
}

#[derive(Component)]
struct Player;
#[derive(Component)]
struct Monster;
#[derive(Component)]
struct Frozen;

const TWO_FIELDS: &str = "SELECT count(*) WHERE Health.hp < Health.max / 2";
const ARITH: &str = "SELECT count(*) WHERE Position.x + Velocity.x > 0";
const WITHIN: &str = "SELECT count(*) WHERE within(Position, [0, 0, 0], 200)";
const DISTANCE_TOPK: &str = "SELECT entity ORDER BY distance(Position, [10, 20, 0]) LIMIT 10";
const LIKE_PREFIX: &str = "SELECT count(*) WHERE Name.value LIKE 'zi%'";
const IN_LIST: &str = "SELECT count(*) WHERE Level.value IN (3, 5, 7, 11, 13)";
const GROUP_EXPR: &str = "SELECT Team.name, avg(Health.hp / Health.max) GROUP BY Team.name";
const UPDATE_MOVE: &str =
    "UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y FROM Position, Velocity, !Frozen";
const UPDATE_CLAMP: &str = "UPDATE Health SET hp = min(Health.max, Health.hp + 5)";
const ADD_TAG: &str = "ADD Frozen WHERE Health.hp < 20";
const REMOVE_TAG: &str = "REMOVE Frozen WHERE Health.hp < 20";
const DESPAWN_WHERE: &str = "DESPAWN WHERE Health.hp < 2";

const SQL_TWO_FIELDS: &str = "SELECT count(*) FROM health WHERE hp < max / 2";
const SQL_ARITH: &str = "SELECT count(*) FROM position p JOIN velocity v ON v.entity = p.entity WHERE p.x + v.x > 0";
const SQL_WITHIN: &str = "SELECT count(*) FROM position WHERE x * x + y * y + z * z <= 200.0 * 200.0";
const SQL_DISTANCE_TOPK: &str = "SELECT entity FROM position \
     ORDER BY (x - 10) * (x - 10) + (y - 20) * (y - 20) + z * z, entity LIMIT 10";
const SQL_LIKE_PREFIX: &str = "SELECT count(*) FROM name WHERE value LIKE 'zi%'";
const SQL_IN_LIST: &str = "SELECT count(*) FROM level WHERE value IN (3, 5, 7, 11, 13)";
const SQL_GROUP_EXPR: &str =
    "SELECT t.name, avg(h.hp / h.max) FROM team t JOIN health h ON h.entity = t.entity GROUP BY t.name";
const SQL_UPDATE_MOVE: &str = "UPDATE position SET x = position.x + v.x, y = position.y + v.y FROM velocity v \
     WHERE v.entity = position.entity AND position.entity NOT IN (SELECT entity FROM frozen)";
const SQL_UPDATE_CLAMP: &str = "UPDATE health SET hp = min(max, hp + 5)";
const SQL_ADD_TAG: &str = "INSERT OR REPLACE INTO frozen SELECT entity FROM health WHERE hp < 20";
const SQL_REMOVE_TAG: &str = "DELETE FROM frozen WHERE entity IN (SELECT entity FROM health WHERE hp < 20)";
/// Run inside a transaction that is rolled back (untimed) after each iteration.
const SQL_DESPAWN_WHERE: &str = "DELETE FROM doomed;
     INSERT INTO doomed SELECT entity FROM health WHERE hp < 2;
     DELETE FROM position WHERE entity IN doomed;
     DELETE FROM velocity WHERE entity IN doomed;
     DELETE FROM health WHERE entity IN doomed;
     DELETE FROM team WHERE entity IN doomed;
     DELETE FROM level WHERE entity IN doomed;
     DELETE FROM name WHERE entity IN doomed;
     DELETE FROM player WHERE entity IN doomed;
     DELETE FROM monster WHERE entity IN doomed;
     DELETE FROM frozen WHERE entity IN doomed;";

const SQL_SCHEMA: &str = "CREATE TABLE position (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
     CREATE TABLE velocity (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
     CREATE TABLE health (entity INTEGER PRIMARY KEY, hp REAL, max REAL);
     CREATE TABLE team (entity INTEGER PRIMARY KEY, name TEXT);
     CREATE TABLE level (entity INTEGER PRIMARY KEY, value INTEGER);
     CREATE TABLE name (entity INTEGER PRIMARY KEY, value TEXT);
     CREATE TABLE player (entity INTEGER PRIMARY KEY);
     CREATE TABLE monster (entity INTEGER PRIMARY KEY);
     CREATE TABLE frozen (entity INTEGER PRIMARY KEY);
     CREATE TEMP TABLE doomed (entity INTEGER PRIMARY KEY);";

/// Spawns row `i` with typed components (what a Rust program would write).
fn spawn_row(world: &mut World, i: usize, r: &Row) -> Entity {
    let p = Position { x: r.pos[0], y: r.pos[1], z: r.pos[2] };
    let v = Velocity { x: r.vel[0], y: r.vel[1], z: r.vel[2] };
    let h = Health { hp: r.hp, max: r.max };
    let t = Team { name: TEAMS[r.team].to_string() };
    let l = Level { value: r.level };
    let n = Name { value: entity_name(i) };
    let e = if r.player { world.spawn((p, v, h, t, l, n, Player)) } else { world.spawn((p, v, h, t, l, n, Monster)) };
    if r.frozen {
        world.insert(e, Frozen).expect("just spawned");
    }
    e
}

fn build_world(rows: &[Row]) -> World {
    let mut world = World::new();
    for (i, r) in rows.iter().enumerate() {
        spawn_row(&mut world, i, r);
    }
    world
}

/// A world with every component registered and no entity (for SPAWN text).
fn empty_database() -> Database {
    let mut world = World::new();
    world.register::<Position>().expect("register");
    world.register::<Velocity>().expect("register");
    world.register::<Health>().expect("register");
    world.register::<Team>().expect("register");
    world.register::<Level>().expect("register");
    world.register::<Name>().expect("register");
    world.register::<Player>().expect("register");
    world.register::<Monster>().expect("register");
    world.register::<Frozen>().expect("register");
    Database::from_world(world)
}

fn empty_sqlite() -> Connection {
    let conn = Connection::open_in_memory().expect("sqlite in memory");
    conn.execute_batch(SQL_SCHEMA).expect("schema");
    conn
}

fn build_sqlite(rows: &[Row]) -> Connection {
    let mut conn = empty_sqlite();
    let tx = conn.transaction().expect("transaction");
    {
        let mut pos = tx.prepare("INSERT INTO position VALUES (?1, ?2, ?3, ?4)").expect("prepare");
        let mut vel = tx.prepare("INSERT INTO velocity VALUES (?1, ?2, ?3, ?4)").expect("prepare");
        let mut health = tx.prepare("INSERT INTO health VALUES (?1, ?2, ?3)").expect("prepare");
        let mut team = tx.prepare("INSERT INTO team VALUES (?1, ?2)").expect("prepare");
        let mut level = tx.prepare("INSERT INTO level VALUES (?1, ?2)").expect("prepare");
        let mut name = tx.prepare("INSERT INTO name VALUES (?1, ?2)").expect("prepare");
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
            name.execute(rusqlite::params![e, entity_name(i)]).expect("insert");
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

/// The `spawn_script` script: one SPAWN per row, the same components as the world's.
fn spawn_script(rows: &[Row]) -> String {
    let mut s = String::with_capacity(rows.len() * 220);
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "SPAWN Position {{x: {}, y: {}, z: {}}}, Velocity {{x: {}, y: {}, z: {}}}, Health {{hp: {}, max: {}}}, \
             Team {{name: '{}'}}, Level {{value: {}}}, Name {{value: '{}'}}, {}{};",
            r.pos[0],
            r.pos[1],
            r.pos[2],
            r.vel[0],
            r.vel[1],
            r.vel[2],
            r.hp,
            r.max,
            TEAMS[r.team],
            r.level,
            entity_name(i),
            if r.player { "Player" } else { "Monster" },
            if r.frozen { ", Frozen" } else { "" },
        );
    }
    s
}

/// The same entities as SQL text, in one transaction.
/// The SPAWN script's SQL, one entity's INSERTs per piece, between BEGIN and COMMIT. Run
/// piece by piece: SQLite copies the rest of a script it is handed without a terminating NUL
/// before preparing each statement (rusqlite's `execute_batch`), which is quadratic in one
/// 30 MB string.
fn sql_spawn_script(rows: &[Row]) -> Vec<String> {
    let mut pieces = Vec::with_capacity(rows.len() + 2);
    pieces.push("BEGIN;".to_string());
    for (i, r) in rows.iter().enumerate() {
        let mut s = String::with_capacity(400);
        let _ = write!(
            s,
            "INSERT INTO position VALUES ({i}, {}, {}, {}); INSERT INTO velocity VALUES ({i}, {}, {}, {}); \
             INSERT INTO health VALUES ({i}, {}, {}); INSERT INTO team VALUES ({i}, '{}'); \
             INSERT INTO level VALUES ({i}, {}); INSERT INTO name VALUES ({i}, '{}'); INSERT INTO {} VALUES ({i});",
            r.pos[0],
            r.pos[1],
            r.pos[2],
            r.vel[0],
            r.vel[1],
            r.vel[2],
            r.hp,
            r.max,
            TEAMS[r.team],
            r.level,
            entity_name(i),
            if r.player { "player" } else { "monster" },
        );
        if r.frozen {
            let _ = write!(s, " INSERT INTO frozen VALUES ({i});");
        }
        pieces.push(s);
    }
    pieces.push("COMMIT;".to_string());
    pieces
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

fn execute(p: &mut Prepared, db: &mut Database) -> usize {
    p.execute(db, ()).expect("statement runs").rows.len()
}

fn run_text(db: &RefCell<Database>, text: &str) {
    db.borrow_mut().execute(text, ()).unwrap_or_else(|e| panic!("{}", e.render(text)));
}

fn sql_exec(conn: &Connection, sql: &str) -> usize {
    conn.prepare_cached(sql).expect("prepare").execute([]).expect("runs")
}

/// A typed system that changes the world and says how many entities it changed.
type TypedWrite = fn(&mut World) -> usize;

/// `ADD Frozen WHERE Health.hp < 20` as a typed system: targets first, then one insert each.
fn typed_add(world: &mut World) -> usize {
    let mut targets = Vec::new();
    for (e, h) in world.query_filtered::<(Entity, &Health), Without<Frozen>>() {
        if h.hp < 20.0 {
            targets.push(e);
        }
    }
    for &e in &targets {
        world.insert(e, Frozen).expect("live entity");
    }
    targets.len()
}

/// `REMOVE Frozen WHERE Health.hp < 20` as a typed system.
fn typed_remove(world: &mut World) -> usize {
    let mut targets = Vec::new();
    for (e, h) in world.query_filtered::<(Entity, &Health), With<Frozen>>() {
        if h.hp < 20.0 {
            targets.push(e);
        }
    }
    for &e in &targets {
        world.remove::<Frozen>(e).expect("has it");
    }
    targets.len()
}

fn sql_count(conn: &Connection, sql: &str) -> i64 {
    conn.prepare_cached(sql).expect("prepare").query_row([], |r| r.get(0)).expect("count")
}

/// A count-returning read workload: the statement, its typed loop and its SQL.
fn count_workload<'a>(
    s: &mut Suite,
    name: &str,
    db: &'a RefCell<Database>,
    conn: &'a Connection,
    text: &str,
    sql: &'static str,
    typed: impl FnMut(&World) -> u64 + 'a,
) {
    let mut typed = typed;
    s.workload(name, |w| {
        let mut p = prepared(&mut db.borrow_mut(), text);
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, &db.borrow())));
        w.lib("ecsdb-typed", iter(move || typed(db.borrow().world())));
        w.lib("sqlite", iter(move || sql_count(conn, sql)));
    });
}

pub fn run(s: &mut Suite) {
    eprintln!("   building 1,000,000 entities (ecsdb and SQLite)…");
    let data = game_world(N);
    let db = &RefCell::new(Database::from_world(build_world(&data)));
    let conn = &build_sqlite(&data);
    let data = &data;

    check_answers(&db.borrow(), conn);

    let mut q_health: QueryState<&Health> = db.borrow_mut().world_mut().query_state();
    count_workload(s, "two_fields", db, conn, TWO_FIELDS, SQL_TWO_FIELDS, move |world| {
        let mut n = 0;
        q_health.for_each(world, |h| n += u64::from(h.hp < h.max / 2.0));
        n
    });
    let mut q_pv: QueryState<(&Position, &Velocity)> = db.borrow_mut().world_mut().query_state();
    count_workload(s, "arith", db, conn, ARITH, SQL_ARITH, move |world| {
        let mut n = 0;
        q_pv.for_each(world, |(p, v)| n += u64::from(p.x + v.x > 0.0));
        n
    });
    let mut q_pos: QueryState<&Position> = db.borrow_mut().world_mut().query_state();
    count_workload(s, "within", db, conn, WITHIN, SQL_WITHIN, move |world| {
        let mut n = 0;
        q_pos.for_each(world, |p| {
            let (x, y, z) = (p.x as f64, p.y as f64, p.z as f64);
            n += u64::from((x * x + y * y + z * z).sqrt() <= 200.0);
        });
        n
    });

    s.workload("distance_topk", |w| {
        let mut p = prepared(&mut db.borrow_mut(), DISTANCE_TOPK);
        let mut typed: QueryState<(Entity, &Position)> = db.borrow_mut().world_mut().query_state();
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, &db.borrow())));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                // The 10 nearest, ties by ascending entity: a max-heap of the best 10.
                let mut heap: BinaryHeap<(OrdF64, Entity)> = BinaryHeap::with_capacity(11);
                typed.for_each(db.borrow().world(), |(e, p)| {
                    let (dx, dy, dz) = (p.x as f64 - 10.0, p.y as f64 - 20.0, p.z as f64);
                    let item = (OrdF64((dx * dx + dy * dy + dz * dz).sqrt()), e);
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
                heap.into_sorted_vec().into_iter().map(|(_, e)| e).collect::<Vec<_>>()
            }),
        );
        let mut stmt = conn.prepare(SQL_DISTANCE_TOPK).expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let rows = stmt.query_map([], |r| r.get::<_, i64>(0)).expect("query");
                rows.collect::<Result<Vec<_>, _>>().expect("rows")
            }),
        );
    });

    let mut q_name: QueryState<&Name> = db.borrow_mut().world_mut().query_state();
    count_workload(s, "like_prefix", db, conn, LIKE_PREFIX, SQL_LIKE_PREFIX, move |world| {
        let mut n = 0;
        q_name.for_each(world, |nm| n += u64::from(nm.value.starts_with("zi")));
        n
    });
    let mut q_level: QueryState<&Level> = db.borrow_mut().world_mut().query_state();
    count_workload(s, "in_list", db, conn, IN_LIST, SQL_IN_LIST, move |world| {
        let mut n = 0;
        q_level.for_each(world, |l| n += u64::from(matches!(l.value, 3 | 5 | 7 | 11 | 13)));
        n
    });

    s.workload("group_expr", |w| {
        let mut p = prepared(&mut db.borrow_mut(), GROUP_EXPR);
        let mut typed: QueryState<(&Team, &Health)> = db.borrow_mut().world_mut().query_state();
        w.lib("ecsdb-prepared", iter(move || run_prepared(&mut p, &db.borrow())));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                let db = db.borrow();
                // A small list searched linearly: what one writes knowing there are few teams.
                let mut groups: Vec<(&str, f64, u64)> = Vec::new();
                typed.for_each(db.world(), |(t, h)| {
                    let ratio = h.hp as f64 / h.max as f64;
                    match groups.iter_mut().find(|g| g.0 == t.name) {
                        Some(g) => {
                            g.1 += ratio;
                            g.2 += 1;
                        }
                        None => groups.push((t.name.as_str(), ratio, 1)),
                    }
                });
                let mut out: Vec<(String, f64)> = groups.iter().map(|g| (g.0.to_string(), g.1 / g.2 as f64)).collect();
                out.sort_by(|a, b| a.0.cmp(&b.0));
                out
            }),
        );
        let mut stmt = conn.prepare(SQL_GROUP_EXPR).expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))).expect("query");
                rows.collect::<Result<Vec<_>, _>>().expect("rows")
            }),
        );
    });

    // ----- writes --------------------------------------------------------------------------

    s.workload("update_move", |w| {
        let mut p = prepared(&mut db.borrow_mut(), UPDATE_MOVE);
        let mut typed: QueryState<(&mut Position, &Velocity), Without<Frozen>> =
            db.borrow_mut().world_mut().query_state();
        w.lib("ecsdb-prepared", iter(move || execute(&mut p, &mut db.borrow_mut())));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                typed.for_each_mut(db.borrow_mut().world_mut(), |(mut p, v)| {
                    p.x += v.x;
                    p.y += v.y;
                })
            }),
        );
        w.lib(
            "sqlite",
            iter(move || conn.prepare_cached(SQL_UPDATE_MOVE).expect("prepare").execute([]).expect("update")),
        );
    });

    // ADD and REMOVE undo each other: each runs untimed before the other is timed.
    for (name, text, undo, sql, sql_undo, typed, typed_undo) in [
        (
            "add_tag",
            ADD_TAG,
            REMOVE_TAG,
            SQL_ADD_TAG,
            SQL_REMOVE_TAG,
            typed_add as TypedWrite,
            typed_remove as TypedWrite,
        ),
        (
            "remove_tag",
            REMOVE_TAG,
            ADD_TAG,
            SQL_REMOVE_TAG,
            SQL_ADD_TAG,
            typed_remove as TypedWrite,
            typed_add as TypedWrite,
        ),
    ] {
        s.workload(name, |w| {
            let mut p = prepared(&mut db.borrow_mut(), text);
            w.lib(
                "ecsdb-prepared",
                reset_each(move || run_text(db, undo), move || execute(&mut p, &mut db.borrow_mut())),
            );
            w.lib(
                "ecsdb-typed",
                reset_each(
                    move || {
                        typed_undo(db.borrow_mut().world_mut());
                    },
                    move || typed(db.borrow_mut().world_mut()),
                ),
            );
            w.lib(
                "sqlite",
                reset_each(
                    move || {
                        sql_exec(conn, sql_undo);
                    },
                    move || sql_exec(conn, sql),
                ),
            );
        });
    }

    // The world is rebuilt (untimed) before every iteration; the statement is prepared
    // against each new world, also untimed.
    let fresh: &RefCell<Option<(Database, Prepared)>> = &RefCell::new(None);
    let typed_world: &RefCell<Option<World>> = &RefCell::new(None);
    s.workload("despawn_where", |w| {
        w.lib(
            "ecsdb-prepared",
            reset_each(
                move || {
                    fresh.borrow_mut().take();
                    let mut db = Database::from_world(build_world(data));
                    let p = prepared(&mut db, DESPAWN_WHERE);
                    *fresh.borrow_mut() = Some((db, p));
                },
                move || {
                    let mut f = fresh.borrow_mut();
                    let (db, p) = f.as_mut().expect("reset ran");
                    execute(p, db)
                },
            ),
        );
        w.lib(
            "ecsdb-typed",
            reset_each(
                move || {
                    typed_world.borrow_mut().take();
                    *typed_world.borrow_mut() = Some(build_world(data));
                },
                move || {
                    let mut tw = typed_world.borrow_mut();
                    let world = tw.as_mut().expect("reset ran");
                    let mut targets = Vec::new();
                    for (e, h) in world.query::<(Entity, &Health)>() {
                        if h.hp < 2.0 {
                            targets.push(e);
                        }
                    }
                    for &e in &targets {
                        world.despawn(e).expect("live entity");
                    }
                    targets.len()
                },
            ),
        );
        w.lib(
            "sqlite",
            reset_each(
                move || {
                    if !conn.is_autocommit() {
                        conn.execute_batch("ROLLBACK").expect("rollback");
                    }
                },
                move || conn.execute_batch(&format!("BEGIN; {SQL_DESPAWN_WHERE}")).expect("despawn"),
            ),
        );
    });
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK").expect("rollback");
    }
    fresh.borrow_mut().take();
    typed_world.borrow_mut().take();

    s.workload("update_clamp", |w| {
        let mut p = prepared(&mut db.borrow_mut(), UPDATE_CLAMP);
        let mut typed: QueryState<&mut Health> = db.borrow_mut().world_mut().query_state();
        w.lib("ecsdb-prepared", iter(move || execute(&mut p, &mut db.borrow_mut())));
        w.lib(
            "ecsdb-typed",
            iter(move || {
                typed.for_each_mut(db.borrow_mut().world_mut(), |mut h| {
                    h.hp = h.max.min(h.hp + 5.0);
                })
            }),
        );
        w.lib("sqlite", iter(move || sql_exec(conn, SQL_UPDATE_CLAMP)));
    });

    // The script-loading workloads: a bulk load of 100,000 SPAWNs, and one of 20,000 (the size
    // the one-front-end issue measured parsing at).
    for (name, n) in [("spawn_script", SPAWNS), ("spawn_script_20k", 20_000)] {
        let rows = &data[..n];
        let script = &spawn_script(rows);
        let sql_script = &sql_spawn_script(rows);
        s.workload(name, |w| {
            w.lib(
                "ecsdb-script",
                batched(empty_database, move |mut db| {
                    let results = db.execute_script(script).unwrap_or_else(|e| panic!("{}", e.render(script)));
                    (db, results)
                }),
            );
            w.lib(
                "ecsdb-typed",
                batched(
                    || empty_database().into_world(),
                    move |mut world| {
                        for (i, r) in rows.iter().enumerate() {
                            spawn_row(&mut world, i, r);
                        }
                        world
                    },
                ),
            );
            w.lib(
                "sqlite",
                batched(empty_sqlite, move |conn| {
                    for piece in sql_script {
                        conn.execute_batch(piece).expect("script");
                    }
                    conn
                }),
            );
        });
    }

    s.note(format!("two_fields: `{TWO_FIELDS}`"));
    s.note(format!("arith: `{ARITH}`"));
    s.note(format!("within: `{WITHIN}`"));
    s.note(format!("distance_topk: `{DISTANCE_TOPK}` (no index)"));
    s.note(format!("like_prefix: `{LIKE_PREFIX}`"));
    s.note(format!("in_list: `{IN_LIST}`"));
    s.note(format!("group_expr: `{GROUP_EXPR}`"));
    s.note(format!("update_move: `{UPDATE_MOVE}`"));
    s.note(format!("add_tag / remove_tag: `{ADD_TAG}` / `{REMOVE_TAG}` (about 200,000 rows move; the other statement runs untimed before each iteration)"));
    s.note(format!("despawn_where: `{DESPAWN_WHERE}` (about 20,000 entities; world rebuilt untimed between iterations, SQLite: one transaction rolled back untimed)"));
    s.note(format!("update_clamp: `{UPDATE_CLAMP}`"));
    s.note(format!(
        "spawn_script (spawn_script_20k): {SPAWNS} (20,000) SPAWN statements (the world's rows: 6 components and 1–2 tags each) through \
         `Database::execute_script` into an empty database (ecsdb-script); ecsdb-typed: `World::spawn` (+ `insert` \
         of Frozen) per entity; sqlite: the same rows as INSERTs in one transaction, one `execute_batch` per entity"
    ));
    s.note("ecsdb-typed: a hand-written loop over a typed QueryState (writes: a typed system collecting targets, then one World call per target); sqlite: in memory, one table per component, no secondary indexes");
}

/// f64 ordered by `total_cmp` (distances are never NaN here).
#[derive(Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The read answers agree with SQLite before anything is timed.
fn check_answers(db: &Database, conn: &Connection) {
    for (text, sql) in [
        (TWO_FIELDS, SQL_TWO_FIELDS),
        (ARITH, SQL_ARITH),
        (WITHIN, SQL_WITHIN),
        (LIKE_PREFIX, SQL_LIKE_PREFIX),
        (IN_LIST, SQL_IN_LIST),
    ] {
        let ours = db.query(text, ()).unwrap_or_else(|e| panic!("{}", e.render(text))).rows[0][0].clone();
        assert_eq!(ours, Value::Int(sql_count(conn, sql)), "answers differ: {text}");
    }
    let top = db.query(DISTANCE_TOPK, ()).expect("distance_topk runs");
    let ours: Vec<i64> = top
        .rows
        .iter()
        .map(|r| match r[0] {
            Value::Entity(e) => e.index() as i64,
            _ => -1,
        })
        .collect();
    let mut stmt = conn.prepare(SQL_DISTANCE_TOPK).expect("prepare");
    let sql: Vec<i64> = stmt.query_map([], |r| r.get(0)).expect("query").map(|r| r.expect("row")).collect();
    assert_eq!(ours, sql, "distance_topk answers differ");
    let groups = db.query(GROUP_EXPR, ()).expect("group_expr runs");
    assert_eq!(groups.len(), 4, "group_expr: four teams");
}
