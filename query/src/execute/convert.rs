//! Values converted into a field's Rust type with the language's rules (those of
//! [`convert_value`]), a batch at a time: from a typed vector ([`convert_vector`]) or from
//! compiled programs chunk by chunk (`convert_compiled`), each conversion a test and a cast
//! in two vectorised passes.

use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use ecsdb_engine::{Entity, FieldInfo, FieldType, SchemaField, TypedFieldValues, Value, convert_value};

use crate::expr::Vector;
use crate::expr::compiled::{Bail, ChunkBuffers, Numbers, Program, RowSet, sized};

/// Converts row by row with `conv`; at the first row it refuses, the error
/// [`convert_value`] gives for that row's value.
fn rows_with<T>(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
    conv: impl Fn(&Value) -> Option<T>,
) -> Result<Vec<T>, ecsdb_engine::EngineError> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let value = v.value(i);
        match conv(&value) {
            Some(x) => out.push(x),
            None => {
                return Err(convert_value(component, field, &value).err().unwrap_or_else(|| {
                    ecsdb_engine::EngineError::Invalid(format!(
                        "cannot store {} in {component}.{}",
                        value.describe(),
                        field.name
                    ))
                }));
            }
        }
    }
    Ok(out)
}

/// The language's lossless integer conversion: ints, and floats without a fraction.
fn int_of<T: TryFrom<i128>>(v: &Value) -> Option<T> {
    let i = match *v {
        Value::Int(i) => i as i128,
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => f as i128,
        _ => return None,
    };
    T::try_from(i).ok()
}

/// The nearest f32 to `x`, unless a finite `x` rounds to infinity (its value would be lost).
pub(crate) fn f32_of(x: f64) -> Option<f32> {
    // The finite values that round to infinity are those from 2^128 - 2^103 up (half an f32
    // ulp above f32::MAX; the tie goes to the even neighbour, 2^128): said with two f64
    // comparisons, which vectorise, rather than by classifying both values.
    const ROUNDS_TO_INFINITY: f64 = 340_282_356_779_733_661_637_539_395_458_142_568_448.0;
    let a = x.abs();
    (!(ROUNDS_TO_INFINITY..f64::INFINITY).contains(&a)).then_some(x as f32)
}

/// The Rust type of a numeric field, with the language's conversions into it (the rules of
/// [`convert_value`]): one definition for the vector path and the compiled path. Each
/// conversion is a test and a cast, so a batch is checked in one pass and cast in another,
/// both vectorised.
trait NumericField: SchemaField + Copy + Default {
    /// Whether float `x` converts.
    fn fits_f64(x: f64) -> bool;
    /// `x` converted, where it fits.
    fn cast_f64(x: f64) -> Self;
    /// Whether int `x` converts.
    fn fits_i64(x: i64) -> bool;
    /// `x` converted, where it fits.
    fn cast_i64(x: i64) -> Self;
    fn values(xs: Vec<Self>) -> TypedFieldValues;
    /// The vector of values of this type, if `v` holds one.
    fn of_values(v: TypedFieldValues) -> Option<Vec<Self>>;

    fn from_f64(x: f64) -> Option<Self> {
        Self::fits_f64(x).then(|| Self::cast_f64(x))
    }

    fn from_i64(x: i64) -> Option<Self> {
        Self::fits_i64(x).then(|| Self::cast_i64(x))
    }

    /// Appends floats `xs` converted to `out`; whether every one converts.
    fn convert_floats(xs: &[f64], out: &mut Vec<Self>) -> bool {
        convert_all(xs, out, Self::fits_f64, Self::cast_f64)
    }

    /// Appends values already narrowed to f32 ([`Program::f32s`]) to `out`; whether every
    /// one is what converting its f64 value gives. Only an f32 field takes them.
    fn push_f32s(_xs: &[f32], _out: &mut Vec<Self>) -> bool {
        false
    }

    /// Room for `len` more values narrowed to f32 at the end of `out`, for
    /// [`Program::f32s_run`] to fill; only an f32 field has it.
    fn f32_room(_out: &mut Vec<Self>, _len: usize) -> Option<&mut [f32]> {
        None
    }
}

