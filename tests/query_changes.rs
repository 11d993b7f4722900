//! `changed(C)` and `added(C)` in text: a prepared statement (or a system) counts the rows
//! changed or added since its own previous run, exactly as typed `Changed<C>` / `Added<C>`
//! do; a one-off statement counts every row.

mod common;

use common::db::rows;

use ecsdb::query::{Database, Params};
use ecsdb::{Added, Changed, Component, Entity, QueryState, Value, World};
use proptest::prelude::*;

#[derive(Component, Clone, Copy)]
struct Hp {
    v: f32,
}

#[derive(Component, Clone, Copy)]
struct Tag {
    n: i32,
}

fn entities(rows: Vec<Vec<Value>>) -> Vec<Entity> {
    let mut out: Vec<Entity> = rows
        .into_iter()
        .map(|r| match r[0] {
            Value::Entity(e) => e,
            ref other => panic!("{other:?}"),
        })
        .collect();
    out.sort();
    out
}

fn count(db: &mut Database, p: &mut ecsdb::Prepared) -> i64 {
    match p.query(db, ()).unwrap().rows[0][0] {
        Value::Int(n) => n,
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn a_prepared_statement_counts_rows_changed_since_its_previous_run() {
    let mut db = Database::new();
    let a = db.world_mut().spawn((Hp { v: 1.0 }, Tag { n: 0 }));
    db.world_mut().spawn((Hp { v: 2.0 },));
    db.world_mut().spawn((Tag { n: 1 },));
    let mut changed = db.prepare("SELECT count(*) WHERE changed(Hp)").unwrap();
    let mut added = db.prepare("SELECT count(*) FROM ?Hp WHERE added(Hp)").unwrap();
    assert_eq!(count(&mut db, &mut changed), 2, "a first run counts every row");
    assert_eq!(count(&mut db, &mut added), 2);
    assert_eq!(count(&mut db, &mut changed), 0, "nothing changed since");
    db.execute(&format!("UPDATE Hp SET v = 5 WHERE entity = {}v{}", a.index(), a.generation()), ()).unwrap();
    db.world_mut().spawn((Hp { v: 3.0 },));
    assert_eq!(count(&mut db, &mut changed), 2, "the update and the new row");
    assert_eq!(count(&mut db, &mut added), 1, "only the new row was added");
    // A one-off statement counts every row; a row without the component never counts.
    assert_eq!(rows(&db, "SELECT count(*) WHERE changed(Hp)")[0][0], Value::Int(3));
    assert_eq!(rows(&db, "SELECT count(*) FROM ?Hp WHERE NOT changed(Hp)")[0][0], Value::Int(1));
    // It reads in projections, and EXPLAIN shows it.
    let rows = rows(&db, "SELECT changed(Hp), added(Tag) FROM Tag ORDER BY Tag.n");
    assert_eq!(rows, [[Value::Bool(true), Value::Bool(true)], [Value::Bool(false), Value::Bool(true)]]);
    let plan = db.query("EXPLAIN SELECT entity WHERE changed(Hp)", ()).unwrap();
    assert!(format!("{:?}", plan.rows).contains("changed(Hp)"), "{:?}", plan.rows);
}

#[test]
fn bad_uses_are_errors_with_positions() {
    let mut db = Database::new();
    db.execute("CREATE COMPONENT Hp (v f32)", ()).unwrap();
    for (text, needle) in [
        ("SELECT count(*) WHERE changed(Hp, Hp)", "one component name"),
        ("SELECT count(*) WHERE added(1)", "component name"),
        ("SELECT count(*) WHERE changed(Nope)", "Nope"),
    ] {
        let e = db.query(text, ()).unwrap_err();
        assert!(e.to_string().contains(needle), "{text}: {e}");
        let span = e.span.expect("a position");
        assert!(span.end <= text.len(), "{text}: {span:?}");
    }
}

#[test]
fn a_system_sees_the_changes_since_its_own_previous_run() {
    let mut db = Database::new();
    db.execute_script(
        "CREATE COMPONENT Hp (v f32); CREATE COMPONENT Seen (n i64);
         SPAWN Hp {v: 1}, Seen {n: 0}; SPAWN Hp {v: 2}, Seen {n: 0};
         CREATE SYSTEM watch AS UPDATE Seen SET n = Seen.n + 1 WHERE changed(Hp)",
    )
    .unwrap();
    db.execute("TICK", ()).unwrap();
    db.execute("TICK", ()).unwrap();
    let seen = |db: &Database| rows(db, "SELECT Seen.n FROM Seen, Hp ORDER BY Hp.v");
    assert_eq!(seen(&db), [[Value::Int(1)], [Value::Int(1)]], "first run: every row; second: none");
    db.execute("UPDATE Hp SET v = 3 WHERE Hp.v = 2", ()).unwrap();
    db.execute("TICK 2", ()).unwrap();
    assert_eq!(seen(&db), [[Value::Int(1)], [Value::Int(2)]]);
}

/// One step of a random write sequence.
#[derive(Clone, Debug)]
enum Step {
    /// Typed write to the k-th live entity's Hp (if it has one).
    TypedWrite(usize),
    /// Text UPDATE of the Hp of entities whose Hp.v is below this.
    TextUpdate(f32),
    /// Spawn with Hp and maybe Tag.
    Spawn(bool),
    /// Insert Hp on the k-th live entity (replacing it if present).
    InsertHp(usize),
    /// Remove Hp from the k-th live entity.
    RemoveHp(usize),
    /// Despawn the k-th live entity.
    Despawn(usize),
    /// Nothing: the readers run again.
    Nothing,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..20).prop_map(Step::TypedWrite),
        (0.0f32..10.0).prop_map(Step::TextUpdate),
        any::<bool>().prop_map(Step::Spawn),
        (0usize..20).prop_map(Step::InsertHp),
        (0usize..20).prop_map(Step::RemoveHp),
        (0usize..20).prop_map(Step::Despawn),
        Just(Step::Nothing),
    ]
}

