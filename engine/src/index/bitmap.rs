//! `bitmap` indexes: one roaring bitmap of entity indices per distinct value of a
//! low-cardinality field, answering `=`, `IN` and `!=` by bitmap operations; and presence
//! bitmaps for components without a field (tags).

use roaring::RoaringBitmap;

use super::keys::{KeyClass, KeyedSets, Mismatch, Stored, eq_range};
use super::{Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex, cost};
use crate::value::Value;

fn bitmap_estimate(rows: u64) -> Estimate {
    Estimate { rows, exact: true, cost: cost::DESCEND + rows as f64 * cost::BITMAP_BIT }
}

/// Presence of a component (typically a tag): the set of entities that have it.
#[derive(Default)]
pub(crate) struct PresenceIndex {
    present: RoaringBitmap,
}

impl SecondaryIndex for PresenceIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::Bitmap
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        matches!(pred, IndexPredicate::Present).then(|| bitmap_estimate(self.present.len()))
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        matches!(pred, IndexPredicate::Present).then(|| IndexAnswer::Set(self.present.clone()))
    }

    fn update(&mut self, entity: u32, _values: &[Value]) {
        self.present.insert(entity);
    }

    fn remove(&mut self, entity: u32) {
        self.present.remove(entity);
    }

    fn clear(&mut self) {
        self.present.clear();
    }

    fn entries(&self) -> u64 {
        self.present.len()
    }

    fn stats(&self) -> IndexStats {
        IndexStats { entries: self.present.len(), memory_bytes: self.present.serialized_size() as u64 }
    }
}

/// Value → entities for one field.
pub(crate) struct BitmapIndex<K: KeyClass> {
    sets: KeyedSets<K>,
}

impl<K: KeyClass> Default for BitmapIndex<K> {
    fn default() -> Self {
        BitmapIndex { sets: KeyedSets::default() }
    }
}

/// Null and NaN compare with nothing: `x != null` and `x != NaN` hold for no row.
fn incomparable(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Float(x) => x.is_nan(),
        _ => false,
    }
}

/// The shared `=`, `IN`, `!=` logic of the keyed indexes.
pub(crate) fn keyed_eq_set<K: KeyClass>(
    sets: &KeyedSets<K>,
    pred: &IndexPredicate,
) -> Option<Result<RoaringBitmap, Mismatch>> {
    Some(match pred {
        IndexPredicate::Eq(v) => eq_range::<K>(v).map(|r| sets.range_set(&r)),
        IndexPredicate::In(vs) => (|| {
            let mut out = RoaringBitmap::new();
            for v in vs {
                out |= sets.range_set(&eq_range::<K>(v)?);
            }
            Ok(out)
        })(),
        IndexPredicate::NotEq(v) => eq_range::<K>(v).map(|r| {
            if incomparable(v) {
                return RoaringBitmap::new();
            }
            let mut out = &sets.present - &sets.nulls;
            out -= &sets.nans;
            out -= &sets.range_set(&r);
            out
        }),
        IndexPredicate::Present => Ok(sets.present.clone()),
        _ => return None,
    })
}

/// Rows of the keyed `=`, `IN`, `!=` predicates (counting at most `max_keys` keys per value).
pub(crate) fn keyed_eq_rows<K: KeyClass>(
    sets: &KeyedSets<K>,
    pred: &IndexPredicate,
    max_keys: usize,
) -> Option<Result<(u64, bool), Mismatch>> {
    let count = |v: &Value| -> Result<(u64, bool), Mismatch> {
        let r = eq_range::<K>(v)?;
        Ok(match sets.count_range(&r, max_keys) {
            Some(n) => (n, true),
            None => (sets.present.len() / 2, false),
        })
    };
    Some(match pred {
        IndexPredicate::Eq(v) => count(v),
        IndexPredicate::In(vs) => (|| {
            let (mut n, mut exact) = (0u64, true);
            for v in vs {
                let (m, e) = count(v)?;
                n += m;
                exact &= e;
            }
            // Values may name one key twice (`1` and `1.0`): a sum of counts is exact only
            // for a single value.
            Ok((n.min(sets.present.len()), exact && vs.len() <= 1))
        })(),
        IndexPredicate::NotEq(v) => count(v).map(|(m, e)| {
            if incomparable(v) {
                return (0, true);
            }
            (sets.present.len().saturating_sub(sets.nulls.len() + sets.nans.len()).saturating_sub(m), e)
        }),
        IndexPredicate::Present => Ok((sets.present.len(), true)),
        _ => return None,
    })
}

