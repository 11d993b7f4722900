//! `schema.json`: the catalog of an export, read back by import.
//!
//! ```text
//! {
//!   "format": "ecsdb-export",
//!   "version": 1,
//!   "data_format": "parquet",
//!   "components": [
//!     {"name": "Position", "storage": "table", "file": "Position.parquet", "rows": 2,
//!      "fields": [{"name": "x", "type": "f32"}, {"name": "y", "type": "f32"}]},
//!     {"name": "Player", "storage": "table", "file": "Player.parquet", "rows": 1, "fields": []}
//!   ],
//!   "indexes": [{"name": "Position_rtree", "kind": "rtree", "component": "Position", "fields": ["x", "y"]}],
//!   "references": [],
//!   "systems": []
//! }
//! ```
//!
//! `references` and `systems` are reserved in version 1: always written empty, and an import
//! that finds them non-empty refuses the directory rather than drop what it cannot rebuild.
//! A later version that fills them bumps `version`; this build refuses versions it does not
//! know.

use std::path::Path;

use ecsdb_engine::{ComponentDef, FieldType, IndexDefinition, StorageKind};
use serde::{Deserialize, Serialize};

use crate::error::TransferError;
use crate::Format;

/// The `format` value of `schema.json`.
pub const SCHEMA_FORMAT: &str = "ecsdb-export";
/// The `version` this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;
/// The schema's file name in an export directory.
pub const SCHEMA_FILE: &str = "schema.json";

/// The whole `schema.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportSchema {
    /// Always [`SCHEMA_FORMAT`].
    pub format: String,
    /// [`SCHEMA_VERSION`].
    pub version: u32,
    /// `parquet`, `csv` or `jsonl`: the files' format.
    pub data_format: String,
    /// The exported components, one file each.
    pub components: Vec<ComponentEntry>,
    /// Secondary index definitions.
    #[serde(default)]
    pub indexes: Vec<IndexEntry>,
    /// Reserved (version 1: empty).
    #[serde(default)]
    pub references: Vec<serde_json::Value>,
    /// Reserved (version 1: empty).
    #[serde(default)]
    pub systems: Vec<serde_json::Value>,
}

/// One component of the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentEntry {
    /// The component's name.
    pub name: String,
    /// `table` or `sparse`.
    pub storage: String,
    /// The file, relative to the directory.
    pub file: String,
    /// Rows written.
    #[serde(default)]
    pub rows: u64,
    /// Fields in declaration order (empty for a tag).
    #[serde(default)]
    pub fields: Vec<FieldEntry>,
}

/// One field of a component.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldEntry {
    /// The field's name.
    pub name: String,
    /// Its type in the query language (`f32`, `string`, `vec3`, …).
    #[serde(rename = "type")]
    pub ty: String,
}

/// One index definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// The index's name.
    pub name: String,
    /// `btree`, `rtree`, `bitmap` or `function`.
    pub kind: String,
    /// The indexed component.
    pub component: String,
    /// The indexed fields.
    #[serde(default)]
    pub fields: Vec<String>,
}

impl ComponentEntry {
    /// The entry of a component definition and its file.
    pub fn new(def: &ComponentDef, file: String, rows: u64) -> ComponentEntry {
        ComponentEntry {
            name: def.name.clone(),
            storage: def.storage.to_string(),
            file,
            rows,
            fields: def.fields.iter().map(|(n, t)| FieldEntry { name: n.clone(), ty: t.name().to_string() }).collect(),
        }
    }

    /// The definition this entry describes.
    pub fn to_def(&self, path: &Path) -> Result<ComponentDef, TransferError> {
        let bad = |message: String| TransferError::Schema { path: path.to_path_buf(), message };
        let storage = match self.storage.as_str() {
            "table" => StorageKind::Table,
            "sparse" => StorageKind::Sparse,
            other => return Err(bad(format!("component '{}': unknown storage {other:?}", self.name))),
        };
        let mut fields = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let ty = FieldType::from_name(&f.ty)
                .ok_or_else(|| bad(format!("field '{}.{}': unknown type {:?}", self.name, f.name, f.ty)))?;
            fields.push((f.name.clone(), ty));
        }
        Ok(ComponentDef { name: self.name.clone(), fields, storage })
    }
}

impl ExportSchema {
    /// An empty schema for files of `format`.
    pub fn new(format: Format) -> ExportSchema {
        ExportSchema {
            format: SCHEMA_FORMAT.to_string(),
            version: SCHEMA_VERSION,
            data_format: format.extension().to_string(),
            components: Vec::new(),
            indexes: Vec::new(),
            references: Vec::new(),
            systems: Vec::new(),
        }
    }

    /// Reads and checks `path`.
    pub fn read(path: &Path) -> Result<ExportSchema, TransferError> {
        let text = std::fs::read_to_string(path).map_err(|e| TransferError::io(path, e))?;
        let bad = |message: String| TransferError::Schema { path: path.to_path_buf(), message };
        let schema: ExportSchema = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if schema.format != SCHEMA_FORMAT {
            return Err(bad(format!("\"format\" is {:?}, not {SCHEMA_FORMAT:?}", schema.format)));
        }
        if schema.version != SCHEMA_VERSION {
            return Err(bad(format!(
                "unsupported schema version {} (this build reads {SCHEMA_VERSION})",
                schema.version
            )));
        }
        if !schema.references.is_empty() || !schema.systems.is_empty() {
            return Err(bad("references and systems are not supported by this build".to_string()));
        }
        Format::from_extension(&schema.data_format)
            .ok_or_else(|| bad(format!("unknown data_format {:?}", schema.data_format)))?;
        Ok(schema)
    }

    /// The index definitions, as the engine takes them.
    pub fn index_definitions(&self) -> Vec<IndexDefinition> {
        self.indexes
            .iter()
            .map(|i| IndexDefinition {
                name: i.name.clone(),
                kind: i.kind.clone(),
                component: i.component.clone(),
                fields: i.fields.clone(),
            })
            .collect()
    }
}
