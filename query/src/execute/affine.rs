//! Assignments of f32 fields computed from one row's f32 fields by affine arithmetic.
//!
//! `x = Position.x + Velocity.x * $dt`, `hp = Health.hp * 0.5 + 1` and `y = -Position.y` each
//! combine at most two f32 fields of the row, each scaled and shifted by constants. Such an
//! assignment needs no vectors or chunks: [`AffineF32::value`] computes it from the row's two
//! inputs, in f64 as the language prescribes, rounding exactly where the expression as
//! written rounds, so its result is bit for bit the evaluator's. An UPDATE whose assignments
//! are all of this form can be rewritten in place a row at a time
//! (`execute/rewrite.rs`).

use ecsdb_engine::{FieldType, Value};

use crate::expr::{Expr, ExprKind, Slot};
use crate::plan::physical::PhysicalSlot;
use crate::types::BinaryOp;

/// `x + NO_ADD` is `x` for every float (`-0.0` included): the shift of a side that adds none.
const NO_ADD: f64 = -0.0;

/// An f32's sign bit.
const SIGN: u32 = 0x8000_0000;

/// One f32 field of the row, `±v * k + c` (negated, multiplied, then added: two roundings, as
/// written). A negation is kept apart from the factor: `-v` flips the sign of a NaN, where
/// `v * -1` keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffineSide {
    /// The field's component, by slot.
    pub slot: Slot,
    /// The field's position in its component's schema.
    pub field: usize,
    /// The sign bit flipped first (`-v`), or 0.
    sign: u32,
    k: f64,
    c: f64,
}

impl AffineSide {
    /// `±v`, as f64.
    #[inline(always)]
    fn signed(&self, v: f32) -> f64 {
        f32::from_bits(v.to_bits() ^ self.sign) as f64
    }

    #[inline(always)]
    fn value(&self, v: f32) -> f64 {
        self.signed(v) * self.k + self.c
    }

    /// Its value for a side that [is only scaled](AffineSide::is_scaled): `v * k`.
    #[inline(always)]
    pub fn scaled(&self, v: f32) -> f64 {
        v as f64 * self.k
    }

    /// Whether it is `v * k`: not negated, nothing added.
    pub fn is_scaled(&self) -> bool {
        self.sign == 0 && self.adds_nothing()
    }

    /// Whether it adds nothing (`c` is `NO_ADD`): its value is `v * factor()`.
    pub fn adds_nothing(&self) -> bool {
        self.c.to_bits() == NO_ADD.to_bits()
    }

    /// Whether it is the field itself (`v`: not negated, a factor of 1, nothing added).
    pub fn is_bare(&self) -> bool {
        self.sign == 0 && self.k == 1.0 && self.adds_nothing()
    }
}

/// How an [`AffineF32`] combines its sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The first side alone.
    First,
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
}

/// An assignment's value from at most two f32 fields of the row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffineF32 {
    /// The first side.
    pub a: AffineSide,
    /// The second side (the first again for [`Combine::First`]).
    pub b: AffineSide,
    /// How they combine.
    pub combine: Combine,
}

impl AffineF32 {
    /// Recognises `expr`, whose fields are those of `slots`, with `params` the statement's
    /// parameter values. `None` for any other expression.
    pub fn of(expr: &Expr, slots: &[PhysicalSlot], params: &[Value]) -> Option<AffineF32> {
        if let Some(a) = side(expr, slots, params) {
            return Some(AffineF32 { a, b: a, combine: Combine::First });
        }
        let ExprKind::Binary { op, left, right } = &expr.kind else { return None };
        let combine = match op {
            BinaryOp::Add => Combine::Add,
            BinaryOp::Sub => Combine::Sub,
            BinaryOp::Mul => Combine::Mul,
            _ => return None,
        };
        Some(AffineF32 { a: side(left, slots, params)?, b: side(right, slots, params)?, combine })
    }

    /// The value for a row whose first side's field holds `x` and second side's `y`.
    #[inline(always)]
    pub fn value(&self, x: f32, y: f32) -> f64 {
        self.value_as(self.combine, x, y)
    }

