//! Parquet files: Arrow arrays per field, written by the official `parquet` crate.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ecsdb_engine::storage::FieldColumn;
use ecsdb_engine::{FieldType, World};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use ecsdb_engine::storage::FieldView;

use super::{entity_text, ComponentPlan};
use crate::error::{DataProblem, Place, TransferError};

/// Field metadata key naming the ecsdb type of a column (so `entity` and `string` columns,
/// both UTF-8, read back as what they were).
pub(crate) const TYPE_KEY: &str = "ecsdb.type";

/// Rows per record batch.
const BATCH: usize = 1 << 17;

/// The Arrow type a field type is written as.
pub(crate) fn arrow_type(ty: FieldType) -> DataType {
    match ty {
        FieldType::Bool => DataType::Boolean,
        FieldType::I8 => DataType::Int8,
        FieldType::I16 => DataType::Int16,
        FieldType::I32 => DataType::Int32,
        FieldType::I64 => DataType::Int64,
        FieldType::U8 => DataType::UInt8,
        FieldType::U16 => DataType::UInt16,
        FieldType::U32 => DataType::UInt32,
        FieldType::U64 => DataType::UInt64,
        FieldType::F32 => DataType::Float32,
        FieldType::F64 => DataType::Float64,
        FieldType::String | FieldType::Entity => DataType::Utf8,
        FieldType::Vec2 => DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, false)), 2),
        FieldType::Vec3 => DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, false)), 3),
    }
}

fn arrow_schema(plan: &ComponentPlan<'_>) -> SchemaRef {
    let mut fields = vec![Field::new("entity", DataType::Utf8, false)
        .with_metadata(HashMap::from([(TYPE_KEY.to_string(), "entity".to_string())]))];
    for f in plan.info.fields() {
        fields.push(
            Field::new(&f.name, arrow_type(f.ty), f.ty == FieldType::Entity)
                .with_metadata(HashMap::from([(TYPE_KEY.to_string(), f.ty.name().to_string())])),
        );
    }
    let meta = HashMap::from([
        ("ecsdb.component".to_string(), plan.info.name().to_string()),
        ("ecsdb.storage".to_string(), plan.info.storage().to_string()),
    ]);
    Arc::new(Schema::new_with_metadata(fields, meta))
}

fn prim<T: arrow_array::ArrowPrimitiveType>(c: &FieldColumn<'_, T::Native>, start: usize, end: usize) -> ArrayRef
where
    T::Native: ecsdb_engine::storage::FieldScalar,
{
    Arc::new(PrimitiveArray::<T>::from_iter_values(c.range(start, end).copied()))
}

fn vectors<const N: usize>(c: &FieldColumn<'_, [f32; N]>, start: usize, end: usize) -> ArrayRef
where
    [f32; N]: ecsdb_engine::storage::FieldScalar,
{
    let flat = Float32Array::from_iter_values(c.range(start, end).flat_map(|v| v.iter().copied()));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(FixedSizeListArray::new(item, N as i32, Arc::new(flat), None))
}

/// Rows `start..end` of one field as an Arrow array.
fn array(col: FieldView<'_>, start: usize, end: usize) -> ArrayRef {
    match col {
        FieldView::Bool(c) => Arc::new(BooleanArray::from_iter(c.range(start, end).map(|b| Some(*b)))),
        FieldView::I8(c) => prim::<Int8Type>(&c, start, end),
        FieldView::I16(c) => prim::<Int16Type>(&c, start, end),
        FieldView::I32(c) => prim::<Int32Type>(&c, start, end),
        FieldView::I64(c) => prim::<Int64Type>(&c, start, end),
        FieldView::U8(c) => prim::<UInt8Type>(&c, start, end),
        FieldView::U16(c) => prim::<UInt16Type>(&c, start, end),
        FieldView::U32(c) => prim::<UInt32Type>(&c, start, end),
        FieldView::U64(c) => prim::<UInt64Type>(&c, start, end),
        FieldView::F32(c) => prim::<Float32Type>(&c, start, end),
        FieldView::F64(c) => prim::<Float64Type>(&c, start, end),
        FieldView::Str(c) => {
            let bytes = c.range(start, end).map(|s| s.len()).sum();
            let mut b = StringBuilder::with_capacity(end - start, bytes);
            for s in c.range(start, end) {
                b.append_value(s);
            }
            Arc::new(b.finish())
        }
        FieldView::Entity(c) => {
            let mut b = StringBuilder::with_capacity(end - start, (end - start) * 10);
            let mut buf = [0u8; 24];
            for e in c.range(start, end) {
                if e.is_null() {
                    b.append_null();
                } else {
                    b.append_value(entity_text(*e, &mut buf));
                }
            }
            Arc::new(b.finish())
        }
        FieldView::Vec2(c) => vectors(&c, start, end),
        FieldView::Vec3(c) => vectors(&c, start, end),
        // A plan's segments store their component and the schema gives every field a type.
        FieldView::Missing => unreachable!("an export plan's columns are always readable"),
    }
}

fn entity_array(entities: &[ecsdb_engine::Entity]) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(entities.len(), entities.len() * 10);
    let mut buf = [0u8; 24];
    for &e in entities {
        b.append_value(entity_text(e, &mut buf));
    }
    Arc::new(b.finish())
}

/// Writes one component's Parquet file; returns its size in bytes.
pub(super) fn write(
    world: &World,
    plan: &ComponentPlan<'_>,
    path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, TransferError> {
    let schema = arrow_schema(plan);
    // Dictionaries pay off for repeated text (team names), not for measurements: floats and
    // ids are written plain.
    let mut props = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false);
    for f in plan.info.fields() {
        if f.ty == FieldType::String {
            props = props.set_column_dictionary_enabled(ColumnPath::from(f.name.as_str()), true);
        }
    }
    let fail = |e: parquet::errors::ParquetError| {
        TransferError::data(path, Place::default(), DataProblem::Malformed(format!("writing Parquet: {e}")))
    };
    let file = File::create(path).map_err(|e| TransferError::io(path, e))?;
    let mut writer = ArrowWriter::try_new(BufWriter::with_capacity(1 << 20, file), schema.clone(), Some(props.build()))
        .map_err(fail)?;
    for seg in &plan.segments {
        let columns: Vec<FieldView<'_>> = (0..plan.info.fields().len()).map(|i| plan.column(world, seg, i)).collect();
        let mut start = 0;
        while start < seg.entities.len() {
            let end = (start + BATCH).min(seg.entities.len());
            let mut arrays = Vec::with_capacity(columns.len() + 1);
            arrays.push(entity_array(&seg.entities[start..end]));
            arrays.extend(columns.iter().map(|c| array(*c, start, end)));
            let batch = RecordBatch::try_new(schema.clone(), arrays)
                .map_err(|e| fail(parquet::errors::ParquetError::General(e.to_string())))?;
            writer.write(&batch).map_err(fail)?;
            progress((end - start) as u64);
            start = end;
        }
    }
    let inner = writer.into_inner().map_err(fail)?;
    let file = inner.into_inner().map_err(|e| TransferError::io(path, e.into_error()))?;
    let len = file.metadata().map_err(|e| TransferError::io(path, e))?.len();
    Ok(len)
}
