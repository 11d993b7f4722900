//! Ordered keys for the `bitmap` and `btree` indexes, how predicate values become key ranges
//! (with the query language's comparison rules), and small posting lists.
//!
//! # Comparison rules (those of the text language's scans)
//! - `int` against `int` compares exactly; `int` against `float` compares as floats (the int is
//!   converted with `as f64`). An index over an integer field therefore turns a float bound
//!   into the exact integer bound with the same answer ([`int_bound`]).
//! - `null` never compares: a predicate with a null value matches nothing, and rows whose
//!   field reads as null (a null `entity`) match no comparison, `!=` included.
//! - NaN never compares either (the scans read it like null): a NaN value matches nothing and
//!   NaN rows match no comparison. `-0.0` and `0.0` are the same key.
//! - Strings compare by bytes, booleans `false < true`, entities by (index, generation).
//! - Values of types that do not compare with the field's type (a string against a number, …)
//!   are a type error in the language; an index declines such predicates
//!   ([`KeyClass::bound`] returns `Err(Mismatch)`) so that the planner's scan reports it.

use std::collections::BTreeMap;
use std::ops::Bound;

use roaring::RoaringBitmap;

use crate::component::FieldType;
use crate::entity::Entity;
use crate::value::Value;

/// A float with a total order: `-0.0` is stored as `0.0`; NaN is never a key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct OrdF64(u64);

impl OrdF64 {
    /// The key of `x`, or `None` for NaN.
    #[inline]
    pub fn new(x: f64) -> Option<OrdF64> {
        if x.is_nan() {
            return None;
        }
        let x = if x == 0.0 { 0.0 } else { x };
        let bits = x.to_bits();
        // Flip negatives entirely and set the sign bit of positives: unsigned order = float order.
        Some(OrdF64(if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }))
    }

    /// The key of `x`, with NaN above every number (for orderings that must be total).
    #[inline]
    pub fn new_or_max(x: f64) -> OrdF64 {
        OrdF64::new(x).unwrap_or(OrdF64(u64::MAX))
    }

    /// The float back.
    #[inline]
    pub fn get(self) -> f64 {
        let b = self.0;
        f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
    }
}

/// The predicate value cannot be compared with the field's type: the index declines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch;

/// One end of a key range derived from a predicate value.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyBound<K> {
    /// Every non-null key satisfies this end.
    All,
    /// No key satisfies it (the answer is empty).
    Nothing,
    /// Keys beyond this bound satisfy it.
    At(Bound<K>),
}

/// How a stored field value is classified by an index.
#[derive(Clone, Debug, PartialEq)]
pub enum Stored<K> {
    /// An ordinary key.
    Key(K),
    /// Reads as null (a null entity): matches no comparison.
    Null,
    /// A float NaN: matches no comparison.
    NaN,
}

/// A field type's key: how stored values and predicate values map onto an ordered key.
pub trait KeyClass: Ord + Clone + Send + Sync + std::fmt::Debug + 'static {
    /// Classifies a stored value (as read from the field). `None` when the value is not of
    /// this class (cannot happen for values read from a field of the matching type).
    fn stored(v: &Value) -> Option<Stored<Self>>;

    /// The lower (`lower = true`) or upper end of the keys satisfying `key >= v` / `key > v`
    /// (lower) or `key <= v` / `key < v` (upper).
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<Self>, Mismatch>;

    /// Heap bytes owned by a key (beyond `size_of::<Self>()`).
    fn heap_bytes(&self) -> usize {
        0
    }
}

fn same_class_bound<K>(k: K, lower: bool, inclusive: bool) -> KeyBound<K> {
    let _ = lower;
    KeyBound::At(if inclusive { Bound::Included(k) } else { Bound::Excluded(k) })
}

impl KeyClass for bool {
    fn stored(v: &Value) -> Option<Stored<bool>> {
        match v {
            Value::Bool(b) => Some(Stored::Key(*b)),
            Value::Null => Some(Stored::Null),
            _ => None,
        }
    }
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<bool>, Mismatch> {
        match v {
            Value::Null => Ok(KeyBound::Nothing),
            Value::Bool(b) => Ok(same_class_bound(*b, lower, inclusive)),
            _ => Err(Mismatch),
        }
    }
}

