//! `rtree` indexes: rstar over the 2 or 3 coordinates of a vector-like component (or of one
//! `vec2`/`vec3` field), answering radius, box and nearest-neighbour queries exactly.
//!
//! # Layout
//! - The tree holds one element per entity: an `f32` box and the entity index. Boxes are
//!   rounded outward from the exact `f64` coordinates, so a box always contains its entity's
//!   exact position; for an entity that never moved since it was inserted the box is its
//!   point (a degenerate box when the coordinates are `f32` values, as for `f32` fields).
//!   `f32` keeps nodes small (56 bytes instead of 80): queries touch less memory.
//! - `pos` holds every entity's exact current position (by entity index); queries take
//!   candidates from the tree and test them against exact positions with the language's own
//!   float operations ([`distance`]).
//! - Moving entities ([`RtreeUpdate::Loose`]): an entity that left its box is re-inserted
//!   under a *loose* box, `LOOSE_STEPS` of its own last step wide on each side (at most twice
//!   the mean spacing of the points). Later moves inside that box only update `pos`; the box
//!   is remembered in `loose`. The tree never changes an element's box in place (rstar's
//!   contract): leaving the box is a remove and an insert.
//! - Points with a coordinate that is not finite or whose magnitude exceeds `DOMAIN` stay out
//!   of the tree (`odd`), so its `f32` area arithmetic never overflows; queries test them one
//!   by one.
//!   A NaN coordinate makes the nearest-neighbour predicate decline (where NaN sorts is the
//!   planner's rule, not the index's).
//!
//! # Exactness of nearest-neighbour streams
//! A stream for `LIMIT k` first takes every entity within a ball around the query point
//! sized from the mean density to hold about `2k` (doubled until it holds `k`): a box query
//! and a sort by (exact distance, index). Every entity outside the ball is strictly farther
//! than every entity inside, so that prefix is exact. Past it, rstar's best-first walk takes
//! over, skipping entities inside the ball:
//! rstar yields elements in increasing squared distance of their boxes from the query point,
//! computed as `Σ (clamp(c) − c)²` in coordinate order; for a point inside a box every term
//! is at most the point's own `(p − c)²` (float subtraction, squaring and addition are
//! monotone), so the box distance is a lower bound of the exact distance computed the same
//! way. The walk runs in `f32` around the rounded query point, so the bound used is
//! `sqrt(lb²)·(1 − 10⁻⁶) − |c − c₃₂| − 10⁻²⁰`: below the true distance of every point in the
//! box whatever the `f32` rounding (at most a few units in 2⁻²⁴ relative). The stream keeps a
//! heap of pulled candidates by (exact distance, entity index) and yields the smallest only
//! when it is *strictly* below the next box's bound: then no entity yet to come can be nearer
//! or tie with a smaller index.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::ControlFlow;

use roaring::RoaringBitmap;
use rstar::iterators::NearestNeighborDistance2Iterator;
use rstar::{
    AABB, Envelope, PointDistance, RStarInsertionStrategy, RTree, RTreeNode, RTreeObject, RTreeParams,
    SelectionFunction,
};

use super::keys::{OrdF64, bitmap_from_ids};
use super::{
    Estimate, IndexAnswer, IndexKind, IndexPredicate, IndexStats, RtreeUpdate, SecondaryIndex, cost, distance,
};
use crate::value::Value;

/// Coordinates beyond this magnitude stay out of the tree (so that `f32` volumes stay finite).
const DOMAIN: f64 = 1e12;
/// Nearest-neighbour queries around a point beyond this magnitude are declined (the `f32`
/// walk could not bound their distances).
const KNN_CENTER: f64 = 1e15;
/// A loose box is this many of the entity's last steps wide on each side.
const LOOSE_STEPS: f64 = 4.0;
/// The widest loose box, in mean point spacings on each side.
const LOOSE_CAP_SPACINGS: f64 = 2.0;

/// Node sizes: wider than rstar's default (6), which measured faster for bulk loads, queries
/// and inserts at a million points. Under Miri they are the smallest rstar takes: an
/// insertion weighs every pair of a node's children, which takes Miri seconds at 32, and the
/// tests' few points still make trees of several levels.
pub(crate) struct Params;

impl RTreeParams for Params {
    const MIN_SIZE: usize = if cfg!(miri) { 2 } else { 10 };
    const MAX_SIZE: usize = if cfg!(miri) { 4 } else { 32 };
    const REINSERTION_COUNT: usize = if cfg!(miri) { 1 } else { 6 };
    type DefaultInsertionStrategy = RStarInsertionStrategy;
}

/// A box in tree coordinates.
type Bx<const D: usize> = AABB<[f32; D]>;

/// The largest `f32` not above `x`.
#[inline]
fn down(x: f64) -> f32 {
    let f = x as f32;
    if f as f64 > x { next_toward_zero_or_below(f) } else { f }
}

