//! `btree` indexes: a field's values in order, each with the entity holding it. Answers
//! equality, `IN`, `!=`, ranges, and ordered scans (`ORDER BY field [DESC] LIMIT k`) as a
//! lazy stream.
//!
//! The entries `(key, entity)` are kept sorted in blocks of at most `BLOCK` (a B+-tree whose
//! inner levels are a std `BTreeMap` keyed by each block's first entry): a range is one map
//! lookup and then contiguous memory, about 16 bytes per entity for float keys, where a map
//! from each distinct key to its entities costs a scattered node per dozen keys. Equal keys
//! sit side by side, ordered by entity index, so an ascending scan already breaks ties as
//! `ORDER BY` does; a descending scan reverses runs of equal keys.
//!
//! Floats are keyed by [`OrdF64`](super::keys::OrdF64) (a total order with `-0.0 = 0.0`);
//! NaN values are kept aside in a bitmap: they match no comparison, and an unbounded ordered
//! scan is declined while any is present (where NaN sorts is the planner's business).
//! Null entity values are kept aside too; an unbounded ordered scan yields them first
//! ascending and last descending, as `ORDER BY` does.

use std::collections::BTreeMap;
use std::collections::btree_map;
use std::iter::{Peekable, Rev};
use std::ops::Bound;

use roaring::RoaringBitmap;

use super::keys::{KeyClass, KeyRange, Mismatch, Slot, Stored, bitmap_from_ids, eq_range, key_range, valid_range};
use super::{Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, SecondaryIndex, cost};
use crate::value::Value;

/// Buckets of the equi-depth histogram used for range estimates.
const BUCKETS: u64 = 64;
/// Entries counted for an exact estimate before falling back to the histogram (fewer under
/// Miri, so that the few rows its tests can take reach the histogram).
const EXACT_ROWS: u64 = if cfg!(miri) { 128 } else { 4096 };
/// Entries per block at most (a full block splits in two; fewer under Miri, so that its
/// tests' few rows split blocks).
const BLOCK: usize = if cfg!(miri) { 16 } else { 256 };

/// Removals buffered before they are taken out of the blocks (see `BtreeIndex::removed`;
/// fewer under Miri, so that its tests reach the bound). Sorted batches of this size took
/// a third less time than one removal at a time (1,000 despawns a tick from 1M entries),
/// and a batch stays short; larger, proportional batches cost less in all but made ticks
/// of 10 ms or more.
const REMOVED_AT_MOST: usize = if cfg!(miri) { 8 } else { 4096 };

/// Removals from one block, at most, taken out one by one rather than in a pass over it.
const FEW_IN_A_BLOCK: usize = 8;

type Entry<K> = (K, u32);
/// Blocks in order, from some block on.
type BlockRange<'a, K> = btree_map::Range<'a, Entry<K>, Vec<Entry<K>>>;

/// Sorted `(key, entity)` entries in blocks.
struct Runs<K> {
    blocks: BTreeMap<Entry<K>, Vec<Entry<K>>>,
    len: usize,
}

impl<K: KeyClass> Default for Runs<K> {
    fn default() -> Self {
        Runs { blocks: BTreeMap::new(), len: 0 }
    }
}

impl<K: KeyClass> Runs<K> {
    /// Builds from entries sorted and unique.
    fn from_sorted(entries: Vec<Entry<K>>) -> Runs<K> {
        let len = entries.len();
        let mut blocks = BTreeMap::new();
        for chunk in entries.chunks(BLOCK * 3 / 4) {
            blocks.insert(chunk[0].clone(), chunk.to_vec());
        }
        Runs { blocks, len }
    }

    /// The key of the block an entry belongs in: the last block starting at or before it,
    /// or the first block.
    fn block_for(&self, item: &Entry<K>) -> Option<Entry<K>> {
        self.blocks.range(..=item).next_back().or_else(|| self.blocks.iter().next()).map(|(k, _)| k.clone())
    }

    fn rekey(&mut self, old: &Entry<K>) {
        if let Some(block) = self.blocks.remove(old)
            && let Some(first) = block.first().cloned()
        {
            self.blocks.insert(first, block);
        }
    }

