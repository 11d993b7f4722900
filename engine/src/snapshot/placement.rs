//! Where each entity of a [`ColumnarWorld`] goes: per entity index its generation and the
//! components it has, and the archetype table of its set of table components.
//!
//! Per component in parallel, its presence bits (so duplicates are found there); one
//! streaming pass for the generations; then per range of indices in parallel, each range's
//! tables in order of first appearance, numbered across ranges as one pass in index order
//! would number them. Nothing is kept per index and component beyond one bit: rows are
//! found from the components' own lists (see `columns.rs`).

use std::collections::HashMap;

use crate::component::StorageKind;
use crate::entity::Entity;
use crate::snapshot::columnar::{ColumnarWorld, ComponentColumns, FieldValues, invalid};
use crate::snapshot::{SIZE_DIVISOR, SnapshotError};

/// Indices per range of the second pass: a multiple of 64 (whole words of presence bits),
/// large enough that a range's own table list stays short.
const RANGE: usize = (1 << 16) / SIZE_DIVISOR;

/// Up to this many distinct tables in a range, a slot's table is found by comparing sets, not
/// hashing.
const SCANNED_SETS: usize = 32;

/// Per entity index: its generation and which components it has.
pub(super) struct Slots {
    /// `u32::MAX` for indices no component (and no bare entity) names.
    pub(super) generation: Vec<u32>,
    /// Per component, bit `slot % 64` of word `slot / 64`: the slot's entity has it.
    present: Vec<Vec<u64>>,
}

/// The tables of an import: each distinct set of table components (as bits, one word per 64
/// components), numbered in order of first appearance by index, and each slot's table.
pub(super) struct Tables {
    pub(super) sets: Vec<Vec<u64>>,
    /// `u32::MAX` for unused indices.
    pub(super) of_slot: Vec<u32>,
}

impl Slots {
    fn has(&self, k: usize, slot: usize) -> bool {
        bit(&self.present[k], slot)
    }
}

/// Bit `i` of a bit set kept as words (bit `i % 64` of word `i / 64`).
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] & (1 << (i % 64)) != 0
}

/// Component `c`'s presence bits over `slots` indices (every id of `c` is below it); an
/// entity twice in `c` is an error at its second row.
fn claim_component(c: &ComponentColumns, slots: usize) -> Result<Vec<u64>, SnapshotError> {
    let mut present = vec![0u64; slots.div_ceil(64)];
    for (row, &e) in c.entities.iter().enumerate() {
        let i = e.index() as usize;
        let (word, bit) = (&mut present[i / 64], 1u64 << (i % 64));
        if *word & bit != 0 {
            return Err(SnapshotError::DuplicateEntity { component: c.def.name.clone(), row, entity: e });
        }
        *word |= bit;
    }
    Ok(present)
}

