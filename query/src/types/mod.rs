//! The language's types, operators and function signatures: the leaf every stage below the
//! parser shares (the binder checks with them, the planner and execution dispatch on them).
//! It depends on nothing else of the crate.
//!
//! - value types are the engine's [`ValueType`](ecsdb_engine::ValueType) (with `Any` for what
//!   is known only at run time);
//! - [`operators`]: binary operators, aggregates, hierarchy walks;
//! - [`functions`]: the built-in functions, their signatures and [`BUILTIN_FUNCTIONS`];
//! - [`rules`]: what each operator accepts and returns, and what a field can store.

pub mod functions;
pub mod operators;
pub mod rules;

pub use functions::{BUILTIN_FUNCTIONS, Builtin, FunctionInfo, FunctionKind};
pub use operators::{AggFunc, BinaryOp, HierarchyFunc};
