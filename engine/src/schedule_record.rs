//! The world's systems as plain records, so that snapshots save them. The engine knows
//! nothing of what a system does: the query layer writes these records and reads them back.

/// A world's schedule, as saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRecord {
    /// The systems, in registration order.
    pub systems: Vec<SystemRecord>,
    /// FixedUpdate runs per simulated second.
    pub fixed_hz: u32,
    /// Simulated time not yet used by FixedUpdate, in nanoseconds.
    pub accumulator_ns: u64,
    /// Ticks run so far.
    pub tick: u64,
    /// Simulated time so far, in nanoseconds.
    pub time_ns: u64,
}

impl Default for ScheduleRecord {
    fn default() -> Self {
        ScheduleRecord { systems: Vec::new(), fixed_hz: 60, accumulator_ns: 0, tick: 0, time_ns: 0 }
    }
}

/// One system, as saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemRecord {
    /// Its name.
    pub name: String,
    /// Its phase's name.
    pub phase: String,
    /// Systems it runs after.
    pub after: Vec<String>,
    /// Systems it runs before.
    pub before: Vec<String>,
    /// What it runs.
    pub body: SystemBody,
}

/// What a saved system runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemBody {
    /// Query-language text.
    Text(String),
    /// A Rust system, registered by name by the program that loads the world.
    Rust,
}
