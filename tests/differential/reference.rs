//! A deliberately simple reference evaluator: walks the parsed AST row by row over the plain
//! [`Model`], following `docs/query-language.md` literally. Obviously correct, not fast: every
//! row is a `BTreeMap` lookup, every expression a tree walk over `Value`s.
//!
//! Choices where the spec is silent (SQLite's, as the spec asks, and as `query/src` documents
//! them):
//! - null in, null out for operators and scalar functions (`AND`/`OR` three-valued, `IS NULL`);
//!   `min(a, b)` / `max(a, b)` are null when either is null (SQLite);
//! - `int ∘ int` is an int (`/` truncates, `%` takes the dividend's sign), `/` and `%` by zero
//!   (int or float) are null, mixed int/float promotes to float, `%` on floats is the remainder
//!   of truncated division; an int overflow is [`RefError::Overflow`] and the case is skipped;
//! - `abs`, `floor`, `ceil`, `round` keep the number's type; `round` is half away from zero;
//!   `sqrt` is a float, null for negative input; `len` counts characters;
//! - `x IN ()` is false and `x NOT IN ()` true, even for null `x` (SQLite);
//! - `||` turns ints, bools and entities into text;
//! - a vector literal with a null element is null;
//! - ORDER BY: null is the smallest value (first ascending, last descending); `-0.0 = 0.0`;
//!   rows tying on every key come in ascending entity order. Groups have no entity: groups
//!   tying on every key form one "run" whose order is unspecified.
//! - a select item `C` (a bare component) is the component as an object, even when it is
//!   vector-like; inside an expression a vector-like component reads as a vector;
//! - paths and `depth` / `root` / `descendant_of` follow the model's data as
//!   `differential/relations.rs` describes (a path requires only its first component, the
//!   hierarchy functions none).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use ecsdb::query::parse::{
    BinaryOp, Expr, ExprKind, Literal, Param, PathStep, Select, SelectItem, Term, TermKind, UnaryOp,
};
use ecsdb::{Entity, Value};

use super::model::{CompDef, Fields, Model};
use super::relations::{self, is_hierarchy_function};

/// Why the reference has no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum RefError {
    /// An integer overflowed: the engine may refuse it; such cases are skipped.
    Overflow,
    /// A component (`"component"`), field (`"field"`) or function (`"function"`) the schema
    /// does not know.
    Unknown(&'static str, String),
    /// An entity target that is not alive.
    Stale(Entity),
    /// A value that cannot be stored in its field.
    Store(String),
    /// A reference constraint: a surviving `RESTRICT` referrer, an `ACYCLIC` loop.
    Constraint(String),
    /// Something the reference does not evaluate (a type error, an ungrouped column, …):
    /// for a query the generator thought well-formed, a bug in the test.
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, RefError> {
    Err(RefError::Invalid(msg.into()))
}

type R<T = Value> = Result<T, RefError>;

/// What a SELECT must return.
#[derive(Clone, Debug)]
pub struct Expected {
    pub columns: Vec<String>,
    /// Every result row in order, before LIMIT / OFFSET.
    pub rows: Vec<Vec<Value>>,
    /// The run of each row: rows of one run may come in any order among themselves (without
    /// ORDER BY everything is one run; with it, only groups that tie on every key share one).
    pub runs: Vec<usize>,
    /// The rows LIMIT / OFFSET keep: `rows[window.0..window.1]`.
    pub window: (usize, usize),
    /// Per column: whether float values may differ by a tiny relative error (items that
    /// contain `sum` or `avg`: the summation order is the engine's business).
    pub tolerant: Vec<bool>,
}

/// A resolved FROM term (or an implicitly required component).
#[derive(Clone, Debug, PartialEq)]
pub enum RTerm {
    Req(String),
    Not(String),
    Opt(String),
    Any(Vec<String>),
}

/// One row: an entity and its components.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    pub e: Entity,
    pub comps: &'a BTreeMap<String, Fields>,
}

pub struct Reference<'m> {
    pub model: &'m Model,
    /// Bound parameters: `("1", v)` for `$1`, `("name", v)` for `$name`.
    pub params: &'m [(String, Value)],
}

/// Whether `x` is an aggregate call (`count(*)`, `count(x)`, `sum`, `avg`, one-argument
/// `min` / `max`).
pub fn is_agg_call(x: &Expr) -> bool {
    match &x.kind {
        ExprKind::CountStar => true,
        ExprKind::Call { name, args } => {
            let n = name.name.to_ascii_lowercase();
            matches!(n.as_str(), "count" | "sum" | "avg") || (matches!(n.as_str(), "min" | "max") && args.len() == 1)
        }
        _ => false,
    }
}

pub fn contains_agg(x: &Expr) -> bool {
    let mut found = false;
    x.walk(&mut |e| found |= is_agg_call(e));
    found
}

fn contains_call(x: &Expr, names: &[&str]) -> bool {
    let mut found = false;
    x.walk(&mut |e| {
        if let ExprKind::Call { name, .. } = &e.kind {
            found |= names.iter().any(|n| name.name.eq_ignore_ascii_case(n));
        }
    });
    found
}

fn is_has_call(x: &Expr) -> Option<&str> {
    match &x.kind {
        ExprKind::Call { name, args } if name.name.eq_ignore_ascii_case("has") => match args.as_slice() {
            [Expr { kind: ExprKind::Component(c), .. }] => Some(&c.name),
            _ => None,
        },
        _ => None,
    }
}

