//! Parquet files into columns, through Arrow arrays.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType, FixedSizeListArray, GenericStringArray, OffsetSizeTrait};
use arrow_schema::{DataType, Field};
use ecsdb_engine::snapshot::ComponentColumns;
use ecsdb_engine::{ComponentDef, Entity, FieldType, StorageKind};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use rayon::prelude::*;

use super::values::{Builder, plain_size};
use crate::error::{DataProblem, Place, TransferError};

/// Field metadata key naming the ecsdb type of a column (see the export).
const TYPE_KEY: &str = "ecsdb.type";

/// Rows per batch read.
const BATCH: usize = 1 << 16;

/// A primitive array's values as the little-endian bytes a [`Builder`] holds, copied in one
/// go: on little-endian machines Arrow's buffer already is that. `a` must be of type `T`.
fn le_bytes<T: ArrowPrimitiveType>(a: &dyn Array) -> Option<&[u8]> {
    cfg!(target_endian = "little").then(|| a.as_primitive::<T>().values().inner().as_slice())
}

/// The values of an integer column whose Arrow type is the field's own (the usual case: an
/// export writes each integer at its width), as bytes; `None` when a conversion is needed.
fn same_int_bytes(ty: FieldType, a: &dyn Array) -> Option<&[u8]> {
    match (ty, a.data_type()) {
        (FieldType::I8, DataType::Int8) => le_bytes::<Int8Type>(a),
        (FieldType::I16, DataType::Int16) => le_bytes::<Int16Type>(a),
        (FieldType::I32, DataType::Int32) => le_bytes::<Int32Type>(a),
        (FieldType::I64, DataType::Int64) => le_bytes::<Int64Type>(a),
        (FieldType::U8, DataType::UInt8) => le_bytes::<UInt8Type>(a),
        (FieldType::U16, DataType::UInt16) => le_bytes::<UInt16Type>(a),
        (FieldType::U32, DataType::UInt32) => le_bytes::<UInt32Type>(a),
        (FieldType::U64, DataType::UInt64) => le_bytes::<UInt64Type>(a),
        _ => None,
    }
}

/// The field type a column of a file without schema is read as.
fn field_type_of(path: &Path, f: &Field) -> Result<FieldType, TransferError> {
    if let Some(t) = f.metadata().get(TYPE_KEY).and_then(|t| FieldType::from_name(t)) {
        return Ok(t);
    }
    Ok(match f.data_type() {
        DataType::Boolean => FieldType::Bool,
        DataType::Int8 => FieldType::I8,
        DataType::Int16 => FieldType::I16,
        DataType::Int32 => FieldType::I32,
        DataType::Int64 => FieldType::I64,
        DataType::UInt8 => FieldType::U8,
        DataType::UInt16 => FieldType::U16,
        DataType::UInt32 => FieldType::U32,
        DataType::UInt64 => FieldType::U64,
        DataType::Float32 => FieldType::F32,
        DataType::Float64 => FieldType::F64,
        DataType::Utf8 | DataType::LargeUtf8 => FieldType::String,
        DataType::FixedSizeList(_, 2) => FieldType::Vec2,
        DataType::FixedSizeList(_, 3) => FieldType::Vec3,
        other => {
            return Err(TransferError::data(
                path,
                Place::column(f.name()),
                DataProblem::Malformed(format!("no ecsdb field type holds Parquet/Arrow type {other}")),
            ));
        }
    })
}

fn mismatch(path: &Path, row: usize, column: &str, ty: FieldType, found: String) -> TransferError {
    TransferError::data(
        path,
        Place::cell(row, column),
        DataProblem::TypeMismatch { expected: ty.name().to_string(), found },
    )
}

/// The first null of a column, as an error (fields other than entities have no null).
fn no_nulls(path: &Path, first_row: usize, column: &str, ty: FieldType, a: &dyn Array) -> Result<(), TransferError> {
    if a.null_count() == 0 {
        return Ok(());
    }
    let i = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
    Err(mismatch(path, first_row + i, column, ty, "null".to_string()))
}