    /// Inserts `items` (sorted, unique), each block they fall in in one pass: many inserts
    /// into one block merge into it once, not shifting its tail once each, and the map is
    /// touched once per block, not once per entry. Entries already present stay once.
    fn insert_sorted(&mut self, items: &[Entry<K>]) {
        if items.is_empty() {
            return;
        }
        if self.blocks.is_empty() {
            *self = Runs::from_sorted(items.to_vec());
            return;
        }
        let mut rest = items;
        while let Some(first) = rest.first() {
            let Some(key) = self.block_for(first) else { return };
            // This block's share: the items before the next block's first entry (the first
            // block also takes the items before it).
            let next = self.blocks.range((Bound::Excluded(&key), Bound::Unbounded)).next().map(|(k, _)| k.clone());
            let share = next.map_or(rest.len(), |n| rest.partition_point(|x| x < &n));
            let (mine, later) = rest.split_at(share.max(1));
            rest = later;
            let Some(mut block) = self.blocks.remove(&key) else { return };
            let before = block.len();
            if mine.len() <= FEW_IN_A_BLOCK {
                for item in mine {
                    let pos = block.partition_point(|x| x < item);
                    if block.get(pos) != Some(item) {
                        block.insert(pos, item.clone());
                    }
                }
            } else {
                let mut merged = Vec::with_capacity(block.len() + mine.len());
                let mut old = block.into_iter().peekable();
                for item in mine {
                    while let Some(x) = old.next_if(|x| x < item) {
                        merged.push(x);
                    }
                    if old.peek() != Some(item) {
                        merged.push(item.clone());
                    }
                }
                merged.extend(old);
                block = merged;
            }
            self.len += block.len() - before;
            // Filed again under its first entry, in pieces of at most `BLOCK`.
            if block.len() <= BLOCK {
                self.blocks.insert(block[0].clone(), block);
            } else {
                for piece in block.chunks(BLOCK * 3 / 4) {
                    self.blocks.insert(piece[0].clone(), piece.to_vec());
                }
            }
        }
    }

    /// Removes `items` (sorted, unique), each block they fall in in one pass: many removals
    /// from one block shift its entries once, not once each.
    fn remove_sorted(&mut self, items: &[Entry<K>]) {
        let mut rest = items;
        while let Some(first) = rest.first() {
            let Some((key, _)) = self.blocks.range(..=first).next_back() else {
                // Before every block: in none.
                rest = &rest[1..];
                continue;
            };
            let key = key.clone();
            // This block's share: the items before the next block's first entry.
            let next = self.blocks.range((Bound::Excluded(&key), Bound::Unbounded)).next().map(|(k, _)| k.clone());
            let share = next.map_or(rest.len(), |n| rest.partition_point(|x| x < &n));
            let (mine, later) = rest.split_at(share.max(1));
            rest = later;
            let Some(block) = self.blocks.get_mut(&key) else { continue };
            let before = block.len();
            if mine.len() <= FEW_IN_A_BLOCK {
                // A few: each found by binary search, the block's tail shifted once each.
                for item in mine {
                    if let Ok(pos) = block.binary_search(item) {
                        block.remove(pos);
                    }
                }
            } else {
                // Many: one pass over the block.
                let mut gone = mine.iter().peekable();
                block.retain(|x| {
                    while gone.next_if(|g| *g < x).is_some() {}
                    gone.next_if(|g| *g == x).is_none()
                });
            }
            self.len -= before - block.len();
            if block.is_empty() {
                self.blocks.remove(&key);
            } else if block[0] != key {
                self.rekey(&key);
            }
        }
    }

    /// Entries with a key in the range, ascending.
    fn asc<'a>(&'a self, lo: &Bound<K>, hi: &Bound<K>) -> Asc<'a, K> {
        let empty = Asc { blocks: None, cur: [].iter(), hi: Bound::Unbounded };
        if !valid_range(lo, hi) {
            return empty;
        }
        // Entries at or past `probe` satisfy the lower end (`exclusive`: strictly past it).
        let (probe, exclusive) = match lo {
            Bound::Unbounded => {
                return Asc { blocks: Some(self.blocks.range::<Entry<K>, _>(..)), cur: [].iter(), hi: hi.clone() };
            }
            Bound::Included(k) => ((k.clone(), 0), false),
            Bound::Excluded(k) => ((k.clone(), u32::MAX), true),
        };
        let Some(start) = self.block_for(&probe) else { return empty };
        let mut blocks = self.blocks.range(start..);
        let cur = match blocks.next() {
            Some((_, b)) => {
                let pos = b.partition_point(|x| if exclusive { x <= &probe } else { x < &probe });
                b[pos..].iter()
            }
            None => [].iter(),
        };
        Asc { blocks: Some(blocks), cur, hi: hi.clone() }
    }

    /// Entries with a key in the range, descending by (key, entity).
    fn desc<'a>(&'a self, lo: &Bound<K>, hi: &Bound<K>) -> Desc<'a, K> {
        let empty = Desc { blocks: None, cur: [].iter().rev(), lo: Bound::Unbounded };
        if !valid_range(lo, hi) {
            return empty;
        }
        // Entries at or before `probe` satisfy the upper end (`exclusive`: strictly before).
        let (probe, exclusive) = match hi {
            Bound::Unbounded => {
                return Desc {
                    blocks: Some(self.blocks.range::<Entry<K>, _>(..).rev()),
                    cur: [].iter().rev(),
                    lo: lo.clone(),
                };
            }
            Bound::Included(k) => ((k.clone(), u32::MAX), false),
            Bound::Excluded(k) => ((k.clone(), 0), true),
        };
        let start =
            if exclusive { self.blocks.range(..&probe).next_back() } else { self.blocks.range(..=&probe).next_back() };
        let Some((start, _)) = start else { return empty };
        let mut blocks = self.blocks.range(..=start.clone()).rev();
        let cur = match blocks.next() {
            Some((_, b)) => {
                let pos = b.partition_point(|x| if exclusive { x < &probe } else { x <= &probe });
                b[..pos].iter().rev()
            }
            None => [].iter().rev(),
        };
        Desc { blocks: Some(blocks), cur, lo: lo.clone() }
    }

    fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<Entry<K>>();
        let blocks: usize = self.blocks.values().map(|b| b.capacity() * entry + entry + 40).sum();
        // Heap data of keys (strings), sampled.
        let sample: Vec<usize> =
            self.blocks.values().flat_map(|b| b.iter()).take(1024).map(|x| x.0.heap_bytes()).collect();
        let heap = if sample.is_empty() { 0 } else { sample.iter().sum::<usize>() * self.len / sample.len() * 2 };
        blocks + heap
    }
}

