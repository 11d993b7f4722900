//! The pest grammar (`grammar/ecsdb.pest`): the language's one definition of its syntax.

/// The parser pest generates from the grammar; its rules are [`Rule`].
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/ecsdb.pest"]
pub(super) struct Grammar;
