//! A dangling reference reads as null: a `NO ACTION` reference whose target was despawned
//! answers every statement exactly as if the field held null (fields, objects, comparisons,
//! IS NULL, IN, ORDER BY, GROUP BY, paths, the hierarchy functions), with and without
//! indexes on the field.
//!
//! The test is differential: the same world is built twice, once with the targets despawned
//! (the references dangle) and once with those references set to null by hand; every query
//! must give the same rows on both.

mod common;

use common::db::rows;
use common::rng::Rng;
use ecsdb::query::{Database, PlanOptions};
use ecsdb::{Entity, Value};

/// The world: `Target {n}` entities, `Link {who, n}` entities pointing at targets (some at
/// none), and every third target despawned. `dangling`: despawn them; otherwise null the
/// links that pointed at them and despawn them after.
fn world(dangling: bool, indexes: &[&str]) -> Database {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Target (n i32);
         CREATE COMPONENT Link (who entity REFERENCES ON DELETE NO ACTION, n i32);
         CREATE COMPONENT Parent (of entity REFERENCES ON DELETE NO ACTION);",
    )
    .unwrap();
    for kind in indexes {
        db.execute(&format!("CREATE INDEX ON Link (who) USING {kind}"), ()).unwrap();
    }
    db.execute("CREATE INDEX ON Parent (of) USING relation", ()).unwrap();
    let mut rng = Rng::new(53);
    let targets: Vec<Entity> = (0..30)
        .map(|n| match &db.execute("SPAWN Target {n: $1}", [n]).unwrap().rows[0][0] {
            Value::Entity(e) => *e,
            other => panic!("{other:?}"),
        })
        .collect();
    for n in 0..200 {
        let who = if rng.chance(0.1) { Value::Null } else { Value::Entity(targets[rng.below(targets.len())]) };
        db.execute("SPAWN Link {who: $1, n: $2}", (who, n)).unwrap();
    }
    // A chain: each target's parent is the one before; a despawned one breaks it.
    for w in targets.windows(2) {
        db.execute("ADD Parent {of: $1} TO $2", (w[0], w[1])).unwrap();
    }
    let gone: Vec<Entity> = targets.iter().copied().step_by(3).collect();
    for e in &gone {
        if !dangling {
            db.execute("UPDATE Link SET who = null WHERE Link.who = $1", [*e]).unwrap();
            db.execute("UPDATE Parent SET of = null WHERE Parent.of = $1", [*e]).unwrap();
        }
        db.execute("DESPAWN $1", [*e]).unwrap();
    }
    db.set_plan_options(PlanOptions { prefer_indexes: true });
    db
}

const QUERIES: &[&str] = &[
    "SELECT entity, Link.who, Link.who IS NULL FROM Link ORDER BY Link.n",
    "SELECT Link FROM Link ORDER BY Link.n",
    "SELECT count(*) WHERE Link.who IS NULL",
    "SELECT count(*) WHERE Link.who IS NOT NULL",
    "SELECT Link.n WHERE Link.who = 0v0 ORDER BY Link.n",
    "SELECT Link.n WHERE Link.who = 1v0 ORDER BY Link.n",
    "SELECT Link.n WHERE Link.who IN (0v0, 1v0, 3v0, 4v0) ORDER BY Link.n",
    "SELECT Link.n WHERE Link.who != 1v0 ORDER BY Link.n",
    "SELECT Link.n WHERE NOT (Link.who = 3v0) ORDER BY Link.n",
    "SELECT Link.who, count(*) FROM Link GROUP BY Link.who",
    "SELECT Link.n FROM Link ORDER BY Link.who, Link.n LIMIT 40",
    "SELECT Link.n, Link.who.Target.n FROM Link ORDER BY Link.n",
    "SELECT entity, depth(Parent.of), root(Parent.of) FROM Parent ORDER BY entity",
    "SELECT entity FROM Parent WHERE descendant_of(Parent.of, 0v0) ORDER BY entity",
    "SELECT entity FROM Parent WHERE descendant_of(Parent.of, 1v0) ORDER BY entity",
    "SELECT entity FROM Parent WHERE Parent.of = 3v0",
    "SELECT entity, Parent.of FROM Parent ORDER BY entity",
];

#[test]
fn a_dangling_reference_answers_as_null_does() {
    for indexes in [&[][..], &["relation"], &["btree"], &["bitmap"]] {
        let dangling = world(true, indexes);
        let nulled = world(false, indexes);
        for q in QUERIES {
            let a = dangling.query(q, ()).unwrap_or_else(|e| panic!("{}", e.render(q)));
            let b = nulled.query(q, ()).unwrap_or_else(|e| panic!("{}", e.render(q)));
            assert_eq!(a, b, "{q} with indexes {indexes:?}");
        }
    }
}

#[test]
fn the_query_of_the_issue() {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT T (x i32);
         CREATE COMPONENT L (who entity REFERENCES ON DELETE NO ACTION);
         SPAWN T {x: 1};
         SPAWN L {who: 0v0};
         DESPAWN 0v0;",
    )
    .unwrap();
    let rs = db.query("SELECT L.who, L.who IS NULL FROM L", ()).unwrap();
    assert_eq!(rs.rows, [[Value::Null, Value::Bool(true)]]);
    assert_eq!(rs.to_json_string(), r#"{"columns":["L.who","L.who IS NULL"],"rows":[[null,true]]}"#);
    // A plain entity field (no REFERENCES) keeps the handle it holds: only references dangle.
    db.execute_script("CREATE COMPONENT P (e entity); SPAWN P {e: 1v0}; DESPAWN 1v0;").unwrap();
    assert_eq!(rows(&db, "SELECT P.e FROM P"), [[Value::Entity(Entity::from_parts(1, 0))]]);
}
