//! Timing, medians, the markdown table, JSON lines and the machine description.
//!
//! A suite is a function `fn(&mut Suite)`. For each workload it calls
//! [`Suite::workload`] with a closure that registers one sampler per library; the harness
//! warms every library up, then runs interleaved rounds (ecsdb, hecs, bevy_ecs, ecsdb, …) so
//! that noise lands on all libraries alike, and records the median time of one iteration.
//!
//! ```ignore
//! pub fn run(s: &mut Suite) {
//!     s.workload("sum", |w| {
//!         let world = build_world();               // setup: not timed
//!         w.lib("ecsdb", iter(move || world.sum()));  // timed, repeated on the same state
//!         w.lib("hecs", batched(|| input(), |i| consume(i)));  // setup per run, not timed
//!     });
//!     s.note("a line printed under the table");
//! }
//! ```

use std::fmt::Write as _;
use std::fs::File;
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

/// A suite: registers its workloads on the [`Suite`] it is given.
pub type SuiteFn = fn(&mut Suite);

/// Runs `iters` iterations of a workload and returns the time they took (setup excluded).
pub type Sampler<'a> = Box<dyn FnMut(u64) -> Duration + 'a>;

/// Library columns, in this order; ecsdb variants (`ecsdb-<variant>`) sit right after `ecsdb`.
/// A library not listed goes last, in the order the suite registered it.
pub const LIBRARY_ORDER: &[&str] = &["ecsdb", "hecs", "bevy_ecs", "sqlite"];

/// How long and how carefully to measure.
#[derive(Clone, Debug)]
pub struct Config {
    /// Measuring time per library per workload (warm-up not included).
    pub time: Duration,
    /// Warm-up time per library per workload (also calibrates iterations per run).
    pub warmup: Duration,
    /// Interleaved rounds; every library runs at least once per round.
    pub rounds: u32,
    /// Each run repeats the workload until it takes about this long, so that the timer's
    /// own cost stays far below the measured time; runs of slower workloads are one iteration.
    pub target_run: Duration,
    /// Only workloads whose name contains this string run.
    pub filter: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            time: Duration::from_millis(750),
            warmup: Duration::from_millis(150),
            rounds: 10,
            target_run: Duration::from_micros(200),
            filter: None,
        }
    }
}

/// One library on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// Suite name (`ecs`).
    pub suite: String,
    /// Workload name (`simple_iter`).
    pub workload: String,
    /// Library name (`ecsdb`, `ecsdb-prepared`, `hecs`, `bevy_ecs`, `sqlite`).
    pub library: String,
    /// Median time of one iteration, nanoseconds.
    pub median_ns: f64,
    /// Timed runs the median is taken over.
    pub runs: usize,
    /// Iterations per timed run (the run's time is divided by this).
    pub iters_per_run: u64,
    /// Fastest run, per iteration.
    pub min_ns: f64,
    /// Median absolute deviation of the runs from the median, per iteration.
    pub mad_ns: f64,
    /// Extra keys a suite attaches (`bytes`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whole-binary state: configuration, JSON output, collected results.
pub struct Harness {
    config: Config,
    json: Option<BufWriter<File>>,
    results: Vec<Measurement>,
}

impl Harness {
    /// A harness writing JSON lines to `json` (created or truncated) when given.
    pub fn new(config: Config, json: Option<&Path>) -> std::io::Result<Self> {
        let json = match json {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        };
        Ok(Harness { config, json, results: Vec::new() })
    }

    /// Every measurement so far.
    pub fn results(&self) -> &[Measurement] {
        &self.results
    }

    /// Runs one suite and prints its table (stdout) and progress (stderr).
    pub fn run_suite(&mut self, name: &'static str, run: SuiteFn) -> std::io::Result<()> {
        eprintln!("== suite {name}");
        let mut suite = Suite { harness: self, name, workloads: Vec::new(), notes: Vec::new(), error: None };
        run(&mut suite);
        let Suite { workloads, notes, error, .. } = suite;
        if let Some(e) = error {
            return Err(e);
        }
        let first = self.results.len() - self.results.iter().rev().take_while(|m| m.suite == name).count();
        let table = render_table(name, &workloads, &self.results[first..], &notes);
        print!("{table}");
        std::io::stdout().flush()?;
        if let Some(j) = &mut self.json {
            j.flush()?;
        }
        Ok(())
    }

