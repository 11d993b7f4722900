//! Worlds built from columns: one list of entities and one run of values per field for each
//! component, as columnar files (Parquet, CSV) hold them.
//!
//! The entities keep their ids: the allocator is rebuilt from them (dead indices get
//! generation 0 and are reused lowest first). Entities are grouped into archetype tables by
//! the set of table components they appear in; tables are created in an order that keeps
//! every component's rows in the order they were given, so exporting the built world again
//! lists each component's entities as the input did. The build then goes through the same
//! validation and construction as a binary snapshot: on any error the world is unchanged.

use std::collections::HashMap;

use crate::component::{FieldType, StorageKind};
use crate::entity::Entity;
use crate::index::IndexBuild;
use crate::snapshot::columnar::invalid;
use crate::snapshot::columnar::{ColumnarWorld, ComponentColumns, FieldValues};
use crate::snapshot::format::{
    AllocatorRecord, Body, Bytes, ColumnData, ColumnRecord, ComponentRecord, FieldRecord, FieldRun, IndexRecord,
    IndexSection, SparseRecord, TableRecord, Text, entities_le, field_type_code, storage_code, u32s_le, wire_size,
};
use crate::snapshot::load::load_into;
use crate::snapshot::placement::{RowRuns, Tables, TextStarts, claim, row_runs, tables};
use crate::snapshot::{LoadOptions, LoadStats, SnapshotError};
use crate::world::World;

/// An import may name indices up to this many times its rows (dead indices included)...
const INDICES_PER_ROW: usize = 64;
/// ... or up to this many, whichever is more.
const MIN_INDEX_LIMIT: usize = 1 << 24;

/// What errors about the allocator and component-less entities name in place of a component.
const ALLOCATOR: &str = "(allocator)";
const BARE: &str = "(entities without components)";

/// The components whose bits are set in `set`, in order.
fn set_members(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter()
        .enumerate()
        .flat_map(|(w, &bits)| (0..64).filter(move |b| bits & (1u64 << b) != 0).map(move |b| w * 64 + b))
}

/// Checks a component's columns against its definition: lengths, row counts, string text.
/// Returns the number of indices its entities need (the highest plus one).
fn check_component(c: &ComponentColumns) -> Result<usize, SnapshotError> {
    let name = &c.def.name;
    if c.fields.len() != c.def.fields.len() {
        return Err(invalid(name, None, format!("{} field runs for {} fields", c.fields.len(), c.def.fields.len())));
    }
    let n = c.entities.len();
    if n >= u32::MAX as usize {
        return Err(SnapshotError::TooLarge { what: format!("component '{name}'") });
    }
    for ((fname, ty), run) in c.def.fields.iter().zip(&c.fields) {
        let ok = match (ty, run) {
            (FieldType::String, FieldValues::Strings { lengths, text }) => {
                lengths.len() == n && lengths.iter().map(|&l| l as u64).sum::<u64>() == text.len() as u64
            }
            (FieldType::String, FieldValues::Plain(_)) | (_, FieldValues::Strings { .. }) => false,
            (ty, FieldValues::Plain(b)) => b.len() == n * wire_size(*ty),
        };
        if !ok {
            return Err(invalid(name, None, format!("the values of field '{fname}' do not fit its type or row count")));
        }
    }
    // The highest index in the same pass (the null entity has the highest of all).
    let highest = c.entities.iter().map(|e| e.index()).max();
    if highest == Some(u32::MAX)
        && let Some(row) = c.entities.iter().position(|e| e.is_null())
    {
        return Err(invalid(name, Some(row), "the null entity cannot have components"));
    }
    Ok(highest.map_or(0, |i| i as usize + 1))
}

