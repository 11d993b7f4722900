//! `schema.json`: the catalog of an export, read back by import.
//!
//! ```text
//! {
//!   "format": "ecsdb-export",
//!   "version": 2,
//!   "data_format": "parquet",
//!   "components": [
//!     {"name": "Position", "storage": "table", "file": "Position.parquet", "rows": 2,
//!      "fields": [{"name": "x", "type": "f32"}, {"name": "y", "type": "f32", "default": 1.5}]},
//!     {"name": "Player", "storage": "table", "file": "Player.parquet", "rows": 1, "fields": []}
//!   ],
//!   "entities": {"issued": 5, "free": ["4v1", "2v3"], "without_components": ["3v0"]},
//!   "indexes": [{"name": "Position_rtree", "kind": "rtree", "component": "Position", "fields": ["x", "y"]}],
//!   "references": [],
//!   "systems": []
//! }
//! ```
//!
//! `entities` (version 2) is what the component files cannot say about the entities: live
//! entities with no exported component, and the allocator's dead indices (how many indices
//! were ever issued; the free list, each index with the generation it will be reissued
//! with, reused last first; any other dead index is retired). With it, an imported world
//! issues the same ids the original would have. A full export writes it; an export of some
//! components leaves it out (the other entities are not dead), and import then rebuilds the
//! allocator from the ids in the files.
//!
//! A field's `default` (left out when it has none) is its `DEFAULT` as JSON lines write the
//! field's values: a number (non-finite floats as `"NaN"`, `"inf"`, `"-inf"`), a bool, a
//! string, an entity as `"3v1"` or `null`, a vector as an array. Import sets it again.
//!
//! `references` and `systems` are reserved: always written empty, and an import that finds
//! them non-empty refuses the directory rather than drop what it cannot rebuild. This build
//! reads versions 1 and 2 and refuses others.

use std::path::Path;

use ecsdb_engine::snapshot::DeadIndices;
use ecsdb_engine::{
    ComponentDef, ComponentId, Entity, FieldInfo, FieldType, IndexDefinition, StorageKind, Value, World,
};
use serde::{Deserialize, Serialize};

use crate::Format;
use crate::error::TransferError;

/// The `format` value of `schema.json`.
pub const SCHEMA_FORMAT: &str = "ecsdb-export";
/// The `version` this build writes.
pub const SCHEMA_VERSION: u32 = 2;
/// The versions this build reads.
pub const SCHEMA_VERSIONS_READ: [u32; 2] = [1, 2];
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
    /// Entities without components and the allocator's dead indices (full exports only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<EntitiesEntry>,
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

/// The `entities` section: what the component files cannot say about the entities.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntitiesEntry {
    /// Indices the allocator has issued (live, free and retired).
    pub issued: u32,
    /// The free list: dead ids as `12v3`, with the generation each will be reissued with,
    /// in the order the allocator keeps them (reused last first).
    #[serde(default)]
    pub free: Vec<String>,
    /// Live entities that have no exported component, as `12v0`.
    #[serde(default)]
    pub without_components: Vec<String>,
}

impl EntitiesEntry {
    /// The section for `world`: its allocator's dead indices, and `bare`.
    pub fn new(world: &World, bare: &[Entity]) -> EntitiesEntry {
        let dead = DeadIndices::of(world);
        EntitiesEntry {
            issued: dead.issued,
            free: dead.free.iter().map(Entity::to_string).collect(),
            without_components: bare.iter().map(Entity::to_string).collect(),
        }
    }

