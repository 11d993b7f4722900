//! References between entities through the text language: REFERENCES … ON DELETE … ACYCLIC,
//! paths, depth/root/descendant_of, and the relation index — every answer the same with and
//! without the index.

mod common;

use common::db::{run, spawned};

use ecsdb::query::{Database, ErrorKind};
use ecsdb::{Entity, Value};

/// A small scene: root ← a ← b, root ← c; `Owner` (SET NULL) and `Docked` (REMOVE) on others.
struct Scene {
    db: Database,
    root: Entity,
    a: Entity,
    b: Entity,
    c: Entity,
}

fn scene(index: bool) -> Scene {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT ChildOf (parent entity REFERENCES ON DELETE CASCADE ACYCLIC);
         CREATE COMPONENT Owner (who entity REFERENCES ON DELETE SET NULL);
         CREATE COMPONENT DockedTo (port entity REFERENCES ON DELETE REMOVE);
         CREATE COMPONENT Target (of entity REFERENCES ON DELETE RESTRICT);
         CREATE COMPONENT Note (about entity REFERENCES);
         CREATE COMPONENT Name (value string);
         CREATE COMPONENT Health (hp f32)",
    )
    .unwrap();
    if index {
        run(&mut db, "CREATE INDEX ON ChildOf (parent) USING relation");
    }
    let root = spawned(&mut db, "SPAWN Name {value: 'root'}, Health {hp: 100}");
    let a = spawned(&mut db, &format!("SPAWN Name {{value: 'a'}}, Health {{hp: 5}}, ChildOf {{parent: {root}}}"));
    let b = spawned(&mut db, &format!("SPAWN Name {{value: 'b'}}, Health {{hp: 50}}, ChildOf {{parent: {a}}}"));
    let c = spawned(&mut db, &format!("SPAWN Name {{value: 'c'}}, Health {{hp: 1}}, ChildOf {{parent: {root}}}"));
    Scene { db, root, a, b, c }
}

#[test]
fn paths_read_through_references() {
    for index in [false, true] {
        let Scene { mut db, a, b, c, .. } = scene(index);
        let rows = run(&mut db, "SELECT Name.value, ChildOf.parent.Name.value ORDER BY Name.value");
        let want = |x: &str, y: &str| vec![Value::Str(x.into()), Value::Str(y.into())];
        assert_eq!(rows, [want("a", "root"), want("b", "a"), want("c", "root")]);
        let rows = run(&mut db, "SELECT entity WHERE ChildOf.parent.ChildOf.parent.Name.value = 'root'");
        assert_eq!(rows, [vec![Value::Entity(b)]]);
        let rows = run(&mut db, &format!("SELECT ChildOf.parent.Health WHERE entity = {c}"));
        assert_eq!(rows, [vec![Value::Object(vec![("hp".into(), Value::Float(100.0))])]]);
        let rows = run(&mut db, &format!("SELECT entity WHERE ChildOf.parent = {a}"));
        assert_eq!(rows, [vec![Value::Entity(b)]]);
        // Only the first component of a path is required.
        let n = run(&mut db, "SELECT count(*) WHERE ChildOf.parent.Name.value IS NULL");
        assert_eq!(n, [vec![Value::Int(0)]]);
    }
}

#[test]
fn hierarchy_functions() {
    for index in [false, true] {
        let Scene { mut db, root, a, b, c } = scene(index);
        let rows = run(
            &mut db,
            "SELECT Name.value, depth(ChildOf.parent), root(ChildOf.parent) ORDER BY depth(ChildOf.parent), Name.value",
        );
        let row = |n: &str, d: i64| vec![Value::Str(n.into()), Value::Int(d), Value::Entity(root)];
        assert_eq!(rows, [row("root", 0), row("a", 1), row("c", 1), row("b", 2)]);
        let rows = run(&mut db, &format!("SELECT entity WHERE descendant_of(ChildOf.parent, {root}) ORDER BY entity"));
        assert_eq!(rows, [vec![Value::Entity(a)], vec![Value::Entity(b)], vec![Value::Entity(c)]]);
        let rows =
            run(&mut db, &format!("SELECT entity WHERE descendant_of(ChildOf.parent, {root}, 1) ORDER BY entity"));
        assert_eq!(rows, [vec![Value::Entity(a)], vec![Value::Entity(c)]]);
        // The low-health descendants of root, parents first.
        let rows = run(
            &mut db,
            &format!(
                "SELECT Name.value WHERE descendant_of(ChildOf.parent, {root}) AND Health.hp < 10 \
                 ORDER BY depth(ChildOf.parent), Name.value"
            ),
        );
        assert_eq!(rows, [vec![Value::Str("a".into())], vec![Value::Str("c".into())]]);
    }
}