/// Rows `runs` (runs `(start, len)` of consecutive rows, in order) of a component's field
/// runs as a column record: borrowed when they are one run (the usual case: an export lists a
/// component's rows table by table), otherwise copied run by run. `text` knows where each
/// run's text starts in string fields.
fn gather<'a>(c: &'a ComponentColumns, text: &TextStarts, runs: &[(usize, usize)]) -> ColumnRecord<'a> {
    if c.def.fields.is_empty() {
        return ColumnRecord { data: ColumnData::Empty, ticks: None };
    }
    let one_run = match runs {
        [] => Some((0, 0)),
        [run] => Some(*run),
        _ => None,
    };
    let rows: usize = runs.iter().map(|r| r.1).sum();
    let fields = c.def.fields.iter().zip(&c.fields).enumerate();
    let runs = fields
        .map(|(f, ((_, ty), values))| match values {
            FieldValues::Plain(bytes) => {
                let w = wire_size(*ty);
                if let Some((start, len)) = one_run {
                    return FieldRun::Plain(Bytes::borrowed(&bytes[start * w..(start + len) * w]));
                }
                let mut out = Vec::with_capacity(rows * w);
                for &(start, len) in runs {
                    out.extend_from_slice(&bytes[start * w..(start + len) * w]);
                }
                FieldRun::Plain(Bytes::owned(out))
            }
            FieldValues::Strings { lengths, text: chars } => {
                let slice = |start: usize, len: usize| &chars[text.at(f, start)..text.at(f, start + len)];
                if let Some((start, len)) = one_run {
                    return FieldRun::Strings {
                        lens: Bytes::Mem(u32s_le(&lengths[start..start + len])),
                        data: Bytes::borrowed(slice(start, len)),
                    };
                }
                let (mut lens, mut data) = (Vec::with_capacity(rows * 4), Vec::new());
                for &(start, len) in runs {
                    lens.extend_from_slice(&u32s_le(&lengths[start..start + len]));
                    data.extend_from_slice(slice(start, len));
                }
                FieldRun::Strings { lens: Bytes::owned(lens), data: Bytes::owned(data) }
            }
        })
        .collect();
    ColumnRecord { data: ColumnData::Fields(runs), ticks: None }
}

/// The entities of rows `runs` of `c`, as a run of the file format: borrowed when one run.
fn entities_of<'a>(c: &'a ComponentColumns, runs: &[(usize, usize)]) -> Bytes<'a> {
    if let [(start, len)] = runs {
        return Bytes::Mem(entities_le(&c.entities[*start..start + len]));
    }
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.1).sum::<usize>() * 8);
    for &(start, len) in runs {
        out.extend_from_slice(&entities_le(&c.entities[start..start + len]));
    }
    Bytes::owned(out)
}

/// Orders tables so that, for every component, its tables come in the order its rows do:
/// edges from each table to the next one in each component's row order, sorted
/// topologically, ties (and any cycle, from hand-made inputs) by first appearance.
fn table_order(count: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut indegree = vec![0usize; count];
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); count];
    for &(a, b) in edges {
        if a != b && !next[a].contains(&b) {
            next[a].push(b);
            indegree[b] += 1;
        }
    }
    let mut order = Vec::with_capacity(count);
    let mut placed = vec![false; count];
    while order.len() < count {
        // The first unplaced table with no unplaced predecessor, else (a cycle) the first
        // unplaced one. Tables are few: the quadratic scan is cheap.
        let pick = (0..count).find(|&t| !placed[t] && indegree[t] == 0).or_else(|| (0..count).find(|&t| !placed[t]));
        let t = pick.expect("an unplaced table remains");
        placed[t] = true;
        order.push(t);
        for &b in &next[t] {
            indegree[b] = indegree[b].saturating_sub(1);
        }
    }
    order
}

