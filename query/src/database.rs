//! [`Database`]: a world plus the text front door — execute, query, scripts, prepared
//! statements, registered functions, and typed iteration over what a text query selects.

use ecsdb_engine::query::QueryData;
use ecsdb_engine::storage::TableId;
use ecsdb_engine::{ComponentDef, ComponentId, Entity, Value, World};
use std::borrow::Cow;

use crate::bind::{Bound, bind_statement};
use crate::error::{Error, ErrorKind, Span};
use crate::execute::convert::StagingBuffers;
use crate::execute::{catalog, literal_spawn, mutate, select};
use crate::expr::{Expr, ParamKey, ParamSpec};
use crate::functions::{FunctionRegistry, RegisteredFn};
use crate::params::Params;
use crate::parse::{self, ScriptItem, ast};
use crate::plan::explain::explain_select;
use crate::plan::logical::{ComponentValue, LogicalPlan, ScheduleOp, ShowKind};
use crate::plan::physical::ScanPlan;
use crate::plan::{PhysicalSelect, PlanOptions};
use crate::result::ResultSet;
use crate::schedule::{self, Body, Schedule, Step, SystemStatement, TickFailure};

/// How many SPAWNs of a script [`Database::execute_script`] writes at most at once: enough
/// to look each table up rarely, few enough that their values stay in cache.
const SPAWN_RUN: usize = 1024;

mod alter;
mod prepared;
mod statement_cache;
mod systems;
mod world_slot;
pub use prepared::Prepared;
use statement_cache::{CatalogStamp, StatementCache};
pub use systems::SystemBuilder;
pub(crate) use world_slot::WorldLoan;
use world_slot::WorldSlot;

/// A text system's statements as prepared, their access, and whether it runs alone.
type PreparedBody = (Vec<Box<dyn SystemStatement>>, schedule::Access, bool);

/// An entity database: a [`World`] you can also talk to in the query language.
///
/// ```
/// use ecsdb_query::{Database, Params};
/// use ecsdb_engine::Value;
/// let mut db = Database::new();
/// db.execute("CREATE COMPONENT Health (hp f32, max f32)", ()).unwrap();
/// db.execute("SPAWN Health {hp: 10, max: 20}", ()).unwrap();
/// db.execute("SPAWN Health {hp: 50, max: 50}", ()).unwrap();
/// let low = db.query("SELECT count(*) WHERE Health.hp < $1", Params::positional([20])).unwrap();
/// assert_eq!(low.rows[0][0], Value::Int(1));
/// ```
#[derive(Default)]
pub struct Database {
    world: WorldSlot,
    functions: FunctionRegistry,
    plan_options: PlanOptions,
    /// The runnable form of the world's schedule record (kept in step with it).
    schedule: Schedule,
    /// Statements prepared from text, for the next run of the same text.
    statements: StatementCache,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("entities", &self.world.get().len())
            .field("components", &self.world.get().components().len())
            .field("functions", &self.functions)
            .finish()
    }
}

/// Whether a statement's text is read-only (SELECT, EXPLAIN, SHOW, DESCRIBE), without running it.
///
/// ```
/// assert_eq!(ecsdb_query::is_read_only("SELECT count(*)"), Ok(true));
/// assert_eq!(ecsdb_query::is_read_only("DESPAWN 1v0"), Ok(false));
/// ```
pub fn is_read_only(text: &str) -> Result<bool, Error> {
    Ok(statement_is_read_only(&parse::parse_statement(text)?))
}

/// One statement of a script, as [`Database::execute_script_each`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScriptStatement {
    /// Its position in the script, from 0.
    pub index: usize,
    /// Where it is in the script's text (without the `;`).
    pub span: Span,
    /// Whether it cannot change the world ([`is_read_only`]: decided from its syntax tree).
    pub read_only: bool,
}

fn statement_is_read_only(s: &ast::Statement) -> bool {
    matches!(
        s,
        ast::Statement::Select(_)
            | ast::Statement::Explain(_)
            | ast::Statement::Show(_)
            | ast::Statement::Describe(_)
            | ast::Statement::ExplainSchedule(_)
    )
}

fn mutates_error(span: Span) -> Error {
    Error::new(ErrorKind::Constraint, "this statement mutates the world: run it with execute, not query")
        .with_span(span)
}

impl Database {
    /// An empty database.
    pub fn new() -> Database {
        Database::default()
    }

