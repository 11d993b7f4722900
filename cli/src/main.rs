//! `ecsdb`: the command-line tool of ecsdb.
//!
//! ```text
//! ecsdb demo  [--entities N] [--ticks T] [--out FILE]
//! ecsdb exec  WORLD SCRIPT [--quiet] [--keep-going] [--format F] [--param NAME=VALUE]... [--busy-timeout T]
//! ecsdb query WORLD TEXT [--format table|json|csv] [--param NAME=VALUE]...
//! ecsdb shell [WORLD] [--autosave] [--format F] [--busy-timeout T]
//! ecsdb serve WORLD [--bind ADDR] [--port P] [--allow-writes] [--hz H] [--autosave]
//! ecsdb query --connect URL TEXT;  ecsdb shell --connect URL;  ecsdb watch --connect URL TEXT
//! ecsdb shell [WORLD] [--autosave] [--format F]
//! ecsdb export WORLD DIR [--format parquet|csv|jsonl] [--components A,B,...]
//! ecsdb import WORLD DIR [--format parquet|csv|jsonl]
//! ```
//!
//! Exit codes: 0 success; 1 a statement failed (kind, message, the line with a caret and a
//! suggestion on stderr); 2 a usage error or a file that cannot be read or written.
//!
//! This file holds the command-line definitions and the dispatch only; each command lives in
//! its own module.
#![forbid(unsafe_code)]

/// mimalloc, not the system allocator: a world holds a heap string per string field per row,
/// and loading or importing one makes millions of small allocations, which glibc's malloc
/// serves about four times slower (see `docs/benchmarks.md`, transfer).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod demo;
mod exec;
mod format;
mod params;
mod query_cmd;
mod remote;
mod run;
mod script;
mod serve;
mod shell;
mod transfer_cmd;
mod world_file;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::format::Format;
use crate::params::Param;

/// ecsdb: an in-memory entity database, queried by text.
#[derive(Parser, Debug)]
#[command(name = "ecsdb", version, about, long_about = None, arg_required_else_help = true)]
#[command(after_help = "Exit codes: 0 success, 1 a statement failed, 2 usage error or unreadable file.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a sample game world, run it for some ticks, tour the query language, save a snapshot.
    Demo(DemoArgs),
    /// Run a script of `;`-separated statements against WORLD (created if missing), then save it.
    Exec(ExecArgs),
    /// Run one read-only statement (SELECT, EXPLAIN, SHOW, DESCRIBE) against WORLD.
    Query(QueryArgs),
    /// Run WORLD's systems for some ticks, save it, and print per-system statistics.
    Run(RunArgs),
    /// An interactive shell on WORLD (or on an empty in-memory world); reads stdin when piped.
    Shell(ShellArgs),
    /// Load WORLD, tick it and serve it live over HTTP and WebSocket (docs/protocol.md).
    Serve(ServeArgs),
    /// Print a query's result on a running world, then each change as it arrives.
    Watch(WatchArgs),
    /// Write WORLD's components to DIR, one Parquet, CSV or JSON-lines file each, and schema.json.
    Export(ExportArgs),
    /// Read an export (or component files made elsewhere) from DIR into a new or empty WORLD.
    Import(ImportArgs),
}

/// The largest demo world `--entities` accepts.
const MAX_DEMO_ENTITIES: u32 = 20_000_000;

/// Arguments of `ecsdb demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of entities in the sample world.
    #[arg(long, default_value_t = 100_000, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=MAX_DEMO_ENTITIES as i64))]
    pub entities: u32,
    /// Number of ticks of the systems to run.
    #[arg(long, default_value_t = 10, value_name = "T")]
    pub ticks: u32,
    /// Where to save the snapshot.
    #[arg(long, default_value = "demo.ecsdb", value_name = "FILE")]
    pub out: PathBuf,
}

/// Arguments of `ecsdb exec`.
#[derive(Args, Debug)]
pub struct ExecArgs {
    /// The world file; created if it does not exist.
    #[arg(value_name = "WORLD")]
    pub world: PathBuf,
    /// The script: a path, or `-` for stdin.
    #[arg(value_name = "SCRIPT")]
    pub script: PathBuf,
    /// Do not print statement results.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Report failing statements, skip them, run the rest and save (exit code 1 if any failed).
    #[arg(long)]
    pub keep_going: bool,
    /// How to print results.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Binds a parameter: `name=VALUE` for `$name`, `1=VALUE` for `$1`. VALUE is a value of
    /// the language (42, .5, 'text', true, null, 12v0, [1, 2], 2 * 3); a bare word is a string.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = params::parse_param)]
    pub params: Vec<Param>,
    /// How long to wait for another process writing WORLD (seconds, or e.g. 250ms).
    #[arg(long, value_name = "T", default_value = "5", value_parser = world_file::parse_timeout)]
    pub busy_timeout: Duration,
}

/// Arguments of `ecsdb run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The world file (must exist).
    #[arg(value_name = "WORLD")]
    pub world: PathBuf,
    /// How many ticks to run.
    #[arg(long, value_name = "N")]
    pub ticks: u64,
    /// Seconds each tick simulates (`$dt`).
    #[arg(long, default_value_t = 1.0 / 60.0, value_name = "S")]
    pub dt: f64,
    /// How long to wait for another process writing WORLD (seconds, or e.g. 250ms).
    #[arg(long, value_name = "T", default_value = "5", value_parser = world_file::parse_timeout)]
    pub busy_timeout: Duration,
}

