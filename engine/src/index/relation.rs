//! `relation` indexes: for a reference field (`ChildOf.parent`), every target's set of
//! referrers. The map is the bitmap index's (one roaring bitmap of referrer indices per
//! target handle), so `C.f = e` and `C.f IN (…)` are answered the same way; what the kind adds
//! is the walk down a hierarchy ([`IndexReader::descendants`](crate::IndexReader::descendants),
//! the `descendant_of` predicate) and the referrer lookups of `ON DELETE`
//! ([`IndexReader::referrers`](crate::IndexReader::referrers)), in time proportional to the
//! referrers rather than to the component's rows.

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::keys::Postings;
use super::{Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex, cost};
use crate::entity::Entity;
use crate::value::Value;

/// Target handle → referrers, for one `entity` field.
///
/// A hash map rather than the bitmap index's ordered map: targets are only ever looked up one
/// at a time (`=`, `IN`, a walk down), never by range, and a walk looks one up per node.
#[derive(Default)]
pub(crate) struct RelationIndex {
    by_target: HashMap<Entity, Postings, foldhash::fast::FixedState>,
    /// One bit per target index: set once some entity refers to a target with that index.
    /// A walk down asks about every node, most of them leaves; the bit answers those without
    /// a probe of the map (which does not stay in cache on a large world).
    has_referrers: Vec<u64>,
    /// Each indexed entity's current target, by entity index (`Some(NULL)` for a null
    /// handle, `None` when not indexed).
    target_of: Vec<Option<Entity>>,
    entries: u64,
}

impl RelationIndex {
    fn referrer_count(&self, v: &Value) -> Option<u64> {
        match v {
            Value::Entity(t) => Some(self.by_target.get(t).map_or(0, Postings::len)),
            Value::Null => Some(0),
            _ => None,
        }
    }

    fn referrer_set(&self, v: &Value, out: &mut RoaringBitmap) -> Option<()> {
        match v {
            Value::Entity(t) => {
                if let Some(p) = self.by_target.get(t) {
                    p.union_into(out);
                }
                Some(())
            }
            Value::Null => Some(()),
            _ => None,
        }
    }