macro_rules! int_fields {
    ($($t:ty => $variant:ident),*) => {$(
        impl NumericField for $t {
            fn fits_f64(x: f64) -> bool {
                int_of::<$t>(&Value::Float(x)).is_some()
            }
            fn cast_f64(x: f64) -> $t {
                x as $t
            }
            fn fits_i64(x: i64) -> bool {
                <$t>::try_from(x).is_ok()
            }
            fn cast_i64(x: i64) -> $t {
                x as $t
            }
            fn values(xs: Vec<$t>) -> TypedFieldValues {
                TypedFieldValues::$variant(xs)
            }
            fn of_values(v: TypedFieldValues) -> Option<Vec<$t>> {
                if let TypedFieldValues::$variant(xs) = v { Some(xs) } else { None }
            }
        }
    )*};
}
int_fields!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

impl NumericField for f32 {
    fn fits_f64(x: f64) -> bool {
        f32_of(x).is_some()
    }
    /// Cast first, then look for an infinity among the results (four to a vector): only a
    /// batch with one is checked value by value, which is rare.
    fn convert_floats(xs: &[f64], out: &mut Vec<f32>) -> bool {
        let at = out.len();
        sized(xs.len(), |n| out.extend(xs[..n].iter().map(|x| *x as f32)));
        let cast = &out[at..];
        let infinite = sized(cast.len(), |n| cast[..n].iter().fold(false, |inf, y| inf | y.is_infinite()));
        !infinite || xs.iter().all(|x| Self::fits_f64(*x))
    }
    /// An infinity among them may stand for a finite f64 value too large for an f32 (which
    /// does not convert): such a batch is left to the row-by-row path, which tells.
    fn push_f32s(xs: &[f32], out: &mut Vec<f32>) -> bool {
        out.extend_from_slice(xs);
        !has_infinity(xs)
    }
    fn f32_room(out: &mut Vec<f32>, len: usize) -> Option<&mut [f32]> {
        let at = out.len();
        out.resize(at + len, 0.0);
        Some(&mut out[at..])
    }
    fn cast_f64(x: f64) -> f32 {
        x as f32
    }
    fn fits_i64(x: i64) -> bool {
        f32_of(x as f64).is_some()
    }
    fn cast_i64(x: i64) -> f32 {
        x as f64 as f32
    }
    fn values(xs: Vec<f32>) -> TypedFieldValues {
        TypedFieldValues::F32(xs)
    }
    fn of_values(v: TypedFieldValues) -> Option<Vec<f32>> {
        if let TypedFieldValues::F32(xs) = v { Some(xs) } else { None }
    }
}

impl NumericField for f64 {
    fn fits_f64(_: f64) -> bool {
        true
    }
    fn cast_f64(x: f64) -> f64 {
        x
    }
    fn fits_i64(_: i64) -> bool {
        true
    }
    fn cast_i64(x: i64) -> f64 {
        x as f64
    }
    fn values(xs: Vec<f64>) -> TypedFieldValues {
        TypedFieldValues::F64(xs)
    }
    fn of_values(v: TypedFieldValues) -> Option<Vec<f64>> {
        if let TypedFieldValues::F64(xs) = v { Some(xs) } else { None }
    }
}

/// Whether an infinity is among `xs`: values narrowed to f32 where one may stand for a finite
/// value too large for an f32, which does not convert. One fold with no early exit, so it
/// vectorises.
fn has_infinity(xs: &[f32]) -> bool {
    sized(xs.len(), |n| xs[..n].iter().fold(false, |inf, y| inf | y.is_infinite()))
}

/// Appends every value cast with `cast` to `out`; returns whether every one `fits`. Two
/// passes with no early exit, so both vectorise (a failure is reported by the row-by-row path).
fn convert_all<S: Copy, T>(xs: &[S], out: &mut Vec<T>, fits: impl Fn(S) -> bool, cast: impl Fn(S) -> T) -> bool {
    let ok = xs.iter().fold(true, |ok, x| ok & fits(*x));
    out.extend(xs.iter().map(|x| cast(*x)));
    ok
}

/// A float or int vector without nulls, converted without building values.
fn numeric_fast<T: NumericField>(v: &Vector<'_>) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(v.len());
    let ok = match v {
        Vector::Float(p) if p.valid.is_none() => T::convert_floats(&p.values, &mut out),
        Vector::Int(p) if p.valid.is_none() => convert_all(&p.values, &mut out, T::fits_i64, T::cast_i64),
        _ => false,
    };
    ok.then_some(out)
}

/// A numeric vector converted into a numeric field's type; the row-by-row path reports the
/// first value that does not convert.
fn numeric_field<T: NumericField>(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
) -> Result<TypedFieldValues, ecsdb_engine::EngineError> {
    Ok(T::values(match numeric_fast::<T>(v) {
        Some(xs) => xs,
        None => rows_with(v, n, component, field, |x| match *x {
            Value::Int(i) => T::from_i64(i),
            Value::Float(f) => T::from_f64(f),
            _ => None,
        })?,
    }))
}

