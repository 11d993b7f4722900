//! `ecsdb run WORLD --ticks N [--dt S] [--busy-timeout T]`: runs a saved world's systems and
//! saves it, holding the world file's lock from load to save.

use std::time::{Duration, Instant};

use ecsdb::Database;
use indicatif::{ProgressBar, ProgressStyle};

use crate::{Failure, RunArgs, format, world_file};

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
    // Each tick timed whole (wall time: the systems, their indexes and the tick's own work),
    // which the per-system sums below do not show.
    let mut tick_times = Vec::with_capacity(args.ticks.min(1 << 20) as usize);
    for done in 1..=args.ticks {
        let start = Instant::now();
        match db.tick(1, args.dt) {
            Ok(f) => failures.extend(f),
            Err(e) => {
                bar.abandon();
                format::eprint_line(&format!("ecsdb: {e}"));
                return Err(Failure::Statement);
            }
        }
        tick_times.push(start.elapsed());
        bar.set_position(done);
    }
    bar.finish_and_clear();
    let bytes = world_file::save_locked(db.world(), &lock)?;
    println!("{} ticks run ({} in all); saved {} ({bytes} bytes)", args.ticks, db.ticks_run(), args.world.display());
    if let (Some(median), Some(p99)) = (percentile(&mut tick_times, 50), percentile(&mut tick_times, 99)) {
        println!("tick: median {:.3} ms, p99 {:.3} ms", median.as_secs_f64() * 1e3, p99.as_secs_f64() * 1e3);
    }
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

/// The `p`-th percentile of `times` by nearest rank (the smallest time at least `p`% of the
/// times do not exceed); `None` when there are none. Sorts `times`.
fn percentile(times: &mut [Duration], p: usize) -> Option<Duration> {
    if times.is_empty() {
        return None;
    }
    times.sort_unstable();
    let rank = (p * times.len()).div_ceil(100).max(1);
    Some(times[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        assert_eq!(percentile(&mut [], 50), None);
        assert_eq!(percentile(&mut ms(&[7]), 99), Some(Duration::from_millis(7)));
        let mut t = ms(&[5, 1, 4, 2, 3]);
        assert_eq!(percentile(&mut t, 50), Some(Duration::from_millis(3)));
        assert_eq!(percentile(&mut t, 99), Some(Duration::from_millis(5)));
        // 100 ticks: the 99th is the second slowest, one outlier above it.
        let mut t: Vec<Duration> = ms(&(1..=100).rev().collect::<Vec<_>>());
        assert_eq!(percentile(&mut t, 50), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&mut t, 99), Some(Duration::from_millis(99)));
    }
}
