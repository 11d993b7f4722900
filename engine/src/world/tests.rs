use super::*;
use crate::component::FieldType;
use crate::query::{Added, Changed, Or, QueryState, With, Without};
use std::rc::Rc;

#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Pos {
    x: f32,
    y: f32,
}
#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
struct Vel {
    x: f32,
    y: f32,
}
#[derive(crate::Component, Debug, PartialEq, Clone)]
struct Name {
    value: String,
}
#[derive(crate::Component, Debug, PartialEq)]
struct Frozen;
#[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Marked {
    n: i32,
}
#[derive(crate::Component)]
#[component(opaque)]
struct Blob(#[allow(dead_code)] Vec<u8>);
#[derive(crate::Component)]
#[component(opaque)]
struct Counted(#[allow(dead_code)] Rc<()>);
// SAFETY: (test only) the Rc is never shared across threads in these tests.
unsafe impl Send for Counted {}
// SAFETY: as above.
unsafe impl Sync for Counted {}

#[test]
fn spawn_get_despawn_and_stale_handles() {
    let mut w = World::new();
    let a = w.spawn((Pos { x: 1.0, y: 2.0 }, Vel { x: 0.0, y: 0.0 }));
    let b = w.spawn(Pos { x: 3.0, y: 4.0 });
    assert_eq!(w.len(), 2);
    assert_eq!(w.get::<Pos>(a).unwrap(), &Pos { x: 1.0, y: 2.0 });
    assert!(w.get::<Vel>(b).is_err());
    w.despawn(a).unwrap();
    assert_eq!(w.despawn(a), Err(EngineError::StaleEntity(a)));
    assert_eq!(w.get::<Pos>(a).unwrap_err().to_string(), format!("stale entity {a}"));
    let c = w.spawn(Pos { x: 9.0, y: 9.0 });
    assert_eq!(c.index(), a.index());
    assert_ne!(c, a);
    assert!(w.get::<Pos>(a).is_err(), "stale handle must not reach the recycled slot");
    assert_eq!(w.get::<Pos>(b).unwrap().x, 3.0, "swap-remove kept b's location right");
    assert!(w.insert(a, Frozen).is_err());
    assert!(w.set_fields(a, "Pos", &[("x", Value::Float(1.0))]).is_err());
    let never = Entity::from_parts(999, 0);
    assert!(w.get::<Pos>(never).is_err() && !w.is_alive(never));
}

#[test]
fn insert_remove_move_between_tables() {
    let mut w = World::new();
    let es: Vec<_> = (0..10).map(|i| w.spawn(Pos { x: i as f32, y: 0.0 })).collect();
    for &e in &es[..5] {
        w.insert(e, (Vel { x: 1.0, y: 1.0 }, Frozen)).unwrap();
    }
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(w.get::<Pos>(e).unwrap().x, i as f32);
        assert_eq!(w.has::<Frozen>(e).unwrap(), i < 5);
    }
    let (v, f) = w.remove::<(Vel, Frozen)>(es[2]).unwrap();
    assert_eq!((v, f), (Vel { x: 1.0, y: 1.0 }, Frozen));
    assert!(w.remove::<(Vel,)>(es[2]).is_err());
    // overwrite in place
    w.insert(es[0], Vel { x: 7.0, y: 7.0 }).unwrap();
    assert_eq!(w.get::<Vel>(es[0]).unwrap().x, 7.0);
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(w.get::<Pos>(e).unwrap().x, i as f32);
    }
    assert_eq!(w.query::<&Pos>().count(), 10);
    assert_eq!(w.query::<(&Pos, &Vel)>().count(), 4);
}

#[test]
fn failed_remove_changes_nothing() {
    let mut w = World::new();
    let e = w.spawn((Pos { x: 1.0, y: 1.0 }, Marked { n: 3 }));
    assert!(w.remove::<(Marked, Vel)>(e).is_err());
    assert_eq!(w.get::<Marked>(e).unwrap().n, 3);
    assert_eq!(w.get::<Pos>(e).unwrap().x, 1.0);
}

#[test]
fn strings_and_drops_are_exact() {
    let rc = Rc::new(());
    {
        let mut w = World::new();
        let mut es = Vec::new();
        for i in 0..50 {
            es.push(w.spawn((Name { value: format!("n{i}") }, Counted(rc.clone()))));
        }
        assert_eq!(Rc::strong_count(&rc), 51);
        for e in es.iter().step_by(2) {
            w.despawn(*e).unwrap();
        }
        assert_eq!(Rc::strong_count(&rc), 26);
        for e in es.iter().skip(1).step_by(4) {
            w.insert(*e, Frozen).unwrap();
        }
        let c = w.remove::<Counted>(es[1]).unwrap();
        drop(c);
        assert_eq!(Rc::strong_count(&rc), 25);
        assert_eq!(w.get::<Name>(es[3]).unwrap().value, "n3");
    }
    assert_eq!(Rc::strong_count(&rc), 1);
}

