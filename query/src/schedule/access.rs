//! What a system reads and writes, and whether two systems may run at the same time.

use std::collections::BTreeSet;

use ecsdb_engine::{ComponentId, World};

use crate::expr::ExprKind;
use crate::plan::logical::{LogicalPlan, Source};

/// The components a system reads and writes.
///
/// Text systems take it from their bound plans: a statement reads every component it names
/// (terms and expressions), UPDATE writes its component, SPAWN, ADD and REMOVE write the
/// components they name, DESPAWN writes every component. Rust systems take it from their
/// query types.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Components read.
    pub reads: BTreeSet<ComponentId>,
    /// Components written.
    pub writes: BTreeSet<ComponentId>,
    /// Writes every component (DESPAWN).
    pub writes_all: bool,
}

impl Access {
    /// Adds what one bound statement reads and writes.
    pub(crate) fn add_plan(&mut self, plan: &LogicalPlan) {
        let reads = |a: &mut Access, source: &Source| a.reads.extend(source.slots.iter().map(|s| s.id));
        match plan {
            LogicalPlan::Select(s) | LogicalPlan::Explain(s) => reads(self, &s.source),
            LogicalPlan::Spawn(values) => self.writes.extend(values.iter().map(|v| v.id)),
            LogicalPlan::Despawn(source) => {
                reads(self, source);
                self.writes_all = true;
            }
            LogicalPlan::Add(values, source) => {
                reads(self, source);
                self.writes.extend(values.iter().map(|v| v.id));
            }
            LogicalPlan::Remove(components, source) => {
                reads(self, source);
                self.writes.extend(components.iter().map(|(id, _)| *id));
            }
            LogicalPlan::Update { component, source, .. } => {
                reads(self, source);
                self.writes.insert(*component);
            }
            LogicalPlan::CreateComponent(..)
            | LogicalPlan::AlterComponent(..)
            | LogicalPlan::CreateIndex { .. }
            | LogicalPlan::DropIndex(..)
            | LogicalPlan::Show(_)
            | LogicalPlan::Describe(_)
            | LogicalPlan::Schedule(_) => {}
        }
        // Paths (`C.f.D.g`) read components of the entities they reach: not slots of the
        // statement, so not in its source.
        plan.for_each_expr(&mut |e| {
            e.walk(&mut |x| {
                if let ExprKind::Path { steps, .. } = &x.kind {
                    self.reads.extend(steps.iter().map(|hop| hop.component));
                }
            })
        });
    }

    /// Whether it touches no component at all.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && !self.writes_all
    }

    /// Whether running both at once could give another result than running them one after
    /// the other: one writes what the other reads or writes.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        if (self.writes_all && !other.is_empty()) || (other.writes_all && !self.is_empty()) {
            return true;
        }
        let touches = |a: &Access, id: &ComponentId| a.reads.contains(id) || a.writes.contains(id);
        self.writes.iter().any(|id| touches(other, id)) || other.writes.iter().any(|id| touches(self, id))
    }

    /// The components read, by name, comma-separated (for SHOW SYSTEMS).
    pub(crate) fn reads_text(&self, world: &World) -> String {
        names(world, &self.reads)
    }

    /// The components written, by name, comma-separated; `*` for every component.
    pub(crate) fn writes_text(&self, world: &World) -> String {
        if self.writes_all {
            return "*".into();
        }
        names(world, &self.writes)
    }
}

fn names(world: &World, ids: &BTreeSet<ComponentId>) -> String {
    let mut names: Vec<&str> = ids.iter().map(|id| world.components().info(*id).name()).collect();
    names.sort_unstable();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<ComponentId> {
        let mut world = World::new();
        (0..3)
            .map(|i| world.define_component(&ecsdb_engine::ComponentDef::new(format!("C{i}"), &[])).unwrap())
            .collect()
    }

    fn access(reads: &[usize], writes: &[usize], all: bool) -> Access {
        let ids = ids();
        Access {
            reads: reads.iter().map(|&i| ids[i]).collect(),
            writes: writes.iter().map(|&i| ids[i]).collect(),
            writes_all: all,
        }
    }

    #[test]
    fn conflicts() {
        let a = access(&[0, 1], &[0], false);
        assert!(!a.conflicts_with(&access(&[1, 2], &[2], false)), "shared reads are fine");
        assert!(a.conflicts_with(&access(&[0], &[], false)), "a write and a read");
        assert!(a.conflicts_with(&access(&[], &[0], false)), "two writes");
        assert!(a.conflicts_with(&access(&[], &[], true)), "DESPAWN writes everything");
        assert!(!access(&[], &[], false).conflicts_with(&access(&[], &[], true)), "nothing meets nothing");
    }
}
