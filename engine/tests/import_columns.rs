//! `World::import_columns` against a plain model: random components (table and sparse, plain
//! and string fields, tags) listing random subsets of entities in random orders, so tables
//! interleave, components disagree on a table's order, and rows come in several runs. Every
//! entity must come back with exactly its components and values, and each table must list its
//! entities in the order of its first component.

use std::collections::BTreeMap;

use ecsdb_engine::snapshot::{ColumnarWorld, ComponentColumns, FieldValues};
use ecsdb_engine::{ComponentDef, Entity, FieldType, StorageKind, Value, World};
use proptest::prelude::*;

/// The field layouts a generated component may have.
const SHAPES: [&[(&str, FieldType)]; 4] = [
    &[("x", FieldType::I32)],
    &[("s", FieldType::String)],
    &[("a", FieldType::F32), ("s", FieldType::String), ("b", FieldType::U8)],
    &[],
];

/// One generated component: its shape, storage, and rows as (entity slot, seed of its values).
#[derive(Clone, Debug)]
struct Generated {
    shape: usize,
    sparse: bool,
    rows: Vec<(usize, u32)>,
}

fn component() -> impl Strategy<Value = Generated> {
    (0..SHAPES.len(), prop::bool::weighted(0.2), prop::collection::vec((0..48usize, any::<u32>()), 0..40)).prop_map(
        |(shape, sparse, mut rows)| {
            // Each entity at most once, in the generated (random) order.
            let mut seen = [false; 48];
            rows.retain(|&(slot, _)| !std::mem::replace(&mut seen[slot], true));
            Generated { shape, sparse, rows }
        },
    )
}

/// The value of field `f` (of type `ty`) for a row seeded `seed`.
fn value(ty: FieldType, seed: u32, f: usize) -> Value {
    let v = seed.rotate_left(f as u32 * 7);
    match ty {
        FieldType::I32 => Value::Int(v as i32 as i64),
        FieldType::U8 => Value::Int((v % 256) as i64),
        FieldType::F32 => Value::Float((v % 1000) as f32 as f64 / 4.0),
        FieldType::String => Value::Str("é".repeat((v % 4) as usize) + &(v % 97).to_string()),
        _ => unreachable!("not generated"),
    }
}

fn columns(name: &str, g: &Generated, entity: &impl Fn(usize) -> Entity) -> ComponentColumns {
    let fields = SHAPES[g.shape];
    let mut def = ComponentDef::new(name, fields);
    if g.sparse {
        def.storage = StorageKind::Sparse;
    }
    let runs = fields
        .iter()
        .enumerate()
        .map(|(f, &(_, ty))| {
            let values = g.rows.iter().map(|&(_, seed)| value(ty, seed, f));
            match ty {
                FieldType::String => {
                    let texts: Vec<String> = values
                        .map(|v| match v {
                            Value::Str(s) => s,
                            _ => unreachable!(),
                        })
                        .collect();
                    FieldValues::Strings {
                        lengths: texts.iter().map(|t| t.len() as u32).collect(),
                        text: texts.concat().into_bytes(),
                    }
                }
                _ => FieldValues::Plain(
                    values
                        .flat_map(|v| match (ty, v) {
                            (FieldType::I32, Value::Int(i)) => (i as i32).to_le_bytes().to_vec(),
                            (FieldType::U8, Value::Int(i)) => vec![i as u8],
                            (FieldType::F32, Value::Float(x)) => (x as f32).to_le_bytes().to_vec(),
                            _ => unreachable!(),
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    ComponentColumns { def, entities: g.rows.iter().map(|&(slot, _)| entity(slot)).collect(), fields: runs }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn imported_worlds_match_the_model(
        generated in prop::collection::vec(component(), 1..5),
        generations in prop::collection::vec(0u32..3, 48),
        bare in prop::collection::vec(0..48usize, 0..4),
    ) {
        let entity = |slot: usize| Entity::from_parts(slot as u32, generations[slot]);
        let names: Vec<String> = (0..generated.len()).map(|k| format!("C{k}")).collect();
        // The model: entity slot -> component -> field values.
        let mut model: BTreeMap<usize, BTreeMap<usize, Vec<Value>>> = BTreeMap::new();
        for (k, g) in generated.iter().enumerate() {
            for &(slot, seed) in &g.rows {
                let values = SHAPES[g.shape].iter().enumerate().map(|(f, &(_, ty))| value(ty, seed, f)).collect();
                model.entry(slot).or_default().insert(k, values);
            }
        }
        let mut bare: Vec<usize> = bare.into_iter().filter(|s| !model.contains_key(s)).collect();
        bare.sort_unstable();
        bare.dedup();
        let data = ColumnarWorld {
            components: generated.iter().zip(&names).map(|(g, n)| columns(n, g, &entity)).collect(),
            bare_entities: bare.iter().map(|&s| entity(s)).collect(),
            ..Default::default()
        };
        let mut world = World::new();
        world.import_columns(&data).unwrap();

        prop_assert_eq!(world.len(), model.len() + bare.len());
        for (&slot, components) in &model {
            let e = entity(slot);
            let mut want: Vec<String> = components.keys().map(|&k| names[k].clone()).collect();
            want.sort();
            let mut have: Vec<String> = world
                .components_of(e)
                .unwrap()
                .into_iter()
                .map(|id| world.components().info(id).name().to_string())
                .collect();
            have.sort();
            prop_assert_eq!(have, want);
            for (&k, values) in components {
                for (f, (&(field, _), v)) in SHAPES[generated[k].shape].iter().zip(values).enumerate() {
                    let got = world.get_field(e, &names[k], field).unwrap();
                    prop_assert_eq!(&got, v, "{} field {} ({}) of {}", names[k], field, f, e);
                }
            }
        }
        for &slot in &bare {
            prop_assert!(world.components_of(entity(slot)).unwrap().is_empty());
        }
        // Each table lists its entities in its first table component's row order.
        let order: Vec<Entity> = world.iter_entities().collect();
        let position = |e: Entity| order.iter().position(|&x| x == e).unwrap();
        for (k, g) in generated.iter().enumerate().filter(|(_, g)| !g.sparse) {
            for pair in g.rows.windows(2) {
                let (a, b) = (entity(pair[0].0), entity(pair[1].0));
                let table_of = |e: Entity| -> Vec<usize> {
                    let mut t: Vec<usize> = model[&(e.index() as usize)]
                        .keys()
                        .copied()
                        .filter(|&j| !generated[j].sparse)
                        .collect();
                    t.sort_unstable();
                    t
                };
                let (ta, tb) = (table_of(a), table_of(b));
                // Same table, and `k` is that table's first component: a before b.
                if ta == tb && ta.first() == Some(&k) {
                    prop_assert!(position(a) < position(b), "{} lists {} before {}", names[k], a, b);
                }
            }
        }
    }
}
