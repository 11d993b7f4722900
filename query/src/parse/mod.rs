//! The parse stage: query text to a typed syntax tree ([`ast`]).
//!
//! The grammar is `grammar/ecsdb.pest` (the language of `docs/query-language.md`); the tree
//! keeps the [`Span`] of every node so later stages point at the text they complain about.
//! Syntax errors say in words what was expected and where:
//!
//! ```
//! use ecsdb_query::parse::{parse_statement, Statement};
//! let stmt = parse_statement("SELECT Name.value FROM Health WHERE Health.hp < 5").unwrap();
//! assert!(matches!(stmt, Statement::Select(_)));
//!
//! let src = "SELECT FROM Health";
//! let err = parse_statement(src).unwrap_err();
//! assert_eq!(
//!     err.render(src),
//!     "syntax error at line 1, column 8: expected an expression or `*`, found `FROM` (a reserved word)\n\
//!      SELECT FROM Health\n\
//!      \x20      ^~~~"
//! );
//! ```
//!
//! No input makes the parser panic or overflow the stack: brackets may nest at most
//! [`MAX_NESTING`] deep and an expression tree may be at most [`MAX_EXPR_DEPTH`] levels high;
//! deeper input is a syntax error.

pub mod ast;
mod grammar;
mod number;
mod parser;
mod precedence;
mod prepare;
mod script;
mod spawn_shapes;
mod syntax_error;

pub(crate) use script::{LiteralField, LiteralSpawn, LiteralValue, Script, ScriptItem};

pub use ast::*;

use crate::error::Error;

/// The deepest nesting of brackets (`(`, `[`, `{`) the parser accepts.
pub const MAX_NESTING: usize = 200;

/// The highest expression tree the parser produces (a literal is 1; `a + b` is 2; parentheses
/// add nothing). Later stages may recurse over expressions: no tree is higher. (Keep such
/// recursive functions' frames small: 256 levels of a 4 KiB debug-build frame is 1 MiB.)
pub const MAX_EXPR_DEPTH: usize = 256;

/// Parses exactly one statement, with an optional trailing `;`.
///
/// Empty input (or only comments) is a syntax error.
pub fn parse_statement(src: &str) -> Result<Statement, Error> {
    let mut statements = parser::parse(src, parser::Entry::Statement)?;
    match statements.pop() {
        Some(statement) if statements.is_empty() => Ok(statement),
        _ => Err(Error::internal("parser: one statement expected")),
    }
}

/// Parses a script: statements separated by `;`. Empty statements (`;;`, a trailing `;`,
/// an empty or comment-only script) are skipped.
///
/// ```
/// let statements = ecsdb_query::parse::parse_script("SHOW TABLES;; DESCRIBE Health;").unwrap();
/// assert_eq!(statements.len(), 2);
/// ```
pub fn parse_script(src: &str) -> Result<Vec<Statement>, Error> {
    Ok(parser::parse_script(src)?.into_statements(src))
}

/// [`parse_script`], with the SPAWNs of literal values kept flat ([`LiteralSpawn`]): what
/// [`crate::Database::execute_script`] runs.
pub(crate) fn parse_script_items(src: &str) -> Result<Script, Error> {
    parser::parse_script(src)
}

/// Parses a system's body as [`CreateSystem::body_text`] holds it: one statement or
/// `BEGIN s; …; END`.
pub fn parse_system_body(src: &str) -> Result<Vec<Statement>, Error> {
    parser::parse(src, parser::Entry::SystemBody)
}

/// Parses one expression (as found in a WHERE clause), for programs that build queries from
/// parts and for tests.
///
/// ```
/// let e = ecsdb_query::parse::parse_expression("Health.hp < 10 AND NOT has(Frozen)").unwrap();
/// assert_eq!(e.to_string(), "Health.hp < 10 AND NOT has(Frozen)");
/// ```
pub fn parse_expression(src: &str) -> Result<Expr, Error> {
    parser::parse_expr(src)
}