/// Ascending scan (see [`Runs::asc`]).
struct Asc<'a, K> {
    blocks: Option<BlockRange<'a, K>>,
    cur: std::slice::Iter<'a, Entry<K>>,
    hi: Bound<K>,
}

impl<'a, K: Ord> Iterator for Asc<'a, K> {
    type Item = &'a Entry<K>;
    #[inline]
    fn next(&mut self) -> Option<&'a Entry<K>> {
        loop {
            if let Some(x) = self.cur.next() {
                let within = match &self.hi {
                    Bound::Unbounded => true,
                    Bound::Included(h) => x.0 <= *h,
                    Bound::Excluded(h) => x.0 < *h,
                };
                if within {
                    return Some(x);
                }
                self.blocks = None;
                self.cur = [].iter();
                return None;
            }
            let (_, b) = self.blocks.as_mut()?.next()?;
            self.cur = b.iter();
        }
    }
}

/// Descending scan (see [`Runs::desc`]).
struct Desc<'a, K> {
    blocks: Option<Rev<BlockRange<'a, K>>>,
    cur: Rev<std::slice::Iter<'a, Entry<K>>>,
    lo: Bound<K>,
}

impl<'a, K: Ord> Iterator for Desc<'a, K> {
    type Item = &'a Entry<K>;
    #[inline]
    fn next(&mut self) -> Option<&'a Entry<K>> {
        loop {
            if let Some(x) = self.cur.next() {
                let within = match &self.lo {
                    Bound::Unbounded => true,
                    Bound::Included(l) => x.0 >= *l,
                    Bound::Excluded(l) => x.0 > *l,
                };
                if within {
                    return Some(x);
                }
                self.blocks = None;
                self.cur = [].iter().rev();
                return None;
            }
            let (_, b) = self.blocks.as_mut()?.next()?;
            self.cur = b.iter().rev();
        }
    }
}

/// A descending scan with equal keys in ascending entity order (the `ORDER BY … DESC` tie
/// rule): each run of one key is collected and given back reversed.
struct TiesAscending<'a, K: Ord> {
    inner: Peekable<Desc<'a, K>>,
    run: Vec<u32>,
}

impl<K: Ord> Iterator for TiesAscending<'_, K> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if let Some(e) = self.run.pop() {
            return Some(e);
        }
        let first = self.inner.next()?;
        self.run.push(first.1);
        while let Some(x) = self.inner.next_if(|x| x.0 == first.0) {
            self.run.push(x.1);
        }
        // Collected in descending entity order: popping yields them ascending.
        self.run.pop()
    }
}

/// Whether entry `(k, e)` is entity `e`'s current key.
fn holds<K: PartialEq>(slots: &[Slot<K>], (k, e): &Entry<K>) -> bool {
    matches!(slots.get(*e as usize), Some(Slot::Key(s)) if s == k)
}

/// An ordered index over one field.
pub(crate) struct BtreeIndex<K: KeyClass> {
    runs: Runs<K>,
    /// Entries gathered for a bulk build (after `clear`), sorted at `flush`.
    bulk: Option<Vec<Entry<K>>>,
    /// Entries of entities that lost the component or their key, taken out of `runs` at the
    /// next `flush` (or once `REMOVED_AT_MOST` wait), in key order: a copy that mirrors
    /// despawns then leaves the work to its first reader, and a run of despawns walks the
    /// blocks once, in order.
    removed: Vec<Entry<K>>,
    /// Entries of new keys, put into `runs` at the next `flush` (after `removed`), in key
    /// order: a batch of writes (8% of a 1M-row index in a tick) merges into each block it
    /// touches once, instead of one removal and one insert per row.
    added: Vec<Entry<K>>,
    slots: Vec<Slot<K>>,
    present: RoaringBitmap,
    nulls: RoaringBitmap,
    nans: RoaringBitmap,
    /// Every `step`-th key in order (by entity count): the histogram.
    hist: Vec<K>,
    step: u64,
    /// Value changes since the histogram was built.
    changes: u64,
}