fn live(world: &World) -> Vec<Entity> {
    let mut out: Vec<Entity> = world.tables().iter().flat_map(|t| t.entities().iter().copied()).collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    /// After every step, the text readers and the typed readers (each run once per step, all
    /// started together) return the same entities.
    #[test]
    fn text_changed_and_added_agree_with_typed_filters(steps in prop::collection::vec(step(), 1..30)) {
        let mut db = Database::new();
        for i in 0..6 {
            db.world_mut().spawn((Hp { v: i as f32 }, Tag { n: i }));
        }
        let mut changed_text = db.prepare("SELECT entity WHERE changed(Hp)").unwrap();
        let mut added_text = db.prepare("SELECT entity FROM Hp WHERE added(Hp)").unwrap();
        let mut changed_typed: QueryState<Entity, Changed<Hp>> = db.world_mut().query_state();
        let mut added_typed: QueryState<Entity, Added<Hp>> = db.world_mut().query_state();
        for s in steps {
            let text_changed = entities(changed_text.query(&db, ()).unwrap().rows);
            let text_added = entities(added_text.query(&db, ()).unwrap().rows);
            let mut typed_changed: Vec<Entity> = changed_typed.iter(db.world()).collect();
            let mut typed_added: Vec<Entity> = added_typed.iter(db.world()).collect();
            typed_changed.sort();
            typed_added.sort();
            prop_assert_eq!(&text_changed, &typed_changed);
            prop_assert_eq!(&text_added, &typed_added);
            let all = live(db.world());
            let pick = |k: usize| (!all.is_empty()).then(|| all[k % all.len()]);
            let w = db.world_mut();
            match s {
                Step::TypedWrite(k) => {
                    if let Some(e) = pick(k)
                        && let Ok(mut h) = w.get_mut::<Hp>(e) {
                            h.v += 1.0;
                        }
                }
                Step::TextUpdate(below) => {
                    db.execute("UPDATE Hp SET v = Hp.v + 0.5 WHERE Hp.v < $1", Params::positional([below as f64]))
                        .unwrap();
                }
                Step::Spawn(tag) => {
                    if tag {
                        w.spawn((Hp { v: 0.0 }, Tag { n: 9 }));
                    } else {
                        w.spawn((Hp { v: 0.0 },));
                    }
                }
                Step::InsertHp(k) => {
                    if let Some(e) = pick(k) {
                        w.insert(e, (Hp { v: 7.0 },)).unwrap();
                    }
                }
                Step::RemoveHp(k) => {
                    if let Some(e) = pick(k) {
                        let _ = w.remove::<(Hp,)>(e);
                    }
                }
                Step::Despawn(k) => {
                    if let Some(e) = pick(k) {
                        w.despawn(e).unwrap();
                    }
                }
                Step::Nothing => {}
            }
        }
    }
}