/// Room for an UPDATE's new values, kept between the runs of a prepared statement: the
/// vectors one run staged its values in come back emptied from the write
/// ([`ecsdb_engine::ComponentWriter::write_fields_run`]) and the next run fills them again,
/// instead of allocating megabytes each time (which the allocator may hand back to the
/// system and fault in again, page by page). Shared: a staged UPDATE may be written after its
/// statement returned (a system's, at the end of its batch, perhaps on another thread).
#[derive(Clone, Default)]
pub struct StagingBuffers(Arc<Mutex<Vec<TypedFieldValues>>>);

impl std::fmt::Debug for StagingBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("StagingBuffers").field("kept", &kept).finish()
    }
}

/// Emptied vectors kept at most: one statement's fields over its tables, the rest freed.
const KEPT_BUFFERS: usize = 32;

impl StagingBuffers {
    /// An empty vector with room for `n` values of `T`: a kept one if there is one.
    fn take<T: NumericField>(&self, n: usize) -> Vec<T> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let found = kept.iter().position(|v| v.field_type() == T::FIELD_TYPE);
        let mut out = found.and_then(|i| T::of_values(kept.swap_remove(i))).unwrap_or_default();
        drop(kept);
        out.clear();
        out.reserve(n);
        out
    }

    /// An empty f32 vector, a kept one if there is one: scratch room for the old values of an
    /// in-place rewrite ([`crate::execute::rewrite`]), given back with [`StagingBuffers::give`].
    pub(crate) fn take_f32s(&self) -> Vec<f32> {
        self.take::<f32>(0)
    }

    /// Keeps the emptied vectors of a write for the next run.
    pub(crate) fn give(&self, spent: impl IntoIterator<Item = TypedFieldValues>) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for v in spent {
            if kept.len() < KEPT_BUFFERS && v.is_empty() {
                kept.push(v);
            }
        }
    }

    /// How many vectors are kept.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// What computes a run of values narrowed to f32 into the room given
/// ([`Program::f32s_run`]): `None` where it cannot, [`Bail`] where it gives up.
type F32Fill<'a> = dyn FnMut(&mut [f32]) -> Option<Result<(), Bail>> + 'a;