impl<K: KeyClass> Default for BtreeIndex<K> {
    fn default() -> Self {
        BtreeIndex {
            runs: Runs::default(),
            bulk: Some(Vec::new()),
            removed: Vec::new(),
            added: Vec::new(),
            slots: Vec::new(),
            present: RoaringBitmap::new(),
            nulls: RoaringBitmap::new(),
            nans: RoaringBitmap::new(),
            hist: Vec::new(),
            step: 0,
            changes: 0,
        }
    }
}

fn in_range<K: Ord>(k: &K, lo: &Bound<K>, hi: &Bound<K>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
    };
    above && below
}

fn log2(n: u64) -> f64 {
    ((n + 2) as f64).log2()
}

/// Null and NaN compare with nothing: `x != null` and `x != NaN` hold for no row.
fn incomparable(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Float(x) => x.is_nan(),
        _ => false,
    }
}

impl<K: KeyClass> BtreeIndex<K> {
    fn rebuild_histogram(&mut self) {
        let n = self.runs.len as u64;
        self.hist.clear();
        self.changes = 0;
        self.step = n.div_ceil(BUCKETS).max(1);
        if n == 0 {
            return;
        }
        let mut seen = 0u64;
        let mut next = 0u64;
        for b in self.runs.blocks.values() {
            let len = b.len() as u64;
            while next < seen + len {
                if let Some(x) = b.get((next - seen) as usize) {
                    self.hist.push(x.0.clone());
                }
                next += self.step;
            }
            seen += len;
        }
    }

    fn range_set(&self, range: &KeyRange<K>) -> RoaringBitmap {
        match range {
            Some((lo, hi)) => bitmap_from_ids(self.runs.asc(lo, hi).map(|x| x.1).collect()),
            None => RoaringBitmap::new(),
        }
    }

    /// Rows with a key in the range: exact up to `EXACT_ROWS`, else from the histogram.
    fn range_rows(&self, range: &KeyRange<K>) -> (u64, bool) {
        let Some((lo, hi)) = range else { return (0, true) };
        let counted = self.runs.asc(lo, hi).take(EXACT_ROWS as usize + 1).count() as u64;
        if counted <= EXACT_ROWS {
            return (counted, true);
        }
        let inside = self.hist.iter().filter(|k| in_range(*k, lo, hi)).count() as u64;
        ((inside * self.step).max(EXACT_ROWS + 1), false)
    }

    fn ordered_range(&self, low: &Bound<Value>, high: &Bound<Value>) -> Option<(KeyRange<K>, bool)> {
        let range = key_range::<K>(low, high).ok()?;
        let unbounded = matches!((low, high), (Bound::Unbounded, Bound::Unbounded));
        if unbounded && !self.nans.is_empty() {
            return None;
        }
        Some((range, unbounded))
    }