#[test]
fn on_delete_policies_and_counts() {
    for index in [false, true] {
        let Scene { mut db, root, a, b, c } = scene(index);
        let owned = spawned(&mut db, &format!("SPAWN Owner {{who: {a}}}, DockedTo {{port: {b}}}, Note {{about: {b}}}"));
        // Despawning a takes b with it (CASCADE): the count includes the cascade.
        assert_eq!(run(&mut db, &format!("DESPAWN {a}")), [vec![Value::Int(2)]]);
        let rows = run(&mut db, &format!("SELECT Owner.who, has(DockedTo) WHERE entity = {owned}"));
        assert_eq!(rows, [vec![Value::Null, Value::Bool(false)]]);
        // RESTRICT refuses, and nothing changes.
        let guard = spawned(&mut db, &format!("SPAWN Target {{of: {c}}}"));
        let err = db.execute(&format!("DESPAWN {root}"), ()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Constraint);
        assert_eq!(run(&mut db, "SELECT count(*)"), [vec![Value::Int(4)]]);
        run(&mut db, &format!("DESPAWN {guard}"));
        assert_eq!(run(&mut db, "DESPAWN WHERE Name.value = 'root'"), [vec![Value::Int(2)]]);
    }
}

#[test]
fn writes_refuse_stale_targets_and_cycles_on_every_statement() {
    let Scene { mut db, root, a, b, .. } = scene(true);
    let gone = spawned(&mut db, "SPAWN Name {value: 'gone'}");
    run(&mut db, &format!("DESPAWN {gone}"));
    let before = run(&mut db, "SELECT entity, ChildOf.parent ORDER BY entity");
    let stale = [
        format!("SPAWN ChildOf {{parent: {gone}}}"),
        format!("ADD ChildOf {{parent: {gone}}} TO {root}"),
        format!("UPDATE ChildOf SET parent = {gone} WHERE entity = {b}"),
    ];
    for text in &stale {
        assert_eq!(db.execute(text, ()).unwrap_err().kind, ErrorKind::StaleEntity, "{text}");
    }
    let cycles = [
        format!("ADD ChildOf {{parent: {b}}} TO {root}"),
        format!("UPDATE ChildOf SET parent = {b} WHERE entity = {a}"),
        format!("UPDATE ChildOf SET parent = entity WHERE entity = {b}"),
    ];
    for text in &cycles {
        assert_eq!(db.execute(text, ()).unwrap_err().kind, ErrorKind::Constraint, "{text}");
    }
    assert_eq!(run(&mut db, "SELECT entity, ChildOf.parent ORDER BY entity"), before);
    // Checked on the statement's final state: every child re-parented at once is fine.
    run(&mut db, &format!("UPDATE ChildOf SET parent = {root}"));
    // Only writes check targets: a stale literal in a predicate just compares.
    assert_eq!(run(&mut db, &format!("SELECT count(*) WHERE ChildOf.parent = {gone}")), [vec![Value::Int(0)]]);
}

#[test]
fn references_are_checked_when_declared() {
    let mut db = Database::new();
    let err = db.execute("CREATE COMPONENT Bad (n i32 REFERENCES)", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Type);
    assert!(db.execute("CREATE COMPONENT Bad (n entity REFERENCES ON DELETE EXPLODE)", ()).is_err());
    run(&mut db, "CREATE COMPONENT Ok (n entity REFERENCES ON DELETE NO ACTION ACYCLIC)");
    assert!(db.execute("SELECT depth(Ok)", ()).is_err());
    assert!(db.execute("SELECT Ok.n.Ok", ()).is_ok());
}

