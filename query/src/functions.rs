//! Scalar functions: the built-ins of the language and functions registered from Rust.
//!
//! | function | arguments | result |
//! |---|---|---|
//! | `abs(x)`, `floor(x)`, `ceil(x)` | number | same type |
//! | `round(x)`, `round(x, digits)` | number, int | same type (an int is already round) |
//! | `sqrt(x)` | number | float; null for negative input |
//! | `min(a, b, …)`, `max(a, b, …)` | two or more of one orderable type (numbers mix) | that type; null if any is null |
//! | `len(s)` | string | int (characters) |
//! | `lower(s)`, `upper(s)` | string | string |
//! | `distance(a, b)` | two vectors of one size | float (Euclidean) |
//! | `within(p, center, radius)` | vector, vector, number | bool: `distance(p, center) <= radius` |
//! | `inside(p, lo, hi)` | three vectors of one size | bool: every coordinate within `[lo, hi]` |
//!
//! `has(C)` and the aggregates (`count`, `sum`, `avg`, `min`/`max` with one argument) are bound
//! specially and are not [`Function`]s; neither is `name(C)` naming a function index
//! ([`IndexCall`]), which reads the index's maintained answer. A registered function takes any values and returns any
//! value; its result type is known only when it runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use ecsdb_engine::Value;

use crate::execute::ops::{self, OpResult};
use crate::plan::logical::DataType;

/// A function registered from Rust: `Fn(&[Value]) -> Result<Value, String>`.
pub type RegisteredFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// A built-in scalar function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `abs(x)`
    Abs,
    /// `sqrt(x)`
    Sqrt,
    /// `floor(x)`
    Floor,
    /// `ceil(x)`
    Ceil,
    /// `round(x [, digits])`
    Round,
    /// `min(a, b, …)`
    Min,
    /// `max(a, b, …)`
    Max,
    /// `len(s)`
    Len,
    /// `lower(s)`
    Lower,
    /// `upper(s)`
    Upper,
    /// `distance(a, b)`
    Distance,
    /// `within(p, center, radius)`
    Within,
    /// `inside(p, lo, hi)`
    Inside,
}

