//! Rust systems: closures over a typed query, placed in the schedule by name.

use std::fmt;
use std::sync::Mutex;

use ecsdb_engine::query::{QueryData, QueryFilter, QueryIter};
use ecsdb_engine::{DisjointRuns, EngineError, QueryState, World};

use super::{Access, Body, Phase, Placement, Schedule, Stats, System};
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

/// Where a new Rust system goes: its name, phase and order.
pub(crate) struct RustPlacement {
    pub(crate) name: String,
    pub(crate) phase: Phase,
    pub(crate) after: Vec<String>,
    pub(crate) before: Vec<String>,
}

impl Schedule {
    /// Adds the Rust system `f` over query `Q` (filtered by `F`) at `placement`: a saved
    /// world's unregistered Rust system of that name takes `f` and keeps its saved place;
    /// otherwise the system is new, its name must be new and its order acyclic. Returns
    /// whether a system was added (its record is then new too).
    pub(crate) fn add_rust_system<Q, F>(
        &mut self,
        world: &mut World,
        placement: RustPlacement,
        f: impl for<'w, 's> FnMut(QueryIter<'w, 's, Q, F>, &SystemContext) + Send + 'static,
    ) -> Result<bool, Error>
    where
        Q: QueryData + 'static,
        F: QueryFilter + 'static,
        QueryState<Q, F>: Send,
    {
        let RustPlacement { name, phase, after, before } = placement;
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
        if let Some(i) = self.find(&name) {
            let system = &mut self.systems[i];
            if !matches!(system.body, Body::Rust(None)) {
                return Err(Error::new(ErrorKind::Constraint, format!("a system named '{name}' already exists")));
            }
            system.body = Body::Rust(Some(function));
            system.access = access;
            system.exclusive = alone;
            let _ = self.rebuild_batches();
            return Ok(false);
        }
        let span = Span::new(0, 0);
        let place = Placement {
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
        self.check_placement(&place).map_err(no_span)?;
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
        self.insert(system, span).map_err(no_span)?;
        Ok(true)
    }
}
