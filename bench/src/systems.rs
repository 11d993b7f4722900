//! Suite `systems`: the scheduler (issue 13).
//!
//! - `parallel`: 8 independent, compute-heavy text systems (arithmetic and `distance` over a
//!   component of their own) on 1M entities, one tick; `ecsdb` schedules them on the rayon
//!   pool (2 threads here), `ecsdb-sequential` runs the same schedule on one thread.
//! - `overhead`: one tick of 100 systems that match nothing.
//! - `movement`: the demo's movement as a text system (`ecsdb-text`) and as the same Rust
//!   system (`ecsdb-rust`), one tick over 1M entities.
//!
//! - `schedule`: 8 Rust systems, each over a component of its own, in one tick of an ecsdb
//!   schedule (`ecsdb-rust`) and of a bevy_ecs `Schedule` with the multi-threaded executor
//!   (`bevy_ecs`), same data.

use ecsdb::engine::query::QueryIter;
use ecsdb::query::Database;
use ecsdb::query::schedule::SystemContext;
use ecsdb::{Component, Without};

use crate::data::game_world;
use crate::data::typed::{Position, Velocity};
use crate::harness::{Suite, iter};

/// Entities of the `parallel` and `movement` worlds (fewer in debug builds).
const N: usize = if cfg!(debug_assertions) { 20_000 } else { 1_000_000 };

macro_rules! points {
    ($($name:ident),*) => {$(
        #[derive(Component, Clone, Copy)]
        struct $name {
            x: f32,
            y: f32,
            z: f32,
        }
    )*};
}
points!(P0, P1, P2, P3, P4, P5, P6, P7);

#[derive(Component)]
struct Frozen;

/// 8 systems, system `k` over component `Pk` only: independent, so one batch.
fn parallel_world() -> Database {
    let mut db = Database::new();
    let rows = game_world(N);
    db.world_mut().spawn_batch(rows.iter().map(|r| {
        let p = |k: f32| (r.pos[0] + k, r.pos[1] - k, r.pos[2]);
        let (x0, y0, z0) = p(0.0);
        macro_rules! at {
            ($t:ident, $k:expr_2021) => {{
                let (x, y, z) = p($k);
                $t { x, y, z }
            }};
        }
        (
            P0 { x: x0, y: y0, z: z0 },
            at!(P1, 1.0),
            at!(P2, 2.0),
            at!(P3, 3.0),
            at!(P4, 4.0),
            at!(P5, 5.0),
            at!(P6, 6.0),
            at!(P7, 7.0),
        )
    }));
    for k in 0..8 {
        db.execute(
            &format!(
                "CREATE SYSTEM s{k} AS UPDATE P{k} SET \
             x = P{k}.x * 0.999 + distance(P{k}, [1, 2, 3]) * 0.0001, \
             y = P{k}.y * 0.999 - sqrt(abs(P{k}.x * P{k}.z) + 1) * 0.0001, \
             z = min(P{k}.z + $dt, 1000)"
            ),
            (),
        )
        .expect("create system");
    }
    db
}

fn movement_world(text: bool) -> Database {
    let mut db = Database::new();
    let rows = game_world(N);
    for r in &rows {
        let p = Position { x: r.pos[0], y: r.pos[1], z: r.pos[2] };
        let v = Velocity { x: r.vel[0], y: r.vel[1], z: r.vel[2] };
        if r.frozen {
            db.world_mut().spawn((p, v, Frozen));
        } else {
            db.world_mut().spawn((p, v));
        }
    }
    if text {
        db.execute(
            "CREATE SYSTEM movement AS UPDATE Position SET x = Position.x + Velocity.x * $dt, \
             y = Position.y + Velocity.y * $dt FROM Position, Velocity, !Frozen",
            (),
        )
        .expect("create system");
    } else {
        db.add_system("movement")
            .run(|q: QueryIter<(&mut Position, &Velocity), Without<Frozen>>, ctx: &SystemContext| {
                let dt = ctx.dt as f32;
                q.for_each(|(mut p, v)| {
                    p.x += v.x * dt;
                    p.y += v.y * dt;
                })
            })
            .expect("add system");
    }
    db
}

/// Entities of the `schedule` world.
const SCHEDULE_N: usize = if cfg!(debug_assertions) { 5_000 } else { 200_000 };

/// The step each `schedule` system applies to its component.
#[inline(always)]
fn step(x: &mut f32, y: &mut f32, z: f32) {
    *x = *x * 0.999 + (*y * *y + z * z).sqrt() * 0.0001;
    *y = *y * 0.999 - x.abs().sqrt() * 0.0001;
}

mod bevy_side {
    use bevy_ecs::prelude::{Component, Query};

    macro_rules! points {
        ($($name:ident => $sys:ident),*) => {$(
            #[derive(Component, Clone, Copy)]
            pub struct $name {
                pub x: f32,
                pub y: f32,
                pub z: f32,
            }
            pub fn $sys(mut q: Query<&mut $name>) {
                for mut p in &mut q {
                    let p = &mut *p;
                    super::step(&mut p.x, &mut p.y, p.z);
                }
            }
        )*};
    }
    points!(B0 => s0, B1 => s1, B2 => s2, B3 => s3, B4 => s4, B5 => s5, B6 => s6, B7 => s7);
}

