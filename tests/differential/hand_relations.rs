//! Hand-worked answers for references between entities in the reference evaluator and the
//! mutation model: paths, `depth`, `root`, `descendant_of` (forests, loops, null and stale
//! targets), `ON DELETE` and the checks on writes. No query engine involved.

use ecsdb::query::parse::parse_statement;
use ecsdb::{Entity, OnDelete, Value};

use super::model::{Model, RefDecl, Schema};
use super::mutate::{Effect, effect};
use super::reference::RefError;

use crate::common::values::{b, i, s};
use crate::hand_cases::{seq, set};

fn e(index: u32) -> Entity {
    Entity::from_parts(index, 0)
}
fn ent(index: u32) -> Value {
    Value::Entity(e(index))
}
const N: Value = Value::Null;

/// The little world of references (`9v0` was despawned: a stale handle):
///
/// | entity | components |
/// |---|---|
/// | 0v0 | Name 'root' |
/// | 1v0 | Name 'a', Level 1, ChildOf 0v0 |
/// | 2v0 | Name 'b', ChildOf 1v0, Link 3v0 |
/// | 3v0 | Name 'c', ChildOf 0v0, Link 4v0 |
/// | 4v0 | ChildOf 9v0 (dead), Link 2v0 |
/// | 5v0 | ChildOf null, Link 5v0 |
/// | 6v0 | Link 2v0 |
/// | 7v0 | ChildOf 2v0 |
///
/// `ChildOf` is a forest: 0 ← 1 ← 2 ← 7 and 0 ← 3. `Link` loops: 2 → 3 → 4 → 2, 5 → 5, and
/// 6 runs into the first loop.
fn linked_model(child: RefDecl, link: RefDecl) -> Model {
    let mut schema = Schema::standard();
    schema.declare("ChildOf", "parent", child);
    schema.declare("Link", "to", link);
    let mut m = Model::new(schema);
    // (entity index, Name, ChildOf.parent, Link.to)
    type Row<'a> = (u32, Option<&'a str>, Option<Value>, Option<Value>);
    let rows: [Row; 8] = [
        (0, Some("root"), None, None),
        (1, Some("a"), Some(ent(0)), None),
        (2, Some("b"), Some(ent(1)), Some(ent(3))),
        (3, Some("c"), Some(ent(0)), Some(ent(4))),
        (4, None, Some(ent(9)), Some(ent(2))),
        (5, None, Some(N), Some(ent(5))),
        (6, None, None, Some(ent(2))),
        (7, None, Some(ent(2)), None),
    ];
    for (index, name, parent, link) in rows {
        let mut comps = std::collections::BTreeMap::new();
        let mut put = |c: &str, f: &str, v: Value| {
            comps.insert(c.to_string(), m.build(c, &[(f.to_string(), v)]).unwrap());
        };
        if let Some(n) = name {
            put("Name", "value", s(n));
        }
        if let Some(p) = parent {
            put("ChildOf", "parent", p);
        }
        if let Some(l) = link {
            put("Link", "to", l);
        }
        if index == 1 {
            put("Level", "value", i(1));
        }
        m.entities.insert(e(index), comps);
    }
    m
}

fn decl(on_delete: OnDelete, acyclic: bool) -> RefDecl {
    RefDecl { on_delete, acyclic }
}

fn model() -> Model {
    linked_model(decl(OnDelete::Cascade, false), decl(OnDelete::SetNull, false))
}

/// One column per entity 0..8, in entity order.
fn per_entity(values: [Value; 8]) -> Vec<Vec<Value>> {
    values.into_iter().enumerate().map(|(k, v)| vec![ent(k as u32), v]).collect()
}