    /// A database over an existing world. Its saved text systems are prepared; its saved
    /// Rust systems wait for [`Database::add_system`] (TICK fails, naming them, until then).
    pub fn from_world(world: World) -> Database {
        let schedule = Schedule::from_record(world.schedule_record());
        let mut db = Database {
            world: WorldSlot::Owned(world),
            functions: FunctionRegistry::default(),
            plan_options: PlanOptions::default(),
            schedule,
            statements: StatementCache::default(),
        };
        db.bind_saved_systems();
        db
    }

    /// The world.
    pub fn world(&self) -> &World {
        self.world.get()
    }

    /// The world, mutably (typed spawns, inserts, queries).
    pub fn world_mut(&mut self) -> &mut World {
        self.world.get_mut()
    }

    /// The world, giving up the database (its schedule is in the world's record).
    pub fn into_world(self) -> World {
        self.world.into_inner()
    }

    /// Lends the world read-only (to a publisher's copier thread) until the loan is dropped;
    /// the next write through this database waits for that, reads do not.
    pub(crate) fn lend_world(&mut self) -> WorldLoan {
        self.world.lend()
    }

    // ----- schedule ----------------------------------------------------------------------

    /// Places a Rust system in the schedule (see [`SystemBuilder`]).
    pub fn add_system(&mut self, name: &str) -> SystemBuilder<'_> {
        SystemBuilder::new(self, name)
    }

    /// Runs `count` ticks of `dt` seconds (as `TICK count DT dt`), returning the failures.
    pub fn tick(&mut self, count: u64, dt: f64) -> Result<Vec<TickFailure>, Error> {
        if !(0.0..=1e9).contains(&dt) {
            return Err(Error::new(ErrorKind::Type, "DT takes a number of seconds (0 to 1e9)"));
        }
        self.run_ticks(count, (dt * 1e9).round() as u64)
    }

    /// Ticks run so far (the next tick's `$tick`).
    pub fn ticks_run(&self) -> u64 {
        self.schedule.tick
    }

    /// Per-system statistics: (name, runs, rows, total time), in phase and run order.
    pub fn system_stats(&self) -> Vec<(String, u64, u64, std::time::Duration)> {
        self.schedule
            .batches
            .iter()
            .flatten()
            .flatten()
            .map(|&i| {
                let s = &self.schedule.systems[i];
                (s.name.clone(), s.stats.runs, s.stats.rows, s.stats.total)
            })
            .collect()
    }

    fn run_ticks(&mut self, count: u64, dt_ns: u64) -> Result<Vec<TickFailure>, Error> {
        let parallel = rayon::current_num_threads() > 1;
        let failures = self.schedule.run_ticks(self.world.get_mut(), count, dt_ns, parallel);
        // Ticks change only the clock: the systems' records stay as they are.
        let record = self.world.get_mut().schedule_record_mut();
        record.tick = self.schedule.tick;
        record.time_ns = self.schedule.time_ns;
        record.accumulator_ns = self.schedule.accumulator_ns;
        failures
    }

    pub(crate) fn world_and_schedule(&mut self) -> (&mut World, &mut Schedule) {
        (self.world.get_mut(), &mut self.schedule)
    }

    /// Writes the schedule's records into the world (what snapshots save).
    pub(crate) fn sync_schedule_record(&mut self) {
        self.world.get_mut().set_schedule_record(self.schedule.record());
    }

    /// Prepares the text systems of a loaded schedule record.
    fn bind_saved_systems(&mut self) {
        for i in 0..self.schedule.systems.len() {
            if let Body::Broken { text, .. } = &self.schedule.systems[i].body {
                let text = text.clone();
                let bound = parse::parse_system_body(&text).and_then(|body| self.prepare_system_body(&body));
                let system = &mut self.schedule.systems[i];
                match bound {
                    Ok((statements, access, exclusive)) => {
                        system.body = Body::Text { text, statements };
                        system.access = access;
                        system.exclusive = exclusive;
                    }
                    Err(e) => {
                        // Reported by every TICK as the system's failure; the position is in
                        // the message, as the error's span points into this text only.
                        let at = e.span.map(|s| s.line_col(&text)).map_or(String::new(), |(line, column)| {
                            format!(" (at line {line}, column {column} of its text)")
                        });
                        let message = format!("saved system does not bind: {e}{at}");
                        let error = schedule::render(&Error::new(e.kind, message));
                        system.body = Body::Broken { text, error };
                    }
                }
            }
        }
        let _ = self.schedule.rebuild_batches();
    }

    /// Binds and prepares a system's statements: only `$dt`, `$tick` and `$time` may be used.
    /// Returns them, the system's access and whether it must run alone (a statement after an
    /// UPDATE must see it).
    fn prepare_system_body(&self, body: &[ast::Statement]) -> Result<PreparedBody, Error> {
        let mut access = schedule::Access::default();
        let mut statements = Vec::with_capacity(body.len());
        let mut exclusive = false;
        for (k, stmt) in body.iter().enumerate() {
            let bound = bind_statement(stmt, self.world.get(), &self.functions)?;
            for p in &bound.params {
                let ok = matches!(&p.key, ParamKey::Name(n) if matches!(n.as_str(), "dt" | "tick" | "time"));
                if !ok {
                    return Err(Error::new(
                        ErrorKind::Parameter,
                        format!("a system can only use the parameters $dt, $tick and $time, not {}", p.key),
                    )
                    .with_span(p.span));
                }
            }
            access.add_plan(&bound.plan);
            exclusive |= matches!(bound.plan, LogicalPlan::Update { .. }) && k + 1 < body.len();
            statements.push(Box::new(Prepared::new(bound, self.world.get(), stmt.span(), self.plan_options))
                as Box<dyn SystemStatement>);
        }
        Ok((statements, access, exclusive))
    }

    /// Runs a statement about the schedule.
    fn run_schedule_op(&mut self, op: &ScheduleOp) -> Result<ResultSet, Error> {
        match op {
            ScheduleOp::CreateSystem(c) => {
                let placement = schedule::placement(c)?;
                self.schedule.check_placement(&placement)?;
                let (statements, access, exclusive) = self.prepare_system_body(&c.body)?;
                let system = schedule::System {
                    name: c.name.name.clone(),
                    phase: placement.phase,
                    after: c.after.iter().map(|i| i.name.clone()).collect(),
                    before: c.before.iter().map(|i| i.name.clone()).collect(),
                    body: Body::Text { text: c.body_text.clone(), statements },
                    access,
                    exclusive,
                    stats: Default::default(),
                };
                self.schedule.insert(system, c.span)?;
                self.sync_schedule_record();
                Ok(ResultSet::default())
            }
            ScheduleOp::DropSystem { name, if_exists, span } => {
                match self.schedule.find(name) {
                    Some(i) => {
                        self.schedule.remove(i);
                        self.sync_schedule_record();
                    }
                    None if *if_exists => {}
                    None => {
                        return Err(
                            Error::new(ErrorKind::Constraint, format!("no system named '{name}'")).with_span(*span)
                        );
                    }
                }
                Ok(ResultSet::default())
            }
            ScheduleOp::ExplainSchedule => Ok(self.explain_schedule()),
            ScheduleOp::SetFixedHz(hz) => {
                self.schedule.fixed_hz = *hz;
                self.sync_schedule_record();
                Ok(ResultSet::default())
            }
            ScheduleOp::Tick { count, dt_ns } => {
                let failures = self.run_ticks(*count, *dt_ns)?;
                let mut rs = ResultSet::empty(tick_columns());
                for f in failures {
                    rs.rows.push(vec![Value::Int(f.tick as i64), Value::Str(f.system), Value::Str(f.error)]);
                }
                Ok(rs)
            }
        }
    }

    fn explain_schedule(&self) -> ResultSet {
        let rows = self.schedule.explain().into_iter().map(|l| vec![Value::Str(l)]).collect();
        ResultSet { columns: vec!["plan".into()], rows }
    }

    /// The planner's settings.
    pub fn plan_options(&self) -> PlanOptions {
        self.plan_options
    }

    /// Changes the planner's settings for statements prepared from now on.
    ///
    /// ```
    /// use ecsdb_query::{Database, PlanOptions};
    /// let mut db = Database::new();
    /// db.set_plan_options(PlanOptions { prefer_indexes: true });
    /// assert!(db.plan_options().prefer_indexes);
    /// ```
    pub fn set_plan_options(&mut self, options: PlanOptions) {
        self.plan_options = options;
        self.statements.clear();
    }

    fn prepare_statement(&self, stmt: &ast::Statement) -> Result<Prepared, Error> {
        let bound = bind_statement(stmt, self.world.get(), &self.functions)?;
        Ok(Prepared::new(bound, self.world.get(), stmt.span(), self.plan_options))
    }

    /// A database over `world` with this one's registered functions and planner settings.
    /// Its saved systems are prepared as [`Database::from_world`] prepares them.
    pub(crate) fn with_world(&self, world: World) -> Database {
        let schedule = Schedule::from_record(world.schedule_record());
        let mut db = Database {
            world: WorldSlot::Owned(world),
            functions: self.functions.clone(),
            plan_options: self.plan_options,
            schedule,
            statements: StatementCache::default(),
        };
        db.bind_saved_systems();
        db
    }

    /// The registered functions.
    pub(crate) fn functions(&self) -> &FunctionRegistry {
        &self.functions
    }

    /// Binds, plans and runs one parsed statement of any kind.
    pub(crate) fn run_statement(&mut self, stmt: &ast::Statement, params: &Params) -> Result<ResultSet, Error> {
        let mut p = self.prepare_statement(stmt)?;
        p.run(self, params)
    }

    /// Runs exactly one statement (a trailing `;` is fine) of any kind, with `params`: `()`,
    /// an array or tuple of positional values (`$1`, `$2`, …), a map of named ones (`$name`),
    /// or [`Params`].
    ///
    /// ```
    /// use ecsdb_query::Database;
    /// let mut db = Database::new();
    /// db.execute("CREATE COMPONENT Team (name string, size i32)", ()).unwrap();
    /// db.execute("SPAWN Team {name: $1, size: $2}", ("red", 5)).unwrap();
    /// let big = db.query("SELECT Team.name WHERE Team.size > $min", [("min", 3)].into_iter().collect::<std::collections::HashMap<_, _>>()).unwrap();
    /// assert_eq!(big.get_as::<String>(0, "Team.name").unwrap(), "red");
    /// ```
    pub fn execute(&mut self, text: &str, params: impl Into<Params>) -> Result<ResultSet, Error> {
        let params = params.into();
        let (key, mut p) = self.cached_or_prepared(text)?;
        let stamp = self.catalog_stamp();
        let result = p.run(self, &params);
        // (What the statement created changes the stamp: a CREATE is not kept anyway.)
        if result.is_ok() && self.catalog_stamp() == stamp {
            self.statements.put(key.unwrap_or_else(|| text.into()), stamp, p);
        }
        result
    }

    /// What a statement cache entry depends on besides its text.
    fn catalog_stamp(&self) -> CatalogStamp {
        let world = self.world.get();
        CatalogStamp {
            world: world.id(),
            components: world.components().version(),
            indexes: world.index_catalog_version(),
        }
    }

    /// The statement of `text`, from the cache (with its key) or parsed, bound and planned.
    fn cached_or_prepared(&self, text: &str) -> Result<(Option<Box<str>>, Prepared), Error> {
        if let Some((key, p)) = self.statements.take(text, self.catalog_stamp()) {
            return Ok((Some(key), p));
        }
        let stmt = parse::parse_statement(text)?;
        Ok((None, self.prepare_statement(&stmt)?))
    }

    /// Runs one read-only statement (SELECT, EXPLAIN, SHOW, DESCRIBE) on a shared database; a
    /// mutating statement is a `constraint` error. Parameters as [`Database::execute`] takes
    /// them.
    pub fn query(&self, text: &str, params: impl Into<Params>) -> Result<ResultSet, Error> {
        self.run_query(text, &params.into())
    }

    /// [`Database::query`] with parameters already built.
    pub(crate) fn run_query(&self, text: &str, params: &Params) -> Result<ResultSet, Error> {
        let (key, mut p) = match self.statements.take(text, self.catalog_stamp()) {
            Some((key, p)) => (Some(key), p),
            None => {
                let stmt = parse::parse_statement(text)?;
                if !statement_is_read_only(&stmt) {
                    return Err(mutates_error(stmt.span()));
                }
                (None, self.prepare_statement(&stmt)?)
            }
        };
        if !p.is_read_only() {
            let span = p.span();
            self.statements.put(key.unwrap_or_else(|| text.into()), self.catalog_stamp(), p);
            return Err(mutates_error(span));
        }
        let result = p.run_query(self, params);
        if result.is_ok() {
            self.statements.put(key.unwrap_or_else(|| text.into()), self.catalog_stamp(), p);
        }
        result
    }

    /// Runs a script of `;`-separated statements in order, stopping at the first error. Each
    /// statement is bound just before it runs, so it sees what earlier ones created. Error
    /// spans are relative to the whole script.
    ///
    /// Consecutive SPAWNs are checked one by one as they come and written together, before
    /// the next statement of another kind runs (or an error is returned), or before a SPAWN
    /// that writes a reference is checked: what is written is exactly what running them one
    /// by one writes.
    pub fn execute_script(&mut self, text: &str) -> Result<Vec<ResultSet>, Error> {
        let script = parse::parse_script_items(text)?;
        let mut out = Vec::with_capacity(script.items.len());
        let mut batch = mutate::SpawnBatch::default();
        let mut spawner = literal_spawn::LiteralSpawner::new(text);
        let none = Params::new();
        for item in &script.items {
            // SPAWNs of literals in the plain case skip the syntax tree, the binder and the plan.
            if let ScriptItem::Spawn(s) = item
                && spawner.push(self.world.get(), &script, s, &mut batch)
            {
                // (Written in runs that stay in cache: the same as one by one, as a
                // literal SPAWN's checks do not read the entities.)
                if batch.len() >= SPAWN_RUN {
                    self.flush_spawns(&mut batch, &mut out)?;
                }
                continue;
            }
            spawner.clear();
            let tree;
            let stmt = match item {
                ScriptItem::Statement(s) => s,
                ScriptItem::Spawn(s) => {
                    tree = script.statement(s, text);
                    &tree
                }
            };
            let step = self.prepare_statement(stmt).and_then(|mut p| {
                if let Executable::Spawn(comps) = &p.exec {
                    // References are checked against the entities before, written.
                    if comps
                        .iter()
                        .any(|c| c.fields.iter().any(|(f, _)| self.world.get().reference(c.id, *f).is_some()))
                    {
                        self.flush_spawns(&mut batch, &mut out)?;
                    }
                    let params = resolve_params(&p.params, &none)?;
                    return mutate::spawn_values(self.world.get(), comps, &params).map(Some);
                }
                self.flush_spawns(&mut batch, &mut out)?;
                p.execute(self, &none).map(|rs| {
                    out.push(rs);
                    None
                })
            });
            match step {
                Ok(Some(spawn)) => {
                    // The engine refuses to build an opaque component from fields: such a SPAWN
                    // fails when written, so it is written alone, after the ones before it.
                    let alone = spawn.has_opaque(self.world.get());
                    if alone {
                        self.flush_spawns(&mut batch, &mut out)?;
                    }
                    batch.push(spawn);
                    if alone {
                        self.flush_spawns(&mut batch, &mut out)?;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.flush_spawns(&mut batch, &mut out)?;
                    return Err(e);
                }
            }
        }
        self.flush_spawns(&mut batch, &mut out)?;
        Ok(out)
    }

    /// Writes the SPAWNs a script batched, appending their results.
    fn flush_spawns(&mut self, batch: &mut mutate::SpawnBatch, out: &mut Vec<ResultSet>) -> Result<(), Error> {
        out.extend(batch.flush(self.world.get_mut())?.into_iter().map(mutate::spawned));
        Ok(())
    }

    /// Runs each statement of a script, calling `on_result(&statement, &result)` after each;
    /// returning `false` stops the script (return `true` to go on, after an error too). Each
    /// statement is atomic on its own. Returns `Err` only when the script does not parse
    /// (then nothing runs).
    ///
    /// ```
    /// use ecsdb_query::Database;
    /// let mut db = Database::new();
    /// let mut changed = false;
    /// db.execute_script_each("CREATE COMPONENT Hp (v i32); SELECT count(*); TICK;", (), |s, result| {
    ///     assert!(result.is_ok());
    ///     changed |= !s.read_only;
    ///     true
    /// })
    /// .unwrap();
    /// assert!(changed);
    /// ```
    pub fn execute_script_each(
        &mut self,
        text: &str,
        params: impl Into<Params>,
        mut on_result: impl FnMut(&ScriptStatement, &Result<ResultSet, Error>) -> bool,
    ) -> Result<(), Error> {
        let params = params.into();
        let statements = parse::parse_script(text)?;
        for (index, stmt) in statements.iter().enumerate() {
            let result = self.prepare_statement(stmt).and_then(|mut p| p.run(self, &params));
            let statement = ScriptStatement { index, span: stmt.span(), read_only: statement_is_read_only(stmt) };
            if !on_result(&statement, &result) {
                break;
            }
        }
        Ok(())
    }

    /// Parses and plans one statement for repeated runs. The plan keeps its matched tables
    /// and extends them with tables created later; after `CREATE INDEX` or `DROP INDEX` it
    /// chooses its access path again on its next run.
    pub fn prepare(&mut self, text: &str) -> Result<Prepared, Error> {
        let stmt = parse::parse_statement(text)?;
        self.prepare_statement(&stmt)
    }

    /// [`Database::prepare`] through the statement cache that [`Database::execute`] and
    /// [`Database::query`] use, as SQLite's `prepare_cached`: the plan kept for this text (or
    /// one prepared now), lent until the returned guard is dropped, when it goes back.
    ///
    /// ```
    /// use ecsdb_query::{Database, Params};
    /// let mut db = Database::new();
    /// db.execute_script("CREATE COMPONENT Health (hp f32); SPAWN Health {hp: 1};").unwrap();
    /// for _ in 0..3 {
    ///     // Parsed and planned the first time only.
    ///     let mut low = db.prepare_cached("SELECT count(*) WHERE Health.hp < 5").unwrap();
    ///     assert_eq!(low.query(&db, ()).unwrap().rows[0][0], ecsdb_engine::Value::Int(1));
    /// }
    /// ```
    pub fn prepare_cached(&self, text: &str) -> Result<CachedStatement<'_>, Error> {
        let stamp = self.catalog_stamp();
        let (key, prepared) = match self.statements.take(text, stamp) {
            Some((key, p)) => (key, p),
            None => (text.into(), self.prepare_statement(&parse::parse_statement(text)?)?),
        };
        Ok(CachedStatement { cache: &self.statements, key: Some(key), stamp, prepared: Some(prepared) })
    }

    /// Registers a scalar function callable from text by `name` (case-insensitive). It
    /// receives the argument values and returns a value or an error message. A name that is
    /// not an identifier or that names a built-in cannot be registered (see
    /// [`Database::try_register_function`] to learn why); registering a name again replaces
    /// the function for statements bound afterwards.
    ///
    /// ```
    /// use ecsdb_query::Database;
    /// use ecsdb_engine::Value;
    /// let mut db = Database::new();
    /// db.register_function("twice", |args| match args {
    ///     [Value::Int(i)] => Ok(Value::Int(i * 2)),
    ///     _ => Err("twice() takes one int".into()),
    /// });
    /// db.execute("SPAWN", ()).unwrap();
    /// assert_eq!(db.query("SELECT twice(21)", ()).unwrap().rows[0][0], Value::Int(42));
    /// ```
    pub fn register_function(
        &mut self,
        name: &str,
        f: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) {
        let _ = self.try_register_function(name, f);
    }

    /// [`Database::register_function`], reporting a name that cannot be registered.
    pub fn try_register_function(
        &mut self,
        name: &str,
        f: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let f: std::sync::Arc<RegisteredFn> = std::sync::Arc::new(f);
        self.functions.register(name, f).map_err(|m| Error::new(ErrorKind::Constraint, m))?;
        // (Statements already prepared may call a function this one replaces.)
        self.statements.clear();
        Ok(())
    }

    /// Creates a function index: `f` is evaluated for every entity with `component` (as the
    /// component's value, an object of its fields) and re-evaluated only for rows whose
    /// ticks changed since the index's last refresh. Text calls it as `name(Component)`: in
    /// WHERE it is answered from the index, elsewhere read from it. Returns the index's name.
    ///
    /// A built-in function or a function registered with [`Database::register_function`]
    /// takes precedence over a function index of the same name, so such names are refused.
    ///
    /// ```
    /// use ecsdb_query::Database;
    /// use ecsdb_engine::Value;
    /// let mut db = Database::new();
    /// db.execute("CREATE COMPONENT Position (x f32, y f32)", ()).unwrap();
    /// db.execute_script("SPAWN Position {x: 5, y: 1}; SPAWN Position {x: -5, y: 1}").unwrap();
    /// db.create_function_index("visible", "Position", |p| match p {
    ///     Value::Object(fields) => fields[0].1.as_f64().is_some_and(|x| x > 0.0),
    ///     _ => false,
    /// }).unwrap();
    /// let seen = db.query("SELECT Position.x WHERE visible(Position)", ()).unwrap();
    /// assert_eq!(seen.rows, [[Value::Float(5.0)]]);
    /// ```
    pub fn create_function_index(
        &mut self,
        name: &str,
        component: &str,
        f: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Result<String, Error> {
        self.check_function_index_name(name)?;
        Ok(self.world.get_mut().create_function_index(name, component, f)?)
    }

    /// [`Database::create_function_index`] with a predicate over the Rust component type
    /// (registered if needed).
    pub fn create_function_index_typed<T: ecsdb_engine::Component>(
        &mut self,
        name: &str,
        f: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Result<String, Error> {
        self.check_function_index_name(name)?;
        Ok(self.world.get_mut().create_function_index_typed(name, f)?)
    }

    fn check_function_index_name(&self, name: &str) -> Result<(), Error> {
        let lower = name.to_ascii_lowercase();
        let builtin = crate::types::Builtin::from_name(&lower).is_some()
            || matches!(lower.as_str(), "count" | "sum" | "avg" | "has");
        if builtin || self.functions.get(name).is_some() {
            let what = if builtin { "a built-in function" } else { "a registered function" };
            return Err(Error::new(
                ErrorKind::Constraint,
                format!("a function index cannot be named '{name}': text calls of {name}() reach {what}"),
            ));
        }
        Ok(())
    }

    /// The entities a read query selects: a SELECT or bare term list, or just
    /// `[FROM <terms>] [WHERE <cond>]`. ORDER BY, LIMIT and OFFSET are honoured.
    pub fn select_entities(&self, text: &str, params: impl Into<Params>) -> Result<Vec<Entity>, Error> {
        let params = &params.into();
        let (stmt, shift) = parse_selection(text)?;
        let run = || -> Result<Vec<Entity>, Error> {
            let bound = bind_statement(&stmt, self.world.get(), &self.functions)?;
            let LogicalPlan::Select(plan) = bound.plan else {
                return Err(Error::new(ErrorKind::Type, "a selection must be a query (SELECT or FROM/WHERE)"));
            };
            let values = resolve_params(&bound.params, params)?;
            let phys = PhysicalSelect::new(plan, self.world.get(), self.plan_options);
            select::selected_entities(&phys, self.world.get(), &values)
        };
        run().map_err(|e| unshift(e, shift))
    }

    /// Typed iteration, with mutation, over exactly the entities a text query selects. The
    /// text is a SELECT, a bare term list, or `[FROM <terms>] [WHERE <cond>]`; entities that
    /// do not match `Q` are skipped. Iteration is in table order.
    ///
    /// ```
    /// use ecsdb_query::{Database, Params};
    /// use ecsdb_engine::Component;
    /// #[derive(Component)] struct Position { x: f32, y: f32 }
    /// #[derive(Component)] struct Health { hp: f32 }
    /// let mut db = Database::new();
    /// db.world_mut().spawn((Position { x: 0.0, y: 0.0 }, Health { hp: 10.0 }));
    /// db.world_mut().spawn((Position { x: 0.0, y: 0.0 }, Health { hp: 90.0 }));
    /// db.select::<&mut Position>("WHERE Health.hp < $1", Params::positional([50]))
    ///     .unwrap()
    ///     .for_each(|mut p| p.x += 1.0);
    /// let moved = db.query("SELECT count(*) WHERE Position.x = 1", ()).unwrap();
    /// assert_eq!(moved.rows[0][0], ecsdb_engine::Value::Int(1));
    /// ```
    pub fn select<Q: QueryData>(&mut self, text: &str, params: impl Into<Params>) -> Result<Selected<'_, Q>, Error> {
        let entities = self.select_entities(text, params)?;
        let world = self.world.get_mut();
        let mut set = EntitySet::default();
        // Only the tables that hold a selected entity are visited, not every table `Q` matches.
        let mut tables = Vec::new();
        for e in entities {
            if let Ok(at) = world.location(e) {
                tables.push(TableId(at.table));
            }
            set.insert(e);
        }
        tables.sort_unstable();
        tables.dedup();
        let inner = world.query_in_tables_mut::<(Entity, Q)>(&tables)?;
        Ok(Selected { inner, set })
    }
}

