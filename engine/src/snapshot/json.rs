//! JSON export and import of whole worlds, for people and other tools.
//!
//! ```text
//! {
//! "format": "ecsdb-world",
//! "version": 1,
//! "tick": 7,
//! "components": [
//!   {"name":"Position","storage":"table","fields":[{"name":"x","type":"f32"},{"name":"y","type":"f32"}]},
//!   {"name":"Player","storage":"table"},
//!   {"name":"Inventory","storage":"table","opaque":true}
//! ],
//! "indexes": [],
//! "allocator": {"generations":[0,1,0],"free":[1]},
//! "entities": [
//!   {"id":"0v0","components":{"Position":{"x":1.5,"y":-2.0},"Player":{}}},
//!   {"id":"2v0","components":{"Position":{"x":0.0,"y":0.0}}}
//! ]
//! }
//! ```
//!
//! Field values: numbers for numeric fields (non-finite floats as the strings `"NaN"`,
//! `"inf"`, `"-inf"`), `true`/`false`, strings, entities as `"3v1"` (`null` for the null
//! entity), vectors as arrays. Opaque components appear as their serde JSON (only when the
//! program registered serde functions for them). Entities are listed table by table, in row
//! order; importing lists them back in that order, so ids, values, the allocator and the row
//! order within each table survive a round trip. `allocator` may be left out on import: dead
//! indices then get generation 0 and are reused lowest first. Fields left out of a component
//! object are zero.
//!
//! Import goes through the same validation and build as a binary snapshot.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value as Json;

use crate::component::OpaqueSerde;
use crate::component::{ComponentInfo, FieldType, StorageKind};
use crate::entity::Entity;
use crate::snapshot::format::{
    AllocatorRecord, Body, Bytes, ColumnData, ColumnRecord, ComponentRecord, FieldRecord, FieldRun, IndexRecord,
    IndexSection, SparseRecord, TableRecord, Text, field_type_code, storage_code, wire_size,
};
use crate::snapshot::load::load_into;
use crate::snapshot::{LoadOptions, LoadStats, SnapshotError};
use crate::storage::ArchetypeTable;
use crate::world::World;

/// The `format` value of a JSON world.
const JSON_FORMAT: &str = "ecsdb-world";
/// The `version` value this build writes and reads.
const JSON_VERSION: u32 = 1;

/// What to do while exporting JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// Leave out opaque components without registered serde functions (instead of failing).
    pub skip_opaque: bool,
}

fn json_err(e: impl std::fmt::Display) -> SnapshotError {
    SnapshotError::Json(e.to_string())
}

fn write_err(e: serde_json::Error) -> SnapshotError {
    match e.io_error_kind() {
        Some(kind) => SnapshotError::Io(std::io::Error::new(kind, e.to_string())),
        None => SnapshotError::Json(e.to_string()),
    }
}

// ----- export ----------------------------------------------------------------------------------

#[derive(Serialize)]
struct ComponentOut<'a> {
    name: &'a str,
    storage: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    opaque: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fields: Vec<FieldOutDesc<'a>>,
}

#[derive(Serialize)]
struct FieldOutDesc<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
}

#[derive(Serialize)]
struct IndexOut<'a> {
    name: &'a str,
    kind: &'a str,
    component: &'a str,
    fields: &'a [String],
}

/// What the export knows about each component.
struct Ctx<'w> {
    world: &'w World,
    /// Per component id: whether it is exported, and its serde functions when opaque.
    included: Vec<bool>,
    serde: Vec<Option<&'w OpaqueSerde>>,
}

struct EntityOut<'a, 'w> {
    ctx: &'a Ctx<'w>,
    e: Entity,
    table: &'w ArchetypeTable,
    row: usize,
}

impl Serialize for EntityOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("id", &self.e.to_string())?;
        m.serialize_entry("components", &ComponentsOut(self))?;
        m.end()
    }
}

