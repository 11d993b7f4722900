//! `skip` indexes: for each block of [`BLOCK`] consecutive entity ids, a small summary of one
//! field (the smallest and largest value, and a Bloom filter of the values), so that `=`,
//! `!=`, `IN` and ranges visit only the blocks that may hold matches. The answer is every
//! entity of those blocks that has the component, a superset the executor narrows by
//! testing the predicate on each row, so a summary may be loose but never wrong.
//!
//! Blocks are ranges of entity ids rather than of table rows: ids are issued in spawn order,
//! so a block holds what was spawned together (data that arrives clustered stays clustered),
//! and an entity keeps its block for life while its row moves between tables whenever a
//! component is added or removed. The summary therefore needs no upkeep on table moves.
//!
//! **Upkeep.** Writes only widen a summary: a new value widens the bounds and enters the
//! filter; a removed or overwritten value stays in both, which costs precision, not
//! correctness. A block whose filter took more new values than it was sized for is *stale*;
//! once an eighth of the blocks are, the index asks the registry for a rebuild, which sizes
//! every filter again from the current values.
//!
//! **Memory.** A block costs its bounds, a filter of about 10 bits per distinct value it held
//! when built (1% false positives, sized with a quarter of headroom), and a row count; plus
//! one presence bit per id. Unique values come to about 1.4 bytes per row; repeated
//! values far less.

use std::hash::{BuildHasher, Hash};
use std::ops::Bound;

use fastbloom::BloomFilter;
use roaring::RoaringBitmap;

use super::keys::{KeyClass, KeyRange, Mismatch, Stored, eq_range, key_range};
use super::{Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex, cost};
use crate::value::Value;

/// Entity ids per block (fewer under Miri, so that the few rows its tests can take fill
/// several blocks).
pub(crate) const BLOCK: u32 = if cfg!(miri) { 128 } else { 1024 };

/// False-positive rate the filters are sized for.
const FALSE_POSITIVES: f64 = 0.01;

/// Smallest filter, in values: a block of one repeated value still gets a useful filter.
const MIN_CAPACITY: u32 = 8;

/// A rebuild is wanted once more than one block in this many is stale.
const STALE_SHARE: usize = 8;

/// One block's summary.
struct Block<K> {
    /// The smallest and largest key written since the block was built (null and NaN are not
    /// keys: they match no comparison).
    bounds: Option<(K, K)>,
    /// The keys written since the block was built; `None` until the first flush that gives
    /// the block a key.
    filter: Option<BloomFilter>,
    /// Distinct keys the filter was sized for.
    capacity: u32,
    /// New keys inserted after sizing.
    inserted: u32,
    /// Entities of the block that have the component.
    rows: u32,
    /// Hashes of the last keys the filter took, once the block has a key (each slot the
    /// first key's until others come): clustered data writes the same few keys to a block
    /// over and over, and a repeat skips the filter's probes.
    recent: [u64; RECENT],
}

/// Key hashes a block remembers.
const RECENT: usize = 4;

impl<K> Default for Block<K> {
    fn default() -> Self {
        Block { bounds: None, filter: None, capacity: 0, inserted: 0, rows: 0, recent: [0; RECENT] }
    }
}

impl<K: KeyClass + Hash> Block<K> {
    fn widen(&mut self, k: &K) {
        match &mut self.bounds {
            None => self.bounds = Some((k.clone(), k.clone())),
            Some((lo, hi)) => {
                if k < lo {
                    *lo = k.clone();
                } else if k > hi {
                    *hi = k.clone();
                }
            }
        }
    }

    /// Whether some key of the block may lie in `range`.
    fn may_hold_range(&self, range: &(Bound<K>, Bound<K>)) -> bool {
        let Some((lo, hi)) = &self.bounds else { return false };
        let above_low = match &range.0 {
            Bound::Unbounded => true,
            Bound::Included(l) => hi >= l,
            Bound::Excluded(l) => hi > l,
        };
        let below_high = match &range.1 {
            Bound::Unbounded => true,
            Bound::Included(h) => lo <= h,
            Bound::Excluded(h) => lo < h,
        };
        above_low && below_high
    }