#[test]
fn reference_depth_and_root() {
    let m = model();
    let q = "SELECT entity, depth(ChildOf.parent) ORDER BY entity";
    // No C, a null or a dead target: 0.
    seq(&m, q, &["entity", "depth(ChildOf.parent)"], per_entity([i(0), i(1), i(2), i(1), i(0), i(0), i(0), i(3)]));
    let q = "SELECT entity, root(ChildOf.parent) ORDER BY entity";
    let want = [ent(0), ent(0), ent(0), ent(0), ent(4), ent(5), ent(6), ent(0)];
    seq(&m, q, &["entity", "root(ChildOf.parent)"], per_entity(want));
    // On a loop (or on the way into one) both are null.
    let q = "SELECT entity, depth(Link.to) ORDER BY entity";
    seq(&m, q, &["entity", "depth(Link.to)"], per_entity([i(0), i(0), N, N, N, N, N, i(0)]));
    let q = "SELECT entity, root(Link.to) ORDER BY entity";
    seq(&m, q, &["entity", "root(Link.to)"], per_entity([ent(0), ent(1), N, N, N, N, N, ent(7)]));
    // Parents first; a hierarchy function does not require its component.
    let q = "SELECT entity FROM Name ORDER BY depth(ChildOf.parent) DESC, entity DESC";
    seq(&m, q, &["entity"], vec![vec![ent(2)], vec![ent(3)], vec![ent(1)], vec![ent(0)]]);
    let q = "SELECT depth(ChildOf.parent), count(*) GROUP BY depth(ChildOf.parent) ORDER BY depth(ChildOf.parent)";
    let want = vec![vec![i(0), i(4)], vec![i(1), i(2)], vec![i(2), i(1)], vec![i(3), i(1)]];
    seq(&m, q, &["depth(ChildOf.parent)", "count(*)"], want);
}

#[test]
fn reference_descendant_of() {
    let m = model();
    let rows = |xs: &[u32]| -> Vec<Vec<Value>> { xs.iter().map(|x| vec![ent(*x)]).collect() };
    let q = |a: &str| format!("SELECT entity WHERE descendant_of({a})");
    set(&m, &q("ChildOf.parent, 0v0"), &["entity"], rows(&[1, 2, 3, 7]));
    set(&m, &q("ChildOf.parent, 0v0, 1"), &["entity"], rows(&[1, 3]));
    set(&m, &q("ChildOf.parent, 0v0, 0"), &["entity"], rows(&[]));
    set(&m, &q("ChildOf.parent, 1v0, 2"), &["entity"], rows(&[2, 7]));
    // A stale ancestor: 4v0 holds it, but a dead target ends the chain.
    set(&m, &q("ChildOf.parent, 9v0"), &["entity"], rows(&[]));
    // Not its own descendant, even on a loop; met before the loop closed counts.
    set(&m, &q("Link.to, 2v0"), &["entity"], rows(&[3, 4, 6]));
    set(&m, &q("Link.to, 2v0, 1"), &["entity"], rows(&[4, 6]));
    set(&m, &q("Link.to, 5v0"), &["entity"], rows(&[]));
    set(&m, &q("Link.to, 6v0"), &["entity"], rows(&[]));
    // The ancestor an expression of the row: each entity against its own root.
    set(&m, &q("ChildOf.parent, root(ChildOf.parent)"), &["entity"], rows(&[1, 2, 3, 7]));
    // Null ancestor or depth: null; a negative depth: false.
    let q = "SELECT descendant_of(ChildOf.parent, null), descendant_of(ChildOf.parent, 0v0, null), \
             descendant_of(ChildOf.parent, 0v0, -1) FROM ChildOf WHERE entity = 1v0";
    let cols = [
        "descendant_of(ChildOf.parent, null)",
        "descendant_of(ChildOf.parent, 0v0, null)",
        "descendant_of(ChildOf.parent, 0v0, -1)",
    ];
    seq(&m, q, &cols, vec![vec![N, N, b(false)]]);
}

#[test]
fn reference_paths() {
    let m = model();
    // Only ChildOf is required: 0v0 and 6v0 are not rows; null through null and dead targets.
    let q = "SELECT entity, ChildOf.parent.Name.value ORDER BY entity";
    let want = vec![
        vec![ent(1), s("root")],
        vec![ent(2), s("a")],
        vec![ent(3), s("root")],
        vec![ent(4), N],
        vec![ent(5), N],
        vec![ent(7), s("b")],
    ];
    seq(&m, q, &["entity", "ChildOf.parent.Name.value"], want);
    let q = "SELECT entity WHERE ChildOf.parent.ChildOf.parent.Name.value = 'root'";
    set(&m, q, &["entity"], vec![vec![ent(2)]]);
    // A path to a component is an object; to a missing one, null. Its first component is
    // required even where FROM does not name it.
    let q = "SELECT entity, ChildOf.parent.Level FROM Name ORDER BY entity";
    let level = Value::Object(vec![("value".to_string(), i(1))]);
    let want = vec![vec![ent(1), N], vec![ent(2), level], vec![ent(3), N]];
    seq(&m, q, &["entity", "ChildOf.parent.Level"], want);
    // Through loops: every step is one hop.
    let q = "SELECT entity, Link.to.Link.to.Link.to ORDER BY entity";
    let want = vec![
        vec![ent(2), ent(2)],
        vec![ent(3), ent(3)],
        vec![ent(4), ent(4)],
        vec![ent(5), ent(5)],
        vec![ent(6), ent(4)],
    ];
    seq(&m, q, &["entity", "Link.to.Link.to.Link.to"], want);
    // A dangling handle reads as null.
    seq(&m, "SELECT ChildOf.parent WHERE entity = 4v0", &["ChildOf.parent"], vec![vec![Value::Null]]);
}

