//! Typed queries whose items outlive the loop: the aliasing patterns Miri checks.

use crate::Entity;
use crate::query::{Changed, QueryState, With};
use crate::world::World;

#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Pos {
    x: f32,
}
#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Tag2;
#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Hp {
    v: f32,
}
#[derive(crate::Component, Debug, PartialEq, Clone)]
#[component(storage = "sparse")]
struct Label {
    s: String,
}

/// Entities spread over two tables, every third one with sparse components.
fn world() -> (World, Vec<Entity>) {
    let mut w = World::new();
    let mut es = Vec::new();
    for i in 0..12 {
        let e = if i % 2 == 0 { w.spawn(Pos { x: i as f32 }) } else { w.spawn((Pos { x: i as f32 }, Tag2)) };
        if i % 3 == 0 {
            w.insert(e, (Hp { v: i as f32 }, Label { s: format!("l{i}") })).unwrap();
        }
        es.push(e);
    }
    (w, es)
}

#[test]
fn sparse_items_collected_then_written() {
    let (mut w, es) = world();
    let items: Vec<_> = w.query_mut::<&mut Hp>().collect();
    assert_eq!(items.len(), 4);
    for mut h in items {
        h.v += 1.0;
    }
    let labels: Vec<_> = w.query_mut::<(Entity, &mut Label, &Hp)>().collect();
    for (_, mut l, h) in labels {
        l.s.push_str(&h.v.to_string());
    }
    assert_eq!(w.get::<Hp>(es[3]).unwrap().v, 4.0);
    assert_eq!(w.get::<Label>(es[9]).unwrap().s, "l910");
}

#[test]
fn dense_items_collected_then_written_across_tables() {
    let (mut w, es) = world();
    let items: Vec<_> = w.query_mut::<(&mut Pos, Option<&mut Hp>)>().collect();
    assert_eq!(items.len(), 12);
    for (mut p, h) in items {
        p.x *= 2.0;
        if let Some(mut h) = h {
            h.v = -h.v;
        }
    }
    assert_eq!(w.get::<Pos>(es[5]).unwrap().x, 10.0);
    assert_eq!(w.get::<Hp>(es[6]).unwrap().v, -6.0);
}

#[test]
fn a_query_in_chosen_tables_writes_only_there() {
    let (mut w, es) = world();
    let tagged = crate::storage::TableId(w.location(es[1]).unwrap().table);
    // Items collected, then written: the state is the query's own box, freed on drop.
    let items: Vec<_> =
        w.query_in_tables_mut::<(Entity, &mut Pos)>(&[tagged, crate::storage::TableId(9999)]).unwrap().collect();
    assert_eq!(items.len(), 6, "only the tagged table's rows");
    for (_, mut p) in items {
        p.x += 100.0;
    }
    for (i, e) in es.iter().enumerate() {
        let want = if i % 2 == 1 { i as f32 + 100.0 } else { i as f32 };
        assert_eq!(w.get::<Pos>(*e).unwrap().x, want);
    }
    // The writes are changes that a change filter sees.
    let mut changed = QueryState::<Entity, Changed<Pos>>::new(&mut w);
    assert_eq!(changed.iter(&w).count(), 12, "the first run sees every row");
    w.query_in_tables_mut::<&mut Pos>(&[tagged]).unwrap().for_each(|mut p| p.x += 1.0);
    assert_eq!(changed.iter(&w).count(), 6);
    // Aliased access is an error, not a panic.
    assert!(w.query_in_tables_mut::<(&mut Pos, &mut Pos)>(&[tagged]).is_err());
}