/// Structural equality, ignoring spans; function names compare case-insensitively.
pub fn expr_eq(a: &Expr, b: &Expr) -> bool {
    use ExprKind as K;
    let all = |xs: &[Expr], ys: &[Expr]| xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| expr_eq(x, y));
    match (&a.kind, &b.kind) {
        (K::Literal(x), K::Literal(y)) => x == y,
        (K::EntityLit { index: i1, generation: g1 }, K::EntityLit { index: i2, generation: g2 }) => {
            i1 == i2 && g1 == g2
        }
        (K::Param(x), K::Param(y)) => x == y,
        (K::Vector(xs), K::Vector(ys)) => all(xs, ys),
        (K::Field { component: c1, field: f1 }, K::Field { component: c2, field: f2 }) => {
            c1.name == c2.name && f1.name == f2.name
        }
        (K::Component(x), K::Component(y)) => x.name == y.name,
        (K::Path { base: b1, steps: s1 }, K::Path { base: b2, steps: s2 }) => {
            let same_step = |(p, q): (&PathStep, &PathStep)| {
                p.component.name == q.component.name
                    && p.field.as_ref().map(|f| &f.name) == q.field.as_ref().map(|f| &f.name)
            };
            expr_eq(b1, b2) && s1.len() == s2.len() && s1.iter().zip(s2).all(same_step)
        }
        (K::EntityId, K::EntityId) | (K::CountStar, K::CountStar) => true,
        (K::Unary { op: o1, expr: x }, K::Unary { op: o2, expr: y }) => o1 == o2 && expr_eq(x, y),
        (K::Binary { op: o1, lhs: l1, rhs: r1 }, K::Binary { op: o2, lhs: l2, rhs: r2 }) => {
            o1 == o2 && expr_eq(l1, l2) && expr_eq(r1, r2)
        }
        (K::Not(x), K::Not(y)) => expr_eq(x, y),
        (
            K::Between { expr: x1, low: l1, high: h1, negated: n1 },
            K::Between { expr: x2, low: l2, high: h2, negated: n2 },
        ) => n1 == n2 && expr_eq(x1, x2) && expr_eq(l1, l2) && expr_eq(h1, h2),
        (K::InList { expr: x1, list: l1, negated: n1 }, K::InList { expr: x2, list: l2, negated: n2 }) => {
            n1 == n2 && expr_eq(x1, x2) && all(l1, l2)
        }
        (K::Like { expr: x1, pattern: p1, negated: n1 }, K::Like { expr: x2, pattern: p2, negated: n2 }) => {
            n1 == n2 && expr_eq(x1, x2) && expr_eq(p1, p2)
        }
        (K::IsNull { expr: x1, negated: n1 }, K::IsNull { expr: x2, negated: n2 }) => n1 == n2 && expr_eq(x1, x2),
        (K::Call { name: n1, args: a1 }, K::Call { name: n2, args: a2 }) => {
            n1.name.eq_ignore_ascii_case(&n2.name) && all(a1, a2)
        }
        _ => false,
    }
}

/// Whitespace runs outside string literals made one space, ends trimmed (the column name of an
/// unaliased item). The generator writes no comments.
pub fn collapse(text: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut space = false;
    for c in text.chars() {
        if let Some(q) = quote {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        if c == '\'' || c == '"' {
            quote = Some(c);
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Values and operators

fn truth(v: &Value) -> R<Option<bool>> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        other => invalid(format!("not a condition: {other:?}")),
    }
}

fn tri(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

/// SQL comparison: `None` when either side is null.
pub fn cmp_values(a: &Value, b: &Value) -> R<Option<Ordering>> {
    use Value as V;
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Int(x), V::Int(y)) => Some(x.cmp(y)),
        (V::Int(_) | V::Float(_), V::Int(_) | V::Float(_)) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            Some(x.partial_cmp(&y).ok_or_else(|| RefError::Invalid("NaN".into()))?)
        }
        (V::Str(x), V::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::Entity(x), V::Entity(y)) => Some((x.index(), x.generation()).cmp(&(y.index(), y.generation()))),
        _ => return invalid(format!("cannot order {a:?} and {b:?}")),
    })
}

/// SQL equality: `None` when either side is null. Vectors compare element-wise.
pub fn eq_values(a: &Value, b: &Value) -> R<Option<bool>> {
    use Value as V;
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Vec2(x), V::Vec2(y)) => Some(x == y),
        (V::Vec3(x), V::Vec3(y)) => Some(x == y),
        (V::Vec2(_) | V::Vec3(_), _) | (_, V::Vec2(_) | V::Vec3(_)) => {
            return invalid(format!("cannot compare {a:?} and {b:?}"));
        }
        _ => cmp_values(a, b)?.map(|o| o == Ordering::Equal),
    })
}

/// The ORDER BY order of one key: null smallest.
pub fn order_cmp(a: &Value, b: &Value) -> R<Ordering> {
    Ok(match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => cmp_values(a, b)?.expect("neither is null"),
    })
}