/// Appends an integer column (any width and sign) to an integer field, checking the range.
fn push_ints(
    path: &Path,
    first_row: usize,
    column: &str,
    ty: FieldType,
    a: &dyn Array,
    out: &mut Vec<u8>,
) -> Result<(), TransferError> {
    if let Some(b) = same_int_bytes(ty, a) {
        out.extend_from_slice(b);
        return Ok(());
    }
    fn values<T: ArrowPrimitiveType>(a: &dyn Array) -> impl Iterator<Item = i128> + '_
    where
        T::Native: Into<i128>,
    {
        a.as_primitive::<T>().values().iter().map(|&v| v.into())
    }
    let it: Box<dyn Iterator<Item = i128>> = match a.data_type() {
        DataType::Int8 => Box::new(values::<Int8Type>(a)),
        DataType::Int16 => Box::new(values::<Int16Type>(a)),
        DataType::Int32 => Box::new(values::<Int32Type>(a)),
        DataType::Int64 => Box::new(values::<Int64Type>(a)),
        DataType::UInt8 => Box::new(values::<UInt8Type>(a)),
        DataType::UInt16 => Box::new(values::<UInt16Type>(a)),
        DataType::UInt32 => Box::new(values::<UInt32Type>(a)),
        DataType::UInt64 => Box::new(values::<UInt64Type>(a)),
        other => return Err(mismatch(path, first_row, column, ty, format!("a column of type {other}"))),
    };
    macro_rules! put {
        ($t:ty) => {
            for (i, v) in it.enumerate() {
                let x = <$t>::try_from(v).map_err(|_| mismatch(path, first_row + i, column, ty, v.to_string()))?;
                out.extend_from_slice(&x.to_le_bytes());
            }
        };
    }
    match ty {
        FieldType::I8 => put!(i8),
        FieldType::I16 => put!(i16),
        FieldType::I32 => put!(i32),
        FieldType::I64 => put!(i64),
        FieldType::U8 => put!(u8),
        FieldType::U16 => put!(u16),
        FieldType::U32 => put!(u32),
        FieldType::U64 => put!(u64),
        _ => unreachable!("called for integer fields"),
    }
    Ok(())
}

/// Float columns (or integer ones) as f64 values.
fn floats<'a>(a: &'a dyn Array) -> Option<Box<dyn Iterator<Item = f64> + 'a>> {
    Some(match a.data_type() {
        DataType::Float32 => Box::new(a.as_primitive::<Float32Type>().values().iter().map(|&v| v as f64)),
        DataType::Float64 => Box::new(a.as_primitive::<Float64Type>().values().iter().copied()),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let c = arrow_cast_i64(a)?;
            Box::new(c.into_iter().map(|v| v as f64))
        }
        _ => return None,
    })
}

fn arrow_cast_i64(a: &dyn Array) -> Option<Vec<i64>> {
    Some(match a.data_type() {
        DataType::Int8 => a.as_primitive::<Int8Type>().values().iter().map(|&v| v as i64).collect(),
        DataType::Int16 => a.as_primitive::<Int16Type>().values().iter().map(|&v| v as i64).collect(),
        DataType::Int32 => a.as_primitive::<Int32Type>().values().iter().map(|&v| v as i64).collect(),
        DataType::Int64 => a.as_primitive::<Int64Type>().values().to_vec(),
        _ => return None,
    })
}

fn push_strings<O: OffsetSizeTrait>(s: &GenericStringArray<O>, lengths: &mut Vec<u32>, text: &mut Vec<u8>) -> bool {
    let offsets = s.value_offsets();
    let (Some(first), Some(last)) = (offsets.first(), offsets.last()) else {
        return true;
    };
    for w in offsets.windows(2) {
        match u32::try_from((w[1] - w[0]).as_usize()) {
            Ok(l) => lengths.push(l),
            Err(_) => return false,
        }
    }
    text.extend_from_slice(&s.value_data()[first.as_usize()..last.as_usize()]);
    true
}

fn push_vectors(
    path: &Path,
    first_row: usize,
    column: &str,
    ty: FieldType,
    l: &FixedSizeListArray,
    out: &mut Vec<u8>,
) -> Result<(), TransferError> {
    let n = if ty == FieldType::Vec2 { 2 } else { 3 };
    if l.value_length() != n {
        return Err(mismatch(path, first_row, column, ty, format!("a list of {} values", l.value_length())));
    }
    let values = l.values();
    let values = values.slice(l.offset() * n as usize, l.len() * n as usize);
    no_nulls(path, first_row, column, ty, values.as_ref())?;
    if let Some(b) =
        values.data_type().eq(&DataType::Float32).then(|| le_bytes::<Float32Type>(values.as_ref())).flatten()
    {
        out.extend_from_slice(b);
        return Ok(());
    }
    let it = floats(values.as_ref())
        .ok_or_else(|| mismatch(path, first_row, column, ty, format!("a list of {}", values.data_type())))?;
    for x in it {
        out.extend_from_slice(&(x as f32).to_le_bytes());
    }
    Ok(())
}