/// A statement lent by a database's statement cache ([`Database::prepare_cached`]): a
/// [`Prepared`] that goes back to the cache when dropped.
pub struct CachedStatement<'db> {
    cache: &'db StatementCache,
    key: Option<Box<str>>,
    stamp: CatalogStamp,
    prepared: Option<Prepared>,
}

impl std::ops::Deref for CachedStatement<'_> {
    type Target = Prepared;

    fn deref(&self) -> &Prepared {
        self.prepared.as_ref().expect("a cached statement holds its plan until dropped")
    }
}

impl std::ops::DerefMut for CachedStatement<'_> {
    fn deref_mut(&mut self) -> &mut Prepared {
        self.prepared.as_mut().expect("a cached statement holds its plan until dropped")
    }
}

impl Drop for CachedStatement<'_> {
    fn drop(&mut self) {
        if let (Some(key), Some(prepared)) = (self.key.take(), self.prepared.take()) {
            self.cache.put(key, self.stamp, prepared);
        }
    }
}

impl std::fmt::Debug for CachedStatement<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CachedStatement").field(&**self).finish()
    }
}

/// A set of live entities, by index (a bitset).
#[derive(Default, Debug, Clone)]
struct EntitySet {
    bits: Vec<u64>,
}

impl EntitySet {
    fn insert(&mut self, e: Entity) {
        let i = e.index() as usize;
        if self.bits.len() <= i / 64 {
            self.bits.resize(i / 64 + 1, 0);
        }
        self.bits[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn contains(&self, e: Entity) -> bool {
        let i = e.index() as usize;
        self.bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The typed items of the entities a text query selected (see [`Database::select`]).
pub struct Selected<'w, Q: QueryData> {
    inner: ecsdb_engine::Query<'w, (Entity, Q), ()>,
    set: EntitySet,
}

impl<'w, Q: QueryData> Iterator for Selected<'w, Q> {
    type Item = Q::Item<'w>;

    fn next(&mut self) -> Option<Q::Item<'w>> {
        loop {
            let (e, item) = self.inner.next()?;
            if self.set.contains(e) {
                return Some(item);
            }
        }
    }
}

/// Moves an error's span back by `shift` bytes (text parsed behind a prefix).
fn unshift(mut e: Error, shift: usize) -> Error {
    if let Some(s) = &mut e.span {
        s.start = s.start.saturating_sub(shift);
        s.end = s.end.saturating_sub(shift);
    }
    e
}

/// Parses a selection: a query statement, or `[FROM …] [WHERE …]` alone (read as
/// `SELECT entity FROM … WHERE …`). Returns the statement and how far its spans are shifted
/// from `text` (the prefix added).
fn parse_selection(text: &str) -> Result<(ast::Statement, usize), Error> {
    let first = crate::lex::Lexer::new(text).find(|t| !t.kind.is_trivia());
    let word = first.map_or("", |t| t.text(text));
    if word.eq_ignore_ascii_case("from") || word.eq_ignore_ascii_case("where") {
        const PREFIX: &str = "SELECT entity ";
        let full = format!("{PREFIX}{text}");
        let stmt = parse::parse_statement(&full).map_err(|e| unshift(e, PREFIX.len()))?;
        return Ok((stmt, PREFIX.len()));
    }
    let stmt = parse::parse_statement(text)?;
    match stmt {
        ast::Statement::Select(_) => Ok((stmt, 0)),
        other => {
            Err(Error::new(ErrorKind::Type, "a selection must be a query (SELECT or FROM/WHERE)")
                .with_span(other.span()))
        }
    }
}

/// The parameter values a statement needs, in its numbering.
/// The statement's parameter values in slot order. Positional `$1`, `$2`, … taken in order
/// are the caller's values as they are, with no copy.
fn resolve_params<'p>(specs: &[ParamSpec], params: &'p Params) -> Result<Cow<'p, [Value]>, Error> {
    let in_order = specs.iter().enumerate().all(|(i, s)| matches!(s.key, ParamKey::Position(n) if n == i + 1));
    if in_order && params.positional_len() >= specs.len() {
        return Ok(Cow::Borrowed(&params.positional_values()[..specs.len()]));
    }
    specs
        .iter()
        .map(|s| {
            let v = match &s.key {
                ParamKey::Position(n) => params.get_positional(*n),
                ParamKey::Name(n) => params.get_named(n),
            };
            v.cloned().ok_or_else(|| {
                Error::new(ErrorKind::Parameter, format!("no value bound for parameter {}", s.key)).with_span(s.span)
            })
        })
        .collect::<Result<Vec<Value>, Error>>()
        .map(Cow::Owned)
}

/// A statement's physical plan, ready to run.
#[derive(Clone, Debug)]
enum Executable {
    Select(PhysicalSelect),
    Explain(PhysicalSelect),
    Spawn(Vec<ComponentValue>),
    Despawn(ScanPlan),
    Add(Vec<ComponentValue>, ScanPlan),
    Remove(Vec<(ComponentId, String)>, ScanPlan),
    Update { component: ComponentId, assignments: Vec<(usize, Expr)>, scan: ScanPlan, buffers: StagingBuffers },
    CreateComponent(ComponentDef, Vec<ecsdb_engine::ReferenceDef>, Vec<(String, Value)>),
    CreateIndex { def: ecsdb_engine::index::IndexDef, span: Span },
    DropIndex(String, Span),
    AlterComponent(crate::plan::logical::AlterPlan),
    Show(ShowKind),
    Describe(ComponentId),
    Schedule(ScheduleOp),
}

/// The columns of TICK's result: one row per failing statement.
fn tick_columns() -> Vec<String> {
    vec!["tick".into(), "system".into(), "error".into()]
}
