//! The registry's tests: definitions, refreshes through every write path, readers.

use std::ops::Bound;

use super::*;
use crate::component::FieldType;
use crate::index::RtreeUpdate;
use crate::{CommandBuffer, ComponentDef};

/// A reader for one index leaves the others dirty: they answer nothing until wanted,
/// then catch up on every write made meanwhile; one that took many removals while dirty
/// is dropped and rebuilt instead of buffering them.
#[test]
fn indexes_left_dirty_catch_up_when_wanted() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("A", &[("v", FieldType::I64)])).unwrap();
    w.define_component(&ComponentDef::new("B", &[("v", FieldType::I64)])).unwrap();
    w.create_index(IndexDef::new("A", &["v"], IndexKind::Bitmap).named("a")).unwrap();
    w.create_index(IndexDef::new("B", &["v"], IndexKind::Bitmap).named("b")).unwrap();
    let n = crate::test_size(10_000, 40);
    let ab = |i: i64| [("A", [("v", Value::Int(i % 3))]), ("B", [("v", Value::Int(i % 5))])];
    let es: Vec<Entity> = (0..n)
        .map(|i| {
            let c = ab(i);
            w.spawn_values(&[(c[0].0, &c[0].1[..]), (c[1].0, &c[1].1[..])]).unwrap()
        })
        .collect();
    drop(w.index_reader());
    let count = |w: &World, name: &str, v: i64| {
        w.index_reader_for(Wanted::One(name)).estimate(name, &IndexPredicate::Eq(Value::Int(v))).map(|e| e.rows)
    };
    // A write, then a reader for "b" only: "a" is dirty and declines.
    w.set_fields(es[0], "A", &[("v", Value::Int(7))]).unwrap();
    {
        let r = w.index_reader_for(Wanted::One("b"));
        assert!(r.estimate("b", &IndexPredicate::Eq(Value::Int(0))).is_some());
        assert!(r.estimate("a", &IndexPredicate::Eq(Value::Int(7))).is_none(), "a dirty index answers nothing");
    }
    w.set_fields(es[1], "A", &[("v", Value::Int(7))]).unwrap();
    drop(w.index_reader_for(Wanted::One("b")));
    // Wanted at last: both writes are there.
    assert_eq!(count(&w, "a", 7), Some(2));
    // Many removals while dirty: the index is dropped, then rebuilt when wanted.
    w.set_fields(es[2], "B", &[("v", Value::Int(9))]).unwrap();
    drop(w.index_reader_for(Wanted::One("b")));
    let gone = (n as usize) * 9 / 10;
    for e in &es[..gone] {
        w.despawn(*e).unwrap();
    }
    // The bound is 4096 removals past a quarter of the entries: more than Miri can take.
    if !cfg!(miri) {
        assert!(w.indexes.read().find("a").unwrap().needs_rebuild, "dropped past the bound");
    }
    let left = |v: i64| (gone as i64..n).filter(|i| i % 3 == v).count() as u64;
    assert_eq!(count(&w, "a", 1), Some(left(1)));
    assert_eq!(count(&w, "a", 7), Some(0));
    assert_eq!(count(&w, "b", 9), Some(0));
}

#[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
struct Pos {
    x: f32,
    y: f32,
    z: f32,
}
#[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
struct Team {
    id: u8,
}
#[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
struct Frozen;
#[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Hp {
    v: f64,
}
#[derive(crate::Component, Clone, Copy, Debug, PartialEq)]
struct Big {
    v: u64,
}

fn set(world: &World, name: &str, p: &IndexPredicate) -> Vec<u32> {
    world.index_answer(name, p).unwrap().unwrap().into_vec(None)
}

