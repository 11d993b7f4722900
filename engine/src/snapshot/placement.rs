//! Where each entity of a [`ColumnarWorld`] goes: per entity index its generation, the
//! components it has and its row in each, and the archetype table of its set of table
//! components.
//!
//! Built in parallel, without locks: first per component (each owns its presence bits and
//! its rows, so duplicates are found there), then per range of indices (each owns its
//! generations and its tables' first appearances), then the ranges' tables are numbered in
//! order of first appearance, as one pass in index order would number them.

use std::collections::HashMap;

use crate::component::StorageKind;
use crate::entity::Entity;
use crate::snapshot::columns::{ColumnarWorld, ComponentColumns};
use crate::snapshot::SnapshotError;

/// Indices per range of the second pass: a multiple of 64 (whole words of presence bits),
/// large enough that a range's own table list stays short.
const RANGE: usize = 1 << 16;

/// Up to this many distinct tables in a range, a slot's table is found by comparing sets, not
/// hashing.
const SCANNED_SETS: usize = 32;

/// Per entity index: its generation, which components it has, and its row in each.
pub(super) struct Slots {
    /// `u32::MAX` for indices no component (and no bare entity) names.
    pub(super) generation: Vec<u32>,
    /// Per component, bit `slot % 64` of word `slot / 64`: the slot's entity has it.
    present: Vec<Vec<u64>>,
    /// Per component, the row of each slot's entity where `present` says it has it.
    rows: Vec<Vec<u32>>,
}

/// The tables of an import: each distinct set of table components (as bits, one word per 64
/// components), numbered in order of first appearance by index, and each slot's table.
pub(super) struct Tables {
    pub(super) sets: Vec<Vec<u64>>,
    /// `u32::MAX` for unused indices.
    pub(super) of_slot: Vec<u32>,
}

impl Slots {
    /// The row of `slot`'s entity in component `k` (which it has).
    pub(super) fn row(&self, k: usize, slot: u32) -> u32 {
        self.rows[k][slot as usize]
    }

    fn has(&self, k: usize, slot: usize) -> bool {
        self.present[k][slot / 64] & (1 << (slot % 64)) != 0
    }
}

/// Component `c`'s presence bits and rows over `slots` indices (every id of `c` is below it);
/// an entity twice in `c` is an error at its second row.
fn claim_component(c: &ComponentColumns, slots: usize) -> Result<(Vec<u64>, Vec<u32>), SnapshotError> {
    let mut present = vec![0u64; slots.div_ceil(64)];
    let mut rows = vec![0u32; slots];
    for (row, &e) in c.entities.iter().enumerate() {
        let i = e.index() as usize;
        let (word, bit) = (&mut present[i / 64], 1u64 << (i % 64));
        if *word & bit != 0 {
            return Err(SnapshotError::DuplicateEntity { component: c.def.name.clone(), row, entity: e });
        }
        *word |= bit;
        rows[i] = row as u32;
    }
    Ok((present, rows))
}

