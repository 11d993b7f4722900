//! [`FieldView`]: one field of a component over the rows of a table's column or a sparse
//! set, read in its type. The engine's one typed accessor of field columns: the text query
//! engine reads fields through it, and so do secondary indexes and `World::get_field`.

use crate::entity::Entity;
use crate::storage::TableId;
use crate::storage::TypedFieldValues;
use crate::storage::field::{FieldColumn, FieldScalar};
use crate::value::Value;

/// Where a component's values are: a table's column, or the component's sparse set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldPlace {
    /// The column of this table.
    Table(TableId),
    /// The component's sparse set (rows are its dense rows).
    Sparse,
}

/// One field of a component over the rows of a table's column or a sparse set, in its type:
/// the engine's one typed view of a field column, chosen once from the schema.
#[derive(Clone, Copy)]
pub enum FieldView<'w> {
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

impl<'w> FieldView<'w> {
    /// Row `row`'s value. A u64 above i64::MAX is an error; a null entity reads as null.
    #[inline]
    pub fn value(&self, row: usize) -> Result<Value, u64> {
        let missing = Value::Null;
        Ok(match self {
            FieldView::Bool(c) => c.get(row).map_or(missing, |v| Value::Bool(*v)),
            FieldView::I8(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::I16(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::I32(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::I64(c) => c.get(row).map_or(missing, |v| Value::Int(*v)),
            FieldView::U8(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::U16(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::U32(c) => c.get(row).map_or(missing, |v| Value::Int(*v as i64)),
            FieldView::U64(c) => match c.get(row) {
                Some(&v) => Value::Int(i64::try_from(v).map_err(|_| v)?),
                None => missing,
            },
            FieldView::F32(c) => c.get(row).map_or(missing, |v| Value::Float(*v as f64)),
            FieldView::F64(c) => c.get(row).map_or(missing, |v| Value::Float(*v)),
            FieldView::Str(c) => c.get(row).map_or(missing, |v| Value::Str(v.clone())),
            FieldView::Entity(c) => {
                c.get(row).map_or(missing, |v| if v.is_null() { Value::Null } else { Value::Entity(*v) })
            }
            FieldView::Vec2(c) => c.get(row).map_or(missing, |v| Value::Vec2([v[0] as f64, v[1] as f64])),
            FieldView::Vec3(c) => c.get(row).map_or(missing, |v| Value::Vec3([v[0] as f64, v[1] as f64, v[2] as f64])),
            FieldView::Missing => missing,
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
            FieldView::Bool(c) => go_plain(c, rows, &mut f, Value::Bool),
            FieldView::I8(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::I16(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::I32(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::I64(c) => go_plain(c, rows, &mut f, Value::Int),
            FieldView::U8(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::U16(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::U32(c) => go_plain(c, rows, &mut f, |v| Value::Int(v as i64)),
            FieldView::F32(c) => go_plain(c, rows, &mut f, |v| Value::Float(v as f64)),
            FieldView::F64(c) => go_plain(c, rows, &mut f, Value::Float),
            FieldView::Str(c) => go(c, rows, &mut f, |v| Value::Str(v.clone())),
            FieldView::Entity(c) => go(c, rows, &mut f, |v| if v.is_null() { Value::Null } else { Value::Entity(*v) }),
            FieldView::Vec2(c) => go_plain(c, rows, &mut f, |v| Value::Vec2([v[0] as f64, v[1] as f64])),
            FieldView::Vec3(c) => go_plain(c, rows, &mut f, |v| Value::Vec3([v[0] as f64, v[1] as f64, v[2] as f64])),
            FieldView::U64(_) | FieldView::Missing => {
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
            FieldView::I8(c) => c.get(row).map(|v| *v as f64),
            FieldView::I16(c) => c.get(row).map(|v| *v as f64),
            FieldView::I32(c) => c.get(row).map(|v| *v as f64),
            FieldView::U8(c) => c.get(row).map(|v| *v as f64),
            FieldView::U16(c) => c.get(row).map(|v| *v as f64),
            FieldView::U32(c) => c.get(row).map(|v| *v as f64),
            FieldView::F32(c) => c.get(row).map(|v| *v as f64),
            FieldView::F64(c) => c.get(row).copied(),
            _ => None,
        }
    }

    /// Appends the values of `rows` as f64 (exact numeric fields only; `false` otherwise).
    /// One dispatch per call, then a tight loop over the column.
    pub fn read_f64_rows(&self, rows: &[u32], out: &mut Vec<f64>) -> bool {
        fn go<T: FieldNum>(c: &FieldColumn<'_, T>, rows: &[u32], out: &mut Vec<f64>) {
            out.extend(rows.iter().map(|&r| c.get(r as usize).map_or(f64::NAN, |v| v.to_f64())));
        }
        match self {
            FieldView::I8(c) => go(c, rows, out),
            FieldView::I16(c) => go(c, rows, out),
            FieldView::I32(c) => go(c, rows, out),
            FieldView::U8(c) => go(c, rows, out),
            FieldView::U16(c) => go(c, rows, out),
            FieldView::U32(c) => go(c, rows, out),
            FieldView::F32(c) => go(c, rows, out),
            FieldView::F64(c) => go(c, rows, out),
            _ => return false,
        }
        true
    }

    /// Appends the values of `rows` as i64 (integer fields other than u64; `false` otherwise).
    pub fn read_i64_rows(&self, rows: &[u32], out: &mut Vec<i64>) -> bool {
        fn go<T: FieldNum>(c: &FieldColumn<'_, T>, rows: &[u32], out: &mut Vec<i64>) {
            out.extend(rows.iter().map(|&r| c.get(r as usize).map_or(0, |v| v.to_i64())));
        }
        match self {
            FieldView::I8(c) => go(c, rows, out),
            FieldView::I16(c) => go(c, rows, out),
            FieldView::I32(c) => go(c, rows, out),
            FieldView::I64(c) => go(c, rows, out),
            FieldView::U8(c) => go(c, rows, out),
            FieldView::U16(c) => go(c, rows, out),
            FieldView::U32(c) => go(c, rows, out),
            _ => return false,
        }
        true
    }

    /// Whether [`FieldView::f64_at`] reads this field exactly.
    pub fn is_exact_f64(&self) -> bool {
        matches!(
            self,
            FieldView::I8(_)
                | FieldView::I16(_)
                | FieldView::I32(_)
                | FieldView::U8(_)
                | FieldView::U16(_)
                | FieldView::U32(_)
                | FieldView::F32(_)
                | FieldView::F64(_)
        )
    }

    /// Whether the field is an integer type read exactly as i64 (not u64).
    pub fn is_int(&self) -> bool {
        matches!(
            self,
            FieldView::I8(_)
                | FieldView::I16(_)
                | FieldView::I32(_)
                | FieldView::I64(_)
                | FieldView::U8(_)
                | FieldView::U16(_)
                | FieldView::U32(_)
        )
    }

    /// Row `row` as an i64 for integer fields other than u64.
    #[inline]
    pub fn i64_at(&self, row: usize) -> Option<i64> {
        match self {
            FieldView::I8(c) => c.get(row).map(|v| *v as i64),
            FieldView::I16(c) => c.get(row).map(|v| *v as i64),
            FieldView::I32(c) => c.get(row).map(|v| *v as i64),
            FieldView::I64(c) => c.get(row).copied(),
            FieldView::U8(c) => c.get(row).map(|v| *v as i64),
            FieldView::U16(c) => c.get(row).map(|v| *v as i64),
            FieldView::U32(c) => c.get(row).map(|v| *v as i64),
            _ => None,
        }
    }
}

/// The numeric field types (every [`FieldScalar`] but bool, u64, string, entity and vectors),
/// read as i64 or f64: what the engine's bulk reads and the query engine's column kernels
/// compute with. Sealed, as [`FieldScalar`] is.
///
/// ```
/// use ecsdb_engine::storage::FieldNum;
/// fn widen<T: FieldNum>(x: T) -> f64 { x.to_f64() }
/// assert_eq!(widen(3u8), 3.0);
/// assert!(<i32 as FieldNum>::INT && !<f32 as FieldNum>::INT);
/// ```
pub trait FieldNum: FieldScalar + Copy {
    /// Whether the type is an integer.
    const INT: bool;
    /// The value as i64 (integers only; floats truncate).
    fn to_i64(self) -> i64;
    /// The value as f64.
    fn to_f64(self) -> f64;
}
macro_rules! num {
    ($($t:ty => $int:expr_2021),*) => {$(
        impl FieldNum for $t {
            const INT: bool = $int;
            #[inline(always)]
            fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
num!(i8 => true, i16 => true, i32 => true, i64 => true, u8 => true, u16 => true, u32 => true, f32 => false, f64 => false);

impl FieldView<'_> {
    /// Number of rows ([`FieldView::Missing`] has none).
    pub fn len(&self) -> usize {
        match self {
            FieldView::Bool(c) => c.len(),
            FieldView::I8(c) => c.len(),
            FieldView::I16(c) => c.len(),
            FieldView::I32(c) => c.len(),
            FieldView::I64(c) => c.len(),
            FieldView::U8(c) => c.len(),
            FieldView::U16(c) => c.len(),
            FieldView::U32(c) => c.len(),
            FieldView::U64(c) => c.len(),
            FieldView::F32(c) => c.len(),
            FieldView::F64(c) => c.len(),
            FieldView::Str(c) => c.len(),
            FieldView::Entity(c) => c.len(),
            FieldView::Vec2(c) => c.len(),
            FieldView::Vec3(c) => c.len(),
            FieldView::Missing => 0,
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies of the values of rows `start..end` (clamped to the rows there are), in the
    /// field's type: what [`World::write_fields_run`](crate::World::write_fields_run) takes. `None` for
    /// [`FieldView::Missing`].
    ///
    /// ```
    /// use ecsdb_engine::storage::{FieldPlace, FieldView, TableId};
    /// use ecsdb_engine::{Component, TypedFieldValues, World};
    /// #[derive(Component)] struct Hp { v: f32 }
    /// let mut world = World::new();
    /// let e = world.spawn(Hp { v: 1.0 });
    /// world.spawn(Hp { v: 2.0 });
    /// let table = FieldPlace::Table(TableId(world.location(e).unwrap().table));
    /// let hp = FieldView::new(&world, table, world.component_id("Hp").unwrap(), 0);
    /// assert_eq!(hp.values_in(1, 5), Some(TypedFieldValues::F32(vec![2.0])));
    /// ```
    pub fn values_in(&self, start: usize, end: usize) -> Option<TypedFieldValues> {
        macro_rules! copy {
            ($($variant:ident),*) => {
                match self {
                    $(FieldView::$variant(c) => Some(TypedFieldValues::$variant(c.map_range(start, end, |v| v.clone()))),)*
                    FieldView::Missing => None,
                }
            };
        }
        copy!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, Str, Entity, Vec2, Vec3)
    }

    /// Row `row`'s value, `None` past the end or for a u64 above i64::MAX (for readers that
    /// skip what they cannot read, such as secondary indexes).
    #[inline]
    pub fn get(&self, row: usize) -> Option<Value> {
        if row >= self.len() {
            return None;
        }
        self.value(row).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ComponentDef, ComponentId, FieldType, World};

    #[test]
    fn views_read_every_type_and_refuse_what_they_cannot() {
        let mut world = World::new();
        let def = ComponentDef::new("M", &[("a", FieldType::U64), ("s", FieldType::String), ("e", FieldType::Entity)]);
        let id = world.define_component(&def).unwrap();
        let e = world.spawn_values(&[("M", &[("a", Value::Int(7)), ("s", Value::Str("x".into()))])]).unwrap();
        let t = TableId(world.location(e).unwrap().table);
        let view = |f| FieldView::new(&world, FieldPlace::Table(t), id, f);
        assert_eq!(view(0).value(0), Ok(Value::Int(7)));
        assert_eq!(view(1).get(0), Some(Value::Str("x".into())));
        assert_eq!(view(2).value(0), Ok(Value::Null));
        assert!(matches!(view(3), FieldView::Missing));
        assert!(matches!(FieldView::new(&world, FieldPlace::Sparse, id, 0), FieldView::Missing));
        assert!(matches!(FieldView::new(&world, FieldPlace::Table(t), ComponentId(99), 0), FieldView::Missing));
    }
}