#[test]
fn the_relation_index_answers_children_and_explain_shows_it() {
    let Scene { mut db, root, .. } = scene(true);
    // Enough unrelated children that reaching two of them through the index beats a scan.
    let other = spawned(&mut db, "SPAWN Name {value: 'other'}");
    db.execute_script(&format!("SPAWN ChildOf {{parent: {other}}};").repeat(2000)).unwrap();
    let plan = run(&mut db, &format!("EXPLAIN SELECT entity WHERE ChildOf.parent = {root}"));
    let text: Vec<String> = plan.iter().map(|r| r[0].to_string()).collect();
    assert!(
        text.iter().any(|l| l.contains("ChildOf_parent_relation (relation) FOR = on ChildOf(parent) [2 referrers]")),
        "{text:#?}"
    );
    assert_eq!(run(&mut db, &format!("SELECT count(*) WHERE ChildOf.parent = {root}")), [vec![Value::Int(2)]]);
    assert_eq!(
        run(&mut db, &format!("SELECT count(*) WHERE ChildOf.parent IN ({root}, {other})")),
        [vec![Value::Int(2002)]]
    );
}

#[test]
fn descendant_of_is_answered_by_walking_down_the_relation_index() {
    let Scene { mut db, root, a, b, c } = scene(true);
    let other = spawned(&mut db, "SPAWN Name {value: 'other'}");
    db.execute_script(&format!("SPAWN ChildOf {{parent: {other}}};").repeat(2000)).unwrap();
    let text = format!("SELECT entity WHERE descendant_of(ChildOf.parent, {root}) ORDER BY entity");
    let plan = run(&mut db, &format!("EXPLAIN {text}"));
    let lines: Vec<String> = plan.iter().map(|r| r[0].to_string()).collect();
    assert!(lines.iter().any(|l| l.contains("ChildOf_parent_relation")), "{lines:#?}");
    assert_eq!(run(&mut db, &text), [vec![Value::Entity(a)], vec![Value::Entity(b)], vec![Value::Entity(c)]]);
    let one = format!("SELECT entity WHERE descendant_of(ChildOf.parent, {root}, 1) ORDER BY entity");
    assert_eq!(run(&mut db, &one), [vec![Value::Entity(a)], vec![Value::Entity(c)]]);
    let none = format!("SELECT count(*) WHERE descendant_of(ChildOf.parent, {b})");
    assert_eq!(run(&mut db, &none), [vec![Value::Int(0)]]);
}

mod typed {
    use super::common::db::{rows, run};
    use ecsdb::query::{Database, ErrorKind};
    use ecsdb::{Component, Entity, OnDelete, Value};

    #[derive(Component)]
    struct Node {
        name: String,
    }

    #[derive(Component)]
    #[component(name = "Parent")]
    struct Parent {
        #[references(on_delete = "cascade", acyclic)]
        of: Entity,
    }

    #[derive(Component)]
    struct Owner {
        #[references(on_delete = "set null")]
        who: Entity,
        #[references]
        note: Entity,
    }

    #[test]
    fn a_derive_attribute_declares_references_that_text_and_despawn_follow() {
        let mut db = Database::new();
        let w = db.world_mut();
        let root = w.spawn(Node { name: "root".into() });
        let kid = w.spawn((Node { name: "kid".into() }, Parent { of: root }));
        let grandkid = w.spawn((Node { name: "grandkid".into() }, Parent { of: kid }));
        let owner = w.spawn(Owner { who: kid, note: root });
        let parent = w.components().by_name("Parent").unwrap().id();
        let r = w.reference(parent, 0).expect("Parent.of is a reference");
        assert_eq!((r.on_delete, r.acyclic), (OnDelete::Cascade, true));
        let owner_id = w.components().by_name("Owner").unwrap().id();
        assert_eq!(w.reference(owner_id, 0).unwrap().on_delete, OnDelete::SetNull);
        assert_eq!(w.reference(owner_id, 1).unwrap().on_delete, OnDelete::NoAction);
        assert_eq!(w.children_of::<Parent>(root, "of").unwrap(), [kid]);
        assert_eq!(w.descendants_of::<Parent>(root, "of").unwrap().len(), 2);

        // Text follows the declaration: a cycle is refused, paths and policies work.
        let err = db.execute(&format!("ADD Parent {{of: {grandkid}}} TO {root}"), ()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Constraint);
        let names = rows(&db, &format!("SELECT Parent.of.Node.name WHERE entity = {grandkid}"));
        assert_eq!(names, [vec![Value::Str("kid".into())]]);
        assert_eq!(run(&mut db, &format!("DESPAWN {kid}")), [vec![Value::Int(2)]]);
        let owners = rows(&db, &format!("SELECT Owner.who, Owner.note WHERE entity = {owner}"));
        assert_eq!(owners, [vec![Value::Null, Value::Entity(root)]]);
    }
}
