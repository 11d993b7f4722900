//! Database handles for live access: one writer keeps the [`Database`]; any number of
//! [`Reader`]s run read-only statements on the reader pool against a state published at a
//! tick boundary, and queue tool writes that the writer applies between two ticks.
//!
//! ```text
//!  game loop ──► Database (the writer's) ──► Publisher::end_tick ──lends──► copier thread
//!                     ▲                                                         │ two copies
//!                     └── queued execs ◄── Reader::exec        Reader::query ◄──┘ Arc<Published>
//! ```
//!
//! The writer pays, at a tick boundary and only when a reader asked for a newer state since
//! the last publish, the lending of its world to the copier thread; its next write waits only
//! if the copier has not given the world back by then, and then for one chunk of rows
//! (`copier.rs`). The copier brings the spare of two read-only copies up to date and swaps it
//! in; readers share it through an `Arc`, so a reader answers from exactly one tick and never
//! stalls the writer. Statements run on the reader pool's background threads (`pool.rs`).
//! With no reader attached the writer pays nothing but a counter check.
//!
//! Components that a snapshot cannot carry (opaque Rust types without serde functions) are
//! left out of the readers' view: a query that names one is an `unknown_component` error.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use ecsdb_engine::{SaveOptions, World};

use crate::Database;
use crate::error::{Error, ErrorKind};
use crate::execute::pace::Gate;
use crate::params::Params;
use crate::parse;
use crate::result::ResultSet;

mod copier;
mod pool;
use copier::{Copier, Job};
use pool::ReaderPool;
pub use pool::{PoolOptions, ReaderPriority, TICK_PAUSE_LIMIT, default_pool_size};

/// A state of the world as of one tick, shared by readers.
#[derive(Debug)]
pub struct Published {
    /// The live tick this state is the end of.
    pub tick: u64,
    /// A read-only database over the copy (registered functions included).
    pub db: Database,
    /// When each component last changed, as far as the copies tell (see [`ChangeLog`]).
    pub changes: ChangeLog,
}

/// When the parts of published states last changed, in live ticks: what a subscriber needs
/// to know whether a query's answer may differ from the one it got at an earlier tick.
///
/// Conservative: a component may be marked changed at a tick where its values did not
/// change (never the reverse), and a full copy marks everything changed.
///
/// ```
/// use ecsdb_query::live::ChangeLog;
/// let mut log = ChangeLog::everything_at(3);
/// log.mark("Health", 7);
/// let reads = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
/// assert!(log.changed_since(2, &reads(&["Position"])), "everything changed at 3");
/// assert!(!log.changed_since(3, &reads(&["Position"])));
/// assert!(log.changed_since(6, &reads(&["Health"])));
/// assert!(!log.changed_since(7, &reads(&["Health", "Position"])));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeLog {
    /// The last tick at which anything could have changed (a full copy: the schema, indexes,
    /// references or systems changed).
    everything: u64,
    /// Component name → the last tick its values changed, where later than `everything`.
    components: std::collections::HashMap<String, u64>,
}

impl ChangeLog {
    /// A log where everything changed at `tick`.
    pub fn everything_at(tick: u64) -> ChangeLog {
        ChangeLog { everything: tick, components: Default::default() }
    }

    /// Notes that component `name`'s values changed at `tick`.
    pub fn mark(&mut self, name: &str, tick: u64) {
        let at = self.components.entry(name.to_string()).or_insert(tick);
        *at = (*at).max(tick);
    }

    /// Whether anything a query reading `components` (by name) sees may have changed after
    /// tick `since`.
    pub fn changed_since(&self, since: u64, components: &std::collections::BTreeSet<String>) -> bool {
        self.everything > since || components.iter().any(|c| self.components.get(c).is_some_and(|&t| t > since))
    }
}

/// How the server treats a subscription to a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionShape {
    /// Whether it gets keyed diffs: a SELECT whose first item is the entity, with no
    /// aggregate, GROUP BY, ORDER BY, LIMIT or OFFSET (the protocol's rule).
    pub keyed: bool,
    /// The components it reads (by name), or `None` when its answer may change without any
    /// component changing (any statement but SELECT: SHOW, DESCRIBE, EXPLAIN; and a SELECT
    /// that requires no component, which ranges over every entity), so a subscriber must
    /// evaluate it at every tick.
    pub reads: Option<std::collections::BTreeSet<String>>,
}

