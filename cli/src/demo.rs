//! `ecsdb demo`: the main job on an embedded default.
//!
//! Builds a sample game world whose components are defined at run time by `CREATE COMPONENT`
//! (so the saved file needs no Rust types), runs ticks of systems written in the query language
//! (`CREATE SYSTEM`: UPDATEs and a REMOVE, scheduled and saved with the world, so
//! `ecsdb run demo.ecsdb` carries on), tours the language with
//! queries, their first rows, row counts, timings and EXPLAIN plans with and without an index,
//! and saves a snapshot that `ecsdb query` and `ecsdb shell` open.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::time::{Duration, Instant};

use ecsdb::Value;
use ecsdb::query::{Database, ErrorKind, Params, ResultSet};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::format::{self, millis, thousands};
use crate::{DemoArgs, Failure, world_file};

/// The schema, in the query language.
const SCHEMA: &[&str] = &[
    "CREATE COMPONENT Position (x f32, y f32, z f32)",
    "CREATE COMPONENT Velocity (x f32, y f32, z f32)",
    "CREATE COMPONENT Health (hp f32, max f32)",
    "CREATE COMPONENT Team (name string)",
    "CREATE COMPONENT Name (value string)",
    "CREATE COMPONENT Level (value i32)",
    "CREATE COMPONENT Player",
    "CREATE COMPONENT Monster",
    "CREATE COMPONENT Frozen",
];

const TEAMS: [&str; 4] = ["red", "blue", "green", "gold"];

/// Half the side of the square arena, centred on the origin.
const ARENA: f64 = 1000.0;

/// The centre of the moving hazard: it sweeps the arena as the ticks pass (`$tick`).
const ZONE: &str = "[abs(($tick * 97) % 2400 - 1200) - 600, abs(($tick * 61 + 600) % 2400 - 1200) - 600, 5]";

/// The systems, created with `CREATE SYSTEM` in this order (all in phase OnUpdate, so they run
/// in this order, independent ones together) and saved with the world, so `ecsdb run` carries
/// on the simulation. `{zone}` stands for [`ZONE`]. The dead are respawned in place: moved to
/// a spot drawn from their old one and the tick, then healed.
const SYSTEMS: &[(&str, &str)] = &[
    (
        "movement",
        "UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y FROM Position, Velocity, !Frozen",
    ),
    ("bounce_x", "UPDATE Velocity SET x = -Velocity.x WHERE abs(Position.x) > 1000 AND Position.x * Velocity.x > 0"),
    ("bounce_y", "UPDATE Velocity SET y = -Velocity.y WHERE abs(Position.y) > 1000 AND Position.y * Velocity.y > 0"),
    ("hazard", "UPDATE Health SET hp = Health.hp - 40 WHERE within(Position, {zone}, 200)"),
    ("thaw", "REMOVE Frozen WHERE within(Position, {zone}, 200)"),
    ("regen", "UPDATE Health SET hp = min(Health.max, Health.hp + 5) FROM Health, Player"),
    ("level_up", "UPDATE Level SET value = Level.value + 1 FROM Level, Player WHERE Health.hp >= Health.max"),
    (
        "respawn",
        "UPDATE Position SET x = abs(Position.x * 31 + $tick * 97) % 2000 - 1000, \
         y = abs(Position.y * 17 + $tick * 61) % 2000 - 1000 FROM Position, Health WHERE Health.hp <= 0",
    ),
    ("revive", "UPDATE Health SET hp = Health.max WHERE Health.hp <= 0"),
];

/// A system's statement with the hazard's centre filled in.
fn system_text(text: &str) -> String {
    text.replace("{zone}", ZONE)
}

/// What a tour step shows about a query.
struct TourStep {
    title: &'static str,
    text: &'static str,
    /// Show the plan.
    explain: bool,
    /// Create this index, then show the plan and time the query again.
    index: Option<&'static str>,
    /// How many rows to show.
    rows: usize,
}