fn arith(op: BinaryOp, a: &Value, b: &Value) -> R {
    use Value as V;
    match (a, b) {
        (V::Null, _) | (_, V::Null) => Ok(V::Null),
        (V::Int(x), V::Int(y)) => {
            let (x, y) = (*x, *y);
            let r = match op {
                BinaryOp::Add => x.checked_add(y),
                BinaryOp::Sub => x.checked_sub(y),
                BinaryOp::Mul => x.checked_mul(y),
                BinaryOp::Div if y == 0 => return Ok(V::Null),
                BinaryOp::Div => x.checked_div(y),
                BinaryOp::Mod if y == 0 => return Ok(V::Null),
                BinaryOp::Mod => Some(x.checked_rem(y).unwrap_or(0)),
                _ => unreachable!("arith op"),
            };
            r.map(V::Int).ok_or(RefError::Overflow)
        }
        (V::Int(_) | V::Float(_), V::Int(_) | V::Float(_)) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            Ok(match op {
                BinaryOp::Add => V::Float(x + y),
                BinaryOp::Sub => V::Float(x - y),
                BinaryOp::Mul => V::Float(x * y),
                BinaryOp::Div | BinaryOp::Mod if y == 0.0 => V::Null,
                BinaryOp::Div => V::Float(x / y),
                BinaryOp::Mod => V::Float(x % y),
                _ => unreachable!("arith op"),
            })
        }
        // Vectors: element-wise + and - with a vector of the same size; scaled by a number
        // (`v * k`, `k * v`, `v / k`, null when k is 0).
        (V::Vec2(_) | V::Vec3(_), V::Vec2(_) | V::Vec3(_)) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
            let (Some(x), Some(y)) = (coords(a), coords(b)) else { return invalid("not vectors") };
            if x.len() != y.len() {
                return invalid("vectors of different sizes");
            }
            let sum: Vec<f64> =
                x.iter().zip(&y).map(|(p, q)| if op == BinaryOp::Add { p + q } else { p - q }).collect();
            Ok(vector_of(&sum))
        }
        (V::Vec2(_) | V::Vec3(_), V::Int(_) | V::Float(_)) if matches!(op, BinaryOp::Mul | BinaryOp::Div) => {
            let k = b.as_f64().unwrap();
            if op == BinaryOp::Div && k == 0.0 {
                return Ok(V::Null);
            }
            let scaled: Vec<f64> = coords(a)
                .unwrap_or_default()
                .iter()
                .map(|x| if op == BinaryOp::Mul { x * k } else { x * (1.0 / k) })
                .collect();
            Ok(vector_of(&scaled))
        }
        (V::Int(_) | V::Float(_), V::Vec2(_) | V::Vec3(_)) if op == BinaryOp::Mul => arith(op, b, a),
        _ => invalid(format!("cannot apply {} to {a:?} and {b:?}", op.as_str())),
    }
}

fn vector_of(xs: &[f64]) -> Value {
    match xs {
        [a, b] => Value::Vec2([*a, *b]),
        [a, b, c] => Value::Vec3([*a, *b, *c]),
        _ => Value::Null,
    }
}

fn text_of(v: &Value) -> R<String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Int(_) | Value::Bool(_) | Value::Entity(_) | Value::Float(_) => Ok(v.to_string()),
        other => invalid(format!("cannot concatenate {other:?}")),
    }
}

fn binary(op: BinaryOp, a: &Value, b: &Value) -> R {
    use BinaryOp as B;
    Ok(match op {
        B::And => tri(match (truth(a)?, truth(b)?) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        }),
        B::Or => tri(match (truth(a)?, truth(b)?) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        }),
        B::Eq => tri(eq_values(a, b)?),
        B::NotEq => tri(eq_values(a, b)?.map(|x| !x)),
        B::Lt => tri(cmp_values(a, b)?.map(|o| o.is_lt())),
        B::LtEq => tri(cmp_values(a, b)?.map(|o| o.is_le())),
        B::Gt => tri(cmp_values(a, b)?.map(|o| o.is_gt())),
        B::GtEq => tri(cmp_values(a, b)?.map(|o| o.is_ge())),
        B::Concat => {
            if a.is_null() || b.is_null() {
                Value::Null
            } else {
                Value::Str(text_of(a)? + &text_of(b)?)
            }
        }
        B::Add | B::Sub | B::Mul | B::Div | B::Mod => arith(op, a, b)?,
    })
}

/// `%` any run of characters, `_` exactly one; case-sensitive.
pub fn like(s: &str, p: &str) -> bool {
    fn go(s: &[char], p: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('%', rest)) => (0..=s.len()).any(|i| go(&s[i..], rest)),
            Some((c, rest)) => match s.split_first() {
                Some((d, srest)) => (*c == '_' || c == d) && go(srest, rest),
                None => false,
            },
        }
    }
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = p.chars().collect();
    go(&s, &p)
}

fn coords(v: &Value) -> Option<Vec<f64>> {
    match v {
        Value::Vec2(x) => Some(x.to_vec()),
        Value::Vec3(x) => Some(x.to_vec()),
        _ => None,
    }
}

fn distance(a: &Value, b: &Value) -> R<f64> {
    match (coords(a), coords(b)) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            let mut sum = 0.0;
            for (p, q) in x.iter().zip(&y) {
                sum += (p - q) * (p - q);
            }
            Ok(sum.sqrt())
        }
        _ => invalid(format!("distance of {a:?} and {b:?}")),
    }
}

const SCALAR_FUNCTIONS: [&str; 13] =
    ["abs", "sqrt", "floor", "ceil", "round", "min", "max", "len", "lower", "upper", "distance", "within", "inside"];