fn columns_to_body(data: &ColumnarWorld) -> Result<Body<'_>, SnapshotError> {
    let mut seen = HashMap::with_capacity(data.components.len());
    for c in &data.components {
        if seen.insert(c.def.name.as_str(), ()).is_some() {
            return Err(invalid(&c.def.name, None, "the component is given twice"));
        }
    }
    // Each component checked, and the highest index it names found, in parallel.
    let checked = crate::par::map(data.components.iter().collect(), check_component);
    let mut live_needed = 0;
    for needed in checked {
        live_needed = live_needed.max(needed?);
    }
    let catalog = data
        .components
        .iter()
        .map(|c| {
            // A packed layout in declaration order: only `Bulk` columns read it, and these
            // columns are given field by field.
            let mut offset = 0u64;
            let fields = c
                .def
                .fields
                .iter()
                .map(|(n, ty)| {
                    let r = FieldRecord { name: Text(n.clone().into()), ty: field_type_code(*ty), offset };
                    offset += wire_size(*ty) as u64;
                    r
                })
                .collect();
            ComponentRecord {
                name: Text(c.def.name.clone().into()),
                storage: storage_code(c.def.storage),
                opaque: false,
                size: offset,
                fields,
            }
        })
        .collect();

    // Which entity is where.
    if let Some(row) = data.bare_entities.iter().position(|e| e.is_null()) {
        return Err(invalid(BARE, Some(row), "the null entity is never alive"));
    }
    let live_needed = data.bare_entities.iter().map(|e| e.index() as usize + 1).fold(live_needed, usize::max);
    let slots_needed = match &data.dead {
        Some(dead) if (dead.issued as usize) < live_needed => {
            return Err(invalid(
                ALLOCATOR,
                None,
                format!("{} indices issued, but an entity has index {}", dead.issued, live_needed - 1),
            ));
        }
        Some(dead) => dead.issued as usize,
        None => live_needed,
    };
    // The build takes memory per index, not per entity: a stray huge id in a hand-made file
    // must not ask for gigabytes.
    let given = data.components.iter().map(|c| c.entities.len()).sum::<usize>() + data.bare_entities.len();
    let limit = given.saturating_mul(INDICES_PER_ROW).max(MIN_INDEX_LIMIT);
    if slots_needed > limit {
        return Err(invalid(
            ALLOCATOR,
            None,
            format!("index {} is far past the {given} rows given (at most {limit} indices)", slots_needed - 1),
        ));
    }
    let slots = claim(data, slots_needed, BARE)?;
    let Tables { sets: table_sets, of_slot: table_of_slot } = tables(data, &slots);
    // Row order within each table: the order of its first component's rows (every component
    // lists a table's entities in the same order when the input came from an export), and
    // entities with only sparse components in index order.
    let first_of: Vec<Option<usize>> = table_sets.iter().map(|set| set_members(set).next()).collect();
    let RowRuns { runs, edges } = row_runs(data, &table_sets, &table_of_slot, &first_of, slots_needed);
    let order = table_order(table_sets.len(), &edges);
    let mut loose: Vec<Vec<u32>> = vec![Vec::new(); table_sets.len()];
    if first_of.contains(&None) {
        for (s, &t) in table_of_slot.iter().enumerate() {
            if t != u32::MAX && first_of[t as usize].is_none() {
                loose[t as usize].push(s as u32);
            }
        }
    }

    // Each table's columns, gathered in parallel (borrowed where they are one run).
    let sparse_runs: Vec<[(usize, usize); 1]> = data.components.iter().map(|c| [(0, c.entities.len())]).collect();
    let text = crate::par::map(data.components.iter().enumerate().collect(), |(ci, c)| {
        let all = if c.def.storage == StorageKind::Table { runs[ci].all() } else { &sparse_runs[ci][..] };
        TextStarts::new(c, all)
    });
    let tables = crate::par::map(order, |t| {
        let mut components = Vec::new();
        let mut columns = Vec::new();
        for ci in set_members(&table_sets[t]) {
            components.push(ci as u32);
            columns.push(gather(&data.components[ci], &text[ci], runs[ci].of(t)));
        }
        let entities = match first_of[t] {
            Some(lead) => entities_of(&data.components[lead], runs[lead].of(t)),
            None => Bytes::owned(
                entities_le(
                    &loose[t].iter().map(|&s| Entity::from_parts(s, slots.generation[s as usize])).collect::<Vec<_>>(),
                )
                .into_owned(),
            ),
        };
        TableRecord { components, entities, columns }
    });
    let sparse = data
        .components
        .iter()
        .enumerate()
        .filter(|(_, c)| c.def.storage == StorageKind::Sparse && !c.entities.is_empty())
        .map(|(ci, c)| SparseRecord {
            component: ci as u32,
            entities: Bytes::Mem(entities_le(&c.entities)),
            column: gather(c, &text[ci], &sparse_runs[ci]),
        })
        .collect();

    // The allocator: the live ids, and the dead indices as given (or every unused index
    // free with generation 0, lowest reused first).
    let mut generations = Vec::with_capacity(slots_needed * 4);
    let mut live = vec![0u8; slots_needed.div_ceil(8)];
    // Per dead index given: its next generation, or `u32::MAX` (retired) when not free.
    let mut free_generation = Vec::new();
    if let Some(dead) = &data.dead {
        free_generation = vec![u32::MAX; slots_needed];
        for (row, e) in dead.free.iter().enumerate() {
            let i = e.index() as usize;
            if i >= slots_needed || slots.generation[i] != u32::MAX || free_generation[i] != u32::MAX {
                return Err(invalid(
                    ALLOCATOR,
                    Some(row),
                    format!("free index {} is out of range, alive, or listed twice", e.index()),
                ));
            }
            free_generation[i] = e.generation();
        }
    }
    for (i, &g) in slots.generation.iter().enumerate() {
        let value = match g {
            u32::MAX => free_generation.get(i).copied().unwrap_or(0),
            g => {
                live[i / 8] |= 1 << (i % 8);
                g
            }
        };
        generations.extend_from_slice(&value.to_le_bytes());
    }
    let free: Vec<u8> = match &data.dead {
        Some(dead) => dead.free.iter().flat_map(|e| e.index().to_le_bytes()).collect(),
        None => (0..slots_needed as u32)
            .rev()
            .filter(|&i| slots.generation[i as usize] == u32::MAX)
            .flat_map(|i| i.to_le_bytes())
            .collect(),
    };
    Ok(Body {
        world_tick: 1,
        catalog,
        allocator: AllocatorRecord {
            generations: Bytes::owned(generations),
            live: Bytes::owned(live),
            free: Bytes::owned(free),
        },
        tables,
        sparse,
        index_definitions: IndexSection {
            definitions: data
                .indexes
                .iter()
                .map(|d| IndexRecord {
                    name: Text(d.name.clone().into()),
                    kind: Text(d.kind.clone().into()),
                    component: Text(d.component.clone().into()),
                    fields: d.fields.iter().map(|f| Text(f.clone().into())).collect(),
                })
                .collect(),
            ..IndexSection::default()
        },
        // Imported data carries no systems: the world keeps its own (empty) schedule.
        schedule: Default::default(),
        // Defaults are definitions, not data: an importer sets them on the world after
        // (`World::set_field_default`).
        defaults: Default::default(),
    })
}