/// How a subscription to `text` is served (one parse and bind).
pub fn subscription_shape(db: &Database, text: &str) -> Result<SubscriptionShape, Error> {
    use crate::expr::ExprKind;
    use crate::plan::logical::{LogicalPlan, Term};
    let stmt = parse::parse_statement(text)?;
    let bound = crate::bind::bind_statement(&stmt, db.world(), db.functions())?;
    let LogicalPlan::Select(p) = &bound.plan else {
        return Ok(SubscriptionShape { keyed: false, reads: None });
    };
    let keyed = !p.aggregated
        && p.order_by.is_empty()
        && p.limit.is_none()
        && p.offset.is_none()
        && p.items.first().is_some_and(|i| matches!(i.expr.kind, ExprKind::Entity));
    // A query that requires no component ranges over every entity: an entity spawned,
    // despawned or moved anywhere may change its answer, which no component's changes tell.
    let ranges_over_all = !p.source.terms.iter().any(|t| matches!(t, Term::Required { .. } | Term::AnyOf(_)));
    if ranges_over_all {
        return Ok(SubscriptionShape { keyed, reads: None });
    }
    let mut access = crate::schedule::Access::default();
    access.add_plan(&bound.plan);
    let components = db.world().components();
    let reads = access.reads.iter().map(|&id| components.info(id).name().to_string()).collect();
    Ok(SubscriptionShape { keyed, reads: Some(reads) })
}

/// What the writer's recent ticks cost, for `stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickTimes {
    /// The last tick's duration in milliseconds; `None` before the first.
    pub last: Option<f64>,
    /// The median of the recent ticks.
    pub p50: Option<f64>,
    /// The 99th percentile of the recent ticks.
    pub p99: Option<f64>,
}

/// One system's counters in the writer, for `stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemStat {
    /// The system's name.
    pub name: String,
    /// Times it ran.
    pub runs: u64,
    /// Rows its statements touched, over all runs.
    pub rows: u64,
    /// Time spent in it, over all runs.
    pub total: Duration,
    /// How long its runs took in the writer's last tick (the mean, when it ran more than once:
    /// a fixed-update system), or since the last tick a reader saw.
    pub last: Option<Duration>,
}

/// How many recent tick durations `stats` summarises.
const TICK_WINDOW: usize = 1024;

/// A tool write waiting for the writer.
struct QueuedExec {
    text: String,
    params: Params,
    reply: SyncSender<Result<ExecOutcome, Error>>,
}

/// The result of a queued write.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecOutcome {
    /// The first tick that sees the write.
    pub tick: u64,
    /// One result per statement of the script.
    pub results: Vec<ResultSet>,
}

/// State shared by the writer and every reader.
struct Shared {
    state: ArcSwapOption<Published>,
    /// A reader asked for the current state since the last publish.
    wanted: AtomicBool,
    /// Live `Reader` handles (the writer publishes nothing while this is 0).
    readers: AtomicUsize,
    /// The newest published tick, for `wait_for_tick`.
    published: Mutex<u64>,
    published_cond: Condvar,
    queue: Mutex<VecDeque<QueuedExec>>,
    queue_cond: Condvar,
    /// The threads readers' statements (and snapshot copies' decoding) run on.
    pool: ReaderPool,
    /// Closed by the writer for the length of its tick ([`Publisher::begin_tick`]): the
    /// pool's statements wait at their pause points meanwhile.
    gate: Arc<Gate>,
    times: Mutex<VecDeque<f64>>,
    /// The writer's per-system statistics as of its last tick with a reader attached.
    systems: Mutex<Vec<SystemStat>>,
    /// The writer is gone: queued writes fail, waits end.
    closed: AtomicBool,
    /// How the copier made the states so far.
    copies: Mutex<CopyStats>,
}

/// How the states readers saw were made (see [`Reader::copy_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Made whole, every row copied (filled from the schema alone, or from a snapshot of
    /// the world the mirror cannot follow): the first state, and any after the schema,
    /// indexes, references or systems changed.
    pub full: u64,
    /// By copying only what changed since the older copy: rows whose values changed, and
    /// rows of entities spawned, despawned or moved between tables.
    pub incremental: u64,
    /// Skipped because the writer wanted its world back before the copy was done.
    pub recalled: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding one of these locks leaves plain data behind; go on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The writer's side of the live handles. The owner of the [`Database`] (the game loop or
/// `ecsdb serve`) calls [`Publisher::end_tick`] at each tick boundary.
pub struct Publisher {
    shared: Arc<Shared>,
    tick: u64,
    published_tick: Option<u64>,
    /// States to make, on their way to the copier thread (capacity 1: a busy copier makes
    /// the writer skip a publish rather than wait).
    to_copier: Option<SyncSender<Job>>,
    copier: Option<std::thread::JoinHandle<()>>,
    /// The copier is making a state.
    copying: Arc<AtomicBool>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("tick", &self.tick).finish()
    }
}