/// The smallest `f32` not below `x`.
#[inline]
fn up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { -next_toward_zero_or_below(-f) } else { f }
}

/// The next `f32` below `f` (`f` is not NaN and not `-inf`: it rounded from a larger value).
#[inline]
fn next_toward_zero_or_below(f: f32) -> f32 {
    if f == 0.0 {
        -f32::from_bits(1)
    } else if f > 0.0 {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f32::from_bits(f.to_bits() + 1)
    }
}

/// The box from `lo` to `hi`, rounded outward to `f32`.
#[inline]
fn outward<const D: usize>(lo: &[f64; D], hi: &[f64; D]) -> Bx<D> {
    AABB::from_corners(std::array::from_fn(|i| down(lo[i])), std::array::from_fn(|i| up(hi[i])))
}

/// Whether the exact point lies in the box.
#[inline]
fn contains<const D: usize>(b: &Bx<D>, p: &[f64; D]) -> bool {
    let (lo, hi) = (b.lower(), b.upper());
    (0..D).all(|i| lo[i] as f64 <= p[i] && p[i] <= hi[i] as f64)
}

fn widen<const D: usize>(p: [f32; D]) -> [f64; D] {
    p.map(|c| c as f64)
}

/// A tree element: an entity under a box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Elem<const D: usize> {
    env: Bx<D>,
    e: u32,
}

impl<const D: usize> RTreeObject for Elem<D> {
    type Envelope = Bx<D>;
    #[inline]
    fn envelope(&self) -> Self::Envelope {
        self.env
    }
}

impl<const D: usize> PointDistance for Elem<D> {
    /// The squared distance of the box: a lower bound of the entity's distance (see the
    /// module docs for the rounding allowance).
    #[inline]
    fn distance_2(&self, point: &[f32; D]) -> f32 {
        self.env.distance_2(point)
    }
}

/// Selects one entity's element for removal: descends only into nodes whose box contains
/// the element's box.
struct SelectElem<const D: usize>(Elem<D>);

impl<const D: usize> SelectionFunction<Elem<D>> for SelectElem<D> {
    fn should_unpack_parent(&self, envelope: &Bx<D>) -> bool {
        envelope.contains_envelope(&self.0.env)
    }
    fn should_unpack_leaf(&self, leaf: &Elem<D>) -> bool {
        leaf.e == self.0.e
    }
}

/// Work counters (tests and benchmarks read them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Moves absorbed by a loose box.
    pub in_place: u64,
    /// Elements removed and inserted again.
    pub reinserted: u64,
    /// Bulk loads of the whole tree.
    pub bulk_loads: u64,
}

/// An R-tree over `D` coordinates.
pub(crate) struct RtreeIndex<const D: usize> {
    mode: RtreeUpdate,
    tree: RTree<Elem<D>, Params>,
    pos: Vec<[f64; D]>,
    present: RoaringBitmap,
    loose: HashMap<u32, Bx<D>>,
    odd: RoaringBitmap,
    nans: RoaringBitmap,
    /// Updates (`Some(point)`) and removals (`None`) since the last flush, in call order.
    pending: Vec<(u32, Option<[f64; D]>)>,
    rebuild: bool,
    pub(crate) counters: Counters,
}

#[inline]
fn in_domain<const D: usize>(p: &[f64; D]) -> bool {
    p.iter().all(|c| c.abs() <= DOMAIN)
}

#[inline]
fn inside<const D: usize>(p: &[f64; D], lo: &[f64; D], hi: &[f64; D]) -> bool {
    (0..D).all(|i| lo[i] <= p[i] && p[i] <= hi[i])
}

fn log2(n: u64) -> f64 {
    ((n + 2) as f64).log2()
}