#[test]
fn definitions_are_validated_and_named() {
    let mut w = World::new();
    w.register::<Pos>().unwrap();
    w.register::<Team>().unwrap();
    w.register::<Frozen>().unwrap();
    w.define_component(&ComponentDef::new("Dir", &[("v", FieldType::Vec2), ("w", FieldType::F32)])).unwrap();
    assert_eq!(w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap(), "Pos_x_y_z_rtree");
    assert_eq!(w.create_index(IndexDef::new("Pos", &["x", "y"], IndexKind::Rtree)).unwrap(), "Pos_x_y_rtree");
    assert_eq!(w.create_index(IndexDef::new("Dir", &["v"], IndexKind::Rtree)).unwrap(), "Dir_v_rtree");
    assert_eq!(w.create_index(IndexDef::new("Team", &[], IndexKind::Btree)).unwrap(), "Team_id_btree");
    assert_eq!(w.create_index(IndexDef::new("Frozen", &[], IndexKind::Bitmap)).unwrap(), "Frozen_bitmap");
    assert_eq!(
        w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("team_idx")).unwrap(),
        "team_idx"
    );
    let mut err = |d: IndexDef| w.clone_err(d);
    assert_eq!(err(IndexDef::new("Nope", &[], IndexKind::Bitmap)), "unknown component 'Nope'");
    assert_eq!(err(IndexDef::new("Pos", &["q"], IndexKind::Btree)), "component 'Pos' has no field 'q'");
    assert!(err(IndexDef::new("Team", &[], IndexKind::Rtree)).contains("vector-like"));
    assert!(err(IndexDef::new("Dir", &["v"], IndexKind::Btree)).contains("use rtree"));
    assert!(err(IndexDef::new("Dir", &[], IndexKind::Rtree)).contains("vector-like"));
    assert!(err(IndexDef::new("Pos", &["x", "y"], IndexKind::Bitmap)).contains("one field"));
    assert!(err(IndexDef::new("Pos", &["x", "x"], IndexKind::Rtree)).contains("twice"));
    assert!(err(IndexDef::new("Pos", &[], IndexKind::Btree)).contains("one field"));
    assert!(err(IndexDef::new("Pos", &[], IndexKind::Function)).contains("create_function_index"));
    assert_eq!(
        err(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("team_idx")),
        "index 'team_idx' already exists"
    );
    assert!(
        err(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("bad name")).contains("not a valid index name")
    );
    let defs = w.index_definitions();
    assert_eq!(defs.len(), 6);
    assert_eq!(defs[0], IndexDef::new("Pos", &["x", "y", "z"], IndexKind::Rtree).named("Pos_x_y_z_rtree"));
    w.drop_index("Pos_x_y_rtree").unwrap();
    assert!(w.drop_index("Pos_x_y_rtree").is_err());
    assert_eq!(w.indexes().len(), 5);
    let team = w.component_id("Team").unwrap();
    assert_eq!(w.indexes_on(team).iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["Team_id_btree", "team_idx"]);
}

impl World {
    fn clone_err(&mut self, d: IndexDef) -> String {
        self.create_index(d).unwrap_err().to_string()
    }
}