impl Default for Publisher {
    fn default() -> Publisher {
        Publisher::new()
    }
}

impl Publisher {
    /// Handles with the default reader pool ([`PoolOptions::default`]).
    pub fn new() -> Publisher {
        Publisher::with_pool(PoolOptions::default())
    }

    /// Handles whose readers run at most `pool_size` statements at once (at least 1), on
    /// threads of [`ReaderPriority::Background`].
    pub fn with_pool_size(pool_size: usize) -> Publisher {
        Publisher::with_pool(PoolOptions { size: pool_size, ..PoolOptions::default() })
    }

    /// Handles with the reader pool `options` describes.
    ///
    /// ```
    /// use ecsdb_query::live::{PoolOptions, Publisher, ReaderPriority};
    /// // Two statements at once, sharing the cores with the program's threads.
    /// let options = PoolOptions { size: 2, priority: ReaderPriority::Normal, ..PoolOptions::default() };
    /// let publisher = Publisher::with_pool(options);
    /// assert_eq!(publisher.reader().pool_size(), 2);
    /// ```
    pub fn with_pool(options: PoolOptions) -> Publisher {
        let gate = Arc::new(Gate::new(options.pause_limit));
        let shared = Arc::new(Shared {
            state: ArcSwapOption::empty(),
            wanted: AtomicBool::new(false),
            readers: AtomicUsize::new(0),
            published: Mutex::new(0),
            published_cond: Condvar::new(),
            queue: Mutex::new(VecDeque::new()),
            queue_cond: Condvar::new(),
            pool: ReaderPool::new(options, Arc::clone(&gate)),
            gate,
            times: Mutex::new(VecDeque::new()),
            systems: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            copies: Mutex::new(CopyStats::default()),
        });
        let (tx, rx) = mpsc::sync_channel::<Job>(1);
        let copying = Arc::new(AtomicBool::new(false));
        let copier = {
            let shared = Arc::clone(&shared);
            let copying = Arc::clone(&copying);
            std::thread::Builder::new()
                .name("ecsdb-publish".into())
                .spawn(move || copy_loop(rx, shared, copying))
                .expect("spawning the publisher's copier thread")
        };
        Publisher { shared, tick: 0, published_tick: None, to_copier: Some(tx), copier: Some(copier), copying }
    }

    /// A new reader handle.
    pub fn reader(&self) -> Reader {
        Reader::attach(Arc::clone(&self.shared))
    }

    /// The live tick: ticks ended plus writes applied.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Whether a tool write is waiting.
    pub fn has_queued(&self) -> bool {
        !lock(&self.shared.queue).is_empty()
    }

    /// Waits up to `timeout` for a tool write to be queued or for a reader to want a newer
    /// state than the one published (a loop that does not tick, like `ecsdb serve --hz 0`,
    /// waits here and then calls [`Publisher::apply_queued`] and [`Publisher::publish`]).
    pub fn wait_for_work(&self, timeout: Duration) {
        let q = lock(&self.shared.queue);
        if q.is_empty() {
            let _ = self.shared.queue_cond.wait_timeout(q, timeout);
        }
    }

    /// Records how long the writer's last tick took (for `stats`).
    pub fn record_tick_time(&self, d: Duration) {
        let mut t = lock(&self.shared.times);
        if t.len() == TICK_WINDOW {
            t.pop_front();
        }
        t.push_back(d.as_secs_f64() * 1e3);
    }

    /// Starts a tick: readers' statements pause until [`Publisher::end_tick`], so that a
    /// tool's scan does not share the machine's cores and memory bandwidth with the tick.
    ///
    /// Optional: a loop that never calls it lets readers run through its ticks (on the
    /// pool's low-priority threads). A statement pauses at its next pause point, a few
    /// thousand rows on (see [`crate::execute::pace`]), and for at most
    /// [`PoolOptions::pause_limit`] a tick ([`TICK_PAUSE_LIMIT`] by default): a tick that
    /// runs longer, or a loop that stops between `begin_tick` and `end_tick`, lets readers
    /// go on. Pausing changes no answer: a statement reads the published state it started
    /// with. The writer itself should not read through a [`Reader`] inside its tick: that
    /// statement would wait out the limit (it has its own [`Database`] to query).
    ///
    /// ```
    /// use ecsdb_query::{live::Publisher, Database};
    /// let mut db = Database::new();
    /// db.execute("CREATE COMPONENT Hp (v f32)", ()).unwrap();
    /// let mut publisher = Publisher::new();
    /// for _ in 0..3 {
    ///     publisher.begin_tick();
    ///     db.execute("SPAWN Hp {v: 10}", ()).unwrap();
    ///     publisher.end_tick(&mut db);
    /// }
    /// assert_eq!(publisher.tick(), 3);
    /// ```
    pub fn begin_tick(&self) {
        self.shared.gate.close();
    }

