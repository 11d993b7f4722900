//! References and hierarchies on a 1,000,000-entity forest: 100 trees of 10,000 nodes, each
//! a complete 10-ary tree filled level by level (so a node of level 1 has 10 children and
//! 1,110 descendants). Every node has `Name { value }` and `Health { hp }`; all but the roots
//! have `ChildOf { parent entity REFERENCES ON DELETE CASCADE ACYCLIC }`, with a `relation`
//! index on `ChildOf.parent`; every tenth node has the tag `Probe` (100,000 rows).
//!
//! SQLite holds the same forest in memory as `node(id INTEGER PRIMARY KEY, parent, name, hp,
//! probe)` with an index on `parent`.
//!
//! - `children`: `SELECT count(*) WHERE ChildOf.parent = $1`, a node of level 1 (10
//!   children; 100 such nodes taken in turn), prepared. SQLite: `SELECT count(*) FROM node
//!   WHERE parent = ?1`. Both run as a prepared statement is run in a loop: the parameter
//!   rebound in place and the row read where it is (ecsdb's `query_each`, rusqlite's
//!   `query_row`).
//! - `subtree`: `SELECT count(*) WHERE descendant_of(ChildOf.parent, $1)` over the same
//!   nodes (1,110 descendants each), prepared. SQLite: a recursive CTE down the `parent`
//!   index.
//! - `cascade`: `DESPAWN` of the root of a fresh 10,000-node tree (spawned before each run,
//!   with its index upkeep, not timed) in the 1M world: CASCADE despawns all of it.
//! - `path_read`: `SELECT ChildOf.parent.Name.value FROM ChildOf, Probe` (100,000 rows, each
//!   reading its parent's name through the reference), prepared, rows visited in place.
//!   `ecsdb-plain`: `SELECT Name.value FROM Name, Probe`, the same rows reading their own
//!   name. SQLite: the self-join `SELECT p.name FROM node c JOIN node p ON p.id = c.parent
//!   WHERE c.probe = 1`.

use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;

use ecsdb::query::{Database, Params, Prepared};
use ecsdb::{Entity, Value};
use rusqlite::Connection;

use crate::harness::{Suite, iter, reset_each};

const TREES: usize = 100;
const TREE: usize = 10_000;
const ARITY: usize = 10;

const SCHEMA: &str = "CREATE COMPONENT Name (value string);
     CREATE COMPONENT Health (hp f32);
     CREATE COMPONENT Probe ();
     CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC);
     CREATE INDEX ON ChildOf (parent) USING relation";

/// Spawns one tree; returns its nodes in level order (the root first).
fn spawn_tree(db: &mut Database, first: usize) -> Vec<Entity> {
    let w = db.world_mut();
    let mut nodes: Vec<Entity> = Vec::with_capacity(TREE);
    for k in 0..TREE {
        let i = first + k;
        let name = [("value", Value::Str(format!("n{i}")))];
        let health = [("hp", Value::Float((i % 100) as f64))];
        let parent = (k > 0).then(|| [("parent", Value::Entity(nodes[(k - 1) / ARITY]))]);
        let mut comps: Vec<(&str, &[(&str, Value)])> = vec![("Name", &name[..]), ("Health", &health[..])];
        if let Some(p) = &parent {
            comps.push(("ChildOf", &p[..]));
        }
        if i.is_multiple_of(10) {
            comps.push(("Probe", &[]));
        }
        nodes.push(w.spawn_values(&comps).expect("a node spawns"));
    }
    nodes
}

fn sqlite_forest() -> Connection {
    let conn = Connection::open_in_memory().expect("SQLite opens in memory");
    conn.execute_batch(
        "CREATE TABLE node (id INTEGER PRIMARY KEY, parent INTEGER, name TEXT NOT NULL, hp REAL NOT NULL, \
         probe INTEGER NOT NULL);",
    )
    .expect("schema");
    let tx = conn.unchecked_transaction().expect("transaction");
    {
        let mut ins = tx.prepare("INSERT INTO node VALUES (?1, ?2, ?3, ?4, ?5)").expect("insert");
        for t in 0..TREES {
            for k in 0..TREE {
                let i = t * TREE + k;
                let parent = (k > 0).then(|| (t * TREE + (k - 1) / ARITY) as i64);
                ins.execute(rusqlite::params![
                    i as i64,
                    parent,
                    format!("n{i}"),
                    (i % 100) as f64,
                    i.is_multiple_of(10) as i64
                ])
                .expect("row");
            }
        }
    }
    tx.commit().expect("commit");
    conn.execute_batch("CREATE INDEX node_parent ON node(parent);").expect("index");
    conn
}