#[test]
fn sparse_components_do_not_move_entities() {
    let mut w = World::new();
    let e = w.spawn(Pos { x: 0.0, y: 0.0 });
    let loc = w.location(e).unwrap();
    w.insert(e, Marked { n: 1 }).unwrap();
    assert_eq!(w.location(e).unwrap(), loc);
    assert_eq!(w.get::<Marked>(e).unwrap().n, 1);
    w.get_mut::<Marked>(e).unwrap().n = 5;
    assert_eq!(w.get_field(e, "Marked", "n").unwrap(), Value::Int(5));
    assert_eq!(w.query::<(&Pos, &Marked)>().count(), 1);
    assert_eq!(w.query_filtered::<&Pos, Without<Marked>>().count(), 0);
    assert_eq!(w.remove::<Marked>(e).unwrap().n, 5);
    assert_eq!(w.location(e).unwrap(), loc);
    assert_eq!(w.query::<(&Pos, &Marked)>().count(), 0);
    assert_eq!(w.query_filtered::<&Pos, With<Marked>>().count(), 0);
}

#[test]
fn dynamic_components_and_fields() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F32), ("name", FieldType::String)])).unwrap();
    w.define_component(&ComponentDef::new("Tagged", &[]).sparse()).unwrap();
    let e = w.spawn_values(&[("Health", &[("hp", Value::Int(10))]), ("Tagged", &[])]).unwrap();
    assert_eq!(w.get_field(e, "Health", "hp").unwrap(), Value::Float(10.0));
    assert_eq!(w.get_field(e, "Health", "name").unwrap(), Value::Str(String::new()));
    w.set_fields(e, "Health", &[("hp", Value::Float(3.0)), ("name", Value::Str("orc".into()))]).unwrap();
    let id = w.component_id("Health").unwrap();
    assert_eq!(
        w.get_component_value(e, id).unwrap(),
        Value::Object(vec![("hp".into(), Value::Float(3.0)), ("name".into(), Value::Str("orc".into()))])
    );
    // errors, each leaving the value unchanged
    let before = w.get_component_value(e, id).unwrap();
    assert!(matches!(
        w.set_fields(e, "Health", &[("hp", Value::Str("x".into()))]),
        Err(EngineError::TypeMismatch { .. })
    ));
    assert!(matches!(
        w.set_fields(e, "Health", &[("name", Value::Str("new".into())), ("hq", Value::Int(1))]),
        Err(EngineError::UnknownField { .. })
    ));
    assert!(matches!(
        w.set_fields(e, "Health", &[("hp", Value::Int(1)), ("hp", Value::Int(2))]),
        Err(EngineError::DuplicateField { .. })
    ));
    assert!(matches!(w.set_fields(e, "Helth", &[]), Err(EngineError::UnknownComponent(_))));
    assert_eq!(w.get_component_value(e, id).unwrap(), before);
    // Rust components are writable by name too
    let p = w.spawn(Pos { x: 1.0, y: 1.0 });
    w.set_fields(p, "Pos", &[("y", Value::Int(4))]).unwrap();
    assert_eq!(w.get::<Pos>(p).unwrap(), &Pos { x: 1.0, y: 4.0 });
    // opaque components are not
    let b = w.spawn(Blob(vec![1]));
    assert!(matches!(w.get_field(b, "Blob", "0"), Err(EngineError::Opaque(_))));
    // insert_values overwrites wholesale and is atomic across components
    assert!(w.insert_values(e, &[("Tagged", &[]), ("Health", &[("bogus", Value::Int(1))])]).is_err());
    assert_eq!(w.get_component_value(e, id).unwrap(), before);
    w.insert_values(p, &[("Health", &[("hp", Value::Int(2))])]).unwrap();
    assert_eq!(w.get::<Pos>(p).unwrap(), &Pos { x: 1.0, y: 4.0 });
    assert_eq!(w.get_field(p, "Health", "hp").unwrap(), Value::Float(2.0));
    assert!(w.remove_component(p, "Health").unwrap());
    assert!(!w.remove_component(p, "Health").unwrap());
}

#[test]
fn runtime_and_rust_components_agree_by_name() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("Pos", &[("x", FieldType::F32), ("y", FieldType::F32)])).unwrap();
    let e = w.spawn_values(&[("Pos", &[("x", Value::Float(2.0))])]).unwrap();
    // A Rust type with the same schema and layout adopts the run-time component.
    w.register::<Pos>().unwrap();
    assert_eq!(w.get::<Pos>(e).unwrap(), &Pos { x: 2.0, y: 0.0 });
    let mut w2 = World::new();
    w2.define_component(&ComponentDef::new("Vel", &[("x", FieldType::F64)])).unwrap();
    let err = w2.register::<Vel>().unwrap_err();
    assert!(err.to_string().contains("Vel"), "{err}");
}