    /// Whether the block may hold a key equal to the predicate value whose keys are `range`:
    /// the bounds, then the filter when the range is a single key.
    fn may_hold_eq(&self, range: &(Bound<K>, Bound<K>), hasher: &impl BuildHasher) -> bool {
        if !self.may_hold_range(range) {
            return false;
        }
        match (range, &self.filter) {
            ((Bound::Included(a), Bound::Included(b)), Some(f)) if a == b => f.contains_hash(hasher.hash_one(a)),
            _ => true,
        }
    }

    /// Whether some row of the block may differ from `k` (rows with null or NaN match no
    /// `!=`): every key written equal to `k` rules the block out.
    fn may_differ(&self, range: &(Bound<K>, Bound<K>)) -> bool {
        match (&self.bounds, range) {
            (None, _) => false,
            (Some((lo, hi)), (Bound::Included(a), Bound::Included(b))) if a == b => !(lo == a && hi == a),
            _ => true,
        }
    }
}

/// One field's block summaries (see the module docs).
pub(crate) struct SkipIndex<K: KeyClass> {
    /// Which entity ids have the component: a plain bitset (an eighth of a byte per id,
    /// tested and set in a few instructions on every write).
    present: Vec<u64>,
    /// Bits set in `present`.
    present_count: u64,
    blocks: Vec<Block<K>>,
    /// `(block, key hash)` of keys written since the last flush.
    pending: Vec<(u32, u64)>,
    /// Blocks whose filters took more new keys than they were sized for.
    stale: usize,
    /// Hashes keys for the filters (fixed seeds: the same keys give the same filters).
    hasher: foldhash::fast::FixedState,
}

impl<K: KeyClass> Default for SkipIndex<K> {
    fn default() -> Self {
        SkipIndex {
            present: Vec::new(),
            present_count: 0,
            blocks: Vec::new(),
            pending: Vec::new(),
            stale: 0,
            hasher: foldhash::fast::FixedState::with_seed(0x5eed_b10c),
        }
    }
}

/// How one predicate tests a block, resolved once per question.
enum BlockTest<K> {
    Eq(Vec<(Bound<K>, Bound<K>)>),
    NotEq((Bound<K>, Bound<K>)),
    Range((Bound<K>, Bound<K>)),
    /// No block can match (an empty range, `!= null`).
    None,
}

impl<K: KeyClass + Hash> SkipIndex<K> {
    fn test(pred: &IndexPredicate) -> Option<Result<BlockTest<K>, Mismatch>> {
        let some = |r: KeyRange<K>| r.map_or(BlockTest::None, BlockTest::Range);
        Some(match pred {
            IndexPredicate::Eq(v) => eq_range::<K>(v).map(|r| r.map_or(BlockTest::None, |r| BlockTest::Eq(vec![r]))),
            IndexPredicate::In(vs) => {
                let mut ranges = Vec::with_capacity(vs.len());
                for v in vs.iter().filter(|v| !matches!(v, Value::Null)) {
                    match eq_range::<K>(v) {
                        Ok(Some(r)) => ranges.push(r),
                        Ok(None) => {}
                        Err(m) => return Some(Err(m)),
                    }
                }
                Ok(BlockTest::Eq(ranges))
            }
            IndexPredicate::NotEq(v) => match v {
                Value::Null => Ok(BlockTest::None),
                Value::Float(x) if x.is_nan() => Ok(BlockTest::None),
                // A value no key equals (2.5 on an int field): every keyed row differs.
                _ => eq_range::<K>(v).map(|r| match r {
                    Some(r) => BlockTest::NotEq(r),
                    None => BlockTest::Range((Bound::Unbounded, Bound::Unbounded)),
                }),
            },
            IndexPredicate::Range { low, high } => {
                if matches!((low, high), (Bound::Unbounded, Bound::Unbounded)) {
                    // Every row, nulls included: nothing to skip.
                    return None;
                }
                key_range::<K>(low, high).map(some)
            }
            _ => return None,
        })
    }

    fn keeps(&self, b: &Block<K>, test: &BlockTest<K>) -> bool {
        b.rows > 0
            && match test {
                BlockTest::Eq(ranges) => ranges.iter().any(|r| b.may_hold_eq(r, &self.hasher)),
                BlockTest::NotEq(r) => b.may_differ(r),
                BlockTest::Range(r) => b.may_hold_range(r),
                BlockTest::None => false,
            }
    }

