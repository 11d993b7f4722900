//! Change ticks and the `Mut<T>` guard that maintains them on typed writes.
//!
//! The world keeps a counter. Every write stamps the rows it touches with the current tick;
//! a prepared query remembers the tick of its last run and reports rows whose tick is newer
//! (`Added<T>`, `Changed<T>`). Each run of a query takes the current tick as its own and
//! advances the counter, so writes made after a run are always newer than it.
//!
//! # Wraparound
//! Row ticks are 32 bits and the counter wraps. Ticks are therefore compared by their *age*
//! relative to the current run (`this_run - tick`, wrapping), never by value, and ages are
//! capped at [`MAX_CHANGE_AGE`]. So that no row's age ever reaches 2³² (where it would look
//! new again), the world clamps every tick older than `MAX_CHANGE_AGE` to exactly that age
//! once the counter has moved [`CHECK_TICK_THRESHOLD`] ticks since the last check (on the
//! next write, see `World::check_change_ticks`). Clamping loses nothing: such rows are older
//! than any query's last run that is itself younger than `MAX_CHANGE_AGE`, and a query whose
//! last run is older than that sees every row as new (a stale query over-reports, never
//! under-reports). The world's own counter and the queries' last runs are kept as 64-bit
//! counts, so only row ticks need this care.

use std::ops::{Deref, DerefMut};

/// A point in the world's change history (the low 32 bits of the world's change counter).
pub type Tick = u32;

/// How many ticks may pass between two clamping passes over the stored ticks.
pub const CHECK_TICK_THRESHOLD: u32 = 518_400_000;

/// The largest age a stored tick can have: older ticks are clamped to it. With a pass at
/// least every [`CHECK_TICK_THRESHOLD`] ticks, no age exceeds
/// `MAX_CHANGE_AGE + CHECK_TICK_THRESHOLD < 2³²` between passes.
pub const MAX_CHANGE_AGE: u32 = u32::MAX - (2 * CHECK_TICK_THRESHOLD - 1);

/// A run's age bound meaning "every row is new": larger than any capped tick age.
pub(crate) const EVERYTHING_NEW: u32 = u32::MAX;

/// How many ticks ago `tick` was, seen from `now`, capped at [`MAX_CHANGE_AGE`].
#[inline]
pub fn tick_age(tick: Tick, now: Tick) -> u32 {
    now.wrapping_sub(tick).min(MAX_CHANGE_AGE)
}

/// Whether a row stamped `tick` changed after `last_run` and no later than `this_run`
/// (compared by age relative to `this_run`, so it holds across wraparound).
#[inline]
pub fn is_newer(tick: Tick, last_run: Tick, this_run: Tick) -> bool {
    tick_age(tick, this_run) < tick_age(last_run, this_run)
}

/// The rows a change-tracking reader counts as new on one run: those stamped after its
/// previous run (the test `Changed<T>` and `Added<T>` make, for readers that are not typed
/// queries, such as text statements). Get one from [`World::begin_change_run`](crate::World::begin_change_run).
///
/// ```
/// use ecsdb_engine::{ChangeWindow, Component, World};
/// #[derive(Component)] struct Hp { v: f32 }
/// let mut world = World::new();
/// let e = world.spawn(Hp { v: 1.0 });
/// let (first, last_run) = world.begin_change_run(None);
/// let tick = |w: &World| w.tables()[w.location(e).unwrap().table as usize]
///     .column(w.component_id("Hp").unwrap()).unwrap().changed_ticks()[0];
/// assert!(first.is_new(tick(&world)), "a reader's first run sees every row");
/// let (second, last_run) = world.begin_change_run(Some(last_run));
/// assert!(!second.is_new(tick(&world)), "nothing changed since");
/// world.get_mut::<Hp>(e).unwrap().v = 2.0;
/// let (third, _) = world.begin_change_run(Some(last_run));
/// assert!(third.is_new(tick(&world)));
/// assert!(ChangeWindow::EVERYTHING.is_new(tick(&world)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeWindow {
    this_run: Tick,
    run_age: u32,
}

impl ChangeWindow {
    /// Every row is new (a reader that never ran, or a one-off statement).
    pub const EVERYTHING: ChangeWindow = ChangeWindow { this_run: 0, run_age: EVERYTHING_NEW };

    /// The window of a run at world tick `this_run` (64-bit) after one at `last_run`.
    pub(crate) fn since(last_run: Option<u64>, this_run: u64) -> ChangeWindow {
        ChangeWindow { this_run: this_run as Tick, run_age: run_age(last_run, this_run) }
    }

