//! Data out and in: the 1M game world of the query and snapshot suites exported to Parquet,
//! CSV and JSON lines and imported back, with DuckDB writing and reading the same data as
//! the reference.
//!
//! - `export_<format>_1m`: `ecsdb`: `ecsdb::transfer::export` of every component into a
//!   directory (one file each, plus `schema.json`), replacing the previous files. `duckdb`:
//!   the same nine tables, loaded into an in-memory DuckDB once (from our Parquet files, not
//!   timed), written with `COPY … TO` in the same format (Parquet with Snappy), timed inside
//!   the DuckDB process (Python package, one long-lived process; only the COPY statements are
//!   timed).
//! - `import_<format>_1m`: `ecsdb`: `ecsdb::transfer::import` of that directory into a new
//!   world (reading, checking, building; the world is dropped outside the timing). `duckdb`:
//!   `CREATE TABLE … AS SELECT * FROM read_<format>(…)` of the same files into a fresh
//!   in-memory database, timed inside DuckDB.
//!
//! JSON lines carry `component_bytes`: the component data as the world holds it (values plus
//! string text), which throughput is quoted on. Files are written to the system's temporary
//! directory (page cache; no fsync).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

use ecsdb::transfer::{self, ExportOptions, Format, ImportOptions};

use crate::harness::{Sampler, Suite, batched, human_bytes, iter};
use crate::snapshot::{big_world, rows};

const COMPONENTS: [&str; 8] = ["Position", "Velocity", "Health", "Team", "Level", "Player", "Monster", "Frozen"];

/// A long-lived Python process running DuckDB: each request line `export|import FORMAT N`
/// is answered with the seconds N runs took, measured inside the process.
struct Duck {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

const DUCK_SCRIPT: &str = r#"
import sys, time, duckdb, os
src, out = sys.argv[1], sys.argv[2]
comps = sys.argv[3].split(",")
con = duckdb.connect()
for c in comps:
    con.execute(f"CREATE TABLE {c} AS SELECT * FROM read_parquet('{src}/{c}.parquet')", ())
opts = {"parquet": "(FORMAT parquet, COMPRESSION snappy)", "csv": "(FORMAT csv, HEADER)", "jsonl": "(FORMAT json)"}
readers = {"parquet": "read_parquet", "csv": "read_csv", "jsonl": "read_json"}
print("ready", flush=True)
for line in sys.stdin:
    op, fmt, n = line.split()
    total = 0.0
    for _ in range(int(n)):
        if op == "export":
            t = time.perf_counter()
            for c in comps:
                con.execute(f"COPY {c} TO '{out}/{c}.{fmt}' {opts[fmt]}", ())
            total += time.perf_counter() - t
        else:
            fresh = duckdb.connect()
            t = time.perf_counter()
            for c in comps:
                fresh.execute(f"CREATE TABLE {c} AS SELECT * FROM {readers[fmt]}('{out}/{c}.{fmt}')", ())
            total += time.perf_counter() - t
            fresh.close()
    print(total, flush=True)
"#;

impl Duck {
    fn start(src: &Path, out: &Path) -> Option<Duck> {
        let script = std::env::temp_dir().join("ecsdb-bench-duck.py");
        std::fs::write(&script, DUCK_SCRIPT).ok()?;
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(src)
            .arg(out)
            .arg(COMPONENTS.join(","))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let mut stdout = BufReader::new(child.stdout.take()?);
        let mut line = String::new();
        stdout.read_line(&mut line).ok()?;
        (line.trim() == "ready").then_some(Duck { child, stdin, stdout })
    }

    fn run(&mut self, op: &str, format: Format, iters: u64) -> Duration {
        writeln!(self.stdin, "{op} {format} {iters}").expect("DuckDB process alive");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("DuckDB answers");
        Duration::from_secs_f64(line.trim().parse().expect("seconds"))
    }
}

impl Drop for Duck {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn duck_sampler(duck: &Rc<std::cell::RefCell<Duck>>, op: &'static str, format: Format) -> Sampler<'static> {
    let duck = duck.clone();
    Box::new(move |iters| duck.borrow_mut().run(op, format, iters))
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecsdb-bench-transfer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn run(s: &mut Suite) {
    eprintln!("building the 1M world…");
    let world = Rc::new(big_world(&rows()));
    let reference = fresh_dir("reference");
    let stats = transfer::export(&world, &reference, &ExportOptions::default()).unwrap();
    let component_bytes = stats.component_bytes;
    s.note(format!(
        "component data: {} ({} rows of 8 components, 1,000,000 entities); throughput = component data / median",
        human_bytes(component_bytes as f64),
        stats.rows
    ));
    let duck_out = fresh_dir("duckdb");
    let duck = Duck::start(&reference, &duck_out).map(|d| Rc::new(std::cell::RefCell::new(d)));
    if duck.is_none() {
        s.note("duckdb: not measured (python3 with the duckdb package is needed: pip install duckdb)");
    }
    for format in Format::ALL {
        let dir = fresh_dir(format.extension());
        let opts = ExportOptions { format, components: None };
        s.workload(&format!("export_{format}_1m"), |w| {
            let (world, dir, opts) = (world.clone(), dir.clone(), opts.clone());
            w.lib("ecsdb", iter(move || transfer::export(&world, &dir, &opts).unwrap()))
                .extra("component_bytes", component_bytes);
            if let Some(d) = &duck {
                w.lib("duckdb", duck_sampler(d, "export", format));
            }
        });
        transfer::export(&world, &dir, &opts).unwrap();
        s.workload(&format!("import_{format}_1m"), |w| {
            let dir = dir.clone();
            w.lib(
                "ecsdb",
                batched(ecsdb::World::new, move |mut target| {
                    transfer::import(&mut target, &dir, &ImportOptions::default()).unwrap();
                    target
                }),
            )
            .extra("component_bytes", component_bytes);
            if let Some(d) = &duck {
                w.lib("duckdb", duck_sampler(d, "import", format));
            }
        });
    }
}
