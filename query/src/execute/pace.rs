//! Pause points: where a statement running in the background gives way to a program's own
//! work.
//!
//! A thread can hold a [`Gate`] ([`hold_gate`]); the executor calls [`point`] every few
//! thousand rows: between tables, before each batch of rows a sink takes, and every 4,096
//! rows of a column kernel. (Not inside a compiled program's loop over a table's chunks,
//! which a statement's filter runs over a whole table before its rows reach the sink: the
//! `expr` suite's hot loops stay as they were.) While the gate is closed, a statement on
//! that thread waits there, for at most the gate's limit. The live handles give their reader pool's threads a gate
//! that the writer closes for the length of its tick (`Publisher::begin_tick`), so a tool's
//! long scan does not share the machine's cores and caches with the game's frame; a
//! statement on any other thread never waits. A closed gate costs a statement its
//! progress, never its answer: the state it reads is the one it started with (the test
//! `a_closed_gate_holds_a_point_until_it_opens` shows the use).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A gate that statements on the threads holding it wait at while it is closed.
#[derive(Debug)]
pub struct Gate {
    /// Whether the gate is closed: read at every pause point without the lock.
    closed: AtomicBool,
    /// When it was closed (`None`: open); the waiters' deadline is measured from here.
    closed_at: Mutex<Option<Instant>>,
    opened: Condvar,
    /// The longest a closed gate holds a statement: past it, statements go on (a writer that
    /// never ends its tick does not starve its readers).
    limit: Duration,
    /// Statements waiting at the gate now.
    waiting: AtomicUsize,
}

impl Gate {
    /// An open gate that holds statements for at most `limit` each time it is closed.
    pub fn new(limit: Duration) -> Gate {
        Gate {
            closed: AtomicBool::new(false),
            closed_at: Mutex::new(None),
            opened: Condvar::new(),
            limit,
            waiting: AtomicUsize::new(0),
        }
    }

    /// Closes the gate: statements on the threads holding it stop at their next pause point.
    /// Closing a closed gate keeps its first closing time.
    pub fn close(&self) {
        let mut at = self.closed_at.lock().unwrap_or_else(PoisonError::into_inner);
        at.get_or_insert_with(Instant::now);
        self.closed.store(true, Ordering::Release);
    }

    /// Opens the gate and wakes the statements waiting at it.
    pub fn open(&self) {
        let mut at = self.closed_at.lock().unwrap_or_else(PoisonError::into_inner);
        *at = None;
        self.closed.store(false, Ordering::Release);
        drop(at);
        self.opened.notify_all();
    }

    /// Whether the gate is closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    #[cfg(test)]
    /// How many statements are waiting at the gate now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Waits while the gate is closed, until it opens or its limit has passed since it closed.
    fn wait(&self) {
        let mut at = self.closed_at.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_add(1, Ordering::AcqRel);
        while let Some(since) = *at {
            match (since + self.limit).checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => {
                    at = self.opened.wait_timeout(at, left).unwrap_or_else(PoisonError::into_inner).0;
                }
                _ => break,
            }
        }
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

thread_local! {
    /// The gate this thread's statements wait at, if any.
    static HELD: RefCell<Option<Arc<Gate>>> = const { RefCell::new(None) };
}

/// Makes statements run on this thread from now on wait at `gate` while it is closed.
pub fn hold_gate(gate: Arc<Gate>) {
    HELD.with(|held| *held.borrow_mut() = Some(gate));
}

/// A pause point: waits here while this thread's gate is closed (see the module docs);
/// returns at once on a thread without a gate or with an open one. Out of line: the loops
/// that call it every few thousand rows keep only their row test inline.
#[inline(never)]
pub fn point() {
    HELD.with(|held| {
        if let Some(gate) = held.borrow().as_deref()
            && gate.is_closed()
        {
            gate.wait();
        }
    });
}

/// Rows between two pause points of a long loop: how often [`point`] is worth asking.
pub(crate) const PACE_ROWS: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_gate_holds_a_point_until_it_opens() {
        let gate = Arc::new(Gate::new(Duration::from_millis(5)));
        hold_gate(Arc::clone(&gate));
        gate.close();
        let t = Instant::now();
        point(); // waits until the gate opens, or 5 ms at most
        assert!(t.elapsed() >= Duration::from_millis(5));
        gate.open();
        point(); // open: returns at once
    }

    #[test]
    fn a_thread_without_a_gate_never_waits() {
        let gate = Arc::new(Gate::new(Duration::from_secs(60)));
        gate.close();
        let t = Instant::now();
        std::thread::spawn(point).join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_closed_gate_holds_its_threads_until_it_opens() {
        let gate = Arc::new(Gate::new(Duration::from_secs(60)));
        gate.close();
        let passed = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (gate, passed) = (Arc::clone(&gate), Arc::clone(&passed));
            std::thread::spawn(move || {
                hold_gate(gate);
                point();
                passed.store(true, Ordering::SeqCst);
            })
        };
        while gate.waiting() == 0 {
            assert!(!passed.load(Ordering::SeqCst), "went through a closed gate");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(!passed.load(Ordering::SeqCst), "went through a closed gate");
        gate.open();
        waiter.join().unwrap();
        assert!(passed.load(Ordering::SeqCst));
    }

    #[test]
    fn a_gate_left_closed_lets_statements_go_after_its_limit() {
        let gate = Arc::new(Gate::new(Duration::from_millis(20)));
        gate.close();
        let t = Instant::now();
        let g = Arc::clone(&gate);
        std::thread::spawn(move || {
            hold_gate(g);
            point();
            point();
        })
        .join()
        .unwrap();
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
        assert!(waited < Duration::from_secs(10), "{waited:?}");
        assert!(gate.is_closed(), "the limit lets statements go; the gate stays closed");
    }
}
