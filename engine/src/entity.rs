//! Generational entity ids and the allocator that hands them out.
//!
//! An [`Entity`] is a `u32` index into the world's entity table plus a `u32` generation.
//! Despawning bumps the generation and puts the index on a free list, so a stale handle never
//! reaches another entity's data. An index whose generation would overflow is retired instead.

use std::fmt;
use std::str::FromStr;

/// A handle to an entity: an index and the generation it was issued with.
///
/// Prints as `<index>v<generation>` (`12v0`), and parses from the same form.
///
/// ```
/// use ecsdb_engine::Entity;
/// let e: Entity = "12v3".parse().unwrap();
/// assert_eq!((e.index(), e.generation()), (12, 3));
/// assert_eq!(e.to_string(), "12v3");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(C)]
pub struct Entity {
    // Field order gives `Ord` the language's tie rule: index first, then generation.
    index: u32,
    generation: u32,
}

impl Entity {
    /// The null entity: never issued, the zero value of `entity` fields.
    pub const NULL: Entity = Entity { index: u32::MAX, generation: u32::MAX };

    /// An entity handle from its parts. It may or may not refer to a live entity.
    pub const fn from_parts(index: u32, generation: u32) -> Entity {
        Entity { index, generation }
    }

    /// The slot in the entity table.
    #[inline]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many times the slot was reused before this handle was issued.
    #[inline]
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// Whether this is [`Entity::NULL`].
    pub const fn is_null(self) -> bool {
        self.index == u32::MAX && self.generation == u32::MAX
    }

    /// The 64-bit form: generation in the high half, index in the low half.
    pub const fn to_bits(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// Inverse of [`Entity::to_bits`].
    pub const fn from_bits(bits: u64) -> Entity {
        Entity { index: bits as u32, generation: (bits >> 32) as u32 }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() { f.write_str("null") } else { write!(f, "{}v{}", self.index, self.generation) }
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The text was not of the form `<index>v<generation>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid entity '{0}': expected <index>v<generation>, like 12v0")]
pub struct ParseEntityError(pub String);

impl Entity {
    /// Reads entity text, `<index>v<generation>` (`12v0`), from its bytes: the one parser of
    /// entity text, behind [`FromStr`] and every reader of ids (the query language's
    /// literals, imports, tools). One pass, without the general integer parser: ids are most
    /// of what an import reads. Each number is 1 to 10 ASCII digits and fits in `u32`; the
    /// index is not `u32::MAX` (the null entity's).
    ///
    /// ```
    /// use ecsdb_engine::Entity;
    /// assert_eq!(Entity::parse_ascii(b"12v3"), Some(Entity::from_parts(12, 3)));
    /// assert_eq!(Entity::parse_ascii(b"12V3"), None);
    /// assert_eq!(Entity::parse_ascii(b"4294967296v0"), None);
    /// ```
    pub fn parse_ascii(text: &[u8]) -> Option<Entity> {
        /// The number at the start of `b` (1 to 10 digits, within u32) and the bytes after it.
        fn number(b: &[u8]) -> Option<(u32, &[u8])> {
            let mut v: u64 = 0;
            let mut n = 0;
            while let Some(d) = b.get(n).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
                v = v * 10 + d as u64;
                n += 1;
                if n > 10 {
                    return None;
                }
            }
            (n > 0).then_some(())?;
            Some((u32::try_from(v).ok()?, &b[n..]))
        }
        let (index, rest) = number(text)?;
        let (generation, rest) = number(rest.strip_prefix(b"v")?)?;
        (rest.is_empty() && index != u32::MAX).then_some(Entity { index, generation })
    }
}

impl FromStr for Entity {
    type Err = ParseEntityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Entity::parse_ascii(s.as_bytes()).ok_or_else(|| ParseEntityError(s.to_string()))
    }
}

/// Where a live entity's table row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityLocation {
    /// The archetype table.
    pub table: u32,
    /// The row within it.
    pub row: u32,
}

impl EntityLocation {
    const DEAD: EntityLocation = EntityLocation { table: u32::MAX, row: u32::MAX };
    /// Snapshot loading: a live slot whose table row is not known yet. Never a real location
    /// (no world has `u32::MAX` tables), and never left in a loaded world.
    const UNPLACED: EntityLocation = EntityLocation { table: u32::MAX, row: 0 };
    /// Snapshot loading: a dead slot already named by the free list.
    const FREED: EntityLocation = EntityLocation { table: u32::MAX, row: 1 };
}