    fn may_have_referrers(&self, target: Entity) -> bool {
        let i = target.index() as usize;
        target.is_null() || self.has_referrers.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Sets `target`'s bit. Bits are never cleared (until [`SecondaryIndex::clear`]): a
    /// stale bit only costs the map probe it would have saved, and several generations of one
    /// index may be targets at once (stale handles).
    fn mark(&mut self, target: Entity) {
        let i = target.index() as usize;
        if self.has_referrers.len() <= i / 64 {
            self.has_referrers.resize(i / 64 + 1, 0);
        }
        self.has_referrers[i / 64] |= 1 << (i % 64);
    }

    fn unlink(&mut self, entity: u32) {
        let Some(slot) = self.target_of.get_mut(entity as usize) else { return };
        let Some(old) = slot.take() else { return };
        self.entries -= 1;
        if let Some(p) = self.by_target.get_mut(&old)
            && p.remove(entity)
        {
            self.by_target.remove(&old);
        }
    }
}

/// The estimate of an answer of `rows` entities known exactly (one key's list).
fn exact_estimate(rows: u64) -> Estimate {
    Estimate { rows, exact: true, cost: cost::DESCEND + rows as f64 * cost::BITMAP_BIT }
}

impl SecondaryIndex for RelationIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::Relation
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        match pred {
            IndexPredicate::Eq(v) => self.referrer_count(v).map(exact_estimate),
            IndexPredicate::In(vs) => {
                let rows = vs.iter().map(|v| self.referrer_count(v)).sum::<Option<u64>>()?;
                // A list may name one target twice: the sum is exact only for one value.
                Some(Estimate { exact: vs.len() <= 1, ..exact_estimate(rows.min(self.entries)) })
            }
            IndexPredicate::DescendantOf { ancestor: ancestor @ Value::Entity(_), max_depth } => {
                // The subtree's size is unknown until walked: guess from the ancestor's children,
                // a few levels of the same fan-out, each level a lookup per node.
                let children = self.referrer_count(ancestor)?.max(1);
                let levels = max_depth.unwrap_or(3).min(3) as u32;
                let rows = (1..=levels).map(|l| children.saturating_pow(l)).fold(0u64, u64::saturating_add);
                Some(Estimate { rows, exact: false, cost: rows as f64 * cost::DESCEND })
            }
            _ => None,
        }
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        let mut out = RoaringBitmap::new();
        match pred {
            IndexPredicate::Eq(v) => self.referrer_set(v, &mut out)?,
            IndexPredicate::In(vs) => vs.iter().try_for_each(|v| self.referrer_set(v, &mut out))?,
            _ => return None,
        }
        Some(IndexAnswer::Set(out))
    }

    fn answer_each(&self, pred: &IndexPredicate, visit: &mut dyn FnMut(&[u32])) -> Option<()> {
        match pred {
            IndexPredicate::Eq(Value::Entity(t)) => {
                if let Some(p) = self.by_target.get(t) {
                    p.for_each_batch(visit);
                }
                Some(())
            }
            _ => {
                super::visit_answer(self.answer(pred)?, visit);
                Some(())
            }
        }
    }

    fn answer_each_if(
        &self,
        pred: &IndexPredicate,
        accept: &mut dyn FnMut(&Estimate) -> bool,
        visit: &mut dyn FnMut(&[u32]),
    ) -> Option<bool> {
        let IndexPredicate::Eq(Value::Entity(t)) = pred else {
            return super::estimate_then_answer(self, pred, accept, visit);
        };
        // One probe for both the count and the list.
        let postings = self.by_target.get(t);
        if !accept(&exact_estimate(postings.map_or(0, Postings::len))) {
            return Some(false);
        }
        if let Some(p) = postings {
            p.for_each_batch(visit);
        }
        Some(true)
    }

    fn referrers(&self, target: Entity, visit: &mut dyn FnMut(u32)) -> bool {
        if !self.may_have_referrers(target) {
            return true;
        }
        if let Some(p) = self.by_target.get(&target) {
            p.for_each(visit);
        }
        true
    }

    fn explain(&self, pred: &IndexPredicate) -> Option<String> {
        let referrers = |v: &Value| self.referrer_count(v).unwrap_or(0);
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
        // A value of another type cannot come from an entity field; index it under no target
        // rather than lose the entity.
        let target = match values.first() {
            Some(Value::Entity(t)) => *t,
            _ => Entity::NULL,
        };
        let i = entity as usize;
        if self.target_of.len() <= i {
            self.target_of.resize(i + 1, None);
        }
        if self.target_of[i] == Some(target) {
            return;
        }
        self.unlink(entity);
        self.target_of[i] = Some(target);
        self.entries += 1;
        match self.by_target.get_mut(&target) {
            Some(p) => p.insert(entity),
            None => {
                self.by_target.insert(target, Postings::One(entity));
                if !target.is_null() {
                    self.mark(target);
                }
            }
        }
    }

    fn remove(&mut self, entity: u32) {
        self.unlink(entity)
    }

    fn clear(&mut self) {
        *self = RelationIndex::default();
    }

    fn entries(&self) -> u64 {
        self.entries
    }

    fn stats(&self) -> IndexStats {
        let per_target = std::mem::size_of::<(Entity, Postings)>() + 1;
        let postings: usize = self.by_target.values().map(Postings::heap_bytes).sum();
        let memory = self.by_target.capacity() * per_target
            + postings
            + self.target_of.capacity() * std::mem::size_of::<Option<Entity>>()
            + self.has_referrers.capacity() * 8;
        IndexStats { entries: self.entries, memory_bytes: memory as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(index: u32) -> Value {
        Value::Entity(Entity::from_parts(index, 0))
    }

    #[test]
    fn referrers_follow_updates_and_removals() {
        let mut r = RelationIndex::default();
        for child in 10..20u32 {
            r.update(child, &[e(child % 2)]);
        }
        r.update(20, &[Value::Entity(Entity::NULL)]);
        let set = |r: &RelationIndex, p: &IndexPredicate| r.answer(p).unwrap().into_vec(None);
        assert_eq!(set(&r, &IndexPredicate::Eq(e(0))), [10, 12, 14, 16, 18]);
        assert_eq!(r.estimate(&IndexPredicate::Eq(e(1))).unwrap().rows, 5);
        // Moving a child takes it out of its old target's set.
        r.update(10, &[e(1)]);
        r.remove(11);
        r.remove(99);
        assert_eq!(set(&r, &IndexPredicate::Eq(e(0))), [12, 14, 16, 18]);
        assert_eq!(set(&r, &IndexPredicate::In(vec![e(1), e(7), Value::Null])), [10, 13, 15, 17, 19]);
        assert_eq!(set(&r, &IndexPredicate::Eq(Value::Entity(Entity::NULL))), [20]);
        assert_eq!(r.entries(), 10);
        assert!(r.estimate(&IndexPredicate::Eq(Value::Int(3))).is_none());
        let mut seen = Vec::new();
        assert!(r.referrers(Entity::from_parts(1, 0), &mut |i| seen.push(i)));
        assert_eq!(seen, [10, 13, 15, 17, 19]);
        r.clear();
        assert_eq!(r.entries(), 0);
        assert_eq!(set(&r, &IndexPredicate::Eq(e(1))), Vec::<u32>::new());
    }

    /// The estimate and the list from one probe: the same rows as `estimate`, the same
    /// entities as `answer`, and nothing visited when the estimate is declined.
    #[test]
    fn answer_each_if_checks_the_estimate_it_visits() {
        let mut r = RelationIndex::default();
        for child in 10..20u32 {
            r.update(child, &[e(child % 3)]);
        }
        for pred in [
            IndexPredicate::Eq(e(0)),
            IndexPredicate::Eq(e(2)),
            IndexPredicate::Eq(e(5)),
            IndexPredicate::In(vec![e(1), e(2)]),
        ] {
            let mut seen_rows = None;
            let mut visited = Vec::new();
            let mut accept = |est: &Estimate| {
                seen_rows = Some(est.rows);
                true
            };
            assert_eq!(r.answer_each_if(&pred, &mut accept, &mut |ids| visited.extend_from_slice(ids)), Some(true));
            visited.sort_unstable();
            assert_eq!(seen_rows, Some(r.estimate(&pred).unwrap().rows), "{pred:?}");
            assert_eq!(visited, r.answer(&pred).unwrap().into_vec(None), "{pred:?}");
            let mut none = Vec::new();
            assert_eq!(r.answer_each_if(&pred, &mut |_| false, &mut |ids| none.extend_from_slice(ids)), Some(false));
            assert!(none.is_empty());
        }
        assert_eq!(r.answer_each_if(&IndexPredicate::Eq(Value::Int(1)), &mut |_| true, &mut |_| {}), None);
    }
}