impl KeyClass for i64 {
    fn stored(v: &Value) -> Option<Stored<i64>> {
        match v {
            Value::Int(i) => Some(Stored::Key(*i)),
            Value::Null => Some(Stored::Null),
            _ => None,
        }
    }
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<i64>, Mismatch> {
        match v {
            Value::Null => Ok(KeyBound::Nothing),
            Value::Int(i) => Ok(same_class_bound(*i, lower, inclusive)),
            Value::Float(x) => Ok(int_bound(*x, lower, inclusive)),
            _ => Err(Mismatch),
        }
    }
}

impl KeyClass for OrdF64 {
    fn stored(v: &Value) -> Option<Stored<OrdF64>> {
        match v {
            Value::Float(x) => Some(OrdF64::new(*x).map_or(Stored::NaN, Stored::Key)),
            Value::Null => Some(Stored::Null),
            _ => None,
        }
    }
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<OrdF64>, Mismatch> {
        let x = match v {
            Value::Null => return Ok(KeyBound::Nothing),
            Value::Int(i) => *i as f64,
            Value::Float(x) => *x,
            _ => return Err(Mismatch),
        };
        Ok(match OrdF64::new(x) {
            None => KeyBound::Nothing,
            Some(k) => same_class_bound(k, lower, inclusive),
        })
    }
}

impl KeyClass for Box<str> {
    fn stored(v: &Value) -> Option<Stored<Box<str>>> {
        match v {
            Value::Str(s) => Some(Stored::Key(s.as_str().into())),
            Value::Null => Some(Stored::Null),
            _ => None,
        }
    }
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<Box<str>>, Mismatch> {
        match v {
            Value::Null => Ok(KeyBound::Nothing),
            Value::Str(s) => Ok(same_class_bound(s.as_str().into(), lower, inclusive)),
            _ => Err(Mismatch),
        }
    }
    fn heap_bytes(&self) -> usize {
        self.len()
    }
}

impl KeyClass for Entity {
    fn stored(v: &Value) -> Option<Stored<Entity>> {
        match v {
            Value::Entity(e) => Some(Stored::Key(*e)),
            Value::Null => Some(Stored::Null),
            _ => None,
        }
    }
    fn bound(v: &Value, lower: bool, inclusive: bool) -> Result<KeyBound<Entity>, Mismatch> {
        match v {
            Value::Null => Ok(KeyBound::Nothing),
            Value::Entity(e) => Ok(same_class_bound(*e, lower, inclusive)),
            _ => Err(Mismatch),
        }
    }
}