impl<const D: usize> RtreeIndex<D>
where
    [f32; D]: rstar::Point<Scalar = f32>,
{
    pub(crate) fn new(mode: RtreeUpdate) -> RtreeIndex<D> {
        RtreeIndex {
            mode,
            tree: RTree::new_with_params(),
            pos: Vec::new(),
            present: RoaringBitmap::new(),
            loose: HashMap::new(),
            odd: RoaringBitmap::new(),
            nans: RoaringBitmap::new(),
            pending: Vec::new(),
            rebuild: true,
            counters: Counters::default(),
        }
    }

    /// The predicate's coordinates as a point of this dimension.
    fn coords(v: &[f64]) -> Option<[f64; D]> {
        <[f64; D]>::try_from(v).ok()
    }

    /// The point a list of field values describes: `D` numbers, or one vector of size `D`.
    fn point(values: &[Value]) -> [f64; D] {
        let mut p = [f64::NAN; D];
        match values {
            [Value::Vec2(v)] => {
                for (i, c) in p.iter_mut().enumerate() {
                    *c = v.get(i).copied().unwrap_or(f64::NAN);
                }
            }
            [Value::Vec3(v)] => {
                for (i, c) in p.iter_mut().enumerate() {
                    *c = v.get(i).copied().unwrap_or(f64::NAN);
                }
            }
            _ => {
                for (i, c) in p.iter_mut().enumerate() {
                    *c = values.get(i).and_then(Value::as_f64).unwrap_or(f64::NAN);
                }
            }
        }
        p
    }

    fn box_of(&self, e: u32) -> Bx<D> {
        self.loose.get(&e).copied().unwrap_or_else(|| {
            let p = &self.pos[e as usize];
            outward(p, p)
        })
    }

    /// The exact position of a tree element's entity.
    #[inline]
    fn point_of(&self, el: &Elem<D>) -> [f64; D] {
        let lo = el.env.lower();
        if lo == el.env.upper() { widen(lo) } else { self.pos[el.e as usize] }
    }

    /// The widest loose box (half-width): twice the mean spacing of the points.
    fn loose_cap(&self) -> f64 {
        let n = self.tree.size();
        if n < 2 {
            return 0.0;
        }
        let env = self.tree.root().envelope();
        let (lo, hi) = (widen(env.lower()), widen(env.upper()));
        let ext: Vec<f64> = (0..D).map(|i| hi[i] - lo[i]).collect();
        let max = ext.iter().copied().fold(0.0, f64::max);
        if !(max > 0.0 && max.is_finite()) {
            return 0.0;
        }
        let vol: f64 = ext.iter().map(|e| e.max(max * 1e-3)).product();
        let spacing = (vol / n as f64).powf(1.0 / D as f64);
        if spacing.is_finite() { LOOSE_CAP_SPACINGS * spacing } else { 0.0 }
    }

    fn margin(old: &[f64; D], new: &[f64; D], cap: f64) -> f64 {
        let step = (0..D).map(|i| (new[i] - old[i]).abs()).fold(0.0, f64::max);
        if step.is_nan() || step <= 0.0 || step > cap {
            return 0.0;
        }
        (LOOSE_STEPS * step).min(cap)
    }

    fn set_pos(&mut self, e: u32, p: [f64; D]) {
        let i = e as usize;
        if self.pos.len() <= i {
            self.pos.resize(i + 1, [0.0; D]);
        }
        self.pos[i] = p;
    }

    /// Records `p` as the entity's position outside the tree (odd) or returns whether it
    /// belongs in the tree.
    fn place(&mut self, e: u32, p: [f64; D]) -> bool {
        self.present.insert(e);
        self.set_pos(e, p);
        if in_domain(&p) {
            return true;
        }
        self.odd.insert(e);
        if p.iter().any(|c| c.is_nan()) {
            self.nans.insert(e);
        }
        false
    }

    fn bulk_load(&mut self) {
        let in_tree = &self.present - &self.odd;
        let elems: Vec<Elem<D>> = in_tree.iter().map(|e| Elem { env: self.box_of(e), e }).collect();
        self.tree = RTree::bulk_load_with_params(elems);
        self.counters.bulk_loads += 1;
    }

    /// The pending operations, the last one per entity, by entity.
    fn take_pending(&mut self) -> Vec<(u32, Option<[f64; D]>)> {
        let mut ops = std::mem::take(&mut self.pending);
        ops.sort_by_key(|(e, _)| *e); // stable: the last call for an entity stays last
        let mut last: Vec<(u32, Option<[f64; D]>)> = Vec::with_capacity(ops.len());
        for op in ops {
            match last.last_mut() {
                Some(prev) if prev.0 == op.0 => *prev = op,
                _ => last.push(op),
            }
        }
        last
    }

    fn flush_all(&mut self) {
        for (e, op) in self.take_pending() {
            self.odd.remove(e);
            self.nans.remove(e);
            self.loose.remove(&e);
            match op {
                Some(p) => {
                    self.place(e, p);
                }
                None => {
                    self.present.remove(e);
                }
            }
        }
        self.bulk_load();
        self.rebuild = false;
    }

    fn flush_incremental(&mut self) {
        let ops = self.take_pending();
        let cap = if self.mode == RtreeUpdate::Loose { self.loose_cap() } else { 0.0 };
        let mut out: Vec<Elem<D>> = Vec::new();
        let mut ins: Vec<Elem<D>> = Vec::new();
        for (e, op) in ops {
            let Some(p) = op else {
                if self.present.remove(e) {
                    if self.odd.remove(e) {
                        self.nans.remove(e);
                    } else {
                        out.push(Elem { env: self.box_of(e), e });
                        self.loose.remove(&e);
                    }
                }
                continue;
            };
            let mut margin = 0.0;
            if self.present.contains(e) {
                let old = self.pos[e as usize];
                if self.odd.contains(e) {
                    self.odd.remove(e);
                    self.nans.remove(e);
                } else {
                    if old == p {
                        continue;
                    }
                    let bx = self.box_of(e);
                    if self.mode == RtreeUpdate::Loose && in_domain(&p) && contains(&bx, &p) {
                        self.pos[e as usize] = p;
                        self.counters.in_place += 1;
                        continue;
                    }
                    out.push(Elem { env: bx, e });
                    self.loose.remove(&e);
                    if in_domain(&p) {
                        margin = Self::margin(&old, &p, cap);
                    }
                }
            }
            if self.place(e, p) {
                let env = if margin > 0.0 {
                    let lo: [f64; D] = std::array::from_fn(|i| p[i] - margin);
                    let hi: [f64; D] = std::array::from_fn(|i| p[i] + margin);
                    let bx = outward(&lo, &hi);
                    self.loose.insert(e, bx);
                    bx
                } else {
                    outward(&p, &p)
                };
                ins.push(Elem { env, e });
            }
        }
        let ops = out.len() + ins.len();
        if ops > self.tree.size() / 8 + 64 {
            self.bulk_load();
            return;
        }
        self.counters.reinserted += out.len() as u64;
        let mut lost = false;
        for el in out {
            lost |= self.tree.remove_with_selection_function(SelectElem(el)).is_none();
        }
        for el in ins {
            self.tree.insert(el);
        }
        if lost {
            // Never answer from a tree that lost track of an element.
            self.bulk_load();
        }
    }

    /// Every entity within `r` of `c` (`<=` when `inclusive`, else `<`), with its distance.
    fn ball(&self, c: &[f64; D], r: f64, inclusive: bool) -> Vec<(f64, u32)> {
        let mut out: Vec<(f64, u32)> = Vec::new();
        if r.is_nan() || r < 0.0 {
            return out;
        }
        let hit = |d: f64| if inclusive { d <= r } else { d < r };
        // Candidates: a box wider than the ball by far more than rounding (and never below
        // the distance whose square underflows to zero).
        let h = |i: usize| (r * (1.0 + 1e-9) + c[i].abs() * 1e-12).max(1e-150);
        let lo: [f64; D] = std::array::from_fn(|i| c[i] - h(i));
        let hi: [f64; D] = std::array::from_fn(|i| c[i] + h(i));
        let _ = self.tree.locate_in_envelope_intersecting_int(outward(&lo, &hi), |el| {
            let d = distance(&self.point_of(el), c);
            if hit(d) {
                out.push((d, el.e));
            }
            ControlFlow::<()>::Continue(())
        });
        for e in self.odd.iter() {
            let d = distance(&self.pos[e as usize], c);
            if hit(d) {
                out.push((d, e));
            }
        }
        out
    }

    fn radius_set(&self, c: &[f64; D], r: f64, inclusive: bool) -> RoaringBitmap {
        to_bitmap(self.ball(c, r, inclusive).into_iter().map(|(_, e)| e).collect())
    }

    /// The first phase of a nearest-neighbour stream: a ball around `c` expected to hold about
    /// `2k` entities (from the mean density), doubled until it holds `k` or covers the tree;
    /// its entities sorted by (distance, index), and its radius. `None` when the density says
    /// nothing (an empty or flat tree).
    fn knn_ball(&self, c: &[f64; D], k: usize) -> Option<(Vec<(f64, u32)>, f64)> {
        let n = self.tree.size();
        if n == 0 || k == 0 {
            return None;
        }
        let env = self.tree.root().envelope();
        let (lo, hi) = (widen(env.lower()), widen(env.upper()));
        let vol: f64 = (0..D).map(|i| hi[i] - lo[i]).product();
        let unit = if D == 2 { std::f64::consts::PI } else { 4.0 / 3.0 * std::f64::consts::PI };
        let mut h = ((2 * k + 4) as f64 * vol / (n as f64 * unit)).powf(1.0 / D as f64);
        if !(h.is_finite() && h > 0.0) {
            return None;
        }
        // The ball covers the whole tree beyond this radius.
        let far = f64::sqrt((0..D).map(|i| (c[i] - lo[i]).abs().max((c[i] - hi[i]).abs()).powi(2)).sum());
        loop {
            let mut found = self.ball(c, h, true);
            if found.len() >= k || h >= far {
                found.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                return Some((found, h));
            }
            h *= 2.0;
        }
    }

    fn box_set(&self, lo: &[f64; D], hi: &[f64; D]) -> RoaringBitmap {
        let mut ids: Vec<u32> = Vec::new();
        if !(0..D).all(|i| lo[i] <= hi[i]) {
            return RoaringBitmap::new();
        }
        let _ = self.tree.locate_in_envelope_intersecting_int(outward(lo, hi), |el| {
            if inside(&self.point_of(el), lo, hi) {
                ids.push(el.e);
            }
            ControlFlow::<()>::Continue(())
        });
        for e in self.odd.iter() {
            if inside(&self.pos[e as usize], lo, hi) {
                ids.push(e);
            }
        }
        to_bitmap(ids)
    }

    /// Estimated entities in a box, assuming uniform density over the tree's bounds.
    fn rows_in_box(&self, lo: &[f64; D], hi: &[f64; D]) -> u64 {
        let n = self.tree.size() as f64;
        if n == 0.0 {
            return self.odd.len();
        }
        let env = self.tree.root().envelope();
        let (rlo, rhi) = (widen(env.lower()), widen(env.upper()));
        let mut frac = 1.0;
        for i in 0..D {
            let ext = rhi[i] - rlo[i];
            let overlap = hi[i].min(rhi[i]) - lo[i].max(rlo[i]);
            frac *= if ext > 0.0 {
                (overlap / ext).clamp(0.0, 1.0)
            } else if lo[i] <= rlo[i] && rlo[i] <= hi[i] {
                1.0
            } else {
                0.0
            };
        }
        if frac.is_nan() {
            frac = 1.0;
        }
        (n * frac).round() as u64
    }

    /// Whether a predicate is answered: `Some(())` for the shapes and values this index takes.
    fn accepts(&self, pred: &IndexPredicate) -> Option<Estimate> {
        let n = self.present.len();
        let base = cost::DESCEND * log2(n);
        let odd = self.odd.len() as f64 * cost::CANDIDATE;
        match pred {
            IndexPredicate::Present => {
                Some(Estimate { rows: n, exact: true, cost: cost::DESCEND + n as f64 * cost::BITMAP_BIT })
            }
            IndexPredicate::WithinRadius { center, radius, .. } => {
                let c = Self::coords(center)?;
                if !c.iter().all(|x| x.is_finite()) || *radius == f64::INFINITY {
                    return None;
                }
                if radius.is_nan() || *radius < 0.0 {
                    return Some(Estimate { rows: 0, exact: true, cost: 1.0 });
                }
                let lo: [f64; D] = std::array::from_fn(|i| c[i] - radius);
                let hi: [f64; D] = std::array::from_fn(|i| c[i] + radius);
                let in_box = self.rows_in_box(&lo, &hi);
                let ball = if D == 2 { std::f64::consts::PI / 4.0 } else { std::f64::consts::PI / 6.0 };
                let rows = (in_box as f64 * ball).round() as u64;
                Some(Estimate { rows, exact: false, cost: base + in_box as f64 * cost::CANDIDATE + odd })
            }
            IndexPredicate::InsideBox { lo, hi } => {
                let (lo, hi) = (Self::coords(lo)?, Self::coords(hi)?);
                if !(0..D).all(|i| lo[i] <= hi[i]) {
                    return Some(Estimate { rows: 0, exact: true, cost: 1.0 });
                }
                let rows = self.rows_in_box(&lo, &hi);
                Some(Estimate { rows, exact: false, cost: base + rows as f64 * cost::CANDIDATE + odd })
            }
            IndexPredicate::Nearest { point, k } => {
                let c = Self::coords(point)?;
                if !c.iter().all(|x| x.abs() <= KNN_CENTER) || !self.nans.is_empty() {
                    return None;
                }
                let rows = (*k as u64).min(n);
                Some(Estimate { rows, exact: true, cost: base + rows as f64 * 2.0 * cost::CANDIDATE + odd })
            }
            _ => None,
        }
    }
}

