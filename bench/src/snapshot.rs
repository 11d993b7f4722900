//! Snapshots: whole-world save and load against each peer's own serializer.
//!
//! - `suite_roundtrip`: the ecs_bench_suite serialize workload: 1000 entities × (Transform,
//!   Position, Rotation, Velocity), saved to bytes and loaded into a fresh world with the
//!   Rust types registered. `ecsdb`: `save_to_vec` + `load_bytes_into`; `hecs`: its column
//!   serializer (`hecs::serialize::column`) through bincode 2 (serde, standard configuration),
//!   deserialized into a fresh world. Each iteration drops its world (inside the timing, for
//!   both), so every iteration starts from the same allocator state rather than piling up
//!   worlds whose fresh memory would be timed.
//! - `save_1m` / `load_1m`: the query benchmark's world, 1,000,000 entities (Position,
//!   Velocity, Health, Team (a string, 4 values), Level; tags Player / Monster / Frozen; the
//!   same generator and seed).
//!   `ecsdb`: `World::save` to a file, replacing the previous save (temporary file, fsync,
//!   rename, directory fsync: timed until the new file is durable) and `World::load_into` a
//!   world with the Rust types registered (reading the file, from the page cache, included);
//!   `ecsdb-mem`: the same to and from bytes in memory. `sqlite`: the same data in an
//!   in-memory SQLite database (one table per component keyed by entity, as in the query
//!   suite), written to a file with SQLite's online backup, and restored from it into a fresh
//!   in-memory database. A note gives the disk's floor for the durable save: the same bytes,
//!   already encoded, written with the same protocol.
//!
//! Every JSON line carries `bytes` (the snapshot or database file size); ecsdb's also carry
//! `component_bytes`, the component data (values as the world holds them, plus string text)
//! its throughput is reported on.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use crate::data::{Row, TEAMS, game_world};
use crate::harness::{Suite, batched, human_bytes, iter};

const SUITE_N: usize = 1_000;
const BIG_N: usize = 1_000_000;

// ----- suite_roundtrip components ---------------------------------------------------------

mod ecsdb_c {
    use ecsdb::Component;

    /// A 4×4 matrix with a schema: sixteen f32 fields, saved as one byte run per column.
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Transform {
        pub m00: f32,
        pub m01: f32,
        pub m02: f32,
        pub m03: f32,
        pub m10: f32,
        pub m11: f32,
        pub m12: f32,
        pub m13: f32,
        pub m20: f32,
        pub m21: f32,
        pub m22: f32,
        pub m23: f32,
        pub m30: f32,
        pub m31: f32,
        pub m32: f32,
        pub m33: f32,
    }

    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Rotation {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    pub const IDENTITY: Transform = Transform {
        m00: 1.0,
        m01: 0.0,
        m02: 0.0,
        m03: 0.0,
        m10: 0.0,
        m11: 1.0,
        m12: 0.0,
        m13: 0.0,
        m20: 0.0,
        m21: 0.0,
        m22: 1.0,
        m23: 0.0,
        m30: 0.0,
        m31: 0.0,
        m32: 0.0,
        m33: 1.0,
    };

    pub fn register(w: &mut ecsdb::World) {
        w.register::<Transform>().unwrap();
        w.register::<Position>().unwrap();
        w.register::<Rotation>().unwrap();
        w.register::<Velocity>().unwrap();
    }
}

mod hecs_c {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Transform(pub [[f32; 4]; 4]);
    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Rotation {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    pub const IDENTITY: Transform =
        Transform([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]);
}

/// hecs' column serializer needs the program to name its component types.
mod hecs_ser {
    use std::any::TypeId;

    use hecs::serialize::column::{
        DeserializeContext, SerializeContext, deserialize_column, try_serialize, try_serialize_id,
    };
    use hecs::{Archetype, ColumnBatchBuilder, ColumnBatchType, World};
    use serde::de::{DeserializeSeed, SeqAccess};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::hecs_c::*;

    #[derive(Clone, Copy, Serialize, Deserialize)]
    enum Id {
        Transform,
        Position,
        Rotation,
        Velocity,
    }

    #[derive(Default)]
    struct Ctx {
        components: Vec<Id>,
    }

    impl SerializeContext for Ctx {
        fn component_count(&self, archetype: &Archetype) -> usize {
            archetype
                .component_types()
                .filter(|&t| {
                    t == TypeId::of::<Transform>()
                        || t == TypeId::of::<Position>()
                        || t == TypeId::of::<Rotation>()
                        || t == TypeId::of::<Velocity>()
                })
                .count()
        }

