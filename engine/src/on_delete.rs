//! What despawning a reference's target does to its referrers (`ON DELETE`): a leaf, so that
//! component schemas (`#[reference(...)]` on a derived field) can name the policy without
//! depending on the reference machinery.

use std::fmt;

/// What despawning a reference's target does to the entities that refer to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum OnDelete {
    /// Leave the handle; it then reads as null (the default).
    #[default]
    NoAction,
    /// Despawn the referrer too (recursively).
    Cascade,
    /// Set the field to the null entity.
    SetNull,
    /// Remove the component holding the reference.
    Remove,
    /// Refuse the despawn (unless the referrer is despawned by the same call).
    Restrict,
}

impl OnDelete {
    /// Every policy.
    pub const ALL: [OnDelete; 5] =
        [OnDelete::NoAction, OnDelete::Cascade, OnDelete::SetNull, OnDelete::Remove, OnDelete::Restrict];

    /// The words of the language (`CASCADE`, `SET NULL`, …).
    pub fn name(self) -> &'static str {
        match self {
            OnDelete::NoAction => "NO ACTION",
            OnDelete::Cascade => "CASCADE",
            OnDelete::SetNull => "SET NULL",
            OnDelete::Remove => "REMOVE",
            OnDelete::Restrict => "RESTRICT",
        }
    }
}

impl fmt::Display for OnDelete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