/// Appends a batch's column to a field's builder, converting where no value changes.
fn push_column(
    path: &Path,
    first_row: usize,
    column: &str,
    b: &mut Builder,
    a: &dyn Array,
) -> Result<(), TransferError> {
    match b {
        Builder::Strings { lengths, text } => {
            no_nulls(path, first_row, column, FieldType::String, a)?;
            let ok = match a.data_type() {
                DataType::Utf8 => push_strings(a.as_string::<i32>(), lengths, text),
                DataType::LargeUtf8 => push_strings(a.as_string::<i64>(), lengths, text),
                other => {
                    return Err(mismatch(
                        path,
                        first_row,
                        column,
                        FieldType::String,
                        format!("a column of type {other}"),
                    ));
                }
            };
            if !ok {
                return Err(TransferError::data(
                    path,
                    Place::column(column),
                    DataProblem::Malformed("a string over 4 GiB".into()),
                ));
            }
        }
        Builder::Plain { ty, bytes } => {
            let ty = *ty;
            bytes.reserve(a.len() * plain_size(ty));
            if ty != FieldType::Entity {
                no_nulls(path, first_row, column, ty, a)?;
            }
            let wrong = || mismatch(path, first_row, column, ty, format!("a column of type {}", a.data_type()));
            match ty {
                FieldType::Bool => {
                    let DataType::Boolean = a.data_type() else { return Err(wrong()) };
                    bytes.extend(a.as_boolean().values().iter().map(|v| v as u8));
                }
                t if t.is_integer() => push_ints(path, first_row, column, ty, a, bytes)?,
                FieldType::F32 => {
                    if let Some(b) = (a.data_type() == &DataType::Float32).then(|| le_bytes::<Float32Type>(a)).flatten()
                    {
                        bytes.extend_from_slice(b);
                    } else {
                        for (i, x) in floats(a).ok_or_else(wrong)?.enumerate() {
                            let y = x as f32;
                            if x.is_finite() && y.is_infinite() {
                                return Err(mismatch(path, first_row + i, column, ty, x.to_string()));
                            }
                            bytes.extend_from_slice(&y.to_le_bytes());
                        }
                    }
                }
                FieldType::F64 => {
                    if let Some(b) = (a.data_type() == &DataType::Float64).then(|| le_bytes::<Float64Type>(a)).flatten()
                    {
                        bytes.extend_from_slice(b);
                        return Ok(());
                    }
                    for x in floats(a).ok_or_else(wrong)? {
                        bytes.extend_from_slice(&x.to_le_bytes());
                    }
                }
                FieldType::Entity => {
                    let mut cell = Builder::Plain { ty, bytes: std::mem::take(bytes) };
                    let result = match a.data_type() {
                        DataType::Utf8 => push_entities(path, first_row, column, a.as_string::<i32>(), &mut cell),
                        DataType::LargeUtf8 => push_entities(path, first_row, column, a.as_string::<i64>(), &mut cell),
                        _ => Err(wrong()),
                    };
                    if let Builder::Plain { bytes: back, .. } = cell {
                        *bytes = back;
                    }
                    result?;
                }
                FieldType::Vec2 | FieldType::Vec3 => {
                    let DataType::FixedSizeList(..) = a.data_type() else { return Err(wrong()) };
                    push_vectors(path, first_row, column, ty, a.as_fixed_size_list(), bytes)?;
                }
                _ => unreachable!("strings have their own builder"),
            }
        }
    }
    Ok(())
}

fn push_entities<O: OffsetSizeTrait>(
    path: &Path,
    first_row: usize,
    column: &str,
    s: &GenericStringArray<O>,
    b: &mut Builder,
) -> Result<(), TransferError> {
    for (i, v) in s.iter().enumerate() {
        match v {
            None => b.push_zero(),
            Some(t) => b.push_text(t).map_err(|p| TransferError::data(path, Place::cell(first_row + i, column), p))?,
        }
    }
    Ok(())
}

fn push_ids<O: OffsetSizeTrait>(
    path: &Path,
    first_row: usize,
    s: &GenericStringArray<O>,
    out: &mut Vec<Entity>,
) -> Result<(), TransferError> {
    let bad = |i: usize, t: &str| {
        TransferError::data(path, Place::cell(first_row + i, "entity"), DataProblem::BadEntity(t.to_string()))
    };
    if s.null_count() > 0 {
        let i = (0..s.len()).find(|&i| s.is_null(i)).unwrap_or(0);
        return Err(bad(i, "null"));
    }
    // Straight from the offsets and the text: no per-value `Option<&str>`.
    let (offsets, text) = (s.value_offsets(), s.value_data());
    out.reserve(s.len());
    for (i, w) in offsets.windows(2).enumerate() {
        let t = &text[w[0].as_usize()..w[1].as_usize()];
        out.push(Entity::parse_ascii(t).ok_or_else(|| bad(i, &String::from_utf8_lossy(t)))?);
    }
    Ok(())
}

