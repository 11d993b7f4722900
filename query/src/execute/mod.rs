//! The execute stage: physical plans run over the world's archetype tables.
//!
//! - [`scan`]: column readers, selection vectors, column kernels, sparse joins, access paths;
//! - [`leaves`]: expression leaves over a table's rows, read into typed vectors;
//! - [`select`]: projection, sort / top-k, LIMIT / OFFSET;
//! - [`aggregate`]: GROUP BY and the aggregates;
//! - [`mutate`]: SPAWN, DESPAWN, ADD, REMOVE (check everything, then write);
//! - `literal_spawn`: a script's SPAWNs of literal values, converted without syntax trees;
//! - [`update`]: UPDATE, computed and checked column by column, then written in place;
//!   [`rewrite`] and [`affine`]: the UPDATEs of f32 fields rewritten in place, a row at a time;
//! - [`convert`]: values converted into a field's Rust type, a batch at a time;
//! - [`catalog`]: CREATE COMPONENT, indexes, SHOW, DESCRIBE;
//! - [`pace`]: pause points, where a statement in the background gives way to the program.

pub mod affine;
pub mod aggregate;
pub mod catalog;
pub mod convert;
pub mod leaves;
pub(crate) mod literal_spawn;
pub mod mutate;
pub(crate) mod outcome;
pub mod pace;
pub(crate) mod rewrite;
pub mod scan;
pub mod select;
pub mod update;