#[test]
fn a_deferred_index_is_checked_now_and_built_at_the_first_read() {
    let mut w = World::new();
    let a = w.spawn(Team { id: 1 });
    assert!(w.create_index_deferred(IndexDef::new("Team", &["nope"], IndexKind::Bitmap)).is_err());
    let tb = w.create_index_deferred(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
    // Listing the definitions (as a save does) does not build it...
    assert_eq!(w.snapshot_index_definitions().len(), 1);
    assert_eq!(w.indexes.read().find(&tb).map(|s| (s.needs_rebuild, s.entries())), Some((true, 0)));
    // ... rows written before the first read are in it, and removals on the way do no harm.
    let b = w.spawn(Team { id: 1 });
    let c = w.spawn(Team { id: 1 });
    w.despawn(c).unwrap();
    assert_eq!(set(&w, &tb, &IndexPredicate::Eq(Value::Int(1))), [a.index(), b.index()]);
    assert_eq!(w.index_info(&tb).map(|i| i.entries), Some(2));
}

/// After a first refresh arms the columns' write logs, refreshes take the rows the logs
/// name: a row written and then moved by a removal (the last row filling the hole, one
/// by one or in bulk) must still reach the index, as must rows appended and rows written
/// through paths the logs cannot follow.
#[test]
fn written_rows_reach_the_index_through_the_write_logs() {
    let mut w = World::new();
    let es: Vec<Entity> = (0..40).map(|i| w.spawn(Team { id: (i % 4) as u8 })).collect();
    let tb = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree)).unwrap();
    let team = |w: &World, t: i64| set(w, &tb, &IndexPredicate::Eq(Value::Int(t)));
    let scan = |w: &World, t: u8| {
        let mut v: Vec<u32> =
            es.iter().filter(|e| w.get::<Team>(**e).is_ok_and(|x| x.id == t)).map(|e| e.index()).collect();
        v.sort_unstable();
        v
    };
    w.refresh_indexes();
    // The last row is written, then a removal moves it into the hole.
    w.get_mut::<Team>(es[39]).unwrap().id = 9;
    w.despawn(es[0]).unwrap();
    assert_eq!(team(&w, 9), scan(&w, 9));
    // The same in bulk: rows near the end are written, then many rows go at once.
    for &e in &es[35..39] {
        w.get_mut::<Team>(e).unwrap().id = 8;
    }
    let gone: Vec<Entity> = es[1..20].to_vec();
    w.despawn_many(&gone).unwrap();
    assert_eq!(team(&w, 8), scan(&w, 8));
    // Written rows that move to another table, appended rows, and a query's writes.
    w.get_mut::<Team>(es[30]).unwrap().id = 7;
    w.insert(es[30], Frozen).unwrap();
    let fresh = w.spawn(Team { id: 7 });
    let mut want = scan(&w, 7);
    want.push(fresh.index());
    want.sort_unstable();
    assert_eq!(team(&w, 7), want);
    for mut t in w.query_mut::<&mut Team>() {
        t.id = 6;
    }
    assert_eq!(team(&w, 6).len(), w.component_count(w.component_id("Team").unwrap()));
}

#[test]
fn every_write_path_reaches_the_indexes() {
    let mut w = World::new();
    let a = w.spawn((Pos { x: 0.0, y: 0.0, z: 0.0 }, Team { id: 1 }));
    let b = w.spawn((Pos { x: 5.0, y: 0.0, z: 0.0 }, Team { id: 2 }, Hp { v: 3.0 }));
    let rt = w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap();
    let tb = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
    let hp = w.create_index(IndexDef::new("Hp", &["v"], IndexKind::Btree)).unwrap();
    w.register::<Frozen>().unwrap();
    let fr = w.create_index(IndexDef::new("Frozen", &[], IndexKind::Bitmap)).unwrap();
    let near = |x: f64| IndexPredicate::WithinRadius { center: vec![x, 0.0, 0.0], radius: 1.0, inclusive: true };
    let team = |t: i64| IndexPredicate::Eq(Value::Int(t));
    assert_eq!(set(&w, &rt, &near(5.0)), [b.index()]);
    // get_mut
    w.get_mut::<Pos>(a).unwrap().x = 5.5;
    assert_eq!(set(&w, &rt, &near(5.0)), [a.index(), b.index()]);
    // query_mut with Mut writes
    for mut p in w.query_mut::<&mut Pos>() {
        p.x += 100.0;
    }
    assert_eq!(set(&w, &rt, &near(105.0)), [a.index(), b.index()]);
    // dynamic set_fields
    w.set_fields(b, "Team", &[("id", Value::Int(1))]).unwrap();
    assert_eq!(set(&w, &tb, &team(1)), [a.index(), b.index()]);
    // insert overwriting, insert adding (table move keeps ticks), sparse insert
    w.insert(a, (Team { id: 3 }, Frozen, Hp { v: 9.0 })).unwrap();
    assert_eq!(set(&w, &tb, &team(3)), [a.index()]);
    assert_eq!(set(&w, &fr, &IndexPredicate::Present), [a.index()]);
    assert_eq!(set(&w, &hp, &IndexPredicate::between(5, 10)), [a.index()]);
    assert_eq!(set(&w, &rt, &near(105.5)), [a.index(), b.index()]);
    // remove, remove_component, despawn
    w.remove::<(Frozen,)>(a).unwrap();
    assert!(set(&w, &fr, &IndexPredicate::Present).is_empty());
    w.remove_component(b, "Hp").unwrap();
    assert_eq!(set(&w, &hp, &IndexPredicate::Present), [a.index()]);
    w.despawn(a).unwrap();
    assert_eq!(set(&w, &rt, &IndexPredicate::Present), [b.index()]);
    // command buffers, spawn_values, insert_values; the index of `a` is recycled
    let mut cmd = CommandBuffer::new();
    cmd.spawn((Pos { x: 7.0, y: 0.0, z: 0.0 }, Team { id: 2 }));
    cmd.despawn(b);
    let spawned = cmd.apply(&mut w).spawned;
    assert_eq!(set(&w, &rt, &near(7.0)), [spawned[0].index()]);
    let c = w.spawn_values(&[("Team", &[("id", Value::Int(2))])]).unwrap();
    w.insert_values(c, &[("Pos", &[("x", Value::Float(7.5))])]).unwrap();
    assert_eq!(set(&w, &rt, &near(7.0)), [spawned[0].index(), c.index()]);
    assert_eq!(set(&w, &tb, &team(2)), [spawned[0].index(), c.index()]);
    // clear bypasses the removal hook: the count check rebuilds
    w.clear();
    assert!(set(&w, &rt, &IndexPredicate::Present).is_empty());
    assert!(set(&w, &tb, &IndexPredicate::NotEq(Value::Int(9))).is_empty());
    let info = w.index_info(&rt).unwrap();
    assert_eq!((info.entries, info.kind), (0, IndexKind::Rtree));
}

