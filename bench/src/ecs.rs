//! The ecs_bench_suite workloads on ecsdb, hecs and bevy_ecs, with identical component types
//! and counts; each library is used through its ordinary public API.
//!
//! - `simple_insert`: spawn 10k entities × (Transform, Position, Rotation, Velocity) into a
//!   fresh world with each library's batch spawn; the fresh world is part of the timed work,
//!   dropping it is not.
//! - `simple_iter`: `pos += vel` over those 10k entities.
//! - `frag_iter`: 26 archetypes (A..Z) × 20 entities, each also with Data; double Data.
//! - `heavy_compute`: 1k entities; in parallel, invert each Transform 100 times, then move
//!   Position by it.
//! - `add_remove`: 10k entities with A; add B to all, then remove B from all.
//! - `toggle_text`, `sparse_join`: sparse against table storage from text (`ecs_storage.rs`).
//!
//! How queries are set up, per library, as its users write them:
//! - `ecsdb`: a one-shot query from the world in every run (`world.query_mut`, or
//!   `world.query_state` + `par_for_each_mut` for heavy_compute);
//!   `ecsdb-prepared`: a `QueryState` built once and reused, like a system would keep it;
//!   `ecsdb-for_each`: the one-shot query driven by `for_each` instead of `for`.
//! - `hecs`: `world.query_mut` in every run (hecs caches archetype matches inside the world).
//! - `bevy_ecs`: a `QueryState` built once and reused (`world.query()` outside the timed run):
//!   bevy users query from systems, which keep their state between runs.

use std::hint::black_box;

use crate::harness::{Suite, batched, human_bytes, iter};

const INSERT_N: usize = 10_000;
const ITER_N: usize = 10_000;
const FRAG_PER_ARCHETYPE: usize = 20;
const HEAVY_N: usize = 1_000;
const HEAVY_INVERSIONS: usize = 100;
const ADD_REMOVE_N: usize = 10_000;
/// hecs batch size for heavy_compute (what ecsdb's parallel iteration uses per chunk too).
const HECS_BATCH: u32 = 64;

type Mat4 = [[f32; 4]; 4];

