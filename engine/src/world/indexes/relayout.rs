//! Indexes following their component through `ALTER COMPONENT`: the fields they read
//! renumbered and renamed, the definitions renamed with the component. Their entries stay:
//! the values they were made from did not change.

use std::sync::atomic::Ordering;

use super::{IndexRegistry, Source};
use crate::component::{ComponentId, ComponentInfo};
use crate::index::IndexDef;

/// A component's index definitions as they were before a change, to put back.
pub(crate) struct SavedIndexes(Vec<(u64, IndexDef, Source)>);

impl IndexRegistry {
    /// The names of `component`'s function indexes, which may read any of its fields by
    /// name, and with `by_position`, of the indexes that read field `field` (a schema
    /// position): what dropping the field (`by_position`) or renaming it would break. An
    /// index on fields follows a rename.
    pub(crate) fn depending_on_field(
        &mut self,
        component: ComponentId,
        field: usize,
        by_position: bool,
    ) -> Vec<String> {
        let set = self.get_mut();
        set.slots
            .iter()
            .filter(|s| s.component == component)
            .filter(|s| match &s.source {
                Source::Fields(fields) => by_position && fields.contains(&field),
                Source::Presence => false,
                Source::Dynamic(_) | Source::Typed(_) => true,
            })
            .map(|s| s.name().to_string())
            .collect()
    }

    /// Makes `component`'s indexes follow its new description `info`: field `i` of a
    /// definition is now `positions[i]` (every field an index reads is kept), names are
    /// `info`'s. Returns what it replaced.
    pub(crate) fn relaid(&mut self, info: &ComponentInfo, positions: Option<&[Option<usize>]>) -> SavedIndexes {
        let set = self.get_mut();
        let mut saved = Vec::new();
        for s in set.slots.iter_mut().filter(|s| s.component == info.id()) {
            saved.push((s.serial, s.def.clone(), s.source.clone()));
            if let (Source::Fields(fields), Some(positions)) = (&mut s.source, positions) {
                for f in fields.iter_mut() {
                    *f = positions[*f].expect("the caller refuses to drop an indexed field");
                }
            }
            if let Source::Fields(fields) = &s.source {
                s.def.fields = fields.iter().map(|&f| info.fields()[f].name.clone()).collect();
            }
            s.def.component = info.name().to_string();
        }
        self.version.fetch_add(1, Ordering::Relaxed);
        SavedIndexes(saved)
    }

    /// Puts back what [`IndexRegistry::relaid`] replaced.
    pub(crate) fn restore(&mut self, saved: SavedIndexes) {
        let set = self.get_mut();
        for (serial, def, source) in saved.0 {
            if let Some(s) = set.slots.iter_mut().find(|s| s.serial == serial) {
                s.def = def;
                s.source = source;
            }
        }
        self.version.fetch_add(1, Ordering::Relaxed);
    }
}