impl World {
    /// Builds this world's contents from columns (see [`ColumnarWorld`]); the world must have
    /// no live entities. Components are matched by name as in [`World::load_into`], or
    /// defined. Entities keep their ids and the allocator is rebuilt from them. Everything is
    /// checked before anything changes: on error the world is unchanged.
    ///
    /// ```
    /// use ecsdb_engine::snapshot::{ColumnarWorld, ComponentColumns, FieldValues};
    /// use ecsdb_engine::{ComponentDef, Entity, FieldType, Value, World};
    /// let e = Entity::from_parts(7, 2);
    /// let health = ComponentColumns {
    ///     def: ComponentDef::new("Health", &[("hp", FieldType::F32)]),
    ///     entities: vec![e],
    ///     fields: vec![FieldValues::Plain(25.0f32.to_le_bytes().to_vec())],
    /// };
    /// let mut world = World::new();
    /// world.import_columns(&ColumnarWorld { components: vec![health], ..Default::default() }).unwrap();
    /// assert_eq!(world.get_field(e, "Health", "hp").unwrap(), Value::Float(25.0));
    /// ```
    pub fn import_columns(&mut self, data: &ColumnarWorld) -> Result<LoadStats, SnapshotError> {
        self.import_columns_with(data, IndexBuild::Now)
    }