    /// Ends a tick: advances the live tick, applies the queued tool writes (each advances it
    /// again), publishes the state if a reader wants it, then lets readers' statements go
    /// on (see [`Publisher::begin_tick`]).
    pub fn end_tick(&mut self, db: &mut Database) {
        self.tick += 1;
        self.apply_queued(db);
        if self.shared.readers.load(Ordering::Acquire) > 0 {
            // A dozen names and counters: what `stats` shows of the schedule, with the time of
            // the runs since the previous look.
            let mut systems = lock(&self.shared.systems);
            let now: Vec<SystemStat> = db
                .system_stats()
                .into_iter()
                .map(|(name, runs, rows, total)| {
                    let before = systems.iter().find(|s| s.name == name);
                    let (runs0, total0, last0) =
                        before.map_or((0, Duration::ZERO, None), |s| (s.runs, s.total, s.last));
                    let last = match runs.checked_sub(runs0) {
                        Some(n) if n > 0 => Some(total.saturating_sub(total0) / n as u32),
                        _ => last0,
                    };
                    SystemStat { name, runs, rows, total, last }
                })
                .collect();
            *systems = now;
        }
        self.publish(db);
        // Last: the writer's own work at the boundary runs with readers still paused.
        self.shared.gate.open();
    }

    /// Applies every queued tool write, in order, each all or nothing, each advancing the
    /// live tick by one. Returns how many were applied.
    pub fn apply_queued(&mut self, db: &mut Database) -> usize {
        let queued: Vec<QueuedExec> = lock(&self.shared.queue).drain(..).collect();
        let mut applied = 0;
        for q in queued {
            let result = apply_all_or_nothing(db, &q.text, &q.params);
            let result = result.map(|results| {
                self.tick += 1;
                applied += 1;
                ExecOutcome { tick: self.tick, results }
            });
            let _ = q.reply.send(result);
        }
        applied
    }

    /// Publishes the current state for readers when one is attached, one asked since the
    /// last publish, the state is newer than the last published one, and the previous
    /// publish is done (otherwise this tick is skipped: the writer never waits here).
    ///
    /// The world is lent to the copier thread until it has copied what changed since the last
    /// publish; the writer's next write takes it back (reads do not), waiting at most for
    /// one chunk of rows, and that state is skipped. A copy made whole (the first state, or
    /// the first after a new schema) goes on at the next boundaries: a program that
    /// publishes once and then only writes leaves readers without it.
    pub fn publish(&mut self, db: &mut Database) {
        let s = &self.shared;
        if s.readers.load(Ordering::Acquire) == 0 {
            return;
        }
        let first = self.published_tick.is_none();
        if !first && (!s.wanted.load(Ordering::Acquire) || self.published_tick == Some(self.tick)) {
            return;
        }
        if self.copying.load(Ordering::Acquire) {
            return;
        }
        let Some(tx) = &self.to_copier else { return };
        s.wanted.store(false, Ordering::Release);
        self.copying.store(true, Ordering::Release);
        let job = Job { tick: self.tick, template: db.with_world(World::new()), loan: db.lend_world() };
        if tx.try_send(job).is_err() {
            // Dropping the job gave the world back.
            self.copying.store(false, Ordering::Release);
            return;
        }
        self.published_tick = Some(self.tick);
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.gate.open();
        self.to_copier = None;
        if let Some(d) = self.copier.take() {
            let _ = d.join();
        }
        for q in lock(&self.shared.queue).drain(..) {
            let _ = q.reply.send(Err(Error::new(ErrorKind::Unsupported, "the world is gone")));
        }
        self.shared.published_cond.notify_all();
    }
}

fn copy_loop(rx: Receiver<Job>, shared: Arc<Shared>, copying: Arc<AtomicBool>) {
    let mut copier = Copier::default();
    while let Ok(job) = rx.recv() {
        // The writer woke this thread a moment before the end of its tick. On a busy machine
        // a thread woken may take its waker's core at once, and the writer's tick would then
        // last until the copy is done: let the writer leave its tick boundary first.
        std::thread::sleep(Duration::from_micros(200));
        let tick = job.tick;
        let published = copier.run(job, &shared);
        // Ready for the next publish before anyone waiting hears of this one.
        copying.store(false, Ordering::Release);
        if published {
            *lock(&shared.published) = tick;
        }
        shared.published_cond.notify_all();
    }
}

