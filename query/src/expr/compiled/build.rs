//! The compiler of the compiled tier: a bound expression and the columns of one table become
//! a tree of typed nodes, or `None` where the expression needs the general evaluator (strings
//! other than `LIKE` on a field, entities, objects, paths, sparse components, values of
//! run-time type, registered functions).
//!
//! Parts that read no row (constants, parameters, `[$x * 2, 0]`) are computed here once, by
//! the evaluator, and become constants; an error there leaves the whole expression to the
//! evaluator, which reports it where it would.

use ecsdb_engine::Value;
use ecsdb_engine::storage::{FieldColumn, FieldView, StringHeads};

use crate::expr::compiled::cond::{CondNode, LikeOnHeads};
use crate::expr::compiled::num::{FloatFn, FloatNode, IntNode, exact_reciprocal};
use crate::expr::compiled::pair::{FieldPair, NO_ADD, PairColumns};
use crate::expr::compiled::{ArithOp, PairOp};
use crate::expr::compiled::{Program, float_leaf};
use crate::expr::like::{HeadTest, LikeMatcher, ShortTest};
use crate::expr::{Expr, ExprKind};
use crate::functions::Function;
use crate::types::BinaryOp;
use crate::types::Builtin;

/// The longest list of strings `IN` compiles (a test a string per row): longer lists go to the
/// evaluator's set.
pub const MAX_STRING_IN: usize = 16;

/// The columns of the table an expression is compiled against.
pub trait Columns<'w> {
    /// The typed view of field `field` of the component in `slot`, when every row of the
    /// table holds it in a column of the table; `None` otherwise (a sparse or absent
    /// component, which the general evaluator reads).
    fn column(&self, slot: usize, field: usize) -> Option<FieldView<'w>>;

    /// The number of fields of the component in `slot`.
    fn field_count(&self, slot: usize) -> usize;

    /// The heads of string field `field` of the component in `slot` (see
    /// [`World::table_string_heads`](ecsdb_engine::World::table_string_heads)), where
    /// [`Columns::column`] reads the field; `None` to read the strings themselves.
    fn string_heads(&self, slot: usize, field: usize) -> Option<StringHeads> {
        let _ = (slot, field);
        None
    }
}

