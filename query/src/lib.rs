//! # ecsdb-query
//!
//! The text front door of ecsdb: the query language of `docs/query-language.md`, run against
//! the same archetype tables typed Rust queries read.
//!
//! ```text
//!  text ──► parse ──► AST ──► bind ──► logical plan ──► plan ──► physical plan ──► execute ──► rows
//! ```
//!
//! - [`parse`]: the pest grammar to a typed AST with spans;
//! - [`bind`]: names resolved against the catalog, types inferred and checked, the
//!   implicit-required rule applied ([`plan::logical`]);
//! - [`plan`]: matched tables, access paths, predicates pushed down per table, top-k, EXPLAIN
//!   ([`plan::physical`], [`plan::explain`]);
//! - [`execute`]: column-at-a-time kernels over the tables, the batch evaluator, aggregation,
//!   atomic mutations;
//! - [`Database`], [`Prepared`], [`Params`], [`ResultSet`]: the API programs and tools use.
//!
//! What it optimises, in order: answers exactly as the language says (three-valued logic,
//! deterministic order, atomic statements, errors that point at the text); speed close to a
//! hand-written typed loop; no panic on any input.
//!
//! ## Choices where the language contract is silent
//!
//! - **Rows are entities.** A SELECT ranges over the live entities that match its terms; with
//!   no term at all, over every live entity (so `SELECT count(*)` counts entities, and
//!   `SELECT 1 + 1` gives one row per entity, none in an empty world).
//! - **Integers do not silently become floats**: `+ - *` overflowing i64, `abs(i64::MIN)`,
//!   `-i64::MIN` and `sum()` overflowing are `type` errors (SQLite would switch to float).
//!   `int % int` takes the dividend's sign; `%` by zero, like `/` by zero, is null; on floats
//!   `%` is the remainder of truncated division.
//! - `||` joins strings, turning numbers, booleans and entities into their printed text first.
//! - Vectors add and subtract element-wise (same size) and scale by a number (`2 * v`,
//!   `v * 2`, `v / 2`); `=` and `!=` compare them; they cannot be ordered.
//! - `min(a, b, …)` / `max(a, b, …)` with two or more arguments are scalar (null if any
//!   argument is null); with one argument, the aggregates. `round(x, digits)` is accepted;
//!   `floor`, `ceil`, `round` and `abs` keep ints as ints. `sqrt` of a negative is null.
//! - ORDER BY and GROUP BY accept an item's alias or its 1-based position (as SQLite); an
//!   alias wins over a component of the same name. A negative LIMIT means no limit, a negative
//!   OFFSET none; a null LIMIT or OFFSET is ignored.
//! - Without ORDER BY, groups come out ordered by their GROUP BY values; rows come in table
//!   order (unspecified by the contract).
//! - `ORDER BY` over values of mixed types (possible only through parameters or registered
//!   functions) orders null, bool, numbers, strings, entities, vectors, objects.
//! - `REMOVE A, B` without a FROM naming them targets entities with at least one of them
//!   (`A | B`); the count is of entities that lost something.
//! - `ADD` values and `UPDATE` values may read the target's components (as of before the
//!   statement); the components they name are required like anywhere else.
//! - An entity target (`DESPAWN 12v0`, `UPDATE C SET … FROM $1`) that is stale is a
//!   `stale_entity` error; one that is alive but does not match the statement's implied terms
//!   is skipped (count 0).
//! - A value too large for an `f32` field (it would become infinite) is a `type` error.
//! - `SHOW TABLES` lists every archetype table, including the empty-set one (components
//!   `""`); `DESCRIBE` has columns `field`, `type`, `default` (null for a field without one); CREATE COMPONENT returns no columns.
//!
//! ```
//! use ecsdb_query::{Database, Params};
//! use ecsdb_engine::Value;
//!
//! let mut db = Database::new();
//! db.execute_script(
//!     "CREATE COMPONENT Health (hp f32, max f32);
//!      CREATE COMPONENT Team (name string);
//!      SPAWN Health {hp: 10, max: 100}, Team {name: 'red'};
//!      SPAWN Health {hp: 80, max: 100}, Team {name: 'blue'};",
//! )
//! .unwrap();
//! let rs = db.query("SELECT Team.name, Health.hp WHERE Health.hp < 50", ()).unwrap();
//! assert_eq!(rs.columns, ["Team.name", "Health.hp"]);
//! assert_eq!(rs.rows, [[Value::Str("red".into()), Value::Float(10.0)]]);
//! assert_eq!(rs.to_json_string(), r#"{"columns":["Team.name","Health.hp"],"rows":[["red",10.0]]}"#);
//!
//! let mut heal = db.prepare("UPDATE Health SET hp = Health.hp + $1 WHERE Health.hp < Health.max").unwrap();
//! heal.execute(&mut db, Params::positional([5])).unwrap();
//! assert_eq!(db.query("SELECT sum(Health.hp)", ()).unwrap().rows[0][0], Value::Float(100.0));
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod bind;
mod database;
pub mod error;
mod execute;
mod expr;
mod functions;
pub mod lex;
pub mod live;
mod params;
pub mod parse;
mod plan;
mod result;
pub mod schedule;
#[cfg(test)]
mod test_rng;
mod types;

pub use bind::parse_value;
pub use database::{CachedStatement, Database, Prepared, ScriptStatement, Selected, SystemBuilder, is_read_only};
pub use error::{Error, ErrorKind, Span};
pub use params::Params;
pub use plan::PlanOptions;
pub use result::{ResultSet, value_to_json};
pub use types::{BUILTIN_FUNCTIONS, FunctionInfo, FunctionKind};