/// The bound on integer keys `k` equivalent to comparing `k as f64` with the float `x`:
/// for a lower end the smallest `k` with `k as f64 >= x` (or `>`), for an upper end the
/// largest `k` with `k as f64 <= x` (or `<`). `k as f64` is monotone in `k`, so the keys
/// satisfying one end form a contiguous run, found by binary search.
pub fn int_bound(x: f64, lower: bool, inclusive: bool) -> KeyBound<i64> {
    if x.is_nan() {
        return KeyBound::Nothing;
    }
    let holds = |k: i64| -> bool {
        let f = k as f64;
        match (lower, inclusive) {
            (true, true) => f >= x,
            (true, false) => f > x,
            (false, true) => f <= x,
            (false, false) => f < x,
        }
    };
    if lower {
        // `holds` goes false…false true…true as k grows.
        if holds(i64::MIN) {
            return KeyBound::All;
        }
        if !holds(i64::MAX) {
            return KeyBound::Nothing;
        }
        let (mut lo, mut hi) = (i64::MIN, i64::MAX); // holds(lo) false, holds(hi) true
        while (hi as i128) - (lo as i128) > 1 {
            let mid = ((lo as i128 + hi as i128) / 2) as i64;
            if holds(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        KeyBound::At(Bound::Included(hi))
    } else {
        // `holds` goes true…true false…false as k grows.
        if holds(i64::MAX) {
            return KeyBound::All;
        }
        if !holds(i64::MIN) {
            return KeyBound::Nothing;
        }
        let (mut lo, mut hi) = (i64::MIN, i64::MAX); // holds(lo) true, holds(hi) false
        while (hi as i128) - (lo as i128) > 1 {
            let mid = ((lo as i128 + hi as i128) / 2) as i64;
            if holds(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        KeyBound::At(Bound::Included(lo))
    }
}

/// A bitmap of the given entity indices, in any order (duplicates allowed).
///
/// `RoaringBitmap::from_sorted_iter` costs several nanoseconds per value (a container lookup
/// and push each), and answers of thousands of entities in key order need sorting first.
/// Here the indices are sorted by a least-significant-digit radix sort (11-bit digits, at
/// most three passes) and the containers written once in the standard portable format,
/// which `RoaringBitmap::deserialize_from` reads back — and checks — with one copy per
/// container.
pub fn bitmap_from_ids(mut ids: Vec<u32>) -> RoaringBitmap {
    if ids.len() < 64 {
        ids.sort_unstable();
        ids.dedup();
        return RoaringBitmap::from_sorted_iter(ids).unwrap_or_default();
    }
    const DIGIT: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT;
    let bits = 32 - ids.iter().fold(0, |m, &x| m | x).leading_zeros();
    let mut tmp = vec![0u32; ids.len()];
    let mut shift = 0;
    while shift < bits {
        let mut count = [0u32; BUCKETS + 1];
        for &x in &ids {
            count[((x >> shift) as usize & (BUCKETS - 1)) + 1] += 1;
        }
        for i in 0..BUCKETS {
            count[i + 1] += count[i];
        }
        for &x in &ids {
            let b = (x >> shift) as usize & (BUCKETS - 1);
            tmp[count[b] as usize] = x;
            count[b] += 1;
        }
        std::mem::swap(&mut ids, &mut tmp);
        shift += DIGIT;
    }
    ids.dedup();
    // Containers: runs of one high half, as (key, start, end).
    let mut containers: Vec<(u16, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let key = ids[i] >> 16;
        let start = i;
        while i < ids.len() && ids[i] >> 16 == key {
            i += 1;
        }
        containers.push((key as u16, start, i));
    }
    // The portable format without run containers: cookie, count, (key, cardinality - 1)
    // pairs, offsets, then each container: an array of u16, or a 1024-word bitmap past 4096.
    let mut buf: Vec<u8> = Vec::with_capacity(8 + containers.len() * 8 + ids.len() * 2);
    buf.extend_from_slice(&12346u32.to_le_bytes());
    buf.extend_from_slice(&(containers.len() as u32).to_le_bytes());
    for &(key, s, e) in &containers {
        buf.extend_from_slice(&key.to_le_bytes());
        buf.extend_from_slice(&((e - s - 1) as u16).to_le_bytes());
    }
    let mut offset = 8 + containers.len() * 8;
    for &(_, s, e) in &containers {
        buf.extend_from_slice(&(offset as u32).to_le_bytes());
        offset += if e - s <= 4096 { (e - s) * 2 } else { 8192 };
    }
    for &(_, s, e) in &containers {
        if e - s <= 4096 {
            for &v in &ids[s..e] {
                buf.extend_from_slice(&(v as u16).to_le_bytes());
            }
        } else {
            let mut words = vec![0u64; 1024];
            for &v in &ids[s..e] {
                let lo = v as usize & 0xffff;
                words[lo >> 6] |= 1 << (lo & 63);
            }
            for w in words {
                buf.extend_from_slice(&w.to_le_bytes());
            }
        }
    }
    // The checked reader validates what it reads; should it ever refuse, build the slow way.
    RoaringBitmap::deserialize_from(&buf[..])
        .unwrap_or_else(|_| RoaringBitmap::from_sorted_iter(ids).unwrap_or_default())
}

/// A key range: `None` when empty.
pub type KeyRange<K> = Option<(Bound<K>, Bound<K>)>;

/// The keys satisfying both ends of a range predicate. `Err` when a value does not compare
/// with the field's type.
pub fn key_range<K: KeyClass>(low: &Bound<Value>, high: &Bound<Value>) -> Result<KeyRange<K>, Mismatch> {
    let lo = match low {
        Bound::Unbounded => KeyBound::All,
        Bound::Included(v) => K::bound(v, true, true)?,
        Bound::Excluded(v) => K::bound(v, true, false)?,
    };
    let hi = match high {
        Bound::Unbounded => KeyBound::All,
        Bound::Included(v) => K::bound(v, false, true)?,
        Bound::Excluded(v) => K::bound(v, false, false)?,
    };
    let lo = match lo {
        KeyBound::Nothing => return Ok(None),
        KeyBound::All => Bound::Unbounded,
        KeyBound::At(b) => b,
    };
    let hi = match hi {
        KeyBound::Nothing => return Ok(None),
        KeyBound::All => Bound::Unbounded,
        KeyBound::At(b) => b,
    };
    Ok(valid_range(&lo, &hi).then_some((lo, hi)))
}

/// The keys equal to `v`: a range, since an int key equals a float value through rounding.
pub fn eq_range<K: KeyClass>(v: &Value) -> Result<KeyRange<K>, Mismatch> {
    key_range::<K>(&Bound::Included(v.clone()), &Bound::Included(v.clone()))
}

/// Whether `BTreeMap::range` accepts these bounds (it panics on an inverted range and on
/// equal excluded ends) and the range can hold a key.
pub fn valid_range<K: Ord>(lo: &Bound<K>, hi: &Bound<K>) -> bool {
    match (lo, hi) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
    }
}

/// The key class an index uses for a field type, or `None` when the type is not orderable
/// by a `bitmap`/`btree` index (vectors: use `rtree`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// `bool`
    Bool,
    /// Every integer type, read as i64.
    Int,
    /// `f32`, `f64`.
    Float,
    /// `string`
    Str,
    /// `entity`
    Entity,
}

impl KeyType {
    /// The key type of a field type.
    pub fn of(ty: FieldType) -> Option<KeyType> {
        Some(match ty {
            FieldType::Bool => KeyType::Bool,
            FieldType::F32 | FieldType::F64 => KeyType::Float,
            FieldType::String => KeyType::Str,
            FieldType::Entity => KeyType::Entity,
            FieldType::Vec2 | FieldType::Vec3 => return None,
            _ => KeyType::Int,
        })
    }
}

/// Most entities a [`Postings::Few`] list holds before it becomes a bitmap.
const FEW_MAX: usize = 32;

/// The entity indices of one key: a single index inline, a short sorted list, or a bitmap.
///
/// Most keys of a relation (a node's children) and of a selective field hold a handful of
/// entities. A sorted list answers them with one allocation and a plain loop; a roaring
/// bitmap costs two allocations and a container walk per element, which is most of a
/// point query's time at that size.
#[derive(Clone, Debug)]
pub enum Postings {
    /// Exactly one entity.
    One(u32),
    /// Two to `FEW_MAX` entities (or, transiently, fewer), ascending and distinct.
    Few(Vec<u32>),
    /// More (or, until it shrinks to half of `FEW_MAX`, fewer).
    Many(RoaringBitmap),
}

impl Postings {
    /// Adds an entity.
    #[inline]
    pub fn insert(&mut self, e: u32) {
        match self {
            Postings::One(x) if *x == e => {}
            Postings::One(x) => {
                let x = *x;
                *self = Postings::Few(if x < e { vec![x, e] } else { vec![e, x] });
            }
            Postings::Few(v) => {
                let Err(at) = v.binary_search(&e) else { return };
                if v.len() < FEW_MAX {
                    v.insert(at, e);
                } else {
                    let mut b = bitmap_from_ids(std::mem::take(v));
                    b.insert(e);
                    *self = Postings::Many(b);
                }
            }
            Postings::Many(b) => {
                b.insert(e);
            }
        }
    }

    /// Removes an entity; returns whether the list is now empty.
    #[inline]
    pub fn remove(&mut self, e: u32) -> bool {
        match self {
            Postings::One(x) => *x == e,
            Postings::Few(v) => {
                if let Ok(at) = v.binary_search(&e) {
                    v.remove(at);
                }
                if let [only] = v[..] {
                    *self = Postings::One(only);
                }
                self.is_empty()
            }
            Postings::Many(b) => {
                b.remove(e);
                // Back to a list at half the limit, so a key near it does not convert on
                // every write.
                if b.len() <= (FEW_MAX / 2) as u64 {
                    *self = match b.len() {
                        0 => Postings::Few(Vec::new()),
                        1 => Postings::One(b.min().unwrap_or(e)),
                        _ => Postings::Few(b.iter().collect()),
                    };
                    return self.is_empty();
                }
                false
            }
        }
    }

    /// Whether the list is empty (only transiently, between a removal and its cleanup).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of entities.
    #[inline]
    pub fn len(&self) -> u64 {
        match self {
            Postings::One(_) => 1,
            Postings::Few(v) => v.len() as u64,
            Postings::Many(b) => b.len(),
        }
    }

    /// Adds every entity to `out`.
    #[inline]
    pub fn union_into(&self, out: &mut RoaringBitmap) {
        match self {
            Postings::One(x) => {
                out.insert(*x);
            }
            Postings::Few(v) => v.iter().for_each(|&x| {
                out.insert(x);
            }),
            Postings::Many(b) => *out |= b,
        }
    }

    /// Calls `visit` with every entity, ascending: a list in a plain loop, with no iterator
    /// state per element.
    #[inline]
    pub fn for_each(&self, visit: &mut dyn FnMut(u32)) {
        match self {
            Postings::One(x) => visit(*x),
            Postings::Few(v) => v.iter().for_each(|&x| visit(x)),
            Postings::Many(b) => b.iter().for_each(visit),
        }
    }

    /// Calls `visit` with the entities in batches, ascending: a list as it is.
    #[inline]
    pub fn for_each_batch(&self, visit: &mut dyn FnMut(&[u32])) {
        match self {
            Postings::One(x) => visit(std::slice::from_ref(x)),
            Postings::Few(v) => visit(v),
            Postings::Many(b) => super::visit_in_batches(b.iter(), visit),
        }
    }

    /// The entities in ascending order.
    pub fn iter(&self) -> PostingsIter<'_> {
        match self {
            Postings::One(x) => PostingsIter::One(Some(*x)),
            Postings::Few(v) => PostingsIter::Few(v.iter()),
            Postings::Many(b) => PostingsIter::Many(b.iter()),
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Postings::One(_) => 0,
            Postings::Few(v) => v.capacity() * std::mem::size_of::<u32>(),
            Postings::Many(b) => b.serialized_size(),
        }
    }
}

/// Iterator over [`Postings`], ascending.
pub enum PostingsIter<'a> {
    /// A single entity.
    One(Option<u32>),
    /// A short list's entities.
    Few(std::slice::Iter<'a, u32>),
    /// A bitmap's entities.
    Many(roaring::bitmap::Iter<'a>),
}

impl Iterator for PostingsIter<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            PostingsIter::One(x) => x.take(),
            PostingsIter::Few(it) => it.next().copied(),
            PostingsIter::Many(it) => it.next(),
        }
    }
}

