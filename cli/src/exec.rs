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
use std::time::{Duration, Instant};

use ecsdb::query::{Database, Error, Params, ResultSet, Span};

use crate::format::{self, Format};
use crate::shell::split_statements;
use crate::{ExecArgs, Failure, query_cmd, world_file};

/// Runs `ecsdb exec`.
pub fn run(args: &ExecArgs) -> Result<(), Failure> {
    let params = query_cmd::build_params(&args.params)?;
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

/// How [`run_script`] runs and prints.
pub struct RunOptions<'a> {
    /// Output format of results.
    pub format: Format,
    /// Whether to print results at all.
    pub print: bool,
    /// Continue after a failing statement.
    pub keep_going: bool,
    /// Print each statement's run time (to stdout, after its result).
    pub timing: bool,
    /// Where the text came from, for error messages.
    pub origin: Option<&'a str>,
}

/// What happened when a script ran.
#[derive(Default)]
pub struct ScriptReport {
    /// Statements that succeeded.
    pub succeeded: usize,
    /// Statements that failed (or 1 for a script that does not parse).
    pub failed: usize,
    /// Statements that succeeded and may have changed the world.
    pub mutated: usize,
    /// The first failure to write standard output; printing stops after it.
    pub output_error: Option<io::Error>,
}

/// Runs a script of `;`-separated statements statement by statement, printing results to
/// `out` and errors (rendered against the script) to stderr. Stops at the first error unless
/// `keep_going`. Each statement is atomic on its own.
///
/// A script that does not parse runs nothing, unless `keep_going`: then it is split at the
/// `;`s between statements and each piece runs on its own, so only the pieces that fail (to
/// parse or to run) are skipped.
pub fn run_script(
    db: &mut Database,
    script: &str,
    params: &Params,
    out: &mut dyn Write,
    opts: &RunOptions<'_>,
) -> ScriptReport {
    let mut run = ScriptRun { script, opts, out, report: ScriptReport::default(), printed_any: false };
    let mut last = Instant::now();
    let parsed = db.execute_script_each(script, params, |index, span, result| {
        let go_on = run.on_result(index, span, result, last.elapsed());
        last = Instant::now();
        go_on
    });
    match parsed {
        Ok(()) => {}
        Err(_) if opts.keep_going => {
            for (index, range) in split_statements(script).into_iter().enumerate() {
                let piece = &script[range.clone()];
                let shift = |span: Span| Span { start: span.start + range.start, end: span.end + range.start };
                let mut last = Instant::now();
                let parsed = db.execute_script_each(piece, params, |_, span, result| {
                    let shifted = result.clone().map_err(|mut e| {
                        e.span = e.span.map(shift);
                        e
                    });
                    run.on_result(index, shift(span), &shifted, last.elapsed());
                    last = Instant::now();
                    true
                });
                if let Err(mut e) = parsed {
                    e.span = e.span.map(shift);
                    run.on_result(index, shift(Span { start: 0, end: piece.len() }), &Err(e), Duration::ZERO);
                }
            }
        }
        Err(err) => {
            run.report.failed += 1;
            let _ = run.out.flush();
            format::eprint_line(&format::render_error(script, &err, opts.origin));
        }
    }
    run.report
}

/// The state of one [`run_script`].
struct ScriptRun<'a, 'o> {
    script: &'a str,
    opts: &'a RunOptions<'a>,
    out: &'o mut dyn Write,
    report: ScriptReport,
    printed_any: bool,
}

impl ScriptRun<'_, '_> {
    /// Prints one statement's result or error; returns whether to go on.
    fn on_result(&mut self, index: usize, span: Span, result: &Result<ResultSet, Error>, elapsed: Duration) -> bool {
        let opts = self.opts;
        match result {
            Ok(rs) => {
                self.report.succeeded += 1;
                let text = self.script.get(span.start..span.end).unwrap_or("");
                if !is_read_only_keyword(text) {
                    self.report.mutated += 1;
                }
                if opts.print && self.report.output_error.is_none() {
                    let out = &mut *self.out;
                    let first = !self.printed_any;
                    let written = (|| -> io::Result<()> {
                        if !first && opts.format != Format::Json {
                            writeln!(out)?;
                        }
                        format::write_result(out, rs, opts.format)?;
                        if opts.timing {
                            writeln!(out, "Run Time: {}", format::millis(elapsed))?;
                        }
                        Ok(())
                    })();
                    self.printed_any = true;
                    if let Err(e) = written {
                        self.report.output_error = Some(e);
                    }
                }
                true
            }
            Err(err) => {
                self.report.failed += 1;
                let _ = self.out.flush();
                let origin = match opts.origin {
                    Some(o) => Some(format!("{o}, statement {}", index + 1)),
                    None if index > 0 => Some(format!("statement {}", index + 1)),
                    None => None,
                };
                format::eprint_line(&format::render_error(self.script, err, origin.as_deref()));
                opts.keep_going
            }
        }
    }
}

/// Whether a statement's first keyword is one of the read-only ones (SELECT, EXPLAIN, SHOW,
/// DESCRIBE), skipping whitespace and `--` comments. A cheap lexical check for bookkeeping
/// (is there anything to save?), not a parse: a bare term list (`Position, !Frozen`) counts as
/// a SELECT.
pub fn is_read_only_keyword(text: &str) -> bool {
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let upper = word.to_ascii_uppercase();
    match upper.as_str() {
        "SELECT" | "EXPLAIN" | "SHOW" | "DESCRIBE" => true,
        "SPAWN" | "DESPAWN" | "ADD" | "REMOVE" | "UPDATE" | "CREATE" | "DROP" => false,
        // A bare term list: `Position, Velocity`, `!Frozen`, `?Name`.
        _ => true,
    }
}