    fn record(&mut self, m: Measurement) -> std::io::Result<()> {
        if let Some(j) = &mut self.json {
            serde_json::to_writer(&mut *j, &m)?;
            j.write_all(b"\n")?;
        }
        self.results.push(m);
        Ok(())
    }
}

/// A suite being run: register workloads and notes.
pub struct Suite<'h> {
    harness: &'h mut Harness,
    name: &'static str,
    workloads: Vec<String>,
    notes: Vec<String>,
    error: Option<std::io::Error>,
}

impl Suite<'_> {
    /// Whether `workload` passes the `--filter`.
    pub fn enabled(&self, workload: &str) -> bool {
        self.harness.config.filter.as_deref().is_none_or(|f| workload.contains(f))
    }

    /// Measures one workload. `register` builds each library's state (not timed) and adds its
    /// sampler with [`Workload::lib`]; it is not called when the workload is filtered out.
    /// Workloads appear in the table in the order the suite runs them.
    pub fn workload<'a>(&mut self, name: &str, register: impl FnOnce(&mut Workload<'a>)) {
        if !self.enabled(name) || self.error.is_some() {
            return;
        }
        let mut w = Workload { libs: Vec::new() };
        register(&mut w);
        let mut libs = w.libs;
        libs.sort_by_key(|l| library_rank(&l.name));
        self.workloads.push(name.to_string());
        eprintln!("-- {name}: {}", libs.iter().map(|l| l.name.as_str()).collect::<Vec<_>>().join(", "));
        let measured = measure(&self.harness.config, &mut libs);
        for (lib, runs) in libs.into_iter().zip(measured) {
            let m = summarize(self.name, name, lib.name, lib.extra, runs);
            eprintln!("   {:<16} {:>10}  ({} runs × {})", m.library, human(m.median_ns), m.runs, m.iters_per_run);
            if let Err(e) = self.harness.record(m) {
                self.error = Some(e);
            }
        }
    }

    /// A line printed under the suite's table.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }
}

/// The libraries of one workload.
pub struct Workload<'a> {
    libs: Vec<Lib<'a>>,
}

struct Lib<'a> {
    name: String,
    sampler: Sampler<'a>,
    extra: Map<String, Value>,
}

impl<'a> Workload<'a> {
    /// Adds a library's sampler (see [`iter`] and [`batched`]).
    pub fn lib(&mut self, name: &str, sampler: Sampler<'a>) -> &mut Self {
        self.libs.push(Lib { name: name.to_string(), sampler, extra: Map::new() });
        self
    }

    /// Attaches an extra JSON key to the library added last.
    pub fn extra(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        let lib = self.libs.last_mut().expect("extra() after lib()");
        lib.extra.insert(key.to_string(), value.into());
        self
    }
}

/// A sampler that calls `f` again and again on the same state (the closure owns it).
/// Whatever `f` returns is dropped inside the timed region; use [`batched`] when building
/// the input or dropping the output must not be timed.
pub fn iter<'a, R>(mut f: impl FnMut() -> R + 'a) -> Sampler<'a> {
    Box::new(move |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(f());
        }
        start.elapsed()
    })
}

/// A sampler that builds a fresh input with `setup` for every iteration (not timed), runs
/// `routine` on it (timed) and drops the output afterwards (not timed).
pub fn batched<'a, I, O>(mut setup: impl FnMut() -> I + 'a, mut routine: impl FnMut(I) -> O + 'a) -> Sampler<'a> {
    Box::new(move |iters| {
        let inputs: Vec<I> = (0..iters).map(|_| setup()).collect();
        let mut outputs = Vec::with_capacity(inputs.len());
        let start = Instant::now();
        for input in inputs {
            outputs.push(black_box(routine(black_box(input))));
        }
        let elapsed = start.elapsed();
        drop(outputs);
        elapsed
    })
}