/// Claims every row of every component and every bare entity over `slots` indices (each id
/// below it). Errors: an entity twice in one component, a bare entity listed twice or with
/// components (named as `bare` says), two generations of one index.
pub(super) fn claim(data: &ColumnarWorld, slots: usize, bare: &str) -> Result<Slots, SnapshotError> {
    let claimed = crate::par::map(data.components.iter().collect(), |c| claim_component(c, slots));
    let (mut present, mut rows) = (Vec::with_capacity(claimed.len()), Vec::with_capacity(claimed.len()));
    for r in claimed {
        let (p, w) = r?;
        present.push(p);
        rows.push(w);
    }
    let mut s = Slots { generation: vec![u32::MAX; slots], present, rows };
    for (row, &e) in data.bare_entities.iter().enumerate() {
        let i = e.index() as usize;
        if s.generation[i] != u32::MAX || (0..data.components.len()).any(|k| s.has(k, i)) {
            return Err(super::columns::invalid(
                bare,
                Some(row),
                format!("entity {e} is listed twice, or also has components"),
            ));
        }
        s.generation[i] = e.generation();
    }
    // Generations of the indices components name, a range of indices per job.
    let ranges: Vec<(usize, &mut [u32])> = s.generation.chunks_mut(RANGE).enumerate().collect();
    let (present, rows) = (&s.present, &s.rows);
    let checked = crate::par::map(ranges, |(r, generation)| {
        let base = r * RANGE;
        for (k, c) in data.components.iter().enumerate() {
            let words = &present[k][base / 64..(base + generation.len()).div_ceil(64)];
            for (w, &bits) in words.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let slot = base + w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let row = rows[k][slot] as usize;
                    let e = c.entities[row];
                    let g = &mut generation[slot - base];
                    if *g == u32::MAX {
                        *g = e.generation();
                    } else if *g != e.generation() {
                        let other = Entity::from_parts(e.index(), *g);
                        return Err(super::columns::invalid(
                            &c.def.name,
                            Some(row),
                            format!("entity {e} and entity {other} share an index"),
                        ));
                    }
                }
            }
        }
        Ok(())
    });
    checked.into_iter().collect::<Result<(), _>>()?;
    Ok(s)
}

/// The tables of a range of slots: its distinct sets in order of first appearance, and each
/// slot's index into them.
fn range_tables(
    s: &Slots,
    table_components: &[usize],
    words: usize,
    base: usize,
    of_slot: &mut [u32],
) -> Vec<Vec<u64>> {
    // Each slot's set, `words` words per slot, from the components' presence bits (a range's
    // sets fit in cache; one pass per component over its words).
    let mut keys = vec![0u64; of_slot.len() * words];
    for &k in table_components {
        let present = &s.present[k][base / 64..(base + of_slot.len()).div_ceil(64)];
        for (w, &bits) in present.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                keys[i * words + k / 64] |= 1 << (k % 64);
            }
        }
    }
    let mut sets: Vec<Vec<u64>> = Vec::new();
    let mut index: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut last: Option<(u32, usize)> = None;
    for (i, (table, key)) in of_slot.iter_mut().zip(keys.chunks_exact(words)).enumerate() {
        if s.generation[base + i] == u32::MAX {
            continue;
        }
        // Neighbouring ids often share a table, and tables are few: the last set, then a
        // scan of the sets, and a hash only when there are many.
        let t = match last {
            Some((t, at)) if keys[at..at + words].iter().zip(key).all(|(a, b)| a == b) => t,
            _ => {
                let found = if sets.len() <= SCANNED_SETS {
                    sets.iter().position(|s| s[..] == *key).map(|t| t as u32)
                } else {
                    index.get(key).copied()
                };
                found.unwrap_or_else(|| {
                    sets.push(key.to_vec());
                    index.insert(key.to_vec(), sets.len() as u32 - 1);
                    sets.len() as u32 - 1
                })
            }
        };
        last = Some((t, i * words));
        *table = t;
    }
    sets
}

