//! The column kernels of [`FilterStep::Compare`](crate::plan::physical::FilterStep::Compare):
//! one field of one column compared with a value in a tight loop over the engine's typed
//! strided view ([`FieldColumn`]), narrowing a [`Selection`], with no `Value` built and no
//! dispatch a row.

use ecsdb_engine::Value;
use ecsdb_engine::storage::{FieldColumn, FieldNum, FieldScalar, FieldView};

use super::Selection;
use crate::execute::pace::{self, PACE_ROWS};
use crate::types::BinaryOp;

/// Narrows the selection to rows whose field passes `keep`: the column kernel.
///
/// From every row it works 64 rows at a time, choosing per chunk by the previous chunk's
/// selectivity: when nearly all or nearly no rows pass, a plain loop whose branch the CPU
/// predicts; otherwise a branch-free bitmask ([`FieldColumn::mask64`]) whose set bits are then
/// visited. From a row list, it compacts the list in place without branches.
#[inline]
fn filter_column<T: FieldScalar>(col: FieldColumn<'_, T>, sel: &mut Selection, mut keep: impl FnMut(&T) -> bool) {
    match sel {
        Selection::All(n) => {
            let n = (*n).min(col.len());
            let mut out: Vec<u32> = Vec::new();
            let mut start = 0usize;
            let mut last_kept = 0usize;
            while start < n {
                if start.is_multiple_of(PACE_ROWS) {
                    pace::point();
                }
                let end = (start + 64).min(n);
                let before = out.len();
                if last_kept <= 4 || last_kept >= 60 {
                    col.for_each_in(start, end, |row, v| {
                        if keep(v) {
                            out.push(row as u32);
                        }
                    });
                } else {
                    let mut bits = col.mask64(start, &mut keep);
                    while bits != 0 {
                        out.push(start as u32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
                last_kept = out.len() - before;
                start = end;
            }
            *sel = Selection::Rows(out);
        }
        Selection::Rows(rows) => {
            let mut k = 0usize;
            for i in 0..rows.len() {
                let r = rows[i];
                let pass = col.get(r as usize).is_some_and(&mut keep);
                rows[k] = r;
                k += pass as usize;
            }
            rows.truncate(k);
        }
    }
}

/// A comparison chosen at compile time, so each kernel loop is specialised.
trait Cmp {
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool;
}
struct Eq;
struct Ne;
struct Lt;
struct Le;
struct Gt;
struct Ge;
impl Cmp for Eq {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a == b
    }
}
impl Cmp for Ne {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        // NaN compares as null: neither equal nor unequal.
        matches!(a.partial_cmp(b), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Greater))
    }
}
impl Cmp for Lt {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a < b
    }
}
impl Cmp for Le {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a <= b
    }
}
impl Cmp for Gt {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a > b
    }
}
impl Cmp for Ge {
    #[inline(always)]
    fn test<T: PartialOrd + ?Sized>(a: &T, b: &T) -> bool {
        a >= b
    }
}

/// `conv(field) op c` over the selection, with the constant held by value (in a register, not
/// reloaded through a closure's captures after every store).
#[inline]
fn compare_column<T: FieldScalar, K: PartialOrd + Copy, O: Cmp>(
    col: FieldColumn<'_, T>,
    sel: &mut Selection,
    conv: impl Fn(&T) -> K + Copy,
    c: K,
) {
    filter_column(col, sel, move |v| O::test(&conv(v), &c))
}

fn num_kernel<T: FieldNum, O: Cmp>(col: FieldColumn<'_, T>, rhs: &Value, sel: &mut Selection) {
    match *rhs {
        Value::Int(c) if T::INT => compare_column::<T, i64, O>(col, sel, |v| v.to_i64(), c),
        Value::Int(c) => compare_column::<T, f64, O>(col, sel, |v| v.to_f64(), c as f64),
        Value::Float(c) => compare_column::<T, f64, O>(col, sel, |v| v.to_f64(), c),
        _ => *sel = Selection::Rows(Vec::new()),
    }
}