#[test]
fn change_ticks_track_every_write_path() {
    let mut w = World::new();
    let mut changed: QueryState<Entity, Changed<Pos>> = w.query_state();
    let mut added: QueryState<Entity, Added<Pos>> = w.query_state();
    let a = w.spawn(Pos { x: 0.0, y: 0.0 });
    let b = w.spawn(Pos { x: 0.0, y: 0.0 });
    assert_eq!(changed.iter(&w).count(), 2);
    assert_eq!(added.iter(&w).count(), 2);
    assert_eq!(changed.iter(&w).count(), 0);
    // get_mut through the guard
    w.get_mut::<Pos>(a).unwrap().x = 1.0;
    assert_eq!(changed.iter(&w).collect::<Vec<_>>(), vec![a]);
    assert_eq!(added.iter(&w).count(), 0);
    // reading through the guard is not a change
    let _ = w.get_mut::<Pos>(a).unwrap().x;
    assert_eq!(changed.iter(&w).count(), 0);
    // dynamic set
    w.set_fields(b, "Pos", &[("x", Value::Float(2.0))]).unwrap();
    assert_eq!(changed.iter(&w).collect::<Vec<_>>(), vec![b]);
    // typed &mut in a query (only rows written through the guard)
    for (e, mut p) in w.query_mut::<(Entity, &mut Pos)>() {
        if e == a {
            p.y = 3.0;
        }
    }
    assert_eq!(changed.iter(&w).collect::<Vec<_>>(), vec![a]);
    // a table move keeps the ticks
    w.insert(b, Frozen).unwrap();
    assert_eq!(changed.iter(&w).count(), 0);
    // insert overwriting a component marks it
    w.insert(b, Pos { x: 5.0, y: 5.0 }).unwrap();
    assert_eq!(changed.iter(&w).collect::<Vec<_>>(), vec![b]);
}

#[test]
fn query_filters() {
    let mut w = World::new();
    let a = w.spawn((Pos { x: 0.0, y: 0.0 }, Frozen));
    let b = w.spawn((Pos { x: 0.0, y: 0.0 }, Vel { x: 0.0, y: 0.0 }));
    let c = w.spawn(Vel { x: 0.0, y: 0.0 });
    let d = w.spawn(Name { value: "d".into() });
    let sorted = |mut v: Vec<Entity>| {
        v.sort();
        v
    };
    assert_eq!(sorted(w.query_filtered::<Entity, With<Frozen>>().collect()), vec![a]);
    assert_eq!(sorted(w.query_filtered::<Entity, Without<Frozen>>().collect()), vec![b, c, d]);
    assert_eq!(sorted(w.query_filtered::<Entity, Or<(With<Frozen>, With<Vel>)>>().collect()), vec![a, b, c]);
    let opts: Vec<(Entity, Option<&Vel>)> = w.query_filtered::<(Entity, Option<&Vel>), With<Pos>>().collect();
    assert_eq!(opts.len(), 2);
    assert!(opts.iter().any(|(e, v)| *e == a && v.is_none()));
    assert!(opts.iter().any(|(e, v)| *e == b && v.is_some()));
}

#[test]
fn aliasing_mut_access_is_rejected() {
    let mut w = World::new();
    assert!(matches!(QueryState::<(&mut Pos, &mut Pos)>::try_new(&mut w), Err(EngineError::AliasedAccess(_))));
    assert!(matches!(QueryState::<(&mut Pos, &Pos)>::try_new(&mut w), Err(EngineError::AliasedAccess(_))));
    assert!(QueryState::<(&Pos, &Pos)>::try_new(&mut w).is_ok());
}

#[test]
fn prepared_state_picks_up_new_tables() {
    let mut w = World::new();
    w.spawn(Pos { x: 1.0, y: 0.0 });
    let mut q: QueryState<&Pos> = w.query_state();
    assert_eq!(q.iter(&w).count(), 1);
    w.spawn((Pos { x: 1.0, y: 0.0 }, Frozen));
    w.spawn((Pos { x: 1.0, y: 0.0 }, Name { value: String::new() }));
    assert_eq!(q.iter(&w).count(), 3);
    assert_eq!(q.matched_tables().len(), 3);
    let mut n = 0;
    q.for_each(&w, |_| n += 1);
    assert_eq!(n, 3);
}

