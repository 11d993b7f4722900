//! ecsdb-query: the text query language: parse → bind → plan → execute.

pub mod error;
pub mod parse;
