//! Statement parameters: `$1`, `$2`, … (positional) and `$name` (named), bound from Rust.
//!
//! Parameters are values, never text: they are not spliced into the statement, so they need
//! no quoting and cannot change its meaning.
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