#[test]
fn par_for_each_visits_every_row_once() {
    let mut w = World::new();
    for i in 0..1000 {
        if i % 3 == 0 {
            w.spawn((Pos { x: i as f32, y: 0.0 }, Frozen));
        } else {
            w.spawn(Pos { x: i as f32, y: 0.0 });
        }
    }
    let mut q: QueryState<&mut Pos> = w.query_state();
    q.par_for_each_mut(&mut w, |mut p| p.y += 1.0);
    assert!(w.query::<&Pos>().all(|p| p.y == 1.0));
    // sparse writers fall back to sequential but still work
    let es: Vec<Entity> = w.query::<Entity>().take(10).collect();
    for e in es {
        w.insert(e, Marked { n: 0 }).unwrap();
    }
    let mut q2: QueryState<&mut Marked> = w.query_state();
    q2.par_for_each_mut(&mut w, |mut m| m.n += 1);
    assert_eq!(w.query::<&Marked>().map(|m| m.n).sum::<i32>(), 10);
}

#[test]
fn generation_exhaustion_retires_index() {
    let mut w = World::new();
    let e = w.spawn(Frozen);
    w.entities.set_generation(e.index(), u32::MAX);
    let e = Entity::from_parts(e.index(), u32::MAX);
    w.despawn(e).unwrap();
    let f = w.spawn(Frozen);
    assert_ne!(f.index(), e.index());
    assert_eq!(w.entities().retired(), 1);
}

#[test]
fn memory_usage_reports_overhead() {
    let mut w = World::new();
    w.spawn_batch((0..1000).map(|i| (Pos { x: i as f32, y: 0.0 }, Vel { x: 0.0, y: 0.0 })));
    let m = w.memory_usage();
    assert_eq!(m.entities, 1000);
    assert!(m.component_bytes >= 1000 * 16);
    assert!(m.overhead_per_entity() >= 20.0);
}

#[test]
fn change_detection_survives_tick_wraparound() {
    let mut w = World::new();
    let old = w.spawn((Pos { x: 0.0, y: 0.0 }, Marked { n: 0 }));
    let mut added: QueryState<Entity, Added<Pos>> = w.query_state();
    type EitherChanged = Or<(Changed<Pos>, Changed<Marked>)>;
    let mut changed: QueryState<Entity, EitherChanged> = w.query_state();
    let mut stale: QueryState<Entity, Changed<Pos>> = w.query_state();
    assert_eq!(added.iter(&w).count(), 1);
    assert_eq!(changed.iter(&w).count(), 1);
    assert_eq!(stale.iter(&w).count(), 1);
    // Far into the history, in hops shorter than the largest age: `old`'s ticks get clamped
    // on the way, and the counter's low 32 bits stop just short of wrapping.
    let hop = (u32::MAX as u64 - 12) / 4;
    for _ in 0..4 {
        w.advance_change_tick(hop);
        assert_eq!(added.iter(&w).count(), 0, "a clamped row is still older than a recent run");
        assert_eq!(changed.iter(&w).count(), 0);
    }
    assert!(w.change_tick() > u32::MAX - 20);
    let mut ents = vec![old];
    // Under Miri a few steps still cross the wrap.
    let steps: u32 = crate::test_size(80, 12);
    for step in 0..steps {
        // Every step: one spawn, one write of an older entity, and runs that take ticks.
        let e = w.spawn((Pos { x: step as f32, y: 0.0 }, Marked { n: step as i32 }));
        ents.push(e);
        let target = ents[(step as usize * 7) % ents.len()];
        w.get_mut::<Pos>(target).unwrap().x += 1.0;
        if step % 3 == 0 {
            w.get_mut::<Marked>(e).unwrap().n += 1;
        }
        let new: Vec<Entity> = added.iter(&w).collect();
        assert_eq!(new, [e], "step {step} (tick {})", w.change_tick());
        let mut moved: Vec<Entity> = changed.iter(&w).collect();
        moved.sort();
        let mut want = vec![e];
        if target != e {
            want.push(target);
        }
        want.sort();
        assert_eq!(moved, want, "step {step}");
        // A one-shot read sees every row as new.
        assert_eq!(w.query_filtered::<Entity, Changed<Pos>>().count(), ents.len());
        for _ in 0..step % 4 {
            w.read_change_tick();
        }
    }
    assert!(w.change_tick() < 1000, "the counter wrapped");
    // A query last run before the jump is older than any tick can tell: it sees everything.
    assert_eq!(stale.iter(&w).count(), ents.len());
    assert_eq!(stale.iter(&w).count(), 0);
    // Mutable runs stamp the wrapped tick and are seen exactly.
    let mut writes: QueryState<&mut Pos, With<Marked>> = w.query_state();
    writes.iter_mut(&mut w).take(3).for_each(|mut p| p.x = -1.0);
    assert_eq!(changed.iter(&w).count(), 3);
    assert_eq!(changed.iter(&w).count(), 0);
}
