//! Expressions: the bound expression tree, and its evaluation a batch of rows at a time into
//! typed vectors.
//!
//! This is the one expression layer of the query engine, below the binder, the planner and
//! execution: the binder builds [`Expr`] trees, execution evaluates WHERE conditions,
//! projections, sort keys, aggregate inputs, GROUP BY keys and UPDATE values through it, and
//! planning folds constants with it. It knows the world only as the tables and entities its
//! leaves read; nothing here imports the planner, execution or the database.
//!
//! - [`tree`]: [`Expr`] and [`ExprKind`], slots, parameters, aggregates; [`display`]: how the
//!   language writes them back;
//! - [`ops`]: the operators' semantics on single values; [`builtins`]: the built-in
//!   functions' on single values; [`relations`]: paths and hierarchy walks along references;
//! - [`vector`]: [`Vector`], the values of an expression for a batch (f64, i64, bool, string
//!   views, entities, vec2/vec3, with a validity mask; [`Value`](ecsdb_engine::Value) only for
//!   constants, objects and values of run-time type);
//! - [`eval`]: the [`Evaluator`] walking an expression over a batch, reading leaves from a
//!   [`Leaves`] source, and narrowing selections through `AND`;
//! - kernels per operator family, specialised on operand types and on constant operands:
//!   [`arith`] (`+ - * / %`, unary minus, `||`), [`compare`] (comparisons, `IN`, `IS NULL`,
//!   `NOT`, truth), [`like`] (compiled `LIKE` patterns), [`functions`] (the built-ins);
//! - [`fallback`]: the row-at-a-time path over the value rules of
//!   [`crate::expr::ops`], for the combinations the kernels do not specialise;
//! - [`fold`]: constant folding for the planner.

pub mod arith;
pub mod builtins;
pub mod compare;
pub mod compiled;
pub mod display;
pub mod eval;
pub mod fallback;
pub mod fold;
pub mod functions;
pub mod like;
pub mod operand;
pub mod ops;
pub mod relations;
pub mod tree;
pub mod vector;

pub use display::{DisplayContext, literal_text};
pub use eval::{Evaluator, Leaves, NoRows};
pub use fold::{eval_constant, fold_constants};
pub use tree::{AggregateExpr, ComponentSlot, Expr, ExprKind, ParamKey, ParamSpec, PathHop, Slot, eval_error};
pub use vector::{Prim, StrVec, Vector, and_validity};
