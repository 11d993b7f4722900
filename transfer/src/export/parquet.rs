//! Parquet files: Arrow arrays per field, written by the official `parquet` crate.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ecsdb_engine::storage::FieldColumn;
use ecsdb_engine::{Entity, FieldType, World};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use ecsdb_engine::storage::FieldView;

use super::ComponentPlan;
use crate::entity_text::push_entity_text;
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
    let mut fields = vec![
        Field::new("entity", DataType::Utf8, false)
            .with_metadata(HashMap::from([(TYPE_KEY.to_string(), "entity".to_string())])),
    ];
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

/// Rows `start..end` of one field as an Arrow array; `entity` maps a stored handle to the
/// one written (see [`ComponentPlan::entity_out`]).
fn array(col: FieldView<'_>, start: usize, end: usize, entity: &dyn Fn(Entity) -> Entity) -> ArrayRef {
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
        FieldView::Entity(c) => entity_strings(c.range(start, end).map(|e| entity(*e))),
        FieldView::Vec2(c) => vectors(&c, start, end),
        FieldView::Vec3(c) => vectors(&c, start, end),
        // A plan's segments store their component and the schema gives every field a type.
        FieldView::Missing => unreachable!("an export plan's columns are always readable"),
    }
}

/// Entities as a UTF-8 array of `12v0` texts, the null entity as null. Built in one buffer
/// and checked as UTF-8 once, not per value.
fn entity_strings(entities: impl ExactSizeIterator<Item = Entity>) -> ArrayRef {
    let mut offsets: Vec<i32> = Vec::with_capacity(entities.len() + 1);
    let mut text: Vec<u8> = Vec::with_capacity(entities.len() * 10);
    let mut nulls: Option<Vec<bool>> = None;
    offsets.push(0);
    for (i, e) in entities.enumerate() {
        if e.is_null() {
            nulls.get_or_insert_with(|| vec![true; i]).push(false);
        } else {
            push_entity_text(e, &mut text);
            if let Some(n) = nulls.as_mut() {
                n.push(true);
            }
        }
        offsets.push(i32::try_from(text.len()).expect("a batch of entity texts under 2 GiB"));
    }
    let array = StringArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(text),
        nulls.map(NullBuffer::from),
    )
    .expect("entity texts are ASCII with increasing offsets");
    Arc::new(array)
}

/// Rows sampled from the start of a component to choose each column's encoding.
const SAMPLE_ROWS: usize = 4096;

/// Compression that keeps more than this share of a sample's bytes is not worth its time:
/// the column is written uncompressed (random measurements, mostly).
const WORTH_COMPRESSING: f64 = 0.9;

/// The bytes a column's values take in Arrow memory (what Parquet's plain encoding writes).
fn array_bytes(data: &arrow_data::ArrayData, out: &mut Vec<u8>) {
    for b in data.buffers() {
        out.extend_from_slice(b.as_slice());
    }
    for child in data.child_data() {
        array_bytes(child, out);
    }
}

/// Whether Snappy shrinks `array` enough to pay for compressing it.
fn compresses(array: &ArrayRef) -> bool {
    let mut raw = Vec::new();
    array_bytes(&array.to_data(), &mut raw);
    if raw.is_empty() {
        return true;
    }
    let packed = snap::raw::Encoder::new().compress_vec(&raw).map_or(raw.len(), |c| c.len());
    (packed as f64) < raw.len() as f64 * WORTH_COMPRESSING
}

/// Whether a string column repeats its values enough for a dictionary (team names), judged
/// on a sample: unique names would only pay for interning.
fn repeats(array: &ArrayRef) -> bool {
    let strings = array.as_any().downcast_ref::<StringArray>().expect("a string field's array");
    let distinct: std::collections::HashSet<&str> = strings.iter().flatten().collect();
    distinct.len() * 2 <= Array::len(strings)
}

/// The writer's settings for one component, chosen per column from a sample of its first
/// rows: Snappy where it shrinks the data, a dictionary where strings repeat.
///
/// The entity column is delta-encoded (`DELTA_BYTE_ARRAY`: neighbouring ids share their
/// leading digits), which makes it as small as Snappy did on plain text at a fraction of the
/// time, and is left uncompressed. It has no statistics: ids sort as text (`10v0` < `9v0`),
/// so a row group's min and max span nearly every id and would never let a reader skip it,
/// while computing them costs a comparison per row. DuckDB, DataFusion and Spark (3.3 and
/// later) read the encoding.
fn writer_properties(world: &World, plan: &ComponentPlan<'_>) -> WriterProperties {
    let entity = ColumnPath::from("entity");
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .set_column_encoding(entity.clone(), Encoding::DELTA_BYTE_ARRAY)
        .set_column_compression(entity.clone(), Compression::UNCOMPRESSED)
        .set_column_statistics_enabled(entity, EnabledStatistics::None);
    let Some(seg) = plan.segments.first() else {
        return props.build();
    };
    let n = seg.entities.len().min(SAMPLE_ROWS);
    let samples = plan
        .info
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (&f.name, f.ty, array(plan.column(world, seg, i), 0, n, &|e| plan.entity_out(world, i, e))));
    for (name, ty, sample) in samples {
        let column = ColumnPath::from(name.as_str());
        if !compresses(&sample) {
            props = props.set_column_compression(column.clone(), Compression::UNCOMPRESSED);
        }
        if ty == FieldType::String && repeats(&sample) {
            props = props.set_column_dictionary_enabled(column, true);
        }
    }
    props.build()
}

/// Writes one component's Parquet file; returns its size in bytes.
pub(super) fn write(
    world: &World,
    plan: &ComponentPlan<'_>,
    path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, TransferError> {
    let schema = arrow_schema(plan);
    let props = writer_properties(world, plan);
    let fail = |e: parquet::errors::ParquetError| {
        TransferError::data(path, Place::default(), DataProblem::Malformed(format!("writing Parquet: {e}")))
    };
    let file = File::create(path).map_err(|e| TransferError::io(path, e))?;
    let mut writer =
        ArrowWriter::try_new(BufWriter::with_capacity(1 << 20, file), schema.clone(), Some(props)).map_err(fail)?;
    for seg in &plan.segments {
        let columns: Vec<FieldView<'_>> = (0..plan.info.fields().len()).map(|i| plan.column(world, seg, i)).collect();
        let mut start = 0;
        while start < seg.entities.len() {
            let end = (start + BATCH).min(seg.entities.len());
            let mut arrays = Vec::with_capacity(columns.len() + 1);
            arrays.push(entity_strings(seg.entities[start..end].iter().copied()));
            arrays.extend(
                columns.iter().enumerate().map(|(i, c)| array(*c, start, end, &|e| plan.entity_out(world, i, e))),
            );
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