const TOUR: &[TourStep] = &[
    TourStep {
        title: "The catalog: components defined at run time",
        text: "SHOW COMPONENTS",
        explain: false,
        index: None,
        rows: 10,
    },
    TourStep {
        title: "Teams: a join of Team, Health and Level, grouped",
        text: "SELECT Team.name, count(*) AS members, avg(Health.hp) AS avg_hp, max(Level.value) AS top_level \
               FROM Team, Health, Level GROUP BY Team.name ORDER BY Team.name",
        explain: true,
        index: None,
        rows: 5,
    },
    TourStep {
        title: "Wounded players, highest level first",
        text: "SELECT entity, Name.value, Level.value, Health.hp FROM Player \
               WHERE Health.hp < Health.max / 2 ORDER BY Level.value DESC, Health.hp LIMIT 5",
        explain: false,
        index: None,
        rows: 5,
    },
    TourStep {
        title: "Named monsters whose name starts with 'zi' (components required implicitly, no FROM)",
        text: "SELECT Name.value, Team.name, Level.value WHERE Name.value LIKE 'zi%' AND has(Monster) \
               ORDER BY Level.value DESC, Name.value LIMIT 5",
        explain: false,
        index: None,
        rows: 5,
    },
    TourStep {
        title: "Things that cannot move: NOT a term",
        text: "SELECT entity, Position, Health FROM Position, Health, !Velocity LIMIT 3",
        explain: false,
        index: None,
        rows: 5,
    },
    TourStep {
        title: "Frozen monsters per team",
        text: "SELECT Team.name, count(*) AS frozen FROM Monster, Frozen GROUP BY Team.name ORDER BY frozen DESC",
        explain: false,
        index: None,
        rows: 5,
    },
    TourStep {
        title: "Critically hurt: a selective range on Health.hp",
        text: "SELECT count(*) AS critical, avg(Level.value) AS avg_level WHERE Health.hp <= 1",
        explain: true,
        index: Some("CREATE INDEX ON Health (hp) USING btree"),
        rows: 5,
    },
    TourStep {
        title: "Badly hurt red monsters: neither index pays alone, intersected they do",
        text: "SELECT count(*) AS hurt_red_monsters FROM Monster WHERE Team.name = 'red' AND Health.hp <= 3",
        explain: true,
        index: Some("CREATE INDEX ON Team (name) USING bitmap"),
        rows: 5,
    },
    TourStep {
        title: "The 5 entities nearest the centre (?Name: named or not)",
        text: "SELECT entity, Name.value, Position, distance(Position, [0, 0, 0]) AS dist FROM Position, ?Name \
               ORDER BY distance(Position, [0, 0, 0]) LIMIT 5",
        explain: true,
        index: Some("CREATE INDEX ON Position USING rtree"),
        rows: 5,
    },
];

/// A small deterministic generator (SplitMix64): the demo world is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A made-up name of two or three syllables (`ziggy`, `karo`, `velumi`).
    fn name(&mut self) -> String {
        const SYLLABLES: [&str; 16] =
            ["zi", "ggy", "ka", "ro", "mi", "ta", "lu", "ne", "vo", "sha", "qi", "do", "ra", "fen", "bel", "zor"];
        let n = 2 + self.below(2);
        (0..n).map(|_| SYLLABLES[self.below(SYLLABLES.len() as u64) as usize]).collect()
    }
}

/// Where the demo's output goes, and whether progress bars are drawn.
struct Out {
    w: BufWriter<io::Stdout>,
    bars: bool,
}

impl Out {
    fn line(&mut self, s: &str) -> Result<(), Failure> {
        writeln!(self.w, "{s}").map_err(format::output_failure)
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.w.flush().map_err(format::output_failure)
    }

