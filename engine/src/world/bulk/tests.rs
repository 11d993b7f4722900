//! The bulk operations against the one-entity operations they replace, on run-time
//! components of every storage kind (a column with strings to drop, a plain column, a tag, a
//! sparse set).

use proptest::prelude::*;

use crate::component::{ComponentDef, FieldType};
use crate::entity::Entity;
use crate::value::{FieldValue, Value};
use crate::world::{BulkValues, World};

const NAMES: [&str; 4] = ["A", "B", "T", "S"];

fn world() -> World {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("A", &[("x", FieldType::F32), ("s", FieldType::String)])).unwrap();
    w.define_component(&ComponentDef::new("B", &[("n", FieldType::I32)])).unwrap();
    w.define_component(&ComponentDef::new("T", &[])).unwrap();
    w.define_component(&ComponentDef::new("S", &[("n", FieldType::U32)]).sparse()).unwrap();
    w
}

/// Field values of component `name` made from `seed` (some fields left out: zero).
fn fields(name: &str, seed: u32) -> Vec<(&'static str, Value)> {
    match name {
        "A" if seed.is_multiple_of(3) => vec![("s", Value::Str(format!("s{seed}")))],
        "A" => vec![("x", Value::Float(seed as f64 / 4.0)), ("s", Value::Str(format!("s{seed}")))],
        "B" => vec![("n", Value::Int(seed as i64 - 50))],
        "S" => vec![("n", Value::Int(seed as i64))],
        _ => vec![],
    }
}

fn names(mask: u8) -> Vec<&'static str> {
    NAMES.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| *n).collect()
}

/// Bulk arguments: component ids and converted values, target-major.
fn bulk_values(w: &World, comps: &[&str], seeds: &[u32]) -> (Vec<crate::ComponentId>, Vec<Vec<(usize, FieldValue)>>) {
    let ids: Vec<_> = comps.iter().map(|c| w.component_id(c).unwrap()).collect();
    let mut values = Vec::new();
    for &seed in seeds {
        for (c, &id) in comps.iter().zip(&ids) {
            values.push(w.convert_fields(id, &fields(c, seed)).unwrap());
        }
    }
    (ids, values)
}

fn one_by_one_insert(w: &mut World, e: Entity, comps: &[&str], seed: u32) {
    let fs: Vec<Vec<(&str, Value)>> = comps.iter().map(|c| fields(c, seed)).collect();
    let spec: Vec<(&str, &[(&str, Value)])> = comps.iter().zip(&fs).map(|(c, f)| (*c, f.as_slice())).collect();
    w.insert_values(e, &spec).unwrap();
}

/// Everything observable but row order: per live entity its components' values and ticks,
/// the allocator, and that every location points at its entity.
type Dump = (Vec<(Entity, Vec<(String, Value, u32, u32)>)>, crate::EntitiesState);

fn dump(w: &World) -> Dump {
    for t in w.tables() {
        for (row, &e) in t.entities().iter().enumerate() {
            let loc = w.location(e).unwrap();
            assert_eq!((loc.table, loc.row as usize), (t.id().0, row), "location of {e}");
            for c in t.columns() {
                assert_eq!(c.len(), t.len());
            }
        }
    }
    let mut es: Vec<Entity> = w.iter_entities().collect();
    es.sort();
    let entities = es
        .into_iter()
        .map(|e| {
            let loc = w.location(e).unwrap();
            let comps = w
                .components_of(e)
                .unwrap()
                .into_iter()
                .map(|id| {
                    let (added, changed) = match w.sparse_set(id) {
                        Some(s) if s.contains(e) => (s.added_tick(e).unwrap(), s.changed_tick(e).unwrap()),
                        _ => {
                            let c = w.tables()[loc.table as usize].column(id).unwrap();
                            (c.added_ticks().get(loc.row as usize).unwrap(), c.changed_ticks()[loc.row as usize])
                        }
                    };
                    (w.components().info(id).name().to_string(), w.get_component_value(e, id).unwrap(), added, changed)
                })
                .collect();
            (e, comps)
        })
        .collect();
    (entities, w.entities().state())
}

/// How an [`Op::Insert`] gives its values (the three [`BulkValues`]).
#[derive(Clone, Copy, Debug)]
enum Given {
    /// Each target its own, from consecutive seeds.
    PerTarget,
    /// One set of values for every target.
    Same,
    /// None: every component at its zero value.
    Zero,
}