fn call_scalar(name: &str, args: &[Value]) -> R {
    use Value as V;
    if args.iter().any(Value::is_null) {
        return Ok(V::Null);
    }
    let bad = || invalid(format!("{name}({args:?})"));
    Ok(match (name, args) {
        ("abs", [V::Int(i)]) => V::Int(i.checked_abs().ok_or(RefError::Overflow)?),
        ("abs", [V::Float(f)]) => V::Float(f.abs()),
        ("floor" | "ceil" | "round", [V::Int(i)]) => V::Int(*i),
        ("floor", [V::Float(f)]) => V::Float(f.floor()),
        ("ceil", [V::Float(f)]) => V::Float(f.ceil()),
        ("round", [V::Float(f)]) => V::Float(f.round()),
        ("sqrt", [x @ (V::Int(_) | V::Float(_))]) => {
            let x = x.as_f64().unwrap();
            if x < 0.0 { V::Null } else { V::Float(x.sqrt()) }
        }
        ("min" | "max", [a, b]) => {
            let o = cmp_values(a, b)?.expect("no nulls");
            let pick_a = if name == "min" { o.is_le() } else { o.is_ge() };
            let v = if pick_a { a } else { b };
            match (a, b, v) {
                (V::Float(_), V::Int(_), V::Int(i)) | (V::Int(_), V::Float(_), V::Int(i)) => V::Float(*i as f64),
                _ => v.clone(),
            }
        }
        ("len", [V::Str(s)]) => V::Int(s.chars().count() as i64),
        ("lower", [V::Str(s)]) => V::Str(s.to_lowercase()),
        ("upper", [V::Str(s)]) => V::Str(s.to_uppercase()),
        ("distance", [a, b]) => V::Float(distance(a, b)?),
        ("within", [p, c, r @ (V::Int(_) | V::Float(_))]) => V::Bool(distance(p, c)? <= r.as_f64().unwrap()),
        ("inside", [p, lo, hi]) => match (coords(p), coords(lo), coords(hi)) {
            (Some(p), Some(lo), Some(hi)) if p.len() == lo.len() && p.len() == hi.len() => {
                V::Bool(p.iter().zip(lo.iter().zip(&hi)).all(|(x, (l, h))| l <= x && x <= h))
            }
            _ => return bad(),
        },
        _ => return bad(),
    })
}

// ---------------------------------------------------------------------------------------------
// The evaluator

/// Handles the leaves of an expression in one context (a row, or a group); `Ok(None)` lets
/// the evaluator recurse into the node.
type Leaf<'x> = dyn FnMut(&Expr) -> R<Option<Value>> + 'x;

impl<'m> Reference<'m> {
    pub fn new(model: &'m Model) -> Reference<'m> {
        Reference { model, params: &[] }
    }

    pub fn with_params(model: &'m Model, params: &'m [(String, Value)]) -> Reference<'m> {
        Reference { model, params }
    }

