//! One field of a component, read row by row in its type: the query engine's reader over the
//! engine's typed strided views ([`FieldColumn`]), chosen once per table from the schema.

use ecsdb_engine::storage::{FieldColumn, FieldScalar};
use ecsdb_engine::{Entity, FieldType, Value, World};

use crate::execute::scan::Place;
use crate::plan::physical::PhysicalSlot;

/// One field of a component, readable row by row, typed.
#[derive(Clone, Copy)]
pub enum FieldReader<'w> {
    /// `bool`
    Bool(FieldColumn<'w, bool>),
    /// `i8`
    I8(FieldColumn<'w, i8>),
    /// `i16`
    I16(FieldColumn<'w, i16>),
    /// `i32`
    I32(FieldColumn<'w, i32>),
    /// `i64`
    I64(FieldColumn<'w, i64>),
    /// `u8`
    U8(FieldColumn<'w, u8>),
    /// `u16`
    U16(FieldColumn<'w, u16>),
    /// `u32`
    U32(FieldColumn<'w, u32>),
    /// `u64`
    U64(FieldColumn<'w, u64>),
    /// `f32`
    F32(FieldColumn<'w, f32>),
    /// `f64`
    F64(FieldColumn<'w, f64>),
    /// `string`
    Str(FieldColumn<'w, String>),
    /// `entity`
    Entity(FieldColumn<'w, Entity>),
    /// `vec2`
    Vec2(FieldColumn<'w, [f32; 2]>),
    /// `vec3`
    Vec3(FieldColumn<'w, [f32; 3]>),
    /// Not readable (never happens for a checked schema; reads as null).
    Missing,
}

impl<'w> FieldReader<'w> {
    /// The reader of a field of a table column or a sparse set.
    pub fn new(world: &'w World, place: Place, slot: &PhysicalSlot, field: usize) -> FieldReader<'w> {
        fn col<'w, T: FieldScalar>(
            world: &'w World,
            place: Place,
            slot: &PhysicalSlot,
            field: usize,
        ) -> Option<FieldColumn<'w, T>> {
            match place {
                Place::Table(t) => world.table_field::<T>(t, slot.id, field),
                Place::Sparse => world.sparse_field::<T>(slot.id, field),
            }
        }
        let Some(info) = slot.fields.get(field) else { return FieldReader::Missing };
        let (w, p, s, f) = (world, place, slot, field);
        let reader = match info.ty {
            FieldType::Bool => col(w, p, s, f).map(FieldReader::Bool),
            FieldType::I8 => col(w, p, s, f).map(FieldReader::I8),
            FieldType::I16 => col(w, p, s, f).map(FieldReader::I16),
            FieldType::I32 => col(w, p, s, f).map(FieldReader::I32),
            FieldType::I64 => col(w, p, s, f).map(FieldReader::I64),
            FieldType::U8 => col(w, p, s, f).map(FieldReader::U8),
            FieldType::U16 => col(w, p, s, f).map(FieldReader::U16),
            FieldType::U32 => col(w, p, s, f).map(FieldReader::U32),
            FieldType::U64 => col(w, p, s, f).map(FieldReader::U64),
            FieldType::F32 => col(w, p, s, f).map(FieldReader::F32),
            FieldType::F64 => col(w, p, s, f).map(FieldReader::F64),
            FieldType::String => col(w, p, s, f).map(FieldReader::Str),
            FieldType::Entity => col(w, p, s, f).map(FieldReader::Entity),
            FieldType::Vec2 => col(w, p, s, f).map(FieldReader::Vec2),
            FieldType::Vec3 => col(w, p, s, f).map(FieldReader::Vec3),
        };
        reader.unwrap_or(FieldReader::Missing)
    }

    /// Row `row`'s value. A u64 above i64::MAX is an error; a null entity reads as null.
    #[inline]
    pub fn value(&self, row: usize) -> Result<Value, u64> {
        let missing = Value::Null;
        Ok(match self {
            FieldReader::Bool(c) => c.get(row).map_or(missing, |v| Value::Bool(*v)),
            FieldReader::I8(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::I16(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::I32(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::I64(c) => c.get(row).map_or(missing, |v| Value::Int(*v)),
            FieldReader::U8(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::U16(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::U32(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldReader::U64(c) => match c.get(row) {
                Some(&v) => Value::Int(i64::try_from(v).map_err(|_| v)?),
                None => missing,
            },
            FieldReader::F32(c) => c.get(row).map_or(missing, |v| Value::Float(*v as f64)),
            FieldReader::F64(c) => c.get(row).map_or(missing, |v| Value::Float(*v)),
            FieldReader::Str(c) => c.get(row).map_or(missing, |v| Value::Str(v.clone())),
            FieldReader::Entity(c) => {
                c.get(row).map_or(missing, |v| if v.is_null() { Value::Null } else { Value::Entity(*v) })
            }
            FieldReader::Vec2(c) => c.get(row).map_or(missing, |v| Value::Vec2([v[0] as f64, v[1] as f64])),
            FieldReader::Vec3(c) => {
                c.get(row).map_or(missing, |v| Value::Vec3([v[0] as f64, v[1] as f64, v[2] as f64]))
            }
            FieldReader::Missing => missing,
        })
    }

    /// Calls `f(i, value)` for each `rows[i]`, dispatching on the field type once. Stops at
    /// a u64 above i64::MAX (returned as the error).
    #[inline]
    pub fn for_each_value(&self, rows: &[u32], mut f: impl FnMut(usize, Value)) -> Result<(), u64> {
        fn go<T: FieldScalar>(
            c: &FieldColumn<'_, T>,
            rows: &[u32],
            f: &mut impl FnMut(usize, Value),
            conv: impl Fn(&T) -> Value,
        ) {
            for (i, &r) in rows.iter().enumerate() {
                f(i, c.get(r as usize).map_or(Value::Null, &conv));
            }
        }
        /// For plain values: a batch of rows is loaded first, in a loop that does nothing
        /// else, then converted. Selected rows are scattered, so their loads mostly miss the
        /// cache; issued back to back they overlap, where interleaved with building and
        /// storing `Value`s they would wait one after another (a 1%-selective projection of
        /// 1M rows spent most of its time here).
        fn go_plain<T: FieldScalar + Copy + Default>(
            c: &FieldColumn<'_, T>,
            rows: &[u32],
            f: &mut impl FnMut(usize, Value),
            conv: impl Fn(T) -> Value,
        ) {
            const LOADS: usize = 64;
            let mut vals = [T::default(); LOADS];
            let mut present = [false; LOADS];
            for (k, batch) in rows.chunks(LOADS).enumerate() {
                for (j, &r) in batch.iter().enumerate() {
                    let v = c.get(r as usize);
                    present[j] = v.is_some();
                    vals[j] = v.copied().unwrap_or_default();
                }
                for j in 0..batch.len() {
                    f(k * LOADS + j, if present[j] { conv(vals[j]) } else { Value::Null });
                }
            }
        }
        match self {
            FieldReader::Bool(c) => go_plain(c, rows, &mut f, Value::Bool),
            FieldReader::I8(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::I16(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::I32(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::I64(c) => go_plain(c, rows, &mut f, Value::Int),
            FieldReader::U8(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::U16(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::U32(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldReader::F32(c) => go_plain(c, rows, &mut f, |v| Value::Float(v as f64)),
            FieldReader::F64(c) => go_plain(c, rows, &mut f, Value::Float),
            FieldReader::Str(c) => go(c, rows, &mut f, |v| Value::Str(v.clone())),
            FieldReader::Entity(c) => {
                go(c, rows, &mut f, |v| if v.is_null() { Value::Null } else { Value::Entity(*v) })
            }
            FieldReader::Vec2(c) => go_plain(c, rows, &mut f, |v| Value::Vec2([v[0] as f64, v[1] as f64])),
            FieldReader::Vec3(c) => go_plain(c, rows, &mut f, |v| Value::Vec3([v[0] as f64, v[1] as f64, v[2] as f64])),
            FieldReader::U64(_) | FieldReader::Missing => {
                for (i, &r) in rows.iter().enumerate() {
                    f(i, self.value(r as usize)?);
                }
            }
        }
        Ok(())
    }

    /// Row `row` as an f64, for numeric fields other than u64/i64 (exact in f64).
    #[inline]
    pub fn f64_at(&self, row: usize) -> Option<f64> {
        match self {
            FieldReader::I8(c) => c.get(row).map(|v| *v as f64),
            FieldReader::I16(c) => c.get(row).map(|v| *v as f64),
            FieldReader::I32(c) => c.get(row).map(|v| *v as f64),
            FieldReader::U8(c) => c.get(row).map(|v| *v as f64),
            FieldReader::U16(c) => c.get(row).map(|v| *v as f64),
            FieldReader::U32(c) => c.get(row).map(|v| *v as f64),
            FieldReader::F32(c) => c.get(row).map(|v| *v as f64),
            FieldReader::F64(c) => c.get(row).copied(),
            _ => None,
        }
    }

    /// Appends the values of `rows` as f64 (exact numeric fields only; `false` otherwise).
    /// One dispatch per call, then a tight loop over the column.
    pub fn read_f64_rows(&self, rows: &[u32], out: &mut Vec<f64>) -> bool {
        fn go<T: Num>(c: &FieldColumn<'_, T>, rows: &[u32], out: &mut Vec<f64>) {
            out.extend(rows.iter().map(|&r| c.get(r as usize).map_or(f64::NAN, |v| v.to_f64())));
        }
        match self {
            FieldReader::I8(c) => go(c, rows, out),
            FieldReader::I16(c) => go(c, rows, out),
            FieldReader::I32(c) => go(c, rows, out),
            FieldReader::U8(c) => go(c, rows, out),
            FieldReader::U16(c) => go(c, rows, out),
            FieldReader::U32(c) => go(c, rows, out),
            FieldReader::F32(c) => go(c, rows, out),
            FieldReader::F64(c) => go(c, rows, out),
            _ => return false,
        }
        true
    }

    /// Appends the values of `rows` as i64 (integer fields other than u64; `false` otherwise).
    pub fn read_i64_rows(&self, rows: &[u32], out: &mut Vec<i64>) -> bool {
        fn go<T: Num>(c: &FieldColumn<'_, T>, rows: &[u32], out: &mut Vec<i64>) {
            out.extend(rows.iter().map(|&r| c.get(r as usize).map_or(0, |v| v.to_i64())));
        }
        match self {
            FieldReader::I8(c) => go(c, rows, out),
            FieldReader::I16(c) => go(c, rows, out),
            FieldReader::I32(c) => go(c, rows, out),
            FieldReader::I64(c) => go(c, rows, out),
            FieldReader::U8(c) => go(c, rows, out),
            FieldReader::U16(c) => go(c, rows, out),
            FieldReader::U32(c) => go(c, rows, out),
            _ => return false,
        }
        true
    }

    /// Whether [`FieldReader::f64_at`] reads this field exactly.
    pub fn is_exact_f64(&self) -> bool {
        matches!(
            self,
            FieldReader::I8(_)
                | FieldReader::I16(_)
                | FieldReader::I32(_)
                | FieldReader::U8(_)
                | FieldReader::U16(_)
                | FieldReader::U32(_)
                | FieldReader::F32(_)
                | FieldReader::F64(_)
        )
    }

    /// Whether the field is an integer type read exactly as i64 (not u64).
    pub fn is_int(&self) -> bool {
        matches!(
            self,
            FieldReader::I8(_)
                | FieldReader::I16(_)
                | FieldReader::I32(_)
                | FieldReader::I64(_)
                | FieldReader::U8(_)
                | FieldReader::U16(_)
                | FieldReader::U32(_)
        )
    }

    /// Row `row` as an i64 for integer fields other than u64.
    #[inline]
    pub fn i64_at(&self, row: usize) -> Option<i64> {
        match self {
            FieldReader::I8(c) => c.get(row).map(|v| *v as i64),
            FieldReader::I16(c) => c.get(row).map(|v| *v as i64),
            FieldReader::I32(c) => c.get(row).map(|v| *v as i64),
            FieldReader::I64(c) => c.get(row).copied(),
            FieldReader::U8(c) => c.get(row).map(|v| *v as i64),
            FieldReader::U16(c) => c.get(row).map(|v| *v as i64),
            FieldReader::U32(c) => c.get(row).map(|v| *v as i64),
            _ => None,
        }
    }
}

/// Numeric field types a kernel reads.
pub trait Num: FieldScalar + Copy {
    /// Whether the type is an integer.
    const INT: bool;
    /// The value as i64 (integers only; floats truncate).
    fn to_i64(self) -> i64;
    /// The value as f64.
    fn to_f64(self) -> f64;
}
macro_rules! num {
    ($($t:ty => $int:expr),*) => {$(
        impl Num for $t {
            const INT: bool = $int;
            #[inline(always)]
            fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
num!(i8 => true, i16 => true, i32 => true, i64 => true, u8 => true, u16 => true, u32 => true, f32 => false, f64 => false);