    /// The blocks `pred` keeps, or `None` when the index does not answer it.
    fn kept(&self, pred: &IndexPredicate) -> Option<Vec<u32>> {
        let test = Self::test(pred)?.ok()?;
        Some((0..self.blocks.len() as u32).filter(|&b| self.keeps(&self.blocks[b as usize], &test)).collect())
    }

    /// Marks `entity` absent; whether it was present.
    fn clear_present(&mut self, entity: u32) -> bool {
        let (word, bit) = ((entity / 64) as usize, 1u64 << (entity % 64));
        let was = self.present.get(word).is_some_and(|w| w & bit != 0);
        if was {
            self.present[word] &= !bit;
            self.present_count -= 1;
        }
        was
    }

    /// Room in the presence bits and the blocks for ids up to `entity`.
    #[inline]
    fn make_room(&mut self, entity: u32) {
        let (word, block) = ((entity / 64) as usize, (entity / BLOCK) as usize);
        if self.present.len() <= word {
            self.present.resize(word + 1, 0);
        }
        if self.blocks.len() <= block {
            self.blocks.resize_with(block + 1, Block::default);
        }
    }

    /// [`SecondaryIndex::update`] of one entity with the field's value (`None`: no value),
    /// after [`make_room`](Self::make_room) for it. Inlined into the loop of a batch.
    #[inline(always)]
    fn update_one(&mut self, entity: u32, value: Option<&Value>) {
        let (word, bit) = ((entity / 64) as usize, 1u64 << (entity % 64));
        let new = self.present[word] & bit == 0;
        self.present[word] |= bit;
        self.present_count += u64::from(new);
        let key = match value.and_then(K::stored) {
            Some(Stored::Key(k)) => Some((self.hasher.hash_one(&k), k)),
            _ => None,
        };
        let block = &mut self.blocks[(entity / BLOCK) as usize];
        block.rows += u32::from(new);
        let Some((hash, k)) = key else { return };
        let first = block.bounds.is_none();
        block.widen(&k);
        if first {
            block.recent = [hash; RECENT];
        } else if block.recent.iter().fold(false, |seen, &r| seen | (r == hash)) {
            return;
        } else {
            // The oldest goes.
            let [a, b, c, _] = block.recent;
            block.recent = [hash, a, b, c];
        }
        match &mut block.filter {
            // A block with a filter takes the key now; one without waits for the flush,
            // which sizes its first filter from all the keys it got.
            Some(f) => {
                if !f.contains_hash(hash) {
                    f.insert_hash(hash);
                    block.inserted += 1;
                    if block.inserted == block.capacity + 1 {
                        self.stale += 1;
                    }
                }
            }
            None => self.pending.push((entity / BLOCK, hash)),
        }
    }

    /// Blocks that have rows.
    fn occupied(&self) -> usize {
        self.blocks.iter().filter(|b| b.rows > 0).count()
    }
}

impl<K: KeyClass + Hash> SecondaryIndex for SkipIndex<K> {
    fn kind(&self) -> IndexKind {
        IndexKind::Skip
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let kept = self.kept(pred)?;
        let rows: u64 = kept.iter().map(|&b| self.blocks[b as usize].rows as u64).sum();
        Some(Estimate {
            rows,
            exact: false,
            cost: self.blocks.len() as f64 * cost::BLOCK_TEST + rows as f64 * cost::BITMAP_BIT,
        })
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        let kept = self.kept(pred)?;
        // The present ids of each run of consecutive kept blocks, as one bitmap.
        const WORDS: usize = (BLOCK / 64) as usize;
        let mut out = RoaringBitmap::new();
        let mut bytes = Vec::new();
        for run in kept.chunk_by(|a, b| *b == a + 1) {
            let lo = run[0] as usize * WORDS;
            let hi = ((run[run.len() - 1] as usize + 1) * WORDS).min(self.present.len());
            if lo >= hi {
                continue;
            }
            bytes.clear();
            bytes.extend(self.present[lo..hi].iter().flat_map(|w| w.to_le_bytes()));
            out |= RoaringBitmap::from_lsb0_bytes(run[0] * BLOCK, &bytes);
        }
        Some(IndexAnswer::Set(out))
    }

    fn explain(&self, pred: &IndexPredicate) -> Option<String> {
        let kept = self.kept(pred)?;
        Some(format!("{} of {} blocks kept", kept.len(), self.occupied()))
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        self.make_room(entity);
        self.update_one(entity, values.first());
    }