    fn bar(&self, len: Option<u64>, template: &str) -> ProgressBar {
        let target = if self.bars { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(len, target);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    }
}

/// Runs `ecsdb demo`.
pub fn run(args: &DemoArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let stdout = io::stdout();
    let mut out = Out { bars: stdout.is_terminal(), w: BufWriter::new(stdout) };
    let mut db = Database::new();
    let mut tour_failures = 0usize;

    out.line(&format!(
        "ecsdb demo: a game world of {} entities, {} ticks of systems written in the query language, \
         a tour of queries, a snapshot.",
        thousands(args.entities as u64),
        args.ticks
    ))?;

    // 1. Schema.
    out.line("")?;
    out.line("[1/5] Schema, defined at run time (no Rust types needed to open the saved world)")?;
    for stmt in SCHEMA {
        out.line(&format!("  {stmt}"))?;
        statement(&mut db, stmt, &Params::new())?;
    }

    // 2. Entities.
    out.line("")?;
    out.line(&format!("[2/5] Spawning {} entities", thousands(args.entities as u64)))?;
    out.flush()?;
    let t = Instant::now();
    spawn_world(&mut db, args.entities, &out)?;
    let world = db.world();
    let tables = world.tables().iter().filter(|t| !t.is_empty()).count();
    let count = |name: &str| world.component_id(name).map_or(0, |id| world.component_count(id));
    out.line(&format!(
        "  {} entities in {} archetype tables in {}: {} players, {} monsters ({} frozen), {} props",
        thousands(world.len() as u64),
        tables,
        millis(t.elapsed()),
        thousands(count("Player") as u64),
        thousands(count("Monster") as u64),
        thousands(count("Frozen") as u64),
        thousands((world.len() - count("Player") - count("Monster")) as u64),
    ))?;

    // 3. Ticks.
    out.line("")?;
    out.line(&format!(
        "[3/5] {} ticks of systems (CREATE SYSTEM, saved with the world; the hazard sweeps around {{zone}} = {ZONE})",
        args.ticks
    ))?;
    for (name, text) in SYSTEMS {
        out.line(&format!("  CREATE SYSTEM {name} AS {text}"))?;
    }
    out.flush()?;
    create_systems(&mut db)?;
    run_ticks(&mut db, args.ticks, &mut out)?;

    // 4. Tour.
    out.line("")?;
    out.line("[4/5] A tour of the language (timings: best of 3 runs)")?;
    for (i, step) in TOUR.iter().enumerate() {
        out.line("")?;
        let title = format!("── {}. {} ", i + 1, step.title);
        let fill = 100usize.saturating_sub(title.chars().count());
        out.line(&format!("{title}{}", "─".repeat(fill)))?;
        tour_failures += tour_step(&mut db, step, &mut out)?;
    }
    out.line("")?;
    let file = args.out.display().to_string();
    let file = if file.contains([' ', '\'', '"']) { format!("'{}'", file.replace('\'', "'\\''")) } else { file };
    const JSON_QUERY: &str = "SELECT Team.name, count(*) FROM Team GROUP BY Team.name ORDER BY Team.name";
    out.line(&format!("Tools get JSON: ecsdb query {file} \"{JSON_QUERY}\" --format json"))?;
    match db.query(JSON_QUERY, ()) {
        Ok(rs) => out.line(&format!("  {}", rs.to_json_string()))?,
        Err(e) => {
            tour_failures += 1;
            out.line(&indent(&e.render(JSON_QUERY), "  "))?;
        }
    }

    // 5. Snapshot.
    out.line("")?;
    out.line(&format!("[5/5] Saving the world to {}", args.out.display()))?;
    out.flush()?;
    let bar = out.bar(None, "  {spinner} saving {elapsed}");
    bar.enable_steady_tick(Duration::from_millis(100));
    let t = Instant::now();
    let saved = world_file::save(db.world(), &args.out);
    bar.finish_and_clear();
    let bytes = saved?;
    out.line(&format!(
        "  {} entities, {} bytes, in {}",
        thousands(db.world().len() as u64),
        thousands(bytes),
        millis(t.elapsed())
    ))?;

    out.line("")?;
    out.line(&format!("Done in {}. Next:", millis(started.elapsed())))?;
    out.line(&format!(
        "  ecsdb query {file} \"SELECT Name.value, Level.value FROM Player ORDER BY Level.value DESC LIMIT 10\""
    ))?;
    out.line(&format!("  ecsdb query {file} \"EXPLAIN SELECT count(*) WHERE Health.hp < 10\""))?;
    out.line(&format!("  ecsdb shell {file}"))?;
    out.flush()?;
    if tour_failures > 0 {
        format::eprint_line(&format!("ecsdb demo: {tour_failures} tour step(s) failed (see above)"));
        return Err(Failure::Statement);
    }
    Ok(())
}

/// Runs a statement the demo cannot do without; its failure ends the demo with exit code 1.
fn statement(db: &mut Database, text: &str, params: &Params) -> Result<ResultSet, Failure> {
    db.execute(text, params).map_err(|e| {
        format::eprint_line(&format::render_error(text, &e, Some("ecsdb demo")));
        Failure::Statement
    })
}

/// Spawns the sample world: 2% players (named, levels 1..60), 10% props (no velocity, team
/// or tags), the rest monsters (a third of them named, 5% frozen).
fn spawn_world(db: &mut Database, n: u32, out: &Out) -> Result<(), Failure> {
    let mut rng = Rng(0x00EC_5DB0);
    let bar = out.bar(Some(n as u64), "  [{bar:40}] {pos}/{len} entities {elapsed}");
    let world = db.world_mut();
    for i in 0..n {
        let pos = [
            ("x", Value::Float(rng.range(-ARENA, ARENA))),
            ("y", Value::Float(rng.range(-ARENA, ARENA))),
            ("z", Value::Float(rng.range(0.0, 10.0))),
        ];
        let vel = [
            ("x", Value::Float(rng.range(-5.0, 5.0))),
            ("y", Value::Float(rng.range(-5.0, 5.0))),
            ("z", Value::Float(0.0)),
        ];
        let team = [("name", Value::Str(TEAMS[rng.below(4) as usize].to_string()))];
        let result = if i % 50 == 0 {
            let max = 200.0;
            let health = [("hp", Value::Float((1 + rng.below(200)) as f64)), ("max", Value::Float(max))];
            let name = [("value", Value::Str(rng.name()))];
            let level = [("value", Value::Int(1 + rng.below(60) as i64))];
            world.spawn_values(&[
                ("Position", &pos),
                ("Velocity", &vel),
                ("Health", &health),
                ("Team", &team),
                ("Name", &name),
                ("Level", &level),
                ("Player", &[]),
            ])
        } else if i % 10 == 9 {
            let health = [("hp", Value::Float(50.0)), ("max", Value::Float(50.0))];
            world.spawn_values(&[("Position", &pos), ("Health", &health)])
        } else {
            let health = [("hp", Value::Float((1 + rng.below(100)) as f64)), ("max", Value::Float(100.0))];
            let level = [("value", Value::Int(1 + rng.below(30) as i64))];
            let mut comps: Vec<(&str, &[(&str, Value)])> = vec![
                ("Position", &pos),
                ("Velocity", &vel),
                ("Health", &health),
                ("Team", &team),
                ("Level", &level),
                ("Monster", &[]),
            ];
            let name;
            if rng.below(3) == 0 {
                name = [("value", Value::Str(rng.name()))];
                comps.push(("Name", &name));
            }
            if rng.below(20) == 0 {
                comps.push(("Frozen", &[]));
            }
            world.spawn_values(&comps)
        };
        if let Err(e) = result {
            bar.finish_and_clear();
            format::eprint_line(&format!("ecsdb demo: cannot spawn: {e}"));
            return Err(Failure::Statement);
        }
        if i % 1024 == 1023 {
            bar.inc(1024);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Creates the demo's systems (saved with the world).
fn create_systems(db: &mut Database) -> Result<(), Failure> {
    for (name, text) in SYSTEMS {
        let create = format!("CREATE SYSTEM {name} AS {}", system_text(text));
        statement(db, &create, &Params::new())?;
    }
    Ok(())
}

/// Rows and time of every system so far, by system, in [`SYSTEMS`] order.
fn system_totals(db: &Database) -> Vec<(u64, Duration)> {
    let stats = db.system_stats();
    SYSTEMS
        .iter()
        .map(|(name, _)| {
            stats.iter().find(|s| s.0 == *name).map_or((0, Duration::ZERO), |(_, _, rows, total)| (*rows, *total))
        })
        .collect()
}

fn run_ticks(db: &mut Database, ticks: u32, out: &mut Out) -> Result<(), Failure> {
    let start = system_totals(db);
    let bar = out.bar(Some(ticks as u64), "  [{bar:40}] tick {pos}/{len} {elapsed}");
    for tick in 0..ticks {
        let before = system_totals(db);
        let t0 = Instant::now();
        let failures = db.tick(1, 1.0).map_err(|e| {
            bar.finish_and_clear();
            format::eprint_line(&format!("ecsdb demo: {e}"));
            Failure::Statement
        })?;
        let spent = t0.elapsed();
        if let Some(f) = failures.first() {
            bar.finish_and_clear();
            format::eprint_line(&format!("ecsdb demo: system {} failed: {}", f.system, f.error));
            return Err(Failure::Statement);
        }
        let after = system_totals(db);
        let counts: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a.0 - b.0).collect();
        let line = format!(
            "  tick {:>2}: moved {}, bounced {}, hit {}, thawed {}, healed {}, levelled {}, {} died and respawned  ({})",
            tick + 1,
            thousands(counts[0]),
            thousands(counts[1] + counts[2]),
            thousands(counts[3]),
            thousands(counts[4]),
            thousands(counts[5]),
            thousands(counts[6]),
            thousands(counts[7]),
            millis(spent)
        );
        bar.suspend(|| out.line(&line).and_then(|()| out.flush()))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if ticks > 0 {
        out.line("  time per system over all ticks (rows affected in all; SHOW SYSTEMS has them too):")?;
        let end = system_totals(db);
        for (((name, _), (rows1, t1)), (rows0, t0)) in SYSTEMS.iter().zip(&end).zip(&start) {
            let d = *t1 - *t0;
            out.line(&format!(
                "    {name:<9} {:>10}  {:>9} per tick  {:>10} rows",
                millis(d),
                millis(d / ticks),
                thousands(rows1 - rows0)
            ))?;
        }
    }
    Ok(())
}

/// Runs `text` up to three times (more only while fast) and returns the result and the best time.
fn timed_query(db: &Database, text: &str) -> Result<(ResultSet, Duration), ecsdb::query::Error> {
    let mut best = Duration::MAX;
    let mut result = None;
    for _ in 0..3 {
        let t = Instant::now();
        let rs = db.query(text, ())?;
        best = best.min(t.elapsed());
        result = Some(rs);
    }
    Ok((result.unwrap_or_else(|| ResultSet { columns: Vec::new(), rows: Vec::new() }), best))
}

fn indent(text: &str, by: &str) -> String {
    text.lines().map(|l| format!("{by}{l}")).collect::<Vec<_>>().join("\n")
}

/// Shows one tour step; returns the number of failures (unexpected errors) in it.
fn tour_step(db: &mut Database, step: &TourStep, out: &mut Out) -> Result<usize, Failure> {
    out.line(&format!("  {}", step.text))?;
    let (rs, before) = match timed_query(db, step.text) {
        Ok(r) => r,
        Err(e) => {
            out.line(&indent(&e.render(step.text), "  "))?;
            return Ok(1);
        }
    };
    let mut table = Vec::new();
    format::write_table(&mut table, &rs, Some(step.rows)).map_err(format::output_failure)?;
    let table = String::from_utf8_lossy(&table);
    let mut lines: Vec<&str> = table.lines().collect();
    let count_line = lines.pop().unwrap_or("");
    for l in lines {
        out.line(&format!("  {l}"))?;
    }
    out.line(&format!("  {count_line} in {}", millis(before)))?;
    if step.explain {
        show_plan(db, step.text, if step.index.is_some() { "plan (before the index)" } else { "plan" }, out)?;
    }
    let Some(create) = step.index else { return Ok(0) };
    out.line(&format!("  {create}"))?;
    let t = Instant::now();
    match db.execute(create, ()) {
        Ok(_) => out.line(&format!("  index built in {}", millis(t.elapsed())))?,
        Err(e) if e.kind == ErrorKind::Unsupported => {
            out.line(&format!("  (no index: {}; the query runs by scanning)", e.message))?;
            return Ok(0);
        }
        Err(e) => {
            out.line(&indent(&e.render(create), "  "))?;
            return Ok(1);
        }
    }
    show_plan(db, step.text, "plan (with the index)", out)?;
    match timed_query(db, step.text) {
        Ok((again, after)) => {
            let same = if again == rs { "the same answer" } else { "A DIFFERENT ANSWER (a bug)" };
            out.line(&format!(
                "  with the index: {} in {} (was {}), {same}",
                format::row_count_line(again.len()),
                millis(after),
                millis(before)
            ))?;
            Ok(usize::from(again != rs))
        }
        Err(e) => {
            out.line(&indent(&e.render(step.text), "  "))?;
            Ok(1)
        }
    }
}

fn show_plan(db: &Database, text: &str, label: &str, out: &mut Out) -> Result<(), Failure> {
    let explain = format!("EXPLAIN {text}");
    match db.query(&explain, ()) {
        Ok(plan) => {
            out.line(&format!("  {label}:"))?;
            for row in &plan.rows {
                let line = row.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ");
                out.line(&format!("    {line}"))?;
            }
        }
        Err(e) => out.line(&indent(&e.render(&explain), "  "))?,
    }
    Ok(())
}