    /// `=`, `IN`, `!=`, `Present` and ranges as sets.
    fn set_for(&self, pred: &IndexPredicate) -> Option<Result<RoaringBitmap, Mismatch>> {
        Some(match pred {
            IndexPredicate::Eq(v) => eq_range::<K>(v).map(|r| self.range_set(&r)),
            IndexPredicate::In(vs) => (|| {
                let mut out = RoaringBitmap::new();
                for v in vs {
                    out |= self.range_set(&eq_range::<K>(v)?);
                }
                Ok(out)
            })(),
            IndexPredicate::NotEq(v) => eq_range::<K>(v).map(|r| {
                if incomparable(v) {
                    return RoaringBitmap::new();
                }
                let mut out = &self.present - &self.nulls;
                out -= &self.nans;
                out -= &self.range_set(&r);
                out
            }),
            IndexPredicate::Present | IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Unbounded } => {
                Ok(self.present.clone())
            }
            IndexPredicate::Range { low, high } => key_range::<K>(low, high).map(|r| self.range_set(&r)),
            _ => return None,
        })
    }

    /// Rows and exactness for the set predicates.
    fn rows_for(&self, pred: &IndexPredicate) -> Option<Result<(u64, bool), Mismatch>> {
        let valued = self.runs.len as u64;
        Some(match pred {
            IndexPredicate::Eq(v) => eq_range::<K>(v).map(|r| self.range_rows(&r)),
            IndexPredicate::In(vs) => (|| {
                let (mut n, mut exact) = (0u64, vs.len() <= 1);
                for v in vs {
                    let (m, e) = self.range_rows(&eq_range::<K>(v)?);
                    n += m;
                    exact &= e;
                }
                Ok((n.min(valued), exact))
            })(),
            IndexPredicate::NotEq(v) => eq_range::<K>(v).map(|r| {
                if incomparable(v) {
                    return (0, true);
                }
                let (m, e) = self.range_rows(&r);
                (valued.saturating_sub(m), e)
            }),
            IndexPredicate::Present | IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Unbounded } => {
                Ok((self.present.len(), true))
            }
            IndexPredicate::Range { low, high } => key_range::<K>(low, high).map(|r| self.range_rows(&r)),
            _ => return None,
        })
    }

    /// Takes the buffered removals out once there are [`REMOVED_AT_MOST`] of them.
    fn take_out_removed_at_bound(&mut self) {
        if self.removed.len() >= REMOVED_AT_MOST {
            self.take_out_removed();
        }
    }

    /// Takes the entries of `removed` out of `runs`, except those that hold again (an entity
    /// whose key went and came back: its entry stays).
    fn take_out_removed(&mut self) {
        if self.removed.is_empty() {
            return;
        }
        self.removed.sort_unstable();
        self.removed.dedup();
        let slots = &self.slots;
        self.removed.retain(|x| !holds(slots, x));
        self.runs.remove_sorted(&self.removed);
        self.removed.clear();
    }

    /// Puts the entries of `added` that still hold into `runs`, after the removals (an entry
    /// added and then removed again is dropped here).
    fn put_in_added(&mut self) {
        self.take_out_removed();
        if self.added.is_empty() {
            return;
        }
        self.added.sort_unstable();
        self.added.dedup();
        let slots = &self.slots;
        self.added.retain(|x| holds(slots, x));
        self.runs.insert_sorted(&self.added);
        self.added.clear();
    }

    /// Unlinks entity `e`; with `bounded`, a buffer of removals that reaches its bound is
    /// taken out at once (else it waits for [`SecondaryIndex::settle`] or a flush).
    fn unlink(&mut self, e: u32, bounded: bool) {
        if self.take_slot(e, bounded) {
            self.present.remove(e);
            self.changes += 1;
        }
    }

    /// Empties entity `e`'s slot, its old entry to be taken out; returns whether it held one.
    /// (`present` is left alone: an update puts a new entry in at once.)
    fn take_slot(&mut self, e: u32, bounded: bool) -> bool {
        let Some(slot) = self.slots.get_mut(e as usize) else { return false };
        match std::mem::replace(slot, Slot::Absent) {
            Slot::Absent => return false,
            Slot::Key(k) => {
                // In a bulk build the stale entry is dropped at `flush` (it no longer matches
                // the entity's slot).
                if self.bulk.is_none() {
                    self.removed.push((k, e));
                    // Bounded, for a world that despawns steadily and never reads the index,
                    // and small: a batch costs its writer well under a millisecond or two.
                    if bounded {
                        self.take_out_removed_at_bound();
                    }
                }
            }
            Slot::Null => {
                self.nulls.remove(e);
            }
            Slot::NaN => {
                self.nans.remove(e);
            }
        }
        true
    }
}