#[test]
fn function_indexes_reevaluate_only_changed_rows() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let mut w = World::new();
    let es: Vec<Entity> = (0..100).map(|i| w.spawn(Pos { x: i as f32, y: 0.0, z: 0.0 })).collect();
    w.create_function_index("far", "Pos", |v: &Value| {
        CALLS.fetch_add(1, Ordering::Relaxed);
        matches!(v, Value::Object(f) if f[0].1.as_f64().is_some_and(|x| x >= 50.0))
    })
    .unwrap();
    assert_eq!(CALLS.load(Ordering::Relaxed), 100);
    let far = IndexPredicate::Function { name: "far".into() };
    assert_eq!(set(&w, "far", &far).len(), 50);
    assert_eq!(CALLS.load(Ordering::Relaxed), 100);
    w.get_mut::<Pos>(es[0]).unwrap().x = 60.0;
    w.get_mut::<Pos>(es[99]).unwrap().x = 0.0;
    assert_eq!(set(&w, "far", &far).len(), 50);
    assert_eq!(CALLS.load(Ordering::Relaxed), 102);
    let f = w.index_function("far").unwrap();
    assert_eq!(f.eval(&w, es[0]).unwrap(), Some(true));
    assert_eq!(f.eval(&w, es[99]).unwrap(), Some(false));
    let lone = w.spawn(Team { id: 0 });
    assert_eq!(f.eval(&w, lone).unwrap(), None);
    w.despawn(lone).unwrap();
    assert!(f.eval(&w, lone).is_err());
    assert!(w.create_function_index("far", "Pos", |_| true).is_err());
    assert_eq!(w.index_definitions()[0].kind, IndexKind::Function);
    // Typed: works on opaque-free Rust types through the world.
    w.create_function_index_typed("low_team", |t: &Team| t.id < 2).unwrap();
    let t = w.spawn(Team { id: 1 });
    assert_eq!(set(&w, "low_team", &IndexPredicate::Function { name: "low_team".into() }), [t.index()]);
}

#[test]
fn unreadable_rows_make_the_index_decline() {
    let mut w = World::new();
    let a = w.spawn(Big { v: 5 });
    let b = w.spawn(Big { v: u64::MAX });
    let name = w.create_index(IndexDef::new("Big", &["v"], IndexKind::Btree)).unwrap();
    assert!(w.index_estimate(&name, &IndexPredicate::Eq(Value::Int(5))).unwrap().is_none());
    assert_eq!(set(&w, &name, &IndexPredicate::Present), [a.index(), b.index()]);
    w.get_mut::<Big>(b).unwrap().v = 7;
    assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(7))), [b.index()]);
    assert!(w.index_answer("nope", &IndexPredicate::Present).is_err());
}

