//! Typed vectors: the values of one expression for a batch of rows.
//!
//! A [`Vector`] holds one column of results in its natural Rust type (`f64`, `i64`, `bool`,
//! string views, entities, 2- and 3-vectors) with an optional validity mask (`false` = null),
//! Arrow-style. A constant is a [`Vector::Scalar`]: kernels specialise on it instead of
//! broadcasting. [`Value`] appears only at the edges: scalars, and [`Vector::Values`], the
//! fallback for components read as objects and for values whose type is only known at run
//! time (parameters and registered functions of type `any`); every kernel accepts it and
//! applies the row-at-a-time rules of [`crate::expr::ops`], so any expression evaluates,
//! and the typed shapes are the fast ones.

use std::borrow::Cow;

use ecsdb_engine::{Entity, Value};

/// Which rows hold a value: `None` when every row does.
pub type Validity = Option<Vec<bool>>;

/// Values of one plain type with their validity.
#[derive(Clone, Debug, PartialEq)]
pub struct Prim<T> {
    /// One value per row (unspecified where the row is null).
    pub values: Vec<T>,
    /// Which rows are not null.
    pub valid: Validity,
}

impl<T: Copy> Prim<T> {
    /// Every row valid.
    pub fn all(values: Vec<T>) -> Prim<T> {
        Prim { values, valid: None }
    }

    /// Whether row `i` is not null.
    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        self.valid.as_ref().is_none_or(|v| v[i])
    }

    /// Row `i`'s value, `None` when null.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        self.is_valid(i).then(|| self.values[i])
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.values.len()
    }
}

/// Where one row's string is: borrowed from column memory, or in the vector's arena.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StrRef<'a> {
    View(&'a str),
    Arena(u32, u32),
}

/// Strings of a batch: views into column memory (no copy), or text computed by a kernel kept
/// in one arena (no allocation per row).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StrVec<'a> {
    items: Vec<StrRef<'a>>,
    arena: String,
    valid: Validity,
}

impl<'a> StrVec<'a> {
    /// An empty vector with room for `n` rows.
    pub fn with_capacity(n: usize) -> StrVec<'a> {
        StrVec { items: Vec::with_capacity(n), arena: String::new(), valid: None }
    }

    /// Views of strings in memory that outlives the vector.
    pub fn from_views(views: impl IntoIterator<Item = &'a str>) -> StrVec<'a> {
        StrVec { items: views.into_iter().map(StrRef::View).collect(), arena: String::new(), valid: None }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Appends a borrowed string.
    #[inline]
    pub fn push_view(&mut self, s: &'a str) {
        self.items.push(StrRef::View(s));
        if let Some(v) = &mut self.valid {
            v.push(true);
        }
    }

    /// Appends a string built by `write` into the arena.
    #[inline]
    pub fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        let start = self.arena.len();
        write(&mut self.arena);
        self.items.push(StrRef::Arena(start as u32, (self.arena.len() - start) as u32));
        if let Some(v) = &mut self.valid {
            v.push(true);
        }
    }

    /// Appends a null.
    #[inline]
    pub fn push_null(&mut self) {
        let n = self.items.len();
        self.items.push(StrRef::View(""));
        self.valid.get_or_insert_with(|| vec![true; n]).push(false);
    }

    /// Row `i`'s string, `None` when null.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&str> {
        if !self.valid.as_ref().is_none_or(|v| v[i]) {
            return None;
        }
        Some(match self.items[i] {
            StrRef::View(s) => s,
            StrRef::Arena(start, len) => &self.arena[start as usize..(start + len) as usize],
        })
    }

    /// The validity mask.
    pub fn validity(&self) -> &Validity {
        &self.valid
    }
}

/// The values of an expression for a batch of rows.
#[derive(Clone, Debug, PartialEq)]
pub enum Vector<'a> {
    /// The same value for each of `len` rows.
    Scalar(Value, usize),
    /// Booleans.
    Bool(Prim<bool>),
    /// Integers (every integer field type reads as i64).
    Int(Prim<i64>),
    /// Floats (every float field type reads as f64).
    Float(Prim<f64>),
    /// Strings.
    Str(StrVec<'a>),
    /// Entities (the null entity reads as null).
    Entity(Prim<Entity>),
    /// 2-vectors.
    Vec2(Prim<[f64; 2]>),
    /// 3-vectors.
    Vec3(Prim<[f64; 3]>),
    /// Anything else, one [`Value`] per row (objects; values of run-time type).
    Values(Vec<Value>),
}