/// A compiled sub-expression, by type.
enum Typed<'w> {
    /// Only null (a null constant, or an operator applied to one).
    Null,
    Float(FloatNode<'w>),
    Int(IntNode<'w>),
    Cond(CondNode<'w>),
    /// A string field, with its slot and field (only `LIKE`, `=` and `!=` read one here).
    Str(FieldColumn<'w, String>, usize, usize),
    /// A 2- or 3-vector, per coordinate.
    Point(Vec<FloatNode<'w>>),
}

/// The value of an expression that reads no row (with the statement's parameters bound),
/// or `None` if it cannot be computed: how the compiler gets its constants (the caller's
/// evaluator, so that both tiers agree on every constant).
pub type Constants<'c> = &'c dyn Fn(&Expr) -> Option<Value>;

/// Compiles `e` against `cols`, its row-free parts computed by `constants`; `None` where the
/// general evaluator must run it.
pub fn compile<'w>(e: &Expr, cols: &dyn Columns<'w>, constants: Constants<'_>) -> Option<Program<'w>> {
    match (Compiler { cols, constants }).node(e)? {
        Typed::Float(f) => Some(Program::Float(f)),
        Typed::Int(i) => Some(Program::Int(i)),
        Typed::Cond(c) => Some(Program::Cond(c)),
        Typed::Null | Typed::Str(..) | Typed::Point(_) => None,
    }
}

struct Compiler<'c, 'w> {
    cols: &'c dyn Columns<'w>,
    constants: Constants<'c>,
}

/// The comparison operator `op` is, if it is one.
fn cmp_op(op: BinaryOp) -> Option<BinaryOp> {
    op.is_comparison().then_some(op)
}

fn arith_op(op: BinaryOp) -> Option<ArithOp> {
    Some(match op {
        BinaryOp::Add => ArithOp::Add,
        BinaryOp::Sub => ArithOp::Sub,
        BinaryOp::Mul => ArithOp::Mul,
        BinaryOp::Div => ArithOp::Div,
        BinaryOp::Mod => ArithOp::Rem,
        _ => return None,
    })
}

fn boxed<T>(t: T) -> Box<T> {
    Box::new(t)
}

/// A number as a float node (ints promoted).
fn float(t: Typed<'_>) -> Option<FloatNode<'_>> {
    match t {
        Typed::Float(f) => Some(f),
        Typed::Int(IntNode::Const(k)) => Some(FloatNode::Const(k as f64)),
        Typed::Int(i) => Some(FloatNode::FromInt(boxed(i))),
        _ => None,
    }
}

/// A condition (a null constant is the null condition).
fn cond(t: Typed<'_>) -> Option<CondNode<'_>> {
    match t {
        Typed::Cond(c) => Some(c),
        Typed::Null => Some(CondNode::Const(None)),
        _ => None,
    }
}

fn not(c: CondNode<'_>, negated: bool) -> CondNode<'_> {
    if negated { CondNode::Not(boxed(c)) } else { c }
}

/// Whether evaluating it can give up on some row (see [`FloatNode::can_bail`]).
fn can_bail(t: &Typed<'_>) -> bool {
    match t {
        Typed::Float(f) => f.can_bail(),
        Typed::Int(i) => i.can_bail(),
        Typed::Cond(c) => c.can_bail(),
        Typed::Point(coords) => coords.iter().any(FloatNode::can_bail),
        Typed::Null | Typed::Str(..) => false,
    }
}

/// The null an operator gives for a null operand, unless that would drop an operand that can
/// fail: the evaluator evaluates every operand first, and its error comes before the null.
fn null_unless_failing<'w>(operands: &[&Typed<'w>], null: Typed<'w>) -> Option<Typed<'w>> {
    (!operands.iter().any(|t| can_bail(t))).then_some(null)
}

fn is_const(t: &Typed<'_>) -> bool {
    matches!(t, Typed::Float(FloatNode::Const(_)) | Typed::Int(IntNode::Const(_)))
}

impl<'w> Compiler<'_, 'w> {
    fn node(&self, e: &Expr) -> Option<Typed<'w>> {
        if !e.reads_row() {
            let v = (self.constants)(e)?;
            return constant(&v);
        }
        Some(match &e.kind {
            ExprKind::Field { slot, field } => match self.cols.column(*slot, *field)? {
                FieldView::Bool(c) => Typed::Cond(CondNode::Field(c)),
                view if view.is_int() || matches!(view, FieldView::U64(_)) => Typed::Int(IntNode::Field(view)),
                FieldView::Str(c) => Typed::Str(c, *slot, *field),
                view => Typed::Float(float_leaf(&view)?),
            },
            ExprKind::ComponentVector(slot) => {
                let n = self.cols.field_count(*slot);
                if n != 2 && n != 3 {
                    return None;
                }
                let coords = (0..n)
                    .map(|f| match self.cols.column(*slot, f)? {
                        FieldView::F32(c) => Some(FloatNode::F32(c)),
                        FieldView::F64(c) => Some(FloatNode::F64(c)),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Typed::Point(coords)
            }
            ExprKind::Vector(items) => {
                if items.len() != 2 && items.len() != 3 {
                    return None;
                }
                let items: Vec<Typed<'w>> = items.iter().map(|i| self.node(i)).collect::<Option<_>>()?;
                if items.iter().any(|t| matches!(t, Typed::Null)) {
                    return null_unless_failing(&items.iter().collect::<Vec<_>>(), Typed::Null);
                }
                Typed::Point(items.into_iter().map(float).collect::<Option<_>>()?)
            }
            ExprKind::Neg(x) => match self.node(x)? {
                Typed::Null => Typed::Null,
                Typed::Int(i) => Typed::Int(IntNode::Neg(boxed(i))),
                Typed::Float(f) => Typed::Float(FloatNode::Neg(boxed(f))),
                _ => return None,
            },
            ExprKind::Not(x) => Typed::Cond(CondNode::Not(boxed(cond(self.node(x)?)?))),
            ExprKind::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right } => {
                let (a, b) = (boxed(cond(self.node(left)?)?), boxed(cond(self.node(right)?)?));
                Typed::Cond(if *op == BinaryOp::And { CondNode::And(a, b) } else { CondNode::Or(a, b) })
            }
            ExprKind::Binary { op, left, right } => match self.string_equality(*op, left, right) {
                Some(t) => t,
                None => self.binary(*op, self.node(left)?, self.node(right)?)?,
            },
            ExprKind::Between { expr, low, high, negated } => {
                let ge = self.binary(BinaryOp::Ge, self.node(expr)?, self.node(low)?)?;
                let le = self.binary(BinaryOp::Le, self.node(expr)?, self.node(high)?)?;
                Typed::Cond(not(CondNode::And(boxed(cond(ge)?), boxed(cond(le)?)), *negated))
            }
            ExprKind::IsNull { expr, negated } => {
                let test = match self.node(expr)? {
                    Typed::Null => CondNode::Const(Some(true)),
                    Typed::Float(f) => CondNode::FloatIsNull(boxed(f)),
                    Typed::Int(i) => CondNode::IntIsNull(boxed(i)),
                    Typed::Cond(c) => CondNode::CondIsNull(boxed(c)),
                    _ => return None,
                };
                Typed::Cond(not(test, *negated))
            }
            ExprKind::InList { expr, list, negated } => self.in_list(expr, list, *negated)?,
            ExprKind::Like { expr, pattern, negated } => {
                let Typed::Str(col, slot, field) = self.node(expr)? else { return None };
                if pattern.reads_row() {
                    return None;
                }
                match (self.constants)(pattern)? {
                    Value::Str(p) => Typed::Cond(not(self.like(col, slot, field, LikeMatcher::new(&p)), *negated)),
                    Value::Null => Typed::Null,
                    _ => return None,
                }
            }
            ExprKind::Call { func: Function::Builtin(b), args } => self.builtin(*b, args)?,
            _ => return None,
        })
    }

    /// `s = 'text'` or `s != 'text'` (either way round) for a string field `s`: an exact
    /// `LIKE` (a string field is never null; a null constant makes the comparison null).
    fn string_equality(&self, op: BinaryOp, left: &Expr, right: &Expr) -> Option<Typed<'w>> {
        let negated = match op {
            BinaryOp::Eq => false,
            BinaryOp::Ne => true,
            _ => return None,
        };
        let (field, constant) = if right.reads_row() { (right, left) } else { (left, right) };
        if !matches!(field.kind, ExprKind::Field { .. }) || constant.reads_row() {
            return None;
        }
        let Typed::Str(col, slot, f) = self.node(field)? else { return None };
        match (self.constants)(constant)? {
            Value::Str(p) => Some(Typed::Cond(not(self.like(col, slot, f, LikeMatcher::Exact(p)), negated))),
            Value::Null => Some(Typed::Null),
            _ => None,
        }
    }

    /// `col LIKE` a compiled pattern, on the field's string heads (see [`LikeOnHeads`]) where
    /// the pattern has a test on them (all but wildcards and `%`).
    fn like(&self, col: FieldColumn<'w, String>, slot: usize, field: usize, matcher: LikeMatcher) -> CondNode<'w> {
        let has_test = HeadTest::new(&matcher).is_some() || ShortTest::new(&matcher).is_some();
        let heads = if has_test { self.cols.string_heads(slot, field) } else { None };
        like_on(col, heads.as_ref(), matcher)
    }

    /// `a op b` for arithmetic and comparisons.
    fn binary(&self, op: BinaryOp, a: Typed<'w>, b: Typed<'w>) -> Option<Typed<'w>> {
        if matches!(a, Typed::Null) || matches!(b, Typed::Null) {
            let null = match (arith_op(op), cmp_op(op)) {
                (Some(_), _) => Typed::Null,
                (_, Some(_)) => Typed::Cond(CondNode::Const(None)),
                _ => return None,
            };
            return null_unless_failing(&[&a, &b], null);
        }
        if let Some(cmp) = cmp_op(op) {
            // A constant goes on the right, where the kernels keep it in a register.
            let (cmp, a, b) = if is_const(&a) && !is_const(&b) { (cmp_op(op.flip())?, b, a) } else { (cmp, a, b) };
            return Some(Typed::Cond(match (a, b) {
                (Typed::Int(x), Typed::Int(y)) => CondNode::CmpInt(cmp, boxed(x), boxed(y)),
                (x, y) => {
                    let (x, y) = (float(x)?, float(y)?);
                    let pair = field_pair(&x, &y);
                    let general = CondNode::CmpFloat(cmp, boxed(x), boxed(y));
                    match pair {
                        Some(pair) => CondNode::PairCmp(cmp, boxed(pair), boxed(general)),
                        None => general,
                    }
                }
            }));
        }
        let op = arith_op(op)?;
        Some(match (a, b) {
            (Typed::Int(x), Typed::Int(y)) => Typed::Int(IntNode::Arith(op, boxed(x), boxed(y))),
            (x, y) => {
                let (x, y) = (float(x)?, float(y)?);
                let reciprocal = match (op, &y) {
                    (ArithOp::Div, FloatNode::Const(k)) => exact_reciprocal(*k),
                    _ => None,
                };
                match reciprocal {
                    Some(r) => Typed::Float(FloatNode::Scale(boxed(x), r)),
                    None => Typed::Float(paired(PairOp::Arith(op), FloatNode::Arith, op, x, y)),
                }
            }
        })
    }

    /// `x [NOT] IN (constants)`.
    fn in_list(&self, expr: &Expr, list: &[Expr], negated: bool) -> Option<Typed<'w>> {
        if list.is_empty() || list.iter().any(Expr::reads_row) {
            return None;
        }
        let items: Vec<Value> = list.iter().map(|e| (self.constants)(e)).collect::<Option<_>>()?;
        let test = match self.node(expr)? {
            Typed::Int(x) => {
                // Ints against ints only: a float in the list compares through f64 (see
                // `InSet`), which the evaluator handles.
                let ints = items.iter().map(|v| if let Value::Int(i) = v { Some(*i) } else { None });
                CondNode::IntIn(boxed(x), ints.collect::<Option<_>>()?)
            }
            Typed::Float(x) => {
                let floats = items.iter().map(|v| match v {
                    Value::Int(_) | Value::Float(_) => v.as_f64().filter(|f| !f.is_nan()),
                    _ => None,
                });
                CondNode::FloatIn(boxed(x), floats.collect::<Option<_>>()?)
            }
            Typed::Str(col, slot, field) if items.len() <= MAX_STRING_IN => {
                // Strings against strings only (a null in the list is the evaluator's): one
                // exact test a string, on the field's heads when it has them.
                let heads = self.cols.string_heads(slot, field);
                let mut tests = items.into_iter().map(|v| match v {
                    Value::Str(p) => Some(like_on(col, heads.as_ref(), LikeMatcher::Exact(p))),
                    _ => None,
                });
                let first = tests.next()??;
                tests.try_fold(first, |any, t| Some(CondNode::Or(boxed(any), boxed(t?))))?
            }
            _ => return None,
        };
        Some(Typed::Cond(not(test, negated)))
    }

    fn builtin(&self, b: Builtin, args: &[Expr]) -> Option<Typed<'w>> {
        let args: Vec<Typed<'w>> = args.iter().map(|a| self.node(a)).collect::<Option<_>>()?;
        if args.iter().any(|a| matches!(a, Typed::Null)) {
            return null_unless_failing(&args.iter().collect::<Vec<_>>(), Typed::Null);
        }
        let mut args = args.into_iter();
        let mut next = || args.next();
        Some(match b {
            Builtin::Abs | Builtin::Floor | Builtin::Ceil | Builtin::Round | Builtin::Sqrt => {
                let x = next()?;
                if next().is_some() {
                    return None;
                }
                let f = match b {
                    Builtin::Abs => FloatFn::Abs,
                    Builtin::Floor => FloatFn::Floor,
                    Builtin::Ceil => FloatFn::Ceil,
                    Builtin::Round => FloatFn::Round,
                    _ => FloatFn::Sqrt,
                };
                match (f, x) {
                    (FloatFn::Abs, Typed::Int(i)) => Typed::Int(IntNode::Abs(boxed(i))),
                    // An integer is its own floor, ceiling and rounding.
                    (FloatFn::Floor | FloatFn::Ceil | FloatFn::Round, Typed::Int(i)) => Typed::Int(i),
                    (f, x) => Typed::Float(FloatNode::Func(f, boxed(float(x)?))),
                }
            }
            Builtin::Min | Builtin::Max => {
                let (x, y) = (next()?, next()?);
                if next().is_some() {
                    return None;
                }
                let max = b == Builtin::Max;
                match (x, y) {
                    (Typed::Int(x), Typed::Int(y)) => Typed::Int(IntNode::MinMax(max, boxed(x), boxed(y))),
                    (x, y) => Typed::Float(paired(PairOp::MinMax(max), FloatNode::MinMax, max, float(x)?, float(y)?)),
                }
            }
            Builtin::Distance => {
                let (Typed::Point(a), Typed::Point(c)) = (next()?, next()?) else { return None };
                Typed::Float(distance(a, c)?)
            }
            Builtin::Within => {
                let (Typed::Point(p), Typed::Point(c), r) = (next()?, next()?, next()?) else { return None };
                if p.len() != c.len() {
                    return None;
                }
                Typed::Cond(CondNode::Within(p.into_iter().zip(c).collect(), boxed(float(r)?)))
            }
            Builtin::Inside => {
                let (Typed::Point(p), Typed::Point(lo), Typed::Point(hi)) = (next()?, next()?, next()?) else {
                    return None;
                };
                if p.len() != lo.len() || p.len() != hi.len() {
                    return None;
                }
                let axes = p.into_iter().zip(lo).zip(hi).map(|((p, l), h)| (p, l, h)).collect();
                Typed::Cond(CondNode::Inside(axes))
            }
            Builtin::Len | Builtin::Lower | Builtin::Upper => return None,
        })
    }
}

fn distance<'w>(a: Vec<FloatNode<'w>>, b: Vec<FloatNode<'w>>) -> Option<FloatNode<'w>> {
    (a.len() == b.len()).then(|| FloatNode::Distance(a.into_iter().zip(b).collect()))
}

/// A constant value as a compiled node.
/// `col LIKE matcher`, on `heads` (the field's) where the pattern has a test on them.
fn like_on<'w>(col: FieldColumn<'w, String>, heads: Option<&StringHeads>, matcher: LikeMatcher) -> CondNode<'w> {
    let on_heads = heads.and_then(|h| match (HeadTest::new(&matcher), ShortTest::new(&matcher)) {
        (Some(test), _) => Some(LikeOnHeads::Head(h.clone(), test)),
        (None, Some(test)) => Some(LikeOnHeads::Short(h.clone(), test)),
        (None, None) => None,
    });
    CondNode::Like(col, matcher, on_heads.map(Box::new))
}

