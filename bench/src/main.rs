//! ecsdb against its peers on identical workloads.
//!
//! ```text
//! cargo run -p ecsdb-bench --release -- <suite|all> [--json FILE] [--time SECS] [--filter WORKLOAD]
//! ```
//!
//! Prints the machine and one markdown table per suite on stdout (progress on stderr); with
//! `--json FILE`, also one JSON object per measurement and line.
//!
//! Adding a suite: write `src/<suite>.rs` with `pub fn run(s: &mut harness::Suite)`, declare
//! the module below and add one line to [`SUITES`].
#![forbid(unsafe_code)]

mod data;
mod ecs;
mod ecs_storage;
mod expr;
mod harness;
mod index;
mod index_upkeep;
mod live;
mod query;
mod relations;
mod skip;
mod snapshot;
mod spatial;
mod systems;
mod transfer;
mod types;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use harness::{Config, Harness, Suite, SuiteFn};

/// Every allocation of every library goes through the platform allocator (glibc malloc on
/// Linux), named here so that runs compare; no library brings its own.
#[global_allocator]
static ALLOCATOR: std::alloc::System = std::alloc::System;

const ALLOCATOR_NAME: &str = if cfg!(all(target_os = "linux", target_env = "gnu")) {
    "system (std::alloc::System = glibc malloc)"
} else {
    "system (std::alloc::System)"
};

/// The suites, in the order `all` runs them.
const SUITES: &[(&str, SuiteFn)] = &[
    ("ecs", ecs::run),
    ("query", query::run),
    ("expr", expr::run),
    ("spatial", spatial::run),
    ("index", index_suite),
    ("skip", skip::run),
    ("relations", relations::run),
    ("snapshot", snapshot::run),
    ("transfer", transfer::run),
    ("live", live::run),
    ("systems", systems::run),
    ("types", types::run),
];

/// The `index` suite: the value indexes' answers, then their upkeep.
fn index_suite(s: &mut Suite) {
    index::run(s);
    index_upkeep::run(s);
}

const USAGE: &str = "usage: ecsdb-bench <suite|all> [--json FILE] [--time SECS] [--filter WORKLOAD]
  suite        one of the suites below, or `all`
  --json FILE  also write one JSON object per measurement and line to FILE
  --time SECS  measuring time per library per workload (default 0.75)
  --filter S   only workloads whose name contains S";

fn main() -> ExitCode {
    // One large allocation freed before anything is measured puts glibc's malloc in the
    // state every long-running program reaches after its first large free: its dynamic
    // thresholds rise (mmap to the freed size, heap trimming to twice that). Without it, the
    // small workloads measured first (suite_roundtrip) were bimodal from process to process,
    // 25–60 µs, by whether freeing a ~100 KiB buffer trimmed the heap and the next iteration
    // faulted it back in.
    drop(std::hint::black_box(vec![1u8; 4 << 20]));
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}\nsuites: {}", suite_names());
            ExitCode::FAILURE
        }
    }
}

fn suite_names() -> String {
    SUITES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut suite = None;
    let mut json = None;
    let mut config = Config::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}\nsuites: {}", suite_names());
                return Ok(());
            }
            "--json" => json = Some(PathBuf::from(args.next().ok_or("--json needs a file name")?)),
            "--time" => {
                let v = args.next().ok_or("--time needs seconds")?;
                let secs: f64 = v.parse().map_err(|_| format!("--time: not a number: {v}"))?;
                if !(secs > 0.0 && secs < 3600.0) {
                    return Err(format!("--time: out of range: {v}"));
                }
                config.time = Duration::from_secs_f64(secs);
            }
            "--filter" => config.filter = Some(args.next().ok_or("--filter needs a workload name")?),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if suite.is_none() => suite = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    let suite = suite.ok_or("no suite given")?;
    let selected: Vec<_> = if suite == "all" {
        SUITES.to_vec()
    } else {
        let s = SUITES.iter().find(|(n, _)| *n == suite).ok_or(format!("unknown suite {suite}"))?;
        vec![*s]
    };

    println!("## ecsdb-bench\n");
    print!("{}", harness::machine_info(ALLOCATOR_NAME));
    println!(
        "- method: {:.2} s per library per workload after {:.2} s warm-up, in {} interleaved rounds \
         (fixed order); median of runs, a run repeats the workload for ≥ {} µs",
        config.time.as_secs_f64(),
        config.warmup.as_secs_f64(),
        config.rounds,
        config.target_run.as_micros()
    );

    let mut h = Harness::new(config, json.as_deref()).map_err(|e| format!("--json: {e}"))?;
    for (name, f) in selected {
        h.run_suite(name, f).map_err(|e| format!("suite {name}: {e}"))?;
    }
    if h.results().is_empty() {
        return Err("no workload ran (check --filter)".into());
    }
    Ok(())
}
