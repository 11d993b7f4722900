//! Differential tests of the compiled tier against the evaluator: random expressions over a
//! table of awkward values (NaN, ±0, infinities, extreme integers), evaluated both ways over
//! every row and over a scattered list of rows.

use ecsdb_engine::storage::{FieldPlace, FieldView, TableId};
use ecsdb_engine::{ComponentDef, FieldRows, FieldType, TypedFieldValues, Value, ValueType, World};
use proptest::prelude::*;

use crate::error::{Error, ErrorKind, Span};
use crate::execute::leaves::gather_field;
use crate::expr::compiled::{CHUNK, Chunk, ChunkBuffers, Columns, Program, RowSet};
use crate::expr::{Evaluator, Leaves, Prim, Vector};
use crate::expr::{Expr, ExprKind};
use crate::functions::Function;
use crate::types::BinaryOp;
use crate::types::Builtin;

/// Rows in the table: two full chunks and a partial one.
const ROWS: usize = 150;

/// One table's columns, read by the evaluator through plain gathers (no compiled tier); the
/// compiled tier reads string fields' heads from `heads`' world, where it is set.
struct Table<'w> {
    views: Vec<Vec<FieldView<'w>>>,
    heads: Option<(&'w World, TableId)>,
}

impl<'w> Columns<'w> for Table<'w> {
    fn column(&self, slot: usize, field: usize) -> Option<FieldView<'w>> {
        self.views.get(slot)?.get(field).copied()
    }

    fn field_count(&self, slot: usize) -> usize {
        self.views.get(slot).map_or(0, Vec::len)
    }

    fn string_heads(&self, slot: usize, field: usize) -> Option<ecsdb_engine::storage::StringHeads> {
        let (world, t) = self.heads?;
        let id = world.component_id(["T", "V"].get(slot)?).ok()?;
        world.table_string_heads(t, id, field)
    }
}

impl<'w> Leaves<'w> for Table<'w> {
    fn leaf(&self, e: &Expr, rows: &[u32]) -> Result<Vector<'w>, Error> {
        let bad = || Error::new(ErrorKind::Type, "no such leaf here");
        match &e.kind {
            ExprKind::Field { slot, field } => {
                let view = self.column(*slot, *field).ok_or_else(bad)?;
                gather_field(&view, rows).map_err(|_| Error::new(ErrorKind::Type, "u64 out of range"))
            }
            ExprKind::ComponentVector(slot) => {
                let coords: Vec<Vector<'w>> = (0..self.field_count(*slot))
                    .map(|f| gather_field(&self.views[*slot][f], rows).map_err(|_| bad()))
                    .collect::<Result<_, _>>()?;
                let xs: Vec<Vec<f64>> = coords
                    .iter()
                    .map(|c| c.f64s().map(|(v, _)| v.into_owned()))
                    .collect::<Option<_>>()
                    .ok_or_else(bad)?;
                Ok(Vector::Vec3(Prim::all((0..rows.len()).map(|i| [xs[0][i], xs[1][i], xs[2][i]]).collect())))
            }
            _ => Err(bad()),
        }
    }
}

const FLOATS: [f64; 12] =
    [0.0, -0.0, 1.5, -2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3.0, 1e-310, 1e300, -7.25, 200.0];
const INTS: [i64; 10] = [0, 1, -1, 7, -8, i64::MAX, i64::MIN, 3, 1 << 40, 5];

/// Compiles `e` with its constants computed by the evaluator, as execution does.
fn compile_with<'w>(e: &Expr, cols: &dyn Columns<'w>, params: &[Value]) -> Option<Program<'w>> {
    let constants = |c: &Expr| Evaluator::new(&crate::expr::NoRows, params).eval_one(c).ok();
    crate::expr::compiled::compile(e, cols, &constants)
}

