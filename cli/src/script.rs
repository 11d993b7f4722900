//! Running a script statement by statement, printing each result or error: `exec`, the
//! shell and piped input share it. Statements are found and classified by the query crate
//! (its parser and [`ecsdb::query::lex`]), never by scanning text here.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use ecsdb::query::lex::split_statements;
use ecsdb::query::{Database, Error, Params, ResultSet, ScriptStatement, Span};

use crate::format::{self, Format};

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
    /// Statements that succeeded and may have changed the world (all but those
    /// [`ecsdb::query::is_read_only`] calls read-only: `TICK` and `SET` change it too).
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
    let parsed = db.execute_script_each(script, params, |statement, result| {
        let go_on = run.on_result(&Step::from(statement), result, last.elapsed());
        last = Instant::now();
        go_on
    });
    match parsed {
        Ok(()) => {}
        Err(_) if opts.keep_going => {
            for (index, range) in split_statements(script).into_iter().enumerate() {
                let piece = range.text(script);
                let shift = |span: Span| Span { start: span.start + range.start, end: span.end + range.start };
                let mut last = Instant::now();
                let parsed = db.execute_script_each(piece, params, |statement, result| {
                    let shifted = result.clone().map_err(|mut e| {
                        e.span = e.span.map(shift);
                        e
                    });
                    let statement = Step { index, read_only: statement.read_only };
                    run.on_result(&statement, &shifted, last.elapsed());
                    last = Instant::now();
                    true
                });
                if let Err(mut e) = parsed {
                    e.span = e.span.map(shift);
                    let statement = Step { index, read_only: true };
                    run.on_result(&statement, &Err(e), Duration::ZERO);
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

/// A statement of the script: its number and whether it could change the world.
struct Step {
    index: usize,
    read_only: bool,
}

impl From<&ScriptStatement> for Step {
    fn from(s: &ScriptStatement) -> Step {
        Step { index: s.index, read_only: s.read_only }
    }
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
    fn on_result(&mut self, statement: &Step, result: &Result<ResultSet, Error>, elapsed: Duration) -> bool {
        let opts = self.opts;
        match result {
            Ok(rs) => {
                self.report.succeeded += 1;
                if !statement.read_only {
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
                let index = statement.index;
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