impl<K: KeyClass> SecondaryIndex for BtreeIndex<K> {
    fn kind(&self) -> IndexKind {
        IndexKind::Btree
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let n = self.present.len();
        if let IndexPredicate::Ordered { low, high, limit, .. } = pred {
            let (range, unbounded) = self.ordered_range(low, high)?;
            let (mut rows, mut exact) = self.range_rows(&range);
            if unbounded {
                rows += self.nulls.len();
            }
            if let Some(l) = limit
                && rows > *l as u64
            {
                (rows, exact) = (*l as u64, true);
            }
            return Some(Estimate { rows, exact, cost: cost::DESCEND * log2(n) + rows as f64 * cost::POSTING });
        }
        let (rows, exact) = self.rows_for(pred)?.ok()?;
        let c = match pred {
            IndexPredicate::NotEq(_) | IndexPredicate::Present => cost::DESCEND + n as f64 * cost::BITMAP_BIT,
            _ => cost::DESCEND * log2(n) + rows as f64 * cost::POSTING,
        };
        Some(Estimate { rows, exact, cost: c })
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        if let IndexPredicate::Ordered { low, high, descending, .. } = pred {
            let (range, unbounded) = self.ordered_range(low, high)?;
            let keys: Box<dyn Iterator<Item = u32> + '_> = match range {
                Some((lo, hi)) if *descending => {
                    Box::new(TiesAscending { inner: self.runs.desc(&lo, &hi).peekable(), run: Vec::new() })
                }
                Some((lo, hi)) => Box::new(self.runs.asc(&lo, &hi).map(|x| x.1)),
                None => Box::new(std::iter::empty()),
            };
            let nulls: Box<dyn Iterator<Item = u32> + '_> =
                if unbounded { Box::new(self.nulls.iter()) } else { Box::new(std::iter::empty()) };
            return Some(IndexAnswer::Ordered(if *descending {
                Box::new(keys.chain(nulls))
            } else {
                Box::new(nulls.chain(keys))
            }));
        }
        self.set_for(pred)?.ok().map(IndexAnswer::Set)
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        let v = values.first().and_then(K::stored).unwrap_or(Stored::Null);
        let i = entity as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, Slot::Absent);
        }
        match (&self.slots[i], &v) {
            (Slot::Key(a), Stored::Key(b)) if a == b => return,
            (Slot::Null, Stored::Null) | (Slot::NaN, Stored::NaN) => return,
            _ => {}
        }
        // Not bounded: a batch of updates ends with a flush, which takes the old entries
        // out with the new ones put in, block by block.
        if !self.take_slot(entity, false) {
            self.present.insert(entity);
        }
        self.changes += 1;
        self.slots[i] = match v {
            Stored::Key(k) => {
                match &mut self.bulk {
                    Some(bulk) => bulk.push((k.clone(), entity)),
                    None => self.added.push((k.clone(), entity)),
                }
                Slot::Key(k)
            }
            Stored::Null => {
                self.nulls.insert(entity);
                Slot::Null
            }
            Stored::NaN => {
                self.nans.insert(entity);
                Slot::NaN
            }
        };
    }

    fn remove(&mut self, entity: u32) {
        self.unlink(entity, true);
    }

    fn remove_deferred(&mut self, entity: u32) {
        self.unlink(entity, false);
    }

    fn settle(&mut self) {
        self.take_out_removed_at_bound();
    }

    fn flush(&mut self) {
        self.put_in_added();
        if let Some(mut bulk) = self.bulk.take() {
            bulk.sort_unstable();
            bulk.dedup();
            let slots = &self.slots;
            bulk.retain(|x| holds(slots, x));
            self.runs = Runs::from_sorted(bulk);
            self.rebuild_histogram();
        }
        let n = self.present.len();
        if self.changes > (n / 8).max(64) || (self.hist.is_empty() && self.runs.len > 0) {
            self.rebuild_histogram();
        }
    }

    fn clear(&mut self) {
        *self = BtreeIndex::default();
    }

    fn entries(&self) -> u64 {
        self.present.len()
    }

    fn stats(&self) -> IndexStats {
        let bytes = self.runs.memory_bytes()
            + self.slots.capacity() * std::mem::size_of::<Slot<K>>()
            + self.hist.capacity() * std::mem::size_of::<K>()
            + self.present.serialized_size()
            + self.nulls.serialized_size()
            + self.nans.serialized_size();
        IndexStats { entries: self.present.len(), memory_bytes: bytes as u64 }
    }
}