    /// The entities and dead indices it describes; a bad id is an error naming its place.
    pub fn parse(&self, path: &Path) -> Result<(Vec<Entity>, DeadIndices), TransferError> {
        let ids = |list: &[String], what: &str| -> Result<Vec<Entity>, TransferError> {
            list.iter()
                .enumerate()
                .map(|(i, t)| {
                    crate::entity_text::parse_entity(t).ok_or_else(|| TransferError::Schema {
                        path: path.to_path_buf(),
                        message: format!("entities.{what}[{i}]: {t:?} is not an entity id (like 12v0)"),
                    })
                })
                .collect()
        };
        let bare = ids(&self.without_components, "without_components")?;
        let free = ids(&self.free, "free")?;
        Ok((bare, DeadIndices { issued: self.issued, free }))
    }
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
    /// Its default, if it has one (see the module's docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
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
    /// The entry of component `id` of `world`, written to `file`.
    pub fn new(world: &World, id: ComponentId, file: String, rows: u64) -> ComponentEntry {
        let info = world.components().info(id);
        let field = |f: &FieldInfo| FieldEntry {
            name: f.name.clone(),
            ty: f.ty.name().to_string(),
            default: world.field_default(id, &f.name).ok().flatten().map(|v| default_to_json(&v)),
        };
        ComponentEntry {
            name: info.name().to_string(),
            storage: info.storage().to_string(),
            file,
            rows,
            fields: info.fields().iter().map(field).collect(),
        }
    }

    /// The fields' defaults this entry gives, each checked against its field's type.
    pub fn defaults(&self, path: &Path) -> Result<Vec<(String, Value)>, TransferError> {
        let mut out = Vec::new();
        for f in &self.fields {
            let Some(json) = &f.default else { continue };
            let bad = || TransferError::Schema {
                path: path.to_path_buf(),
                message: format!("field '{}.{}': the default {json} is not a {} value", self.name, f.name, f.ty),
            };
            let ty = FieldType::from_name(&f.ty).ok_or_else(bad)?;
            let value = default_from_json(json, ty).ok_or_else(bad)?;
            let info = FieldInfo { name: f.name.clone(), ty, offset: 0 };
            ecsdb_engine::convert_value(&self.name, &info, &value).map_err(|_| bad())?;
            out.push((f.name.clone(), value));
        }
        Ok(out)
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
            entities: None,
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
        if !SCHEMA_VERSIONS_READ.contains(&schema.version) {
            return Err(bad(format!(
                "unsupported schema version {} (this build reads {SCHEMA_VERSIONS_READ:?})",
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

/// A default as `schema.json` writes it (see the module's docs).
fn default_to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as Json;
    let float = |x: f64| match x {
        x if x.is_nan() => Json::from("NaN"),
        x if x == f64::INFINITY => Json::from("inf"),
        x if x == f64::NEG_INFINITY => Json::from("-inf"),
        x => Json::from(x),
    };
    match v {
        Value::Bool(b) => Json::from(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(x) => float(*x),
        Value::Str(s) => Json::from(s.as_str()),
        Value::Entity(e) if e.is_null() => Json::Null,
        Value::Entity(e) => Json::from(e.to_string()),
        Value::Vec2(a) => Json::Array(a.iter().map(|x| float(*x)).collect()),
        Value::Vec3(a) => Json::Array(a.iter().map(|x| float(*x)).collect()),
        Value::Null | Value::Object(_) => Json::Null,
    }
}

/// A default read from `schema.json` as a value for a field of type `ty`; `None` if it
/// cannot be one.
fn default_from_json(json: &serde_json::Value, ty: FieldType) -> Option<Value> {
    use serde_json::Value as Json;
    let float = |j: &Json| match j {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    };
    Some(match ty {
        FieldType::Bool => Value::Bool(json.as_bool()?),
        FieldType::F32 | FieldType::F64 => Value::Float(float(json)?),
        FieldType::String => Value::Str(json.as_str()?.to_string()),
        FieldType::Entity => match json {
            Json::Null => Value::Null,
            j => Value::Entity(crate::entity_text::parse_entity(j.as_str()?)?),
        },
        FieldType::Vec2 | FieldType::Vec3 => {
            let xs: Vec<f64> = json.as_array()?.iter().map(float).collect::<Option<_>>()?;
            match (ty, xs.as_slice()) {
                (FieldType::Vec2, &[x, y]) => Value::Vec2([x, y]),
                (FieldType::Vec3, &[x, y, z]) => Value::Vec3([x, y, z]),
                _ => return None,
            }
        }
        _ if ty.is_integer() => Value::Int(json.as_i64()?),
        _ => return None,
    })
}