/// Arguments of `ecsdb query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The world file (must exist); with `--connect`, leave it out.
    #[arg(value_name = "WORLD")]
    pub world: Option<PathBuf>,
    /// One read-only statement.
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    /// Query a running world instead: the URL `ecsdb serve` printed.
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// The server's token (else `ECSDB_TOKEN`, else the URL's `#token=`).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Binds a parameter: `name=VALUE` for `$name`, `1=VALUE` for `$1`. VALUE is a value of
    /// the language (42, .5, 'text', true, null, 12v0, [1, 2], 2 * 3); a bare word is a string.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = params::parse_param)]
    pub params: Vec<Param>,
}

/// Arguments of `ecsdb shell`.
#[derive(Args, Debug)]
pub struct ShellArgs {
    /// The world file (created on save if it does not exist); none for an in-memory world.
    #[arg(value_name = "WORLD")]
    pub world: Option<PathBuf>,
    /// Save changes on exit without asking.
    #[arg(long)]
    pub autosave: bool,
    /// How to print results (`.format` changes it).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// How long a save waits for another process writing the file (seconds, or e.g. 250ms).
    #[arg(long, value_name = "T", default_value = "5", value_parser = world_file::parse_timeout)]
    pub busy_timeout: Duration,
    /// A shell on a running world instead: the URL `ecsdb serve` printed.
    #[arg(long, value_name = "URL", conflicts_with_all = ["world", "autosave"])]
    pub connect: Option<String>,
    /// The server's token (else `ECSDB_TOKEN`, else the URL's `#token=`).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

/// Arguments of `ecsdb serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The world file (must exist).
    #[arg(value_name = "WORLD")]
    pub world: PathBuf,
    /// The address to listen on; other than loopback, anyone who has the token can connect.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: std::net::IpAddr,
    /// The port (0: a free one; the URL line says which).
    #[arg(long, default_value_t = 0, value_name = "P")]
    pub port: u16,
    /// Allow `exec` (writes); read-only otherwise.
    #[arg(long)]
    pub allow_writes: bool,
    /// Ticks per second (0: no ticking; writes apply at once).
    #[arg(long, default_value_t = 60.0, value_name = "H")]
    pub hz: f64,
    /// Save the world on SIGINT or SIGTERM before exiting.
    #[arg(long)]
    pub autosave: bool,
}

/// Arguments of `ecsdb watch`.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The URL `ecsdb serve` printed.
    #[arg(long, value_name = "URL")]
    pub connect: String,
    /// The server's token (else `ECSDB_TOKEN`, else the URL's `#token=`).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// One read-only statement.
    #[arg(value_name = "TEXT")]
    pub text: String,
    /// How to print results.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Binds a parameter (as for `query`).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = params::parse_param)]
    pub params: Vec<Param>,
}

/// A file format of `export` and `import`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Apache Parquet (Snappy).
    Parquet,
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl From<FileFormat> for ecsdb::transfer::Format {
    fn from(f: FileFormat) -> Self {
        match f {
            FileFormat::Parquet => ecsdb::transfer::Format::Parquet,
            FileFormat::Csv => ecsdb::transfer::Format::Csv,
            FileFormat::Jsonl => ecsdb::transfer::Format::Jsonl,
        }
    }
}

/// Arguments of `ecsdb export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The world file (must exist).
    #[arg(value_name = "WORLD")]
    pub world: PathBuf,
    /// The directory to write (created if missing; files of the same names are replaced).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The files' format.
    #[arg(long, value_enum, default_value_t = FileFormat::Parquet)]
    pub format: FileFormat,
    /// Only these components, comma-separated (default: every component with a schema).
    #[arg(long, value_name = "A,B,...")]
    pub components: Option<String>,
}

/// Arguments of `ecsdb import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The world file: created, or an existing world without entities. Written only if the
    /// whole import succeeds.
    #[arg(value_name = "WORLD")]
    pub world: PathBuf,
    /// The directory: an export with schema.json, or `<Component>.<ext>` files.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Without schema.json, read only files of this format.
    #[arg(long, value_enum)]
    pub format: Option<FileFormat>,
}

/// How a command ended when it did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// One or more statements failed; their errors were already printed. Exit code 1.
    Statement,
    /// A usage error or a file that cannot be read or written. Exit code 2.
    Usage(String),
    /// Standard output was closed by its reader (`| head`): stop quietly. Exit code 0.
    Closed,
}

impl Failure {
    /// A usage failure with this message.
    pub fn usage(msg: impl Into<String>) -> Failure {
        Failure::Usage(msg.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Query(args) => query_cmd::run(args),
        Command::Shell(args) => match &args.connect {
            Some(url) => remote::shell(url, args.token.as_deref(), args.format),
            None => shell::run(args),
        },
        Command::Serve(args) => serve::run(args),
        Command::Watch(args) => {
            remote::watch(&args.connect, args.token.as_deref(), &args.text, &args.params, args.format)
        }
        Command::Export(args) => transfer_cmd::export(args),
        Command::Import(args) => transfer_cmd::import(args),
        Command::Run(args) => run::run(args),
    };
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Statement) => ExitCode::from(1),
        Err(Failure::Usage(msg)) => {
            format::eprint_line(&format!("ecsdb: {msg}"));
            ExitCode::from(2)
        }
    }
}