/// What one column of a file gave.
enum Part {
    Entities(Vec<Entity>),
    Field(Builder),
}

/// Reads column `i` of a file whose metadata is `meta`, on its own (its own file handle:
/// clones of one would share the read position).
fn read_column(
    path: &Path,
    meta: &ArrowReaderMetadata,
    i: usize,
    column: &str,
    field: Option<FieldType>,
    rows: usize,
) -> Result<Part, TransferError> {
    let malformed = |e: &dyn std::fmt::Display| {
        TransferError::data(path, Place::default(), DataProblem::Malformed(format!("reading Parquet: {e}")))
    };
    let file = File::open(path).map_err(|e| TransferError::io(path, e))?;
    let mask = ProjectionMask::roots(meta.parquet_schema(), [i]);
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
        .with_projection(mask)
        .with_batch_size(BATCH)
        .build()
        .map_err(|e| malformed(&e))?;
    let mut part = match field {
        None => Part::Entities(Vec::with_capacity(rows)),
        Some(ty) => Part::Field(Builder::new(ty, rows)),
    };
    let mut first_row = 1;
    for batch in reader {
        let batch = batch.map_err(|e| malformed(&e))?;
        let a = batch.column(0);
        match &mut part {
            Part::Entities(entities) => match a.data_type() {
                DataType::Utf8 => push_ids(path, first_row, a.as_string::<i32>(), entities)?,
                DataType::LargeUtf8 => push_ids(path, first_row, a.as_string::<i64>(), entities)?,
                other => {
                    return Err(TransferError::data(
                        path,
                        Place::column("entity"),
                        DataProblem::BadEntity(format!("a column of type {other}")),
                    ));
                }
            },
            Part::Field(b) => push_column(path, first_row, column, b, a.as_ref())?,
        }
        first_row += batch.num_rows();
    }
    Ok(part)
}

/// Reads a Parquet file, its columns in parallel (a file's entity column alone costs about as
/// much as its values, and one large file would otherwise keep one thread busy while the
/// others idle).
pub(super) fn read(path: &Path, name: &str, def: Option<&ComponentDef>) -> Result<ComponentColumns, TransferError> {
    let file = File::open(path).map_err(|e| TransferError::io(path, e))?;
    let malformed = |e: &dyn std::fmt::Display| {
        TransferError::data(path, Place::default(), DataProblem::Malformed(format!("reading Parquet: {e}")))
    };
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| malformed(&e))?;
    let rows = meta.metadata().file_metadata().num_rows().max(0) as usize;
    let schema = meta.schema().clone();
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let def = match def {
        Some(d) => d.clone(),
        None => {
            let mut fields = Vec::new();
            for f in schema.fields().iter().filter(|f| f.name() != "entity") {
                fields.push((f.name().clone(), field_type_of(path, f)?));
            }
            ComponentDef { name: name.to_string(), fields, storage: StorageKind::Table }
        }
    };
    let layout = super::text::layout(path, &def, &columns)?;
    let parts: Vec<Result<Part, TransferError>> = (0..columns.len())
        .into_par_iter()
        .map(|i| {
            let field = layout.field_of_column[i].map(|f| def.fields[f].1);
            read_column(path, &meta, i, &columns[i], field, rows)
        })
        .collect();
    let mut entities = Vec::new();
    let mut builders: Vec<Option<Builder>> = def.fields.iter().map(|_| None).collect();
    // The first error in column order, whatever thread met it first.
    for (i, part) in parts.into_iter().enumerate() {
        match (part?, layout.field_of_column[i]) {
            (Part::Entities(e), _) => entities = e,
            (Part::Field(b), Some(f)) => builders[f] = Some(b),
            (Part::Field(_), None) => unreachable!("the entity column reads as entities"),
        }
    }
    let fields = def
        .fields
        .iter()
        .zip(builders)
        .map(|((_, ty), b)| b.unwrap_or_else(|| Builder::new(*ty, 0)).finish())
        .collect();
    Ok(ComponentColumns { def, entities, fields })
}