/// New values of one numeric field being computed chunk by chunk, in the field's type.
trait StagedNumbers {
    /// Converts and appends a chunk's values.
    fn push(&mut self, chunk: Numbers<'_>);
    /// Appends a chunk's values computed in f32 ([`NumericField::push_f32s`]).
    fn push_f32s(&mut self, xs: &[f32]);
    /// Appends the values of a run of `len` rows computed in f32 by `fill` straight into the
    /// vector ([`Program::f32s_run`]); `None` (nothing appended) where the field is not an
    /// f32 one or `fill` cannot.
    fn push_f32_run(&mut self, len: usize, fill: &mut F32Fill<'_>) -> Option<Result<(), Bail>>;
    /// The values, if every one converted.
    fn finish(self: Box<Self>) -> Option<TypedFieldValues>;
}

struct Staged<T> {
    values: Vec<T>,
    ok: bool,
}

impl<T: NumericField> StagedNumbers for Staged<T> {
    fn push(&mut self, chunk: Numbers<'_>) {
        self.ok &= match chunk {
            Numbers::Floats(xs) => T::convert_floats(xs, &mut self.values),
            Numbers::Ints(xs) => convert_all(xs, &mut self.values, T::fits_i64, T::cast_i64),
        };
    }

    fn push_f32s(&mut self, xs: &[f32]) {
        self.ok &= T::push_f32s(xs, &mut self.values);
    }

    fn push_f32_run(&mut self, len: usize, fill: &mut F32Fill<'_>) -> Option<Result<(), Bail>> {
        let at = self.values.len();
        let room = T::f32_room(&mut self.values, len)?;
        let done = fill(room);
        match done {
            Some(Ok(())) => self.ok &= !has_infinity(room),
            // Nothing filled: the room goes, for the chunk path to fill instead.
            None => self.values.truncate(at),
            Some(Err(Bail)) => {}
        }
        done
    }

    fn finish(self: Box<Self>) -> Option<TypedFieldValues> {
        self.ok.then(|| T::values(self.values))
    }
}

fn staged<T: NumericField + 'static>(n: usize, buffers: &StagingBuffers) -> Box<dyn StagedNumbers> {
    Box::new(Staged::<T> { values: buffers.take(n), ok: true })
}

/// Room for `n` new values of a numeric field; `None` for other field types.
fn staged_numbers(ty: FieldType, n: usize, buffers: &StagingBuffers) -> Option<Box<dyn StagedNumbers>> {
    Some(match ty {
        FieldType::I8 => staged::<i8>(n, buffers),
        FieldType::I16 => staged::<i16>(n, buffers),
        FieldType::I32 => staged::<i32>(n, buffers),
        FieldType::I64 => staged::<i64>(n, buffers),
        FieldType::U8 => staged::<u8>(n, buffers),
        FieldType::U16 => staged::<u16>(n, buffers),
        FieldType::U32 => staged::<u32>(n, buffers),
        FieldType::U64 => staged::<u64>(n, buffers),
        FieldType::F32 => staged::<f32>(n, buffers),
        FieldType::F64 => staged::<f64>(n, buffers),
        _ => return None,
    })
}

/// One program's values over rows `rows.0..rows.1` into `out`: straight into it in one call
/// for an f32 field whose program can, else chunk by chunk. `None` where the program gives up.
fn run_block(
    program: &Program<'_>,
    out: &mut dyn StagedNumbers,
    in_f32: bool,
    (start, end): (usize, usize),
    buffers: &mut ChunkBuffers,
) -> Option<()> {
    if in_f32 && let Some(done) = out.push_f32_run(end - start, &mut |room| program.f32s_run(start, room)) {
        return done.ok();
    }
    RowSet::Range(start, end).for_each_chunk(|chunk| program.numbers(chunk, buffers, |numbers| out.push(numbers))).ok()
}

/// Rows of a consecutive run that [`convert_compiled`] computes every program over before
/// the next ones: a few tens of KiB of each column read, so a program's columns are still in
/// cache for the next program of the same component, and the per-call work of an f32 run
/// is paid once for a thousand rows.
const RUN_BLOCK: usize = 1024;

/// Every program's values over `rows` (`n` of them) converted into its field's type: every
/// program on a piece of the rows before the next piece (a [`RUN_BLOCK`] of consecutive
/// rows, or a chunk of listed ones), so the columns they read are brought into cache once.
/// `None` where a program is not numeric, a row is null or a value does not convert.
pub(crate) fn convert_compiled(
    programs: &[(Rc<Program<'_>>, FieldType)],
    rows: RowSet<'_>,
    n: usize,
    buffers: &StagingBuffers,
) -> Option<Vec<TypedFieldValues>> {
    let mut staged: Vec<Box<dyn StagedNumbers>> =
        programs.iter().map(|(_, ty)| staged_numbers(*ty, n, buffers)).collect::<Option<_>>()?;
    // An f32 field's values narrowed to f32 as they are computed, where the program can.
    let in_f32: Vec<bool> = programs.iter().map(|(p, ty)| *ty == FieldType::F32 && p.gives_f32()).collect();
    let mut buffers = ChunkBuffers::default();
    if let RowSet::Range(start, end) = rows {
        // Consecutive rows (a whole table, the common case) go a block at a time, every
        // program on a block before the next (its columns' lines still in cache); an f32
        // field's values are computed straight into its vector, a block in one call.
        for block in (start..end).step_by(RUN_BLOCK) {
            let rows = (block, end.min(block + RUN_BLOCK));
            for (((program, _), out), &in_f32) in programs.iter().zip(&mut staged).zip(&in_f32) {
                run_block(program, &mut **out, in_f32, rows, &mut buffers)?;
            }
        }
        return staged.into_iter().map(|s| s.finish()).collect();
    }
    rows.for_each_chunk(|chunk| {
        for (((program, _), out), &in_f32) in programs.iter().zip(&mut staged).zip(&in_f32) {
            if in_f32 && let Some(done) = program.f32s(chunk, &mut buffers, |xs| out.push_f32s(xs)) {
                done?;
                continue;
            }
            program.numbers(chunk, &mut buffers, |numbers| out.push(numbers))?;
        }
        Ok::<(), Bail>(())
    })
    .ok()?;
    staged.into_iter().map(|s| s.finish()).collect()
}

/// A vector's values converted into a field's type, checked as [`convert_value`] checks.
pub fn convert_vector(
    v: &Vector<'_>,
    n: usize,
    component: &str,
    field: &FieldInfo,
) -> Result<TypedFieldValues, ecsdb_engine::EngineError> {
    Ok(match field.ty {
        FieldType::Bool => TypedFieldValues::Bool(match v {
            Vector::Bool(p) if p.valid.is_none() => p.values.clone(),
            _ => rows_with(v, n, component, field, |x| if let Value::Bool(b) = x { Some(*b) } else { None })?,
        }),
        FieldType::I8 => numeric_field::<i8>(v, n, component, field)?,
        FieldType::I16 => numeric_field::<i16>(v, n, component, field)?,
        FieldType::I32 => numeric_field::<i32>(v, n, component, field)?,
        FieldType::I64 => numeric_field::<i64>(v, n, component, field)?,
        FieldType::U8 => numeric_field::<u8>(v, n, component, field)?,
        FieldType::U16 => numeric_field::<u16>(v, n, component, field)?,
        FieldType::U32 => numeric_field::<u32>(v, n, component, field)?,
        FieldType::U64 => numeric_field::<u64>(v, n, component, field)?,
        FieldType::F32 => numeric_field::<f32>(v, n, component, field)?,
        FieldType::F64 => numeric_field::<f64>(v, n, component, field)?,
        FieldType::String => TypedFieldValues::Str(rows_with(v, n, component, field, |x| match x {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        })?),
        FieldType::Entity => TypedFieldValues::Entity(match v {
            Vector::Entity(p) => (0..n).map(|i| p.get(i).unwrap_or(Entity::NULL)).collect(),
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Entity(e) => Some(*e),
                Value::Null => Some(Entity::NULL),
                _ => None,
            })?,
        }),
        FieldType::Vec2 => TypedFieldValues::Vec2(match v {
            Vector::Vec2(p) if p.valid.is_none() => p.values.iter().map(|[a, b]| [*a as f32, *b as f32]).collect(),
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Vec2([a, b]) => Some([*a as f32, *b as f32]),
                _ => None,
            })?,
        }),
        FieldType::Vec3 => TypedFieldValues::Vec3(match v {
            Vector::Vec3(p) if p.valid.is_none() => {
                p.values.iter().map(|[a, b, c]| [*a as f32, *b as f32, *c as f32]).collect()
            }
            _ => rows_with(v, n, component, field, |x| match x {
                Value::Vec3([a, b, c]) => Some([*a as f32, *b as f32, *c as f32]),
                _ => None,
            })?,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparison form of `f32_of` agrees with converting and looking at the result.
    #[test]
    fn f32_overflow_is_the_values_that_round_to_infinity() {
        let limit = (2f64.powi(128) - 2f64.powi(103)).abs();
        let below = f64::from_bits(limit.to_bits() - 1);
        for x in
            [0.0, -0.0, 1.5, f32::MAX as f64, below, limit, 1e39, 1e300, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE]
        {
            for x in [x, -x] {
                let y = x as f32;
                let lost = x.is_finite() && y.is_infinite();
                assert_eq!(f32_of(x).is_none(), lost, "{x:e}");
            }
        }
    }

    /// The typed conversions accept and refuse exactly what `convert_value` does.
    #[test]
    fn conversions_match_convert_value() {
        let values = [
            Value::Int(3),
            Value::Int(-1),
            Value::Int(300),
            Value::Int(i64::MAX),
            Value::Float(2.0),
            Value::Float(2.5),
            Value::Float(1e40),
            Value::Float(f64::NAN),
            Value::Float(-0.0),
            Value::Null,
            Value::Bool(true),
            Value::Str("s".into()),
            Value::Vec2([1.0, 2.0]),
            Value::Vec3([1.0, 2.0, 3.0]),
        ];
        let types = [
            FieldType::Bool,
            FieldType::I8,
            FieldType::U8,
            FieldType::I32,
            FieldType::U64,
            FieldType::I64,
            FieldType::F32,
            FieldType::F64,
            FieldType::String,
            FieldType::Entity,
            FieldType::Vec2,
            FieldType::Vec3,
        ];
        for ty in types {
            let field = FieldInfo { name: "f".into(), ty, offset: 0 };
            for v in &values {
                let want = convert_value("C", &field, v).is_ok();
                // As a typed vector of one row and as a constant.
                for vector in [Vector::from_values(vec![v.clone()]), Vector::Scalar(v.clone(), 1)] {
                    let got = convert_vector(&vector, 1, "C", &field);
                    assert_eq!(got.is_ok(), want, "{v:?} into {ty:?} via {vector:?}: {got:?}");
                }
            }
        }
    }
}