    fn update_each(&mut self, entities: &[u32], values: &[Value]) {
        if let Some(&last) = entities.iter().max() {
            self.make_room(last);
        }
        for (&entity, value) in entities.iter().zip(values) {
            self.update_one(entity, Some(value));
        }
    }

    fn remove(&mut self, entity: u32) {
        if self.clear_present(entity) {
            let b = (entity / BLOCK) as usize;
            self.blocks[b].rows -= 1;
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        pending.dedup();
        for group in pending.chunk_by(|a, b| a.0 == b.0) {
            let block = &mut self.blocks[group[0].0 as usize];
            match &mut block.filter {
                None => {
                    let capacity = (group.len() as u32 + group.len() as u32 / 4).max(MIN_CAPACITY);
                    let mut f = BloomFilter::with_false_pos(FALSE_POSITIVES).expected_items(capacity as usize);
                    for &(_, h) in group {
                        f.insert_hash(h);
                    }
                    block.filter = Some(f);
                    block.capacity = capacity;
                    block.inserted = 0;
                }
                Some(f) => {
                    let was_stale = block.inserted > block.capacity;
                    for &(_, h) in group {
                        if !f.contains_hash(h) {
                            f.insert_hash(h);
                            block.inserted += 1;
                        }
                    }
                    if !was_stale && block.inserted > block.capacity {
                        self.stale += 1;
                    }
                }
            }
        }
        pending.clear();
        self.pending = pending;
    }

    fn wants_rebuild(&self) -> bool {
        self.stale > 0 && self.stale * STALE_SHARE > self.occupied()
    }

    fn clear(&mut self) {
        self.present.clear();
        self.present_count = 0;
        self.blocks.clear();
        self.pending.clear();
        self.stale = 0;
    }

    fn entries(&self) -> u64 {
        self.present_count
    }

    fn stats(&self) -> IndexStats {
        let filters: usize = self.blocks.iter().filter_map(|b| b.filter.as_ref()).map(|f| f.num_bits() / 8).sum();
        let bounds: usize = self
            .blocks
            .iter()
            .filter_map(|b| b.bounds.as_ref())
            .map(|(lo, hi)| 2 * std::mem::size_of::<K>() + lo.heap_bytes() + hi.heap_bytes())
            .sum();
        let blocks = self.blocks.len() * std::mem::size_of::<Block<K>>();
        IndexStats {
            entries: self.present_count,
            memory_bytes: (filters + bounds + blocks + self.present.capacity() * 8) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::keys::OrdF64;

    /// Rows `0..n` with `value(i)` in `i64` keys, flushed.
    fn ints(n: u32, value: impl Fn(u32) -> i64) -> SkipIndex<i64> {
        let mut s = SkipIndex::<i64>::default();
        for i in 0..n {
            s.update(i, &[Value::Int(value(i))]);
        }
        s.flush();
        s
    }

    fn answer(s: &SkipIndex<i64>, p: &IndexPredicate) -> RoaringBitmap {
        s.answer(p).unwrap().into_set(None)
    }

    #[test]
    fn clustered_values_keep_few_blocks_and_every_match() {
        // `values` values, each on two blocks of consecutive ids.
        let values = crate::test_size(100, 4);
        let n = values * 2 * BLOCK;
        let s = ints(n, |i| (i / (2 * BLOCK)) as i64);
        let p = IndexPredicate::Eq(Value::Int(2));
        let got = answer(&s, &p);
        assert_eq!(got.len(), 2 * BLOCK as u64, "exactly the two blocks of value 2");
        assert!((0..n).filter(|i| i / (2 * BLOCK) == 2).all(|i| got.contains(i)));
        assert_eq!(s.explain(&p).unwrap(), format!("2 of {} blocks kept", 2 * values));
        let range = IndexPredicate::between(1, 3);
        assert_eq!(answer(&s, &range).len(), 6 * BLOCK as u64);
        let inn = IndexPredicate::In(vec![Value::Int(0), Value::Null, Value::Float(3.0), Value::Float(3.5)]);
        assert_eq!(answer(&s, &inn).len(), 4 * BLOCK as u64);
        // Nothing equals 2.5 on an int field; everything differs from it.
        assert!(answer(&s, &IndexPredicate::Eq(Value::Float(2.5))).is_empty());
        assert_eq!(answer(&s, &IndexPredicate::NotEq(Value::Float(2.5))).len(), n as u64);
        // `!=` skips the blocks that hold only the value.
        assert_eq!(answer(&s, &IndexPredicate::NotEq(Value::Int(2))).len(), (n - 2 * BLOCK) as u64);
        assert!(answer(&s, &IndexPredicate::NotEq(Value::Null)).is_empty());
        // A value of another type is declined; so is the unbounded range (nulls match it).
        assert!(s.answer(&IndexPredicate::Eq(Value::Str("x".into()))).is_none());
        assert!(s.answer(&IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Unbounded }).is_none());
    }

    #[test]
    fn the_filter_skips_blocks_whose_bounds_hold_the_value() {
        // Every block holds even values from 0 to 2000 except one that also holds 1001.
        let mut s = SkipIndex::<i64>::default();
        for i in 0..crate::test_size(20, 6) * BLOCK {
            s.update(i, &[Value::Int(((i % BLOCK) * 2 * (1024 / BLOCK)) as i64 % 2002)]);
        }
        s.update(5 * BLOCK + 3, &[Value::Int(1001)]);
        s.flush();
        let got = answer(&s, &IndexPredicate::Eq(Value::Int(1001)));
        assert!(got.contains(5 * BLOCK + 3));
        // At 1% false positives, a few blocks at most besides the right one.
        assert!(got.len() <= 4 * BLOCK as u64, "{} rows kept", got.len());
    }

    #[test]
    fn writes_widen_removals_shrink_the_answer_and_stale_filters_ask_for_a_rebuild() {
        let blocks = crate::test_size(8, 4);
        let mut s = ints(blocks * BLOCK, |i| (i / BLOCK) as i64);
        // Overwrite a row of block 0 with 3: block 0 may now hold 3 (and still 0).
        s.update(10, &[Value::Int(3)]);
        s.flush();
        let threes = answer(&s, &IndexPredicate::Eq(Value::Int(3)));
        assert!(threes.contains(10) && threes.contains(3 * BLOCK));
        assert!(answer(&s, &IndexPredicate::Eq(Value::Int(0))).contains(10), "a superset: 0 stays");
        s.remove(10);
        assert!(!answer(&s, &IndexPredicate::Eq(Value::Int(3))).contains(10));
        assert_eq!(s.entries(), (blocks * BLOCK) as u64 - 1);
        assert!(!s.wants_rebuild());
        // Many new distinct values in a quarter of the blocks: stale.
        for i in 0..blocks / 4 * BLOCK {
            s.update(i, &[Value::Int(1_000_000 + i as i64)]);
        }
        s.flush();
        assert!(s.wants_rebuild());
        s.clear();
        assert!(!s.wants_rebuild() && s.entries() == 0);
    }

    #[test]
    fn floats_nulls_and_nan_match_no_comparison() {
        let mut s = SkipIndex::<OrdF64>::default();
        s.update(0, &[Value::Float(f64::NAN)]);
        s.update(1, &[Value::Null]);
        s.update(BLOCK, &[Value::Float(-0.0)]);
        s.flush();
        let eq = s.answer(&IndexPredicate::Eq(Value::Float(0.0))).unwrap().into_set(None);
        assert_eq!(eq.iter().collect::<Vec<_>>(), [BLOCK]);
        let ne = s.answer(&IndexPredicate::NotEq(Value::Int(3))).unwrap().into_set(None);
        assert_eq!(ne.iter().collect::<Vec<_>>(), [BLOCK], "block 0 has no key");
        assert_eq!(s.entries(), 3);
    }

    #[test]
    fn memory_stays_under_two_bytes_per_row() {
        let blocks = crate::test_size(256, 2);
        let unique = ints(blocks * BLOCK, |i| i as i64 * 7919 % 1_000_003);
        let per_row = unique.stats().memory_bytes as f64 / unique.entries() as f64;
        let repeated = ints(blocks * BLOCK, |i| (i % 16) as i64);
        // The bounds are the real block size's: Miri's smaller blocks weigh more per row, and
        // leave repeated values a smaller saving.
        if !cfg!(miri) {
            assert!(per_row <= 2.0, "{per_row} bytes per row with unique values");
        }
        assert!(repeated.stats().memory_bytes < unique.stats().memory_bytes / crate::test_size(4, 1));
    }
}