struct ComponentsOut<'a, 'b, 'w>(&'a EntityOut<'b, 'w>);

impl Serialize for ComponentsOut<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let EntityOut { ctx, e, table, row } = self.0;
        let comps = &ctx.world.components;
        let mut m = s.serialize_map(None)?;
        for (&cid, col) in table.components().iter().zip(table.columns()) {
            if ctx.included[cid.index()] {
                let v = ValueOut { info: comps.info(cid), ptr: col.get_ptr(*row), serde: ctx.serde[cid.index()] };
                m.serialize_entry(comps.info(cid).name(), &v)?;
            }
        }
        for (i, set) in ctx.world.storage.sparse.iter().enumerate() {
            let Some(ptr) = set.as_ref().and_then(|s| s.get_ptr(*e)) else { continue };
            if ctx.included[i] {
                let info = comps.info(crate::component::ComponentId(i as u32));
                m.serialize_entry(info.name(), &ValueOut { info, ptr, serde: ctx.serde[i] })?;
            }
        }
        m.end()
    }
}

/// One component value; `ptr` points to a live value of `info`'s component.
struct ValueOut<'a> {
    info: &'a ComponentInfo,
    ptr: *const u8,
    serde: Option<&'a OpaqueSerde>,
}

impl Serialize for ValueOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.info.is_opaque() {
            let serde = self.serde.ok_or_else(|| S::Error::custom("opaque component without serde functions"))?;
            // SAFETY: `ptr` is a live value of the registered type.
            let v = unsafe { (serde.to_json)(self.ptr) }
                .map_err(|m| S::Error::custom(format!("component '{}': {m}", self.info.name())))?;
            return v.serialize(s);
        }
        let mut m = s.serialize_map(Some(self.info.fields().len()))?;
        for f in self.info.fields() {
            // SAFETY: the field lies inside the live value.
            let fv = FieldOut { ty: f.ty, ptr: unsafe { self.ptr.add(f.offset) } };
            m.serialize_entry(&f.name, &fv)?;
        }
        m.end()
    }
}

/// One field value; `ptr` points to an initialised, aligned value of `ty`.
struct FieldOut {
    ty: FieldType,
    ptr: *const u8,
}

fn ser_f32<S: Serializer>(x: f32, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() { s.serialize_f32(x) } else { s.serialize_str(non_finite(x as f64)) }
}

fn ser_f64<S: Serializer>(x: f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() { s.serialize_f64(x) } else { s.serialize_str(non_finite(x)) }
}

fn non_finite(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

struct F32Out(f32);
impl Serialize for F32Out {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ser_f32(self.0, s)
    }
}

impl Serialize for FieldOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.ptr;
        // SAFETY: `p` is an initialised, aligned value of the field's type (the schema says so).
        unsafe {
            match self.ty {
                FieldType::Bool => s.serialize_bool(*p != 0),
                FieldType::I8 => s.serialize_i8(*(p as *const i8)),
                FieldType::I16 => s.serialize_i16(*(p as *const i16)),
                FieldType::I32 => s.serialize_i32(*(p as *const i32)),
                FieldType::I64 => s.serialize_i64(*(p as *const i64)),
                FieldType::U8 => s.serialize_u8(*p),
                FieldType::U16 => s.serialize_u16(*(p as *const u16)),
                FieldType::U32 => s.serialize_u32(*(p as *const u32)),
                FieldType::U64 => s.serialize_u64(*(p as *const u64)),
                FieldType::F32 => ser_f32(*(p as *const f32), s),
                FieldType::F64 => ser_f64(*(p as *const f64), s),
                FieldType::String => s.serialize_str(&*(p as *const String)),
                FieldType::Entity => {
                    let e = *(p as *const Entity);
                    if e.is_null() { s.serialize_none() } else { s.serialize_str(&e.to_string()) }
                }
                FieldType::Vec2 | FieldType::Vec3 => {
                    let n = if self.ty == FieldType::Vec2 { 2 } else { 3 };
                    let v = std::slice::from_raw_parts(p as *const f32, n);
                    let mut seq = s.serialize_seq(Some(n))?;
                    for &x in v {
                        seq.serialize_element(&F32Out(x))?;
                    }
                    seq.end()
                }
            }
        }
    }
}

