//! Change ticks and the `Mut<T>` guard that maintains them on typed writes.
//!
//! The world keeps a counter. Every write stamps the rows it touches with the current tick;
//! a prepared query remembers the tick of its last run and reports rows whose tick is newer
//! (`Added<T>`, `Changed<T>`). Each run of a query takes the current tick as its own and
//! advances the counter, so writes made after a run are always newer than it.

use std::ops::{Deref, DerefMut};

/// A point in the world's change history.
pub type Tick = u32;

/// Whether a row stamped `tick` changed after `last_run` and no later than `this_run`.
#[inline]
pub fn is_newer(tick: Tick, last_run: Tick, this_run: Tick) -> bool {
    tick > last_run && tick <= this_run
}

/// Mutable access to a component that stamps its changed tick when written through.
///
/// Reading through `Deref` never marks a change; `DerefMut` does.
pub struct Mut<'a, T> {
    pub(crate) value: &'a mut T,
    pub(crate) changed: &'a mut Tick,
    pub(crate) tick: Tick,
}

impl<'a, T> Mut<'a, T> {
    /// Marks the value changed without writing it.
    pub fn set_changed(&mut self) {
        *self.changed = self.tick;
    }

    /// The tick this value was last changed at.
    pub fn last_changed(&self) -> Tick {
        *self.changed
    }

    /// Mutable access that does not mark a change (use with care: indexes and `Changed<T>`
    /// will not see the write).
    pub fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    /// Consumes the guard into a plain reference, marking the value changed.
    pub fn into_inner(self) -> &'a mut T {
        *self.changed = self.tick;
        self.value
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
        *self.changed = self.tick;
        self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}