fn world() -> (World, TableId) {
    let mut world = World::new();
    let t = ComponentDef::new(
        "T",
        &[
            ("f", FieldType::F32),
            ("d", FieldType::F64),
            ("i", FieldType::I32),
            ("l", FieldType::I64),
            ("u", FieldType::U64),
            ("b", FieldType::Bool),
            ("s", FieldType::String),
        ],
    );
    world.define_component(&t).unwrap();
    let v = ComponentDef::new("V", &[("x", FieldType::F32), ("y", FieldType::F32), ("z", FieldType::F32)]);
    world.define_component(&v).unwrap();
    let mut last = None;
    for r in 0..ROWS {
        // f32 fields hold the nearest f32 (1e300 becomes infinity).
        let f = FLOATS[r % FLOATS.len()] as f32 as f64;
        let d = FLOATS[(r * 7 + 3) % FLOATS.len()];
        let l = INTS[(r * 3 + 1) % INTS.len()];
        let i = INTS[r % INTS.len()].clamp(i32::MIN as i64, i32::MAX as i64);
        // Strings whole in their heads (up to seven bytes) and longer ones.
        let s = ["", "ab", "abc", "zz%", "ΣΑΣ", "b", "abcdefghij", "xΣΑΣΑΣ"][r % 8];
        last = Some(
            world
                .spawn_values(&[
                    (
                        "T",
                        &[
                            ("f", Value::Float(f)),
                            ("d", Value::Float(d)),
                            ("i", Value::Int(i)),
                            ("l", Value::Int(l)),
                            ("u", Value::Int((r % 9) as i64)),
                            ("b", Value::Bool(r % 3 == 0)),
                            ("s", Value::Str(s.into())),
                        ],
                    ),
                    (
                        "V",
                        &[
                            ("x", Value::Float(f)),
                            ("y", Value::Float(FLOATS[(r + 5) % 12] as f32 as f64)),
                            ("z", Value::Float(1.0)),
                        ],
                    ),
                ])
                .unwrap(),
        );
    }
    let table = TableId(world.location(last.unwrap()).unwrap().table);
    // One u64 above i64::MAX: reading it is an error.
    let t = world.component_id("T").unwrap();
    world.write_field_rows(t, 4, FieldRows::Table(table, &[140]), TypedFieldValues::U64(vec![u64::MAX])).unwrap();
    (world, table)
}

fn expr(kind: ExprKind) -> Expr {
    Expr { kind, ty: ValueType::Any, span: Span { start: 0, end: 0 } }
}

fn field(slot: usize, f: usize) -> Expr {
    expr(ExprKind::Field { slot, field: f })
}

fn literal() -> impl Strategy<Value = Expr> {
    let values = vec![
        Value::Int(0),
        Value::Int(1),
        Value::Int(-1),
        Value::Int(2),
        Value::Int(i64::MAX),
        Value::Int(i64::MIN),
        Value::Float(0.0),
        Value::Float(-0.0),
        Value::Float(0.5),
        Value::Float(2.0),
        Value::Float(3.0),
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        Value::Float(1e300),
        Value::Null,
        Value::Bool(true),
        Value::Bool(false),
        Value::Str("ab%".into()),
        Value::Str("%b%".into()),
        Value::Vec3([0.0, 0.0, 0.0]),
        Value::Vec3([1.5, -2.5, 1.0]),
    ];
    prop::sample::select(values).prop_map(|v| expr(ExprKind::Literal(v)))
}

/// Strings the string field holds, and some it does not (null included).
fn string_literal() -> impl Strategy<Value = Expr> {
    let values = ["", "ab", "abc", "zz%", "ΣΑΣ", "b", "abcdefgh", "ΣΑ"].map(|s| Value::Str(s.into()));
    prop::sample::select([values.as_slice(), &[Value::Null]].concat()).prop_map(|v| expr(ExprKind::Literal(v)))
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        4 => (0..7usize).prop_map(|f| field(0, f)),
        2 => (0..3usize).prop_map(|f| field(1, f)),
        1 => Just(expr(ExprKind::ComponentVector(1))),
        1 => Just(expr(ExprKind::Param(0))),
        3 => literal(),
    ]
}

fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    expr(ExprKind::Binary { op, left: Box::new(l), right: Box::new(r) })
}

fn call(b: Builtin, args: Vec<Expr>) -> Expr {
    expr(ExprKind::Call { func: Function::Builtin(b), args })
}

fn number_literal() -> impl Strategy<Value = Expr> {
    let ints = prop::sample::select(INTS.to_vec()).prop_map(Value::Int);
    let floats = prop::sample::select(FLOATS.to_vec()).prop_map(Value::Float);
    prop_oneof![ints, floats, Just(Value::Null)].prop_map(|v| expr(ExprKind::Literal(v)))
}

