//! Where a [`Database`](crate::Database) keeps its world: owned, or lent read-only to a
//! publisher's copier thread for the time it takes to copy what changed (see `crate::live`).
//!
//! Lending costs the writer one small allocation. A write while the world is lent asks the
//! borrower to stop ([`WorldLoan::is_recalled`]) and waits for it to give the world back,
//! which a borrower that checks between small steps does at once. Reads go on as usual.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use ecsdb_engine::World;

/// A database's world: owned, or shared with one [`WorldLoan`].
// One per database, owned nearly always: the world inline spares every access a pointer.
#[allow(clippy::large_enum_variant)]
pub(crate) enum WorldSlot {
    Owned(World),
    /// Lent: `back` disconnects once the loan (and with it its `Arc`) is dropped (the mutex
    /// only makes the receiver `Sync`; it is used through `&mut`).
    Lent {
        world: Arc<World>,
        back: Mutex<Receiver<()>>,
        recalled: Arc<AtomicBool>,
    },
    /// Only while switching between the two above.
    Moving,
}

/// Read access to a lent world, on any thread. Dropping it gives the world back: the
/// database's next write, which may be waiting for this, goes on.
pub(crate) struct WorldLoan {
    // Field order matters: the `Arc` is dropped before `_back` disconnects, so the database
    // owns the world alone once it hears of the drop.
    world: Arc<World>,
    recalled: Arc<AtomicBool>,
    _back: SyncSender<()>,
}

impl WorldLoan {
    /// The lent world.
    pub(crate) fn world(&self) -> &World {
        &self.world
    }

    /// Whether the owner wants to write and waits for the world: give it back soon.
    pub(crate) fn is_recalled(&self) -> bool {
        self.recalled.load(Ordering::Acquire)
    }
}

impl WorldSlot {
    /// The world, for reading (lent or not).
    #[inline]
    pub(crate) fn get(&self) -> &World {
        match self {
            WorldSlot::Owned(w) => w,
            WorldSlot::Lent { world, .. } => world,
            WorldSlot::Moving => unreachable!("a world slot is never left moving"),
        }
    }

    /// The world, for writing: waits for an outstanding loan to end first.
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut World {
        if !matches!(self, WorldSlot::Owned(_)) {
            self.take_back();
        }
        match self {
            WorldSlot::Owned(w) => w,
            _ => unreachable!("taken back just now"),
        }
    }

    /// The world by value (waits for a loan to end).
    pub(crate) fn into_inner(mut self) -> World {
        self.take_back();
        match std::mem::replace(&mut self, WorldSlot::Moving) {
            WorldSlot::Owned(w) => w,
            _ => unreachable!("taken back just now"),
        }
    }

    /// Lends the world read-only until the returned loan is dropped.
    pub(crate) fn lend(&mut self) -> WorldLoan {
        self.take_back();
        let WorldSlot::Owned(world) = std::mem::replace(self, WorldSlot::Moving) else {
            unreachable!("taken back just now")
        };
        let world = Arc::new(world);
        let (tx, rx) = mpsc::sync_channel(0);
        let recalled = Arc::new(AtomicBool::new(false));
        *self = WorldSlot::Lent { world: Arc::clone(&world), back: Mutex::new(rx), recalled: Arc::clone(&recalled) };
        WorldLoan { world, recalled, _back: tx }
    }

    /// Whether the world is lent right now.
    #[cfg(test)]
    pub(crate) fn is_lent(&self) -> bool {
        matches!(self, WorldSlot::Lent { .. })
    }

    fn take_back(&mut self) {
        let WorldSlot::Lent { back, recalled, .. } = self else { return };
        recalled.store(true, Ordering::Release);
        // Nothing is ever sent: this returns when the loan is dropped.
        let _ = back.get_mut().unwrap_or_else(|p| p.into_inner()).recv();
        let WorldSlot::Lent { world, .. } = std::mem::replace(self, WorldSlot::Moving) else {
            unreachable!("matched just now")
        };
        // The loan dropped its `Arc` before disconnecting and never hands out a clone, so
        // this is the only one left.
        let world = Arc::try_unwrap(world).unwrap_or_else(|_| unreachable!("a world loan keeps no other owner"));
        *self = WorldSlot::Owned(world);
    }
}

impl Default for WorldSlot {
    fn default() -> WorldSlot {
        WorldSlot::Owned(World::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_waits_for_the_loan_and_reads_do_not() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let mut slot = WorldSlot::default();
        let w = slot.get_mut();
        w.define_component(&ecsdb_engine::ComponentDef::new("Hp", &[("v", ecsdb_engine::FieldType::F32)])).unwrap();
        w.spawn_values(&[("Hp", &[("v", ecsdb_engine::Value::Float(1.0))])]).unwrap();
        let loan = slot.lend();
        assert!(slot.is_lent());
        assert_eq!(slot.get().len(), 1, "reads go on while lent");
        let done = Arc::new(AtomicBool::new(false));
        let copier = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                let n = loan.world().len();
                done.store(true, Ordering::SeqCst);
                drop(loan);
                n
            })
        };
        slot.get_mut();
        assert!(done.load(Ordering::SeqCst), "the write waited for the copier");
        assert!(!slot.is_lent());
        assert_eq!(copier.join().unwrap(), 1);
        assert_eq!(slot.into_inner().len(), 1);
    }
}
