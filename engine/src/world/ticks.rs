//! The world's change ticks: the current tick, the ticks runs and index refreshes take, and
//! the periodic clamping of old ticks that keeps them comparable across wraparound.

use super::*;

impl World {
    /// The current change tick: writes made now are stamped with it.
    #[inline]
    pub fn change_tick(&self) -> Tick {
        self.written.store(true, Ordering::Relaxed);
        self.tick.load(Ordering::Relaxed) as Tick
    }

    /// The change counter as a 64-bit count, for readers that do not advance it.
    #[inline]
    pub(crate) fn change_tick_wide(&self) -> u64 {
        self.tick.load(Ordering::Relaxed)
    }

    /// Starts a run of a change-tracking reader whose previous run was `last_run` (`None`: it
    /// never ran), exactly as a typed [`QueryState`](crate::QueryState) starts one: takes a
    /// reader's tick and returns the run's [`ChangeWindow`](crate::ChangeWindow) and the
    /// value to pass as `last_run` next time.
    pub fn begin_change_run(&self, last_run: Option<u64>) -> (crate::tick::ChangeWindow, u64) {
        let this_run = self.read_change_tick_wide();
        (crate::tick::ChangeWindow::since(last_run, this_run), this_run)
    }

    /// Takes the current tick for a reader and advances the counter, so every later write is
    /// newer than the returned tick. Returns the taken tick.
    #[inline]
    pub fn read_change_tick(&self) -> Tick {
        self.read_change_tick_wide() as Tick
    }

    /// [`World::read_change_tick`] as a 64-bit count.
    #[inline]
    pub(crate) fn read_change_tick_wide(&self) -> u64 {
        self.written.store(true, Ordering::Relaxed);
        self.tick.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether a tick went to a writer since the index refresh last took one
    /// ([`World::take_index_tick`]), without taking one.
    #[inline]
    pub(crate) fn written_since_index_tick(&self) -> bool {
        self.written.load(Ordering::Relaxed)
    }

    /// [`World::read_change_tick_wide`] for a holder of `&mut World`: the same tick, taken
    /// without an atomic read-modify-write (which costs more than the rest of a small
    /// query's setup).
    #[inline]
    pub(crate) fn take_change_tick_mut(&mut self) -> u64 {
        *self.written.get_mut() = true;
        let tick = self.tick.get_mut();
        *tick += 1;
        *tick - 1
    }

    /// For the index refresh: a new tick as [`World::read_change_tick_wide`] gives, and
    /// whether any tick went to a writer since the last call (if not, no component value, row
    /// or entity changed: writes need `&mut World` and every write path takes a tick first).
    pub(crate) fn take_index_tick(&self) -> (u64, bool) {
        let written = self.written.swap(false, Ordering::Relaxed);
        (self.tick.fetch_add(1, Ordering::Relaxed), written)
    }

    /// Sets the counter (snapshot loading, with the stored rows' ticks relative to it) and
    /// clamps stored ticks, unless `all_at_tick` says every stored tick is `tick` itself (a
    /// build that gave every row the current tick: nothing can be old).
    pub(crate) fn set_change_tick(&mut self, tick: Tick, all_at_tick: bool) {
        *self.written.get_mut() = true;
        *self.tick.get_mut() = tick as u64;
        if all_at_tick {
            self.last_tick_check = tick as u64;
        } else {
            self.check_change_ticks();
        }
    }

    /// Moves the change counter `n` ticks forward, as `n` reads would, clamping stored ticks
    /// on the way. For tests and simulations that must reach a late point of the change
    /// history (for example the counter's wraparound) without doing `n` reads.
    pub fn advance_change_tick(&mut self, n: u64) {
        let mut left = n;
        while left > 0 {
            let step = left.min(CHECK_TICK_THRESHOLD as u64);
            *self.tick.get_mut() += step;
            left -= step;
            self.maybe_check_change_ticks();
        }
        *self.written.get_mut() = true;
    }

    /// Runs [`World::check_change_ticks`] if the counter moved [`CHECK_TICK_THRESHOLD`] ticks
    /// since the last pass. Every write path calls it, so stored ticks never age past 2³²
    /// as long as no more than about a billion reads happen between two writes.
    #[inline]
    pub(crate) fn maybe_check_change_ticks(&mut self) {
        if *self.tick.get_mut() - self.last_tick_check >= CHECK_TICK_THRESHOLD as u64 {
            self.check_change_ticks();
        }
    }

    /// Clamps every stored tick older than `MAX_CHANGE_AGE`
    /// to that age, so ticks keep comparing correctly after the 32-bit counter wraps. Runs
    /// by itself on writes when due; a holder of a world that only reads for a very long time
    /// may call it now and then.
    pub fn check_change_ticks(&mut self) {
        let now64 = *self.tick.get_mut();
        let now = now64 as Tick;
        for t in &mut self.storage.tables {
            for c in t.columns_mut() {
                c.clamp_ticks(now);
            }
        }
        for s in self.storage.sparse.iter_mut().flatten() {
            s.column_mut().clamp_ticks(now);
        }
        self.last_tick_check = now64;
    }

    /// The tick for a write made now: clamps stored ticks first when due.
    #[inline]
    pub(super) fn write_tick(&mut self) -> Tick {
        self.maybe_check_change_ticks();
        self.change_tick()
    }
}
