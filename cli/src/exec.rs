//! `ecsdb exec WORLD SCRIPT`: run a script against a world file, then save it atomically.
//!
//! The world's lock is held from loading to saving, so two `exec`s on one file run one after
//! the other and neither loses the other's changes; a second one waits up to
//! `--busy-timeout` and then fails (exit code 2) without touching the file.
//!
//! All or nothing by default: when a statement fails, its error is printed and the file on
//! disk is not touched. With `--keep-going`, failing statements are reported and skipped, the
//! rest is saved, and the exit code is still 1.

use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use ecsdb::query::Database;

use crate::format;
use crate::params::build_params;
use crate::script::{RunOptions, run_script};
use crate::{ExecArgs, Failure, world_file};

/// Runs `ecsdb exec`.
pub fn run(args: &ExecArgs) -> Result<(), Failure> {
    let params = build_params(&args.params)?;
    let (script, origin) = read_script(&args.script)?;
    // Held from load to save: another writer's save cannot fall in between and be lost.
    let lock = world_file::lock(&args.world, args.busy_timeout)?;
    let existed = args.world.exists();
    let world = world_file::open_or_create(&args.world)?;
    let mut db = Database::from_world(world);

    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let opts = RunOptions {
        format: args.format,
        print: !args.quiet,
        keep_going: args.keep_going,
        timing: false,
        origin: Some(origin.as_str()),
    };
    let report = run_script(&mut db, &script, &params, &mut out, &opts);
    let flushed = out.flush();

    if report.failed > 0 && !args.keep_going {
        let state = if existed { "is unchanged" } else { "was not created" };
        format::eprint_line(&format!(
            "ecsdb: nothing saved: {} {state} (the {} statement(s) that ran before the error were discarded)",
            args.world.display(),
            report.succeeded
        ));
        return Err(Failure::Statement);
    }
    world_file::save_locked(db.world(), &lock)?;
    if report.failed > 0 {
        format::eprint_line(&format!(
            "ecsdb: {} statement(s) failed and were skipped; {} saved with the other {}",
            report.failed,
            args.world.display(),
            report.succeeded
        ));
        return Err(Failure::Statement);
    }
    match (flushed, report.output_error) {
        (Err(e), _) | (Ok(()), Some(e)) => Err(format::output_failure(e)),
        _ => Ok(()),
    }
}

/// Reads a script from a path or, for `-`, from stdin; it must be UTF-8. Returns the text and
/// a name for error messages.
fn read_script(path: &Path) -> Result<(String, String), Failure> {
    let (bytes, origin) = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf).map_err(|e| Failure::usage(format!("cannot read stdin: {e}")))?;
        (buf, "<stdin>".to_string())
    } else {
        let bytes = std::fs::read(path).map_err(|e| {
            Failure::usage(format!("cannot read script {}: {}", path.display(), world_file::io_reason(&e)))
        })?;
        (bytes, path.display().to_string())
    };
    match String::from_utf8(bytes) {
        Ok(s) => Ok((s, origin)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(Failure::usage(format!("script {origin} is not valid UTF-8 (line {line}, byte offset {at})")))
        }
    }
}