#[test]
fn change_filters_beside_collected_writers() {
    let (mut w, es) = world();
    let mut changed: QueryState<&mut Hp, Changed<Hp>> = w.query_state();
    assert_eq!(changed.iter_mut(&mut w).count(), 4);
    w.get_mut::<Hp>(es[3]).unwrap().v = 30.0;
    w.get_mut::<Pos>(es[2]).unwrap().x = 20.0;
    let items: Vec<_> = changed.iter_mut(&mut w).collect();
    assert_eq!(items.len(), 1);
    for mut h in items {
        h.v += 1.0;
    }
    type Moved = QueryState<(&'static mut Pos, Option<&'static Hp>), (Changed<Pos>, With<Tag2>)>;
    let mut pos: Moved = w.query_state();
    let all: Vec<_> = pos.iter_mut(&mut w).collect();
    assert_eq!(all.len(), 6);
    for (mut p, _) in all {
        p.x += 0.5;
    }
    assert_eq!(pos.iter_mut(&mut w).count(), 0);
    assert_eq!(w.get::<Hp>(es[3]).unwrap().v, 31.0);
}

#[test]
fn parallel_writes_visit_each_row_once() {
    let (mut w, _) = world();
    let mut q: QueryState<&mut Pos> = w.query_state();
    q.par_for_each_mut(&mut w, |mut p| p.x += 100.0);
    let mut sum = 0.0;
    w.query::<&Pos>().for_each(|p| sum += p.x);
    assert_eq!(sum, 1200.0 + (0..12).sum::<i32>() as f32);
}

#[test]
fn commands_queued_during_a_query_apply_after_it() {
    let (mut w, es) = world();
    let mut cmd = crate::CommandBuffer::new();
    for (e, h, p) in w.query::<(Entity, &Hp, &Pos)>() {
        if h.v > 3.0 {
            cmd.despawn(e);
        } else {
            cmd.insert(e, Tag2);
            cmd.remove::<Hp>(e);
        }
        cmd.spawn((Pos { x: p.x }, Label { s: "new".into() }));
    }
    cmd.apply(&mut w);
    assert_eq!(w.len(), 12 - 2 + 4);
    assert!(w.get::<Hp>(es[0]).is_err() && w.get::<Tag2>(es[0]).is_ok());
    assert!(!w.is_alive(es[9]));
    assert_eq!(w.query::<&Label>().filter(|l| l.s == "new").count(), 4);
}

#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Tag3;

#[test]
fn one_shot_states_are_kept_and_see_tables_made_later() {
    let (mut w, es) = world();
    assert_eq!(w.query_mut::<&mut Pos>().count(), 12);
    assert_eq!(w.query_filtered_mut::<&mut Pos, With<Tag2>>().count(), 6);
    // The same query type reads through the kept state; a new table is matched on the next call.
    let e = w.spawn((Pos { x: 100.0 }, Tag3));
    let mut seen = Vec::new();
    for (entity, mut p) in w.query_mut::<(Entity, &mut Pos)>() {
        p.x += 1.0;
        seen.push(entity);
    }
    assert_eq!(seen.len(), 13);
    assert!(seen.contains(&e) && seen.contains(&es[11]));
    assert_eq!(w.query_mut::<&mut Pos>().count(), 13);
    assert_eq!(w.query_filtered_mut::<&mut Pos, With<Tag2>>().count(), 6);
    // A read and a write of the same components are different states.
    let sum: f32 = w.query_mut::<&Pos>().map(|p| p.x).sum();
    assert_eq!(sum, (0..12).sum::<i32>() as f32 + 12.0 + 101.0);
    w.query_mut::<&mut Pos>().for_each(|mut p| p.x = 0.0);
    assert!(w.query_mut::<&Pos>().all(|p| p.x == 0.0));
}

#[test]
fn guards_stamp_their_tick_once_written() {
    let (mut w, _) = world();
    let mut changed: QueryState<Entity, Changed<Pos>> = w.query_state();
    assert_eq!(changed.iter(&w).count(), 12);
    let mut written = Vec::new();
    for (i, (e, mut p)) in w.query_mut::<(Entity, &mut Pos)>().enumerate() {
        match i {
            0 => p.x += 1.0,
            1 => assert!(p.x >= 0.0), // read only: no change
            2 => p.set_changed(),
            3 => p.into_inner().x = 5.0,
            4 => {
                let before = p.last_changed();
                p.x = 7.0;
                assert_eq!(p.last_changed(), p.tick);
                assert_ne!(before, p.tick);
            }
            5 => {
                let _ = p.bypass_change_detection();
            }
            _ => continue,
        }
        if i != 1 && i != 5 {
            written.push(e);
        }
    }
    let mut now: Vec<Entity> = changed.iter(&w).collect();
    now.sort();
    written.sort();
    assert_eq!(now, written);
}