/// A point: the vector component, a constant, or a vector of numbers.
fn point(num: BoxedStrategy<Expr>) -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(expr(ExprKind::ComponentVector(1))),
        Just(expr(ExprKind::Literal(Value::Vec3([1.5, -2.5, 1.0])))),
        prop::collection::vec(num, 3).prop_map(|items| expr(ExprKind::Vector(items))),
    ]
}

/// Expressions meant to be numbers (ints and floats mixed, with nulls).
fn num_expr() -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        4 => prop::sample::select(vec![0usize, 1, 2, 3, 4]).prop_map(|f| field(0, f)),
        2 => (0..3usize).prop_map(|f| field(1, f)),
        1 => Just(expr(ExprKind::Param(0))),
        3 => number_literal(),
    ];
    let ops = prop::sample::select(vec![BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod]);
    let unary = prop::sample::select(vec![Builtin::Abs, Builtin::Sqrt, Builtin::Floor, Builtin::Ceil, Builtin::Round]);
    leaf.prop_recursive(4, 24, 2, move |inner| {
        prop_oneof![
            4 => (ops.clone(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| bin(op, l, r)),
            1 => inner.clone().prop_map(|x| expr(ExprKind::Neg(Box::new(x)))),
            2 => (unary.clone(), inner.clone()).prop_map(|(b, x)| call(b, vec![x])),
            1 => (any::<bool>(), inner.clone(), inner.clone())
                .prop_map(|(max, a, b)| call(if max { Builtin::Max } else { Builtin::Min }, vec![a, b])),
            1 => (point(inner.clone()), point(inner.clone())).prop_map(|(a, b)| call(Builtin::Distance, vec![a, b])),
        ]
    })
    .boxed()
}

/// Expressions meant to be conditions.
fn cond_expr() -> impl Strategy<Value = Expr> {
    let cmp =
        prop::sample::select(vec![BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge]);
    let leaf = prop_oneof![
        6 => (cmp, num_expr(), num_expr()).prop_map(|(op, l, r)| bin(op, l, r)),
        1 => Just(field(0, 5)),
        1 => prop::sample::select(vec![Value::Bool(true), Value::Bool(false), Value::Null]).prop_map(|v| expr(ExprKind::Literal(v))),
        1 => (num_expr(), any::<bool>()).prop_map(|(x, negated)| expr(ExprKind::IsNull { expr: Box::new(x), negated })),
        1 => (num_expr(), num_expr(), num_expr(), any::<bool>()).prop_map(|(x, lo, hi, negated)| expr(
            ExprKind::Between { expr: Box::new(x), low: Box::new(lo), high: Box::new(hi), negated }
        )),
        2 => (num_expr(), prop::collection::vec(number_literal(), 1..5), any::<bool>())
            .prop_map(|(x, list, negated)| expr(ExprKind::InList { expr: Box::new(x), list, negated })),
        1 => (prop::sample::select(vec![
            "ab%", "%b", "%b%", "abc", "a_c", "", "%", "a%", "ΣΑ%", "%ΑΣ", "ΣΑΣ", "abcdefghi%", "%bcdefghij", "zz%%",
        ]), any::<bool>()).prop_map(|(p, negated)| expr(ExprKind::Like {
            expr: Box::new(field(0, 6)),
            pattern: Box::new(expr(ExprKind::Literal(Value::Str(p.into())))),
            negated
        })),
        1 => (prop::sample::select(vec![BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt]), string_literal(), any::<bool>())
            .prop_map(|(op, s, flip)| if flip { bin(op, s, field(0, 6)) } else { bin(op, field(0, 6), s) }),
        1 => (prop::collection::vec(string_literal(), 1..5), any::<bool>())
            .prop_map(|(list, negated)| expr(ExprKind::InList { expr: Box::new(field(0, 6)), list, negated })),
        1 => (point(num_expr()), point(num_expr()), num_expr()).prop_map(|(p, c, r)| call(Builtin::Within, vec![p, c, r])),
        1 => (point(num_expr()), point(num_expr()), point(num_expr())).prop_map(|(p, l, h)| call(Builtin::Inside, vec![p, l, h])),
    ];
    leaf.prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            2 => (any::<bool>(), inner.clone(), inner.clone())
                .prop_map(|(and, l, r)| bin(if and { BinaryOp::And } else { BinaryOp::Or }, l, r)),
            1 => inner.clone().prop_map(|x| expr(ExprKind::Not(Box::new(x)))),
            1 => (inner.clone(), any::<bool>()).prop_map(|(x, negated)| expr(ExprKind::IsNull { expr: Box::new(x), negated })),
        ]
    })
}