    /// Whether a row stamped `tick` (an added or changed tick) is new in this run.
    #[inline]
    pub fn is_new(&self, tick: Tick) -> bool {
        is_new(tick, self.this_run, self.run_age)
    }

    /// Whether any of `ticks` is new in this run, testing them all without a branch.
    #[inline]
    pub(crate) fn any_new(&self, ticks: &[Tick]) -> bool {
        if self.run_age == EVERYTHING_NEW {
            return !ticks.is_empty();
        }
        // Below `EVERYTHING_NEW` the age bound is at most `MAX_CHANGE_AGE`, so the cap in
        // `tick_age` changes no answer: one subtraction and one compare a tick.
        let (now, bound) = (self.this_run, self.run_age);
        ticks.iter().fold(false, |any, &t| any | (now.wrapping_sub(t) < bound))
    }
}

/// The age bound of a run at world tick `this_run` (a 64-bit count) for a query last run at
/// `last_run`: rows younger than it are new. A query that never ran, whose last run is older
/// than [`MAX_CHANGE_AGE`] or lies in the future (a world reloaded to an earlier tick) sees
/// every row as new.
#[inline]
pub(crate) fn run_age(last_run: Option<u64>, this_run: u64) -> u32 {
    match last_run.and_then(|l| this_run.checked_sub(l)) {
        Some(age) if age <= MAX_CHANGE_AGE as u64 => age as u32,
        _ => EVERYTHING_NEW,
    }
}

/// Whether a row stamped `tick` is new for a run at `this_run` with age bound `run_age`.
#[inline(always)]
pub(crate) fn is_new(tick: Tick, this_run: Tick, run_age: u32) -> bool {
    tick_age(tick, this_run) < run_age
}

/// Clamps ticks older than [`MAX_CHANGE_AGE`] (seen from `now`) to exactly that age.
pub(crate) fn clamp_ticks(ticks: &mut [Tick], now: Tick) {
    let oldest = now.wrapping_sub(MAX_CHANGE_AGE);
    for t in ticks {
        if now.wrapping_sub(*t) > MAX_CHANGE_AGE {
            *t = oldest;
        }
    }
}

/// Mutable access to a component that stamps its changed tick when written through.
///
/// Reading through `Deref` never marks a change; `DerefMut` does. The stamp is written once,
/// when the guard is dropped (or turned into a plain reference), not on every `DerefMut`: a
/// loop body that writes three fields then stores the tick once, where an eager stamp would
/// store it three times (the compiler cannot tell the tick from the value it guards). A
/// guard that is leaked with [`std::mem::forget`] after a write therefore records no change.
pub struct Mut<'a, T> {
    pub(crate) value: &'a mut T,
    pub(crate) changed: &'a mut Tick,
    pub(crate) tick: Tick,
    /// Whether the value was written through `DerefMut` (or marked) since the guard was made.
    pub(crate) written: bool,
}

impl<'a, T> Mut<'a, T> {
    /// A guard over `value` whose changed tick `changed` is stamped `tick` once written.
    #[inline(always)]
    pub(crate) fn new(value: &'a mut T, changed: &'a mut Tick, tick: Tick) -> Self {
        Mut { value, changed, tick, written: false }
    }

    /// Marks the value changed without writing it.
    pub fn set_changed(&mut self) {
        self.written = true;
    }

    /// The tick this value was last changed at (this run's, once written through the guard).
    pub fn last_changed(&self) -> Tick {
        if self.written { self.tick } else { *self.changed }
    }

    /// Mutable access that does not mark a change (use with care: indexes and `Changed<T>`
    /// will not see the write).
    pub fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    /// Consumes the guard into a plain reference, marking the value changed.
    pub fn into_inner(self) -> &'a mut T {
        let mut this = std::mem::ManuallyDrop::new(self);
        *this.changed = this.tick;
        // SAFETY: `this` is never dropped or used again, so moving the reference out of it
        // leaves no second copy in use.
        unsafe { std::ptr::read(&this.value) }
    }
}

impl<T> Drop for Mut<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.written {
            *self.changed = self.tick;
        }
    }
}

impl<T> Deref for Mut<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for Mut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        self.written = true;
        self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