impl Builtin {
    /// Every built-in.
    pub const ALL: [Builtin; 13] = [
        Builtin::Abs,
        Builtin::Sqrt,
        Builtin::Floor,
        Builtin::Ceil,
        Builtin::Round,
        Builtin::Min,
        Builtin::Max,
        Builtin::Len,
        Builtin::Lower,
        Builtin::Upper,
        Builtin::Distance,
        Builtin::Within,
        Builtin::Inside,
    ];

    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Abs => "abs",
            Builtin::Sqrt => "sqrt",
            Builtin::Floor => "floor",
            Builtin::Ceil => "ceil",
            Builtin::Round => "round",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Len => "len",
            Builtin::Lower => "lower",
            Builtin::Upper => "upper",
            Builtin::Distance => "distance",
            Builtin::Within => "within",
            Builtin::Inside => "inside",
        }
    }

    /// The built-in of this name (function names are case-insensitive).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name().eq_ignore_ascii_case(name))
    }

    /// Whether the function wants vector arguments (component references are read as vectors).
    pub fn takes_vectors(self) -> bool {
        matches!(self, Builtin::Distance | Builtin::Within | Builtin::Inside)
    }

    /// The result type for arguments of these types, or why they do not fit.
    pub fn result_type(self, args: &[DataType]) -> Result<DataType, String> {
        use DataType as T;
        let name = self.name();
        let arity = |n: usize| -> Result<(), String> {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("{name}() takes {n} argument{}, got {}", if n == 1 { "" } else { "s" }, args.len()))
            }
        };
        let numeric = |t: T, what: &str| -> Result<(), String> {
            if t.is_numeric() || matches!(t, T::Null | T::Any) {
                Ok(())
            } else {
                Err(format!("{name}() needs a number{what}, found {t}"))
            }
        };
        let string = |t: T| -> Result<(), String> {
            if matches!(t, T::Str | T::Null | T::Any) {
                Ok(())
            } else {
                Err(format!("{name}() needs a string, found {t}"))
            }
        };
        // The common vector size of the arguments, checking each is a vector.
        let vectors = |ts: &[T]| -> Result<(), String> {
            let mut size = None;
            for t in ts {
                match t {
                    T::Vec2 | T::Vec3 => {
                        if size.is_some_and(|s| s != *t) {
                            return Err(format!(
                                "{name}() needs vectors of one size, found {} and {t}",
                                size.unwrap_or(*t)
                            ));
                        }
                        size = Some(*t);
                    }
                    T::Null | T::Any => {}
                    other => return Err(format!("{name}() needs vectors, found {other}")),
                }
            }
            Ok(())
        };
        match self {
            Builtin::Abs | Builtin::Floor | Builtin::Ceil => {
                arity(1)?;
                numeric(args[0], "")?;
                Ok(args[0])
            }
            Builtin::Round => {
                if !(1..=2).contains(&args.len()) {
                    return Err(format!("round() takes 1 or 2 arguments, got {}", args.len()));
                }
                numeric(args[0], "")?;
                if let Some(&d) = args.get(1)
                    && !matches!(d, T::Int | T::Null | T::Any)
                {
                    return Err(format!("round() needs an int number of digits, found {d}"));
                }
                Ok(args[0])
            }
            Builtin::Sqrt => {
                arity(1)?;
                numeric(args[0], "")?;
                Ok(T::Float)
            }
            Builtin::Min | Builtin::Max => {
                if args.len() < 2 {
                    return Err(format!("{name}() takes at least 2 arguments (with one, it is the aggregate)"));
                }
                let mut out = T::Null;
                for &t in args {
                    out = match (out, t) {
                        (T::Null, t) | (t, T::Null) => t,
                        (T::Any, _) | (_, T::Any) => T::Any,
                        (T::Int, T::Int) => T::Int,
                        (a, b) if a.is_numeric() && b.is_numeric() => T::Float,
                        (a, b) if a == b && matches!(a, T::Str | T::Bool | T::Entity) => a,
                        (a, b) => return Err(format!("{name}() cannot compare {a} with {b}")),
                    };
                }
                if matches!(out, T::Vec2 | T::Vec3 | T::Object) {
                    return Err(format!("{name}() cannot order {out} values"));
                }
                Ok(out)
            }
            Builtin::Len => {
                arity(1)?;
                string(args[0])?;
                Ok(T::Int)
            }
            Builtin::Lower | Builtin::Upper => {
                arity(1)?;
                string(args[0])?;
                Ok(T::Str)
            }
            Builtin::Distance => {
                arity(2)?;
                vectors(args)?;
                Ok(T::Float)
            }
            Builtin::Within => {
                arity(3)?;
                vectors(&args[..2])?;
                numeric(args[2], " as the radius")?;
                Ok(T::Bool)
            }
            Builtin::Inside => {
                arity(3)?;
                vectors(args)?;
                Ok(T::Bool)
            }
        }
    }

    /// Calls the function (arguments already checked by [`Builtin::result_type`] where their
    /// types were known; values of other types are an error, never a panic).
    pub fn call(self, args: &[Value]) -> OpResult {
        let name = self.name();
        let bad = |v: &Value| format!("{name}() cannot take {}", v.describe());
        let arg = |i: usize| args.get(i).ok_or_else(|| format!("{name}() is missing argument {}", i + 1));
        if self != Builtin::Min && self != Builtin::Max && args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        match self {
            Builtin::Abs => match arg(0)? {
                Value::Int(i) => i.checked_abs().map(Value::Int).ok_or_else(|| "integer overflow in abs()".into()),
                Value::Float(f) => Ok(Value::Float(f.abs())),
                v => Err(bad(v)),
            },
            Builtin::Floor | Builtin::Ceil => match arg(0)? {
                Value::Int(i) => Ok(Value::Int(*i)),
                Value::Float(f) => Ok(Value::Float(if self == Builtin::Floor { f.floor() } else { f.ceil() })),
                v => Err(bad(v)),
            },
            Builtin::Round => {
                let digits = match args.get(1) {
                    None => 0,
                    Some(Value::Int(d)) => (*d).clamp(-30, 30) as i32,
                    Some(v) => return Err(bad(v)),
                };
                match arg(0)? {
                    Value::Int(i) => Ok(Value::Int(*i)),
                    Value::Float(f) => {
                        let scale = 10f64.powi(digits);
                        let r = (f * scale).round() / scale;
                        Ok(Value::Float(if r.is_finite() { r } else { *f }))
                    }
                    v => Err(bad(v)),
                }
            }
            Builtin::Sqrt => match arg(0)?.as_f64() {
                Some(x) if x < 0.0 => Ok(Value::Null),
                Some(x) => Ok(Value::Float(x.sqrt())),
                None => Err(bad(arg(0)?)),
            },
            Builtin::Min | Builtin::Max => {
                if args.iter().any(Value::is_null) {
                    return Ok(Value::Null);
                }
                let mut best = arg(0)?.clone();
                let mut promote = matches!(best, Value::Float(_));
                for v in &args[1..] {
                    promote |= matches!(v, Value::Float(_));
                    let o = ops::compare(v, &best)?.ok_or_else(|| format!("{name}() cannot order NaN"))?;
                    let better = if self == Builtin::Min { o.is_lt() } else { o.is_gt() };
                    if better {
                        best = v.clone();
                    }
                }
                Ok(match best {
                    Value::Int(i) if promote => Value::Float(i as f64),
                    v => v,
                })
            }
            Builtin::Len => match arg(0)? {
                Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
                v => Err(bad(v)),
            },
            Builtin::Lower | Builtin::Upper => match arg(0)? {
                Value::Str(s) => {
                    Ok(Value::Str(if self == Builtin::Lower { s.to_lowercase() } else { s.to_uppercase() }))
                }
                v => Err(bad(v)),
            },
            Builtin::Distance => Ok(Value::Float(distance(arg(0)?, arg(1)?).map_err(|e| format!("{name}(): {e}"))?)),
            Builtin::Within => {
                let d = distance(arg(0)?, arg(1)?).map_err(|e| format!("{name}(): {e}"))?;
                let r = arg(2)?.as_f64().ok_or_else(|| bad(&args[2]))?;
                Ok(Value::Bool(d <= r))
            }
            Builtin::Inside => {
                let (p, lo, hi) = (coords(arg(0)?), coords(arg(1)?), coords(arg(2)?));
                match (p, lo, hi) {
                    (Some(p), Some(lo), Some(hi)) if p.len() == lo.len() && p.len() == hi.len() => {
                        Ok(Value::Bool(p.iter().zip(lo.iter().zip(hi)).all(|(x, (l, h))| l <= x && x <= h)))
                    }
                    _ => Err(format!("{name}() needs three vectors of one size")),
                }
            }
        }
    }
}