fn to_bitmap(ids: Vec<u32>) -> RoaringBitmap {
    bitmap_from_ids(ids)
}

/// The nearest-neighbour stream (see the module docs for why it is exact): first the
/// entities of a ball expected to hold about `2k` (a box query, sorted); past them, if the
/// consumer wants more, rstar's best-first walk, skipping what the ball already gave.
struct Knn<'a, const D: usize> {
    index: &'a RtreeIndex<D>,
    center: [f64; D],
    /// The center in tree coordinates, and how far it is from the exact center.
    center32: [f32; D],
    offset: f64,
    ball: std::vec::IntoIter<(f64, u32)>,
    /// Radius of the ball: the walk skips entities at this distance or nearer.
    within: f64,
    tree: Option<NearestNeighborDistance2Iterator<'a, Elem<D>>>,
    next: Option<(&'a Elem<D>, f32)>,
    tree_done: bool,
    heap: BinaryHeap<Reverse<(OrdF64, u32)>>,
}

/// A distance is never NaN here (finite center, no NaN coordinate); be total anyway.
fn dist_key(d: f64) -> OrdF64 {
    OrdF64::new_or_max(d)
}

impl<'a, const D: usize> Knn<'a, D>
where
    [f32; D]: rstar::Point<Scalar = f32>,
{
    fn new(index: &'a RtreeIndex<D>, center: [f64; D], k: usize) -> Knn<'a, D> {
        let (ball, within) = index.knn_ball(&center, k).unwrap_or((Vec::new(), f64::NEG_INFINITY));
        let center32 = center.map(|c| c as f32);
        Knn {
            index,
            center,
            center32,
            offset: distance(&widen(center32), &center) * (1.0 + 1e-9),
            ball: ball.into_iter(),
            within,
            tree: None,
            next: None,
            tree_done: false,
            heap: BinaryHeap::new(),
        }
    }

    fn start_walk(&mut self) -> &mut NearestNeighborDistance2Iterator<'a, Elem<D>> {
        let (index, center, center32, within) = (self.index, self.center, self.center32, self.within);
        if self.tree.is_none() {
            self.heap = index
                .odd
                .iter()
                .map(|e| (distance(&index.pos[e as usize], &center), e))
                .filter(|(d, _)| *d > within)
                .map(|(d, e)| Reverse((dist_key(d), e)))
                .collect();
        }
        self.tree.get_or_insert_with(|| index.tree.nearest_neighbor_iter_with_distance_2(center32))
    }
}

