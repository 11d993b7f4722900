//! `ecsdb run WORLD --ticks N [--dt S] [--busy-timeout T]`: runs a saved world's systems and
//! saves it, holding the world file's lock from load to save.

use std::time::Duration;

use ecsdb::Database;
use indicatif::{ProgressBar, ProgressStyle};

use crate::{Failure, RunArgs, format, world_file};

/// Ticks run between progress-bar updates (and failure collection).
const CHUNK: u64 = 16;

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    if !(args.dt >= 0.0 && args.dt.is_finite()) {
        return Err(Failure::usage(format!("--dt must be 0 or more seconds, not {}", args.dt)));
    }
    // Held from load to save, as `exec` holds it: another writer's save cannot fall in
    // between and be lost.
    let lock = world_file::lock(&args.world, args.busy_timeout)?;
    let world = world_file::load(&args.world)?;
    let mut db = Database::from_world(world);
    let bar = ProgressBar::new(args.ticks);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ticks {elapsed_precise} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut failures = Vec::new();
    let mut done = 0;
    while done < args.ticks {
        let n = CHUNK.min(args.ticks - done);
        match db.tick(n, args.dt) {
            Ok(f) => failures.extend(f),
            Err(e) => {
                bar.abandon();
                format::eprint_line(&format!("ecsdb: {e}"));
                return Err(Failure::Statement);
            }
        }
        done += n;
        bar.set_position(done);
    }
    bar.finish_and_clear();
    let bytes = world_file::save_locked(db.world(), &lock)?;
    println!("{} ticks run ({} in all); saved {} ({bytes} bytes)", args.ticks, db.ticks_run(), args.world.display());
    println!("{:<24} {:>8} {:>12} {:>12} {:>12}", "system", "runs", "rows", "total_ms", "mean_ms");
    for (name, runs, rows, total) in db.system_stats() {
        let mean = if runs == 0 { Duration::ZERO } else { total / runs as u32 };
        println!(
            "{name:<24} {runs:>8} {rows:>12} {:>12.3} {:>12.3}",
            total.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3
        );
    }
    if failures.is_empty() {
        return Ok(());
    }
    for f in &failures {
        format::eprint_line(&format!("ecsdb: tick {}: system {}: {}", f.tick, f.system, f.error));
    }
    Err(Failure::Statement)
}
