//! Statement parameters: `$1`, `$2`, … (positional) and `$name` (named), bound from Rust.
//!
//! Parameters are values, never text: they are not spliced into the statement, so they need
//! no quoting and cannot change its meaning. Every method that runs a statement takes
//! `impl Into<Params>`: `()` for none, an array, slice, `Vec` or tuple of values for `$1`,
//! `$2`, …, a map for `$name`s, or a [`Params`] built with both.
//!
//! ```
//! use ecsdb_query::Params;
//! use ecsdb_engine::Value;
//! use std::collections::BTreeMap;
//! assert!(Params::from(()).is_empty());
//! assert_eq!(Params::from((1, "red", 2.5)).positional_values(), [Value::Int(1), Value::Str("red".into()), Value::Float(2.5)]);
//! assert_eq!(Params::from([7, 8]).get_positional(2), Some(&Value::Int(8)));
//! let named: BTreeMap<&str, i64> = [("lvl", 3)].into();
//! assert_eq!(Params::from(named).get_named("lvl"), Some(&Value::Int(3)));
//! ```
//!
//! ```
//! use ecsdb_query::Params;
//! use ecsdb_engine::Value;
//! let p = Params::positional([50]).bind("red").set("team", "blue");
//! assert_eq!(p.get_positional(1), Some(&Value::Int(50)));
//! assert_eq!(p.get_positional(2), Some(&Value::Str("red".into())));
//! assert_eq!(p.get_named("team"), Some(&Value::Str("blue".into())));
//! assert_eq!(p.get_positional(3), None);
//! ```

use ecsdb_engine::Value;

/// Positional (`$1`, `$2`, …) and named (`$name`) parameter values.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct Params {
    positional: Vec<Value>,
    named: Vec<(String, Value)>,
}

impl Params {
    /// No parameters.
    pub fn new() -> Params {
        Params::default()
    }

    /// Positional parameters: the first value is `$1`.
    pub fn positional(values: impl IntoIterator<Item = impl Into<Value>>) -> Params {
        Params { positional: values.into_iter().map(Into::into).collect(), named: Vec::new() }
    }

    /// Adds the next positional parameter.
    pub fn bind(mut self, value: impl Into<Value>) -> Params {
        self.positional.push(value.into());
        self
    }

    /// Sets the named parameter `$name` (a leading `$` in `name` is ignored), replacing an
    /// earlier value of the same name.
    pub fn set(mut self, name: &str, value: impl Into<Value>) -> Params {
        let name = name.strip_prefix('$').unwrap_or(name);
        let value = value.into();
        match self.named.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.named.push((name.to_string(), value)),
        }
        self
    }

    /// The value of `$n` (1-based).
    pub fn get_positional(&self, n: usize) -> Option<&Value> {
        n.checked_sub(1).and_then(|i| self.positional.get(i))
    }

    /// The value of `$name`.
    pub fn get_named(&self, name: &str) -> Option<&Value> {
        self.named.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The positional values, `$1` first.
    pub fn positional_values(&self) -> &[Value] {
        &self.positional
    }

    /// The positional values, `$1` first, to bind again in place: a statement run many
    /// times keeps one `Params` and replaces its values, with no allocation per run.
    ///
    /// ```
    /// use ecsdb_query::Params;
    /// use ecsdb_engine::Value;
    /// let mut p = Params::positional([1]);
    /// p.positional_mut()[0] = Value::Int(2);
    /// assert_eq!(p.get_positional(1), Some(&Value::Int(2)));
    /// ```
    pub fn positional_mut(&mut self) -> &mut Vec<Value> {
        &mut self.positional
    }

    /// Number of positional parameters.
    pub fn positional_len(&self) -> usize {
        self.positional.len()
    }

    /// Whether no parameter is set.
    pub fn is_empty(&self) -> bool {
        self.positional.is_empty() && self.named.is_empty()
    }
}

impl From<()> for Params {
    fn from((): ()) -> Params {
        Params::new()
    }
}

impl From<&Params> for Params {
    fn from(params: &Params) -> Params {
        params.clone()
    }
}

impl<T: Into<Value>, const N: usize> From<[T; N]> for Params {
    fn from(values: [T; N]) -> Params {
        Params::positional(values)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Params {
    fn from(values: Vec<T>) -> Params {
        Params::positional(values)
    }
}

impl<T: Into<Value> + Clone> From<&[T]> for Params {
    fn from(values: &[T]) -> Params {
        Params::positional(values.iter().cloned())
    }
}

impl<K: AsRef<str>, V: Into<Value>, S> From<std::collections::HashMap<K, V, S>> for Params {
    fn from(named: std::collections::HashMap<K, V, S>) -> Params {
        named.into_iter().fold(Params::new(), |p, (k, v)| p.set(k.as_ref(), v))
    }
}

impl<K: AsRef<str>, V: Into<Value>> From<std::collections::BTreeMap<K, V>> for Params {
    fn from(named: std::collections::BTreeMap<K, V>) -> Params {
        named.into_iter().fold(Params::new(), |p, (k, v)| p.set(k.as_ref(), v))
    }
}

/// Tuples of up to eight values are positional parameters.
macro_rules! params_from_tuple {
    ($($name:ident),+) => {
        impl<$($name: Into<Value>),+> From<($($name,)+)> for Params {
            #[allow(non_snake_case)]
            fn from(($($name,)+): ($($name,)+)) -> Params {
                Params { positional: vec![$($name.into()),+], named: Vec::new() }
            }
        }
    };
}
params_from_tuple!(A);
params_from_tuple!(A, B);
params_from_tuple!(A, B, C);
params_from_tuple!(A, B, C, D);
params_from_tuple!(A, B, C, D, E);
params_from_tuple!(A, B, C, D, E, F);
params_from_tuple!(A, B, C, D, E, F, G);
params_from_tuple!(A, B, C, D, E, F, G, H);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_values_replace_and_strip_dollar() {
        let p = Params::new().set("$a", 1).set("a", 2).set("b", true);
        assert_eq!(p.get_named("a"), Some(&Value::Int(2)));
        assert_eq!(p.get_named("b"), Some(&Value::Bool(true)));
        assert_eq!(p.get_positional(0), None);
        assert!(!p.is_empty());
        assert!(Params::new().is_empty());
        assert_eq!(Params::positional([1.5, 2.5]).positional_len(), 2);
    }
}