impl<const D: usize> Iterator for Knn<'_, D>
where
    [f32; D]: rstar::Point<Scalar = f32>,
{
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if let Some((_, e)) = self.ball.next() {
            return Some(e);
        }
        loop {
            if self.next.is_none() && !self.tree_done {
                self.next = self.start_walk().next();
                self.tree_done = self.next.is_none();
            }
            let bound = self.next.map(|(_, lb2)| (lb2 as f64).sqrt() * (1.0 - 1e-6) - self.offset - 1e-20);
            if let Some(Reverse((d, e))) = self.heap.peek().copied()
                && bound.is_none_or(|b| d.get() < b)
            {
                self.heap.pop();
                return Some(e);
            }
            let (el, _) = self.next.take()?;
            let d = distance(&self.index.point_of(el), &self.center);
            if d > self.within {
                self.heap.push(Reverse((dist_key(d), el.e)));
            }
        }
    }
}

impl<const D: usize> SecondaryIndex for RtreeIndex<D>
where
    [f32; D]: rstar::Point<Scalar = f32>,
{
    fn kind(&self) -> IndexKind {
        IndexKind::Rtree
    }

    fn estimate(&self, pred: &IndexPredicate) -> Option<Estimate> {
        self.accepts(pred)
    }

    fn answer(&self, pred: &IndexPredicate) -> Option<IndexAnswer<'_>> {
        self.accepts(pred)?;
        Some(match pred {
            IndexPredicate::Present => IndexAnswer::Set(self.present.clone()),
            IndexPredicate::WithinRadius { center, radius, inclusive } => {
                IndexAnswer::Set(self.radius_set(&Self::coords(center)?, *radius, *inclusive))
            }
            IndexPredicate::InsideBox { lo, hi } => {
                IndexAnswer::Set(self.box_set(&Self::coords(lo)?, &Self::coords(hi)?))
            }
            IndexPredicate::Nearest { point, k } => {
                IndexAnswer::Ordered(Box::new(Knn::new(self, Self::coords(point)?, *k)))
            }
            _ => return None,
        })
    }

    fn update(&mut self, entity: u32, values: &[Value]) {
        self.pending.push((entity, Some(Self::point(values))));
    }

    fn remove(&mut self, entity: u32) {
        self.pending.push((entity, None));
    }

    fn flush(&mut self) {
        if self.rebuild || (self.mode == RtreeUpdate::Rebuild && !self.pending.is_empty()) {
            self.flush_all();
        } else if !self.pending.is_empty() {
            self.flush_incremental();
        }
    }

    fn clear(&mut self) {
        let (mode, counters) = (self.mode, self.counters);
        *self = RtreeIndex::new(mode);
        self.counters = counters;
    }

    fn entries(&self) -> u64 {
        self.present.len()
    }

    fn stats(&self) -> IndexStats {
        // Leaves live inside their parents' child vectors; parents add about 1/(fanout-1).
        let node = std::mem::size_of::<RTreeNode<Elem<D>>>();
        let tree = self.tree.size() * node * 8 / 7;
        let loose = self.loose.capacity() * (std::mem::size_of::<(u32, Bx<D>)>() + 8);
        let bytes = tree
            + self.pos.capacity() * std::mem::size_of::<[f64; D]>()
            + loose
            + self.present.serialized_size()
            + self.odd.serialized_size()
            + self.nans.serialized_size();
        IndexStats { entries: self.present.len(), memory_bytes: bytes as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::Rng as _;
    use proptest::test_runner::{RngAlgorithm, TestRng};

    /// proptest's seeded generator, so a failure reproduces.
    fn seeded(seed: u8) -> TestRng {
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32])
    }

    /// The draws these tests make.
    trait Draw {
        fn next(&mut self) -> u64;
        /// A number in `0..scale`.
        fn f(&mut self, scale: f64) -> f64;
    }
    impl Draw for TestRng {
        fn next(&mut self) -> u64 {
            self.next_u64()
        }
        fn f(&mut self, scale: f64) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * scale
        }
    }

    fn brute_radius(pts: &HashMap<u32, [f64; 3]>, c: &[f64; 3], r: f64, inclusive: bool) -> Vec<u32> {
        let mut v: Vec<u32> = pts
            .iter()
            .filter(|(_, p)| {
                let d = distance(*p, c);
                if inclusive { d <= r } else { d < r }
            })
            .map(|(e, _)| *e)
            .collect();
        v.sort_unstable();
        v
    }

    fn brute_knn(pts: &HashMap<u32, [f64; 3]>, c: &[f64; 3], k: usize) -> Vec<u32> {
        let mut v: Vec<(OrdF64, u32)> = pts.iter().map(|(e, p)| (dist_key(distance(p, c)), *e)).collect();
        v.sort_unstable();
        v.into_iter().take(k).map(|(_, e)| e).collect()
    }

    fn check(t: &RtreeIndex<3>, pts: &HashMap<u32, [f64; 3]>, rng: &mut TestRng) {
        for _ in 0..crate::test_size(20, 1) {
            let c = [rng.f(100.0), rng.f(100.0), rng.f(100.0)];
            let r = rng.f(20.0);
            let inclusive = rng.next().is_multiple_of(2);
            let got = t.answer(&IndexPredicate::WithinRadius { center: c.to_vec(), radius: r, inclusive }).unwrap();
            assert_eq!(got.into_vec(None), brute_radius(pts, &c, r, inclusive));
            let k = (rng.next() % 12) as usize;
            let got = t.answer(&IndexPredicate::Nearest { point: c.to_vec(), k }).unwrap().into_vec(Some(k));
            assert_eq!(got, brute_knn(pts, &c, k));
            // Pulling past the hint continues the order (the walk after the ball).
            let more = k * 3 + 40;
            let got = t.answer(&IndexPredicate::Nearest { point: c.to_vec(), k }).unwrap().into_vec(Some(more));
            assert_eq!(got, brute_knn(pts, &c, more));
            let lo = [rng.f(100.0), rng.f(100.0), rng.f(100.0)];
            let hi = [lo[0] + rng.f(30.0), lo[1] + rng.f(30.0), lo[2] + rng.f(30.0)];
            let got = t.answer(&IndexPredicate::InsideBox { lo: lo.to_vec(), hi: hi.to_vec() }).unwrap().into_vec(None);
            let mut want: Vec<u32> = pts.iter().filter(|(_, p)| inside(p, &lo, &hi)).map(|(e, _)| *e).collect();
            want.sort_unstable();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn moving_points_stay_exact_in_every_mode() {
        for mode in [RtreeUpdate::Loose, RtreeUpdate::PerRow, RtreeUpdate::Rebuild] {
            let mut rng = seeded(7);
            let mut t = RtreeIndex::<3>::new(mode);
            let mut pts = HashMap::new();
            let n = crate::test_size(2000u32, 16);
            for e in 0..n {
                // Grid-snapped coordinates make ties common.
                let p = [(rng.f(100.0)).round(), (rng.f(100.0)).round(), (rng.f(10.0)).round()];
                t.update(e, &[Value::Float(p[0]), Value::Float(p[1]), Value::Int(p[2] as i64)]);
                pts.insert(e, p);
            }
            t.flush();
            check(&t, &pts, &mut rng);
            for _frame in 0..crate::test_size(15, 3) {
                for _ in 0..crate::test_size(150, 8) {
                    // A few ids past the first `n`: new points.
                    let e = (rng.next() % u64::from(n + n / 20)) as u32;
                    match rng.next() % 10 {
                        0 => {
                            t.remove(e);
                            pts.remove(&e);
                        }
                        _ => {
                            let old = pts.get(&e).copied().unwrap_or([50.0; 3]);
                            let p = [old[0] + rng.f(2.0) - 1.0, old[1] + rng.f(2.0) - 1.0, old[2] + rng.f(0.5)];
                            t.update(e, &[Value::Vec3(p)]);
                            pts.insert(e, p);
                        }
                    }
                }
                t.flush();
                check(&t, &pts, &mut rng);
            }
            assert_eq!(t.stats().entries, pts.len() as u64);
            if mode == RtreeUpdate::Loose {
                assert!(t.counters.in_place > 0, "{:?}", t.counters);
            }
        }
    }

    #[test]
    fn rounding_outward_to_f32() {
        for x in [0.1, -0.1, 1.0 / 3.0, -1e-40, 1e-46, 0.0, -0.0, 16777217.0, -16777217.0, 1e300, -1e300, f64::INFINITY]
        {
            let (d, u) = (down(x), up(x));
            assert!((d as f64) <= x && x <= (u as f64), "{x}: {d} {u}");
            assert!(d <= u, "{x}");
            if (x as f32) as f64 == x {
                assert_eq!((d, u), (x as f32, x as f32));
            }
        }
        let b: Bx<2> = outward(&[0.1, -0.3], &[0.1, 0.7]);
        assert!(contains(&b, &[0.1, -0.3]) && contains(&b, &[0.1, 0.7]) && !contains(&b, &[0.2, 0.0]));
    }

    #[test]
    fn f64_coordinates_and_far_walks() {
        // Thirds are not f32 values: every box is one ulp wide and every test reads `pos`.
        let mut t = RtreeIndex::<2>::new(RtreeUpdate::Loose);
        let mut pts = HashMap::new();
        let mut rng = seeded(5);
        let (n, far) = (crate::test_size(600u32, 60), crate::test_size(200, 20));
        for e in 0..n {
            let p = [(rng.next() % 61) as f64 / 3.0 - 10.0, (rng.next() % 61) as f64 / 3.0 - 10.0];
            t.update(e, &[Value::Float(p[0]), Value::Float(p[1])]);
            pts.insert(e, [p[0], p[1], 0.0]);
        }
        t.flush();
        for _ in 0..crate::test_size(30, 3) {
            let c = [(rng.next() % 61) as f64 / 3.0 - 10.0, (rng.next() % 61) as f64 / 3.0 - 10.0];
            let r = (rng.next() % 20) as f64 / 3.0;
            let got =
                t.answer(&IndexPredicate::WithinRadius { center: c.to_vec(), radius: r, inclusive: true }).unwrap();
            assert_eq!(got.into_vec(None), brute_radius(&pts, &[c[0], c[1], 0.0], r, true));
            let got = t.answer(&IndexPredicate::Nearest { point: c.to_vec(), k: 3 }).unwrap().into_vec(Some(far));
            assert_eq!(got, brute_knn(&pts, &[c[0], c[1], 0.0], far));
        }
    }

    #[test]
    fn odd_points_and_declines() {
        let mut t = RtreeIndex::<2>::new(RtreeUpdate::Loose);
        t.update(0, &[Value::Vec2([0.0, 0.0])]);
        t.update(1, &[Value::Vec2([f64::INFINITY, 0.0])]);
        t.update(2, &[Value::Vec2([1e200, 0.0])]);
        t.update(3, &[Value::Vec2([3.0, 4.0])]);
        t.flush();
        let knn = IndexPredicate::Nearest { point: vec![0.0, 0.0], k: 4 };
        assert_eq!(t.answer(&knn).unwrap().into_vec(None), [0, 3, 1, 2]);
        let within = |r: f64, inclusive| IndexPredicate::WithinRadius { center: vec![0.0, 0.0], radius: r, inclusive };
        assert_eq!(t.answer(&within(5.0, true)).unwrap().into_vec(None), [0, 3]);
        assert_eq!(t.answer(&within(5.0, false)).unwrap().into_vec(None), [0]);
        assert_eq!(t.answer(&within(f64::NAN, true)).unwrap().into_vec(None), Vec::<u32>::new());
        assert_eq!(t.answer(&within(-1.0, true)).unwrap().into_vec(None), Vec::<u32>::new());
        assert!(t.estimate(&within(f64::INFINITY, true)).is_none());
        assert!(
            t.estimate(&IndexPredicate::WithinRadius { center: vec![0.0; 3], radius: 1.0, inclusive: true }).is_none()
        );
        let b = IndexPredicate::InsideBox { lo: vec![0.0, -1.0], hi: vec![f64::INFINITY, 1.0] };
        assert_eq!(t.answer(&b).unwrap().into_vec(None), [0, 1, 2]);
        let b = IndexPredicate::InsideBox { lo: vec![1.0, 0.0], hi: vec![0.0, 0.0] };
        assert_eq!(t.answer(&b).unwrap().into_vec(None), Vec::<u32>::new());
        t.update(4, &[Value::Vec2([f64::NAN, 0.0])]);
        t.flush();
        assert!(t.estimate(&knn).is_none());
        assert_eq!(t.answer(&within(5.0, true)).unwrap().into_vec(None), [0, 3]);
        t.remove(4);
        t.flush();
        assert!(t.estimate(&knn).is_some());
        assert_eq!(t.stats().entries, 4);
    }
}
