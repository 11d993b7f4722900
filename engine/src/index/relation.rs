//! `relation` indexes: for a reference field (`ChildOf.parent`), every target's set of
//! referrers. The map is the bitmap index's (one roaring bitmap of referrer indices per
//! target handle), so `C.f = e` and `C.f IN (…)` are answered the same way; what the kind adds
//! is the walk down a hierarchy ([`IndexReader::descendants`](super::IndexReader::descendants),
//! the `descendant_of` predicate) and the referrer lookups of `ON DELETE`
//! ([`IndexReader::referrers`](super::IndexReader::referrers)), in time proportional to the
//! referrers rather than to the component's rows.

use super::bitmap::BitmapIndex;
use super::{cost, Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex};
use crate::entity::Entity;
use crate::value::Value;

/// Target handle → referrers, for one `entity` field.
#[derive(Default)]
pub(crate) struct RelationIndex {
    by_target: BitmapIndex<Entity>,
}

impl SecondaryIndex for RelationIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::Relation
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        match pred {
            IndexPredicate::Eq(_) | IndexPredicate::In(_) => self.by_target.estimate(pred),
            IndexPredicate::DescendantOf { ancestor: ancestor @ Value::Entity(_), max_depth } => {
                // The subtree's size is unknown until walked: guess from the ancestor's children,
                // a few levels of the same fan-out, each level a lookup per node.
                let children = self.by_target.estimate(&IndexPredicate::Eq(ancestor.clone()))?.rows.max(1);
                let levels = max_depth.unwrap_or(3).min(3) as u32;
                let rows = (1..=levels).map(|l| children.saturating_pow(l)).fold(0u64, u64::saturating_add);
                Some(Estimate { rows, exact: false, cost: rows as f64 * cost::DESCEND })
            }
            _ => None,
        }
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        match pred {
            IndexPredicate::Eq(_) | IndexPredicate::In(_) => self.by_target.answer(pred),
            _ => None,
        }
    }

    fn explain(&self, pred: &IndexPredicate) -> Option<String> {
        let referrers = |v: &Value| self.by_target.estimate(&IndexPredicate::Eq(v.clone())).map_or(0, |e| e.rows);
        Some(match pred {
            IndexPredicate::Eq(v) => format!("{} referrers", referrers(v)),
            IndexPredicate::In(vs) => format!("{} referrers", vs.iter().map(referrers).sum::<u64>()),
            IndexPredicate::DescendantOf { ancestor, .. } => {
                format!("{} children, subtree walked at run time", referrers(ancestor))
            }
            _ => return None,
        })
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        self.by_target.update(entity, values)
    }

    fn remove(&mut self, entity: u32) {
        self.by_target.remove(entity)
    }

    fn flush(&mut self) {
        self.by_target.flush()
    }

    fn clear(&mut self) {
        self.by_target.clear()
    }

    fn entries(&self) -> u64 {
        self.by_target.entries()
    }

    fn stats(&self) -> IndexStats {
        self.by_target.stats()
    }
}
