//! A game loop whose systems pick their entities with the query language.
//!
//! The game owns Rust component types; systems are plain Rust over typed queries, but *which*
//! entities a system touches is a text filter (the kind of rule a designer tweaks without a
//! recompile): `db.select::<&mut T>("WHERE …")` iterates exactly the entities a text query
//! selects, with typed mutation. Rules that run every frame are prepared once; a Rust function
//! (`threat`) is registered by name and called from text.
//!
//! Run: `cargo run --release --example game_loop`
//!
//! Served live (look into it from another terminal with `ecsdb query --connect URL ...`):
//! `cargo run --release --features live --example game_loop -- --serve`

use std::time::{Duration, Instant};

use ecsdb::query::{Database, Params};
use ecsdb::{Component, Value, Without};

#[derive(Component)]
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
    max: f32,
}
#[derive(Component)]
struct Team {
    name: String,
}
#[derive(Component)]
struct Level {
    value: i32,
}
#[derive(Component)]
struct Player;
#[derive(Component)]
struct Frozen;

/// Rules a designer could edit: text, not code.
const POISON_CLOUD: &str = "FROM Health, Position WHERE within(Position, $cloud, 60) AND NOT has(Player)";
const HEALERS_AURA: &str = "FROM Health, Player WHERE Team.name = $team AND Health.hp < Health.max";
const DANGEROUS: &str = "SELECT entity, Level.value, Health.hp, threat(Level.value, Health.hp) AS threat \
                         WHERE threat(Level.value, Health.hp) > 40 ORDER BY threat DESC LIMIT 3";

fn main() {
    let mut db = Database::new();
    spawn_level(&mut db);

    // A Rust function, callable from text by name.
    db.register_function("threat", |args| match args {
        [level, hp] => match (level.as_f64(), hp.as_f64()) {
            (Some(l), Some(h)) => Ok(Value::Float(l * h / 100.0)),
            _ => Ok(Value::Null),
        },
        _ => Err("threat(level, hp) takes two arguments".to_string()),
    });

    // Statements that run every tick: parsed and planned once.
    let mut bury = db.prepare("DESPAWN WHERE Health.hp <= 0").expect("valid statement");
    let mut thaw = db.prepare("REMOVE Frozen WHERE Health.hp < $1").expect("valid statement");
    let mut census = db
        .prepare("SELECT Team.name, count(*) AS alive, round(avg(Health.hp)) AS avg_hp GROUP BY Team.name ORDER BY Team.name")
        .expect("valid statement");

    let start = Instant::now();
    for tick in 0..20u32 {
        // Movement: a typed system, no text.
        for (mut p, v) in db.world_mut().query_filtered_mut::<(&mut Position, &Velocity), Without<Frozen>>() {
            p.x += v.x;
            p.y += v.y;
        }

        // Damage: the poison cloud drifts; text picks the victims, Rust applies the damage.
        let cloud = Value::Vec2([tick as f64 * 10.0 - 100.0, 0.0]);
        let mut poisoned = 0;
        for mut h in db.select::<&mut Health>(POISON_CLOUD, Params::new().set("cloud", cloud)).expect("valid filter") {
            h.hp -= 15.0;
            poisoned += 1;
        }

        // Healing: only one team's players, chosen by parameter.
        let team = if tick % 2 == 0 { "red" } else { "blue" };
        for mut h in db.select::<&mut Health>(HEALERS_AURA, Params::new().set("team", team)).expect("valid filter") {
            h.hp = (h.hp + 10.0).min(h.max);
        }

        // Frozen monsters thaw when hurt; the dead are despawned. Both are atomic statements.
        thaw.execute(&mut db, Params::positional([50])).expect("thaw");
        let buried = bury.execute(&mut db, ()).expect("bury");
        if tick % 5 == 4 {
            println!(
                "tick {:>2}: {poisoned} poisoned, {} buried, {} alive",
                tick + 1,
                buried.rows[0][0],
                db.world().len()
            );
        }
    }
    println!("20 ticks in {:?}", start.elapsed());

    let census = census.query(&db, ()).expect("census");
    for row in &census {
        println!("  team {:<6} {:>5} alive, average hp {}", row[0], row[1], row[2]);
    }
    println!("most threatening (a registered Rust function in text):");
    for row in &db.query(DANGEROUS, ()).expect("valid query") {
        println!("  {} level {} hp {} threat {}", row[0], row[1], row[2], row[3]);
    }

    if std::env::args().any(|a| a == "--serve") {
        serve_forever(db);
    }
}

/// Keeps the world moving at about 60 ticks per second and serves it live: tools read the
/// state published at each tick boundary on their own threads, and their writes (`exec`) are
/// applied between two ticks.
#[cfg(feature = "live")]
fn serve_forever(mut db: Database) {
    use ecsdb::live::{Publisher, ServeOptions, serve};
    let mut publisher = Publisher::new();
    let live =
        serve(publisher.reader(), ServeOptions { allow_writes: true, ..ServeOptions::default() }).expect("serve");
    println!("{}", live.url());
    loop {
        let started = Instant::now();
        publisher.begin_tick();
        for (mut p, v) in db.world_mut().query_filtered_mut::<(&mut Position, &Velocity), Without<Frozen>>() {
            p.x += v.x;
            p.y += v.y;
        }
        publisher.end_tick(&mut db);
        publisher.record_tick_time(started.elapsed());
        std::thread::sleep(Duration::from_millis(16).saturating_sub(started.elapsed()));
    }
}

#[cfg(not(feature = "live"))]
fn serve_forever(_db: Database) {
    let _ = Duration::ZERO;
    eprintln!("serving needs the `live` feature: cargo run --features live --example game_loop -- --serve");
    std::process::exit(2);
}

/// A few thousand monsters and a handful of players on four teams.
fn spawn_level(db: &mut Database) {
    let world = db.world_mut();
    let teams = ["red", "blue", "green", "gold"];
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 10_000) as f32 / 10_000.0
    };
    for i in 0..5_000 {
        let position = Position { x: next() * 400.0 - 200.0, y: next() * 400.0 - 200.0 };
        let velocity = Velocity { x: next() * 2.0 - 1.0, y: next() * 2.0 - 1.0 };
        let team = Team { name: teams[i % 4].to_string() };
        let level = Level { value: 1 + (next() * 50.0) as i32 };
        if i % 100 == 0 {
            world.spawn((position, velocity, Health { hp: 150.0, max: 150.0 }, team, level, Player));
        } else if i % 10 == 0 {
            world.spawn((position, velocity, Health { hp: 100.0, max: 100.0 }, team, level, Frozen));
        } else {
            let hp = 20.0 + next() * 80.0;
            world.spawn((position, velocity, Health { hp, max: 100.0 }, team, level));
        }
    }
}