/// Runs a script so that either every statement applies or none does. One statement is
/// atomic by itself; a longer script is first run on a copy of the world, and applied only
/// when every statement succeeded there (the same statements on the same state do the same).
fn apply_all_or_nothing(db: &mut Database, text: &str, params: &Params) -> Result<Vec<ResultSet>, Error> {
    let statements = parse::parse_script(text)?;
    if statements.len() > 1 {
        let bytes =
            db.world().save_to_vec(&SaveOptions { change_ticks: true, ..SaveOptions::default() }).map_err(|e| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!("a script of several statements needs a copy of the world: {e}"),
                )
            })?;
        let world = World::load_from_bytes(&bytes)
            .map_err(|e| Error::internal(format!("copying the world for a dry run failed: {e}")))?;
        let mut trial = db.with_world(world);
        for stmt in &statements {
            trial.run_statement(stmt, params)?;
        }
    }
    let mut out = Vec::with_capacity(statements.len());
    for stmt in &statements {
        out.push(db.run_statement(stmt, params)?);
    }
    Ok(out)
}

/// Whether a subscription to `text` gets keyed diffs (see [`SubscriptionShape::keyed`]).
pub fn keyed_by_entity(db: &Database, text: &str) -> Result<bool, Error> {
    subscription_shape(db, text).map(|s| s.keyed)
}

/// A handle that reads the world from any thread: `Send + Sync + Clone`. Each statement runs
/// against one published state (one tick), on a thread of the reader pool while the caller
/// waits (see [`PoolOptions`]).
pub struct Reader {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("pool_size", &self.shared.pool.size()).finish()
    }
}

impl Clone for Reader {
    fn clone(&self) -> Reader {
        Reader::attach(Arc::clone(&self.shared))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.shared.readers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long a reader waits for the first published state, or a write for the writer.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);

impl Reader {
    fn attach(shared: Arc<Shared>) -> Reader {
        shared.readers.fetch_add(1, Ordering::AcqRel);
        shared.wanted.store(true, Ordering::Release);
        Reader { shared }
    }

    /// The reader pool's size.
    pub fn pool_size(&self) -> usize {
        self.shared.pool.size()
    }