    /// [`World::import_columns`], building the indexes of `data` when `indexes` says (their
    /// definitions are checked, and the unusable ones returned, either way).
    pub fn import_columns_with(
        &mut self,
        data: &ColumnarWorld,
        indexes: IndexBuild,
    ) -> Result<LoadStats, SnapshotError> {
        if !self.is_empty() {
            return Err(SnapshotError::WorldNotEmpty(self.len()));
        }
        let body = columns_to_body(data)?;
        let mut stats = load_into(self, &body, 0, &LoadOptions::default(), None)?;
        self.rebuild_snapshot_indexes(&mut stats, indexes);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;
    use crate::component::ComponentDef;
    use crate::snapshot::DeadIndices;

    fn f32s(v: &[f32]) -> FieldValues {
        FieldValues::Plain(v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }

    fn comp(
        name: &str,
        fields: &[(&str, FieldType)],
        entities: &[Entity],
        values: Vec<FieldValues>,
    ) -> ComponentColumns {
        ComponentColumns { def: ComponentDef::new(name, fields), entities: entities.to_vec(), fields: values }
    }

    #[test]
    fn ids_rows_and_table_order_survive() {
        let e = |i| Entity::from_parts(i, i % 3);
        // A: 5, 1, 3 (5 and 1 also have B); B: 1, 5; Tag: 3.
        let a = comp("A", &[("x", FieldType::F32)], &[e(5), e(1), e(3)], vec![f32s(&[5.0, 1.0, 3.0])]);
        let b = comp(
            "B",
            &[("s", FieldType::String)],
            &[e(5), e(1)],
            vec![FieldValues::Strings { lengths: vec![4, 3], text: b"fiveone".to_vec() }],
        );
        let tag = comp("Tag", &[], &[e(3)], vec![]);
        let mut w = World::new();
        w.import_columns(&ColumnarWorld { components: vec![a, b, tag], ..Default::default() }).unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w.get_field(e(1), "B", "s").unwrap(), Value::Str("one".into()));
        assert_eq!(w.get_field(e(3), "A", "x").unwrap(), Value::Float(3.0));
        // Row order per component is the input's: A lists 5, 1, then 3.
        let order: Vec<Entity> = w.iter_entities().collect();
        assert_eq!(order, [e(5), e(1), e(3)]);
        // Dead indices are free, lowest first.
        let next = w.spawn_values(&[]).unwrap();
        assert_eq!(next, Entity::from_parts(0, 0));
    }

    /// Components that list a table's entities in another order than its first component,
    /// or interleave tables, still give each entity its own values.
    #[test]
    fn rows_in_any_order_reach_their_entities() {
        let e = |i| Entity::from_parts(i, 1);
        // Table {A, B}: 1, 2, 4, 6 in A's order; table {A}: 3, 5 interleaved with it.
        let a_ids = [1, 3, 2, 5, 4, 6];
        let a = comp("A", &[("x", FieldType::F32)], &a_ids.map(e), vec![f32s(&a_ids.map(|i| i as f32))]);
        let b_ids = [6, 2, 4, 1];
        let names: Vec<String> = b_ids.iter().map(|i| format!("name{i}")).collect();
        let b = comp(
            "B",
            &[("n", FieldType::U8), ("s", FieldType::String)],
            &b_ids.map(e),
            vec![
                FieldValues::Plain(b_ids.map(|i| i as u8 * 10).to_vec()),
                FieldValues::Strings {
                    lengths: names.iter().map(|s| s.len() as u32).collect(),
                    text: names.concat().into_bytes(),
                },
            ],
        );
        let mut w = World::new();
        w.import_columns(&ColumnarWorld { components: vec![a, b], ..Default::default() }).unwrap();
        for i in a_ids {
            assert_eq!(w.get_field(e(i), "A", "x").unwrap(), Value::Float(i as f64));
        }
        for i in b_ids {
            assert_eq!(w.get_field(e(i), "B", "n").unwrap(), Value::Int(i as i64 * 10));
            assert_eq!(w.get_field(e(i), "B", "s").unwrap(), Value::Str(format!("name{i}")));
        }
        // A table lists its entities in A's order.
        let order: Vec<u32> = w.iter_entities().map(|e| e.index()).collect();
        assert_eq!(order, [1, 2, 4, 6, 3, 5]);
    }

    #[test]
    fn the_allocator_and_bare_entities_come_back() {
        let e = Entity::from_parts;
        let a = comp("A", &[], &[e(0, 0), e(2, 5)], vec![]);
        let dead = DeadIndices { issued: 6, free: vec![e(1, 4), e(5, 2)] };
        let data = ColumnarWorld {
            components: vec![a],
            bare_entities: vec![e(3, 1)],
            dead: Some(dead.clone()),
            ..Default::default()
        };
        let mut w = World::new();
        w.import_columns(&data).unwrap();
        assert_eq!(w.len(), 3);
        assert!(w.is_alive(e(3, 1)) && w.components_of(e(3, 1)).unwrap().is_empty());
        assert_eq!(DeadIndices::of(&w), dead);
        // Index 4 is retired: never reissued. The free list is reused last first.
        assert_eq!(w.entities().retired(), 1);
        let spawned: Vec<Entity> = (0..3).map(|_| w.spawn_values(&[]).unwrap()).collect();
        assert_eq!(spawned, [e(5, 2), e(1, 4), e(6, 0)]);
    }

    #[test]
    fn a_bad_allocator_or_bare_list_is_an_error() {
        let e = Entity::from_parts;
        let a = || comp("A", &[], &[e(0, 0), e(2, 5)], vec![]);
        let with = |bare: Vec<Entity>, dead: Option<DeadIndices>| ColumnarWorld {
            components: vec![a()],
            bare_entities: bare,
            dead,
            ..Default::default()
        };
        let cases = [
            with(vec![], Some(DeadIndices { issued: 2, free: vec![] })),
            with(vec![], Some(DeadIndices { issued: 4, free: vec![e(2, 6)] })),
            with(vec![], Some(DeadIndices { issued: 4, free: vec![e(1, 0), e(1, 0)] })),
            with(vec![], Some(DeadIndices { issued: 4, free: vec![e(9, 0)] })),
            with(vec![e(2, 5)], None),
            with(vec![e(3, 0), e(3, 0)], None),
            with(vec![Entity::NULL], None),
            with(vec![e(4_000_000_000, 0)], None),
        ];
        for data in cases {
            let mut w = World::new();
            let err = w.import_columns(&data).unwrap_err();
            assert!(matches!(err, SnapshotError::Columns { .. }), "{err}");
            assert!(w.is_empty() && w.components().is_empty());
        }
    }

    #[test]
    fn bad_columns_are_errors_and_change_nothing() {
        let e = Entity::from_parts(1, 0);
        let mut w = World::new();
        let twice = comp("A", &[("x", FieldType::F32)], &[e, e], vec![f32s(&[1.0, 2.0])]);
        let err = w.import_columns(&ColumnarWorld { components: vec![twice], ..Default::default() }).unwrap_err();
        assert!(matches!(err, SnapshotError::DuplicateEntity { row: 1, .. }), "{err}");
        let short = comp("A", &[("x", FieldType::F32)], &[e], vec![f32s(&[])]);
        assert!(w.import_columns(&ColumnarWorld { components: vec![short], ..Default::default() }).is_err());
        let gens = vec![comp("A", &[], &[e], vec![]), comp("B", &[], &[Entity::from_parts(1, 1)], vec![])];
        assert!(w.import_columns(&ColumnarWorld { components: gens, ..Default::default() }).is_err());
        let bad_bool = comp("A", &[("b", FieldType::Bool)], &[e], vec![FieldValues::Plain(vec![7])]);
        assert!(w.import_columns(&ColumnarWorld { components: vec![bad_bool], ..Default::default() }).is_err());
        assert!(w.is_empty() && w.components().is_empty());
    }
}