/// Per-entity state of a keyed index, indexed by entity index.
#[derive(Clone, Debug)]
pub enum Slot<K> {
    /// Not indexed.
    Absent,
    /// Indexed under a key.
    Key(K),
    /// Indexed as null.
    Null,
    /// Indexed as NaN.
    NaN,
}

/// A map from keys to the entities holding them, kept exactly in step with per-entity
/// values: the shared body of the `bitmap` and `btree` indexes.
#[derive(Debug)]
pub struct KeyedSets<K: KeyClass> {
    /// Key → entities.
    pub map: BTreeMap<K, Postings>,
    /// Each entity's current state.
    pub slots: Vec<Slot<K>>,
    /// Every indexed entity (keys, nulls and NaNs).
    pub present: RoaringBitmap,
    /// Entities whose value is null.
    pub nulls: RoaringBitmap,
    /// Entities whose value is NaN.
    pub nans: RoaringBitmap,
    /// Bytes of key heap data (strings).
    key_heap: usize,
}

impl<K: KeyClass> Default for KeyedSets<K> {
    fn default() -> Self {
        KeyedSets {
            map: BTreeMap::new(),
            slots: Vec::new(),
            present: RoaringBitmap::new(),
            nulls: RoaringBitmap::new(),
            nans: RoaringBitmap::new(),
            key_heap: 0,
        }
    }
}

