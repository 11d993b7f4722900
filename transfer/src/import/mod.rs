//! Import: every file read and checked into columns, then one build of the world.

mod parquet;
mod text;
mod values;

use std::fs;
use std::path::{Path, PathBuf};

use ecsdb_engine::snapshot::{ColumnarWorld, ComponentColumns};
use ecsdb_engine::{ComponentDef, SnapshotError, World, is_identifier};
use rayon::prelude::*;

use crate::error::{DataProblem, Place, TransferError};
use crate::schema::{ExportSchema, SCHEMA_FILE};
use crate::{Format, ImportOptions, ImportStats};

/// One component file to read: its path and format, and its definition when the schema
/// gives it (otherwise the file's columns do).
struct Source {
    name: String,
    path: PathBuf,
    format: Format,
    def: Option<ComponentDef>,
}

/// The component files of `dir`, from `schema.json` or, without one, from the files there.
fn sources(dir: &Path, opts: &ImportOptions) -> Result<(Vec<Source>, Option<ExportSchema>), TransferError> {
    let schema_path = dir.join(SCHEMA_FILE);
    if schema_path.is_file() {
        let schema = ExportSchema::read(&schema_path)?;
        let mut out = Vec::with_capacity(schema.components.len());
        for c in &schema.components {
            let path = dir.join(&c.file);
            let format =
                path.extension().and_then(|e| Format::from_extension(&e.to_string_lossy())).ok_or_else(|| {
                    TransferError::Schema {
                        path: schema_path.clone(),
                        message: format!("component '{}': file {:?} is not .parquet, .csv or .jsonl", c.name, c.file),
                    }
                })?;
            out.push(Source { name: c.name.clone(), path, format, def: Some(c.to_def(&schema_path)?) });
        }
        return Ok((out, Some(schema)));
    }
    let entries = fs::read_dir(dir).map_err(|e| TransferError::io(dir, e))?;
    let mut out: Vec<Source> = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| TransferError::io(dir, e))?.path();
        let Some(format) = path.extension().and_then(|e| Format::from_extension(&e.to_string_lossy())) else {
            continue;
        };
        if opts.format.is_some_and(|f| f != format) || !path.is_file() {
            continue;
        }
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if !is_identifier(&name) {
            return Err(TransferError::data(
                &path,
                Place::default(),
                DataProblem::Malformed(format!("'{name}' is not a component name (letters, digits, _)")),
            ));
        }
        if let Some(other) = out.iter().find(|s| s.name == name) {
            return Err(TransferError::data(
                &path,
                Place::default(),
                DataProblem::Malformed(format!("component '{name}' is also in {}", other.path.display())),
            ));
        }
        out.push(Source { name, path, format, def: None });
    }
    if out.is_empty() {
        return Err(TransferError::NoFiles(dir.to_path_buf()));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((out, None))
}

/// Reads and checks every component file of `dir` (an export, or files made elsewhere) into
/// columns, without touching any world. With `schema.json` the components and their field
/// types come from it; without, each `<Name>.<ext>` file is a component whose fields are its
/// columns, typed from the file (Parquet types, or the values of CSV and JSON lines).
pub fn read_dir(dir: &Path, opts: &ImportOptions) -> Result<ColumnarWorld, TransferError> {
    let (sources, schema) = sources(dir, opts)?;
    let read: Vec<Result<ComponentColumns, TransferError>> = sources
        .par_iter()
        .map(|s| match s.format {
            Format::Parquet => parquet::read(&s.path, &s.name, s.def.as_ref()),
            Format::Csv => text::read_csv(&s.path, &s.name, s.def.as_ref()),
            Format::Jsonl => text::read_jsonl(&s.path, &s.name, s.def.as_ref()),
        })
        .collect();
    let components = read.into_iter().collect::<Result<Vec<_>, _>>()?;
    let indexes = schema.as_ref().map(|s| s.index_definitions()).unwrap_or_default();
    let (bare_entities, dead) = match schema.as_ref().and_then(|s| s.entities.as_ref()) {
        Some(entities) => {
            let (bare, dead) = entities.parse(&dir.join(SCHEMA_FILE))?;
            (bare, Some(dead))
        }
        None => (Vec::new(), None),
    };
    Ok(ColumnarWorld { components, indexes, bare_entities, dead })
}

/// Imports the export (or files) in `dir` into `world`, which must have no live entities:
/// components are created (or matched by name), entities keep their ids, indexes of
/// `schema.json` are rebuilt. Everything is read and checked first; on error the world is
/// unchanged.
pub fn import(world: &mut World, dir: &Path, opts: &ImportOptions) -> Result<ImportStats, TransferError> {
    if !world.is_empty() {
        return Err(TransferError::WorldNotEmpty(world.len()));
    }
    let (sources, schema) = sources(dir, opts)?;
    // Checked before anything is built, set once the world is.
    let mut defaults = Vec::new();
    for c in schema.iter().flat_map(|s| &s.components) {
        defaults.push((c.name.as_str(), c.defaults(&dir.join(SCHEMA_FILE))?));
    }
    let data = read_dir(dir, opts)?;
    let file_of = |component: &str| sources.iter().find(|s| s.name == component).map(|s| s.path.clone());
    let stats = world.import_columns_with(&data, opts.indexes).map_err(|e| match e {
        SnapshotError::DuplicateEntity { component, row, entity } => TransferError::data(
            file_of(&component).unwrap_or_default(),
            Place::cell(row + 1, "entity"),
            DataProblem::DuplicateEntity(entity.to_string()),
        ),
        // The allocator and the entities without components come from `schema.json`.
        SnapshotError::Columns { component, row, reason } if file_of(&component).is_none() => TransferError::Schema {
            path: dir.join(SCHEMA_FILE),
            message: match row {
                Some(r) => format!("{component}, item {r}: {reason}"),
                None => format!("{component}: {reason}"),
            },
        },
        SnapshotError::Columns { component, row, reason } => TransferError::data(
            file_of(&component).unwrap_or_default(),
            row.map_or_else(Place::default, |r| Place::cell(r + 1, "entity")),
            DataProblem::Malformed(reason),
        ),
        other => TransferError::Engine(other),
    })?;
    // (Checked above against the schema's own types, which the build used: these cannot fail.)
    for (component, fields) in defaults {
        let Ok(id) = world.component_id(component) else { continue };
        for (field, value) in fields {
            let _ = world.set_field_default(id, &field, Some(&value));
        }
    }
    Ok(ImportStats {
        components: data.components.len(),
        entities: world.len(),
        rows: data.components.iter().map(|c| c.entities.len() as u64).sum(),
        component_bytes: stats.component_bytes,
        unbuilt_indexes: stats.index_definitions.into_iter().map(|d| d.name).collect(),
    })
}