    /// Evaluates `x`, asking `leaf` first at every node.
    fn eval(&self, x: &Expr, leaf: &mut Leaf) -> R {
        if let Some(v) = leaf(x)? {
            return Ok(v);
        }
        Ok(match &x.kind {
            ExprKind::Literal(l) => match l {
                Literal::Int(i) => Value::Int(*i),
                Literal::Float(f) => Value::Float(*f),
                Literal::Str(s) => Value::Str(s.clone()),
                Literal::Bool(b) => Value::Bool(*b),
                Literal::Null => Value::Null,
            },
            ExprKind::EntityLit { index, generation } => Value::Entity(Entity::from_parts(*index, *generation)),
            // The first field through the leaves (a row's value, or a GROUP BY key), the steps
            // through the model.
            ExprKind::Path { base, steps } => {
                let start = self.eval(base, leaf)?;
                relations::follow_path(self.model, start, steps)?
            }
            ExprKind::Vector(items) => {
                let mut xs = Vec::new();
                for item in items {
                    match self.eval(item, leaf)? {
                        Value::Null => return Ok(Value::Null),
                        v @ (Value::Int(_) | Value::Float(_)) => xs.push(v.as_f64().unwrap()),
                        other => return invalid(format!("vector element {other:?}")),
                    }
                }
                match xs.as_slice() {
                    [a, b] => Value::Vec2([*a, *b]),
                    [a, b, c] => Value::Vec3([*a, *b, *c]),
                    _ => return invalid("vector size"),
                }
            }
            ExprKind::Unary { op: UnaryOp::Neg, expr } => match self.eval(expr, leaf)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or(RefError::Overflow)?),
                Value::Float(f) => Value::Float(-f),
                other => return invalid(format!("cannot negate {other:?}")),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs, leaf)?;
                let b = self.eval(rhs, leaf)?;
                binary(*op, &a, &b)?
            }
            ExprKind::Not(e) => tri(truth(&self.eval(e, leaf)?)?.map(|b| !b)),
            ExprKind::Between { expr, low, high, negated } => {
                let v = self.eval(expr, leaf)?;
                let lo = self.eval(low, leaf)?;
                let hi = self.eval(high, leaf)?;
                let ge = binary(BinaryOp::GtEq, &v, &lo)?;
                let le = binary(BinaryOp::LtEq, &v, &hi)?;
                let r = truth(&binary(BinaryOp::And, &ge, &le)?)?;
                tri(if *negated { r.map(|b| !b) } else { r })
            }
            ExprKind::InList { expr, list, negated } => {
                let v = self.eval(expr, leaf)?;
                let mut vals = Vec::new();
                for item in list {
                    vals.push(self.eval(item, leaf)?);
                }
                let r = if vals.is_empty() {
                    Some(false)
                } else {
                    let mut any_null = false;
                    let mut found = false;
                    for item in &vals {
                        match eq_values(&v, item)? {
                            Some(true) => found = true,
                            Some(false) => {}
                            None => any_null = true,
                        }
                    }
                    if found {
                        Some(true)
                    } else if any_null {
                        None
                    } else {
                        Some(false)
                    }
                };
                tri(if *negated { r.map(|b| !b) } else { r })
            }
            ExprKind::Like { expr, pattern, negated } => {
                let s = self.eval(expr, leaf)?;
                let p = self.eval(pattern, leaf)?;
                let r = match (&s, &p) {
                    (Value::Null, _) | (_, Value::Null) => None,
                    (Value::Str(s), Value::Str(p)) => Some(like(s, p)),
                    _ => return invalid(format!("LIKE on {s:?}, {p:?}")),
                };
                tri(if *negated { r.map(|b| !b) } else { r })
            }
            ExprKind::IsNull { expr, negated } => Value::Bool(self.eval(expr, leaf)?.is_null() != *negated),
            ExprKind::Call { name, .. } if is_hierarchy_function(&name.name) => {
                return invalid(format!("`{x}` needs a row (outside a row, or neither grouped nor aggregated)"));
            }
            ExprKind::Call { name, args } => {
                let lower = name.name.to_ascii_lowercase();
                if !SCALAR_FUNCTIONS.contains(&lower.as_str()) {
                    return Err(RefError::Unknown("function", name.name.clone()));
                }
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.eval(a, leaf)?);
                }
                call_scalar(&lower, &vals)?
            }
            ExprKind::Param(p) => {
                let key = match p {
                    Param::Positional(n) => n.to_string(),
                    Param::Named(name) => name.clone(),
                };
                match self.params.iter().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.clone(),
                    None => return invalid(format!("parameter ${key} is not bound")),
                }
            }
            ExprKind::Field { .. } | ExprKind::Component(_) | ExprKind::EntityId | ExprKind::CountStar => {
                return invalid(format!("`{x}` here"));
            }
        })
    }

    /// A component of the row: null where absent; a vector when vector-like and
    /// `as_vector`, else an object (`{}` for a tag).
    fn component_value(&self, row: Row, name: &str, as_vector: bool) -> R {
        let def = self.model.schema.get(name).ok_or_else(|| RefError::Unknown("component", name.into()))?;
        let Some(fields) = row.comps.get(name) else { return Ok(Value::Null) };
        if as_vector && let Some(n) = def.vector_len() {
            let xs: Vec<f64> = fields.iter().map(|(_, v)| v.as_f64().expect("numeric field")).collect();
            return Ok(if n == 2 { Value::Vec2([xs[0], xs[1]]) } else { Value::Vec3([xs[0], xs[1], xs[2]]) });
        }
        Ok(Value::Object(fields.iter().map(|(f, v)| (f.clone(), self.as_read(def, f, v))).collect()))
    }

    /// A stored value as a statement reads it: a reference whose target is not alive (a
    /// dangling `NO ACTION` handle) reads as null.
    fn as_read(&self, def: &CompDef, field: &str, v: &Value) -> Value {
        match v {
            Value::Entity(e) if def.reference(field).is_some() && !self.model.is_alive(*e) => Value::Null,
            other => other.clone(),
        }
    }

    fn field_value(&self, row: Row, comp: &str, field: &str) -> R {
        let def = self.model.schema.get(comp).ok_or_else(|| RefError::Unknown("component", comp.into()))?;
        if def.field(field).is_none() {
            return Err(RefError::Unknown("field", format!("{comp}.{field}")));
        }
        Ok(match row.comps.get(comp) {
            Some(fields) => {
                let v = fields.iter().find(|(f, _)| f == field).map(|(_, v)| v).expect("field stored");
                self.as_read(def, field, v)
            }
            None => Value::Null,
        })
    }

    /// The row-context leaves: fields, components, `entity`, `has(C)`.
    fn row_leaf(&self, x: &Expr, row: Row) -> R<Option<Value>> {
        if let Some(c) = is_has_call(x) {
            if self.model.schema.get(c).is_none() {
                return Err(RefError::Unknown("component", c.into()));
            }
            return Ok(Some(Value::Bool(row.comps.contains_key(c))));
        }
        if is_agg_call(x) {
            return invalid(format!("aggregate `{x}` outside an aggregate context"));
        }
        if let Some(v) = relations::hierarchy(self, x, row)? {
            return Ok(Some(v));
        }
        Ok(match &x.kind {
            ExprKind::Field { component, field } => Some(self.field_value(row, &component.name, &field.name)?),
            ExprKind::Component(c) => Some(self.component_value(row, &c.name, true)?),
            ExprKind::EntityId => Some(Value::Entity(row.e)),
            _ => None,
        })
    }

    /// Evaluates a row expression.
    pub fn eval_row(&self, x: &Expr, row: Row) -> R {
        self.eval(x, &mut |e: &Expr| self.row_leaf(e, row))
    }

    /// Evaluates a constant (LIMIT, OFFSET).
    pub fn eval_constant(&self, x: &Expr) -> R {
        self.eval(x, &mut |e: &Expr| match &e.kind {
            ExprKind::Field { .. } | ExprKind::Component(_) | ExprKind::EntityId | ExprKind::CountStar => {
                invalid("a row value in a constant")
            }
            _ => Ok(None),
        })
    }

    /// An aggregate call over the rows of a group.
    fn aggregate(&self, x: &Expr, rows: &[Row]) -> R {
        let (name, arg) = match &x.kind {
            ExprKind::CountStar => return Ok(Value::Int(rows.len() as i64)),
            ExprKind::Call { name, args } if args.len() == 1 => (name.name.to_ascii_lowercase(), &args[0]),
            _ => return invalid(format!("aggregate {x}")),
        };
        if contains_agg(arg) {
            return invalid("nested aggregate");
        }
        let mut vals = Vec::new();
        for &row in rows {
            let v = self.eval_row(arg, row)?;
            if !v.is_null() {
                vals.push(v);
            }
        }
        if name == "count" {
            return Ok(Value::Int(vals.len() as i64));
        }
        if vals.is_empty() {
            return Ok(Value::Null);
        }
        match name.as_str() {
            "sum" | "avg" => {
                if vals.iter().all(|v| matches!(v, Value::Int(_))) {
                    let mut sum: i64 = 0;
                    for v in &vals {
                        let Value::Int(i) = v else { unreachable!() };
                        sum = sum.checked_add(*i).ok_or(RefError::Overflow)?;
                    }
                    Ok(if name == "sum" { Value::Int(sum) } else { Value::Float(sum as f64 / vals.len() as f64) })
                } else {
                    let mut sum = 0.0;
                    for v in &vals {
                        sum += v.as_f64().ok_or_else(|| RefError::Invalid(format!("{name} of {v:?}")))?;
                    }
                    Ok(Value::Float(if name == "sum" { sum } else { sum / vals.len() as f64 }))
                }
            }
            "min" | "max" => {
                let mut best = vals[0].clone();
                for v in &vals[1..] {
                    let o = cmp_values(v, &best)?.expect("no nulls");
                    if (name == "min" && o.is_lt()) || (name == "max" && o.is_gt()) {
                        best = v.clone();
                    }
                }
                Ok(best)
            }
            _ => invalid(format!("aggregate {name}")),
        }
    }

    /// Evaluates an expression for a group: GROUP BY keys and aggregates are leaves; any other
    /// row value is an error (neither grouped nor aggregated).
    fn eval_group(&self, x: &Expr, keys: &[(&Expr, Value)], rows: &[Row]) -> R {
        self.eval(x, &mut |e: &Expr| {
            if let Some((_, v)) = keys.iter().find(|(k, _)| expr_eq(k, e)) {
                return Ok(Some(v.clone()));
            }
            if is_agg_call(e) {
                return Ok(Some(self.aggregate(e, rows)?));
            }
            let hierarchy = matches!(&e.kind, ExprKind::Call { name, .. } if is_hierarchy_function(&name.name));
            if is_has_call(e).is_some()
                || hierarchy
                || matches!(
                    e.kind,
                    ExprKind::Field { .. } | ExprKind::Path { .. } | ExprKind::Component(_) | ExprKind::EntityId
                )
            {
                return invalid(format!("`{e}` is neither grouped nor aggregated"));
            }
            Ok(None)
        })
    }

    // -----------------------------------------------------------------------------------------
    // Row selection

    fn check_component(&self, name: &str) -> R<()> {
        match self.model.schema.get(name) {
            Some(_) => Ok(()),
            None => Err(RefError::Unknown("component", name.into())),
        }
    }

    /// Checks every name in `x` against the schema (`skip` is an ORDER BY alias).
    fn check_names(&self, x: &Expr) -> R<()> {
        let mut err = None;
        x.walk(&mut |e| {
            if err.is_some() {
                return;
            }
            let r =
                match &e.kind {
                    ExprKind::Field { component, field } => self.check_component(&component.name).and_then(|_| {
                        match self.model.schema.get(&component.name).and_then(|d| d.field(&field.name)) {
                            Some(_) => Ok(()),
                            None => Err(RefError::Unknown("field", format!("{}.{}", component.name, field.name))),
                        }
                    }),
                    ExprKind::Component(c) => self.check_component(&c.name),
                    // The walk does not enter paths: the first field and every step here.
                    ExprKind::Path { base, steps } => {
                        self.check_names(base).and_then(|_| relations::check_steps(self.model, steps))
                    }
                    ExprKind::Call { name, .. } => {
                        let n = name.name.to_ascii_lowercase();
                        if SCALAR_FUNCTIONS.contains(&n.as_str())
                            || is_agg_call(e)
                            || n == "has"
                            || is_hierarchy_function(&n)
                        {
                            Ok(())
                        } else {
                            Err(RefError::Unknown("function", name.name.clone()))
                        }
                    }
                    _ => Ok(()),
                };
            if let Err(e) = r {
                err = Some(e);
            }
        });
        err.map_or(Ok(()), Err)
    }

    /// The FROM terms, plus every component named in `exprs` (outside `has(…)`) that FROM
    /// does not mention, as required, plus the `implied` components (required even when FROM
    /// marks them `?`, `!` or `|`).
    pub fn terms(&self, from: &[Term], exprs: &[&Expr], implied: &[String]) -> R<Vec<RTerm>> {
        let mut terms = Vec::new();
        let mut mentioned: Vec<String> = Vec::new();
        for t in from {
            for c in t.components() {
                self.check_component(&c.name)?;
                mentioned.push(c.name.clone());
            }
            terms.push(match &t.kind {
                TermKind::Required(c) => RTerm::Req(c.name.clone()),
                TermKind::Not(c) => RTerm::Not(c.name.clone()),
                TermKind::Optional(c) => RTerm::Opt(c.name.clone()),
                TermKind::AnyOf(cs) => RTerm::Any(cs.iter().map(|c| c.name.clone()).collect()),
            });
        }
        // The statement's own component (`UPDATE C`, `REMOVE C`) is required whatever FROM says.
        for c in implied {
            self.check_component(c)?;
            terms.push(RTerm::Req(c.clone()));
        }
        let mut named: Vec<String> = Vec::new();
        fn collect(x: &Expr, out: &mut Vec<String>) {
            if is_has_call(x).is_some() {
                return;
            }
            match &x.kind {
                // A hierarchy function does not require its C (like `has`); its other
                // arguments are ordinary row expressions.
                ExprKind::Call { name, args } if is_hierarchy_function(&name.name) => {
                    args.iter().skip(1).for_each(|a| collect(a, out))
                }
                // Only the first component of a path is required.
                ExprKind::Path { base, .. } => collect(base, out),
                ExprKind::Field { component, .. } => out.push(component.name.clone()),
                ExprKind::Component(c) => out.push(c.name.clone()),
                _ => x.children().into_iter().for_each(|c| collect(c, out)),
            }
        }
        for x in exprs {
            collect(x, &mut named);
        }
        for c in named {
            self.check_component(&c)?;
            if !mentioned.contains(&c) {
                mentioned.push(c.clone());
                terms.push(RTerm::Req(c));
            }
        }
        Ok(terms)
    }

    /// The rows matching `terms` and `where_`, in entity order.
    pub fn rows(&self, terms: &[RTerm], where_: Option<&Expr>) -> R<Vec<Row<'m>>> {
        let mut out = Vec::new();
        for (e, comps) in &self.model.entities {
            let ok = terms.iter().all(|t| match t {
                RTerm::Req(c) => comps.contains_key(c),
                RTerm::Not(c) => !comps.contains_key(c),
                RTerm::Opt(_) => true,
                RTerm::Any(cs) => cs.iter().any(|c| comps.contains_key(c)),
            });
            if !ok {
                continue;
            }
            let row = Row { e: *e, comps };
            if let Some(w) = where_
                && truth(&self.eval_row(w, row)?)? != Some(true)
            {
                continue;
            }
            out.push(row);
        }
        Ok(out)
    }

    /// The entities a DESPAWN / ADD / REMOVE / UPDATE filter targets.
    pub fn targets(&self, from: &[Term], where_: Option<&Expr>, implied: &[String], more: &[&Expr]) -> R<Vec<Entity>> {
        let mut exprs: Vec<&Expr> = more.to_vec();
        if let Some(w) = where_ {
            self.check_names(w)?;
            exprs.push(w);
        }
        for x in more {
            self.check_names(x)?;
        }
        let terms = self.terms(from, &exprs, implied)?;
        Ok(self.rows(&terms, where_)?.into_iter().map(|r| r.e).collect())
    }

    // -----------------------------------------------------------------------------------------
    // SELECT

    pub fn select(&self, sel: &Select, src: &str) -> R<Expected> {
        // Aliases, and ORDER BY keys that name one.
        let aliases: Vec<Option<&str>> = sel
            .items
            .iter()
            .map(|it| match it {
                SelectItem::Expr { alias: Some(a), .. } => Some(a.name.as_str()),
                _ => None,
            })
            .collect();
        let alias_of = |x: &Expr| -> Option<usize> {
            match &x.kind {
                ExprKind::Component(c) => aliases.iter().position(|a| *a == Some(c.name.as_str())),
                _ => None,
            }
        };
        let order: Vec<(Result<usize, &Expr>, bool)> =
            sel.order_by.iter().map(|k| (alias_of(&k.expr).ok_or(&k.expr), k.desc)).collect();

        // Every expression that names components.
        let mut exprs: Vec<&Expr> = Vec::new();
        for it in &sel.items {
            if let SelectItem::Expr { expr, .. } = it {
                exprs.push(expr);
            }
        }
        exprs.extend(sel.where_.iter());
        exprs.extend(sel.group_by.iter());
        exprs.extend(order.iter().filter_map(|(k, _)| k.err()));
        for x in &exprs {
            self.check_names(x)?;
        }
        let terms = self.terms(&sel.from, &exprs, &[])?;
        if let Some(w) = &sel.where_
            && contains_agg(w)
        {
            return invalid("aggregate in WHERE");
        }
        let rows = self.rows(&terms, sel.where_.as_ref())?;

        // Columns.
        let mut columns = Vec::new();
        let mut tolerant = Vec::new();
        let mut widths = Vec::new();
        for it in &sel.items {
            let before = columns.len();
            match it {
                SelectItem::Star { .. } => {
                    columns.push("entity".to_string());
                    for t in &terms {
                        match t {
                            RTerm::Req(c) | RTerm::Opt(c) => {
                                if sel.from.iter().any(|f| f.components().iter().any(|i| &i.name == c)) {
                                    columns.push(c.clone());
                                }
                            }
                            RTerm::Any(cs) => columns.extend(cs.iter().cloned()),
                            RTerm::Not(_) => {}
                        }
                    }
                    tolerant.resize(columns.len(), false);
                }
                SelectItem::Expr { expr, alias, .. } => {
                    columns.push(match (alias, &expr.kind) {
                        (Some(a), _) => a.name.clone(),
                        (None, ExprKind::EntityId) => "entity".into(),
                        (None, _) => collapse(&src[expr.span.start..expr.span.end]),
                    });
                    tolerant.push(contains_call(expr, &["sum", "avg"]));
                }
            }
            widths.push(columns.len() - before);
        }

        let aggregated = !sel.group_by.is_empty() || exprs.iter().any(|x| contains_agg(x));
        // Each output row with its ORDER BY keys and (for plain queries) its entity.
        let mut out: Vec<(Vec<Value>, Vec<Value>, Option<Entity>)> = Vec::new();
        if !aggregated {
            for &row in &rows {
                let mut vals = Vec::new();
                for it in &sel.items {
                    match it {
                        SelectItem::Star { .. } => {
                            vals.push(Value::Entity(row.e));
                            for t in &terms {
                                match t {
                                    RTerm::Req(c) | RTerm::Opt(c) => {
                                        if sel.from.iter().any(|f| f.components().iter().any(|i| &i.name == c)) {
                                            vals.push(self.component_value(row, c, false)?);
                                        }
                                    }
                                    RTerm::Any(cs) => {
                                        for c in cs {
                                            vals.push(self.component_value(row, c, false)?);
                                        }
                                    }
                                    RTerm::Not(_) => {}
                                }
                            }
                        }
                        SelectItem::Expr { expr, .. } => vals.push(match &expr.kind {
                            ExprKind::Component(c) => self.component_value(row, &c.name, false)?,
                            _ => self.eval_row(expr, row)?,
                        }),
                    }
                }
                let mut keys = Vec::new();
                for (k, _) in &order {
                    keys.push(match k {
                        Ok(i) => vals[widths[..*i].iter().sum::<usize>()].clone(),
                        Err(x) => self.eval_row(x, row)?,
                    });
                }
                out.push((vals, keys, Some(row.e)));
            }
        } else {
            if sel.items.iter().any(|it| matches!(it, SelectItem::Star { .. })) {
                return invalid("* with aggregates");
            }
            // Groups, in order of first appearance.
            let mut groups: Vec<(Vec<Value>, Vec<Row>)> = Vec::new();
            if sel.group_by.is_empty() {
                groups.push((Vec::new(), rows.clone()));
            } else {
                for &row in &rows {
                    let mut key = Vec::new();
                    for g in &sel.group_by {
                        if contains_agg(g) {
                            return invalid("aggregate in GROUP BY");
                        }
                        key.push(self.eval_row(g, row)?);
                    }
                    match groups.iter_mut().find(|(k, _)| same_key(k, &key)) {
                        Some((_, members)) => members.push(row),
                        None => groups.push((key, vec![row])),
                    }
                }
            }
            for (key, members) in &groups {
                let keys: Vec<(&Expr, Value)> = sel.group_by.iter().zip(key.iter().cloned()).collect();
                let mut vals = Vec::new();
                for it in &sel.items {
                    if let SelectItem::Expr { expr, .. } = it {
                        vals.push(self.eval_group(expr, &keys, members)?);
                    }
                }
                let mut okeys = Vec::new();
                for (k, _) in &order {
                    okeys.push(match k {
                        Ok(i) => vals[*i].clone(),
                        Err(x) => self.eval_group(x, &keys, members)?,
                    });
                }
                out.push((vals, okeys, None));
            }
        }

        // ORDER BY: stable sort on the keys, ties by entity.
        let desc: Vec<bool> = order.iter().map(|(_, d)| *d).collect();
        let mut err = None;
        let cmp_keys = |a: &[Value], b: &[Value], err: &mut Option<RefError>| -> Ordering {
            for (i, d) in desc.iter().enumerate() {
                let o = match order_cmp(&a[i], &b[i]) {
                    Ok(o) => o,
                    Err(e) => {
                        *err = Some(e);
                        Ordering::Equal
                    }
                };
                let o = if *d { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        };
        out.sort_by(|a, b| cmp_keys(&a.1, &b.1, &mut err).then_with(|| a.2.cmp(&b.2)));
        if let Some(e) = err {
            return Err(e);
        }
        // Runs: without ORDER BY, one; with it, each plain row alone, and groups that tie.
        let key_tolerant: Vec<bool> = order
            .iter()
            .map(|(k, _)| match k {
                Ok(i) => tolerant_item(sel, *i),
                Err(x) => contains_call(x, &["sum", "avg"]),
            })
            .collect();
        let mut runs = Vec::new();
        for i in 0..out.len() {
            // Same run as the previous row: always without ORDER BY; with it, for groups
            // (no entity to break ties) whose keys tie.
            let run = match i {
                0 => 0,
                _ if order.is_empty() => runs[i - 1],
                _ if out[i].2.is_none() && keys_tie(&out[i - 1].1, &out[i].1, &key_tolerant) => runs[i - 1],
                _ => runs[i - 1] + 1,
            };
            runs.push(run);
        }

        // LIMIT / OFFSET.
        let count = |x: &Option<Expr>| -> R<Option<usize>> {
            match x {
                None => Ok(None),
                Some(x) => match self.eval_constant(x)? {
                    Value::Int(n) if n >= 0 => Ok(Some(n as usize)),
                    other => invalid(format!("LIMIT/OFFSET {other:?}")),
                },
            }
        };
        let n = out.len();
        let start = count(&sel.offset)?.unwrap_or(0).min(n);
        let end = match count(&sel.limit)? {
            Some(l) => start.saturating_add(l).min(n),
            None => n,
        };
        Ok(Expected {
            columns,
            rows: out.into_iter().map(|(v, _, _)| v).collect(),
            runs,
            window: (start, end),
            tolerant,
        })
    }
}

fn tolerant_item(sel: &Select, i: usize) -> bool {
    match &sel.items[i] {
        SelectItem::Expr { expr, .. } => contains_call(expr, &["sum", "avg"]),
        SelectItem::Star { .. } => false,
    }
}

/// GROUP BY key equality: nulls group together, `-0.0` with `0.0`.
fn same_key(a: &[Value], b: &[Value]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x, y) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        _ => eq_values(x, y).ok().flatten() == Some(true),
    })
}

fn keys_tie(a: &[Value], b: &[Value], tolerant: &[bool]) -> bool {
    a.iter().zip(b).zip(tolerant).all(|((x, y), tol)| match (x, y) {
        (Value::Float(p), Value::Float(q)) if *tol => approx_eq(*p, *q),
        _ => order_cmp(x, y).ok() == Some(Ordering::Equal),
    })
}

/// Floats equal up to summation-order error.
pub fn approx_eq(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-12
}