fn constant<'w>(v: &Value) -> Option<Typed<'w>> {
    Some(match v {
        Value::Null => Typed::Null,
        Value::Bool(b) => Typed::Cond(CondNode::Const(Some(*b))),
        Value::Int(i) => Typed::Int(IntNode::Const(*i)),
        Value::Float(f) => Typed::Float(FloatNode::Const(*f)),
        Value::Vec2(p) => Typed::Point(p.iter().map(|x| FloatNode::Const(*x)).collect()),
        Value::Vec3(p) => Typed::Point(p.iter().map(|x| FloatNode::Const(*x)).collect()),
        _ => return None,
    })
}

/// `general(arg, a, b)`, or the [`FloatNode::Pair`] standing for it when `a` and `b` are two
/// fields read together (`+ - *` only: a pair does not divide).
fn paired<'w, A>(
    op: PairOp,
    general: fn(A, Box<FloatNode<'w>>, Box<FloatNode<'w>>) -> FloatNode<'w>,
    arg: A,
    a: FloatNode<'w>,
    b: FloatNode<'w>,
) -> FloatNode<'w> {
    let divides = matches!(op, PairOp::Arith(ArithOp::Div | ArithOp::Rem));
    let pair = if divides { None } else { field_pair(&a, &b) };
    let general = general(arg, boxed(a), boxed(b));
    match pair {
        Some(pair) => FloatNode::Pair(op, boxed(pair), boxed(general)),
        None => general,
    }
}

