//! The execute stage: physical plans run over the world's archetype tables.
//!
//! - [`scan`]: column readers, selection vectors, column kernels, sparse joins, access paths;
//! - [`leaves`]: expression leaves over a table's rows, read into typed vectors;
//! - [`ops`]: the operators' semantics on single values;
//! - [`relations`]: paths and hierarchy functions (following entities from a row);
//! - [`select`]: projection, sort / top-k, LIMIT / OFFSET;
//! - [`aggregate`]: GROUP BY and the aggregates;
//! - [`mutate`]: SPAWN, DESPAWN, ADD, REMOVE (check everything, then write);
//! - `literal_spawn`: a script's SPAWNs of literal values, converted without syntax trees;
//! - [`update`]: UPDATE, computed and checked column by column, then written in place;
//! - [`convert`]: values converted into a field's Rust type, a batch at a time;
//! - [`catalog`]: CREATE COMPONENT, indexes, SHOW, DESCRIBE;
//! - [`pace`]: pause points, where a statement in the background gives way to the program.

pub mod aggregate;
pub mod catalog;
pub mod convert;
pub mod leaves;
pub(crate) mod literal_spawn;
pub mod mutate;
pub mod ops;
pub mod pace;
pub mod relations;
pub(crate) mod rewrite;
pub mod scan;
pub mod select;
pub mod update;
