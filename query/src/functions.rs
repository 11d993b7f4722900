//! The functions an expression may call: the built-ins (their signatures are in
//! [`crate::types`]) and functions registered from Rust, by name.
//!
//! `has(C)` and the aggregates (`count`, `sum`, `avg`, `min`/`max` with one argument) are bound
//! specially and are not [`Function`]s; neither is `name(C)` naming a function index
//! ([`IndexCall`]), which reads the index's maintained answer. A registered function takes any
//! values and returns any value; its result type is known only when it runs.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use ecsdb_engine::Value;

use crate::types::Builtin;

/// A function registered from Rust: `Fn(&[Value]) -> Result<Value, String>`.
pub type RegisteredFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

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
pub struct IndexCall(pub ecsdb_engine::IndexFunction);

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