/// The entities of a set, for tests.
#[cfg(test)]
fn ids(a: IndexAnswer<'_>) -> Vec<u32> {
    a.into_vec(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::Entity;
    use crate::index::keys::OrdF64;

    #[test]
    fn a_run_of_removals_is_taken_out_block_by_block() {
        let mut b = BtreeIndex::<i64>::default();
        let n = crate::test_size(5000u32, 300);
        for e in 0..n {
            b.update(e, &[Value::Int(i64::from(e % 97))]);
        }
        b.flush();
        assert!(b.runs.blocks.len() > 3, "several blocks");
        // Whole blocks, single entries, blocks' first entries, entities never present.
        let gone = |e: u32| e.is_multiple_of(3) || (200..260).contains(&e) || e >= n - 40;
        for e in (0..n + 10).filter(|&e| gone(e)) {
            b.remove(e);
        }
        b.flush();
        let mut want: Vec<(i64, u32)> = (0..n).filter(|&e| !gone(e)).map(|e| (i64::from(e % 97), e)).collect();
        want.sort_unstable();
        let all =
            IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending: false, limit: None };
        assert_eq!(ids(b.answer(&all).unwrap()), want.iter().map(|x| x.1).collect::<Vec<_>>());
        assert_eq!((b.entries(), b.runs.len), (want.len() as u64, want.len()));
        assert!(b.runs.blocks.values().all(|v| !v.is_empty() && v.len() <= BLOCK));
        assert!(b.runs.blocks.iter().all(|(k, v)| *k == v[0]));
    }

    /// Deferred removals wait past the bound that plain ones are taken out at, and `settle`
    /// takes them out; answers are the same either way once flushed.
    #[test]
    fn deferred_removals_wait_for_settle() {
        let mut b = BtreeIndex::<i64>::default();
        let n = (REMOVED_AT_MOST * 3) as u32;
        for e in 0..n {
            b.update(e, &[Value::Int(i64::from(e % 13))]);
        }
        b.flush();
        let gone = REMOVED_AT_MOST as u32 + 5;
        for e in 0..gone {
            b.remove_deferred(e);
        }
        assert_eq!(b.removed.len(), gone as usize, "buffered past the bound");
        assert_eq!(b.runs.len, n as usize);
        b.settle();
        assert!(b.removed.is_empty());
        assert_eq!(b.runs.len, (n - gone) as usize);
        // Below the bound, settle leaves the buffer to the next flush.
        b.remove_deferred(gone);
        b.settle();
        assert_eq!(b.removed.len(), 1);
        b.flush();
        let all =
            IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending: false, limit: None };
        let mut want: Vec<(i64, u32)> = (gone + 1..n).map(|e| (i64::from(e % 13), e)).collect();
        want.sort_unstable();
        assert_eq!(ids(b.answer(&all).unwrap()), want.iter().map(|x| x.1).collect::<Vec<_>>());
    }

    #[test]
    fn runs_stay_sorted_through_splits_and_removals() {
        let mut b = BtreeIndex::<i64>::default();
        b.flush(); // leave bulk mode: every update below goes through block inserts
        let mut model = std::collections::BTreeMap::new();
        let mut rng = crate::test_rng::Rng::new(99);
        let entities = crate::test_size(3000, 60);
        let check = |b: &BtreeIndex<i64>, model: &std::collections::BTreeMap<u32, i64>| {
            let mut want: Vec<(i64, u32)> = model.iter().map(|(e, k)| (*k, *e)).collect();
            want.sort_unstable();
            let got: Vec<(i64, u32)> = b.runs.blocks.values().flatten().cloned().collect();
            assert_eq!(got, want);
            assert_eq!(b.runs.len, want.len());
        };
        for step in 1..=crate::test_size(20_000u32, 200) {
            let x = rng.next_u64();
            let e = (x % entities) as u32;
            if step % 5 == 0 {
                b.remove(e);
                model.remove(&e);
            } else {
                let k = (x >> 20) as i64 % 500;
                b.update(e, &[Value::Int(k)]);
                model.insert(e, k);
            }
            // Batches of every size between flushes: a few entries per block, or many.
            if u64::from(step) % (1 + (x >> 40) % 700) == 0 {
                b.flush();
                check(&b, &model);
            }
        }
        b.flush();
        check(&b, &model);
        let mut want: Vec<(i64, u32)> = model.iter().map(|(e, k)| (*k, *e)).collect();
        want.sort_unstable();
        let all =
            IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending: false, limit: None };
        assert_eq!(ids(b.answer(&all).unwrap()), want.iter().map(|x| x.1).collect::<Vec<_>>());
        let desc = IndexPredicate::Ordered {
            low: Bound::Excluded(Value::Int(100)),
            high: Bound::Included(Value::Int(400)),
            descending: true,
            limit: None,
        };
        let mut d: Vec<(i64, u32)> = want.iter().copied().filter(|x| x.0 > 100 && x.0 <= 400).collect();
        d.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(ids(b.answer(&desc).unwrap()), d.iter().map(|x| x.1).collect::<Vec<_>>());
        assert_eq!(b.entries(), model.len() as u64);
        assert!(b.runs.blocks.values().all(|v| !v.is_empty() && v.len() <= BLOCK));
        assert!(b.runs.blocks.iter().all(|(k, v)| *k == v[0]));
    }

    #[test]
    fn a_batch_keeps_only_what_holds_at_its_flush() {
        let mut b = BtreeIndex::<i64>::default();
        for e in 0..40 {
            b.update(e, &[Value::Int(i64::from(e))]);
        }
        b.flush();
        // Away and back to the same key; away to another and back; added then removed;
        // changed twice; removed and added again under a new key.
        b.update(1, &[Value::Int(100)]);
        b.update(1, &[Value::Int(1)]);
        b.update(2, &[Value::Int(7)]);
        b.update(2, &[Value::Int(2)]);
        b.update(50, &[Value::Int(5)]);
        b.remove(50);
        b.update(3, &[Value::Int(60)]);
        b.update(3, &[Value::Int(61)]);
        b.remove(4);
        b.update(4, &[Value::Int(-1)]);
        b.flush();
        let mut want: Vec<(i64, u32)> = (0..40).map(|e| (i64::from(e), e)).collect();
        want.retain(|x| x.1 != 3 && x.1 != 4);
        want.extend([(61, 3), (-1, 4)]);
        want.sort_unstable();
        let got: Vec<(i64, u32)> = b.runs.blocks.values().flatten().cloned().collect();
        assert_eq!(got, want);
        assert_eq!((b.entries(), b.runs.len), (40, 40));
        assert!(b.added.is_empty() && b.removed.is_empty());
    }

    fn floats(vals: &[f64]) -> BtreeIndex<OrdF64> {
        let mut b = BtreeIndex::default();
        for (i, v) in vals.iter().enumerate() {
            b.update(i as u32, &[Value::Float(*v)]);
        }
        b.flush();
        b
    }

    #[test]
    fn ranges_and_promotion() {
        let b = floats(&[1.0, 2.5, 3.0, -0.0, 7.0, f64::NAN, 2.5]);
        let q = |low, high| ids(b.answer(&IndexPredicate::Range { low, high }).unwrap());
        assert_eq!(q(Bound::Included(Value::Int(2)), Bound::Included(Value::Int(3))), [1, 2, 6]);
        assert_eq!(q(Bound::Excluded(Value::Float(2.5)), Bound::Unbounded), [2, 4]);
        assert_eq!(q(Bound::Unbounded, Bound::Included(Value::Float(0.0))), [3]);
        assert_eq!(q(Bound::Excluded(Value::Int(3)), Bound::Excluded(Value::Int(3))), Vec::<u32>::new());
        assert_eq!(q(Bound::Included(Value::Int(9)), Bound::Included(Value::Int(1))), Vec::<u32>::new());
        assert_eq!(q(Bound::Included(Value::Float(f64::NAN)), Bound::Unbounded), Vec::<u32>::new());
        assert!(
            b.estimate(&IndexPredicate::Range { low: Bound::Included(Value::Bool(true)), high: Bound::Unbounded })
                .is_none()
        );
        assert_eq!(ids(b.answer(&IndexPredicate::NotEq(Value::Float(2.5))).unwrap()), [0, 2, 3, 4]);
        // NaN present: an unbounded ordered scan is declined, a bounded one is fine.
        let ordered = |low, high, descending| IndexPredicate::Ordered { low, high, descending, limit: Some(2) };
        assert!(b.estimate(&ordered(Bound::Unbounded, Bound::Unbounded, false)).is_none());
        let p = ordered(Bound::Included(Value::Int(0)), Bound::Unbounded, true);
        assert_eq!(b.estimate(&p).unwrap().rows, 2);
        assert_eq!(ids(b.answer(&p).unwrap()), [4, 2, 1, 6, 0, 3]);
    }

    #[test]
    fn int_keys_with_float_bounds() {
        let mut b = BtreeIndex::<i64>::default();
        for i in 0..20u32 {
            b.update(i, &[Value::Int(i as i64 - 10)]);
        }
        b.flush();
        let p = IndexPredicate::Range {
            low: Bound::Excluded(Value::Float(-2.5)),
            high: Bound::Included(Value::Float(1.99)),
        };
        assert_eq!(ids(b.answer(&p).unwrap()), [8, 9, 10, 11]);
        let est = b.estimate(&p).unwrap();
        assert_eq!((est.rows, est.exact), (4, true));
    }

    #[test]
    fn ordered_scan_puts_nulls_first_ascending() {
        let mut b = BtreeIndex::<Entity>::default();
        b.update(0, &[Value::Entity(Entity::from_parts(5, 0))]);
        b.update(1, &[Value::Null]);
        b.update(2, &[Value::Entity(Entity::from_parts(1, 3))]);
        b.update(3, &[Value::Entity(Entity::from_parts(5, 0))]);
        b.flush();
        let o = |descending| IndexPredicate::Ordered {
            low: Bound::Unbounded,
            high: Bound::Unbounded,
            descending,
            limit: None,
        };
        assert_eq!(ids(b.answer(&o(false)).unwrap()), [1, 2, 0, 3]);
        assert_eq!(ids(b.answer(&o(true)).unwrap()), [0, 3, 2, 1]);
        assert_eq!(ids(b.answer(&IndexPredicate::NotEq(Value::Entity(Entity::from_parts(5, 0)))).unwrap()), [2]);
    }

    #[test]
    fn histogram_estimates_large_ranges() {
        // Keys 0..n, scattered; `wide` of them in the range, too many to count exactly.
        let (n, wide) = (crate::test_size(100_000u64, 400), crate::test_size(20_000u64, 300));
        assert!(wide > EXACT_ROWS);
        let vals: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64).collect();
        let b = floats(&vals);
        let low = (n / 10) as f64;
        let est = b.estimate(&IndexPredicate::between(low, low + (wide - 1) as f64)).unwrap();
        assert!(!est.exact);
        assert!((wide * 3 / 4..wide * 13 / 10).contains(&est.rows), "{est:?}");
        let est = b.estimate(&IndexPredicate::between(low, low + 9.0)).unwrap();
        assert!(est.exact && est.rows == 10);
    }
}
