//! `ecsdb export` and `ecsdb import`: worlds to and from Parquet, CSV and JSON lines.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use ecsdb::transfer::{self, ExportOptions, ImportOptions};
use ecsdb::{IndexBuild, World};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::format::{millis, thousands};
use crate::{ExportArgs, Failure, ImportArgs, world_file};

/// Exports with fewer rows than this finish too soon for a bar to help.
const BAR_ROWS: u64 = 200_000;

/// Runs `ecsdb export`.
pub fn export(args: &ExportArgs) -> Result<(), Failure> {
    let world = world_file::load(&args.world)?;
    let components = args
        .components
        .as_ref()
        .map(|list| list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect::<Vec<_>>());
    let opts = ExportOptions { format: args.format.into(), components };
    let total: u64 = world
        .components()
        .iter()
        .filter(|c| opts.components.as_ref().map_or(!c.is_opaque(), |l| l.iter().any(|n| n == c.name())))
        .map(|c| world.component_count(c.id()) as u64)
        .sum();
    let visible = std::io::stderr().is_terminal() && total >= BAR_ROWS;
    let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    if let Ok(style) = ProgressStyle::with_template("exporting [{bar:40}] {pos}/{len} rows ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    let started = Instant::now();
    let stats = transfer::export_with_progress(&world, &args.dir, &opts, &|rows| bar.inc(rows))
        .map_err(|e| Failure::usage(format!("cannot export to {}: {e}", args.dir.display())))?;
    bar.finish_and_clear();
    let took = started.elapsed();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "exported {} rows of {} components to {} ({} files, {} bytes, {:.0} MB/s of component data) in {}",
        thousands(stats.rows),
        stats.files.len() - 1,
        args.dir.display(),
        opts.format,
        thousands(stats.file_bytes),
        stats.component_bytes as f64 / took.as_secs_f64().max(1e-9) / 1e6,
        millis(took)
    );
    Ok(())
}

/// Runs `ecsdb import`: into a new world file or an empty one; the file is written only when
/// everything was read and checked.
pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    let mut world: World = world_file::open_or_create(&args.world)?;
    if !world.is_empty() {
        return Err(Failure::usage(format!(
            "cannot import into {}: it has {} live entities (import needs a new or empty world)",
            args.world.display(),
            world.len()
        )));
    }
    // The file keeps only the index definitions, and loading it builds them: building them
    // here too would be thrown away (on the demo world it was most of the import).
    let opts = ImportOptions { format: args.format.map(Into::into), indexes: IndexBuild::Deferred };
    let started = Instant::now();
    let stats = transfer::import(&mut world, &args.dir, &opts)
        .map_err(|e| Failure::usage(format!("cannot import {}: {e}", args.dir.display())))?;
    let took = started.elapsed();
    let bytes = world_file::save(&world, &args.world)?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "imported {} rows of {} components ({} entities, {:.0} MB/s of component data) in {}; saved {} ({} bytes)",
        thousands(stats.rows),
        stats.components,
        thousands(stats.entities as u64),
        stats.component_bytes as f64 / took.as_secs_f64().max(1e-9) / 1e6,
        millis(took),
        args.world.display(),
        thousands(bytes)
    );
    for name in &stats.unbuilt_indexes {
        let _ = writeln!(out, "note: index {name} was not rebuilt (a function index: register its predicate again)");
    }
    Ok(())
}