/// `DESPAWN text` on `m`: the count and the new model, or the error.
fn despawn(m: &Model, text: &str) -> Result<(usize, Model), RefError> {
    match effect(m, &parse_statement(text).unwrap())? {
        Effect::Count(n, next) => Ok((n, *next)),
        Effect::Spawn(_) => panic!("{text}: a spawn"),
    }
}

#[test]
fn reference_on_delete() {
    // CASCADE takes the subtree; SET NULL nulls survivors' fields.
    let (n, next) = despawn(&model(), "DESPAWN 1v0").unwrap();
    assert_eq!(n, 3, "1v0, 2v0 and 7v0");
    assert!(!next.is_alive(e(2)) && !next.is_alive(e(7)) && next.is_alive(e(0)));
    assert_eq!(next.entities[&e(4)]["Link"], vec![("to".to_string(), N)], "4v0 referred to 2v0");
    assert_eq!(next.entities[&e(6)]["Link"], vec![("to".to_string(), N)]);
    assert_eq!(next.entities[&e(3)]["Link"], vec![("to".to_string(), ent(4))]);
    // REMOVE takes the component; NO ACTION leaves the handle.
    let m = linked_model(decl(OnDelete::NoAction, false), decl(OnDelete::Remove, false));
    let (n, next) = despawn(&m, "DESPAWN 2v0").unwrap();
    assert_eq!(n, 1);
    assert!(!next.has(e(4), "Link") && !next.has(e(6), "Link") && next.has(e(3), "Link"));
    assert_eq!(next.entities[&e(7)]["ChildOf"], vec![("parent".to_string(), ent(2))]);
    // RESTRICT refuses unless the referrer goes too (here by cascade, or named as well).
    let m = linked_model(decl(OnDelete::Cascade, false), decl(OnDelete::Restrict, false));
    assert!(matches!(despawn(&m, "DESPAWN 3v0"), Err(RefError::Constraint(_))), "2v0 refers to 3v0");
    let err = despawn(&m, "DESPAWN 1v0");
    assert!(matches!(err, Err(RefError::Constraint(_))), "the cascade takes 2v0, which 4v0 and 6v0 refer to");
    assert_eq!(despawn(&m, "DESPAWN WHERE entity IN (2v0, 3v0, 4v0, 6v0)").unwrap().0, 5, "with 7v0");
    // 3v0 refers to 4v0 and goes by cascade from 0v0.
    assert_eq!(despawn(&m, "DESPAWN WHERE entity IN (0v0, 4v0, 6v0)").unwrap().0, 7);
}

#[test]
fn reference_checks_reference_writes() {
    let m = linked_model(decl(OnDelete::Cascade, true), decl(OnDelete::NoAction, false));
    let run = |text: &str| effect(&m, &parse_statement(text).unwrap()).map(|_| ());
    // A stale target is refused on a declared field, also when nothing else changes.
    assert_eq!(run("SPAWN ChildOf {parent: 9v0}"), Err(RefError::Stale(e(9))));
    // 4v0's parent dangles: it reads as null, so writing it back writes null.
    assert_eq!(run("UPDATE ChildOf SET parent = ChildOf.parent FROM 4v0"), Ok(()));
    assert_eq!(run("SPAWN ChildOf {parent: 7v0}"), Ok(()));
    // ACYCLIC, on the statement's final state.
    assert!(matches!(run("ADD ChildOf {parent: 7v0} TO 0v0"), Err(RefError::Constraint(_))));
    assert!(matches!(run("UPDATE ChildOf SET parent = entity FROM 3v0"), Err(RefError::Constraint(_))));
    assert_eq!(run("UPDATE ChildOf SET parent = 3v0 WHERE entity = 1v0"), Ok(()));
    assert_eq!(run("ADD ChildOf {parent: 0v0} WHERE Name.value = 'zzz'"), Ok(()), "no target, no check");
    // Link is not ACYCLIC: loops are fine.
    assert_eq!(run("UPDATE Link SET to = entity"), Ok(()));
}