impl<K: KeyClass> SecondaryIndex for BitmapIndex<K> {
    fn kind(&self) -> IndexKind {
        IndexKind::Bitmap
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let (rows, exact) = keyed_eq_rows(&self.sets, pred, 64)?.ok()?;
        Some(Estimate { exact, ..bitmap_estimate(rows) })
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        keyed_eq_set(&self.sets, pred)?.ok().map(IndexAnswer::Set)
    }

    fn answer_each(&self, pred: &IndexPredicate, visit: &mut dyn FnMut(&[u32])) -> Option<()> {
        match pred {
            // One value's keys (an entity is under one key): visited in place.
            IndexPredicate::Eq(v) => self.sets.range_each(&eq_range::<K>(v).ok()?, visit),
            _ => super::visit_answer(self.answer(pred)?, visit),
        }
        Some(())
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        match values.first().and_then(K::stored) {
            Some(v) => {
                self.sets.set(entity, v);
            }
            // A value of another type cannot come from the field; index it as null rather
            // than lose the entity.
            None => {
                self.sets.set(entity, Stored::Null);
            }
        }
    }

    fn remove(&mut self, entity: u32) {
        self.sets.remove(entity);
    }

    fn clear(&mut self) {
        self.sets.clear();
    }

    fn entries(&self) -> u64 {
        self.sets.present.len()
    }

    fn stats(&self) -> IndexStats {
        IndexStats { entries: self.sets.present.len(), memory_bytes: self.sets.memory_bytes() as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::keys::OrdF64;

    #[test]
    fn eq_in_not_eq() {
        let mut b = BitmapIndex::<i64>::default();
        for e in 0..100u32 {
            b.update(e, &[Value::Int((e % 4) as i64)]);
        }
        b.remove(0);
        let set = |p: &IndexPredicate| b.answer(p).unwrap().into_set(None);
        assert_eq!(set(&IndexPredicate::Eq(Value::Int(0))).len(), 24);
        assert_eq!(set(&IndexPredicate::Eq(Value::Float(1.0))).len(), 25);
        assert_eq!(set(&IndexPredicate::Eq(Value::Float(1.5))).len(), 0);
        assert_eq!(set(&IndexPredicate::In(vec![Value::Int(1), Value::Null, Value::Int(3)])).len(), 50);
        assert_eq!(set(&IndexPredicate::NotEq(Value::Int(1))).len(), 74);
        assert_eq!(set(&IndexPredicate::NotEq(Value::Null)).len(), 0);
        assert!(b.estimate(&IndexPredicate::Eq(Value::Str("x".into()))).is_none());
        assert!(b.estimate(&IndexPredicate::between(1, 2)).is_none());
        assert_eq!(b.estimate(&IndexPredicate::Eq(Value::Int(2))).unwrap().rows, 25);
        assert_eq!(b.stats().entries, 99);
    }

    #[test]
    fn floats_with_nan_and_signed_zero() {
        let mut b = BitmapIndex::<OrdF64>::default();
        b.update(1, &[Value::Float(0.0)]);
        b.update(2, &[Value::Float(-0.0)]);
        b.update(3, &[Value::Float(f64::NAN)]);
        b.update(4, &[Value::Float(2.0)]);
        let set = |p: &IndexPredicate| b.answer(p).unwrap().into_vec(None);
        assert_eq!(set(&IndexPredicate::Eq(Value::Int(0))), [1, 2]);
        assert_eq!(set(&IndexPredicate::NotEq(Value::Float(0.0))), [4]);
        assert_eq!(set(&IndexPredicate::NotEq(Value::Float(f64::NAN))), Vec::<u32>::new());
        assert_eq!(set(&IndexPredicate::Eq(Value::Float(f64::NAN))), Vec::<u32>::new());
        assert_eq!(set(&IndexPredicate::Present), [1, 2, 3, 4]);
    }
}