/// Why a loaded table row cannot be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misplaced {
    /// The allocator has no live entity of that index and generation.
    NotAlive,
    /// The entity already has a row.
    Twice,
}

/// One slot of the entity table: 12 bytes per index ever issued.
#[derive(Clone, Copy, Debug)]
struct EntityMeta {
    generation: u32,
    location: EntityLocation,
}

/// The entity allocator: generations, locations, the free list and retired indices.
#[derive(Clone, Debug, Default)]
pub struct Entities {
    meta: Vec<EntityMeta>,
    free: Vec<u32>,
    retired: u32,
    alive: u32,
}

/// The allocator's state in plain form, for snapshots.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntitiesState {
    /// Per index: its current generation and whether it is alive.
    pub slots: Vec<(u32, bool)>,
    /// The free list, in the order indices will be reused (last first).
    pub free: Vec<u32>,
}

/// Largest index ever issued plus one; `u32::MAX` is reserved for [`Entity::NULL`].
const MAX_INDICES: usize = u32::MAX as usize;

impl Entities {
    /// Issues a new entity (recycling a free index when there is one). The caller sets its
    /// location immediately.
    pub(crate) fn alloc(&mut self) -> Entity {
        self.alive += 1;
        if let Some(index) = self.free.pop() {
            let meta = &mut self.meta[index as usize];
            return Entity { index, generation: meta.generation };
        }
        assert!(self.meta.len() < MAX_INDICES, "entity index space exhausted");
        let index = self.meta.len() as u32;
        self.meta.push(EntityMeta { generation: 0, location: EntityLocation::DEAD });
        Entity { index, generation: 0 }
    }

    /// Grows this allocator towards `src`'s slot count by at most `most` slots, each with
    /// `src`'s generation and no location: a mirror places the live ones as it copies their
    /// rows ([`Entities::place_mirrored`]). True once it has as many slots as `src`.
    pub(crate) fn grow_slots_from(&mut self, src: &Entities, most: usize) -> bool {
        let (from, to) = (self.meta.len(), src.meta.len());
        if from >= to {
            return true;
        }
        // Room for all of them at once: growing chunk by chunk would copy the slots again at
        // each doubling.
        self.meta.reserve(to - from);
        let upto = to.min(from + most);
        let dead = |m: &EntityMeta| EntityMeta { generation: m.generation, location: EntityLocation::DEAD };
        self.meta.extend(src.meta[from..upto].iter().map(dead));
        upto == to
    }

    /// Records that live entity `e` is at `location`: a mirror copied its row there.
    #[inline]
    pub(crate) fn place_mirrored(&mut self, e: Entity, location: EntityLocation) {
        self.meta[e.index as usize] = EntityMeta { generation: e.generation, location };
    }

    /// Copies `src`'s slot `index` (generation and location, a live entity in the same row of
    /// table `table_of[t]` here as of table `t` there): for an entity whose row a mirror took
    /// away, which is now elsewhere or gone.
    pub(crate) fn copy_slot_from(&mut self, src: &Entities, index: u32, table_of: &[u32]) {
        let m = src.meta[index as usize];
        let location = match m.location {
            EntityLocation::DEAD => EntityLocation::DEAD,
            l => EntityLocation { table: table_of[l.table as usize], row: l.row },
        };
        self.meta[index as usize] = EntityMeta { generation: m.generation, location };
    }

    /// Takes `src`'s slot count, free list and counts: the last step of a mirror, once every
    /// slot it placed or copied holds what `src`'s does.
    pub(crate) fn finish_mirror_from(&mut self, src: &Entities) {
        self.meta.truncate(src.meta.len());
        self.free.clone_from(&src.free);
        self.retired = src.retired;
        self.alive = src.alive;
    }

