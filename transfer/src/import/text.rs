//! CSV and JSON-lines files into columns.

use std::borrow::Cow;
use std::fmt;
use std::fs;
use std::path::Path;

use ecsdb_engine::snapshot::ComponentColumns;
use ecsdb_engine::{ComponentDef, Entity, FieldType, StorageKind};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::values::{Builder, Guess};
use crate::error::{DataProblem, Place, TransferError};

/// Where each column of a file goes: the entity column, and each field's column.
pub(super) struct Layout {
    pub entity: usize,
    /// For each column of the file, the field it fills (`None` for `entity`).
    pub field_of_column: Vec<Option<usize>>,
}

/// Matches a file's column names to a definition: `entity` once, every field once, nothing
/// else.
pub(super) fn layout(path: &Path, def: &ComponentDef, columns: &[String]) -> Result<Layout, TransferError> {
    let err = |place: Place, problem: DataProblem| TransferError::data(path, place, problem);
    let mut entity = None;
    let mut field_of_column = Vec::with_capacity(columns.len());
    let mut seen = vec![false; def.fields.len()];
    for c in columns {
        if c == "entity" {
            if entity.replace(field_of_column.len()).is_some() {
                return Err(err(Place::column(c), DataProblem::Malformed("the column appears twice".into())));
            }
            field_of_column.push(None);
            continue;
        }
        let f = def
            .fields
            .iter()
            .position(|(n, _)| n == c)
            .ok_or_else(|| err(Place::column(c), DataProblem::UnknownColumn(def.name.clone())))?;
        if std::mem::replace(&mut seen[f], true) {
            return Err(err(Place::column(c), DataProblem::Malformed("the column appears twice".into())));
        }
        field_of_column.push(Some(f));
    }
    let entity = entity.ok_or_else(|| err(Place::column("entity"), DataProblem::MissingColumn(def.name.clone())))?;
    if let Some(f) = seen.iter().position(|s| !s) {
        return Err(err(Place::column(&def.fields[f].0), DataProblem::MissingColumn(def.name.clone())));
    }
    Ok(Layout { entity, field_of_column })
}

/// The definition of a component from its columns and their guessed types.
fn guessed(name: &str, columns: &[String], guesses: &[Guess]) -> ComponentDef {
    let fields =
        columns.iter().zip(guesses).filter(|(c, _)| *c != "entity").map(|(c, g)| (c.clone(), g.field_type())).collect();
    ComponentDef { name: name.to_string(), fields, storage: StorageKind::Table }
}

fn parse_entity(path: &Path, row: usize, s: &str) -> Result<Entity, TransferError> {
    crate::entity_text::parse_entity(s)
        .ok_or_else(|| TransferError::data(path, Place::cell(row, "entity"), DataProblem::BadEntity(s.to_string())))
}

fn csv_reader(path: &Path) -> Result<csv::Reader<fs::File>, TransferError> {
    let file = fs::File::open(path).map_err(|e| TransferError::io(path, e))?;
    Ok(csv::ReaderBuilder::new().has_headers(true).from_reader(file))
}

fn csv_error(path: &Path, e: csv::Error) -> TransferError {
    let row = e.position().map(|p| p.record() as usize);
    let message = e.to_string();
    match e.into_kind() {
        csv::ErrorKind::Io(io) => TransferError::io(path, io),
        _ => TransferError::data(path, Place { row, column: None }, DataProblem::Malformed(message)),
    }
}

fn utf8<'a>(path: &Path, row: usize, column: &str, b: &'a [u8]) -> Result<&'a str, TransferError> {
    std::str::from_utf8(b)
        .map_err(|_| TransferError::data(path, Place::cell(row, column), DataProblem::Malformed("not UTF-8".into())))
}

/// Reads a CSV file with a header row.
pub(super) fn read_csv(path: &Path, name: &str, def: Option<&ComponentDef>) -> Result<ComponentColumns, TransferError> {
    let mut reader = csv_reader(path)?;
    let columns: Vec<String> = reader
        .byte_headers()
        .map_err(|e| csv_error(path, e))?
        .iter()
        .map(|h| String::from_utf8_lossy(h).into_owned())
        .collect();
    let def = match def {
        Some(d) => d.clone(),
        None => {
            let mut guesses = vec![Guess::default(); columns.len()];
            let mut record = csv::ByteRecord::new();
            let mut row = 0;
            while reader.read_byte_record(&mut record).map_err(|e| csv_error(path, e))? {
                row += 1;
                for ((g, cell), col) in guesses.iter_mut().zip(record.iter()).zip(&columns) {
                    g.see(utf8(path, row, col, cell)?);
                }
            }
            reader = csv_reader(path)?;
            reader.byte_headers().map_err(|e| csv_error(path, e))?;
            guessed(name, &columns, &guesses)
        }
    };
    let layout = layout(path, &def, &columns)?;
    let mut entities = Vec::new();
    let mut builders: Vec<Builder> = def.fields.iter().map(|(_, ty)| Builder::new(*ty, 0)).collect();
    let mut record = csv::ByteRecord::new();
    let mut row = 0;
    while reader.read_byte_record(&mut record).map_err(|e| csv_error(path, e))? {
        row += 1;
        for (i, cell) in record.iter().enumerate() {
            let col = &columns[i];
            let text = utf8(path, row, col, cell)?;
            match layout.field_of_column[i] {
                None => entities.push(parse_entity(path, row, text)?),
                Some(f) => {
                    builders[f].push_text(text).map_err(|p| TransferError::data(path, Place::cell(row, col), p))?
                }
            }
        }
    }
    debug_assert!(layout.entity < columns.len());
    Ok(ComponentColumns { def, entities, fields: builders.into_iter().map(Builder::finish).collect() })
}