fn coords(v: &Value) -> Option<&[f64]> {
    match v {
        Value::Vec2(x) => Some(x),
        Value::Vec3(x) => Some(x),
        _ => None,
    }
}

/// Euclidean distance between two vectors of one size.
pub fn distance(a: &Value, b: &Value) -> Result<f64, String> {
    match (coords(a), coords(b)) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            Ok(x.iter().zip(y).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt())
        }
        _ => Err(format!("needs two vectors of one size, found {} and {}", a.value_type(), b.value_type())),
    }
}

/// A scalar function an expression calls.
#[derive(Clone)]
pub enum Function {
    /// A built-in.
    Builtin(Builtin),
    /// A function registered from Rust under a name.
    Registered(Arc<str>, Arc<RegisteredFn>),
}

impl Function {
    /// The function's name.
    pub fn name(&self) -> &str {
        match self {
            Function::Builtin(b) => b.name(),
            Function::Registered(name, _) => name,
        }
    }

    /// Calls it.
    pub fn call(&self, args: &[Value]) -> OpResult {
        match self {
            Function::Builtin(b) => b.call(args),
            Function::Registered(name, f) => f(args).map_err(|e| format!("{name}(): {e}")),
        }
    }
}

impl PartialEq for Function {
    fn eq(&self, other: &Function) -> bool {
        match (self, other) {
            (Function::Builtin(a), Function::Builtin(b)) => a == b,
            (Function::Registered(_, a), Function::Registered(_, b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Function::Builtin(b) => write!(f, "{b:?}"),
            Function::Registered(name, _) => write!(f, "Registered({name})"),
        }
    }
}

/// A call of a function index (`visible(Position)`): the index's name and its predicate.
///
/// Scans read the index's maintained answer (see `execute::scan::FunctionSets`), so the
/// Rust predicate runs only for rows that changed since the index's last refresh; the
/// predicate itself is kept for a prepared statement whose index was dropped since.
#[derive(Clone)]
pub struct IndexCall(pub ecsdb_engine::index::IndexFunction);

impl IndexCall {
    /// The function index's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }
}

impl PartialEq for IndexCall {
    fn eq(&self, other: &IndexCall) -> bool {
        self.name() == other.name()
    }
}

impl fmt::Debug for IndexCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IndexCall({})", self.name())
    }
}