/// A sampler for writes: `reset` puts the state back before every iteration (not timed),
/// then `routine` changes it (timed); what `routine` returns is dropped after the clock stops.
pub fn reset_each<'a, O>(mut reset: impl FnMut() + 'a, mut routine: impl FnMut() -> O + 'a) -> Sampler<'a> {
    Box::new(move |iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            reset();
            let start = Instant::now();
            let out = black_box(routine());
            total += start.elapsed();
            drop(out);
        }
        total
    })
}

fn library_rank(name: &str) -> (usize, usize) {
    let base = name.split_once('-').map_or(name, |(b, _)| b);
    let variant = usize::from(base != name);
    (LIBRARY_ORDER.iter().position(|l| *l == base).unwrap_or(LIBRARY_ORDER.len()), variant)
}

/// Per library: the per-iteration time of each run, and iterations per run.
struct Runs {
    per_iter_ns: Vec<f64>,
    iters: u64,
}

fn measure(config: &Config, libs: &mut [Lib<'_>]) -> Vec<Runs> {
    // Warm-up, in the fixed order; the fastest warm-up iteration sets the iterations per run.
    let mut runs: Vec<Runs> = libs
        .iter_mut()
        .map(|lib| {
            let start = Instant::now();
            let mut best = Duration::MAX;
            let mut n = 0;
            while n < 3 || start.elapsed() < config.warmup {
                best = best.min((lib.sampler)(1));
                n += 1;
            }
            let iters = (config.target_run.as_nanos() / best.as_nanos().max(1)).clamp(1, 1_000_000) as u64;
            Runs { per_iter_ns: Vec::new(), iters }
        })
        .collect();
    // Interleaved rounds: every library gets a time slice per round, at least one run.
    let rounds = config.rounds.max(1);
    let slice = config.time / rounds;
    for _ in 0..rounds {
        for (lib, r) in libs.iter_mut().zip(&mut runs) {
            let start = Instant::now();
            loop {
                let t = (lib.sampler)(r.iters);
                r.per_iter_ns.push(t.as_nanos() as f64 / r.iters as f64);
                if start.elapsed() >= slice {
                    break;
                }
            }
        }
    }
    runs
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

fn summarize(suite: &str, workload: &str, library: String, extra: Map<String, Value>, runs: Runs) -> Measurement {
    let mut v = runs.per_iter_ns;
    v.sort_by(f64::total_cmp);
    let med = median(&v);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    Measurement {
        suite: suite.to_string(),
        workload: workload.to_string(),
        library,
        median_ns: med,
        runs: v.len(),
        iters_per_run: runs.iters,
        min_ns: v.first().copied().unwrap_or(f64::NAN),
        mad_ns: median(&dev),
        extra,
    }
}

/// A duration in nanoseconds with three significant digits and a human unit.
pub fn human(ns: f64) -> String {
    if !ns.is_finite() {
        return "–".into();
    }
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// Bytes with a binary unit.
pub fn human_bytes(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} B")
    } else if bytes < 1024.0 * 1024.0 {
        format!("{:.1} KiB", bytes / 1024.0)
    } else {
        format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
    }
}

/// The library whose ratio the table shows: `ecsdb`, or else the first ecsdb variant.
fn ours<'m>(rows: &[&'m Measurement]) -> Option<&'m Measurement> {
    rows.iter().find(|m| m.library == "ecsdb").or_else(|| rows.iter().find(|m| is_ours(&m.library))).copied()
}

fn is_ours(library: &str) -> bool {
    library == "ecsdb" || library.starts_with("ecsdb-")
}

