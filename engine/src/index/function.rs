//! `function` indexes: a Rust predicate over one component, registered by name, kept as the
//! bitmap of entities for which it is true. The registry re-evaluates the predicate only for
//! rows whose change ticks are newer than the index's last refresh (and for new rows) and
//! hands the result here as one [`Value::Bool`].

use roaring::RoaringBitmap;

use super::{Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex, cost};
use crate::value::Value;

/// The entities for which a named predicate holds.
pub(crate) struct FunctionIndex {
    name: String,
    truth: RoaringBitmap,
    present: RoaringBitmap,
}

impl FunctionIndex {
    pub(crate) fn new(name: &str) -> FunctionIndex {
        FunctionIndex { name: name.to_string(), truth: RoaringBitmap::new(), present: RoaringBitmap::new() }
    }

    fn set_for(&self, pred: &IndexPredicate) -> Option<&RoaringBitmap> {
        match pred {
            IndexPredicate::Function { name } if *name == self.name => Some(&self.truth),
            IndexPredicate::Present => Some(&self.present),
            _ => None,
        }
    }
}

impl SecondaryIndex for FunctionIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::Function
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let rows = self.set_for(pred)?.len();
        Some(Estimate { rows, exact: true, cost: cost::DESCEND + rows as f64 * cost::BITMAP_BIT })
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        self.set_for(pred).map(|s| IndexAnswer::Set(s.clone()))
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        self.present.insert(entity);
        if matches!(values.first(), Some(Value::Bool(true))) {
            self.truth.insert(entity);
        } else {
            self.truth.remove(entity);
        }
    }

    fn remove(&mut self, entity: u32) {
        self.present.remove(entity);
        self.truth.remove(entity);
    }

    fn clear(&mut self) {
        self.truth.clear();
        self.present.clear();
    }

    fn entries(&self) -> u64 {
        self.present.len()
    }

    fn stats(&self) -> IndexStats {
        IndexStats {
            entries: self.present.len(),
            memory_bytes: (self.truth.serialized_size() + self.present.serialized_size()) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_truth() {
        let mut f = FunctionIndex::new("visible");
        f.update(1, &[Value::Bool(true)]);
        f.update(2, &[Value::Bool(false)]);
        f.update(3, &[Value::Bool(true)]);
        f.update(3, &[Value::Bool(false)]);
        f.remove(1);
        let p = IndexPredicate::Function { name: "visible".into() };
        assert_eq!(f.answer(&p).unwrap().into_vec(None), Vec::<u32>::new());
        f.update(2, &[Value::Bool(true)]);
        assert_eq!(f.answer(&p).unwrap().into_vec(None), [2]);
        assert_eq!(f.estimate(&p).unwrap().rows, 1);
        assert!(f.estimate(&IndexPredicate::Function { name: "other".into() }).is_none());
        assert_eq!(f.stats().entries, 2);
    }
}
