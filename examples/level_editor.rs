//! A level-editor-style tool: opens a save without the game's Rust types and edits it by text.
//!
//! An editor knows nothing of the game's code: it loads the snapshot (every component becomes
//! a run-time component, read and written by name), shows the catalog, applies a batch of
//! edits as statements — all of them or none — and saves the result atomically.
//!
//! Run: `cargo run --release --example level_editor [-- SAVE [OUT]]`. With no SAVE, it first
//! writes a small level the way a game would (Rust types, `World::save`). Try it on the demo's
//! snapshot: `cargo run --release --example level_editor -- demo.ecsdb edited.ecsdb`.

use std::path::PathBuf;
use std::process::ExitCode;

use ecsdb::query::{Database, ResultSet};
use ecsdb::{Component, SaveOptions, World};

/// The edits: one script, applied all or nothing.
const EDITS: &str = "
-- Rebalance: the red team gets 20% more health.
UPDATE Health SET max = Health.max * 1.2, hp = Health.hp * 1.2 WHERE Team.name = 'red';
-- Nothing moves in the safe zone around the spawn point.
ADD Frozen WHERE inside(Position, [-50, -50, 0], [50, 50, 10]);
-- Place a boss at the centre.
SPAWN Name {value: 'Gorgax'}, Position {x: 0, y: 0, z: 0}, Health {hp: 5000, max: 5000}, Team {name: 'gold'};
-- Clean up broken entities.
DESPAWN WHERE Health.hp <= 0 OR Health.max <= 0;
";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let dir = std::env::temp_dir();
    let save = args.next().unwrap_or_else(|| {
        let path = dir.join("ecsdb-level.ecsdb");
        write_sample_level(&path);
        path
    });
    let out = args.next().unwrap_or_else(|| dir.join("ecsdb-level-edited.ecsdb"));

    // 1. Open the save: no Rust types needed.
    let world = match World::load(&save) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("cannot open {}: {e}", save.display());
            return ExitCode::from(2);
        }
    };
    let mut db = Database::from_world(world);
    println!("opened {} ({} entities)", save.display(), db.world().len());
    show(&db, "SHOW COMPONENTS");
    show(&db, "DESCRIBE Health");
    show(
        &db,
        "SELECT Team.name, count(*) AS n, max(Health.max) AS max_hp FROM Team GROUP BY Team.name ORDER BY Team.name",
    );

    // 2. Edit by text. A failing statement stops the script; nothing is saved then.
    match db.execute_script(EDITS) {
        Ok(results) => {
            let counts: Vec<String> = results.iter().map(|r| r.rows[0][0].to_string()).collect();
            println!("applied {} edits: {}", results.len(), counts.join(", "));
        }
        Err(e) => {
            eprintln!("{}\nnothing saved", e.render(EDITS));
            return ExitCode::from(1);
        }
    }
    show(
        &db,
        "SELECT Team.name, count(*) AS n, max(Health.max) AS max_hp FROM Team GROUP BY Team.name ORDER BY Team.name",
    );
    show(&db, "SELECT entity, Name.value, Health.hp WHERE Name.value = 'Gorgax'");
    show(&db, "SELECT count(*) AS frozen_in_safe_zone FROM Frozen WHERE inside(Position, [-50, -50, 0], [50, 50, 10])");

    // 3. Save atomically (temporary file, sync, rename): a failure leaves `out` as it was.
    match db.world().save(&out, &SaveOptions::default()) {
        Ok(stats) => println!("saved {} ({} entities, {} bytes)", out.display(), stats.entities, stats.bytes),
        Err(e) => {
            eprintln!("cannot save {}: {e}", out.display());
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn show(db: &Database, text: &str) {
    println!("\n> {text}");
    match db.query(text, ()) {
        Ok(rs) => print_rows(&rs),
        Err(e) => println!("{}", e.render(text)),
    }
}

fn print_rows(rs: &ResultSet) {
    println!("{}", rs.columns.join(" | "));
    for row in rs.rows.iter().take(10) {
        println!("{}", row.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | "));
    }
    if rs.len() > 10 {
        println!("… {} rows", rs.len());
    }
}

/// What a game would save: its own Rust types, the same names as the `ecsdb demo` world.
fn write_sample_level(path: &std::path::Path) {
    #[derive(Component)]
    struct Position {
        x: f32,
        y: f32,
        z: f32,
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
    struct Name {
        value: String,
    }
    #[derive(Component)]
    struct Frozen;

    let mut world = World::new();
    world.register::<Frozen>().expect("a tag");
    let teams = ["red", "blue", "green", "gold"];
    for i in 0..200 {
        let f = i as f32;
        world.spawn((
            Position { x: (f * 37.0) % 400.0 - 200.0, y: (f * 91.0) % 400.0 - 200.0, z: 0.0 },
            Health { hp: if i % 50 == 7 { 0.0 } else { 100.0 }, max: 100.0 },
            Team { name: teams[i % 4].to_string() },
            Name { value: format!("unit-{i}") },
        ));
    }
    world.save(path, &SaveOptions::default()).expect("the level saves");
}
