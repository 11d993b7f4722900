//! # ecsdb-transfer
//!
//! Worlds out to and in from the files other engines read: one file per component, as
//! Parquet, CSV or JSON lines, plus `schema.json` with the catalog. DuckDB on one machine,
//! and Spark or DataFusion across many, query the exported files directly; files made by
//! those engines or by hand (a spreadsheet saved as CSV) import back.
//!
//! Each file has an `entity` column (the id as text, `12v0`) and one column per field with
//! its natural type: in Parquet f32 `FLOAT`, f64 `DOUBLE`, integers at their width and
//! signedness, `BOOLEAN`, strings and entities as UTF-8 (a null entity as null), vec2 and
//! vec3 as fixed-size lists of float. A tag's file holds only `entity`.
//!
//! Import keeps the entity ids (and, from `schema.json`, entities without components and the
//! allocator's free list, so the same ids are issued next), checks every file
//! before anything is built, and reports a problem with the file, row and column: a value
//! that does not fit its field's type, an entity listed twice in one component, an unknown
//! column, a bad entity string. On error the world is unchanged.
//!
//! ```
//! use ecsdb_engine::{Component, World};
//! use ecsdb_transfer::{export, import, ExportOptions, Format, ImportOptions};
//! #[derive(Component)] struct Health { hp: f32, max: f32 }
//!
//! let mut world = World::new();
//! let e = world.spawn(Health { hp: 3.0, max: 10.0 });
//! let dir = std::env::temp_dir().join(format!("ecsdb-transfer-doc-{}", std::process::id()));
//! let stats = export(&world, &dir, &ExportOptions { format: Format::Csv, ..Default::default() }).unwrap();
//! assert_eq!(stats.rows, 1);
//! assert_eq!(std::fs::read_to_string(dir.join("Health.csv")).unwrap(), "entity,hp,max\n0v0,3,10\n");
//!
//! let mut copy = World::new();
//! import(&mut copy, &dir, &ImportOptions::default()).unwrap();
//! assert_eq!(copy.get_field(e, "Health", "max").unwrap(), 10.0f32.into());
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod entity_text;
mod error;
mod export;
mod import;
pub mod schema;

use std::path::PathBuf;

pub use ecsdb_engine::IndexBuild;
pub use error::{DataProblem, Place, TransferError};
pub use export::{export, export_with_progress};
pub use import::{import, read_dir};

/// The file format of an export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// Apache Parquet, Snappy-compressed.
    #[default]
    Parquet,
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 3] = [Format::Parquet, Format::Csv, Format::Jsonl];

    /// The file extension (and the name in `schema.json`).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }

    /// The format of an extension.
    pub fn from_extension(ext: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.extension().eq_ignore_ascii_case(ext))
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.extension())
    }
}

/// What to export.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The files' format.
    pub format: Format,
    /// Only these components (by name); all components with a schema when `None`. Opaque
    /// components (no schema) are left out of a full export and refused by name.
    pub components: Option<Vec<String>>,
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// The component files written, in catalog order (then `schema.json`).
    pub files: Vec<PathBuf>,
    /// Rows written, over all files.
    pub rows: u64,
    /// Bytes of component data exported, as the world holds it: every value's size plus the
    /// text of its strings (the payload throughput is measured on, as for snapshots).
    pub component_bytes: u64,
    /// Bytes of the files written.
    pub file_bytes: u64,
}

/// How to import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Without `schema.json`, read only files of this format (all known formats when
    /// `None`; a component found in two formats is an error).
    pub format: Option<Format>,
    /// When the indexes of `schema.json` are built: [`IndexBuild::Now`] for a world used
    /// right away, [`IndexBuild::Deferred`] for one that is only saved (its file keeps the
    /// definitions; loading it builds them). Definitions that do not fit are reported in
    /// [`ImportStats::unbuilt_indexes`] either way.
    pub indexes: IndexBuild,
}

/// What an import read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Components imported.
    pub components: usize,
    /// Live entities in the world afterwards.
    pub entities: usize,
    /// Rows read, over all files.
    pub rows: u64,
    /// Bytes of component data imported, as the world holds it (see
    /// [`ExportStats::component_bytes`]).
    pub component_bytes: u64,
    /// Index definitions the import could not rebuild (function indexes).
    pub unbuilt_indexes: Vec<String>,
}