/// The same component types for each library, differing only in their derives.
/// `$derive`: attributes for every type; `$opaque`: extra attributes for Transform, whose
/// field is not a type ecsdb's schema describes.
macro_rules! components {
    ([$(#[$derive:meta])*] [$(#[$opaque:meta])*]) => {
        use super::Mat4;

        #[derive(Clone, Copy, Debug, PartialEq)]
        $(#[$derive])*
        $(#[$opaque])*
        pub struct Transform(pub Mat4);

        #[derive(Clone, Copy, Debug, PartialEq)]
        $(#[$derive])*
        pub struct Position { pub x: f32, pub y: f32, pub z: f32 }

        #[derive(Clone, Copy, Debug, PartialEq)]
        $(#[$derive])*
        pub struct Rotation { pub x: f32, pub y: f32, pub z: f32 }

        #[derive(Clone, Copy, Debug, PartialEq)]
        $(#[$derive])*
        pub struct Velocity { pub x: f32, pub y: f32, pub z: f32 }

        #[derive(Clone, Copy, Debug, PartialEq)]
        $(#[$derive])*
        pub struct Data { pub value: f32 }

        components!(@letters [$(#[$derive])*] A B C D E F G H I J K L M N O P Q R S T U V W X Y Z);

        /// The 4-component bundle of simple_insert, simple_iter and heavy_compute.
        pub fn body(transform: Mat4) -> (Transform, Position, Rotation, Velocity) {
            (
                Transform(transform),
                Position { x: 1.0, y: 0.0, z: 0.0 },
                Rotation { x: 1.0, y: 0.0, z: 0.0 },
                Velocity { x: 1.0, y: 0.0, z: 0.0 },
            )
        }
    };
    (@letters [$($attrs:tt)*]) => {};
    (@letters [$($attrs:tt)*] $letter:ident $($rest:ident)*) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        $($attrs)*
        pub struct $letter { pub value: f32 }

        components!(@letters [$($attrs)*] $($rest)*);
    };
}

/// Spawns the frag_iter world: `$spawn!(Letter)` once per letter A..Z.
macro_rules! each_letter {
    ($spawn:ident) => {
        $spawn!(A);
        $spawn!(B);
        $spawn!(C);
        $spawn!(D);
        $spawn!(E);
        $spawn!(F);
        $spawn!(G);
        $spawn!(H);
        $spawn!(I);
        $spawn!(J);
        $spawn!(K);
        $spawn!(L);
        $spawn!(M);
        $spawn!(N);
        $spawn!(O);
        $spawn!(P);
        $spawn!(Q);
        $spawn!(R);
        $spawn!(S);
        $spawn!(T);
        $spawn!(U);
        $spawn!(V);
        $spawn!(W);
        $spawn!(X);
        $spawn!(Y);
        $spawn!(Z);
    };
}

mod ecsdb_c {
    components!([#[derive(ecsdb::Component)]] [#[component(opaque)]]);
}

mod hecs_c {
    // hecs needs no derive: every `Send + Sync + 'static` type is a component.
    components!([] []);
}

mod bevy_c {
    components!([#[derive(bevy_ecs::component::Component)]] []);
}

// ----- shared math -------------------------------------------------------------------------

const IDENTITY: Mat4 = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];

/// A rotation about the x axis (rows are the matrix rows).
fn rotation_x(angle: f32) -> Mat4 {
    let (s, c) = angle.sin_cos();
    [[1.0, 0.0, 0.0, 0.0], [0.0, c, -s, 0.0], [0.0, s, c, 0.0], [0.0, 0.0, 0.0, 1.0]]
}

/// The inverse of `m`, or `None` when it is singular: the adjugate (from the 2×2 minors of
/// the top and bottom row pairs) divided by the determinant.
fn invert(m: &Mat4) -> Option<Mat4> {
    let [a, b, c, d] = *m;
    // 2×2 minors of rows a, b (columns i<j) and of rows c, d.
    let s0 = a[0] * b[1] - b[0] * a[1];
    let s1 = a[0] * b[2] - b[0] * a[2];
    let s2 = a[0] * b[3] - b[0] * a[3];
    let s3 = a[1] * b[2] - b[1] * a[2];
    let s4 = a[1] * b[3] - b[1] * a[3];
    let s5 = a[2] * b[3] - b[2] * a[3];
    let c0 = c[0] * d[1] - d[0] * c[1];
    let c1 = c[0] * d[2] - d[0] * c[2];
    let c2 = c[0] * d[3] - d[0] * c[3];
    let c3 = c[1] * d[2] - d[1] * c[2];
    let c4 = c[1] * d[3] - d[1] * c[3];
    let c5 = c[2] * d[3] - d[2] * c[3];
    let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let k = 1.0 / det;
    Some([
        [
            (b[1] * c5 - b[2] * c4 + b[3] * c3) * k,
            (-a[1] * c5 + a[2] * c4 - a[3] * c3) * k,
            (d[1] * s5 - d[2] * s4 + d[3] * s3) * k,
            (-c[1] * s5 + c[2] * s4 - c[3] * s3) * k,
        ],
        [
            (-b[0] * c5 + b[2] * c2 - b[3] * c1) * k,
            (a[0] * c5 - a[2] * c2 + a[3] * c1) * k,
            (-d[0] * s5 + d[2] * s2 - d[3] * s1) * k,
            (c[0] * s5 - c[2] * s2 + c[3] * s1) * k,
        ],
        [
            (b[0] * c4 - b[1] * c2 + b[3] * c0) * k,
            (-a[0] * c4 + a[1] * c2 - a[3] * c0) * k,
            (d[0] * s4 - d[1] * s2 + d[3] * s0) * k,
            (-c[0] * s4 + c[1] * s2 - c[3] * s0) * k,
        ],
        [
            (-b[0] * c3 + b[1] * c1 - b[2] * c0) * k,
            (a[0] * c3 - a[1] * c1 + a[2] * c0) * k,
            (-d[0] * s3 + d[1] * s1 - d[2] * s0) * k,
            (c[0] * s3 - c[1] * s1 + c[2] * s0) * k,
        ],
    ])
}

/// heavy_compute's per-entity work, the same function for every library: invert the matrix
/// `HEAVY_INVERSIONS` times in place, then return `m · (x, y, z, 0)`.
#[inline]
fn heavy(m: &mut Mat4, p: [f32; 3]) -> [f32; 3] {
    for _ in 0..HEAVY_INVERSIONS {
        *m = invert(m).expect("heavy_compute matrices are rotations, hence invertible");
    }
    let mut out = [0.0; 3];
    for (o, row) in out.iter_mut().zip(m) {
        *o = row[0] * p[0] + row[1] * p[1] + row[2] * p[2];
    }
    out
}

// ----- the suite ---------------------------------------------------------------------------

/// Runs the ecs suite.
pub fn run(s: &mut Suite) {
    // bevy_ecs' par_iter runs on its ComputeTaskPool, which a bevy App would create.
    let pool = bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
    s.note(format!(
        "Threads: rayon (ecsdb, hecs) {}, bevy ComputeTaskPool {}.",
        rayon::current_num_threads(),
        pool.thread_num()
    ));

    simple_insert(s);
    simple_iter(s);
    frag_iter(s);
    heavy_compute(s);
    add_remove(s);
    crate::ecs_storage::run(s);
}

fn simple_insert(s: &mut Suite) {
    s.workload("simple_insert", |w| {
        w.lib(
            "ecsdb",
            batched(
                || (),
                |()| {
                    use ecsdb_c::*;
                    let mut world = ecsdb::World::new();
                    let entities = world.spawn_batch((0..INSERT_N).map(|_| body(IDENTITY)));
                    (world, entities)
                },
            ),
        );
        w.lib(
            "hecs",
            batched(
                || (),
                |()| {
                    use hecs_c::*;
                    let mut world = hecs::World::new();
                    // The iterator spawns as it is consumed (or dropped).
                    for e in world.spawn_batch((0..INSERT_N).map(|_| body(IDENTITY))) {
                        black_box(e);
                    }
                    world
                },
            ),
        );
        w.lib(
            "bevy_ecs",
            batched(
                || (),
                |()| {
                    use bevy_c::*;
                    let mut world = bevy_ecs::world::World::new();
                    for e in world.spawn_batch((0..INSERT_N).map(|_| body(IDENTITY))) {
                        black_box(e);
                    }
                    world
                },
            ),
        );
    });
}

fn simple_iter(s: &mut Suite) {
    let mut memory = None;
    s.workload("simple_iter", |w| {
        {
            use ecsdb_c::*;
            let new_world = || {
                let mut world = ecsdb::World::new();
                world.spawn_batch((0..ITER_N).map(|_| body(IDENTITY)));
                world
            };
            let mut world = new_world();
            let usage = world.memory_usage();
            memory = Some(usage);
            w.lib(
                "ecsdb",
                iter(move || {
                    for (mut pos, vel) in world.query_mut::<(&mut Position, &Velocity)>() {
                        pos.x += vel.x;
                        pos.y += vel.y;
                        pos.z += vel.z;
                    }
                }),
            )
            .extra("component_bytes", usage.component_bytes)
            .extra("overhead_bytes", usage.overhead_bytes)
            .extra("overhead_bytes_per_entity", usage.overhead_per_entity());

            let mut world = new_world();
            w.lib(
                "ecsdb-for_each",
                iter(move || {
                    world.query_mut::<(&mut Position, &Velocity)>().for_each(|(mut pos, vel)| {
                        pos.x += vel.x;
                        pos.y += vel.y;
                        pos.z += vel.z;
                    });
                }),
            );

            let mut world = new_world();
            let mut state: ecsdb::QueryState<(&mut Position, &Velocity)> = world.query_state();
            w.lib(
                "ecsdb-prepared",
                iter(move || {
                    for (mut pos, vel) in state.iter_mut(&mut world) {
                        pos.x += vel.x;
                        pos.y += vel.y;
                        pos.z += vel.z;
                    }
                }),
            );
        }
        {
            use hecs_c::*;
            let mut world = hecs::World::new();
            world.spawn_batch((0..ITER_N).map(|_| body(IDENTITY)));
            w.lib(
                "hecs",
                iter(move || {
                    for (pos, vel) in world.query_mut::<(&mut Position, &Velocity)>() {
                        pos.x += vel.x;
                        pos.y += vel.y;
                        pos.z += vel.z;
                    }
                }),
            );
        }
        {
            use bevy_c::*;
            let mut world = bevy_ecs::world::World::new();
            world.spawn_batch((0..ITER_N).map(|_| body(IDENTITY))).for_each(drop);
            let mut state = world.query::<(&mut Position, &Velocity)>();
            w.lib(
                "bevy_ecs",
                iter(move || {
                    for (mut pos, vel) in state.iter_mut(&mut world) {
                        pos.x += vel.x;
                        pos.y += vel.y;
                        pos.z += vel.z;
                    }
                }),
            );
        }
    });
    if let Some(m) = memory {
        s.note(format!(
            "Memory (ecsdb, the simple_iter world: {} entities × Transform + Position + Rotation + Velocity): \
             component data {}, overhead {} = **{:.1} bytes per entity beyond component data** (bar ≤ 36: \
             12 allocator, 8 entity id, 4 a changed tick per component).",
            m.entities,
            human_bytes(m.component_bytes as f64),
            human_bytes(m.overhead_bytes as f64),
            m.overhead_per_entity()
        ));
    }
}

fn frag_iter(s: &mut Suite) {
    s.workload("frag_iter", |w| {
        {
            use ecsdb_c::*;
            let new_world = || {
                let mut world = ecsdb::World::new();
                macro_rules! spawn {
                    ($letter:ident) => {
                        world.spawn_batch(
                            (0..FRAG_PER_ARCHETYPE).map(|_| ($letter { value: 0.0 }, Data { value: 1.0 })),
                        );
                    };
                }
                each_letter!(spawn);
                world
            };
            let mut world = new_world();
            w.lib(
                "ecsdb",
                iter(move || {
                    for (mut data,) in world.query_mut::<(&mut Data,)>() {
                        data.value *= 2.0;
                    }
                }),
            );
            let mut world = new_world();
            w.lib(
                "ecsdb-for_each",
                iter(move || {
                    world.query_mut::<(&mut Data,)>().for_each(|(mut data,)| data.value *= 2.0);
                }),
            );
            let mut world = new_world();
            let mut state: ecsdb::QueryState<(&mut Data,)> = world.query_state();
            w.lib(
                "ecsdb-prepared",
                iter(move || {
                    for (mut data,) in state.iter_mut(&mut world) {
                        data.value *= 2.0;
                    }
                }),
            );
        }
        {
            use hecs_c::*;
            let mut world = hecs::World::new();
            macro_rules! spawn {
                ($letter:ident) => {
                    world.spawn_batch((0..FRAG_PER_ARCHETYPE).map(|_| ($letter { value: 0.0 }, Data { value: 1.0 })));
                };
            }
            each_letter!(spawn);
            w.lib(
                "hecs",
                iter(move || {
                    for data in world.query_mut::<&mut Data>() {
                        data.value *= 2.0;
                    }
                }),
            );
        }
        {
            use bevy_c::*;
            let mut world = bevy_ecs::world::World::new();
            macro_rules! spawn {
                ($letter:ident) => {
                    world
                        .spawn_batch((0..FRAG_PER_ARCHETYPE).map(|_| ($letter { value: 0.0 }, Data { value: 1.0 })))
                        .for_each(drop);
                };
            }
            each_letter!(spawn);
            let mut state = world.query::<&mut Data>();
            w.lib(
                "bevy_ecs",
                iter(move || {
                    for mut data in state.iter_mut(&mut world) {
                        data.value *= 2.0;
                    }
                }),
            );
        }
    });
}

fn heavy_compute(s: &mut Suite) {
    let start = rotation_x(1.2);
    s.workload("heavy_compute", |w| {
        {
            use ecsdb_c::*;
            let new_world = || {
                let mut world = ecsdb::World::new();
                world.spawn_batch((0..HEAVY_N).map(|_| body(start)));
                world
            };
            let mut world = new_world();
            w.lib(
                "ecsdb",
                iter(move || {
                    let mut state = world.query_state::<(&mut Position, &mut Transform), ()>();
                    state.par_for_each_mut(&mut world, |(mut pos, mut t)| {
                        let [x, y, z] = heavy(&mut t.0, [pos.x, pos.y, pos.z]);
                        *pos = Position { x, y, z };
                    });
                }),
            );
            let mut world = new_world();
            let mut state: ecsdb::QueryState<(&mut Position, &mut Transform)> = world.query_state();
            w.lib(
                "ecsdb-prepared",
                iter(move || {
                    state.par_for_each_mut(&mut world, |(mut pos, mut t)| {
                        let [x, y, z] = heavy(&mut t.0, [pos.x, pos.y, pos.z]);
                        *pos = Position { x, y, z };
                    });
                }),
            );
        }
        {
            use hecs_c::*;
            use rayon::prelude::*;
            let mut world = hecs::World::new();
            world.spawn_batch((0..HEAVY_N).map(|_| body(start)));
            w.lib(
                "hecs",
                iter(move || {
                    // hecs has no parallel iteration of its own; its documented way is
                    // `into_iter_batched` (batches are `Send`) handed to a thread pool, here rayon.
                    let batches: Vec<_> =
                        world.query_mut::<(&mut Position, &mut Transform)>().into_iter_batched(HECS_BATCH).collect();
                    batches.into_par_iter().for_each(|batch| {
                        for (pos, t) in batch {
                            let [x, y, z] = heavy(&mut t.0, [pos.x, pos.y, pos.z]);
                            *pos = Position { x, y, z };
                        }
                    });
                }),
            );
        }
        {
            use bevy_c::*;
            let mut world = bevy_ecs::world::World::new();
            world.spawn_batch((0..HEAVY_N).map(|_| body(start))).for_each(drop);
            let mut state = world.query::<(&mut Position, &mut Transform)>();
            w.lib(
                "bevy_ecs",
                iter(move || {
                    // bevy's default batching strategy, on the ComputeTaskPool.
                    state.par_iter_mut(&mut world).for_each(|(mut pos, mut t)| {
                        let [x, y, z] = heavy(&mut t.0, [pos.x, pos.y, pos.z]);
                        *pos = Position { x, y, z };
                    });
                }),
            );
        }
    });
}

fn add_remove(s: &mut Suite) {
    // Each run adds B to every entity and removes it again, so the world returns to its
    // starting shape and runs can repeat on it.
    s.workload("add_remove", |w| {
        {
            use ecsdb_c::*;
            let mut world = ecsdb::World::new();
            let entities = world.spawn_batch((0..ADD_REMOVE_N).map(|_| (A { value: 0.0 },)));
            w.lib(
                "ecsdb",
                iter(move || {
                    for &e in &entities {
                        world.insert(e, (B { value: 0.0 },)).unwrap();
                    }
                    for &e in &entities {
                        black_box(world.remove::<(B,)>(e).unwrap());
                    }
                }),
            );
        }
        {
            use hecs_c::*;
            let mut world = hecs::World::new();
            let entities: Vec<hecs::Entity> =
                world.spawn_batch((0..ADD_REMOVE_N).map(|_| (A { value: 0.0 },))).collect();
            w.lib(
                "hecs",
                iter(move || {
                    for &e in &entities {
                        world.insert_one(e, B { value: 0.0 }).unwrap();
                    }
                    for &e in &entities {
                        black_box(world.remove_one::<B>(e).unwrap());
                    }
                }),
            );
        }
        {
            use bevy_c::*;
            let mut world = bevy_ecs::world::World::new();
            let entities: Vec<bevy_ecs::entity::Entity> =
                world.spawn_batch((0..ADD_REMOVE_N).map(|_| (A { value: 0.0 },))).collect();
            w.lib(
                "bevy_ecs",
                iter(move || {
                    for &e in &entities {
                        world.entity_mut(e).insert(B { value: 0.0 });
                    }
                    for &e in &entities {
                        world.entity_mut(e).remove::<B>();
                    }
                }),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
        let mut out = [[0.0; 4]; 4];
        for (i, row) in out.iter_mut().enumerate() {
            for (j, cell) in row.iter_mut().enumerate() {
                *cell = (0..4).map(|k| a[i][k] * b[k][j]).sum();
            }
        }
        out
    }

    #[test]
    fn invert_gives_the_inverse() {
        let m: Mat4 = [[2.0, 0.5, 0.0, 1.0], [0.0, 1.0, 3.0, 0.0], [1.0, 0.0, 1.0, 2.0], [0.0, 4.0, 0.0, 1.0]];
        for m in [m, rotation_x(1.2), IDENTITY] {
            let p = mul(&m, &invert(&m).unwrap());
            for (i, row) in p.iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((v - want).abs() < 1e-5, "{p:?}");
                }
            }
        }
        assert_eq!(invert(&[[0.0; 4]; 4]), None);
    }

    #[test]
    fn heavy_of_a_rotation_round_trips() {
        let mut m = rotation_x(1.2);
        let p = heavy(&mut m, [0.0, 1.0, 0.0]);
        // An even number of inversions leaves the rotation, up to rounding.
        assert!((p[1] - 1.2f32.cos()).abs() < 1e-3 && (p[2] - 1.2f32.sin()).abs() < 1e-3, "{p:?}");
    }
}
