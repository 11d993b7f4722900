//! The built-in functions' signatures: their names, what they take and what they return.
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

use ecsdb_engine::ValueType;

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
    pub fn result_type(self, args: &[ValueType]) -> Result<ValueType, String> {
        use ValueType as T;
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

impl FunctionKind {
    /// Its name, as tools show it (and the `schema` RPC sends it).
    pub fn name(self) -> &'static str {
        match self {
            FunctionKind::Scalar => "scalar",
            FunctionKind::Aggregate => "aggregate",
            FunctionKind::Component => "component",
            FunctionKind::Hierarchy => "hierarchy",
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AggFunc, HierarchyFunc};

    #[test]
    fn builtin_types() {
        use ValueType as T;
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