/// One table per distinct set of table components among the live slots.
pub(super) fn tables(data: &ColumnarWorld, s: &Slots) -> Tables {
    let words = data.components.len().div_ceil(64).max(1);
    let table_components: Vec<usize> =
        (0..data.components.len()).filter(|&k| data.components[k].def.storage == StorageKind::Table).collect();
    let mut of_slot = vec![u32::MAX; s.generation.len()];
    let ranges: Vec<(usize, &mut [u32])> = of_slot.chunks_mut(RANGE).enumerate().collect();
    let local = crate::par::map(ranges, |(r, of)| range_tables(s, &table_components, words, r * RANGE, of));
    // Number the sets by first appearance: a range's sets are in that order, and the ranges
    // are in index order.
    let mut sets: Vec<Vec<u64>> = Vec::new();
    let mut number: HashMap<Vec<u64>, u32> = HashMap::new();
    let renumber: Vec<Vec<u32>> = local
        .into_iter()
        .map(|range| {
            range
                .into_iter()
                .map(|set| {
                    *number.entry(set.clone()).or_insert_with(|| {
                        sets.push(set);
                        sets.len() as u32 - 1
                    })
                })
                .collect()
        })
        .collect();
    let ranges: Vec<(&mut [u32], &Vec<u32>)> = of_slot.chunks_mut(RANGE).zip(&renumber).collect();
    crate::par::for_each(ranges, |(of, to)| {
        for t in of.iter_mut().filter(|t| **t != u32::MAX) {
            *t = to[*t as usize];
        }
    });
    Tables { sets, of_slot }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::ComponentDef;

    fn tag(name: &str, entities: Vec<Entity>) -> ComponentColumns {
        ComponentColumns { def: ComponentDef::new(name, &[]), entities, fields: vec![] }
    }

    /// Over several ranges, with a set first seen late in one range and early in the next,
    /// the tables are those of one pass in index order.
    #[test]
    fn ranges_number_tables_as_one_pass_would() {
        let n = 3 * RANGE as u32 + 17;
        let e = |i: u32| Entity::from_parts(i, i % 5);
        // A: every third index; B: indices ending in 7 past the first range, and a few early
        // ones; C (sparse): every index divisible by 11.
        let a: Vec<Entity> = (0..n).rev().filter(|i| i % 3 == 0).map(e).collect();
        let in_b = |i: usize| i % 10 == 7 && !(40..=RANGE).contains(&i);
        let b: Vec<Entity> = (0..n).filter(|&i| in_b(i as usize)).map(e).collect();
        let mut c = tag("C", (0..n).filter(|i| i % 11 == 0).map(e).collect());
        c.def.storage = StorageKind::Sparse;
        let data = ColumnarWorld { components: vec![tag("A", a), tag("B", b), c], ..Default::default() };
        let slots = claim(&data, n as usize, "bare").unwrap();
        let t = tables(&data, &slots);
        // The same, in one pass.
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for i in 0..n as usize {
            let (has_a, has_b, has_c) = (i % 3 == 0, in_b(i), i % 11 == 0);
            if !(has_a || has_b || has_c) {
                assert_eq!(t.of_slot[i], u32::MAX, "{i}");
                continue;
            }
            assert_eq!(slots.generation[i], i as u32 % 5);
            let key = vec![has_a as u64 | (has_b as u64) << 1];
            let at = sets.iter().position(|s| *s == key).unwrap_or_else(|| {
                sets.push(key);
                sets.len() - 1
            });
            assert_eq!(t.of_slot[i], at as u32, "{i}");
            if has_a {
                assert_eq!(data.components[0].entities[slots.row(0, i as u32) as usize].index(), i as u32);
            }
        }
        assert_eq!(t.sets, sets);
    }

    #[test]
    fn duplicates_generations_and_bare_entities_are_errors() {
        let e = Entity::from_parts;
        let dup = ColumnarWorld { components: vec![tag("A", vec![e(1, 0), e(2, 0), e(1, 0)])], ..Default::default() };
        assert!(matches!(claim(&dup, 3, "bare"), Err(SnapshotError::DuplicateEntity { row: 2, .. })));
        let gens = ColumnarWorld {
            components: vec![tag("A", vec![e(1, 0)]), tag("B", vec![e(2, 0), e(1, 3)])],
            ..Default::default()
        };
        let err = claim(&gens, 3, "bare").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("share an index"), "{err}");
        let bare = ColumnarWorld {
            components: vec![tag("A", vec![e(1, 0)])],
            bare_entities: vec![e(0, 0), e(1, 0)],
            ..Default::default()
        };
        let err = claim(&bare, 3, "bare").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("also has components"), "{err}");
    }
}