        fn serialize_component_ids<S: serde::ser::SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize_id::<Transform, _, _>(archetype, &Id::Transform, &mut out)?;
            try_serialize_id::<Position, _, _>(archetype, &Id::Position, &mut out)?;
            try_serialize_id::<Rotation, _, _>(archetype, &Id::Rotation, &mut out)?;
            try_serialize_id::<Velocity, _, _>(archetype, &Id::Velocity, &mut out)?;
            out.end()
        }

        fn serialize_components<S: serde::ser::SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize::<Transform, _>(archetype, &mut out)?;
            try_serialize::<Position, _>(archetype, &mut out)?;
            try_serialize::<Rotation, _>(archetype, &mut out)?;
            try_serialize::<Velocity, _>(archetype, &mut out)?;
            out.end()
        }
    }

    impl DeserializeContext for Ctx {
        fn deserialize_component_ids<'de, A: SeqAccess<'de>>(
            &mut self,
            mut seq: A,
        ) -> Result<ColumnBatchType, A::Error> {
            self.components.clear();
            let mut batch = ColumnBatchType::new();
            while let Some(id) = seq.next_element::<Id>()? {
                match id {
                    Id::Transform => batch.add::<Transform>(),
                    Id::Position => batch.add::<Position>(),
                    Id::Rotation => batch.add::<Rotation>(),
                    Id::Velocity => batch.add::<Velocity>(),
                };
                self.components.push(id);
            }
            Ok(batch)
        }

        fn deserialize_components<'de, A: SeqAccess<'de>>(
            &mut self,
            entity_count: u32,
            mut seq: A,
            batch: &mut ColumnBatchBuilder,
        ) -> Result<(), A::Error> {
            for &id in &self.components {
                match id {
                    Id::Transform => deserialize_column::<Transform, _>(entity_count, &mut seq, batch)?,
                    Id::Position => deserialize_column::<Position, _>(entity_count, &mut seq, batch)?,
                    Id::Rotation => deserialize_column::<Rotation, _>(entity_count, &mut seq, batch)?,
                    Id::Velocity => deserialize_column::<Velocity, _>(entity_count, &mut seq, batch)?,
                }
            }
            Ok(())
        }
    }

    struct Ser<'a>(&'a World);
    impl Serialize for Ser<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            hecs::serialize::column::serialize(self.0, &mut Ctx::default(), s)
        }
    }

    struct De;
    impl<'de> DeserializeSeed<'de> for De {
        type Value = World;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<World, D::Error> {
            hecs::serialize::column::deserialize(&mut Ctx::default(), d)
        }
    }

    fn config() -> impl bincode::config::Config {
        bincode::config::standard()
    }

    pub fn save(world: &World) -> Vec<u8> {
        bincode::serde::encode_to_vec(Ser(world), config()).expect("hecs world serializes")
    }

    pub fn load(bytes: &[u8]) -> World {
        bincode::serde::seed_decode_from_slice(De, bytes, config()).expect("hecs world deserializes").0
    }
}

fn suite_roundtrip(s: &mut Suite) {
    let mut sizes = (0, 0);
    s.workload("suite_roundtrip", |w| {
        {
            use ecsdb_c::*;
            let mut world = ecsdb::World::new();
            world.spawn_batch((0..SUITE_N).map(|_| {
                (
                    IDENTITY,
                    Position { x: 1.0, y: 0.0, z: 0.0 },
                    Rotation { x: 1.0, y: 0.0, z: 0.0 },
                    Velocity { x: 1.0, y: 0.0, z: 0.0 },
                )
            }));
            let (bytes, stats) = world.save_to_vec_with_stats(&ecsdb::SaveOptions::default()).unwrap();
            // Check the round trip once, outside the timing.
            let mut check = ecsdb::World::new();
            register(&mut check);
            check.load_bytes_into(&bytes, &Default::default()).unwrap();
            assert_eq!(check.query::<&Transform>().count(), SUITE_N);
            sizes.0 = bytes.len();
            w.lib(
                "ecsdb",
                iter(move || {
                    let bytes = world.save_to_vec(&ecsdb::SaveOptions::default()).unwrap();
                    let mut loaded = ecsdb::World::new();
                    register(&mut loaded);
                    loaded.load_bytes_into(&bytes, &Default::default()).unwrap();
                    loaded
                }),
            )
            .extra("bytes", bytes.len())
            .extra("component_bytes", stats.component_bytes);
        }
        {
            use hecs_c::*;
            let mut world = hecs::World::new();
            world.spawn_batch((0..SUITE_N).map(|_| {
                (
                    IDENTITY,
                    Position { x: 1.0, y: 0.0, z: 0.0 },
                    Rotation { x: 1.0, y: 0.0, z: 0.0 },
                    Velocity { x: 1.0, y: 0.0, z: 0.0 },
                )
            }));
            let bytes = hecs_ser::save(&world);
            assert_eq!(hecs_ser::load(&bytes).query_mut::<&Transform>().into_iter().count(), SUITE_N);
            sizes.1 = bytes.len();
            w.lib(
                "hecs",
                iter(move || {
                    let bytes = hecs_ser::save(&world);
                    hecs_ser::load(&bytes)
                }),
            )
            .extra("bytes", bytes.len());
        }
    });
    if !s.enabled("suite_roundtrip") {
        return;
    }
    s.note(format!(
        "suite_roundtrip: {SUITE_N} entities × Transform (4×4 f32) + Position + Rotation + Velocity, save to bytes \
         and load into a fresh world; sizes: ecsdb {}, hecs (column serializer + bincode) {}.",
        human_bytes(sizes.0 as f64),
        human_bytes(sizes.1 as f64)
    ));
}

