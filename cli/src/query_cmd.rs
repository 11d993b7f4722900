//! `ecsdb query WORLD TEXT`: one read-only statement, printed as a table, JSON or CSV.

use std::io::{self, BufWriter, Write};

use ecsdb::query::Database;

use crate::params::build_params;
use crate::{Failure, QueryArgs, format, world_file};

/// Runs `ecsdb query`.
pub fn run(args: &QueryArgs) -> Result<(), Failure> {
    let (world, text) = match (&args.connect, &args.world, &args.text) {
        // With --connect the one positional argument is the statement.
        (Some(url), Some(text), None) => {
            return crate::remote::query(
                url,
                args.token.as_deref(),
                &text.to_string_lossy(),
                &args.params,
                args.format,
            );
        }
        (Some(url), None, Some(text)) => {
            return crate::remote::query(url, args.token.as_deref(), text, &args.params, args.format);
        }
        (Some(_), _, _) => {
            return Err(Failure::usage("with --connect, give only the statement: ecsdb query --connect URL TEXT"));
        }
        (None, Some(world), Some(text)) => (world, text),
        (None, _, _) => return Err(Failure::usage("usage: ecsdb query WORLD TEXT (or --connect URL TEXT)")),
    };
    let params = build_params(&args.params)?;
    let world_path = world;
    let world = world_file::load(world_path)?;
    let db = Database::from_world(world);
    match ecsdb::query::is_read_only(text) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Failure::usage(format!(
                "`ecsdb query` runs only read-only statements (SELECT, EXPLAIN, SHOW, DESCRIBE), and this one \
                 changes the world.\nhint: use `ecsdb exec {} SCRIPT` (SCRIPT a file, or - to read it from stdin)",
                world_path.display()
            )));
        }
        // A statement that does not parse: report it below, as the query's own error.
        Err(_) => {}
    }
    let rs = match db.query(text, &params) {
        Ok(rs) => rs,
        Err(err) => {
            format::eprint_line(&format::render_error(text, &err, None));
            return Err(Failure::Statement);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    format::write_result(&mut out, &rs, args.format).and_then(|()| out.flush()).map_err(format::output_failure)
}