fn render_table(suite: &str, workloads: &[String], results: &[Measurement], notes: &[String]) -> String {
    let mut libs: Vec<&str> = Vec::new();
    for m in results {
        if !libs.contains(&m.library.as_str()) {
            libs.push(&m.library);
        }
    }
    libs.sort_by_key(|l| library_rank(l));
    let mut out = String::new();
    let _ = writeln!(out, "\n### Suite `{suite}` (median time per iteration)\n");
    let _ = write!(out, "| workload |");
    for l in &libs {
        let _ = write!(out, " {l} |");
    }
    let _ = writeln!(out, " ecsdb / best peer |");
    let _ = write!(out, "|---|");
    for _ in &libs {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out, "---:|");
    let mut noisy = Vec::new();
    for w in workloads {
        let rows: Vec<&Measurement> = results.iter().filter(|m| &m.workload == w).collect();
        let _ = write!(out, "| {w} |");
        for l in &libs {
            match rows.iter().find(|m| m.library == *l) {
                Some(m) => {
                    let _ = write!(out, " {} |", human(m.median_ns));
                    if m.mad_ns > 0.05 * m.median_ns {
                        noisy.push(format!("{w}/{l} ±{:.0}%", 100.0 * m.mad_ns / m.median_ns));
                    }
                }
                None => {
                    let _ = write!(out, " – |");
                }
            }
        }
        let best_peer = rows.iter().filter(|m| !is_ours(&m.library)).map(|m| m.median_ns).min_by(f64::total_cmp);
        match (ours(&rows), best_peer) {
            (Some(o), Some(p)) if p > 0.0 => {
                let _ = writeln!(out, " {:.2} |", o.median_ns / p);
            }
            _ => {
                let _ = writeln!(out, " – |");
            }
        }
    }
    out.push('\n');
    for n in notes {
        let _ = writeln!(out, "{n}  ");
    }
    if !noisy.is_empty() {
        let _ = writeln!(out, "Noisy (median absolute deviation > 5% of the median): {}  ", noisy.join(", "));
    }
    out
}

/// The machine, toolchain and allocator, as markdown lines.
pub fn machine_info(allocator: &str) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let logical = cpuinfo.lines().filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor")).count();
    let available = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown (rustc not on PATH)".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into());
    let profile = if cfg!(debug_assertions) { "DEBUG build: numbers are meaningless" } else { "release" };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "- CPU: {model}, {logical} logical cores in /proc/cpuinfo, {available} available to this process  "
    );
    let _ = writeln!(
        out,
        "- OS: {} {}, load average at start (1/5/15 min): {load}  ",
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    let _ = writeln!(out, "- rustc: {rustc} (found on PATH at run time), profile: {profile}  ");
    let _ = writeln!(out, "- allocator: {allocator}  ");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_order_puts_variants_after_ecsdb() {
        let mut v = vec!["bevy_ecs", "hecs", "ecsdb-prepared", "sqlite", "ecsdb", "other"];
        v.sort_by_key(|l| library_rank(l));
        assert_eq!(v, ["ecsdb", "ecsdb-prepared", "hecs", "bevy_ecs", "sqlite", "other"]);
    }

    #[test]
    fn median_and_units() {
        assert_eq!(median(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), 2.5);
        assert_eq!(human(6400.0), "6.40 µs");
        assert_eq!(human(950.0), "950 ns");
        assert_eq!(human(12_345_678.0), "12.3 ms");
    }

    #[test]
    fn table_ratio_uses_plain_ecsdb_against_fastest_peer() {
        let m = |lib: &str, ns: f64| Measurement {
            suite: "s".into(),
            workload: "w".into(),
            library: lib.into(),
            median_ns: ns,
            runs: 10,
            iters_per_run: 1,
            min_ns: ns,
            mad_ns: 0.0,
            extra: Map::new(),
        };
        let rs = [m("ecsdb", 150.0), m("ecsdb-prepared", 50.0), m("hecs", 100.0), m("bevy_ecs", 300.0)];
        let t = render_table("s", &["w".into()], &rs, &[]);
        assert!(t.contains("| w | 150 ns | 50.0 ns | 100 ns | 300 ns | 1.50 |"), "{t}");
    }
}