/// `for_each` over a prepared query's iterator visits every row once: from the start (each
/// table in one counted loop), and after `next` has begun (the rest, through the cursor).
#[test]
fn for_each_visits_the_rest_once() {
    let (mut w, _) = world();
    let mut q = QueryState::<&mut Pos, ()>::new(&mut w);
    q.iter_mut(&mut w).for_each(|mut p| p.x += 100.0);
    let mut read = QueryState::<&Pos, ()>::new(&mut w);
    let mut xs: Vec<f32> = Vec::new();
    read.iter(&w).for_each(|p| xs.push(p.x));
    xs.sort_by(f32::total_cmp);
    assert_eq!(xs, (0..12).map(|i| i as f32 + 100.0).collect::<Vec<_>>());
    let mut it = q.iter_mut(&mut w);
    let first = it.next().map(|p| p.x);
    let mut rest = 0;
    it.for_each(|mut p| {
        p.x = -1.0;
        rest += 1;
    });
    assert_eq!((first.is_some(), rest), (true, 11));
    let written = read.iter(&w).filter(|p| p.x == -1.0).count();
    assert_eq!(written, 11);
}

#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Vel {
    v: f32,
}

/// A query's columns sit at different positions in different tables (a component added
/// before `Pos` in one table, after it in another, absent in a third): each table's items
/// come from its own columns, through every way of running the query, and through a state
/// that matched the tables before any of their rows existed.
#[test]
fn each_table_reads_its_own_columns() {
    let mut w = World::new();
    let mut prepared: QueryState<(Entity, &mut Pos, Option<&Vel>)> = w.query_state();
    w.spawn(Tag2); // Tag2 registered first: its column comes before Pos's.
    let a = w.spawn((Pos { x: 1.0 }, Vel { v: 10.0 }));
    let b = w.spawn((Tag2, Pos { x: 2.0 }, Vel { v: 20.0 }));
    let c = w.spawn((Tag2, Pos { x: 3.0 }));
    let expect = |w: &mut World, scale: f32| {
        let mut seen: Vec<(Entity, f32, Option<f32>)> =
            w.query_mut::<(Entity, &Pos, Option<&Vel>)>().map(|(e, p, v)| (e, p.x, v.map(|v| v.v))).collect();
        seen.sort_by_key(|s| s.0);
        let mut want = vec![(a, 1.0 * scale, Some(10.0)), (b, 2.0 * scale, Some(20.0)), (c, 3.0 * scale, None)];
        want.sort_by_key(|s| s.0);
        assert_eq!(seen, want);
    };
    expect(&mut w, 1.0);
    let mut vels: Vec<(Entity, Option<f32>)> = Vec::new();
    for (e, mut p, v) in prepared.iter_mut(&mut w) {
        p.x *= 2.0;
        vels.push((e, v.map(|v| v.v)));
    }
    vels.sort_by_key(|v| v.0);
    assert_eq!(vels, [(a, Some(10.0)), (b, Some(20.0)), (c, None)]);
    expect(&mut w, 2.0);
    prepared.for_each_mut(&mut w, |(_, mut p, _)| p.x *= 2.0);
    expect(&mut w, 4.0);
    prepared.par_for_each_mut(&mut w, |(_, mut p, _)| p.x /= 4.0);
    expect(&mut w, 1.0);
    let mut read: QueryState<(&Pos, Option<&Vel>)> = w.query_state();
    assert_eq!(read.get(&w, b).unwrap().map(|(p, v)| (p.x, v.map(|v| v.v))), Some((2.0, Some(20.0))));
    assert_eq!(read.get(&w, c).unwrap().map(|(p, v)| (p.x, v.map(|v| v.v))), Some((3.0, None)));
}