#[derive(Clone, Debug)]
enum Op {
    Spawn {
        mask: u8,
        seeds: Vec<u32>,
    },
    Insert {
        picks: Vec<usize>,
        mask: u8,
        seed: u32,
        values: Given,
    },
    Remove {
        picks: Vec<usize>,
        mask: u8,
    },
    Despawn {
        picks: Vec<usize>,
    },
    /// Advances the change tick, so later writes are stamped differently.
    Tick,
}

fn op() -> impl Strategy<Value = Op> {
    let picks = proptest::collection::vec(0usize..64, 0..12);
    prop_oneof![
        (any::<u8>(), proptest::collection::vec(0u32..200, 0..10)).prop_map(|(mask, seeds)| Op::Spawn { mask, seeds }),
        (
            picks.clone(),
            any::<u8>(),
            0u32..200,
            prop_oneof![Just(Given::PerTarget), Just(Given::Same), Just(Given::Zero)]
        )
            .prop_map(|(picks, mask, seed, values)| Op::Insert { picks, mask, seed, values }),
        (picks.clone(), any::<u8>()).prop_map(|(picks, mask)| Op::Remove { picks, mask }),
        picks.prop_map(|picks| Op::Despawn { picks }),
        Just(Op::Tick),
    ]
}

/// Distinct live entities picked by index into the live list (sorted, so both worlds agree).
fn pick(w: &World, picks: &[usize]) -> Vec<Entity> {
    let mut live: Vec<Entity> = w.iter_entities().collect();
    live.sort();
    let mut out = Vec::new();
    if live.is_empty() {
        return out;
    }
    for &p in picks {
        let e = live[p % live.len()];
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn apply(bulk: &mut World, model: &mut World, op: &Op) {
    match op {
        Op::Spawn { mask, seeds } => {
            let comps = names(*mask);
            let (ids, values) = bulk_values(bulk, &comps, seeds);
            let got = bulk.spawn_many(seeds.len(), &ids, values).unwrap();
            let want: Vec<Entity> = seeds
                .iter()
                .map(|&seed| {
                    let fs: Vec<Vec<(&str, Value)>> = comps.iter().map(|c| fields(c, seed)).collect();
                    let spec: Vec<(&str, &[(&str, Value)])> =
                        comps.iter().zip(&fs).map(|(c, f)| (*c, f.as_slice())).collect();
                    model.spawn_values(&spec).unwrap()
                })
                .collect();
            assert_eq!(got, want);
        }
        Op::Insert { picks, mask, seed, values: Given::Zero } => {
            let targets = pick(model, picks);
            let comps = names(*mask);
            let _ = seed;
            let ids: Vec<_> = comps.iter().map(|c| bulk.component_id(c).unwrap()).collect();
            bulk.insert_many(&targets, &ids, BulkValues::Zero).unwrap();
            let spec: Vec<(&str, &[(&str, Value)])> = comps.iter().map(|c| (*c, &[][..])).collect();
            for e in &targets {
                model.insert_values(*e, &spec).unwrap();
            }
        }
        Op::Insert { picks, mask, seed, values: given } => {
            let targets = pick(model, picks);
            let comps = names(*mask);
            let same = matches!(given, Given::Same);
            let seeds: Vec<u32> = (0..targets.len() as u32).map(|i| if same { *seed } else { seed + i }).collect();
            let values = if same {
                let (ids, once) = bulk_values(bulk, &comps, &[*seed]);
                bulk.insert_many(&targets, &ids, BulkValues::Same(once))
            } else {
                let (ids, values) = bulk_values(bulk, &comps, &seeds);
                bulk.insert_many(&targets, &ids, BulkValues::PerTarget(values))
            };
            values.unwrap();
            for (e, s) in targets.iter().zip(seeds) {
                one_by_one_insert(model, *e, &comps, s);
            }
        }
        Op::Remove { picks, mask } => {
            let targets = pick(model, picks);
            let ids: Vec<_> = names(*mask).iter().map(|c| model.component_id(c).unwrap()).collect();
            let got = bulk.remove_many(&targets, &ids).unwrap();
            let mut want = 0;
            for &e in &targets {
                let mut any = false;
                for &id in &ids {
                    any |= model.remove_by_id(e, id).unwrap();
                }
                want += usize::from(any);
            }
            assert_eq!(got, want);
        }
        Op::Despawn { picks } => {
            let targets = pick(model, picks);
            bulk.despawn_bulk(&targets).unwrap();
            for &e in &targets {
                model.despawn(e).unwrap();
            }
        }
        Op::Tick => {
            bulk.read_change_tick();
            model.read_change_tick();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::test_size(if cfg!(debug_assertions) { 64 } else { 256 }, 2),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn bulk_operations_equal_one_by_one(ops in proptest::collection::vec(op(), 1..crate::test_size(40, 12))) {
        let (mut bulk, mut model) = (world(), world());
        for op in &ops {
            apply(&mut bulk, &mut model, op);
            prop_assert_eq!(dump(&bulk), dump(&model), "after {:?}", op);
        }
    }
}

#[test]
fn failing_checks_change_nothing() {
    let mut w = world();
    let a = w.component_id("A").unwrap();
    let t = w.component_id("T").unwrap();
    let (ids, values) = bulk_values(&w, &["A", "S"], &[1, 2, 3, 4]);
    let es = w.spawn_many(4, &ids, values).unwrap();
    w.despawn(es[3]).unwrap();
    let (ids, values) = bulk_values(&w, &["A"], &[5]);
    let without_s = w.spawn_many(1, &ids, values).unwrap()[0];
    let before = dump(&w);
    // A stale target after live ones.
    let targets = [es[0], es[1], es[3]];
    assert!(w.despawn_bulk(&targets).is_err());
    assert!(w.remove_many(&targets, &[a]).is_err());
    let (_, values) = bulk_values(&w, &["T"], &[0, 0, 0]);
    assert!(w.insert_many(&targets, &[t], BulkValues::PerTarget(values)).is_err());
    // Sparse components only: no rows move, but the same checks hold.
    let s = w.component_id("S").unwrap();
    let (_, once) = bulk_values(&w, &["S"], &[7]);
    assert!(w.insert_many(&targets, &[s], BulkValues::Same(once.clone())).is_err());
    assert!(w.insert_many(&[es[0], es[1], es[0]], &[s], BulkValues::Same(once)).is_err());
    assert!(w.remove_many(&targets, &[s]).is_err());
    assert!(w.remove_many(&[es[1], es[1]], &[s]).is_err());
    assert!(w.remove_many(&[es[0], without_s, without_s], &[s]).is_err());
    assert!(w.remove_many(&[es[0], es[3]], &[s, s]).is_err());
    // A repeated target.
    assert!(w.despawn_bulk(&[es[0], es[1], es[0]]).is_err());
    // Values that do not fit their field, or do not match the targets.
    let bad = vec![vec![(0, FieldValue::Str("no".into()))]];
    assert!(w.insert_many(&[es[0]], &[a], BulkValues::PerTarget(bad.clone())).is_err());
    assert!(w.insert_many(&[es[0], es[1]], &[a], BulkValues::Same(bad.clone())).is_err());
    assert!(w.spawn_many(1, &[a], bad).is_err());
    assert!(w.insert_many(&[es[0], es[1]], &[t], BulkValues::PerTarget(vec![vec![]])).is_err());
    assert!(w.insert_many(&[es[0], es[1]], &[t], BulkValues::Same(vec![vec![], vec![]])).is_err());
    assert!(w.spawn_many(2, &[t, t], vec![vec![]; 4]).is_err());
    assert_eq!(dump(&w), before);
}

#[test]
fn component_values_are_kept_flat() {
    let mut v = crate::ComponentValues::default();
    v.push_component([(0, FieldValue::Str("a".into()))]);
    v.end_component();
    v.push_field(1, FieldValue::Str("b".into()));
    v.push_field(0, FieldValue::Str("c".into()));
    v.end_component();
    assert_eq!(v.len(), 3);
    let lens: Vec<usize> = v.iter().map(<[_]>::len).collect();
    assert_eq!(lens, [1, 0, 2]);
    assert_eq!(v.get(2).map(|f| f[1].0), Some(0));
    assert!(v.get(3).is_none());
    v.push_field(0, FieldValue::Str("d".into()));
    assert!(v.has_unended_fields());
    v.truncate(1);
    assert!(!v.has_unended_fields());
    assert_eq!((v.len(), v.iter().map(<[_]>::len).sum::<usize>()), (1, 1));
}

#[test]
fn spawn_mixed_refuses_fields_after_the_last_component_value() {
    let mut w = world();
    let (ids, values) = bulk_values(&w, &["A"], &[1]);
    let mut flat = crate::ComponentValues::from(values);
    flat.push_field(0, FieldValue::Str("stray".into()));
    let before = dump(&w);
    assert!(w.spawn_mixed(&[&ids], &[0], &mut flat).is_err());
    assert!(flat.has_unended_fields());
    assert_eq!(dump(&w), before);
}
