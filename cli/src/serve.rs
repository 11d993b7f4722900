//! `ecsdb serve WORLD`: load a world, tick it, and serve it live (docs/protocol.md).
//!
//! The URL line (`http://127.0.0.1:PORT/#token=TOKEN`) is the first line on stdout. The loop
//! ticks at `--hz` (0: no ticking; a queued write applies at once). On SIGINT or SIGTERM it
//! stops, saves atomically with `--autosave`, and exits 0.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ecsdb::live::{Publisher, ServeOptions, serve};
use ecsdb::query::Database;

use crate::{Failure, ServeArgs, format, world_file};

/// Runs `ecsdb serve`.
pub fn run(args: &ServeArgs) -> Result<(), Failure> {
    if !(0.0..=10_000.0).contains(&args.hz) {
        return Err(Failure::usage("--hz must be between 0 and 10000"));
    }
    let world = world_file::load(&args.world)?;
    let mut db = Database::from_world(world);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::usage(format!("cannot handle signals: {e}")))?;
    }
    let mut publisher = Publisher::new();
    let options = ServeOptions {
        bind: SocketAddr::new(args.bind, args.port),
        allow_writes: args.allow_writes,
        token: std::env::var("ECSDB_TOKEN").ok().filter(|t| !t.is_empty()),
    };
    let server = serve(publisher.reader(), options).map_err(|e| Failure::usage(e.to_string()))?;
    let url = match args.bind {
        IpAddr::V4(ip) if ip.is_unspecified() => server.url().replace("0.0.0.0", "127.0.0.1"),
        _ => server.url(),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{url}");
    let _ = out.flush();
    format::eprint_line(&format!(
        "serving {} ({} entities) {}, {}; Ctrl-C to stop",
        args.world.display(),
        format::thousands(db.world().len() as u64),
        if args.allow_writes { "read-write" } else { "read-only" },
        if args.hz > 0.0 { format!("{} ticks/s", args.hz) } else { "not ticking".to_string() }
    ));
    run_loop(&mut db, &mut publisher, args.hz, &stop);
    drop(server);
    drop(publisher);
    if args.autosave {
        let bytes = world_file::save(db.world(), &args.world)?;
        format::eprint_line(&format!("saved {} ({} bytes)", args.world.display(), format::thousands(bytes)));
    }
    Ok(())
}

/// The writer's loop: at `hz` ticks per second, each tick runs the world's systems (`$dt` is
/// the tick's period), then ends the tick (queued writes, publish). With `hz` 0 nothing ticks:
/// queued writes are applied as they come.
/// Runs one tick of the world's systems. A system that fails is reported on stderr (the tick
/// goes on without its writes, as `TICK` does); so is a schedule that cannot run, such as one
/// naming Rust systems this program does not have, once until the message changes: serving
/// goes on either way.
fn run_systems(db: &mut Database, dt: f64, reported: &mut Option<String>) {
    let message = match db.tick(1, dt) {
        Ok(failures) if failures.is_empty() => None,
        Ok(failures) => Some(
            failures
                .iter()
                .map(|f| format!("system '{}' failed at tick {}: {}", f.system, f.tick, f.error))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(e) => Some(format!("systems not run: {e}")),
    };
    if let Some(m) = &message
        && reported.as_ref() != Some(m)
    {
        format::eprint_line(m);
    }
    *reported = message;
}

fn run_loop(db: &mut Database, publisher: &mut Publisher, hz: f64, stop: &AtomicBool) {
    if hz <= 0.0 {
        while !stop.load(Ordering::Acquire) {
            publisher.wait_for_work(Duration::from_millis(20));
            publisher.apply_queued(db);
            publisher.publish(db);
        }
        return;
    }
    let period = Duration::from_secs_f64(1.0 / hz);
    let mut next = Instant::now();
    let mut reported = None;
    while !stop.load(Ordering::Acquire) {
        let started = Instant::now();
        // Readers' statements pause while the systems run (see `Publisher::begin_tick`).
        publisher.begin_tick();
        run_systems(db, period.as_secs_f64(), &mut reported);
        publisher.end_tick(db);
        publisher.record_tick_time(started.elapsed());
        next += period;
        let now = Instant::now();
        if next > now {
            // Sleep in short steps so a signal stops the loop promptly.
            let until = next;
            while !stop.load(Ordering::Acquire) && Instant::now() < until {
                std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
            }
        } else {
            next = now;
        }
    }
}