#[test]
fn readers_nest_and_never_go_stale() {
    let mut w = World::new();
    let a = w.spawn(Team { id: 1 });
    let name = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree)).unwrap();
    let r1 = w.index_reader();
    let r2 = w.index_reader(); // nested on one thread: no deadlock
    let o = IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending: false, limit: None };
    let IndexAnswer::Ordered(it) = r2.answer(&name, &o).unwrap() else { panic!() };
    assert_eq!(it.collect::<Vec<_>>(), [a.index()]);
    drop((r1, r2));
    w.get_mut::<Team>(a).unwrap().id = 4;
    w.refresh_indexes();
    assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(4))), [a.index()]);
    std::thread::scope(|s| {
        let (w, name) = (&w, &name);
        for _ in 0..4 {
            s.spawn(move || assert_eq!(set(w, name, &IndexPredicate::Eq(Value::Int(4))).len(), 1));
        }
    });
}

#[test]
fn a_reader_after_no_write_refreshes_nothing_and_takes_no_tick() {
    let mut w = World::new();
    let a = w.spawn(Team { id: 1 });
    let name = w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)).unwrap();
    drop(w.index_reader());
    let tick = w.change_tick_wide();
    {
        let r1 = w.index_reader_for(Wanted::One(&name));
        let r2 = w.index_reader_for(Wanted::One(&name));
        assert_eq!(r2.estimate(&name, &IndexPredicate::Eq(Value::Int(1))).unwrap().rows, 1);
        drop((r1, r2));
    }
    assert_eq!(w.change_tick_wide(), tick, "nothing to refresh, so no tick taken");
    // A write is caught up by the next reader, and a despawn reaches the index too.
    w.get_mut::<Team>(a).unwrap().id = 2;
    assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(2))), [a.index()]);
    assert_ne!(w.change_tick_wide(), tick);
    w.despawn(a).unwrap();
    assert_eq!(set(&w, &name, &IndexPredicate::Eq(Value::Int(2))), Vec::<u32>::new());
}

#[test]
fn an_id_that_no_longer_fits_finds_the_index_by_name() {
    let mut w = World::new();
    w.spawn(Team { id: 1 });
    w.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("x")).unwrap();
    w.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree).named("t")).unwrap();
    let id = w.index_id("t").unwrap();
    let one = IndexPredicate::Eq(Value::Int(1));
    assert_eq!(w.index_reader().info(IndexRef::found("t", id)).unwrap().kind, IndexKind::Btree);
    // "x" dropped: "t" moved to the first position, where the id no longer points.
    w.drop_index("x").unwrap();
    assert_ne!(w.index_id("t"), Some(id));
    let r = w.index_reader();
    assert_eq!(r.info(IndexRef::found("t", id)).unwrap().kind, IndexKind::Btree);
    assert_eq!(r.estimate(IndexRef::found("t", id), &one).unwrap().rows, 1);
    drop(r);
    // Another world with an index in the same place: its serial differs, so the name
    // decides (here: no such index there).
    let mut other = World::new();
    other.spawn(Team { id: 1 });
    other.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap).named("u")).unwrap();
    let fresh = w.index_id("t").unwrap();
    assert!(other.index_reader().estimate(IndexRef::found("t", fresh), &one).is_none());
    assert_eq!(w.index_reader().estimate(IndexRef::found("t", fresh), &one).unwrap().rows, 1);
}

#[test]
fn rtree_update_modes_can_be_switched() {
    let mut w = World::new();
    let es: Vec<Entity> = (0..50).map(|i| w.spawn(Pos { x: i as f32, y: 0.0, z: 0.0 })).collect();
    let rt = w.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)).unwrap();
    for mode in [RtreeUpdate::PerRow, RtreeUpdate::Rebuild, RtreeUpdate::Loose] {
        w.set_rtree_update(&rt, mode).unwrap();
        w.get_mut::<Pos>(es[3]).unwrap().x += 0.25;
        let near = IndexPredicate::Nearest { point: vec![2.9, 0.0, 0.0], k: 2 };
        assert_eq!(set(&w, &rt, &near), [es[3].index(), es[2].index()]);
    }
    assert!(w.set_rtree_update("nope", RtreeUpdate::Loose).is_err());
}