fn prepared(db: &mut Database, text: &str) -> Prepared {
    db.prepare(text).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

/// Runs a prepared `count(*)` with `$1 = e`, as SQLite's side runs its statement: the one
/// parameter rebound in place and the one row read where it is (`query_each`, like
/// rusqlite's `query_row`), with no result set built.
fn count(p: &mut Prepared, db: &Database, params: &mut Params, e: Entity) -> i64 {
    params.positional_mut()[0] = Value::Entity(e);
    let mut n = None;
    p.query_each(db, &*params, |row| n = Some(row[0].clone())).expect("query runs");
    match n {
        Some(Value::Int(n)) => n,
        other => panic!("count(*) gave {other:?}"),
    }
}

pub fn run(s: &mut Suite) {
    eprintln!("   building a 1,000,000-node forest (ecsdb and SQLite)…");
    let mut db = Database::new();
    db.execute_script(SCHEMA).expect("schema");
    let mut level1: Vec<(Entity, i64)> = Vec::new();
    for t in 0..TREES {
        let nodes = spawn_tree(&mut db, t * TREE);
        level1.extend((1..=ARITY).map(|k| (nodes[k], (t * TREE + k) as i64)));
    }
    let conn = sqlite_forest();

    let mut children = prepared(&mut db, "SELECT count(*) WHERE ChildOf.parent = $1");
    let mut subtree = prepared(&mut db, "SELECT count(*) WHERE descendant_of(ChildOf.parent, $1)");
    let children_sql = "SELECT count(*) FROM node WHERE parent = ?1";
    let subtree_sql = "WITH RECURSIVE sub(id) AS (SELECT id FROM node WHERE parent = ?1 \
                       UNION ALL SELECT n.id FROM node n JOIN sub ON n.parent = sub.id) SELECT count(*) FROM sub";
    {
        let (e, id) = level1[0];
        let sql = |q: &str| conn.query_row(q, [id], |r| r.get::<_, i64>(0)).expect("sqlite");
        let mut params = Params::positional([Value::Null]);
        assert_eq!(count(&mut children, &db, &mut params, e), 10);
        assert_eq!(sql(children_sql), 10);
        let d = count(&mut subtree, &db, &mut params, e);
        assert_eq!(d, sql(subtree_sql), "descendants agree");
        s.note(format!("a level-1 node has 10 children and {d} descendants"));
    }

    for (name, mut ecsdb, sql) in [("children", children, children_sql), ("subtree", subtree, subtree_sql)] {
        let (db, level1, conn) = (&db, &level1, &conn);
        s.workload(name, |w| {
            // Each run asks about the next level-1 node, in turn.
            let mut i = 0;
            let mut params = Params::positional([Value::Null]);
            w.lib(
                "ecsdb",
                iter(move || {
                    i = (i + 1) % level1.len();
                    count(&mut ecsdb, db, &mut params, level1[i].0)
                }),
            );
            let mut st = conn.prepare(sql).expect("prepare");
            let mut j = 0;
            w.lib(
                "sqlite",
                iter(move || {
                    j = (j + 1) % level1.len();
                    st.query_row([level1[j].1], |r| r.get::<_, i64>(0)).expect("count")
                }),
            );
        });
    }

    s.workload("path_read", |w| {
        let mut path = prepared(&mut db, "SELECT ChildOf.parent.Name.value FROM ChildOf, Probe");
        let mut plain = prepared(&mut db, "SELECT Name.value FROM Name, Probe");
        let db: &Database = &db;
        let visit = |p: &mut Prepared| {
            let mut bytes = 0usize;
            p.query_each(db, Params::new(), |row| {
                if let Value::Str(s) = &row[0] {
                    bytes += s.len();
                }
            })
            .expect("query runs");
            bytes
        };
        w.lib("ecsdb", iter(move || visit(&mut path)));
        w.lib("ecsdb-plain", iter(move || visit(&mut plain)));
        let mut st = conn
            .prepare("SELECT p.name FROM node c JOIN node p ON p.id = c.parent WHERE c.probe = 1")
            .expect("prepare");
        w.lib(
            "sqlite",
            iter(move || {
                let mut rows = st.query([]).expect("query");
                let mut bytes = 0usize;
                while let Some(r) = rows.next().expect("row") {
                    bytes += r.get_ref(0).expect("name").as_str().expect("text").len();
                }
                bytes
            }),
        );
    });

    // The forest moves into the cascade's state: its runs spawn and despawn trees in it.
    let state = Rc::new(RefCell::new((std::mem::take(&mut db), None::<Entity>, TREES * TREE)));
    s.workload("cascade", |w| {
        let (setup, timed) = (state.clone(), state.clone());
        w.lib(
            "ecsdb",
            reset_each(
                move || {
                    let (db, root, next) = &mut *setup.borrow_mut();
                    *root = Some(spawn_tree(db, *next)[0]);
                    *next += TREE;
                    // The spawn's own index upkeep belongs to the spawn, not to the despawn.
                    db.world_mut().refresh_indexes();
                },
                move || {
                    let (db, root, _) = &mut *timed.borrow_mut();
                    let e = root.take().expect("a tree to despawn");
                    let r = db.execute(&format!("DESPAWN {e}"), ()).expect("despawn");
                    black_box(r.rows.len())
                },
            ),
        );
    });
}