/// What a built-in function of the language is, for tools that list or complete them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FunctionKind {
    /// A function of its arguments, per row.
    Scalar,
    /// An aggregate over the rows of a group (`count`, `sum`, …; `min`/`max` with one argument).
    Aggregate,
    /// A test of an entity's components or their change ticks (`has`, `changed`, `added`).
    Component,
    /// A walk along a reference (`depth`, `root`, `descendant_of`).
    Hierarchy,
}

/// A built-in function: its name and how it is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionInfo {
    /// Its name, lower case (function names are case-insensitive).
    pub name: &'static str,
    /// What it is.
    pub kind: FunctionKind,
    /// How it is called, for help text: `round(x [, digits])`.
    pub signature: &'static str,
}

/// Every built-in function of the language (aggregates, scalars, component tests and
/// hierarchy walks), in alphabetical order. `min` and `max` are listed once, as scalars: with
/// one argument they aggregate.
///
/// ```
/// use ecsdb_query::{BUILTIN_FUNCTIONS, FunctionKind};
/// let sum = BUILTIN_FUNCTIONS.iter().find(|f| f.name == "sum").unwrap();
/// assert_eq!(sum.kind, FunctionKind::Aggregate);
/// ```
pub const BUILTIN_FUNCTIONS: &[FunctionInfo] = &[
    FunctionInfo { name: "abs", kind: FunctionKind::Scalar, signature: "abs(x)" },
    FunctionInfo { name: "added", kind: FunctionKind::Component, signature: "added(C)" },
    FunctionInfo { name: "avg", kind: FunctionKind::Aggregate, signature: "avg(x)" },
    FunctionInfo { name: "ceil", kind: FunctionKind::Scalar, signature: "ceil(x)" },
    FunctionInfo { name: "changed", kind: FunctionKind::Component, signature: "changed(C)" },
    FunctionInfo { name: "count", kind: FunctionKind::Aggregate, signature: "count(*) | count(x)" },
    FunctionInfo { name: "depth", kind: FunctionKind::Hierarchy, signature: "depth(C.f)" },
    FunctionInfo {
        name: "descendant_of",
        kind: FunctionKind::Hierarchy,
        signature: "descendant_of(C.f, entity [, max_depth])",
    },
    FunctionInfo { name: "distance", kind: FunctionKind::Scalar, signature: "distance(a, b)" },
    FunctionInfo { name: "floor", kind: FunctionKind::Scalar, signature: "floor(x)" },
    FunctionInfo { name: "has", kind: FunctionKind::Component, signature: "has(C)" },
    FunctionInfo { name: "inside", kind: FunctionKind::Scalar, signature: "inside(p, lo, hi)" },
    FunctionInfo { name: "len", kind: FunctionKind::Scalar, signature: "len(s)" },
    FunctionInfo { name: "lower", kind: FunctionKind::Scalar, signature: "lower(s)" },
    FunctionInfo { name: "max", kind: FunctionKind::Scalar, signature: "max(x) | max(a, b, …)" },
    FunctionInfo { name: "min", kind: FunctionKind::Scalar, signature: "min(x) | min(a, b, …)" },
    FunctionInfo { name: "root", kind: FunctionKind::Hierarchy, signature: "root(C.f)" },
    FunctionInfo { name: "round", kind: FunctionKind::Scalar, signature: "round(x [, digits])" },
    FunctionInfo { name: "sqrt", kind: FunctionKind::Scalar, signature: "sqrt(x)" },
    FunctionInfo { name: "sum", kind: FunctionKind::Aggregate, signature: "sum(x)" },
    FunctionInfo { name: "upper", kind: FunctionKind::Scalar, signature: "upper(s)" },
    FunctionInfo { name: "within", kind: FunctionKind::Scalar, signature: "within(p, center, radius)" },
];