/// Anything: mostly typed shapes, some random mixtures (type errors included).
fn any_expr() -> impl Strategy<Value = Expr> {
    prop_oneof![3 => cond_expr(), 2 => num_expr(), 1 => mixed_expr()]
}

fn mixed_expr() -> impl Strategy<Value = Expr> {
    let ops = prop::sample::select(vec![
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Mod,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::And,
        BinaryOp::Or,
    ]);
    let builtins = prop::sample::select(Builtin::ALL.to_vec());
    leaf().prop_recursive(4, 40, 3, move |inner| {
        prop_oneof![
            4 => (ops.clone(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| expr(ExprKind::Binary {
                op,
                left: Box::new(l),
                right: Box::new(r)
            })),
            1 => inner.clone().prop_map(|x| expr(ExprKind::Neg(Box::new(x)))),
            1 => inner.clone().prop_map(|x| expr(ExprKind::Not(Box::new(x)))),
            1 => (inner.clone(), any::<bool>())
                .prop_map(|(x, negated)| expr(ExprKind::IsNull { expr: Box::new(x), negated })),
            1 => (inner.clone(), inner.clone(), inner.clone(), any::<bool>()).prop_map(|(x, lo, hi, negated)| expr(
                ExprKind::Between { expr: Box::new(x), low: Box::new(lo), high: Box::new(hi), negated }
            )),
            1 => (inner.clone(), prop::collection::vec(literal(), 1..4), any::<bool>())
                .prop_map(|(x, list, negated)| expr(ExprKind::InList { expr: Box::new(x), list, negated })),
            1 => (literal(), any::<bool>()).prop_map(|(p, negated)| expr(ExprKind::Like {
                expr: Box::new(field(0, 6)),
                pattern: Box::new(p),
                negated
            })),
            2 => (builtins.clone(), prop::collection::vec(inner.clone(), 1..4))
                .prop_map(|(b, args)| expr(ExprKind::Call { func: Function::Builtin(b), args })),
        ]
    })
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// Checks one expression over `rows`: where the compiled tier gives an answer, the evaluator
/// gives the same one.
fn check(table: &Table<'_>, e: &Expr, rows: &[u32]) -> Result<(), TestCaseError> {
    let params = [Value::Int(3)];
    let Some(program) = compile_with(e, table, &params) else { return Ok(()) };
    let general = Evaluator::new(table, &params).eval(e, rows);
    let compiled = program.eval(rows);
    let Ok(compiled) = compiled else { return Ok(()) };
    let general = match general {
        Ok(v) => v.into_values(),
        Err(err) => return Err(TestCaseError::fail(format!("{e:?}: compiled ran, evaluator failed: {err:?}"))),
    };
    let got = compiled.into_values();
    prop_assert_eq!(got.len(), general.len());
    for (i, (g, w)) in got.iter().zip(&general).enumerate() {
        prop_assert!(same_value(g, w), "{:?}: row {}: compiled {:?}, evaluator {:?}", e, rows[i], g, w);
    }
    if program.as_cond().is_none() {
        // The float output of sort keys: the same values, ints promoted, nulls marked.
        let (mut xs, mut valid) = (Vec::new(), Vec::new());
        if program.floats(RowSet::List(rows), &mut xs, &mut valid).is_ok() {
            for (i, w) in general.iter().enumerate() {
                let want = w.as_f64();
                let got = valid[i].then_some(xs[i]);
                prop_assert!(
                    want.map(f64::to_bits) == got.map(f64::to_bits)
                        || want.is_some_and(f64::is_nan) && got.is_some_and(f64::is_nan),
                    "{:?}: row {}: floats {:?}, evaluator {:?}",
                    e,
                    rows[i],
                    got,
                    w
                );
            }
        }
    }
    if let Some(cond) = program.as_cond() {
        let want: Vec<u32> =
            rows.iter().zip(&general).filter(|(_, v)| **v == Value::Bool(true)).map(|(r, _)| *r).collect();
        let mut kept = Vec::new();
        if Program::select(cond, rows, &mut kept).is_ok() {
            prop_assert_eq!(&kept, &want, "{:?}", e);
            prop_assert_eq!(Program::count(cond, rows).ok(), Some(want.len()));
        }
    }
    check_f32s(&program, e, rows, &general)
}

/// Where a program's values are computed in f32 for an f32 field ([`Program::f32s`]), over
/// chunks of consecutive rows: each finite one is exactly the evaluator's value narrowed
/// (and that value fits an f32), each NaN a NaN. An infinity makes the UPDATE check the
/// chunk row by row, so it promises nothing; a chunk that gives up promises nothing either.
fn check_f32s(program: &Program<'_>, e: &Expr, rows: &[u32], general: &[Value]) -> Result<(), TestCaseError> {
    let consecutive = rows.windows(2).all(|w| w[1] == w[0] + 1);
    if !program.gives_f32() || rows.is_empty() || !consecutive {
        return Ok(());
    }
    let first = rows[0] as usize;
    let mut buffers = ChunkBuffers::default();
    let mut checked = 0;
    let mut failure = None;
    let _ = RowSet::Range(first, first + rows.len()).for_each_chunk(|chunk| {
        let Chunk::Range { start, .. } = chunk else { unreachable!("a range gives ranges") };
        let done = program.f32s(chunk, &mut buffers, |xs| {
            for (j, got) in xs.iter().enumerate() {
                let want = general[start - first + j].as_f64();
                let agrees = match want {
                    _ if got.is_infinite() => true,
                    Some(w) if got.is_nan() => w.is_nan(),
                    Some(w) => (w as f32).to_bits() == got.to_bits() && !(w as f32).is_infinite(),
                    None => false,
                };
                if !agrees && failure.is_none() {
                    failure = Some(format!("{e:?}: row {}: in f32 {got:?}, evaluator {want:?}", start + j));
                }
                checked += 1;
            }
        });
        assert!(done.is_some(), "{e:?}: a chunk of consecutive rows is computed in f32");
        Ok::<(), ()>(())
    });
    if let Some(f) = failure {
        return Err(TestCaseError::fail(f));
    }
    F32_ROWS_CHECKED.fetch_add(checked, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Rows [`check_f32s`] compared, so a test can tell it compared some.
static F32_ROWS_CHECKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The test table's views: both components, every field.
fn both_components(world: &World, t: TableId) -> Table<'_> {
    let views = [("T", 7), ("V", 3)]
        .iter()
        .map(|(name, n)| {
            let id = world.component_id(name).unwrap();
            (0..*n).map(|f| FieldView::new(world, FieldPlace::Table(t), id, f)).collect()
        })
        .collect();
    Table { views, heads: Some((world, t)) }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn compiled_tier_agrees_with_the_evaluator(e in any_expr()) {
        let (world, t) = world();
        let table = both_components(&world, t);
        let all: Vec<u32> = (0..ROWS as u32).collect();
        check(&table, &e, &all)?;
        let scattered: Vec<u32> = (0..ROWS as u32).filter(|r| r % 3 != 1).collect();
        check(&table, &e, &scattered)?;
    }
}

/// The shapes the tier exists for do compile (a test that the differential one is not
/// comparing nothing).
#[test]
fn common_shapes_compile() {
    let (world, t) = world();
    let id = world.component_id("T").unwrap();
    let views = vec![(0..7).map(|f| FieldView::new(&world, FieldPlace::Table(t), id, f)).collect()];
    let table = Table { views, heads: None };
    let lit = |v: Value| expr(ExprKind::Literal(v));
    let bin = |op, l, r| expr(ExprKind::Binary { op, left: Box::new(l), right: Box::new(r) });
    let half = bin(BinaryOp::Div, field(0, 1), lit(Value::Int(2)));
    let cond = bin(BinaryOp::Lt, field(0, 0), half);
    let program = compile_with(&cond, &table, &[]).expect("compiles");
    let c = program.as_cond().expect("a condition");
    let all: Vec<u32> = (0..ROWS as u32).collect();
    let general = Evaluator::new(&table, &[]).filter(&cond, &all).unwrap();
    assert!(!general.is_empty());
    assert_eq!(Program::count_all(c, ROWS).unwrap(), general.len());
    let mut kept = Vec::new();
    Program::select_all(c, ROWS, &mut kept).unwrap();
    assert_eq!(kept, general);
    // A u64 above i64::MAX gives up, for the evaluator to report.
    let big = bin(BinaryOp::Gt, field(0, 4), lit(Value::Int(0)));
    let program = compile_with(&big, &table, &[]).expect("compiles");
    assert!(Program::count_all(program.as_cond().unwrap(), ROWS).is_err());
    assert!(Evaluator::new(&table, &[]).filter(&big, &all).is_err());
    // Integer overflow gives up too.
    let over = bin(BinaryOp::Add, field(0, 3), lit(Value::Int(i64::MAX)));
    assert!(compile_with(&over, &table, &[]).unwrap().eval(&all).is_err());
}

/// `IN` over a 32-bit field compares in 32-bit lanes: constants outside its range (and at its
/// ends) match exactly the rows the evaluator says, `IN` and `NOT IN`, over all and scattered
/// rows.
#[test]
fn narrow_in_lists_agree_with_the_evaluator() {
    let (world, t) = world();
    let id = world.component_id("T").unwrap();
    let views = vec![(0..7).map(|f| FieldView::new(&world, FieldPlace::Table(t), id, f)).collect()];
    let table = Table { views, heads: None };
    let lit = |v: i64| expr(ExprKind::Literal(Value::Int(v)));
    let all: Vec<u32> = (0..ROWS as u32).collect();
    let scattered: Vec<u32> = (0..ROWS as u32).filter(|r| r % 3 != 1).collect();
    let lists: [&[i64]; 4] = [
        &[7, -8, 3],
        &[i32::MAX as i64, i32::MIN as i64],
        &[i64::MAX, 1 << 40, i32::MAX as i64 + 1, i32::MIN as i64 - 1],
        &[1, i64::MIN, 5, 0],
    ];
    for list in lists {
        for negated in [false, true] {
            let e = expr(ExprKind::InList {
                expr: Box::new(field(0, 2)),
                list: list.iter().map(|&v| lit(v)).collect(),
                negated,
            });
            let program = compile_with(&e, &table, &[]).expect("an IN list of integers compiles");
            assert!(program.as_cond().is_some());
            check(&table, &e, &all).unwrap();
            check(&table, &e, &scattered).unwrap();
        }
    }
}

/// Operations of two fields, each alone or in an affine form (`v * k + c`), read both columns
/// in one walk (`zip_affine`): every comparison, `+ - *`, `min` and `max` over pairs of such
/// sides agree with the evaluator, for fields of one stride (`V.x`, `V.y`), of two strides (`T.f`, `V.x`), f64
/// fields, and an f32 with an f64 (which takes the general path), over NaN, ±0, infinities.
#[test]
fn two_field_operations_agree_with_the_evaluator() {
    let (world, t) = world();
    let table = both_components(&world, t);
    let lit = |v: f64| expr(ExprKind::Literal(Value::Float(v)));
    let sides = [
        field(1, 0),
        field(1, 1),
        bin(BinaryOp::Mul, field(1, 1), lit(2.5)),
        bin(BinaryOp::Mul, lit(-0.5), field(1, 0)),
        bin(BinaryOp::Div, field(1, 0), lit(4.0)),
        field(0, 0),
        field(0, 1),
        bin(BinaryOp::Mul, field(0, 1), lit(3.0)),
        bin(BinaryOp::Add, field(1, 1), lit(1.5)),
        bin(BinaryOp::Sub, lit(2.0), field(1, 0)),
        bin(BinaryOp::Sub, bin(BinaryOp::Mul, field(1, 1), lit(2.0)), lit(3.0)),
        expr(ExprKind::Neg(Box::new(field(1, 0)))),
        bin(BinaryOp::Add, lit(1e300), field(0, 1)),
    ];
    let ops = {
        use BinaryOp::*;
        [Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul]
    };
    let all: Vec<u32> = (0..ROWS as u32).collect();
    let scattered: Vec<u32> = (0..ROWS as u32).filter(|r| r % 3 != 1).collect();
    for a in &sides {
        for b in &sides {
            let min_max = [Builtin::Min, Builtin::Max].map(|f| call(f, vec![a.clone(), b.clone()]));
            for e in ops.map(|op| bin(op, a.clone(), b.clone())).into_iter().chain(min_max) {
                assert!(compile_with(&e, &table, &[]).is_some(), "{e:?} compiles");
                check(&table, &e, &all).unwrap();
                check(&table, &e, &scattered).unwrap();
                // Rows without NaN (`min` and `max` give up on a chunk with one), ±0 among them.
                check(&table, &e, &[0, 1, 2, 3]).unwrap();
            }
        }
    }
    // `±v ± w` and `min`/`max` of `±v + c` over f32 fields were computed in f32 and compared.
    assert!(F32_ROWS_CHECKED.load(std::sync::atomic::Ordering::Relaxed) > 1000);
}

/// Which two-field operations an f32 field's new value may compute in f32: those that round
/// once at most (and `min`/`max` of sides that cannot round to zero), never one whose f32
/// result could differ from the f64 result narrowed.
#[test]
fn f32_arithmetic_only_where_it_rounds_as_f64_does() {
    let (world, t) = world();
    let table = both_components(&world, t);
    let lit = |v: f64| expr(ExprKind::Literal(Value::Float(v)));
    let exact = |e: &Expr| compile_with(e, &table, &[]).expect("compiles").exact_in_f32();
    let (x, y) = (field(1, 0), field(1, 1));
    let neg = |e: Expr| expr(ExprKind::Neg(Box::new(e)));
    for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul] {
        assert!(exact(&bin(op, x.clone(), y.clone())), "{op:?}");
        // Not a pair: `-v` flips the sign of a NaN, which the pair's `v * -1` would keep.
        assert!(!exact(&bin(op, neg(x.clone()), y.clone())), "{op:?} of -v");
        // A scaled or shifted side rounds first.
        assert!(!exact(&bin(op, bin(BinaryOp::Mul, x.clone(), lit(2.5)), y.clone())), "{op:?} of v * k");
        assert!(!exact(&bin(op, bin(BinaryOp::Add, x.clone(), lit(1.5)), y.clone())), "{op:?} of v + c");
        // An f64 field is not narrowed.
        assert!(!exact(&bin(op, field(0, 1), field(0, 1))), "{op:?} of f64 fields");
    }
    assert!(!exact(&bin(BinaryOp::Div, x.clone(), y.clone())), "a quotient may be null");
    // One field: alone, negated, with an f32 constant or scaled by a power of two.
    assert!(exact(&x) && exact(&neg(x.clone())));
    assert!(exact(&bin(BinaryOp::Add, x.clone(), lit(1.5))) && exact(&bin(BinaryOp::Sub, lit(2.0), x.clone())));
    assert!(exact(&bin(BinaryOp::Mul, x.clone(), lit(2.5))) && exact(&bin(BinaryOp::Div, x.clone(), lit(4.0))));
    assert!(!exact(&bin(BinaryOp::Mul, x.clone(), lit(0.1))), "0.1 is no f32");
    assert!(!exact(&bin(BinaryOp::Div, x.clone(), lit(3.0))), "a quotient");
    assert!(!exact(&bin(BinaryOp::Add, bin(BinaryOp::Mul, x.clone(), lit(2.5)), lit(1.0))), "two roundings");
    assert!(!exact(&field(0, 1)), "an f64 field");
    for f in [Builtin::Min, Builtin::Max] {
        let of = |a: Expr, b: Expr| call(f, vec![a, b]);
        assert!(exact(&of(x.clone(), bin(BinaryOp::Add, y.clone(), lit(5.0)))));
        assert!(exact(&of(bin(BinaryOp::Sub, lit(2.0), x.clone()), y.clone())));
        // 0.1 is no f32; a product may round to a zero of the other sign.
        assert!(!exact(&of(x.clone(), bin(BinaryOp::Add, y.clone(), lit(0.1)))));
        assert!(!exact(&of(x.clone(), bin(BinaryOp::Mul, y.clone(), lit(0.5)))));
    }
}

/// f32 values of every kind: random bit patterns (subnormals, huge, NaN payloads among
/// them) and the edges, NaN and infinities only in the first two chunks.
pub(crate) fn awkward_f32s(n: usize, seed: u64) -> Vec<f32> {
    let edges = [0.0, -0.0, 1.0, -1.5, f32::MAX, f32::MIN, f32::MIN_POSITIVE, 1e-45, -1e-45, f32::INFINITY, f32::NAN];
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ seed;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        f32::from_bits((state >> 32) as u32)
    };
    // NaN and infinities only in the first two chunks: `min` and `max` give up on a chunk
    // with one, and the other chunks are there to be compared.
    (0..n)
        .map(|i| if i % 5 == 0 { edges[i / 5 % edges.len()] } else { random() })
        .enumerate()
        .map(|(i, x)| if x.is_finite() || i < 2 * CHUNK { x } else { 0.75 })
        .collect()
}

/// One f32 field in one operation with a constant, over random bit patterns: where the
/// operation is computed in f32 for an f32 field, it gives the evaluator's value narrowed.
#[test]
fn one_field_f32_results_are_the_f64_results_narrowed() {
    let rows = 2048;
    let mut world = World::new();
    let id = world.define_component(&ComponentDef::new("P", &[("a", FieldType::F32)])).unwrap();
    let mut last = None;
    for a in awkward_f32s(rows, 3) {
        last = Some(world.spawn_values(&[("P", &[("a", Value::Float(a as f64))])]).unwrap());
    }
    let t = TableId(world.location(last.unwrap()).unwrap().table);
    let table = Table { views: vec![vec![FieldView::new(&world, FieldPlace::Table(t), id, 0)]], heads: None };
    let lit = |v: f64| expr(ExprKind::Literal(Value::Float(v)));
    let x = || field(0, 0);
    let all: Vec<u32> = (0..rows as u32).collect();
    let before = F32_ROWS_CHECKED.load(std::sync::atomic::Ordering::Relaxed);
    let mut forms = vec![x(), expr(ExprKind::Neg(Box::new(x()))), bin(BinaryOp::Div, x(), lit(4.0))];
    for c in [1.5, -0.5, 3.0, 1e30f32 as f64, f32::MAX as f64, 1e-45f32 as f64, 0.1, 1e300] {
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul] {
            forms.push(bin(op, x(), lit(c)));
            forms.push(bin(op, lit(c), x()));
        }
    }
    for e in &forms {
        check(&table, e, &all).unwrap();
    }
    let checked = F32_ROWS_CHECKED.load(std::sync::atomic::Ordering::Relaxed) - before;
    assert!(checked >= 20 * rows, "{checked} rows compared");
}