    /// Reserves capacity for `additional` more entities.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.meta.reserve(additional.saturating_sub(self.free.len()));
    }

    /// Frees a live entity's index: bumps the generation, or retires the index when the
    /// generation is exhausted.
    pub(crate) fn free(&mut self, e: Entity) {
        let meta = &mut self.meta[e.index as usize];
        debug_assert_eq!(meta.generation, e.generation);
        meta.location = EntityLocation::DEAD;
        self.alive -= 1;
        match meta.generation.checked_add(1) {
            Some(g) => {
                meta.generation = g;
                self.free.push(e.index);
            }
            None => self.retired += 1,
        }
    }

    /// The location of a live entity, or `None` when the handle is stale or was never issued.
    #[inline]
    pub fn location(&self, e: Entity) -> Option<EntityLocation> {
        let meta = self.meta.get(e.index as usize)?;
        (meta.generation == e.generation && meta.location != EntityLocation::DEAD).then_some(meta.location)
    }

    #[inline]
    pub(crate) fn set_location(&mut self, index: u32, location: EntityLocation) {
        self.meta[index as usize].location = location;
    }

    /// Whether the handle refers to a live entity.
    #[inline]
    pub fn contains(&self, e: Entity) -> bool {
        self.location(e).is_some()
    }

    /// Where the live entity occupying `index` is stored, if one does: an index answer's
    /// rows, located with one read.
    #[inline]
    pub fn location_at(&self, index: u32) -> Option<EntityLocation> {
        let meta = self.meta.get(index as usize)?;
        (meta.location != EntityLocation::DEAD).then_some(meta.location)
    }

    /// The live entity currently occupying `index`, if any.
    pub fn resolve(&self, index: u32) -> Option<Entity> {
        let meta = self.meta.get(index as usize)?;
        (meta.location != EntityLocation::DEAD).then_some(Entity { index, generation: meta.generation })
    }

    /// Number of live entities.
    pub fn len(&self) -> usize {
        self.alive as usize
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.alive == 0
    }

    /// Number of indices ever issued (live, free and retired).
    pub fn capacity_used(&self) -> usize {
        self.meta.len()
    }

    /// Number of indices retired because their generation was exhausted.
    pub fn retired(&self) -> usize {
        self.retired as usize
    }

    /// Bytes used by the allocator itself.
    pub fn memory_bytes(&self) -> usize {
        self.meta.capacity() * std::mem::size_of::<EntityMeta>() + self.free.capacity() * 4
    }

    /// Plain state for snapshots.
    pub fn state(&self) -> EntitiesState {
        EntitiesState {
            slots: self.meta.iter().map(|m| (m.generation, m.location != EntityLocation::DEAD)).collect(),
            free: self.free.clone(),
        }
    }

    /// An empty allocator for snapshot loading, with room for `slots` indices. Fill it with
    /// [`Entities::push_loaded_slots`], [`Entities::set_loaded_free_list`] and
    /// [`Entities::place_loaded_rows`]; after an error, discard it.
    pub(crate) fn loading(slots: usize) -> Entities {
        Entities { meta: Vec::with_capacity(slots), free: Vec::new(), retired: 0, alive: 0 }
    }

    /// Appends indices `first..` with their generations (`u32` little-endian each) and live
    /// flags (bit `i` of `live` for index `i`, LSB first; missing bytes read as dead).
    /// The caller keeps the count of indices below `u32::MAX`.
    pub(crate) fn push_loaded_slots(&mut self, generations: &[u8], live: &[u8], first: usize) {
        let meta = |c: &[u8], is_live: bool| EntityMeta {
            generation: u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            location: if is_live { EntityLocation::UNPLACED } else { EntityLocation::DEAD },
        };
        let mut alive = 0u32;
        if first.is_multiple_of(8) {
            // Eight slots per live byte.
            self.meta.reserve(generations.len() / 4);
            for (k, g) in generations.chunks(32).enumerate() {
                let slots = (g.len() / 4) as u32;
                let mask = u8::MAX.checked_shr(8 - slots.min(8)).unwrap_or(0);
                let b = live.get(first / 8 + k).copied().unwrap_or(0) & mask;
                alive += b.count_ones();
                self.meta.extend(g.chunks_exact(4).enumerate().map(|(j, c)| meta(c, b >> j & 1 != 0)));
            }
        } else {
            let bit = |i: usize| live.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 != 0);
            for (k, c) in generations.chunks_exact(4).enumerate() {
                let is_live = bit(first + k);
                alive += is_live as u32;
                self.meta.push(meta(c, is_live));
            }
        }
        self.alive += alive;
    }

    /// Gives loaded live entities their table rows (`base_row..` of `table`): each live
    /// entity exactly once. On failure, the position in `rows` and why.
    pub(crate) fn place_loaded_rows(
        &mut self,
        rows: &[Entity],
        table: u32,
        base_row: u32,
    ) -> Result<(), (usize, Misplaced)> {
        let meta = &mut self.meta[..];
        for (i, e) in rows.iter().enumerate() {
            let Some(m) = meta.get_mut(e.index as usize).filter(|m| m.generation == e.generation) else {
                return Err((i, Misplaced::NotAlive));
            };
            if m.location != EntityLocation::UNPLACED {
                let why = if m.location == EntityLocation::DEAD { Misplaced::NotAlive } else { Misplaced::Twice };
                return Err((i, why));
            }
            m.location = EntityLocation { table, row: base_row + i as u32 };
        }
        Ok(())
    }

    /// Sets the free list (reused last first) once every slot is pushed: each index must be
    /// dead and listed once. Dead indices left out are retired.
    pub(crate) fn set_loaded_free_list(&mut self, free: Vec<u32>) -> Result<(), String> {
        for &i in &free {
            let slot = self.meta.get_mut(i as usize).ok_or("free index out of range")?;
            if slot.location != EntityLocation::DEAD {
                return Err(format!("free list names index {i} twice or a live index"));
            }
            slot.location = EntityLocation::FREED;
        }
        for &i in &free {
            self.meta[i as usize].location = EntityLocation::DEAD;
        }
        let dead = self.meta.len() as u32 - self.alive;
        self.retired = dead - free.len() as u32;
        self.free = free;
        Ok(())
    }

    /// Per index ever issued: its generation (`u32` little-endian) and whether it is alive
    /// (bit `i % 8` of byte `i / 8`), as snapshots store them.
    pub(crate) fn snapshot_slots(&self) -> (Vec<u8>, Vec<u8>) {
        let mut gens = vec![0u8; self.meta.len() * 4];
        for (g, m) in gens.chunks_exact_mut(4).zip(&self.meta) {
            g.copy_from_slice(&m.generation.to_le_bytes());
        }
        // A byte per 8 slots, assembled in a register; `DEAD` is the one location whose
        // table and row are both `u32::MAX`.
        let byte = |c: &[EntityMeta]| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (j, m)| b | (((m.location.table & m.location.row) != u32::MAX) as u8) << j)
        };
        let whole = self.meta.chunks_exact(8);
        let rest = whole.remainder();
        let mut live: Vec<u8> = whole.map(byte).collect();
        if !rest.is_empty() {
            live.push(byte(rest));
        }
        (gens, live)
    }

    /// The generation index `index` has now (or will be reissued with); `u32::MAX` for an
    /// index never issued.
    pub(crate) fn generation_of(&self, index: u32) -> u32 {
        self.meta.get(index as usize).map_or(u32::MAX, |m| m.generation)
    }

    /// The free list, reused last first.
    pub(crate) fn free_list(&self) -> &[u32] {
        &self.free
    }

    /// Forces a slot's generation (tests of generation exhaustion).
    #[cfg(test)]
    pub(crate) fn set_generation(&mut self, index: u32, generation: u32) {
        self.meta[index as usize].generation = generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        let e = Entity::from_parts(12, 0);
        assert_eq!(e.to_string(), "12v0");
        assert_eq!("12v0".parse::<Entity>().unwrap(), e);
        for bad in ["", "12", "v0", "12v", "-1v0", "1v-1", "1x0", "99999999999v0", "1v0v0", " 1v0"] {
            assert!(bad.parse::<Entity>().is_err(), "{bad:?} should not parse");
        }
        assert_eq!(Entity::NULL.to_string(), "null");
        assert_eq!(Entity::from_bits(e.to_bits()), e);
    }

    #[test]
    fn entity_text_edges() {
        let ok = [
            ("0v0", (0, 0)),
            ("12v3", (12, 3)),
            ("01v00", (1, 0)),
            ("4294967294v4294967295", (u32::MAX - 1, u32::MAX)),
        ];
        for (text, (index, generation)) in ok {
            assert_eq!(Entity::parse_ascii(text.as_bytes()), Some(Entity::from_parts(index, generation)), "{text}");
        }
        let bad = [
            "",
            "v",
            "v1",
            "1v",
            "1v2v3",
            "+1v0",
            "1 v0",
            "1v 0",
            "12V0",
            "4294967295v0",
            "4294967296v0",
            "1v4294967296",
            "00000000001v0",
            "99999999999v0",
            "1v-1",
            "1\u{661}v0",
            "null",
        ];
        for text in bad {
            assert_eq!(Entity::parse_ascii(text.as_bytes()), None, "{text:?} should not parse");
        }
    }

    #[test]
    fn recycling_bumps_generation() {
        let mut ents = Entities::default();
        let a = ents.alloc();
        ents.set_location(a.index(), EntityLocation { table: 0, row: 0 });
        ents.free(a);
        assert!(!ents.contains(a));
        let b = ents.alloc();
        assert_eq!(b.index(), a.index());
        assert_eq!(b.generation(), 1);
        ents.set_location(b.index(), EntityLocation { table: 0, row: 0 });
        assert!(ents.contains(b) && !ents.contains(a));
    }

    #[test]
    fn exhausted_generation_is_retired() {
        let mut ents = Entities::default();
        let a = ents.alloc();
        ents.set_generation(a.index(), u32::MAX - 1);
        let a = Entity::from_parts(a.index(), u32::MAX - 1);
        ents.set_location(a.index(), EntityLocation { table: 0, row: 0 });
        ents.free(a);
        // generation u32::MAX is still issuable for an ordinary index
        let b = ents.alloc();
        assert_eq!(b, Entity::from_parts(0, u32::MAX));
        ents.set_location(b.index(), EntityLocation { table: 0, row: 0 });
        ents.free(b);
        assert_eq!(ents.retired(), 1);
        let c = ents.alloc();
        assert_eq!(c.index(), 1, "retired index must not be reused");
    }

    #[test]
    fn loading_builds_the_same_allocator() {
        let mut ents = Entities::default();
        let es: Vec<_> = (0..6).map(|_| ents.alloc()).collect();
        for (i, e) in es.iter().enumerate() {
            ents.set_location(e.index(), EntityLocation { table: 1, row: i as u32 });
        }
        ents.free(es[1]);
        ents.free(es[4]);
        ents.set_generation(es[2].index(), u32::MAX);
        let e2 = Entity::from_parts(es[2].index(), u32::MAX);
        ents.free(e2); // retired
        let mut l = Entities::loading(6);
        let (gens, live) = ents.snapshot_slots();
        l.push_loaded_slots(&gens[..8], &live, 0);
        l.push_loaded_slots(&gens[8..], &live, 2);
        l.set_loaded_free_list(ents.free_list().to_vec()).unwrap();
        assert_eq!(l.place_loaded_rows(&[es[0], es[3], es[5]], 2, 0), Ok(()));
        assert_eq!(l.place_loaded_rows(&[es[3]], 2, 9), Err((0, Misplaced::Twice)));
        assert_eq!(l.place_loaded_rows(&[es[1]], 2, 9), Err((0, Misplaced::NotAlive)));
        assert_eq!(l.place_loaded_rows(&[Entity::from_parts(0, 1)], 2, 9), Err((0, Misplaced::NotAlive)));
        assert_eq!(l.place_loaded_rows(&[Entity::from_parts(99, 0)], 2, 9), Err((0, Misplaced::NotAlive)));
        let mut m = Entities::loading(6);
        m.push_loaded_slots(&gens, &live, 0);
        assert_eq!(m.place_loaded_rows(&[es[5], es[0], es[5]], 4, 10), Err((2, Misplaced::Twice)));
        assert_eq!(m.location(es[0]), Some(EntityLocation { table: 4, row: 11 }));
        assert_eq!(m.place_loaded_rows(&[es[3], es[4]], 4, 12), Err((1, Misplaced::NotAlive)));
        assert_eq!(l.state(), ents.state());
        assert_eq!((l.len(), l.retired()), (3, 1));
        assert_eq!(l.location(es[3]), Some(EntityLocation { table: 2, row: 1 }));
        // The same index twice, or a live index, on the free list.
        for bad in [vec![1, 1], vec![0], vec![17]] {
            let mut l = Entities::loading(6);
            l.push_loaded_slots(&gens, &live, 0);
            assert!(l.set_loaded_free_list(bad).is_err());
        }
    }
}
