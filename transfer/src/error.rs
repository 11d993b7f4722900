//! Errors of export and import: every problem with a file names the file, and with its data
//! the row (1-based, the header not counted) and the column.

use std::fmt;
use std::io;
use std::path::PathBuf;

use ecsdb_engine::SnapshotError;

/// Why an export or import failed. A failed import leaves the world unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// Reading or writing a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A file's data is wrong: it names the place and the problem.
    #[error("{}{place}: {problem}", file.display())]
    Data {
        /// The file.
        file: PathBuf,
        /// Row and column, as far as known.
        place: Place,
        /// What is wrong.
        problem: DataProblem,
    },
    /// `schema.json` cannot be used.
    #[error("{}: {message}", path.display())]
    Schema {
        /// The schema file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `--components` (or [`ExportOptions::components`](crate::ExportOptions)) names a
    /// component the world does not have, or one without a schema (opaque).
    #[error("cannot export component '{0}': {1}")]
    Component(String, String),
    /// Import needs a world without live entities.
    #[error("the world has {0} live entities: import needs a new or empty world")]
    WorldNotEmpty(usize),
    /// The directory holds no component files to import.
    #[error("{}: no .parquet, .csv or .jsonl component files", .0.display())]
    NoFiles(PathBuf),
    /// The engine refused the data (a check no file-level one caught).
    #[error(transparent)]
    Engine(#[from] SnapshotError),
}

/// Where in a file a problem is: a row (1-based, the header not counted) and a column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    /// The data row, from 1.
    pub row: Option<usize>,
    /// The column's name.
    pub column: Option<String>,
}

impl Place {
    /// A cell.
    pub fn cell(row: usize, column: &str) -> Place {
        Place { row: Some(row), column: Some(column.to_string()) }
    }
    /// A whole column.
    pub fn column(column: &str) -> Place {
        Place { row: None, column: Some(column.to_string()) }
    }
    /// A whole row.
    pub fn row(row: usize) -> Place {
        Place { row: Some(row), column: None }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(r) = self.row {
            write!(f, ": row {r}")?;
        }
        if let Some(c) = &self.column {
            write!(f, "{}column '{c}'", if self.row.is_some() { ", " } else { ": " })?;
        }
        Ok(())
    }
}

/// What is wrong with a file's data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DataProblem {
    /// A value (or a whole column's type) does not fit the field's type.
    #[error("{found} does not fit field type {expected}")]
    TypeMismatch {
        /// The field's type.
        expected: String,
        /// What was found.
        found: String,
    },
    /// An entity is listed twice in one component.
    #[error("entity {0} is listed twice")]
    DuplicateEntity(String),
    /// A column that is not a field of the component.
    #[error("unknown column: component '{0}' has no such field")]
    UnknownColumn(String),
    /// A field of the component has no column.
    #[error("missing column: field of component '{0}'")]
    MissingColumn(String),
    /// An entity that is not of the form `12v0`.
    #[error("bad entity '{0}': expected <index>v<generation>, like 12v0")]
    BadEntity(String),
    /// The file cannot be parsed at all, or breaks a rule of the world.
    #[error("{0}")]
    Malformed(String),
}

impl TransferError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> TransferError {
        TransferError::Io { path: path.into(), source }
    }

    pub(crate) fn data(file: impl Into<PathBuf>, place: Place, problem: DataProblem) -> TransferError {
        TransferError::Data { file: file.into(), place, problem }
    }
}