/// The [`FieldPair`] for `a` and `b`, when both are fields of one float type in an affine
/// form.
pub fn field_pair<'w>(a: &FloatNode<'w>, b: &FloatNode<'w>) -> Option<FieldPair<'w>> {
    let ((x, kx, cx), (y, ky, cy)) = (affine(a)?, affine(b)?);
    let columns = match (x, y) {
        (FloatNode::F32(x), FloatNode::F32(y)) => PairColumns::F32(*x, *y),
        (FloatNode::F64(x), FloatNode::F64(y)) => PairColumns::F64(*x, *y),
        _ => return None,
    };
    Some(FieldPair::new(columns, (kx, cx), (ky, cy)))
}

/// A field in an affine form, as `(field, k, c)` for `v * k + c`: the field alone, times a
/// constant or divided by a power of two ([`FloatNode::Scale`]), plus or minus a constant, or
/// such a product plus or minus one. Each form is exactly its expression: `v *
/// 1.0` is `v` and `x + -0.0` is `x` for every float (NaN and -0 included), `v - c` is `v +
/// -c` and `c - v` is `-v + c` in IEEE arithmetic.
fn affine<'n, 'w>(node: &'n FloatNode<'w>) -> Option<(&'n FloatNode<'w>, f64, f64)> {
    if let Some((leaf, k)) = scaled(node) {
        return Some((leaf, k, NO_ADD));
    }
    let FloatNode::Arith(op, a, b) = node else { return None };
    match (&**a, &**b, op) {
        (x, FloatNode::Const(c), ArithOp::Add) | (FloatNode::Const(c), x, ArithOp::Add) => {
            scaled(x).map(|(leaf, k)| (leaf, k, *c))
        }
        (x, FloatNode::Const(c), ArithOp::Sub) => scaled(x).map(|(leaf, k)| (leaf, k, -*c)),
        (FloatNode::Const(c), x, ArithOp::Sub) => scaled(x).map(|(leaf, k)| (leaf, -k, *c)),
        _ => None,
    }
}

/// A field times a constant, as `(field, k)`: the multiplying part of [`affine`].
fn scaled<'n, 'w>(node: &'n FloatNode<'w>) -> Option<(&'n FloatNode<'w>, f64)> {
    match node {
        FloatNode::F32(_) | FloatNode::F64(_) => Some((node, 1.0)),
        FloatNode::Scale(a, k) if a.is_leaf() => Some((&**a, *k)),
        // Not a negation (`-v`): it flips the sign of a NaN, where `v * -1` keeps it.
        FloatNode::Arith(ArithOp::Mul, a, b) => match (&**a, &**b) {
            (leaf, FloatNode::Const(k)) | (FloatNode::Const(k), leaf) if leaf.is_leaf() => Some((leaf, *k)),
            _ => None,
        },
        _ => None,
    }
}