/// Functions registered from Rust, by name.
#[derive(Clone, Default)]
pub struct FunctionRegistry {
    functions: HashMap<String, Arc<RegisteredFn>>,
}

impl FunctionRegistry {
    /// Registers (or replaces) a function. Names are matched case-insensitively, like the
    /// built-ins; a registered function cannot shadow a built-in or an aggregate.
    pub fn register(&mut self, name: &str, f: Arc<RegisteredFn>) -> Result<(), String> {
        if !ecsdb_engine::is_identifier(name) {
            return Err(format!("'{name}' is not a valid function name"));
        }
        let lower = name.to_ascii_lowercase();
        if Builtin::from_name(&lower).is_some() || matches!(lower.as_str(), "count" | "sum" | "avg" | "has") {
            return Err(format!("'{name}' is a built-in function"));
        }
        self.functions.insert(lower, f);
        Ok(())
    }

    /// The function of this name.
    pub fn get(&self, name: &str) -> Option<(Arc<str>, Arc<RegisteredFn>)> {
        let lower = name.to_ascii_lowercase();
        self.functions.get(&lower).map(|f| (Arc::from(lower.as_str()), f.clone()))
    }

    /// Every registered name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }
}

impl fmt::Debug for FunctionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.functions.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_types() {
        use DataType as T;
        assert_eq!(Builtin::Abs.result_type(&[T::Int]), Ok(T::Int));
        assert!(Builtin::Abs.result_type(&[T::Str]).is_err());
        assert!(Builtin::Abs.result_type(&[T::Int, T::Int]).is_err());
        assert_eq!(Builtin::Min.result_type(&[T::Int, T::Float]), Ok(T::Float));
        assert!(Builtin::Min.result_type(&[T::Int]).is_err());
        assert!(Builtin::Max.result_type(&[T::Int, T::Str]).is_err());
        assert_eq!(Builtin::Distance.result_type(&[T::Vec3, T::Vec3]), Ok(T::Float));
        assert!(Builtin::Distance.result_type(&[T::Vec3, T::Vec2]).is_err());
        assert_eq!(Builtin::Within.result_type(&[T::Vec2, T::Vec2, T::Int]), Ok(T::Bool));
        assert_eq!(Builtin::Inside.result_type(&[T::Vec2, T::Any, T::Vec2]), Ok(T::Bool));
        assert_eq!(Builtin::from_name("SQRT"), Some(Builtin::Sqrt));
    }

    #[test]
    fn builtin_values() {
        let f = |b: Builtin, args: &[Value]| b.call(args);
        assert_eq!(f(Builtin::Abs, &[Value::Int(-3)]), Ok(Value::Int(3)));
        assert!(f(Builtin::Abs, &[Value::Int(i64::MIN)]).is_err());
        assert_eq!(f(Builtin::Sqrt, &[Value::Int(-1)]), Ok(Value::Null));
        assert_eq!(f(Builtin::Sqrt, &[Value::Int(4)]), Ok(Value::Float(2.0)));
        assert_eq!(f(Builtin::Round, &[Value::Float(2.5)]), Ok(Value::Float(3.0)));
        assert_eq!(f(Builtin::Round, &[Value::Float(2.345), Value::Int(2)]), Ok(Value::Float(2.35)));
        assert_eq!(f(Builtin::Min, &[Value::Int(3), Value::Float(2.5)]), Ok(Value::Float(2.5)));
        assert_eq!(f(Builtin::Max, &[Value::Int(3), Value::Float(2.5)]), Ok(Value::Float(3.0)));
        assert_eq!(f(Builtin::Max, &[Value::Int(3), Value::Null]), Ok(Value::Null));
        assert_eq!(f(Builtin::Len, &[Value::Str("héllo".into())]), Ok(Value::Int(5)));
        assert_eq!(f(Builtin::Upper, &[Value::Str("abc".into())]), Ok(Value::Str("ABC".into())));
        assert_eq!(f(Builtin::Distance, &[Value::Vec2([0.0, 0.0]), Value::Vec2([3.0, 4.0])]), Ok(Value::Float(5.0)));
        assert_eq!(
            f(Builtin::Within, &[Value::Vec2([0.0, 0.0]), Value::Vec2([3.0, 4.0]), Value::Int(5)]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            f(Builtin::Inside, &[Value::Vec2([1.0, 5.0]), Value::Vec2([0.0, 0.0]), Value::Vec2([2.0, 5.0])]),
            Ok(Value::Bool(true))
        );
        assert!(f(Builtin::Distance, &[Value::Vec2([0.0, 0.0]), Value::Int(1)]).is_err());
        assert!(f(Builtin::Len, &[]).is_err());
    }

    #[test]
    fn registry_rules() {
        let mut r = FunctionRegistry::default();
        let f: Arc<RegisteredFn> = Arc::new(|_| Ok(Value::Bool(true)));
        assert!(r.register("visible", f.clone()).is_ok());
        assert!(r.register("abs", f.clone()).is_err());
        assert!(r.register("Count", f.clone()).is_err());
        assert!(r.register("not a name", f).is_err());
        assert!(r.get("VISIBLE").is_some());
        assert_eq!(r.names().collect::<Vec<_>>(), ["visible"]);
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;
    use crate::plan::logical::{AggFunc, HierarchyFunc};

    /// The list is the binder's: every function it knows is listed, and nothing else.
    #[test]
    fn the_list_is_every_function_the_binder_knows() {
        let listed: Vec<&str> = BUILTIN_FUNCTIONS.iter().map(|f| f.name).collect();
        assert!(listed.windows(2).all(|w| w[0] < w[1]), "alphabetical, once each");
        let mut known: Vec<&str> = Builtin::ALL.iter().map(|b| b.name()).collect();
        known.extend([AggFunc::Count, AggFunc::Sum, AggFunc::Avg, AggFunc::Min, AggFunc::Max].map(AggFunc::name));
        known.extend([HierarchyFunc::Depth, HierarchyFunc::Root, HierarchyFunc::DescendantOf].map(HierarchyFunc::name));
        known.extend(["has", "changed", "added"]);
        known.sort_unstable();
        known.dedup();
        assert_eq!(listed, known);
    }
}
