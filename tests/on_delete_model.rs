//! `ON DELETE` against a model: random graphs of entities whose references carry every
//! policy (CASCADE, SET NULL, REMOVE, RESTRICT, NO ACTION, cycles allowed), one DESPAWN, and
//! the world compared with what the model says: the cascade's closure gone, survivors'
//! SET NULL fields null, REMOVE components removed, NO ACTION handles dangling (reading as
//! null); or, when a surviving RESTRICT
//! referrer blocks it (anywhere in the cascade, however deep), a `constraint` error and the
//! world exactly as before. With and without relation indexes on every reference.

mod common;

use common::db::{rows, run};

use std::collections::BTreeSet;

use ecsdb::query::{Database, ErrorKind};
use ecsdb::{Entity, Value};
use proptest::prelude::*;

/// The components, their field and policy, in this order.
const POLICIES: [(&str, &str, &str); 5] = [
    ("Parent", "p", "CASCADE"),
    ("Owner", "o", "SET NULL"),
    ("Dock", "d", "REMOVE"),
    ("Guard", "g", "RESTRICT"),
    ("Note", "n", "NO ACTION"),
];

/// One entity of the model: per component of [`POLICIES`], whether it has it and the index
/// of the entity its field refers to.
#[derive(Clone, Debug)]
struct Node {
    refs: [Option<usize>; 5],
}

/// What the model expects of `DESPAWN victim`.
enum Outcome {
    /// Refused: a surviving RESTRICT referrer.
    Restricted,
    /// Despawned these; the survivors as given.
    Done { gone: BTreeSet<usize>, survivors: Vec<(usize, Node)> },
}

fn model(nodes: &[Node], victim: usize) -> Outcome {
    let mut gone = BTreeSet::from([victim]);
    let mut todo = vec![victim];
    while let Some(t) = todo.pop() {
        for (i, n) in nodes.iter().enumerate() {
            if n.refs[0] == Some(t) && gone.insert(i) {
                todo.push(i);
            }
        }
    }
    let restricted =
        nodes.iter().enumerate().any(|(i, n)| !gone.contains(&i) && n.refs[3].is_some_and(|t| gone.contains(&t)));
    if restricted {
        return Outcome::Restricted;
    }
    let survivors = nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(i))
        .map(|(i, n)| {
            let mut n = n.clone();
            // SET NULL keeps the component with a null field: the model writes "null" as
            // usize::MAX.
            if n.refs[1].is_some_and(|t| gone.contains(&t)) {
                n.refs[1] = Some(usize::MAX);
            }
            if n.refs[2].is_some_and(|t| gone.contains(&t)) {
                n.refs[2] = None;
            }
            // NO ACTION leaves the handle in place, and a dangling handle reads as null.
            if n.refs[4].is_some_and(|t| gone.contains(&t)) {
                n.refs[4] = Some(usize::MAX);
            }
            (i, n)
        })
        .collect();
    Outcome::Done { gone, survivors }
}

fn build(nodes: &[Node], index: bool) -> (Database, Vec<Entity>) {
    let mut db = Database::new();
    db.execute("CREATE COMPONENT Node ()", ()).unwrap();
    for (c, f, policy) in POLICIES {
        db.execute(&format!("CREATE COMPONENT {c} ({f} entity REFERENCES ON DELETE {policy})"), ()).unwrap();
        if index {
            db.execute(&format!("CREATE INDEX ON {c} ({f}) USING relation"), ()).unwrap();
        }
    }
    let ids: Vec<Entity> = nodes
        .iter()
        .map(|_| match run(&mut db, "SPAWN Node")[0][0] {
            Value::Entity(e) => e,
            ref other => panic!("SPAWN gave {other:?}"),
        })
        .collect();
    for (i, n) in nodes.iter().enumerate() {
        for (k, (c, f, _)) in POLICIES.iter().enumerate() {
            if let Some(t) = n.refs[k] {
                db.execute(&format!("ADD {c} {{{f}: {}}} TO {}", ids[t], ids[i]), ()).unwrap();
            }
        }
    }
    (db, ids)
}

/// Per live entity (by model index): per component, absent, or the model index of its
/// target (`usize::MAX` for null).
fn dump(db: &Database, ids: &[Entity]) -> Vec<(usize, [Option<usize>; 5])> {
    let index_of = |v: &Value| match v {
        Value::Entity(e) => ids.iter().position(|x| x == e).expect("a known entity"),
        Value::Null => usize::MAX,
        other => panic!("not an entity: {other:?}"),
    };
    let mut out = Vec::new();
    for (i, &e) in ids.iter().enumerate() {
        if !db.world().is_alive(e) {
            continue;
        }
        let mut refs = [None; 5];
        for (k, (c, f, _)) in POLICIES.iter().enumerate() {
            let rows = rows(db, &format!("SELECT {c}.{f} FROM {c} WHERE entity = {e}"));
            refs[k] = rows.first().map(|r| index_of(&r[0]));
        }
        out.push((i, refs));
    }
    out
}

fn graph() -> impl Strategy<Value = (Vec<Node>, usize)> {
    (2usize..24).prop_flat_map(|n| {
        let node = proptest::array::uniform5(proptest::option::weighted(0.35, 0..n)).prop_map(|refs| Node { refs });
        (proptest::collection::vec(node, n), 0..n)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn despawn_follows_every_policy_all_or_nothing((nodes, victim) in graph(), index in any::<bool>()) {
        let (mut db, ids) = build(&nodes, index);
        let before = dump(&db, &ids);
        let result = db.execute(&format!("DESPAWN {}", ids[victim]), ());
        match model(&nodes, victim) {
            Outcome::Restricted => {
                let err = result.expect_err("a surviving RESTRICT referrer refuses the despawn");
                prop_assert_eq!(err.kind, ErrorKind::Constraint);
                prop_assert_eq!(dump(&db, &ids), before, "nothing changed");
            }
            Outcome::Done { gone, survivors } => {
                let rows = result.unwrap_or_else(|e| panic!("DESPAWN failed: {e}")).rows;
                prop_assert_eq!(&rows, &vec![vec![Value::Int(gone.len() as i64)]], "the count includes the cascade");
                let want: Vec<(usize, [Option<usize>; 5])> = survivors.into_iter().map(|(i, n)| (i, n.refs)).collect();
                prop_assert_eq!(dump(&db, &ids), want);
            }
        }
    }
}