impl World {
    /// The world as JSON text (see [`World::export_json`]).
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        let mut out = Vec::new();
        self.export_json(&mut out, &JsonOptions::default())?;
        String::from_utf8(out).map_err(json_err)
    }

    /// Writes the world as JSON: the catalog, the allocator and every entity with its
    /// component objects, one entity per line. Opaque components are written through their
    /// registered serde functions; without them the export fails unless
    /// [`JsonOptions::skip_opaque`] is set.
    ///
    /// ```
    /// use ecsdb_engine::{Component, World};
    /// #[derive(Component)]
    /// struct Health { hp: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Health { hp: 7.5 });
    /// let json = world.to_json().unwrap();
    /// assert!(json.contains(r#"{"id":"0v0","components":{"Health":{"hp":7.5}}}"#));
    /// let back = World::from_json(&json).unwrap();
    /// assert_eq!(back.get_field(e, "Health", "hp").unwrap(), 7.5f64.into());
    /// ```
    pub fn export_json(&self, w: impl Write, opts: &JsonOptions) -> Result<(), SnapshotError> {
        let comps = &self.components;
        let mut included = Vec::with_capacity(comps.len());
        let mut serde = Vec::with_capacity(comps.len());
        let mut missing = Vec::new();
        for info in comps.iter() {
            let s = if info.is_opaque() { self.opaque_serde.get(info.type_id()) } else { None };
            let mut keep = true;
            if info.is_opaque() && s.is_none() && self.component_count(info.id()) > 0 {
                if opts.skip_opaque {
                    keep = false;
                } else {
                    missing.push(info.name().to_string());
                }
            }
            included.push(keep);
            serde.push(s);
        }
        if !missing.is_empty() {
            return Err(SnapshotError::OpaqueWithoutSerde(missing));
        }
        let ctx = Ctx { world: self, included, serde };
        let mut w = BufWriter::new(w);
        let to = |w: &mut BufWriter<_>, v: &dyn erased::Ser| v.write_to(w);
        write!(
            w,
            "{{\n\"format\": \"{JSON_FORMAT}\",\n\"version\": {JSON_VERSION},\n\"tick\": {},\n",
            self.change_tick()
        )?;
        w.write_all(b"\"components\": [")?;
        let mut first = true;
        for info in comps.iter().filter(|i| ctx.included[i.id().index()]) {
            w.write_all(if first { b"\n  " } else { b",\n  " })?;
            first = false;
            let c = ComponentOut {
                name: info.name(),
                storage: info.storage().to_string(),
                opaque: info.is_opaque(),
                fields: info.fields().iter().map(|f| FieldOutDesc { name: &f.name, ty: f.ty.name() }).collect(),
            };
            to(&mut w, &c)?;
        }
        w.write_all(b"\n],\n\"indexes\": [")?;
        let defs = self.snapshot_index_definitions();
        for (i, d) in defs.iter().enumerate() {
            w.write_all(if i == 0 { b"\n  " } else { b",\n  " })?;
            to(&mut w, &IndexOut { name: &d.name, kind: &d.kind, component: &d.component, fields: &d.fields })?;
        }
        w.write_all(b"],\n\"allocator\": {\"generations\": ")?;
        let state = self.entities.state();
        let gens: Vec<u32> = state.slots.iter().map(|s| s.0).collect();
        to(&mut w, &gens)?;
        w.write_all(b", \"free\": ")?;
        to(&mut w, &state.free)?;
        w.write_all(b"},\n\"entities\": [")?;
        let mut first = true;
        for t in &self.storage.tables {
            for (row, &e) in t.entities().iter().enumerate() {
                w.write_all(if first { b"\n  " } else { b",\n  " })?;
                first = false;
                to(&mut w, &EntityOut { ctx: &ctx, e, table: t, row })?;
            }
        }
        w.write_all(b"\n]\n}\n")?;
        w.flush()?;
        Ok(())
    }
}