fn ecsdb_schedule() -> Database {
    let mut db = Database::new();
    db.world_mut().spawn_batch((0..SCHEDULE_N).map(|i| {
        let v = i as f32;
        (
            P0 { x: v, y: 1.0, z: 2.0 },
            P1 { x: v, y: 1.0, z: 2.0 },
            P2 { x: v, y: 1.0, z: 2.0 },
            P3 { x: v, y: 1.0, z: 2.0 },
            P4 { x: v, y: 1.0, z: 2.0 },
            P5 { x: v, y: 1.0, z: 2.0 },
            P6 { x: v, y: 1.0, z: 2.0 },
            P7 { x: v, y: 1.0, z: 2.0 },
        )
    }));
    macro_rules! add {
        ($($t:ident),*) => {$(
            db.add_system(concat!("rust_", stringify!($t)))
                .run(|q: QueryIter<&mut $t, ()>, _ctx: &SystemContext| {
                    q.for_each(|mut p| {
                        let p = &mut *p;
                        step(&mut p.x, &mut p.y, p.z);
                    })
                })
                .expect("add system");
        )*};
    }
    add!(P0, P1, P2, P3, P4, P5, P6, P7);
    db
}

fn bevy_schedule() -> (bevy_ecs::world::World, bevy_ecs::schedule::Schedule) {
    use bevy_side::*;
    let mut world = bevy_ecs::world::World::new();
    world.spawn_batch((0..SCHEDULE_N).map(|i| {
        let v = i as f32;
        (
            B0 { x: v, y: 1.0, z: 2.0 },
            B1 { x: v, y: 1.0, z: 2.0 },
            B2 { x: v, y: 1.0, z: 2.0 },
            B3 { x: v, y: 1.0, z: 2.0 },
            B4 { x: v, y: 1.0, z: 2.0 },
            B5 { x: v, y: 1.0, z: 2.0 },
            B6 { x: v, y: 1.0, z: 2.0 },
            B7 { x: v, y: 1.0, z: 2.0 },
        )
    }));
    let mut schedule = bevy_ecs::schedule::Schedule::default();
    schedule.set_executor(bevy_ecs::schedule::MultiThreadedExecutor::new());
    schedule.add_systems((s0, s1, s2, s3, s4, s5, s6, s7));
    (world, schedule)
}

pub fn run(s: &mut Suite) {
    const DT: f64 = 1.0 / 60.0;
    s.workload("parallel", |w| {
        let mut db = parallel_world();
        w.lib("ecsdb", iter(move || db.tick(1, DT).expect("tick")));
        let mut seq = parallel_world();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
        w.lib("ecsdb-sequential", iter(move || one.install(|| seq.tick(1, DT).expect("tick"))));
    });
    s.workload("overhead", |w| {
        let mut db = Database::new();
        db.execute("CREATE COMPONENT Unused (v i64)", ()).expect("component");
        for k in 0..100 {
            db.execute(&format!("CREATE SYSTEM idle{k} AS UPDATE Unused SET v = Unused.v + 1"), ()).expect("system");
        }
        w.lib("ecsdb", iter(move || db.tick(1, DT).expect("tick")));
    });
    s.workload("movement", |w| {
        let mut text = movement_world(true);
        w.lib("ecsdb-text", iter(move || text.tick(1, DT).expect("tick")));
        let mut rust = movement_world(false);
        w.lib("ecsdb-rust", iter(move || rust.tick(1, DT).expect("tick")));
    });
    s.workload("schedule", |w| {
        let mut db = ecsdb_schedule();
        w.lib("ecsdb-rust", iter(move || db.tick(1, DT).expect("tick")));
        // bevy's multi-threaded executor runs on its ComputeTaskPool, which an App would create.
        bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
        let (mut world, mut schedule) = bevy_schedule();
        w.lib("bevy_ecs", iter(move || schedule.run(&mut world)));
    });
    s.note(format!(
        "parallel: 8 text systems, each an UPDATE of its own 3-float component with distance/sqrt/min over {N} \
         entities, one tick; ecsdb on the rayon pool ({} threads), ecsdb-sequential in a 1-thread pool",
        rayon::current_num_threads()
    ));
    s.note("overhead: one tick of 100 systems (UPDATEs of a component no entity has)");
    s.note(format!(
        "schedule: 8 Rust systems, each updating its own 3-float component of {SCHEDULE_N} entities; ecsdb-rust: one \
         tick of the ecsdb schedule (the 8 run side by side in one batch), bevy_ecs: Schedule::run with the \
         multi-threaded executor"
    ));
    s.note(format!(
        "movement: `UPDATE Position SET x = Position.x + Velocity.x * $dt, y = … FROM Position, Velocity, !Frozen` \
         against the same Rust system (QueryIter<(&mut Position, &Velocity), Without<Frozen>>), {N} entities"
    ));
}
