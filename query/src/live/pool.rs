//! The reader pool: the threads readers' statements run on, and the permits that bound how
//! many run at once.
//!
//! A statement takes a permit (waiting for one: more clients queue), then runs on one of the
//! pool's threads while the caller waits. Running there rather than on the caller's thread
//! does two things for the program that owns the world:
//!
//! - the engine's parallel loops inside a statement use the pool's threads (rayon runs them
//!   on the pool they are called from), never more threads than the pool has;
//! - the pool's threads run at [`ReaderPriority::Background`] by default, so the operating
//!   system gives a core to the program's own threads (the game loop, the copier that holds
//!   the writer's world) before a reader's scan. A reader then uses only the time the
//!   program leaves idle, and its scan never delays the writer's tick by making it wait for a
//!   core;
//! - the pool's threads hold the publisher's pause gate ([`crate::execute::pace`]): while the
//!   writer is in a tick ([`Publisher::begin_tick`](super::Publisher::begin_tick)), their
//!   statements wait at their next pause point, so a scan on another core does not take the
//!   memory bandwidth and shared cache the tick needs.
//!
//! The copier's snapshot copies (of a world its mirror cannot follow) decode on the same
//! threads, with a permit it gets ahead of any waiting reader (a new state must not wait
//! behind a queue of scans of the old one).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::execute::pace::{Gate, hold_gate};

use super::lock;

/// How the reader pool's threads are scheduled against the program's own threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReaderPriority {
    /// The lowest normal priority (a nice value of 19 on Linux): a core runs a reader only
    /// while no thread of the program wants it. Readers slow down when the program keeps
    /// every core busy; the program never waits for them. Where the operating system refuses
    /// the change, the threads run at normal priority.
    #[default]
    Background,
    /// The same priority as the program's threads: readers and the program share the cores.
    Normal,
}

/// The reader pool's settings (see [`Publisher::with_pool`](super::Publisher::with_pool)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Statements run at once, and threads that run them (at least 1). Default:
    /// [`default_pool_size`].
    pub size: usize,
    /// How the pool's threads are scheduled. Default: [`ReaderPriority::Background`].
    pub priority: ReaderPriority,
    /// The longest the pool's statements pause for one tick of the writer
    /// ([`Publisher::begin_tick`](super::Publisher::begin_tick)); `Duration::ZERO` never
    /// pauses them. Default: [`TICK_PAUSE_LIMIT`].
    pub pause_limit: Duration,
}

/// The longest readers' statements pause for one tick by default
/// ([`PoolOptions::pause_limit`]): a tick that runs longer (a level loading) lets them go on.
pub const TICK_PAUSE_LIMIT: Duration = Duration::from_millis(100);

impl Default for PoolOptions {
    fn default() -> PoolOptions {
        PoolOptions { size: default_pool_size(), priority: ReaderPriority::default(), pause_limit: TICK_PAUSE_LIMIT }
    }
}

/// The default size of the reader pool: the machine's cores less the writer's, at least 1.
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).saturating_sub(1).max(1)
}

/// The reader pool: permits and threads.
pub(crate) struct ReaderPool {
    permits: Mutex<Permits>,
    freed: Condvar,
    size: usize,
    /// `None` if the threads could not be started: statements then run on their callers'
    /// threads, still bounded by the permits.
    threads: Option<rayon::ThreadPool>,
}

struct Permits {
    free: usize,
    /// The copier waits for a permit: it gets the next one, before any reader.
    copier_waiting: bool,
}

impl ReaderPool {
    /// The pool; its threads' statements wait at `gate` while it is closed.
    pub(crate) fn new(options: PoolOptions, gate: Arc<Gate>) -> ReaderPool {
        let size = options.size.max(1);
        let background = options.priority == ReaderPriority::Background;
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(size)
            .thread_name(|i| format!("ecsdb-reader-{i}"))
            .start_handler(move |_| {
                hold_gate(Arc::clone(&gate));
                if background {
                    // Best effort (see `ReaderPriority::Background`): a refusal leaves the
                    // thread at normal priority, which is only slower for the program.
                    let _ = thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min);
                }
            })
            .build()
            .ok();
        ReaderPool {
            permits: Mutex::new(Permits { free: size, copier_waiting: false }),
            freed: Condvar::new(),
            size,
            threads,
        }
    }

    /// Statements run at once.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Runs a reader's `f` on a pool thread once a permit is free (waiting for one, behind the
    /// copier), and returns its result.
    pub(crate) fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let _permit = self.take(|p| p.free > 0 && !p.copier_waiting);
        self.install(f)
    }

    /// Runs the copier's `f` on the pool's threads with the next free permit, ahead of
    /// waiting readers.
    pub(crate) fn run_for_copier<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        lock(&self.permits).copier_waiting = true;
        let _permit = self.take(|p| p.free > 0);
        self.install(f)
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.threads {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// Waits until `ready`, then takes a permit (and clears the copier's turn: only the
    /// copier waits with `copier_waiting` set and takes the permit while it is).
    fn take(&self, ready: impl Fn(&Permits) -> bool) -> Permit<'_> {
        let mut permits = lock(&self.permits);
        while !ready(&permits) {
            permits = self.freed.wait(permits).unwrap_or_else(|p| p.into_inner());
        }
        permits.free -= 1;
        permits.copier_waiting = false;
        Permit(self)
    }
}

/// A permit of the reader pool, returned on drop.
struct Permit<'a>(&'a ReaderPool);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        lock(&self.0.permits).free += 1;
        // All: the copier, which goes first, may be among the waiters.
        self.0.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn open_gate() -> Arc<Gate> {
        Arc::new(Gate::new(std::time::Duration::from_secs(1)))
    }

    #[test]
    fn statements_run_on_the_pool_threads_at_most_size_at_once() {
        let pool = Arc::new(ReaderPool::new(PoolOptions { size: 2, ..PoolOptions::default() }, open_gate()));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let callers: Vec<_> = (0..6)
            .map(|_| {
                let (pool, running, most) = (Arc::clone(&pool), Arc::clone(&running), Arc::clone(&most));
                std::thread::spawn(move || {
                    pool.run(|| {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        running.fetch_sub(1, Ordering::SeqCst);
                        std::thread::current().name().map(str::to_string)
                    })
                })
            })
            .collect();
        for c in callers {
            let name = c.join().unwrap().unwrap_or_default();
            assert!(name.starts_with("ecsdb-reader-"), "ran on {name:?}");
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
    }

    /// The calling thread's nice value, from `/proc` (field 19 of its stat line).
    #[cfg(target_os = "linux")]
    fn nice() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The fields after the command name, which is in parentheses and may hold spaces.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn background_threads_run_below_the_program() {
        let on_pool = |priority| {
            ReaderPool::new(PoolOptions { size: 1, priority, ..PoolOptions::default() }, open_gate()).run(nice)
        };
        assert_eq!(on_pool(ReaderPriority::Normal), nice());
        assert!(on_pool(ReaderPriority::Background) > nice(), "a higher nice value: a lower priority");
    }
}
