//! The language's lexical layer: tokens, keywords and where statements end.
//!
//! One implementation for every tool: the parser, the shell (completion, highlighting,
//! multi-line input), piped scripts, `--connect`, the server and the inspector (through the
//! `schema` RPC) all ask this module rather than scanning text themselves.
//!
//! - [`lex`] / [`Lexer`]: text to [`Token`]s that cover it, never failing;
//! - [`KEYWORDS`] / [`keyword`]: the keyword table, generated from the grammar, each word
//!   reserved or contextual;
//! - [`statement_state`] and [`split_statements`]: whether text is a complete statement, and
//!   a script's statements, aware of strings, comments and `BEGIN … END`.
//!
//! ```
//! use ecsdb_query::lex::{split_statements, statement_state, StatementState};
//! let script = "SPAWN A {s: 'x;y'};\nCREATE SYSTEM s AS BEGIN DESPAWN WHERE has(A); END;";
//! assert_eq!(statement_state(script), StatementState::Complete);
//! assert_eq!(split_statements(script).len(), 2);
//! ```

mod keywords;
mod statements;
mod token;

pub use keywords::{KEYWORDS, Keyword, is_reserved, keyword};
pub(crate) use statements::Splitter;
pub use statements::{StatementState, split_statements, statement_state};
pub use token::{Lexer, Token, TokenKind, lex};
