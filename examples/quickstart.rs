//! A tour of the engine: spawn a small world, run a system, query it by type and by name.
use ecsdb::{Changed, Component, Entity, QueryState, Value, Without, World};

#[derive(Component, Debug)]
struct Position {
    x: f32,
    y: f32,
}
#[derive(Component)]
struct Velocity {
    x: f32,
    y: f32,
}
#[derive(Component)]
struct Health {
    hp: f32,
}
#[derive(Component)]
struct Frozen;

fn main() {
    let mut world = World::new();
    let start = std::time::Instant::now();
    let n = 100_000;
    world.spawn_batch((0..n).map(|i| {
        let f = i as f32;
        (Position { x: f, y: -f }, Velocity { x: 1.0, y: 0.5 }, Health { hp: (i % 100) as f32 })
    }));
    for e in world.query_filtered::<Entity, ecsdb::With<Health>>().step_by(10).collect::<Vec<_>>() {
        world.insert(e, Frozen).unwrap();
    }
    println!("spawned {n} entities in {:?}", start.elapsed());

    let mut moved: QueryState<&Position, Changed<Position>> = world.query_state();
    moved.iter(&world).count(); // everything is new on the first run

    let start = std::time::Instant::now();
    let mut movement: QueryState<(&mut Position, &Velocity), Without<Frozen>> = world.query_state();
    for _ in 0..10 {
        movement.for_each_mut(&mut world, |(mut p, v)| {
            p.x += v.x;
            p.y += v.y;
        });
    }
    println!("10 movement ticks in {:?}", start.elapsed());
    println!("{} positions changed since the last look", moved.iter(&world).count());

    let low: Vec<Entity> = world.query::<(Entity, &Health)>().filter(|(_, h)| h.hp < 2.0).map(|(e, _)| e).collect();
    println!("{} entities with hp < 2; the first one:", low.len());
    let e = low[0];
    for info in world.components().iter() {
        if world.has_component(e, info.id()).unwrap() {
            match world.get_component_value(e, info.id()) {
                Ok(v) => println!("  {} {}", info.name(), v),
                Err(err) => println!("  {} ({err})", info.name()),
            }
        }
    }
    assert!(matches!(world.get_field(e, "Health", "hp"), Ok(Value::Float(_))));
    let m = world.memory_usage();
    println!(
        "memory: {} bytes of components, {:.1} bytes per entity of bookkeeping",
        m.component_bytes,
        m.overhead_per_entity()
    );
}
