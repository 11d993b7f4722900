//! The phases of a tick, in order.

use std::fmt;

/// A phase of a tick. Every phase runs every tick, in the order of [`Phase::ALL`];
/// [`Phase::FixedUpdate`] runs as many times as the accumulated time allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Phase {
    /// First: loading input.
    OnLoad,
    /// After loading.
    PostLoad,
    /// Before the update.
    PreUpdate,
    /// At a fixed rate (`SET fixed_hz`), zero or more times per tick.
    FixedUpdate,
    /// The update (where a system goes without `IN PHASE`).
    #[default]
    OnUpdate,
    /// Checking the update.
    OnValidate,
    /// After the update.
    PostUpdate,
    /// Before storing.
    PreStore,
    /// Last: storing output.
    OnStore,
}

impl Phase {
    /// Every phase, in the order a tick runs them.
    pub const ALL: [Phase; 9] = [
        Phase::OnLoad,
        Phase::PostLoad,
        Phase::PreUpdate,
        Phase::FixedUpdate,
        Phase::OnUpdate,
        Phase::OnValidate,
        Phase::PostUpdate,
        Phase::PreStore,
        Phase::OnStore,
    ];

    /// The phase's name as the language writes it (`OnUpdate`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::OnLoad => "OnLoad",
            Phase::PostLoad => "PostLoad",
            Phase::PreUpdate => "PreUpdate",
            Phase::FixedUpdate => "FixedUpdate",
            Phase::OnUpdate => "OnUpdate",
            Phase::OnValidate => "OnValidate",
            Phase::PostUpdate => "PostUpdate",
            Phase::PreStore => "PreStore",
            Phase::OnStore => "OnStore",
        }
    }

    /// The phase named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_order() {
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(Phase::from_name(&p.name().to_ascii_lowercase()), Some(*p));
            assert!(Phase::ALL[..i].iter().all(|q| q < p));
        }
        assert_eq!(Phase::from_name("Update"), None);
    }
}