/// One JSON line: its keys in order, each with its value's raw text.
struct Line<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Line<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Line<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Line(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON value as the text a CSV cell would hold; `None` for null.
fn json_text(raw: &RawValue) -> Result<Option<Cow<'_, str>>, String> {
    let t = raw.get();
    match t.as_bytes().first() {
        Some(b'n') => Ok(None),
        Some(b'"') => serde_json::from_str::<Cow<'_, str>>(t).map(Some).map_err(|e| e.to_string()),
        Some(b'{') => Err("an object is not a field value".to_string()),
        _ => Ok(Some(Cow::Borrowed(t))),
    }
}

/// Reads a JSON-lines file: one object per line, `entity` and one key per field (a missing
/// or null field is zero, empty or the null entity, as in the engine's JSON worlds).
pub(super) fn read_jsonl(
    path: &Path,
    name: &str,
    def: Option<&ComponentDef>,
) -> Result<ComponentColumns, TransferError> {
    let text = fs::read_to_string(path).map_err(|e| TransferError::io(path, e))?;
    let lines = || text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| (i + 1, l));
    fn parse<'t>(path: &Path, row: usize, l: &'t str) -> Result<Line<'t>, TransferError> {
        serde_json::from_str::<Line<'t>>(l)
            .map_err(|e| TransferError::data(path, Place::row(row), DataProblem::Malformed(e.to_string())))
    }
    let bad =
        |row: usize, col: &str, m: String| TransferError::data(path, Place::cell(row, col), DataProblem::Malformed(m));
    let def = match def {
        Some(d) => d.clone(),
        None => {
            let mut columns: Vec<String> = Vec::new();
            let mut guesses: Vec<Guess> = Vec::new();
            for (row, l) in lines() {
                for (k, v) in parse(path, row, l)?.0 {
                    let i = match columns.iter().position(|c| *c == k) {
                        Some(i) => i,
                        None => {
                            columns.push(k.to_string());
                            guesses.push(Guess::default());
                            columns.len() - 1
                        }
                    };
                    if let Some(t) = json_text(v).map_err(|m| bad(row, &k, m))? {
                        guesses[i].see(&t);
                    }
                }
            }
            guessed(name, &columns, &guesses)
        }
    };
    let mut entities = Vec::new();
    let mut builders: Vec<Builder> = def.fields.iter().map(|(_, ty)| Builder::new(*ty, 0)).collect();
    let mut filled = vec![false; def.fields.len()];
    for (row, l) in lines() {
        filled.fill(false);
        let mut entity = None;
        for (k, v) in parse(path, row, l)?.0 {
            if k == "entity" {
                let t = json_text(v).map_err(|m| bad(row, &k, m))?.unwrap_or(Cow::Borrowed("null"));
                entity = Some(parse_entity(path, row, &t)?);
                continue;
            }
            let f = def.fields.iter().position(|(n, _)| *n == k).ok_or_else(|| {
                TransferError::data(path, Place::cell(row, &k), DataProblem::UnknownColumn(def.name.clone()))
            })?;
            if std::mem::replace(&mut filled[f], true) {
                return Err(bad(row, &k, "the key appears twice".into()));
            }
            match json_text(v).map_err(|m| bad(row, &k, m))? {
                None => builders[f].push_zero(),
                Some(t) => {
                    // A JSON string is text even where a number could be read from it, except
                    // for the non-finite floats JSON numbers cannot hold.
                    let quoted = v.get().starts_with('"');
                    let ty = def.fields[f].1;
                    if quoted && !matches!(ty, FieldType::String | FieldType::Entity) && !is_non_finite(&t) {
                        return Err(TransferError::data(
                            path,
                            Place::cell(row, &k),
                            DataProblem::TypeMismatch {
                                expected: ty.name().to_string(),
                                found: format!("string {}", v.get()),
                            },
                        ));
                    }
                    builders[f].push_text(&t).map_err(|p| TransferError::data(path, Place::cell(row, &k), p))?
                }
            }
        }
        for (f, done) in filled.iter().enumerate() {
            if !done {
                builders[f].push_zero();
            }
        }
        let e = entity.ok_or_else(|| {
            TransferError::data(path, Place::cell(row, "entity"), DataProblem::MissingColumn(def.name.clone()))
        })?;
        entities.push(e);
    }
    Ok(ComponentColumns { def, entities, fields: builders.into_iter().map(Builder::finish).collect() })
}

fn is_non_finite(t: &str) -> bool {
    t.parse::<f64>().is_ok_and(|x| !x.is_finite())
}