impl<'a> Vector<'a> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Vector::Scalar(_, n) => *n,
            Vector::Bool(p) => p.len(),
            Vector::Int(p) => p.len(),
            Vector::Float(p) => p.len(),
            Vector::Str(s) => s.len(),
            Vector::Entity(p) => p.len(),
            Vector::Vec2(p) => p.len(),
            Vector::Vec3(p) => p.len(),
            Vector::Values(v) => v.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `len` nulls.
    pub fn nulls(len: usize) -> Vector<'a> {
        Vector::Scalar(Value::Null, len)
    }

    /// Whether row `i` is null.
    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Vector::Scalar(v, _) => v.is_null(),
            Vector::Bool(p) => !p.is_valid(i),
            Vector::Int(p) => !p.is_valid(i),
            Vector::Float(p) => !p.is_valid(i),
            Vector::Str(s) => s.get(i).is_none(),
            Vector::Entity(p) => !p.is_valid(i),
            Vector::Vec2(p) => !p.is_valid(i),
            Vector::Vec3(p) => !p.is_valid(i),
            Vector::Values(v) => v[i].is_null(),
        }
    }

    /// Row `i` as a [`Value`] (at the edges: results, fallbacks).
    pub fn value(&self, i: usize) -> Value {
        match self {
            Vector::Scalar(v, _) => v.clone(),
            Vector::Bool(p) => p.get(i).map_or(Value::Null, Value::Bool),
            Vector::Int(p) => p.get(i).map_or(Value::Null, Value::Int),
            Vector::Float(p) => p.get(i).map_or(Value::Null, Value::Float),
            Vector::Str(s) => s.get(i).map_or(Value::Null, |s| Value::Str(s.to_string())),
            Vector::Entity(p) => p.get(i).map_or(Value::Null, Value::Entity),
            Vector::Vec2(p) => p.get(i).map_or(Value::Null, Value::Vec2),
            Vector::Vec3(p) => p.get(i).map_or(Value::Null, Value::Vec3),
            Vector::Values(v) => v[i].clone(),
        }
    }

    /// Every row as a [`Value`].
    pub fn into_values(self) -> Vec<Value> {
        match self {
            Vector::Values(v) => v,
            Vector::Scalar(v, n) => vec![v; n],
            other => (0..other.len()).map(|i| other.value(i)).collect(),
        }
    }

    /// A vector of the values' common type where they share one, else [`Vector::Values`].
    pub fn from_values(values: Vec<Value>) -> Vector<'a> {
        fn prim<T: Copy>(values: &[Value], zero: T, get: impl Fn(&Value) -> Option<T>) -> Option<Prim<T>> {
            let mut out = Vec::with_capacity(values.len());
            let mut valid: Validity = None;
            for (i, v) in values.iter().enumerate() {
                if v.is_null() {
                    valid.get_or_insert_with(|| vec![true; values.len()])[i] = false;
                    out.push(zero);
                } else {
                    out.push(get(v)?);
                }
            }
            Some(Prim { values: out, valid })
        }
        let first = values.iter().find(|v| !v.is_null());
        let typed = match first {
            None => return Vector::Scalar(Value::Null, values.len()),
            Some(Value::Bool(_)) => {
                prim(&values, false, |v| if let Value::Bool(b) = v { Some(*b) } else { None }).map(Vector::Bool)
            }
            Some(Value::Int(_)) => {
                prim(&values, 0, |v| if let Value::Int(b) = v { Some(*b) } else { None }).map(Vector::Int)
            }
            Some(Value::Float(_)) => {
                prim(&values, 0.0, |v| if let Value::Float(b) = v { Some(*b) } else { None }).map(Vector::Float)
            }
            Some(Value::Entity(_)) => {
                prim(&values, Entity::NULL, |v| if let Value::Entity(b) = v { Some(*b) } else { None })
                    .map(Vector::Entity)
            }
            Some(Value::Vec2(_)) => {
                prim(&values, [0.0; 2], |v| if let Value::Vec2(b) = v { Some(*b) } else { None }).map(Vector::Vec2)
            }
            Some(Value::Vec3(_)) => {
                prim(&values, [0.0; 3], |v| if let Value::Vec3(b) = v { Some(*b) } else { None }).map(Vector::Vec3)
            }
            Some(Value::Str(_)) => {
                if values.iter().all(|v| matches!(v, Value::Str(_) | Value::Null)) {
                    let mut s = StrVec::with_capacity(values.len());
                    for v in &values {
                        match v {
                            Value::Str(x) => s.push_with(|a| a.push_str(x)),
                            _ => s.push_null(),
                        }
                    }
                    Some(Vector::Str(s))
                } else {
                    None
                }
            }
            _ => None,
        };
        typed.unwrap_or(Vector::Values(values))
    }

    /// The value of every row when it is one constant.
    pub fn as_scalar(&self) -> Option<&Value> {
        match self {
            Vector::Scalar(v, _) => Some(v),
            _ => None,
        }
    }

    /// The numbers of a numeric vector as f64 (ints converted), borrowed where already f64.
    pub fn f64s(&self) -> Option<(Cow<'_, [f64]>, &Validity)> {
        match self {
            Vector::Float(p) => Some((Cow::Borrowed(&p.values), &p.valid)),
            Vector::Int(p) => Some((Cow::Owned(p.values.iter().map(|&x| x as f64).collect()), &p.valid)),
            _ => None,
        }
    }
}

/// Combines two validity masks (a row is valid where both are).
pub fn and_validity(a: &Validity, b: &Validity) -> Validity {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(x.iter().zip(y).map(|(p, q)| *p && *q).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_typed_vectors() {
        let vals = vec![Value::Int(1), Value::Null, Value::Int(-3)];
        let v = Vector::from_values(vals.clone());
        assert!(matches!(v, Vector::Int(_)));
        assert_eq!(v.clone().into_values(), vals);
        assert!(v.is_null(1) && !v.is_null(0));
        let mixed = vec![Value::Int(1), Value::Float(2.0)];
        assert!(matches!(Vector::from_values(mixed.clone()), Vector::Values(_)));
        let strs = vec![Value::Str("a".into()), Value::Null, Value::Str("bc".into())];
        let s = Vector::from_values(strs.clone());
        assert_eq!(s.clone().into_values(), strs);
        assert_eq!(Vector::from_values(vec![Value::Null; 2]), Vector::Scalar(Value::Null, 2));
    }

    #[test]
    fn string_arena_and_views() {
        let owner = String::from("view");
        let mut s = StrVec::with_capacity(3);
        s.push_view(&owner);
        s.push_with(|a| a.push_str("built"));
        s.push_null();
        assert_eq!((s.get(0), s.get(1), s.get(2)), (Some("view"), Some("built"), None));
    }
}