impl<K: KeyClass> KeyedSets<K> {
    fn unlink(&mut self, e: u32) {
        let Some(slot) = self.slots.get_mut(e as usize) else { return };
        match std::mem::replace(slot, Slot::Absent) {
            Slot::Absent => return,
            Slot::Key(k) => {
                if let Some(p) = self.map.get_mut(&k)
                    && p.remove(e)
                {
                    self.key_heap -= k.heap_bytes();
                    self.map.remove(&k);
                }
            }
            Slot::Null => {
                self.nulls.remove(e);
            }
            Slot::NaN => {
                self.nans.remove(e);
            }
        }
        self.present.remove(e);
    }

    /// Sets entity `e`'s value. Returns whether the value changed.
    pub fn set(&mut self, e: u32, v: Stored<K>) -> bool {
        let i = e as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, Slot::Absent);
        }
        match (&self.slots[i], &v) {
            (Slot::Key(a), Stored::Key(b)) if a == b => return false,
            (Slot::Null, Stored::Null) | (Slot::NaN, Stored::NaN) => return false,
            _ => {}
        }
        self.unlink(e);
        self.present.insert(e);
        self.slots[i] = match v {
            Stored::Key(k) => {
                match self.map.get_mut(&k) {
                    Some(p) => p.insert(e),
                    None => {
                        self.key_heap += k.heap_bytes();
                        self.map.insert(k.clone(), Postings::One(e));
                    }
                }
                Slot::Key(k)
            }
            Stored::Null => {
                self.nulls.insert(e);
                Slot::Null
            }
            Stored::NaN => {
                self.nans.insert(e);
                Slot::NaN
            }
        };
        true
    }

    /// Forgets entity `e`. Returns whether it was indexed.
    pub fn remove(&mut self, e: u32) -> bool {
        let was = self.present.contains(e);
        self.unlink(e);
        was
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = KeyedSets::default();
    }

    /// Calls `visit` with each entity whose key lies in the range, key by key.
    pub fn range_each(&self, range: &KeyRange<K>, visit: &mut dyn FnMut(&[u32])) {
        if let Some((lo, hi)) = range
            && valid_range(lo, hi)
        {
            for p in self.map.range((lo.clone(), hi.clone())).map(|(_, p)| p) {
                p.for_each_batch(visit);
            }
        }
    }

    /// Entities whose key lies in the range.
    pub fn range_set(&self, range: &KeyRange<K>) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        if let Some((lo, hi)) = range
            && valid_range(lo, hi)
        {
            // Single entities are gathered and built into a bitmap in one pass.
            let mut ids: Vec<u32> = Vec::new();
            for p in self.map.range((lo.clone(), hi.clone())).map(|(_, p)| p) {
                match p {
                    Postings::One(x) => ids.push(*x),
                    Postings::Few(v) => ids.extend_from_slice(v),
                    Postings::Many(b) if out.is_empty() => out = b.clone(),
                    Postings::Many(b) => out |= b,
                }
            }
            if !ids.is_empty() {
                let singles = bitmap_from_ids(ids);
                if out.is_empty() {
                    out = singles;
                } else {
                    out |= singles;
                }
            }
        }
        out
    }

    /// Number of entities whose key lies in the range, counting at most `max_keys` keys;
    /// `None` when the range holds more keys than that.
    pub fn count_range(&self, range: &KeyRange<K>, max_keys: usize) -> Option<u64> {
        let Some((lo, hi)) = range else { return Some(0) };
        if !valid_range(lo, hi) {
            return Some(0);
        }
        let mut n = 0;
        for (i, (_, p)) in self.map.range((lo.clone(), hi.clone())).enumerate() {
            if i >= max_keys {
                return None;
            }
            n += p.len();
        }
        Some(n)
    }

    /// Approximate bytes held.
    pub fn memory_bytes(&self) -> usize {
        let node = std::mem::size_of::<K>() + std::mem::size_of::<Postings>() + 8;
        let postings: usize = if self.map.len() <= 4096 {
            self.map.values().map(Postings::heap_bytes).sum()
        } else {
            // Sampled: walking every posting list for SHOW INDEXES would cost a scan.
            let sample: usize = self.map.values().step_by(self.map.len() / 1024).map(Postings::heap_bytes).sum();
            sample * (self.map.len() / 1024)
        };
        self.map.len() * node
            + postings
            + self.key_heap
            + self.slots.capacity() * std::mem::size_of::<Slot<K>>()
            + self.present.serialized_size()
            + self.nulls.serialized_size()
            + self.nans.serialized_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordf64_orders_like_floats() {
        let xs = [f64::NEG_INFINITY, -1e300, -2.5, -1e-300, -0.0, 0.0, 1e-300, 3.0, 1e300, f64::INFINITY];
        for w in xs.windows(2) {
            let (a, b) = (OrdF64::new(w[0]).unwrap(), OrdF64::new(w[1]).unwrap());
            assert!(a <= b, "{} {}", w[0], w[1]);
            assert_eq!(a == b, w[0] == w[1]);
        }
        for x in xs {
            let back = OrdF64::new(x).unwrap().get();
            assert!(back == x && (x != 0.0 || back.is_sign_positive()));
        }
        assert!(OrdF64::new(f64::NAN).is_none());
    }

    #[test]
    fn int_bounds_match_float_comparison() {
        let ks = [i64::MIN, -9_007_199_254_740_993, -3, -1, 0, 1, 2, 3, 9_007_199_254_740_993, i64::MAX - 1, i64::MAX];
        let xs = [
            f64::NEG_INFINITY,
            -9.3e18,
            -9_007_199_254_740_992.0,
            -2.5,
            -0.0,
            0.5,
            1.0,
            2.0,
            9_007_199_254_740_992.0,
            9.223372036854776e18,
            9.3e18,
            f64::INFINITY,
        ];
        for &x in &xs {
            for lower in [true, false] {
                for inclusive in [true, false] {
                    let b = int_bound(x, lower, inclusive);
                    for &k in &ks {
                        let f = k as f64;
                        let want = match (lower, inclusive) {
                            (true, true) => f >= x,
                            (true, false) => f > x,
                            (false, true) => f <= x,
                            (false, false) => f < x,
                        };
                        let got = match &b {
                            KeyBound::All => true,
                            KeyBound::Nothing => false,
                            KeyBound::At(Bound::Included(c)) => {
                                if lower {
                                    k >= *c
                                } else {
                                    k <= *c
                                }
                            }
                            KeyBound::At(_) => unreachable!(),
                        };
                        assert_eq!(got, want, "x={x} lower={lower} incl={inclusive} k={k}");
                    }
                }
            }
        }
        assert_eq!(int_bound(f64::NAN, true, true), KeyBound::Nothing);
    }

    /// A key's postings move between one entity, a list and a bitmap as it grows and
    /// shrinks, and always hold exactly the entities added and not removed, ascending.
    #[test]
    fn postings_change_form_and_keep_their_entities() {
        let mut p = Postings::One(500);
        let mut model: std::collections::BTreeSet<u32> = [500].into();
        let check = |p: &Postings, model: &std::collections::BTreeSet<u32>| {
            let want: Vec<u32> = model.iter().copied().collect();
            assert_eq!(p.iter().collect::<Vec<_>>(), want);
            let mut seen = Vec::new();
            p.for_each(&mut |x| seen.push(x));
            assert_eq!(seen, want);
            seen.clear();
            p.for_each_batch(&mut |xs| seen.extend_from_slice(xs));
            assert_eq!(seen, want);
            assert_eq!(p.len(), want.len() as u64);
        };
        // Grow past a list into a bitmap, with repeats, out of order.
        for k in 0..crate::test_size(100u32, 40) {
            let e = (k * 37) % 101;
            p.insert(e);
            p.insert(e);
            model.insert(e);
            check(&p, &model);
            match model.len() {
                2..=FEW_MAX => assert!(matches!(p, Postings::Few(_))),
                n if n > FEW_MAX => assert!(matches!(p, Postings::Many(_))),
                _ => {}
            }
        }
        // Shrink back: a bitmap becomes a list at half the limit, then one entity.
        let all: Vec<u32> = model.iter().copied().collect();
        for e in all {
            let empty = p.remove(e);
            p.remove(1_000); // never added
            model.remove(&e);
            assert_eq!(empty, model.is_empty());
            if model.is_empty() {
                break;
            }
            check(&p, &model);
            match model.len() {
                1 => assert!(matches!(p, Postings::One(_))),
                n if n <= FEW_MAX / 2 => assert!(matches!(p, Postings::Few(_))),
                _ => {}
            }
        }
    }

    #[test]
    fn ranges_never_panic() {
        let r = key_range::<i64>(&Bound::Excluded(Value::Int(3)), &Bound::Excluded(Value::Int(3))).unwrap();
        assert!(r.is_none());
        let r = key_range::<i64>(&Bound::Included(Value::Int(5)), &Bound::Included(Value::Int(3))).unwrap();
        assert!(r.is_none());
        let r = key_range::<i64>(&Bound::Included(Value::Float(2.5)), &Bound::Included(Value::Float(2.5))).unwrap();
        assert!(r.is_none());
        assert!(key_range::<i64>(&Bound::Included(Value::Str("a".into())), &Bound::Unbounded).is_err());
        assert!(key_range::<OrdF64>(&Bound::Included(Value::Null), &Bound::Unbounded).unwrap().is_none());
        let mut s = KeyedSets::<i64>::default();
        for i in 0..10 {
            s.set(i, Stored::Key(i as i64 % 3));
        }
        assert_eq!(s.range_set(&eq_range::<i64>(&Value::Float(1.0)).unwrap()).len(), 3);
        assert_eq!(s.range_set(&Some((Bound::Excluded(2), Bound::Excluded(1)))).len(), 0);
    }

    #[test]
    fn bitmaps_from_ids() {
        let mut rng = crate::test_rng::Rng::new(12345);
        let mut next = move || rng.next_u64();
        // Past 4096 ids a container is a bitmap: `many` and `dense` make one, but under Miri,
        // too slow for that many, only arrays are made.
        let (some, many, spread, dense) = (
            crate::test_size(1000, 100),
            crate::test_size(20_000, 200),
            crate::test_size(9000, 150),
            crate::test_size(10_000, 200),
        );
        for (n, range) in
            [(0usize, 10u64), (63, 100), (64, 100), (some, 1 << 20), (many, 70_000), (spread, u32::MAX as u64 + 1)]
        {
            let ids: Vec<u32> = (0..n).map(|_| (next() % range) as u32).collect();
            let want: RoaringBitmap = ids.iter().copied().collect();
            assert_eq!(bitmap_from_ids(ids), want, "n={n} range={range}");
        }
        let ids: Vec<u32> = (0..dense).rev().chain(0..5).collect();
        assert_eq!(bitmap_from_ids(ids).len(), dense as u64);
    }

    #[test]
    fn keyed_sets_track_values() {
        let mut s = KeyedSets::<Box<str>>::default();
        assert!(s.set(3, Stored::Key("a".into())));
        assert!(!s.set(3, Stored::Key("a".into())));
        assert!(s.set(4, Stored::Key("a".into())));
        assert!(s.set(5, Stored::Null));
        assert!(s.set(3, Stored::Key("b".into())));
        assert_eq!(s.map.len(), 2);
        assert!(s.remove(4));
        assert!(!s.remove(4));
        assert_eq!(s.map.len(), 1);
        assert_eq!(s.present.len(), 2);
        assert_eq!(s.nulls.len(), 1);
        assert!(matches!(s.map.get("b"), Some(Postings::One(3))));
    }
}