    /// [`AffineF32::value`] for an assignment known to combine as `combine`: called with a
    /// constant, the row loop has no branch on it.
    #[inline(always)]
    pub fn value_as(&self, combine: Combine, x: f32, y: f32) -> f64 {
        let a = self.a.value(x);
        match combine {
            Combine::First => a,
            Combine::Add => a + self.b.value(y),
            Combine::Sub => a - self.b.value(y),
            Combine::Mul => a * self.b.value(y),
        }
    }
}

/// A constant: a number literal or parameter, as the f64 it promotes to.
fn constant(expr: &Expr, params: &[Value]) -> Option<f64> {
    let number = |v: &Value| match *v {
        Value::Float(f) => Some(f),
        Value::Int(i) => Some(i as f64),
        _ => None,
    };
    match &expr.kind {
        ExprKind::Literal(v) => number(v),
        ExprKind::Param(n) => number(params.get(*n)?),
        ExprKind::Neg(x) => constant(x, params).map(|c| -c),
        _ => None,
    }
}

/// An f32 field in an affine form. Each form is exactly its expression: `v * 1.0` is `v`, `a +
/// -0.0` is `a`, `-(v * k)` is `(-v) * k`, `a - c` is `a + -c` and `c - v * k` is `v * -k + c`
/// in IEEE arithmetic (a NaN keeps its sign through a product or sum; only a negation flips
/// it). A product or negation is taken only of a side that adds nothing and has a factor of
/// ±1, so no rounding is moved.
fn side(expr: &Expr, slots: &[PhysicalSlot], params: &[Value]) -> Option<AffineSide> {
    let unit = |s: &AffineSide| s.adds_nothing() && (s.k == 1.0 || s.k == -1.0);
    match &expr.kind {
        ExprKind::Field { slot, field } => {
            let ty = slots.get(*slot)?.fields.get(*field)?.ty;
            (ty == FieldType::F32).then_some(AffineSide { slot: *slot, field: *field, sign: 0, k: 1.0, c: NO_ADD })
        }
        ExprKind::Neg(x) => side(x, slots, params).filter(unit).map(|s| AffineSide { sign: s.sign ^ SIGN, ..s }),
        ExprKind::Binary { op, left, right } => {
            let scaled = |x: &Expr, k: f64| side(x, slots, params).filter(unit).map(|s| AffineSide { k: s.k * k, ..s });
            let shifted = |x: &Expr, c: f64, flip: bool| {
                side(x, slots, params).filter(AffineSide::adds_nothing).map(|s| AffineSide {
                    k: if flip { -s.k } else { s.k },
                    c,
                    ..s
                })
            };
            match (op, constant(left, params), constant(right, params)) {
                (_, Some(_), Some(_)) => None,
                (BinaryOp::Mul, None, Some(k)) => scaled(left, k),
                (BinaryOp::Mul, Some(k), None) => scaled(right, k),
                (BinaryOp::Add, None, Some(c)) => shifted(left, c, false),
                (BinaryOp::Add, Some(c), None) => shifted(right, c, false),
                (BinaryOp::Sub, None, Some(c)) => shifted(left, -c, false),
                (BinaryOp::Sub, Some(c), None) => shifted(right, c, true),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    /// The slots and assignments of `UPDATE …` as bound and planned.
    fn assignments(db: &mut Database, text: &str) -> (Vec<PhysicalSlot>, Vec<Expr>) {
        let plan = db.prepare(text).expect("prepare");
        plan.update_parts().expect("an UPDATE")
    }

    #[test]
    fn recognises_affine_forms_and_nothing_else() {
        let mut db = Database::new();
        db.execute_script("CREATE COMPONENT P (x f32, y f32, d f64, i i32); CREATE COMPONENT V (x f32, y f32)")
            .unwrap();
        let params = [Value::Float(0.25)];
        let shapes = [
            ("P.x + V.x * $1", Some(Combine::Add)),
            ("V.x * $1 + P.x", Some(Combine::Add)),
            ("P.x - -V.x", Some(Combine::Sub)),
            ("(P.x + 1) * (2 - V.y)", Some(Combine::Mul)),
            ("P.x * 0.5 + 1", Some(Combine::First)),
            ("-P.y", Some(Combine::First)),
            ("P.x", Some(Combine::First)),
            ("P.x / 2", None),
            ("P.x * 2 * 3", None),
            ("(P.x + 1) * 2", None),
            ("P.d + V.x", None),
            ("P.i + V.x", None),
            ("P.x + V.x + V.y", None),
            ("sqrt(P.x)", None),
            ("1 + 2", None),
        ];
        for (expr, want) in shapes {
            let (slots, exprs) = assignments(&mut db, &format!("UPDATE P SET x = {expr} FROM P, V"));
            let got = AffineF32::of(&exprs[0], &slots, &params).map(|a| a.combine);
            assert_eq!(got, want, "{expr}");
        }
    }

    /// Each recognised form gives, bit for bit, what the statement stores through the
    /// evaluator: awkward values, signed zeros, infinities and NaN included.
    #[test]
    fn values_are_the_evaluators_bit_for_bit() {
        let exprs = [
            "P.x + V.x * $1",
            "P.x - V.y * $1",
            "V.x * $1 - P.x",
            "(P.x + 1.5) * (2 - V.y)",
            "-P.y * V.x",
            "P.x * 0.1 + 1e30",
            "$1 - P.y",
            "P.y - 0.0",
            "P.y + 0.0",
        ];
        let xs = crate::expr::compiled::tests::awkward_f32s(64, 7);
        let ys = crate::expr::compiled::tests::awkward_f32s(64, 11);
        let mut total_refused = 0;
        for expr in exprs {
            for dt in [0.016, -3.0, 1e-40, 0.0] {
                let mut db = Database::new();
                db.execute_script("CREATE COMPONENT P (x f32, y f32); CREATE COMPONENT V (x f32, y f32)").unwrap();
                let mut rows = Vec::new();
                for (i, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
                    let (p, v) = ((x, ys[(i + 5) % ys.len()]), (y, xs[(i + 3) % xs.len()]));
                    let e = db.world_mut().spawn_values(&[
                        ("P", &[("x", Value::Float(p.0 as f64)), ("y", Value::Float(p.1 as f64))]),
                        ("V", &[("x", Value::Float(v.0 as f64)), ("y", Value::Float(v.1 as f64))]),
                    ]);
                    rows.push((e.unwrap(), p, v));
                }
                let text = format!("UPDATE P SET x = {expr} FROM P, V");
                let (slots, bound) = assignments(&mut db, &text);
                let params = [Value::Float(dt)];
                let affine = AffineF32::of(&bound[0], &slots, &params).expect(expr);
                let input = |s: &AffineSide, p: (f32, f32), v: (f32, f32)| match (s.slot, s.field) {
                    (0, 0) => p.0,
                    (0, 1) => p.1,
                    (1, 0) => v.0,
                    _ => v.1,
                };
                // Row by row through the evaluator (one entity a statement, so nothing is
                // batched), against the affine value narrowed as the UPDATE narrows.
                let (mut stored_rows, mut refused_rows) = (0, 0);
                for (e, p, v) in rows {
                    let one = format!("UPDATE P SET x = {expr} FROM P, V WHERE entity = {e}");
                    let want = db.execute(&one, crate::Params::positional([Value::Float(dt)]));
                    let got =
                        crate::execute::convert::f32_of(affine.value(input(&affine.a, p, v), input(&affine.b, p, v)));
                    match (want, got) {
                        (Ok(_), Some(got)) => {
                            let read = db.query(&format!("SELECT P.x WHERE entity = {e}"), ()).unwrap();
                            let Value::Float(stored) = read.rows[0][0] else { panic!("{read:?}") };
                            assert_eq!((stored as f32).to_bits(), got.to_bits(), "{expr}, dt {dt}, p {p:?}, v {v:?}");
                            stored_rows += 1;
                        }
                        (Err(_), None) => refused_rows += 1,
                        (want, got) => panic!("{expr}, dt {dt}, p {p:?}, v {v:?}: {want:?} against {got:?}"),
                    }
                }
                assert!(stored_rows > xs.len() / 2, "{expr}, dt {dt}: {stored_rows} rows stored");
                total_refused += refused_rows;
            }
        }
        assert!(total_refused > 0, "some values are too large for an f32");
    }
}