    /// The newest published state, asking the writer for a newer one at its next tick
    /// boundary. Waits for the first publish (up to [`WAIT_LIMIT`]).
    pub fn state(&self) -> Result<Arc<Published>, Error> {
        self.shared.wanted.store(true, Ordering::Release);
        if let Some(s) = self.shared.state.load_full() {
            return Ok(s);
        }
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut published = lock(&self.shared.published);
        loop {
            if let Some(s) = self.shared.state.load_full() {
                return Ok(s);
            }
            let now = Instant::now();
            if now >= deadline || self.shared.closed.load(Ordering::Acquire) {
                return Err(Error::new(ErrorKind::Unsupported, "the world has not published a state to read"));
            }
            published =
                self.shared.published_cond.wait_timeout(published, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Waits until a state of tick `tick` or later is published, or `timeout` passes; returns
    /// the newest state either way (none before the first publish).
    pub fn wait_for_tick(&self, tick: u64, timeout: Duration) -> Option<Arc<Published>> {
        self.shared.wanted.store(true, Ordering::Release);
        let deadline = Instant::now() + timeout;
        let mut published = lock(&self.shared.published);
        loop {
            // Look at the tick through a guard, and hold no state while waiting: once the
            // copier has published the next state it waits for the older copy to be free
            // before it takes another job, so a waiter holding it would turn the next
            // state into a filled copy.
            let reached = self.shared.state.load().as_ref().is_some_and(|s| s.tick >= tick);
            let now = Instant::now();
            if reached || now >= deadline || self.shared.closed.load(Ordering::Acquire) {
                return self.shared.state.load_full();
            }
            published =
                self.shared.published_cond.wait_timeout(published, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Runs `f` on the newest state, on a thread of the reader pool once it has room
    /// (waiting for it), and returns what `f` returns.
    pub fn with_state<R: Send>(&self, f: impl FnOnce(&Published) -> R + Send) -> Result<R, Error> {
        // Wait for a first state without a permit (the copier needs one to make it); then the
        // permit before taking the newest state: a state held while waiting for a permit would
        // be older by the time it is read, and would keep the copier from reusing it.
        drop(self.state()?);
        self.shared.pool.run(|| self.state().map(|state| f(&state)))
    }

    /// Runs one read-only statement against the newest published state; returns the tick it
    /// reflects with the result. A mutating statement is a `constraint` error.
    pub fn query(&self, text: &str, params: impl Into<Params>) -> Result<(u64, ResultSet), Error> {
        let params = params.into();
        self.with_state(|s| s.db.run_query(text, &params).map(|r| (s.tick, r)))?
    }

    /// Queues a script for the writer and waits (up to [`WAIT_LIMIT`]) for it to be applied,
    /// all or nothing, between two ticks.
    pub fn exec(&self, text: &str, params: impl Into<Params>) -> Result<ExecOutcome, Error> {
        let params = params.into();
        // Parse here, so a syntax error costs the writer nothing.
        parse::parse_script(text)?;
        let (tx, rx) = mpsc::sync_channel(1);
        {
            let mut q = lock(&self.shared.queue);
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(Error::new(ErrorKind::Unsupported, "the world is gone"));
            }
            q.push_back(QueuedExec { text: text.to_string(), params, reply: tx });
        }
        self.shared.queue_cond.notify_all();
        self.shared.wanted.store(true, Ordering::Release);
        let out = rx
            .recv_timeout(WAIT_LIMIT)
            .map_err(|_| Error::new(ErrorKind::Unsupported, "the world did not apply the write in time"))??;
        // Read your writes: return once readers can see the write (bounded, in case the
        // writer stops publishing).
        self.wait_for_tick(out.tick, Duration::from_secs(5));
        Ok(out)
    }

    /// How the published states were made so far.
    pub fn copy_stats(&self) -> CopyStats {
        *lock(&self.shared.copies)
    }

    /// The writer's per-system counters as of its last tick (empty before a reader saw one).
    pub fn system_stats(&self) -> Vec<SystemStat> {
        lock(&self.shared.systems).clone()
    }

    /// The writer's recent tick durations.
    pub fn tick_times(&self) -> TickTimes {
        let t = lock(&self.shared.times);
        let mut sorted: Vec<f64> = t.iter().copied().collect();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let pick = |q: f64| (!sorted.is_empty()).then(|| sorted[((sorted.len() - 1) as f64 * q).round() as usize]);
        TickTimes { last: t.back().copied(), p50: pick(0.5), p99: pick(0.99) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> Database {
        let mut db = Database::new();
        db.execute_script("CREATE COMPONENT Health (hp i32); SPAWN Health {hp: 1}; SPAWN Health {hp: 2}").unwrap();
        db
    }

    /// Defines `Pos (x, y)` and spawns `n` entities with `x` from 0 and `y` 0: enough rows
    /// that a copy takes several chunks.
    fn spawn_positions(db: &mut Database, n: usize) {
        db.execute_script("CREATE COMPONENT Pos (x f64, y f64)").unwrap();
        let rows: Vec<_> = (0..n).map(|i| format!("SPAWN Pos {{x: {i}, y: 0}}")).collect();
        db.execute_script(&rows.join(";")).unwrap();
    }

    #[test]
    fn readers_see_the_published_tick_and_nothing_later() {
        let mut db = world();
        let mut p = Publisher::with_pool_size(2);
        let r = p.reader();
        p.end_tick(&mut db);
        let s = r.wait_for_tick(1, WAIT_LIMIT).unwrap();
        assert_eq!(s.tick, 1);
        db.execute("SPAWN Health {hp: 3}", ()).unwrap();
        // Not yet published: the reader still answers from tick 1.
        let (tick, rs) = r.query("SELECT count(*)", ()).unwrap();
        assert_eq!((tick, rs.rows[0][0].clone()), (1, ecsdb_engine::Value::Int(2)));
        p.end_tick(&mut db);
        let s = r.wait_for_tick(2, WAIT_LIMIT).unwrap();
        assert_eq!(s.db.query("SELECT count(*)", ()).unwrap().rows[0][0], ecsdb_engine::Value::Int(3));
    }

    /// While the writer is in a tick, a reader's statement waits at its pause points; it
    /// answers when the tick ends, from the state it started on.
    #[test]
    fn readers_statements_pause_while_the_writer_ticks() {
        let mut db = world();
        let options = PoolOptions { size: 1, pause_limit: Duration::from_secs(60), ..PoolOptions::default() };
        let mut p = Publisher::with_pool(options);
        let r = p.reader();
        p.end_tick(&mut db);
        r.wait_for_tick(1, WAIT_LIMIT).unwrap();
        p.begin_tick();
        let answered = Arc::new(AtomicBool::new(false));
        let asker = {
            let (r, answered) = (r.clone(), Arc::clone(&answered));
            std::thread::spawn(move || {
                let out = r.query("SELECT count(*) WHERE Health.hp > 0", ());
                answered.store(true, Ordering::SeqCst);
                out
            })
        };
        // The statement reaches a pause point and stays there.
        let deadline = Instant::now() + WAIT_LIMIT;
        while p.shared.gate.waiting() == 0 {
            assert!(!answered.load(Ordering::SeqCst), "a reader's statement ran through the writer's tick");
            assert!(Instant::now() < deadline, "the statement never reached a pause point");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(!answered.load(Ordering::SeqCst), "a reader's statement ran through the writer's tick");
        db.execute("SPAWN Health {hp: 3}", ()).unwrap();
        p.end_tick(&mut db);
        let (tick, rs) = asker.join().unwrap().unwrap();
        assert_eq!((tick, rs.rows[0][0].clone()), (1, ecsdb_engine::Value::Int(2)));
        // Between ticks statements run at once.
        let (_, rs) = r.query("SELECT count(*) WHERE Health.hp > 0", ()).unwrap();
        assert!(matches!(rs.rows[0][0], ecsdb_engine::Value::Int(2 | 3)));
    }

    /// A pause limit of zero never holds a statement.
    #[test]
    fn a_zero_pause_limit_never_pauses() {
        let mut db = world();
        let mut p =
            Publisher::with_pool(PoolOptions { size: 1, pause_limit: Duration::ZERO, ..PoolOptions::default() });
        let r = p.reader();
        p.end_tick(&mut db);
        r.wait_for_tick(1, WAIT_LIMIT).unwrap();
        p.begin_tick();
        let (_, rs) = r.query("SELECT count(*) WHERE Health.hp > 0", ()).unwrap();
        assert_eq!(rs.rows[0][0], ecsdb_engine::Value::Int(2));
        p.end_tick(&mut db);
    }

    #[test]
    fn nothing_is_published_without_readers() {
        let mut db = world();
        let mut p = Publisher::new();
        p.end_tick(&mut db);
        assert!(p.published_tick.is_none());
    }

    /// A state the writer recalled before the copy was done leaves the readers' request
    /// standing: the next tick boundary makes a state although no reader asked again.
    #[test]
    fn a_state_skipped_by_a_recall_is_made_at_the_next_boundary() {
        let mut db = world();
        spawn_positions(&mut db, 20_000);
        let mut p = Publisher::with_pool_size(1);
        let r = p.reader();
        p.end_tick(&mut db);
        r.wait_for_tick(1, WAIT_LIMIT).unwrap();
        // The newest state's tick, looked at without asking for a newer one.
        let newest = |r: &Reader| r.shared.state.load().as_ref().map_or(0, |s| s.tick);
        for _ in 0..200 {
            let before = r.copy_stats();
            r.shared.wanted.store(true, Ordering::Release);
            db.execute("UPDATE Pos SET y = Pos.y + 1", ()).unwrap();
            p.end_tick(&mut db);
            // At once: the copier is still copying (it waits 200 µs before it starts).
            db.execute("UPDATE Pos SET y = Pos.y + 1", ()).unwrap();
            let deadline = Instant::now() + WAIT_LIMIT;
            while r.copy_stats() == before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if r.copy_stats().recalled == before.recalled {
                continue; // The copy was done first: try again.
            }
            // The copier says it is ready for the next job just after it counts the recall.
            while p.copying.load(Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let tick = p.tick() + 1;
            p.end_tick(&mut db);
            let deadline = Instant::now() + WAIT_LIMIT;
            while newest(&r) < tick && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(newest(&r), tick, "the skipped state's request was lost");
            return;
        }
        panic!("no copy was recalled in 200 tries: {:?}", r.copy_stats());
    }

    /// A first state that the writer recalls at every boundary (it writes right after each)
    /// is finished by later boundaries, each try going on from the last, and holds the
    /// values of one tick.
    #[test]
    fn a_first_state_recalled_is_finished_by_later_boundaries() {
        let mut db = Database::new();
        spawn_positions(&mut db, 40_000);
        for _ in 0..20 {
            let mut p = Publisher::with_pool_size(1);
            let r = p.reader();
            let deadline = Instant::now() + WAIT_LIMIT;
            while r.shared.state.load().is_none() {
                assert!(Instant::now() < deadline, "no first state: {:?}", r.copy_stats());
                p.end_tick(&mut db);
                db.execute("UPDATE Pos SET y = Pos.y + 1", ()).unwrap();
            }
            let state = r.state().unwrap();
            let rs = state.db.query("SELECT min(Pos.y), max(Pos.y), count(*)", ()).unwrap();
            assert_eq!(rs.rows[0][0], rs.rows[0][1], "the first state mixes two ticks");
            assert_eq!(rs.rows[0][2], ecsdb_engine::Value::Int(40_000));
            let stats = r.copy_stats();
            assert_eq!(stats.full, 1, "{stats:?}");
            if stats.recalled > 0 {
                return;
            }
        }
        panic!("the writer never recalled a first state in 20 tries");
    }

    /// A schema change while a first state is being filled starts the fill again with the
    /// new schema: the state readers get has the new component.
    #[test]
    fn a_new_component_while_a_fill_is_underway_starts_it_again() {
        let mut db = Database::new();
        spawn_positions(&mut db, 40_000);
        let mut p = Publisher::with_pool_size(1);
        let r = p.reader();
        p.end_tick(&mut db);
        // Recalled at once (the copier waits 200 µs before it starts), then the schema moves.
        db.execute_script("CREATE COMPONENT Extra (v i32); SPAWN Extra {v: 7}").unwrap();
        // A boundary while the copier is still busy (a recalled copy just given back, or a
        // finished one making its twin) publishes nothing: the next boundary would. Wait for
        // it to be idle, so that this one boundary must make the state with the new schema.
        let deadline = Instant::now() + WAIT_LIMIT;
        while p.copying.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let tick = p.tick() + 1;
        p.end_tick(&mut db);
        let state = r.wait_for_tick(tick, WAIT_LIMIT).expect("a state");
        let rs = state.db.query("SELECT count(*), sum(Extra.v) FROM Extra", ()).unwrap();
        assert_eq!(rs.rows[0], vec![ecsdb_engine::Value::Int(1), ecsdb_engine::Value::Int(7)]);
        let rs = state.db.query("SELECT count(*) FROM Pos", ()).unwrap();
        assert_eq!(rs.rows[0][0], ecsdb_engine::Value::Int(40_000));
    }

    #[test]
    fn a_failing_script_changes_nothing_and_a_good_one_reports_its_tick() {
        let mut db = world();
        let mut p = Publisher::with_pool_size(1);
        let r = p.reader();
        let writer = std::thread::spawn(move || {
            for _ in 0..400 {
                p.end_tick(&mut db);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let bad = r.exec("SPAWN Health {hp: 9}; SPAWN Nope", ()).unwrap_err();
        assert_eq!(bad.kind, ErrorKind::UnknownComponent);
        let good = r.exec("SPAWN Health {hp: 9}; SPAWN Health {hp: 10}", ()).unwrap();
        assert_eq!(good.results.len(), 2);
        let s = r.wait_for_tick(good.tick, WAIT_LIMIT).unwrap();
        assert!(s.tick >= good.tick);
        assert_eq!(s.db.query("SELECT count(*)", ()).unwrap().rows[0][0], ecsdb_engine::Value::Int(4));
        drop(r);
        writer.join().unwrap();
    }

    #[test]
    fn keyed_rule() {
        let db = world();
        for (text, keyed) in [
            ("SELECT entity, Health.hp", true),
            ("SELECT * FROM Health", true),
            ("SELECT Health.hp, entity", false),
            ("SELECT entity, Health.hp ORDER BY 2", false),
            ("SELECT entity, Health.hp LIMIT 1", false),
            ("SELECT count(*)", false),
            ("SHOW COMPONENTS", false),
        ] {
            assert_eq!(keyed_by_entity(&db, text).unwrap(), keyed, "{text}");
        }
    }

    /// Every tick the writer sets every row to the tick's number; an answer that mixed two
    /// ticks would see two values.
    #[test]
    fn an_answer_never_mixes_two_ticks() {
        let mut db = Database::new();
        db.execute("CREATE COMPONENT Health (hp i64)", ()).unwrap();
        for _ in 0..2000 {
            db.execute("SPAWN Health {hp: 0}", ()).unwrap();
        }
        let mut p = Publisher::with_pool_size(2);
        let r = p.reader();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut update = db.prepare("UPDATE Health SET hp = $1").unwrap();
                while !stop.load(Ordering::Acquire) {
                    let next = p.tick() as i64 + 1;
                    update.execute(&mut db, Params::positional([next])).unwrap();
                    p.end_tick(&mut db);
                }
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let mut seen = std::collections::BTreeSet::new();
                    let deadline = Instant::now() + Duration::from_secs(20);
                    // At least 40 answers, and on until the world was seen to move.
                    for i in 0.. {
                        if i >= 40 && (seen.len() > 2 || Instant::now() > deadline) {
                            break;
                        }
                        let (tick, rs) = r.query("SELECT min(Health.hp), max(Health.hp)", ()).unwrap();
                        assert_eq!(rs.rows[0][0], rs.rows[0][1], "one answer, two ticks");
                        if tick > 0 {
                            assert_eq!(rs.rows[0][0], ecsdb_engine::Value::Int(tick as i64));
                        }
                        seen.insert(tick);
                    }
                    seen.len()
                })
            })
            .collect();
        let distinct: Vec<usize> = readers.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Release);
        writer.join().unwrap();
        assert!(distinct.iter().any(|&n| n > 1), "readers saw the world move: {distinct:?}");
    }

    #[test]
    fn reader_is_send_sync_clone() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Reader>();
    }
}