/// Calls `f(row)`, in row order, for every row whose tick is new for a refresh at `this`
/// with age bound `run_age` (see the module docs). Ticks go 64 at a time: a word with no new
/// tick is passed over after one vectorised test; in the others, a mask of the new rows is
/// made without branches and only its set bits are visited (writes scattered over a large
/// column dirty about half the words, so the scan must not branch per row).
pub(crate) fn for_each_changed(ticks: &[Tick], this: Tick, run_age: u32, mut f: impl FnMut(usize)) {
    const WORD: usize = 64;
    let mut words = ticks.chunks_exact(WORD);
    for (w, word) in words.by_ref().enumerate() {
        if !word.iter().fold(false, |any, &t| any | is_new(t, this, run_age)) {
            continue;
        }
        let mut flags = [0u8; WORD];
        for (flag, &t) in flags.iter_mut().zip(word) {
            *flag = u8::from(is_new(t, this, run_age));
        }
        let mut mask = 0u64;
        for (j, eight) in flags.chunks_exact(8).enumerate() {
            // Eight 0/1 bytes to eight bits: the multiply moves byte i's bit to bit 56 + i.
            let bytes = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
            mask |= (bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (j * 8);
        }
        while mask != 0 {
            f(w * WORD + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
    }
    let base = ticks.len() - words.remainder().len();
    for (i, &t) in words.remainder().iter().enumerate() {
        if is_new(t, this, run_age) {
            f(base + i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_new_answers_as_is_new_for_every_tick() {
        let edges = [0, 1, 2, 1000, CHECK_TICK_THRESHOLD, MAX_CHANGE_AGE - 1, MAX_CHANGE_AGE, MAX_CHANGE_AGE + 1];
        let ticks: Vec<Tick> = edges.iter().flat_map(|&d| [d, u32::MAX - d, d.wrapping_add(7)]).collect();
        for this_run in [0u64, 5, u64::from(u32::MAX) - 3, u64::from(u32::MAX) + 9] {
            for last in [None, Some(0), Some(this_run.saturating_sub(1)), Some(this_run), Some(this_run + 1)] {
                let window = ChangeWindow::since(last, this_run);
                for &t in &ticks {
                    assert_eq!(window.any_new(&[t]), window.is_new(t), "tick {t}, run {this_run}, last {last:?}");
                }
                assert_eq!(window.any_new(&ticks), ticks.iter().any(|&t| window.is_new(t)));
                assert!(!window.any_new(&[]));
            }
        }
    }

    #[test]
    fn ages_compare_across_wraparound() {
        let now: Tick = 5; // the counter wrapped 10 ticks ago
        assert!(is_newer(u32::MAX - 2, u32::MAX - 4, now));
        assert!(!is_newer(u32::MAX - 4, u32::MAX - 4, now));
        assert!(is_newer(3, u32::MAX, now) && !is_newer(u32::MAX, 3, now));
        // A tick from after this run is not new.
        assert!(!is_newer(6, 1, now));
        assert_eq!(tick_age(now.wrapping_sub(MAX_CHANGE_AGE + 7), now), MAX_CHANGE_AGE);
    }

    #[test]
    fn run_ages() {
        assert_eq!(run_age(None, 10), EVERYTHING_NEW);
        assert_eq!(run_age(Some(4), 10), 6);
        assert_eq!(run_age(Some(11), 10), EVERYTHING_NEW);
        assert_eq!(run_age(Some(0), MAX_CHANGE_AGE as u64 + 1), EVERYTHING_NEW);
        let now = (1u64 << 32) + 3;
        let age = run_age(Some(now - 9), now);
        assert!(is_new((now - 2) as Tick, now as Tick, age));
        assert!(!is_new((now - 9) as Tick, now as Tick, age));
        assert!(is_new(0, now as Tick, EVERYTHING_NEW), "clamped rows are new to a query that never ran");
    }

    #[test]
    fn clamping_keeps_young_ticks() {
        let now: Tick = 100;
        let mut ticks = [99, 100, now.wrapping_sub(MAX_CHANGE_AGE), now.wrapping_sub(MAX_CHANGE_AGE + 1), 101];
        clamp_ticks(&mut ticks, now);
        let oldest = now.wrapping_sub(MAX_CHANGE_AGE);
        // 101 lies "in the future": its wrapping age is huge, so it is clamped too.
        assert_eq!(ticks, [99, 100, oldest, oldest, oldest]);
    }

    #[test]
    fn for_each_changed_visits_exactly_the_new_rows_in_order() {
        let mut rng = crate::test_rng::Rng::new(1);
        for len in [0usize, 1, 63, 64, 65, 200, 1000] {
            let ticks: Vec<Tick> = (0..len).map(|_| rng.below(40) as Tick).collect();
            let (this, age) = (30, 7);
            let mut seen = Vec::new();
            for_each_changed(&ticks, this, age, |r| seen.push(r));
            let expected: Vec<usize> = (0..len).filter(|&r| is_new(ticks[r], this, age)).collect();
            assert_eq!(seen, expected, "len {len}");
        }
    }
}
