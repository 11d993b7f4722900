//! # ecsdb
//!
//! An embeddable, in-memory entity database for games, simulations and their tools: an ECS
//! storage engine laid out like a column store, queried from Rust with typed queries and from
//! text with a SQL-like language, with pluggable secondary indexes and snapshots.
//!
//! What it optimises, in order: fast column-at-a-time traversal; exactness (generational
//! ids, change ticks, atomic statements, indexes that never change an answer); one storage
//! behind both the typed and the text front door; a small dependency closure.
//!
//! ```
//! use ecsdb::{Component, World};
//! #[derive(Component)] struct Position { x: f32, y: f32 }
//! #[derive(Component)] struct Velocity { x: f32, y: f32 }
//!
//! let mut world = World::new();
//! let e = world.spawn((Position { x: 0.0, y: 0.0 }, Velocity { x: 1.0, y: 2.0 }));
//! for (mut p, v) in world.query_mut::<(&mut Position, &Velocity)>() {
//!     p.x += v.x;
//!     p.y += v.y;
//! }
//! assert_eq!(world.get::<Position>(e).unwrap().y, 2.0);
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use ecsdb_engine::*;

/// The storage engine crate.
pub use ecsdb_engine as engine;
/// The query language crate.
pub use ecsdb_query as query;
pub use ecsdb_query::{Database, Params, Prepared, ResultSet};
/// Export to and import from Parquet, CSV and JSON lines (the `transfer` feature).
#[cfg(feature = "transfer")]
pub use ecsdb_transfer as transfer;

/// Live access to a running world (feature `live`): [`live::Publisher`] and [`live::Reader`]
/// handles, and [`live::serve`] for the protocol of `docs/protocol.md`.
///
/// ```no_run
/// # #[cfg(feature = "live")] {
/// use ecsdb::live::{serve, Publisher, ServeOptions};
/// let mut db = ecsdb::Database::new();
/// let mut publisher = Publisher::new();
/// let live = serve(publisher.reader(), ServeOptions::default()).unwrap();
/// println!("{}", live.url());
/// loop {
///     publisher.begin_tick(); // tools' scans pause while the tick runs
///     // ... the game's systems on `db` ...
///     publisher.end_tick(&mut db);
/// }
/// # }
/// ```
#[cfg(feature = "live")]
pub mod live {
    pub use ecsdb_query::live::*;
    pub use ecsdb_server::{LiveServer, ServeError, ServeOptions, client, serve};
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
