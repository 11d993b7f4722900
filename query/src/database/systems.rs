//! Rust systems placed in a database's schedule ([`Database::add_system`]).

use ecsdb_engine::QueryState;
use ecsdb_engine::query::{QueryData, QueryFilter, QueryIter};

use crate::Database;
use crate::error::Error;
use crate::schedule::{Phase, RustPlacement, SystemContext};

/// Places a Rust system in a database's schedule: from [`Database::add_system`].
///
/// ```
/// use ecsdb_query::Database;
/// use ecsdb_query::schedule::{Phase, SystemContext};
/// use ecsdb_engine::{Component, query::QueryIter};
/// #[derive(Component)] struct Position { x: f32 }
/// #[derive(Component)] struct Velocity { x: f32 }
/// let mut db = Database::new();
/// db.world_mut().spawn((Position { x: 0.0 }, Velocity { x: 2.0 }));
/// db.add_system("physics")
///     .in_phase(Phase::OnUpdate)
///     .run(|q: QueryIter<(&mut Position, &Velocity), ()>, ctx: &SystemContext| {
///         q.for_each(|(mut p, v)| p.x += v.x * ctx.dt as f32)
///     })
///     .unwrap();
/// db.execute("TICK 1 DT 0.5", ()).unwrap();
/// let x = db.query("SELECT Position.x", ()).unwrap().rows[0][0].clone();
/// assert_eq!(x, ecsdb_engine::Value::Float(1.0));
/// ```
#[must_use = "a system is added by `run`"]
pub struct SystemBuilder<'d> {
    db: &'d mut Database,
    name: String,
    phase: Phase,
    after: Vec<String>,
    before: Vec<String>,
}

impl<'d> SystemBuilder<'d> {
    pub(crate) fn new(db: &'d mut Database, name: &str) -> SystemBuilder<'d> {
        SystemBuilder { db, name: name.to_string(), phase: Phase::OnUpdate, after: Vec::new(), before: Vec::new() }
    }

    /// The phase (default [`Phase::OnUpdate`]).
    pub fn in_phase(mut self, phase: Phase) -> Self {
        self.phase = phase;
        self
    }

    /// Runs after the system named `name` (of the same phase).
    pub fn after(mut self, name: &str) -> Self {
        self.after.push(name.to_string());
        self
    }

    /// Runs before the system named `name` (of the same phase).
    pub fn before(mut self, name: &str) -> Self {
        self.before.push(name.to_string());
        self
    }

    /// Adds the system: `f` runs once per run of its phase over the items of query `Q`
    /// (filtered by `F`; `Changed<T>` and `Added<T>` count from the system's previous run).
    ///
    /// A saved world's Rust system of this name (unregistered until now) takes `f` and keeps
    /// its saved place. Otherwise the system is new; its name must be new and its order
    /// acyclic, as with `CREATE SYSTEM`.
    pub fn run<Q, F>(
        self,
        f: impl for<'w, 's> FnMut(QueryIter<'w, 's, Q, F>, &SystemContext) + Send + 'static,
    ) -> Result<(), Error>
    where
        Q: QueryData + 'static,
        F: QueryFilter + 'static,
        QueryState<Q, F>: Send,
    {
        let SystemBuilder { db, name, phase, after, before } = self;
        let (world, schedule) = db.world_and_schedule();
        if schedule.add_rust_system(world, RustPlacement { name, phase, after, before }, f)? {
            db.sync_schedule_record();
        }
        Ok(())
    }
}
