//! Rust systems: closures over a typed query, placed in the schedule by name.

use std::fmt;
use std::sync::Mutex;

use ecsdb_engine::query::{QueryData, QueryFilter, QueryIter};
use ecsdb_engine::{DisjointRuns, EngineError, QueryState, World};

use super::{Access, Body, Phase, Placement, Stats, System};
use crate::Database;
use crate::error::{Error, ErrorKind, Span};

/// What a Rust system is told about the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SystemContext {
    /// Seconds this run simulates (`$dt`).
    pub dt: f64,
    /// Ticks run before this one (`$tick`).
    pub tick: u64,
    /// Seconds simulated before this tick (`$time`).
    pub time: f64,
}

/// A Rust system's query and function, with the types the schedule erases.
struct TypedSystem<Q: QueryData, F: QueryFilter, Func> {
    state: QueryState<Q, F>,
    f: Func,
}

/// A system's run on another thread, prepared by [`RustRun::prepare`]; returns the rows of
/// the tables it visited.
pub(crate) type PreparedRun<'a> = Box<dyn FnOnce(&SystemContext) -> usize + Send + 'a>;

/// What the schedule asks of a Rust system, whatever its query's types.
trait RustRun: Send {
    /// Runs with the world to itself; returns the rows of the tables it visited.
    fn run_alone(&mut self, world: &mut World, ctx: &SystemContext) -> usize;
    /// Prepares a run beside the other systems of its batch (see [`DisjointRuns`]).
    fn prepare<'a, 'w: 'a>(&'a mut self, runs: &mut DisjointRuns<'w>) -> Result<PreparedRun<'a>, EngineError>;
}

impl<Q, F, Func> RustRun for TypedSystem<Q, F, Func>
where
    Q: QueryData + 'static,
    F: QueryFilter + 'static,
    QueryState<Q, F>: Send,
    Func: for<'w, 's> FnMut(QueryIter<'w, 's, Q, F>, &SystemContext) + Send + 'static,
{
    fn run_alone(&mut self, world: &mut World, ctx: &SystemContext) -> usize {
        (self.f)(self.state.iter_mut(world), ctx);
        self.state.matched_rows(world)
    }

    fn prepare<'a, 'w: 'a>(&'a mut self, runs: &mut DisjointRuns<'w>) -> Result<PreparedRun<'a>, EngineError> {
        let TypedSystem { state, f } = self;
        let prepared = runs.prepare(state)?;
        let rows = prepared.row_count();
        Ok(Box::new(move |ctx| {
            prepared.run(|items| f(items, ctx));
            rows
        }))
    }
}

/// A registered Rust system's function, with the access its query types give.
pub struct RustSystemFn {
    /// Behind a mutex so that a database (and the readers that share one) stays `Sync`;
    /// only the thread running the schedule ever locks it.
    run: Mutex<Box<dyn RustRun>>,
    access: Access,
    /// The query writes a sparse component: it runs alone (see [`DisjointRuns::prepare`]).
    alone: bool,
}

impl fmt::Debug for RustSystemFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RustSystemFn").field("access", &self.access).field("alone", &self.alone).finish()
    }
}

impl RustSystemFn {
    fn system(&mut self) -> &mut dyn RustRun {
        &mut **self.run.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs the system with the world to itself; returns the rows of the tables it visited.
    pub(crate) fn run_alone(&mut self, world: &mut World, ctx: &SystemContext) -> usize {
        self.system().run_alone(world, ctx)
    }

    /// Prepares a run beside the other systems of its batch.
    pub(crate) fn prepare<'a, 'w: 'a>(
        &'a mut self,
        runs: &mut DisjointRuns<'w>,
    ) -> Result<PreparedRun<'a>, EngineError> {
        self.system().prepare(runs)
    }
}

/// Places a Rust system: from [`Database::add_system`].
///
/// ```
/// use ecsdb_query::{Database, schedule::{Phase, SystemContext}};
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
        let state = QueryState::<Q, F>::try_new(world)?;
        let engine_access = state.access(world);
        // A change filter reads its component's ticks: writers of it are ordered around
        // the system like writers of what it reads.
        let access = Access {
            reads: engine_access.reads().iter().copied().chain(state.filter_tick_reads()).collect(),
            writes: engine_access.writes().iter().copied().collect(),
            writes_all: false,
        };
        let alone = state.writes_sparse();
        let function =
            RustSystemFn { run: Mutex::new(Box::new(TypedSystem { state, f })), access: access.clone(), alone };
        if let Some(i) = schedule.find(&name) {
            let system = &mut schedule.systems[i];
            if !matches!(system.body, Body::Rust(None)) {
                return Err(Error::new(ErrorKind::Constraint, format!("a system named '{name}' already exists")));
            }
            system.body = Body::Rust(Some(function));
            system.access = access;
            system.exclusive = alone;
            let _ = schedule.rebuild_batches();
            return Ok(());
        }
        let span = Span::new(0, 0);
        let placement = Placement {
            name: &name,
            name_span: span,
            phase,
            after: after.iter().map(|n| (n.clone(), span)).collect(),
            before: before.iter().map(|n| (n.clone(), span)).collect(),
        };
        let no_span = |mut e: Error| {
            e.span = None;
            e
        };
        schedule.check_placement(&placement).map_err(no_span)?;
        let system = System {
            name: name.clone(),
            phase,
            after,
            before,
            body: Body::Rust(Some(function)),
            access,
            exclusive: alone,
            stats: Stats::default(),
        };
        schedule.insert(system, span).map_err(no_span)?;
        db.sync_schedule_record();
        Ok(())
    }
}