/// String `=`, `!=`, `IN` and `LIKE` prefixes compile on a table with string heads, and agree
/// with the evaluator over all and scattered rows.
#[test]
fn string_tests_compile_on_heads() {
    let (world, t) = world();
    let table = both_components(&world, t);
    let s = |v: &str| expr(ExprKind::Literal(Value::Str(v.into())));
    let like = |p: &str| expr(ExprKind::Like { expr: Box::new(field(0, 6)), pattern: Box::new(s(p)), negated: false });
    let shapes = [
        bin(BinaryOp::Eq, field(0, 6), s("abc")),
        bin(BinaryOp::Ne, s(""), field(0, 6)),
        expr(ExprKind::InList { expr: Box::new(field(0, 6)), list: vec![s("ab"), s("ΣΑΣ"), s("q")], negated: true }),
        like("ab%"),
        like("ΣΑ%"),
        like("abcdefgh%"),
    ];
    for e in &shapes {
        assert!(compile_with(e, &table, &[]).is_some(), "{e:?} compiles");
        let all: Vec<u32> = (0..ROWS as u32).collect();
        check(&table, e, &all).unwrap();
        let scattered: Vec<u32> = (0..ROWS as u32).filter(|r| r % 3 != 1).collect();
        check(&table, e, &scattered).unwrap();
    }
}