fn compare_with<O: Cmp>(reader: &FieldView<'_>, rhs: &Value, sel: &mut Selection) -> Result<(), String> {
    let numeric = matches!(rhs, Value::Int(_) | Value::Float(_));
    match (reader, rhs) {
        (_, Value::Null) => *sel = Selection::Rows(Vec::new()),
        (FieldView::I8(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I16(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::I64(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U8(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U16(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::U32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::F32(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::F64(c), _) if numeric => num_kernel::<_, O>(*c, rhs, sel),
        (FieldView::Str(c), Value::Str(s)) => filter_column(*c, sel, |v| O::test(v.as_str(), s.as_str())),
        (FieldView::Bool(c), Value::Bool(b)) => filter_column(*c, sel, |v| O::test(v, b)),
        (FieldView::Entity(c), Value::Entity(e)) => filter_column(*c, sel, |v| !v.is_null() && O::test(v, e)),
        (FieldView::Missing, _) => *sel = Selection::Rows(Vec::new()),
        (_, other) => return Err(format!("cannot compare this field with {}", other.describe())),
    }
    Ok(())
}

/// The next f32 above `x` (identity for NaN and +inf).
fn f32_next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let bits = x.to_bits();
    f32::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

fn f32_next_down(x: f32) -> f32 {
    -f32_next_up(-x)
}

/// `f32 field op c` with `c` an f64: the same answer as comparing in f64 (the language reads
/// an f32 as f64), computed in f32 against a bound rounded the right way, so the loop neither
/// converts each value nor reloads a wide constant.
fn f32_kernel(col: FieldColumn<'_, f32>, op: BinaryOp, c: f64, sel: &mut Selection) -> Result<(), String> {
    if c.is_nan() {
        *sel = Selection::Rows(Vec::new());
        return Ok(());
    }
    let r = c as f32;
    let exact = r as f64 == c;
    // The least f32 >= c and the greatest f32 <= c (infinities where c is out of range).
    let up = if r as f64 >= c { r } else { f32_next_up(r) };
    let down = if r as f64 <= c { r } else { f32_next_down(r) };
    let id = |v: &f32| *v;
    match op {
        BinaryOp::Eq if exact => compare_column::<f32, f32, Eq>(col, sel, id, r),
        BinaryOp::Eq => *sel = Selection::Rows(Vec::new()),
        BinaryOp::Ne if exact => compare_column::<f32, f32, Ne>(col, sel, id, r),
        // Every value but NaN differs from a constant no f32 equals.
        BinaryOp::Ne => compare_column::<f32, f32, Ge>(col, sel, id, f32::NEG_INFINITY),
        BinaryOp::Lt => compare_column::<f32, f32, Lt>(col, sel, id, up),
        BinaryOp::Le => compare_column::<f32, f32, Le>(col, sel, id, down),
        BinaryOp::Gt => compare_column::<f32, f32, Gt>(col, sel, id, down),
        BinaryOp::Ge => compare_column::<f32, f32, Ge>(col, sel, id, up),
        _ => return Err(format!("'{}' is not a comparison", op.symbol())),
    }
    Ok(())
}

/// Runs a compare kernel: `field op rhs` over the selected rows.
pub fn compare_kernel(reader: &FieldView<'_>, op: BinaryOp, rhs: &Value, sel: &mut Selection) -> Result<(), String> {
    if let (FieldView::F32(col), Some(c)) = (reader, rhs.as_f64()) {
        return f32_kernel(*col, op, c, sel);
    }
    match op {
        BinaryOp::Eq => compare_with::<Eq>(reader, rhs, sel),
        BinaryOp::Ne => compare_with::<Ne>(reader, rhs, sel),
        BinaryOp::Lt => compare_with::<Lt>(reader, rhs, sel),
        BinaryOp::Le => compare_with::<Le>(reader, rhs, sel),
        BinaryOp::Gt => compare_with::<Gt>(reader, rhs, sel),
        BinaryOp::Ge => compare_with::<Ge>(reader, rhs, sel),
        _ => Err(format!("'{}' is not a comparison", op.symbol())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecsdb_engine::storage::TableId;
    use ecsdb_engine::{ComponentDef, FieldType, Value, World};

    /// The f32 kernel agrees with comparing in f64, at the awkward constants.
    #[test]
    fn f32_kernel_matches_f64_semantics() {
        let mut world = World::new();
        let id = world.define_component(&ComponentDef::new("F", &[("v", FieldType::F32)])).unwrap();
        let values = [
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.5,
            -0.0,
            0.0,
            f32::from_bits(1),
            0.1,
            1.0,
            16_777_217.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
        ];
        let mut table = None;
        for v in values {
            let e = world.spawn_values(&[("F", &[("v", Value::Float(v as f64))])]).unwrap();
            table = Some(TableId(world.location(e).unwrap().table));
        }
        let col = world.table_field::<f32>(table.unwrap(), id, 0).unwrap();
        let constants = [
            0.1f64,
            -0.0,
            0.0,
            1.0,
            1e-50,
            -1e-50,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            16_777_217.0,
            f64::NAN,
        ];
        let ops = [BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge];
        for c in constants {
            for op in ops {
                let mut sel = Selection::All(values.len());
                f32_kernel(col, op, c, &mut sel).unwrap();
                let want: Vec<u32> = (0..values.len() as u32)
                    .filter(|&r| {
                        let v = Value::Float(values[r as usize] as f64);
                        crate::expr::ops::binary(op, &v, &Value::Float(c)) == Ok(Value::Bool(true))
                    })
                    .collect();
                assert_eq!(sel.into_rows(), want, "v {op:?} {c}");
            }
        }
    }
}