/// Object-safe serialisation to a writer, so one helper writes every part.
mod erased {
    use super::*;
    pub(super) trait Ser {
        fn write_to(&self, w: &mut dyn Write) -> Result<(), SnapshotError>;
    }
    impl<T: Serialize> Ser for T {
        fn write_to(&self, w: &mut dyn Write) -> Result<(), SnapshotError> {
            serde_json::to_writer(w, self).map_err(write_err)
        }
    }
}

// ----- import ----------------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonWorld {
    format: String,
    version: u32,
    #[serde(default)]
    tick: Option<u32>,
    components: Vec<JsonComponent>,
    #[serde(default)]
    indexes: Vec<JsonIndex>,
    #[serde(default)]
    allocator: Option<JsonAllocator>,
    entities: Vec<JsonEntity>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonComponent {
    name: String,
    #[serde(default)]
    storage: Option<String>,
    #[serde(default)]
    opaque: bool,
    #[serde(default)]
    fields: Vec<JsonField>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonField {
    name: String,
    #[serde(rename = "type")]
    ty: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonIndex {
    name: String,
    kind: String,
    component: String,
    #[serde(default)]
    fields: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonAllocator {
    generations: Vec<u32>,
    #[serde(default)]
    free: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEntity {
    id: String,
    #[serde(default)]
    components: serde_json::Map<String, Json>,
}

/// A catalog component as the import sees it.
struct CatalogEntry {
    name: String,
    storage: StorageKind,
    opaque: bool,
    fields: Vec<(String, FieldType)>,
    /// For opaque components: the program's serde functions (by name), if registered.
    serde: Option<OpaqueSerde>,
}

/// Values of one component for the rows of a table or sparse set, in the body's layout.
enum ColumnBuild {
    Empty,
    Fields(Vec<RunBuild>),
    Opaque { lens: Vec<u8>, data: Vec<u8> },
}

enum RunBuild {
    Plain(Vec<u8>),
    Strings { lens: Vec<u8>, data: Vec<u8> },
}

impl ColumnBuild {
    fn new(c: &CatalogEntry) -> ColumnBuild {
        if c.opaque {
            ColumnBuild::Opaque { lens: Vec::new(), data: Vec::new() }
        } else if c.fields.is_empty() {
            ColumnBuild::Empty
        } else {
            ColumnBuild::Fields(
                c.fields
                    .iter()
                    .map(|(_, ty)| match ty {
                        FieldType::String => RunBuild::Strings { lens: Vec::new(), data: Vec::new() },
                        _ => RunBuild::Plain(Vec::new()),
                    })
                    .collect(),
            )
        }
    }

    fn push(&mut self, c: &CatalogEntry, e: &str, v: Json) -> Result<(), SnapshotError> {
        let name = &c.name;
        match self {
            ColumnBuild::Opaque { lens, data } => {
                let serde = c.serde.as_ref().ok_or_else(|| SnapshotError::OpaqueWithoutSerde(vec![name.clone()]))?;
                let before = data.len();
                (serde.from_json)(v, data)
                    .map_err(|m| SnapshotError::Json(format!("entity {e}: component '{name}': {m}")))?;
                let len = u32::try_from(data.len() - before)
                    .map_err(|_| SnapshotError::TooLarge { what: format!("a value of '{name}'") })?;
                lens.extend_from_slice(&len.to_le_bytes());
            }
            ColumnBuild::Empty | ColumnBuild::Fields(_) => {
                let Json::Object(mut obj) = v else {
                    return Err(SnapshotError::Json(format!("entity {e}: component '{name}' is not an object")));
                };
                if let ColumnBuild::Fields(runs) = self {
                    for ((fname, ty), run) in c.fields.iter().zip(runs.iter_mut()) {
                        let fv = obj.remove(fname.as_str()).unwrap_or(Json::Null);
                        let bad = |what: &str| {
                            SnapshotError::Json(format!("entity {e}: field '{name}.{fname}': expected {what}"))
                        };
                        match run {
                            RunBuild::Strings { lens, data } => {
                                let s = match &fv {
                                    Json::Null => "",
                                    Json::String(s) => s.as_str(),
                                    _ => return Err(bad("a string")),
                                };
                                let len = u32::try_from(s.len())
                                    .map_err(|_| SnapshotError::TooLarge { what: format!("a string of '{name}'") })?;
                                lens.extend_from_slice(&len.to_le_bytes());
                                data.extend_from_slice(s.as_bytes());
                            }
                            RunBuild::Plain(out) => {
                                let mut buf = [0u8; 12];
                                field_bytes(*ty, &fv, &mut buf[..wire_size(*ty)]).map_err(bad)?;
                                out.extend_from_slice(&buf[..wire_size(*ty)]);
                            }
                        }
                    }
                }
                if let Some(extra) = obj.keys().next() {
                    return Err(SnapshotError::Json(format!("entity {e}: component '{name}' has no field '{extra}'")));
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> ColumnRecord<'static> {
        let data = match self {
            ColumnBuild::Empty => ColumnData::Empty,
            ColumnBuild::Opaque { lens, data } => {
                ColumnData::Opaque { lens: Bytes::owned(lens), data: Bytes::owned(data) }
            }
            ColumnBuild::Fields(runs) => ColumnData::Fields(
                runs.into_iter()
                    .map(|r| match r {
                        RunBuild::Plain(b) => FieldRun::Plain(Bytes::owned(b)),
                        RunBuild::Strings { lens, data } => {
                            FieldRun::Strings { lens: Bytes::owned(lens), data: Bytes::owned(data) }
                        }
                    })
                    .collect(),
            ),
        };
        ColumnRecord { data, ticks: None }
    }
}

/// A JSON value as the little-endian bytes of a plain field (`out` is the field's size);
/// the error says what was expected.
fn field_bytes(ty: FieldType, v: &Json, out: &mut [u8]) -> Result<(), &'static str> {
    macro_rules! int {
        ($t:ty, $what:literal) => {{
            let x: $t = match v {
                Json::Null => 0,
                Json::Number(n) => n
                    .as_i64()
                    .and_then(|i| <$t>::try_from(i).ok())
                    .or_else(|| n.as_u64().and_then(|u| <$t>::try_from(u).ok()))
                    .ok_or($what)?,
                _ => return Err($what),
            };
            out.copy_from_slice(&x.to_le_bytes());
        }};
    }
    match ty {
        FieldType::Bool => match v {
            Json::Null => out[0] = 0,
            Json::Bool(b) => out[0] = *b as u8,
            _ => return Err("true or false"),
        },
        FieldType::I8 => int!(i8, "an i8"),
        FieldType::I16 => int!(i16, "an i16"),
        FieldType::I32 => int!(i32, "an i32"),
        FieldType::I64 => int!(i64, "an i64"),
        FieldType::U8 => int!(u8, "a u8"),
        FieldType::U16 => int!(u16, "a u16"),
        FieldType::U32 => int!(u32, "a u32"),
        FieldType::U64 => int!(u64, "a u64"),
        FieldType::F32 => out.copy_from_slice(&json_f32(v).ok_or("an f32")?.to_le_bytes()),
        FieldType::F64 => out.copy_from_slice(&json_f64(v).ok_or("an f64")?.to_le_bytes()),
        FieldType::Entity => {
            let e = match v {
                Json::Null => Entity::NULL,
                Json::String(s) => s.parse::<Entity>().map_err(|_| "an entity like \"3v0\" or null")?,
                _ => return Err("an entity like \"3v0\" or null"),
            };
            out[..4].copy_from_slice(&e.index().to_le_bytes());
            out[4..].copy_from_slice(&e.generation().to_le_bytes());
        }
        FieldType::Vec2 | FieldType::Vec3 => {
            let n = out.len() / 4;
            let what = if n == 2 { "an array of 2 numbers" } else { "an array of 3 numbers" };
            match v {
                Json::Null => out.fill(0),
                Json::Array(a) if a.len() == n => {
                    for (x, o) in a.iter().zip(out.chunks_exact_mut(4)) {
                        o.copy_from_slice(&json_f32(x).ok_or(what)?.to_le_bytes());
                    }
                }
                _ => return Err(what),
            }
        }
        FieldType::String => return Err("a string"),
    }
    Ok(())
}

fn json_f64(v: &Json) -> Option<f64> {
    match v {
        Json::Null => Some(0.0),
        Json::Number(n) => n.as_f64(),
        Json::String(s) => match s.as_str() {
            "NaN" | "nan" => Some(f64::NAN),
            "inf" | "+inf" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn json_f32(v: &Json) -> Option<f32> {
    json_f64(v).map(f32_from_f64)
}

/// The f32 a decimal was written for, given the decimal read as f64.
///
/// Reading a decimal as f64 and rounding to f32 can land one step off the direct reading
/// when the f64 falls (almost) on the midpoint between two f32s; there the neighbour whose
/// shortest text reads back as the same f64 is the one that was written.
fn f32_from_f64(v: f64) -> f32 {
    let c = v as f32;
    if !c.is_finite() || c as f64 == v {
        return c;
    }
    let other = step_f32(c, v > c as f64);
    let mid = (c as f64 + other as f64) / 2.0;
    if (v - mid).abs() > mid.abs() * f64::EPSILON * 16.0 {
        return c;
    }
    [c, other].into_iter().find(|x| format!("{x}").parse::<f64>().ok() == Some(v)).unwrap_or(c)
}

/// The neighbouring f32 of a finite `x`, upward or downward.
fn step_f32(x: f32, up: bool) -> f32 {
    if x == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let b = x.to_bits();
    f32::from_bits(if (x > 0.0) == up { b + 1 } else { b - 1 })
}

/// A table or sparse set being assembled from JSON entities.
struct Group {
    components: Vec<u32>,
    entities: Vec<u8>,
    columns: Vec<ColumnBuild>,
}

fn json_to_body(
    doc: JsonWorld,
    world: &World,
    opts: &LoadOptions,
) -> Result<(Body<'static>, Vec<String>), SnapshotError> {
    if doc.format != JSON_FORMAT {
        return Err(SnapshotError::Json(format!("\"format\" is {:?}, not {JSON_FORMAT:?}", doc.format)));
    }
    if doc.version != JSON_VERSION {
        return Err(SnapshotError::Json(format!("unsupported JSON world version {}", doc.version)));
    }
    // Catalog.
    let mut catalog = Vec::with_capacity(doc.components.len());
    let mut by_name = HashMap::with_capacity(doc.components.len());
    let mut records = Vec::with_capacity(doc.components.len());
    for c in doc.components {
        let storage = match c.storage.as_deref() {
            None | Some("table") => StorageKind::Table,
            Some("sparse") => StorageKind::Sparse,
            Some(other) => {
                return Err(SnapshotError::Json(format!("component '{}': unknown storage {other:?}", c.name)));
            }
        };
        let mut fields = Vec::with_capacity(c.fields.len());
        for f in c.fields {
            let ty = FieldType::from_name(&f.ty).ok_or_else(|| {
                SnapshotError::Json(format!("field '{}.{}': unknown type {:?}", c.name, f.name, f.ty))
            })?;
            fields.push((f.name, ty));
        }
        let serde = world
            .components
            .by_name(&c.name)
            .filter(|i| i.is_opaque())
            .and_then(|i| world.opaque_serde.get(i.type_id()).copied());
        if by_name.insert(c.name.clone(), catalog.len() as u32).is_some() {
            return Err(SnapshotError::Json(format!("component '{}' is listed twice", c.name)));
        }
        // A packed layout in declaration order: only `Bulk` columns read it, and JSON
        // columns are written field by field.
        let mut offset = 0u64;
        let field_records = fields
            .iter()
            .map(|(n, ty)| {
                let r = FieldRecord { name: Text(n.clone().into()), ty: field_type_code(*ty), offset };
                offset += wire_size(*ty) as u64;
                r
            })
            .collect();
        records.push(ComponentRecord {
            name: Text(c.name.clone().into()),
            storage: storage_code(storage),
            opaque: c.opaque,
            size: offset,
            fields: field_records,
        });
        catalog.push(CatalogEntry { name: c.name, storage, opaque: c.opaque, fields, serde });
    }

    // Entities, grouped into tables by their sorted table-component set.
    let mut tables: Vec<Group> = Vec::new();
    let mut table_of_set: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut sparse: Vec<Option<Group>> = (0..catalog.len()).map(|_| None).collect();
    let mut skipped = Vec::new();
    let mut ids = Vec::with_capacity(doc.entities.len());
    for ent in doc.entities {
        let e: Entity = ent.id.parse().map_err(json_err)?;
        ids.push(e);
        let mut table_parts: Vec<(u32, Json)> = Vec::new();
        for (name, v) in ent.components {
            let &ci = by_name.get(&name).ok_or_else(|| {
                SnapshotError::Json(format!("entity {e}: component '{name}' is not in \"components\""))
            })?;
            let c = &catalog[ci as usize];
            if c.opaque && c.serde.is_none() {
                if opts.skip_opaque {
                    if !skipped.contains(&name) {
                        skipped.push(name);
                    }
                    continue;
                }
                return Err(SnapshotError::OpaqueWithoutSerde(vec![name]));
            }
            match c.storage {
                StorageKind::Table => table_parts.push((ci, v)),
                StorageKind::Sparse => {
                    let g = sparse[ci as usize].get_or_insert_with(|| Group {
                        components: vec![ci],
                        entities: Vec::new(),
                        columns: vec![ColumnBuild::new(c)],
                    });
                    g.entities.extend_from_slice(&e.index().to_le_bytes());
                    g.entities.extend_from_slice(&e.generation().to_le_bytes());
                    g.columns[0].push(c, &ent.id, v)?;
                }
            }
        }
        table_parts.sort_by_key(|p| p.0);
        let set: Vec<u32> = table_parts.iter().map(|p| p.0).collect();
        let gi = match table_of_set.get(&set) {
            Some(&g) => g,
            None => {
                let columns = set.iter().map(|&ci| ColumnBuild::new(&catalog[ci as usize])).collect();
                tables.push(Group { components: set.clone(), entities: Vec::new(), columns });
                table_of_set.insert(set, tables.len() - 1);
                tables.len() - 1
            }
        };
        let g = &mut tables[gi];
        g.entities.extend_from_slice(&e.index().to_le_bytes());
        g.entities.extend_from_slice(&e.generation().to_le_bytes());
        for ((ci, v), col) in table_parts.into_iter().zip(g.columns.iter_mut()) {
            col.push(&catalog[ci as usize], &ent.id, v)?;
        }
    }

    // Allocator: given, or derived from the ids (dead indices: generation 0, reused lowest
    // first).
    let (generations, free) = match doc.allocator {
        Some(a) => (a.generations, a.free),
        None => {
            let n = ids.iter().map(|e| e.index() as usize + 1).max().unwrap_or(0);
            let mut gens = vec![0u32; n];
            let mut live = vec![false; n];
            for e in &ids {
                gens[e.index() as usize] = e.generation();
                live[e.index() as usize] = true;
            }
            (gens, (0..n as u32).rev().filter(|&i| !live[i as usize]).collect())
        }
    };
    let n = generations.len();
    let mut live = vec![0u8; n.div_ceil(8)];
    for e in &ids {
        let i = e.index() as usize;
        if i >= n {
            return Err(SnapshotError::Json(format!("entity {e} is beyond the allocator's {n} indices")));
        }
        live[i / 8] |= 1 << (i % 8);
    }
    let allocator = AllocatorRecord {
        generations: Bytes::owned(generations.iter().flat_map(|g| g.to_le_bytes()).collect()),
        live: Bytes::owned(live),
        free: Bytes::owned(free.iter().flat_map(|g| g.to_le_bytes()).collect()),
    };

    let group = |g: Group| TableRecord {
        components: g.components,
        entities: Bytes::owned(g.entities),
        columns: g.columns.into_iter().map(ColumnBuild::finish).collect(),
    };
    let body = Body {
        world_tick: doc.tick.unwrap_or(1),
        // (The JSON form does not carry systems.)
        schedule: Default::default(),
        catalog: records,
        allocator,
        tables: tables.into_iter().map(group).collect(),
        sparse: sparse
            .into_iter()
            .flatten()
            .map(|g| {
                let t = group(g);
                SparseRecord {
                    component: t.components[0],
                    entities: t.entities,
                    column: t.columns.into_iter().next().expect("one column"),
                }
            })
            .collect(),
        index_definitions: IndexSection {
            definitions: doc
                .indexes
                .into_iter()
                .map(|d| IndexRecord {
                    name: Text(d.name.into()),
                    kind: Text(d.kind.into()),
                    component: Text(d.component.into()),
                    fields: d.fields.into_iter().map(|f| Text(f.into())).collect(),
                })
                .collect(),
            ..IndexSection::default()
        },
    };
    Ok((body, skipped))
}

impl World {
    /// Reads a world from JSON written by [`World::export_json`] (or by hand, in the same
    /// shape). Every component becomes a run-time component; use [`World::import_json`] to
    /// load into Rust types.
    pub fn from_json(json: &str) -> Result<World, SnapshotError> {
        let mut w = World::new();
        w.import_json(json, &LoadOptions::default())?;
        Ok(w)
    }

    /// Reads a JSON world into this world, which must have no live entities; components are
    /// matched by name exactly as in [`World::load_into`]. On error the world is unchanged.
    pub fn import_json(&mut self, json: &str, opts: &LoadOptions) -> Result<LoadStats, SnapshotError> {
        if !self.is_empty() {
            return Err(SnapshotError::WorldNotEmpty(self.len()));
        }
        let doc: JsonWorld = serde_json::from_str(json).map_err(json_err)?;
        let (body, skipped) = json_to_body(doc, self, opts)?;
        let mut stats = load_into(self, &body, 0, opts, None)?;
        stats.bytes = json.len() as u64;
        for s in skipped {
            if !stats.skipped_opaque.contains(&s) {
                stats.skipped_opaque.push(s);
            }
        }
        self.rebuild_snapshot_indexes(&mut stats, crate::snapshot::IndexBuild::Now);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_text_round_trips_through_f64() {
        let mut x = 1.0e-30f32;
        let mut checked = 0;
        while x < 1.0e30 {
            for v in [x, -x, step_f32(x, true)] {
                let text = serde_json::to_string(&v).unwrap();
                let back: f64 = serde_json::from_str(&text).unwrap();
                assert_eq!(f32_from_f64(back), v, "{text}");
                checked += 1;
            }
            x *= crate::test_size(1.37, 7.3);
        }
        assert!(checked > 100);
        assert_eq!(step_f32(0.0, false), -f32::from_bits(1));
    }
}