/// Claims every row of every component and every bare entity over `slots` indices (each id
/// below it). Errors: an entity twice in one component, a bare entity listed twice or with
/// components (named as `bare` says), two generations of one index (named at the first row,
/// in component order, that disagrees with an earlier component).
pub(super) fn claim(data: &ColumnarWorld, slots: usize, bare: &str) -> Result<Slots, SnapshotError> {
    let present = crate::par::map(data.components.iter().collect(), |c| claim_component(c, slots))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let mut s = Slots { generation: vec![u32::MAX; slots], present };
    for (row, &e) in data.bare_entities.iter().enumerate() {
        let i = e.index() as usize;
        if s.generation[i] != u32::MAX || (0..data.components.len()).any(|k| s.has(k, i)) {
            return Err(invalid(bare, Some(row), format!("entity {e} is listed twice, or also has components")));
        }
        s.generation[i] = e.generation();
    }
    // One pass in component order: each row gives its index its generation or must agree
    // with the one an earlier component gave. Components list ids mostly ascending, so the
    // writes stream; done on one thread, as components that share indices on two threads
    // would pass the same cache lines back and forth.
    for c in &data.components {
        for (row, &e) in c.entities.iter().enumerate() {
            let g = &mut s.generation[e.index() as usize];
            if *g == u32::MAX {
                *g = e.generation();
            } else if *g != e.generation() {
                let other = Entity::from_parts(e.index(), *g);
                return Err(invalid(&c.def.name, Some(row), format!("entity {e} and entity {other} share an index")));
            }
        }
    }
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
    // The sets found so far, `words` words each, back to back.
    let mut sets: Vec<u64> = Vec::new();
    let mut index: HashMap<Vec<u64>, u32> = HashMap::new();
    let same = |a: &[u64], b: &[u64]| a.iter().zip(b).all(|(x, y)| x == y);
    let mut last: Option<(u32, usize)> = None;
    for (i, (table, key)) in of_slot.iter_mut().zip(keys.chunks_exact(words)).enumerate() {
        if s.generation[base + i] == u32::MAX {
            continue;
        }
        // Neighbouring ids often share a table, and tables are few: the last set, then a
        // scan of the sets (word by word, inline), and a hash only when there are many.
        let t = match last {
            Some((t, at)) if same(&keys[at..at + words], key) => t,
            _ => {
                let count = sets.len() / words;
                let found = if count <= SCANNED_SETS {
                    sets.chunks_exact(words).position(|s| same(s, key)).map(|t| t as u32)
                } else {
                    index.get(key).copied()
                };
                found.unwrap_or_else(|| {
                    sets.extend_from_slice(key);
                    index.insert(key.to_vec(), count as u32);
                    count as u32
                })
            }
        };
        last = Some((t, i * words));
        *table = t;
    }
    sets.chunks_exact(words).map(<[u64]>::to_vec).collect()
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

/// A component's rows grouped by table: per table, runs `(start, len)` of consecutive rows
/// in the order the table lists its entities.
#[derive(Default)]
pub(super) struct TableRuns {
    /// The table of each run, ascending.
    tables: Vec<u32>,
    runs: Vec<(usize, usize)>,
}

impl TableRuns {
    /// From runs tagged with their tables, in the order each table lists them.
    fn from_tagged(mut tagged: Vec<(u32, usize, usize)>) -> TableRuns {
        // Stable: each table's runs keep their order.
        tagged.sort_by_key(|r| r.0);
        TableRuns { tables: tagged.iter().map(|r| r.0).collect(), runs: tagged.iter().map(|r| (r.1, r.2)).collect() }
    }

    /// The runs in table `t`.
    pub(super) fn of(&self, t: usize) -> &[(usize, usize)] {
        let t = t as u32;
        let from = self.tables.partition_point(|&x| x < t);
        let to = self.tables.partition_point(|&x| x <= t);
        &self.runs[from..to]
    }

    /// Every run, table by table.
    pub(super) fn all(&self) -> &[(usize, usize)] {
        &self.runs
    }
}

/// Appends `row` of table `t` to `runs`, extending the last run when it continues it.
fn push_row(runs: &mut Vec<(u32, usize, usize)>, t: u32, row: usize) {
    match runs.last_mut() {
        Some((last, start, len)) if *last == t && *start + *len == row => *len += 1,
        _ => runs.push((t, row, 1)),
    }
}

/// Where each table component's rows go, and the edges that order the tables.
pub(super) struct RowRuns {
    /// Per component (empty for sparse ones): its rows in each table, in the table's order.
    pub(super) runs: Vec<TableRuns>,
    /// `(a, b)`: some component lists a row of table `a`, then one of table `b`.
    pub(super) edges: Vec<(usize, usize)>,
}

/// The rows of every table component in each of its tables, in the order of the table's
/// first component (`first_of`). A component that lists a table's entities in another order
/// (input made elsewhere) has its rows there found through a map from index to row; an export
/// lists every table in one order, so the usual cost is one pass over each component's ids.
pub(super) fn row_runs(
    data: &ColumnarWorld,
    sets: &[Vec<u64>],
    of_slot: &[u32],
    first_of: &[Option<usize>],
    slots: usize,
) -> RowRuns {
    let is_table = |c: &ComponentColumns| c.def.storage == StorageKind::Table;
    // Per component in parallel: its rows by table in row order, and each change of table
    // between consecutive rows.
    let scanned = crate::par::map(data.components.iter().collect(), |c| {
        let (mut tagged, mut edges) = (Vec::new(), Vec::new());
        if !is_table(c) {
            return (TableRuns::default(), edges);
        }
        // Rows come in order, so a run continues exactly while the table stays the same.
        let (mut current, mut start) = (u32::MAX, 0);
        for (row, e) in c.entities.iter().enumerate() {
            let t = of_slot[e.index() as usize];
            if t != current {
                if current != u32::MAX {
                    tagged.push((current, start, row - start));
                    edges.push((current as usize, t as usize));
                }
                (current, start) = (t, row);
            }
        }
        if current != u32::MAX {
            tagged.push((current, start, c.entities.len() - start));
        }
        (TableRuns::from_tagged(tagged), edges)
    });
    let mut runs = Vec::with_capacity(scanned.len());
    let mut edges = Vec::new();
    for (r, e) in scanned {
        runs.push(r);
        edges.extend(e);
    }
    // The entities of table `t` in its order: its first component's, row by row.
    let listed = |t: usize| {
        let lead = first_of[t].expect("a table of a table component has a first component");
        let c = &data.components[lead];
        runs[lead].of(t).iter().flat_map(move |&(start, len)| c.entities[start..start + len].iter().map(|e| e.index()))
    };
    let reordered = crate::par::map(data.components.iter().enumerate().collect(), |(k, c)| {
        let mine: Vec<usize> = (0..sets.len()).filter(|&t| is_table(c) && bit(&sets[t], k)).collect();
        let in_order = mine.iter().all(|&t| match first_of[t] {
            Some(lead) => lead == k || same_entities(&data.components[lead], runs[lead].of(t), c, runs[k].of(t)),
            None => false,
        });
        if in_order {
            return None;
        }
        let mut row_of = vec![0u32; slots];
        for (row, e) in c.entities.iter().enumerate() {
            row_of[e.index() as usize] = row as u32;
        }
        let mut tagged = Vec::new();
        for t in mine {
            for i in listed(t) {
                push_row(&mut tagged, t as u32, row_of[i as usize] as usize);
            }
        }
        Some(TableRuns::from_tagged(tagged))
    });
    for (r, new) in runs.iter_mut().zip(reordered) {
        if let Some(new) = new {
            *r = new;
        }
    }
    RowRuns { runs, edges }
}

/// Whether rows `ra` of `a` and rows `rb` of `b` list the same entities in the same order:
/// compared a slice at a time (one each, usually).
fn same_entities(a: &ComponentColumns, ra: &[(usize, usize)], b: &ComponentColumns, rb: &[(usize, usize)]) -> bool {
    let (mut ra, mut rb) = (ra.iter().copied(), rb.iter().copied());
    let (mut x, mut y) = (ra.next(), rb.next());
    loop {
        match (x, y) {
            (None, None) => return true,
            (Some((_, 0)), _) => x = ra.next(),
            (_, Some((_, 0))) => y = rb.next(),
            (Some((sa, la)), Some((sb, lb))) => {
                let n = la.min(lb);
                if a.entities[sa..sa + n] != b.entities[sb..sb + n] {
                    return false;
                }
                x = Some((sa + n, la - n));
                y = Some((sb + n, lb - n));
            }
            _ => return false,
        }
    }
}

/// Where the text of given rows starts in a component's string fields: at the bounds of the
/// runs it is gathered in (not per row: a table is usually one run).
pub(super) struct TextStarts {
    /// The rows asked for, ascending.
    rows: Vec<usize>,
    /// Per field (empty for plain ones), the text offset of each of `rows`.
    offsets: Vec<Vec<usize>>,
}

impl TextStarts {
    /// For the starts and ends of `runs` of `c`.
    pub(super) fn new(c: &ComponentColumns, runs: &[(usize, usize)]) -> TextStarts {
        let strings = c.fields.iter().any(|f| matches!(f, FieldValues::Strings { .. }));
        if !strings {
            return TextStarts { rows: Vec::new(), offsets: Vec::new() };
        }
        let mut rows: Vec<usize> = runs.iter().flat_map(|&(s, l)| [s, s + l]).collect();
        rows.sort_unstable();
        rows.dedup();
        let offsets = c
            .fields
            .iter()
            .map(|f| match f {
                FieldValues::Strings { lengths, .. } => {
                    let (mut at, mut row) = (0usize, 0usize);
                    rows.iter()
                        .map(|&r| {
                            at += lengths[row..r].iter().map(|&l| l as usize).sum::<usize>();
                            row = r;
                            at
                        })
                        .collect()
                }
                FieldValues::Plain(_) => Vec::new(),
            })
            .collect();
        TextStarts { rows, offsets }
    }

    /// The text offset of `row` (one of the bounds given) in field `f`.
    pub(super) fn at(&self, f: usize, row: usize) -> usize {
        let i = self.rows.binary_search(&row).expect("a bound of a run given to TextStarts::new");
        self.offsets[f][i]
    }
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