// ----- the 1M world -------------------------------------------------------------------------

mod big {
    use ecsdb::Component;

    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Health {
        pub hp: f32,
        pub max: f32,
    }
    #[derive(Component, Clone, Debug, PartialEq)]
    pub struct Team {
        pub name: String,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Level {
        pub value: i32,
    }
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Player;
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Monster;
    #[derive(Component, Clone, Copy, Debug, PartialEq)]
    pub struct Frozen;

    pub fn register(w: &mut ecsdb::World) {
        w.register::<Position>().unwrap();
        w.register::<Velocity>().unwrap();
        w.register::<Health>().unwrap();
        w.register::<Team>().unwrap();
        w.register::<Level>().unwrap();
        w.register::<Player>().unwrap();
        w.register::<Monster>().unwrap();
        w.register::<Frozen>().unwrap();
    }
}

/// The game world of `BIG_N` entities (`data::game_world`), as the query suite sees it.
pub(crate) fn rows() -> Vec<Row> {
    game_world(BIG_N)
}

pub(crate) fn big_world(rows: &[Row]) -> ecsdb::World {
    use big::*;
    let mut w = ecsdb::World::new();
    register(&mut w);
    for r in rows {
        let b = (
            Position { x: r.pos[0], y: r.pos[1], z: r.pos[2] },
            Velocity { x: r.vel[0], y: r.vel[1], z: r.vel[2] },
            Health { hp: r.hp, max: r.max },
            Team { name: TEAMS[r.team].to_string() },
            Level { value: r.level },
        );
        let e = if r.player {
            w.spawn((b.0, b.1, b.2, b.3, b.4, Player))
        } else {
            w.spawn((b.0, b.1, b.2, b.3, b.4, Monster))
        };
        if r.frozen {
            w.insert(e, Frozen).unwrap();
        }
    }
    assert_eq!(w.len(), BIG_N);
    w
}

/// The same data in SQLite, one table per component keyed by entity (as in the query suite).
fn sqlite_world(rows: &[Row]) -> rusqlite::Connection {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE position (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
         CREATE TABLE velocity (entity INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
         CREATE TABLE health (entity INTEGER PRIMARY KEY, hp REAL, max REAL);
         CREATE TABLE team (entity INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE level (entity INTEGER PRIMARY KEY, value INTEGER);
         CREATE TABLE player (entity INTEGER PRIMARY KEY);
         CREATE TABLE monster (entity INTEGER PRIMARY KEY);
         CREATE TABLE frozen (entity INTEGER PRIMARY KEY);",
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut pos = tx.prepare("INSERT INTO position VALUES (?1, ?2, ?3, ?4)").unwrap();
        let mut vel = tx.prepare("INSERT INTO velocity VALUES (?1, ?2, ?3, ?4)").unwrap();
        let mut health = tx.prepare("INSERT INTO health VALUES (?1, ?2, ?3)").unwrap();
        let mut team = tx.prepare("INSERT INTO team VALUES (?1, ?2)").unwrap();
        let mut level = tx.prepare("INSERT INTO level VALUES (?1, ?2)").unwrap();
        let mut player = tx.prepare("INSERT INTO player VALUES (?1)").unwrap();
        let mut monster = tx.prepare("INSERT INTO monster VALUES (?1)").unwrap();
        let mut frozen = tx.prepare("INSERT INTO frozen VALUES (?1)").unwrap();
        for (i, r) in rows.iter().enumerate() {
            let e = i as i64;
            pos.execute(rusqlite::params![e, r.pos[0] as f64, r.pos[1] as f64, r.pos[2] as f64]).unwrap();
            vel.execute(rusqlite::params![e, r.vel[0] as f64, r.vel[1] as f64, r.vel[2] as f64]).unwrap();
            health.execute(rusqlite::params![e, r.hp as f64, r.max as f64]).unwrap();
            team.execute(rusqlite::params![e, TEAMS[r.team]]).unwrap();
            level.execute(rusqlite::params![e, r.level]).unwrap();
            if r.player {
                player.execute([e]).unwrap();
            } else {
                monster.execute([e]).unwrap();
            }
            if r.frozen {
                frozen.execute([e]).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    conn
}

fn sqlite_restore(path: &Path) -> rusqlite::Connection {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.restore(rusqlite::MAIN_DB, path, None::<fn(rusqlite::backup::Progress)>).unwrap();
    conn
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ecsdb-bench-{}-{name}", std::process::id()))
}

/// The time of one call of `f`, in seconds, and what it returned (to be dropped outside the
/// timing).
fn timed<R>(f: impl FnOnce() -> R) -> (f64, R) {
    let t = Instant::now();
    let out = black_box(f());
    (t.elapsed().as_secs_f64(), out)
}

/// The disk's floor for a durable save: `bytes` written with one `write` to a new file in
/// the same directory as `path`, then fsync, rename over `path`, directory fsync (the
/// protocol `World::save` follows), with no encoding at all.
fn raw_durable_write(path: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    let tmp = path.with_extension("raw.tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::rename(&tmp, path).unwrap();
    std::fs::File::open(path.parent().unwrap()).unwrap().sync_all().unwrap();
}

fn mbps(bytes: u64, secs: f64) -> String {
    format!("{:.0} MB/s", bytes as f64 / secs / 1e6)
}

struct BigFixture {
    world: ecsdb::World,
    snap_path: PathBuf,
    snap_bytes: Vec<u8>,
    /// Where [`raw_durable_write`] writes the snapshot's bytes.
    raw_path: PathBuf,
    component_bytes: u64,
    sqlite: rusqlite::Connection,
    sqlite_path: PathBuf,
    sqlite_bytes: u64,
}

impl BigFixture {
    fn new() -> BigFixture {
        let rows = rows();
        let world = big_world(&rows);
        let snap_path = temp_path("world.ecsdb");
        let stats = world.save(&snap_path, &ecsdb::SaveOptions::default()).unwrap();
        let snap_bytes = std::fs::read(&snap_path).unwrap();
        let mut check = ecsdb::World::new();
        big::register(&mut check);
        check.load_bytes_into(&snap_bytes, &Default::default()).unwrap();
        assert_eq!(check.len(), BIG_N);
        let sqlite = sqlite_world(&rows);
        let sqlite_path = temp_path("world.sqlite");
        let _ = std::fs::remove_file(&sqlite_path);
        sqlite.backup(rusqlite::MAIN_DB, &sqlite_path, None::<fn(rusqlite::backup::Progress)>).unwrap();
        let sqlite_bytes = std::fs::metadata(&sqlite_path).unwrap().len();
        BigFixture {
            world,
            snap_path,
            snap_bytes,
            raw_path: temp_path("raw.ecsdb"),
            component_bytes: stats.component_bytes,
            sqlite,
            sqlite_path,
            sqlite_bytes,
        }
    }
}

impl Drop for BigFixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.snap_path);
        let _ = std::fs::remove_file(&self.raw_path);
        let _ = std::fs::remove_file(&self.sqlite_path);
    }
}

fn big_suites(s: &mut Suite) {
    if !s.enabled("save_1m") && !s.enabled("load_1m") {
        return;
    }
    eprintln!("   building the 1M world (ecsdb and SQLite)…");
    // Shared by the samplers (which must own what they use).
    let fx = Rc::new(BigFixture::new());
    let snap_len = fx.snap_bytes.len() as u64;

    s.workload("save_1m", |w| {
        let f = fx.clone();
        w.lib(
            "ecsdb",
            iter(move || {
                f.world.save(&f.snap_path, &ecsdb::SaveOptions::default()).unwrap();
            }),
        )
        .extra("bytes", snap_len)
        .extra("component_bytes", fx.component_bytes);
        let f = fx.clone();
        w.lib("ecsdb-mem", iter(move || f.world.save_to_vec(&ecsdb::SaveOptions::default()).unwrap()))
            .extra("bytes", snap_len)
            .extra("component_bytes", fx.component_bytes);
        let f = fx.clone();
        w.lib(
            "sqlite",
            iter(move || {
                // The backup overwrites the destination database in place.
                f.sqlite.backup(rusqlite::MAIN_DB, &f.sqlite_path, None::<fn(rusqlite::backup::Progress)>).unwrap();
            }),
        )
        .extra("bytes", fx.sqlite_bytes);
    });

    s.workload("load_1m", |w| {
        let f = fx.clone();
        w.lib(
            "ecsdb",
            batched(
                || (),
                move |()| {
                    let mut world = ecsdb::World::new();
                    big::register(&mut world);
                    world.load_into(&f.snap_path, &Default::default()).unwrap();
                    world
                },
            ),
        )
        .extra("bytes", snap_len)
        .extra("component_bytes", fx.component_bytes);
        let f = fx.clone();
        w.lib(
            "ecsdb-mem",
            batched(
                || (),
                move |()| {
                    let mut world = ecsdb::World::new();
                    big::register(&mut world);
                    world.load_bytes_into(&f.snap_bytes, &Default::default()).unwrap();
                    world
                },
            ),
        )
        .extra("bytes", snap_len)
        .extra("component_bytes", fx.component_bytes);
        let f = fx.clone();
        w.lib("sqlite", batched(|| (), move |()| sqlite_restore(&f.sqlite_path))).extra("bytes", fx.sqlite_bytes);
    });

    // Throughput of component data, from separate timings of the four operations taken in
    // turn (so each sees the same machine conditions), medians of 9. Every loaded world is
    // checked, outside the timing.
    let opts = ecsdb::SaveOptions::default();
    let load_file = || {
        let mut world = ecsdb::World::new();
        big::register(&mut world);
        world.load_into(&fx.snap_path, &Default::default()).unwrap();
        world
    };
    let load_mem = || {
        let mut world = ecsdb::World::new();
        big::register(&mut world);
        world.load_bytes_into(&fx.snap_bytes, &Default::default()).unwrap();
        world
    };
    let mut times: [Vec<f64>; 5] = Default::default();
    for _ in 0..9 {
        times[0].push(timed(|| fx.world.save(&fx.snap_path, &opts).unwrap()).0);
        times[4].push(timed(|| raw_durable_write(&fx.raw_path, &fx.snap_bytes)).0);
        times[1].push(timed(|| fx.world.save_to_vec(&opts).unwrap()).0);
        let (secs, w) = timed(load_file);
        assert_eq!(w.len(), BIG_N);
        drop(w);
        times[2].push(secs);
        let (secs, w) = timed(load_mem);
        assert_eq!(w.len(), BIG_N);
        drop(w);
        times[3].push(secs);
    }
    let [save_file, save_mem, load_file, load_mem, raw_write] = times.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    s.note(format!(
        "1M world: {} entities × Position, Velocity, Health, Team (string), Level + tags; ecsdb snapshot {} \
         ({} of component data), SQLite database {}.",
        BIG_N,
        human_bytes(snap_len as f64),
        human_bytes(fx.component_bytes as f64),
        human_bytes(fx.sqlite_bytes as f64)
    ));
    s.note(format!(
        "ecsdb throughput of component data (target ≥ 1 GB/s), file bytes in parentheses: save to file (until \
         the new file and its rename are durable: fsync, rename, directory fsync) {} ({}), save to memory {} ({}), \
         load from file (page cache → world) {} ({}), load from memory {} ({}).",
        mbps(fx.component_bytes, save_file),
        mbps(snap_len, save_file),
        mbps(fx.component_bytes, save_mem),
        mbps(snap_len, save_mem),
        mbps(fx.component_bytes, load_file),
        mbps(snap_len, load_file),
        mbps(fx.component_bytes, load_mem),
        mbps(snap_len, load_mem)
    ));
    s.note(format!(
        "The disk's floor for a durable save: the snapshot's bytes, already encoded, written \
         with one write, fsync, rename and directory fsync: {} of file bytes, {:.2} ms; ecsdb's save to file \
         takes {:.2}× that.",
        mbps(snap_len, raw_write),
        raw_write * 1e3,
        save_file / raw_write
    ));
}

/// Runs the snapshot suite.
pub fn run(s: &mut Suite) {
    suite_roundtrip(s);
    big_suites(s);
}
