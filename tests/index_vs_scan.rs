//! Differential test of the secondary indexes: random worlds changed through every write
//! path (typed spawn/insert/remove/despawn, `get_mut`, `query_mut` with `Mut` writes,
//! dynamic `set_fields`/`insert_values`/`remove_component`, command buffers, `clear`), and
//! after them every index kind's answer to random predicates must equal a full scan's answer
//! exactly — including the order of ordered answers and every boundary case (grid-snapped
//! coordinates and radii make ties and points exactly on the sphere common).
//!
//! The scan reads values through the dynamic API and applies the text language's rules
//! (`int` vs `float` as floats, null and NaN never compare, `distance` as the sum of squared
//! differences in coordinate order, ties by entity index).

use std::cmp::Ordering;
use std::ops::Bound;

use ecsdb::index::{IndexAnswer, IndexDef, IndexKind, IndexPredicate, RtreeUpdate, Wanted};
use ecsdb::{CommandBuffer, Component, ComponentDef, Entity, FieldType, Value, World};
use proptest::prelude::*;

mod common;
use common::rng::Rng;

#[derive(Component, Clone, Copy, Debug)]
struct Pos {
    x: f32,
    y: f32,
    z: f32,
}
#[derive(Component, Clone, Copy, Debug)]
struct Team {
    id: u8,
}
#[derive(Component, Clone, Debug)]
struct Name {
    value: String,
}
#[derive(Component, Clone, Copy, Debug)]
struct Frozen;
#[derive(Component, Clone, Copy, Debug)]
#[component(storage = "sparse")]
struct Marked {
    n: i32,
}
#[derive(Component, Clone, Copy, Debug)]
struct Dir {
    v: [f32; 2],
}
#[derive(Component, Clone, Copy, Debug)]
struct Link {
    target: Entity,
}

/// Floats a Health.hp may hold: boundaries, signed zero, NaN, infinities.
const HP: [f64; 12] = [-2.0, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 7.25, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

#[derive(Clone, Debug)]
enum Op {
    Spawn {
        pos: Option<(i8, i8, i8)>,
        team: Option<u8>,
        name: Option<u8>,
        frozen: bool,
        marked: Option<i32>,
        dir: Option<(i8, i8)>,
        hp: Option<u8>,
    },
    SpawnMany(u16, u8),
    Despawn(usize),
    InsertPosTeam(usize, (i8, i8, i8), u8),
    InsertFrozen(usize),
    RemoveFrozen(usize),
    RemovePos(usize),
    MutPos(usize, (i8, i8, i8)),
    QueryMutPos(i8),
    SetPosNaN(usize),
    SetHp(usize, u8),
    InsertHp(usize, u8),
    RemoveHp(usize),
    SetTeamDyn(usize, u8),
    SetName(usize, u8),
    InsertMarked(usize, i32),
    RemoveMarked(usize),
    SetLink(usize, Option<usize>),
    MutDir(usize, (i8, i8)),
    /// `Place(x f64, y f64)`, a run-time component in thirds (not `f32` values).
    SetPlace(usize, (i8, i8)),
    Commands(Vec<(usize, u8)>),
    Refresh(u8),
    Check(u64),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    let ix = 0usize..200;
    let p3 = (-20i8..20, -20i8..20, -6i8..6);
    prop_oneof![
        6 => (proptest::option::weighted(0.8, p3.clone()), proptest::option::of(0u8..4), proptest::option::of(0u8..5), any::<bool>(),
              proptest::option::of(-5i32..5), proptest::option::of((-8i8..8, -8i8..8)), proptest::option::of(0u8..12))
            .prop_map(|(pos, team, name, frozen, marked, dir, hp)| Op::Spawn { pos, team, name, frozen, marked, dir, hp }),
        1 => (50u16..400, any::<u8>()).prop_map(|(n, s)| Op::SpawnMany(n, s)),
        2 => ix.clone().prop_map(Op::Despawn),
        1 => (ix.clone(), p3.clone(), 0u8..4).prop_map(|(i, p, t)| Op::InsertPosTeam(i, p, t)),
        1 => ix.clone().prop_map(Op::InsertFrozen),
        1 => ix.clone().prop_map(Op::RemoveFrozen),
        1 => ix.clone().prop_map(Op::RemovePos),
        3 => (ix.clone(), (-2i8..3, -2i8..3, -1i8..2)).prop_map(|(i, d)| Op::MutPos(i, d)),
        2 => (-2i8..3).prop_map(Op::QueryMutPos),
        1 => ix.clone().prop_map(Op::SetPosNaN),
        2 => (ix.clone(), 0u8..12).prop_map(|(i, h)| Op::SetHp(i, h)),
        1 => (ix.clone(), 0u8..12).prop_map(|(i, h)| Op::InsertHp(i, h)),
        1 => ix.clone().prop_map(Op::RemoveHp),
        1 => (ix.clone(), 0u8..4).prop_map(|(i, t)| Op::SetTeamDyn(i, t)),
        1 => (ix.clone(), 0u8..5).prop_map(|(i, n)| Op::SetName(i, n)),
        1 => (ix.clone(), -5i32..5).prop_map(|(i, n)| Op::InsertMarked(i, n)),
        1 => ix.clone().prop_map(Op::RemoveMarked),
        1 => (ix.clone(), proptest::option::of(ix.clone())).prop_map(|(i, t)| Op::SetLink(i, t)),
        1 => (ix.clone(), (-2i8..3, -2i8..3)).prop_map(|(i, d)| Op::MutDir(i, d)),
        2 => (ix.clone(), (-30i8..30, -30i8..30)).prop_map(|(i, d)| Op::SetPlace(i, d)),
        1 => proptest::collection::vec((ix.clone(), 0u8..5), 0..6).prop_map(Op::Commands),
        2 => any::<u8>().prop_map(Op::Refresh),
        2 => any::<u64>().prop_map(Op::Check),
        1 => (0u8..20).prop_filter_map("rare", |x| (x == 0).then_some(Op::Clear)),
    ]
}

struct Harness {
    world: World,
    history: Vec<Entity>,
}

fn half(v: i8) -> f32 {
    v as f32 * 0.5
}

impl Harness {
    fn new() -> Harness {
        let mut world = World::new();
        world.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F64)])).unwrap();
        world.define_component(&ComponentDef::new("Place", &[("x", FieldType::F64), ("y", FieldType::F64)])).unwrap();
        world.register::<Pos>().unwrap();
        world.register::<Team>().unwrap();
        world.register::<Name>().unwrap();
        world.register::<Frozen>().unwrap();
        world.register::<Marked>().unwrap();
        world.register::<Dir>().unwrap();
        world.register::<Link>().unwrap();
        let ok = |r: ecsdb::Result<String>| r.unwrap();
        ok(world.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree)));
        ok(world.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree).named("pos_per_row")));
        ok(world.create_index(IndexDef::new("Pos", &[], IndexKind::Rtree).named("pos_rebuild")));
        world.set_rtree_update("pos_per_row", RtreeUpdate::PerRow).unwrap();
        world.set_rtree_update("pos_rebuild", RtreeUpdate::Rebuild).unwrap();
        ok(world.create_index(IndexDef::new("Pos", &["x", "y"], IndexKind::Rtree)));
        ok(world.create_index(IndexDef::new("Dir", &["v"], IndexKind::Rtree)));
        ok(world.create_index(IndexDef::new("Place", &[], IndexKind::Rtree)));
        ok(world.create_index(IndexDef::new("Team", &["id"], IndexKind::Bitmap)));
        ok(world.create_index(IndexDef::new("Team", &["id"], IndexKind::Btree)));
        ok(world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Btree)));
        ok(world.create_index(IndexDef::new("Health", &["hp"], IndexKind::Bitmap)));
        ok(world.create_index(IndexDef::new("Name", &["value"], IndexKind::Btree)));
        ok(world.create_index(IndexDef::new("Name", &["value"], IndexKind::Bitmap)));
        ok(world.create_index(IndexDef::new("Frozen", &[], IndexKind::Bitmap)));
        ok(world.create_index(IndexDef::new("Marked", &["n"], IndexKind::Btree)));
        ok(world.create_index(IndexDef::new("Link", &["target"], IndexKind::Btree)));
        ok(world.create_index(IndexDef::new("Link", &["target"], IndexKind::Bitmap)));
        ok(world.create_index(IndexDef::new("Link", &["target"], IndexKind::Relation)));
        for (component, field) in [("Team", "id"), ("Health", "hp"), ("Name", "value"), ("Link", "target")] {
            ok(world.create_index(IndexDef::new(component, &[field], IndexKind::Skip)));
        }
        ok(world.create_function_index("east", "Pos", |v: &Value| match v {
            Value::Object(f) => f[0].1.as_f64().is_some_and(|x| x > 0.0),
            _ => false,
        }));
        ok(world.create_function_index_typed("low_team", |t: &Team| t.id < 2));
        Harness { world, history: Vec::new() }
    }

    fn pick(&self, i: usize) -> Option<Entity> {
        (!self.history.is_empty()).then(|| self.history[i % self.history.len()])
    }

    fn apply(&mut self, op: &Op) {
        let w = &mut self.world;
        match op.clone() {
            Op::Spawn { pos, team, name, frozen, marked, dir, hp } => {
                let e = match pos {
                    Some((x, y, z)) => w.spawn(Pos { x: half(x), y: half(y), z: half(z) }),
                    None => w.spawn(()),
                };
                if let Some(t) = team {
                    w.insert(e, Team { id: t }).unwrap();
                }
                if let Some(n) = name {
                    w.insert(e, Name { value: format!("n{n}") }).unwrap();
                }
                if frozen {
                    w.insert(e, (Frozen,)).unwrap();
                }
                if let Some(n) = marked {
                    w.insert(e, Marked { n }).unwrap();
                }
                if let Some((a, b)) = dir {
                    w.insert(e, Dir { v: [half(a), half(b)] }).unwrap();
                }
                if let Some(h) = hp {
                    w.insert_values(e, &[("Health", &[("hp", Value::Float(HP[h as usize]))])]).unwrap();
                }
                let target = self.history.last().copied().unwrap_or(Entity::NULL);
                w.insert(e, Link { target }).unwrap();
                self.history.push(e);
            }
            Op::SpawnMany(n, seed) => {
                let mut r = Rng::new(seed as u64 * 7919 + 1);
                let batch: Vec<(Pos, Team)> = (0..n)
                    .map(|_| {
                        let c = |r: &mut Rng, m: usize| half(r.below(m) as i8 - (m / 2) as i8);
                        (Pos { x: c(&mut r, 40), y: c(&mut r, 40), z: c(&mut r, 12) }, Team { id: r.below(4) as u8 })
                    })
                    .collect();
                self.history.extend(w.spawn_batch(batch));
            }
            Op::Despawn(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.despawn(e);
                }
            }
            Op::InsertPosTeam(i, (x, y, z), t) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.insert(e, (Pos { x: half(x), y: half(y), z: half(z) }, Team { id: t }));
                }
            }
            Op::InsertFrozen(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.insert(e, (Frozen,));
                }
            }
            Op::RemoveFrozen(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.remove::<(Frozen,)>(e);
                }
            }
            Op::RemovePos(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.remove::<(Pos,)>(e);
                }
            }
            Op::MutPos(i, (dx, dy, dz)) => {
                if let Some(e) = self.pick(i)
                    && let Ok(mut p) = self.world.get_mut::<Pos>(e)
                {
                    p.x += half(dx);
                    p.y += half(dy);
                    p.z += half(dz);
                }
            }
            Op::QueryMutPos(d) => {
                for (i, mut p) in w.query_mut::<&mut Pos>().enumerate() {
                    if i % 3 == 0 {
                        p.x += half(d);
                    } else if i % 3 == 1 {
                        // Read only: no change tick.
                        let _ = p.y;
                    } else {
                        p.set_changed();
                    }
                }
            }
            Op::SetPosNaN(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.set_fields(e, "Pos", &[("y", Value::Float(f64::NAN))]);
                }
            }
            Op::SetHp(i, h) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.set_fields(e, "Health", &[("hp", Value::Float(HP[h as usize]))]);
                }
            }
            Op::InsertHp(i, h) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.insert_values(e, &[("Health", &[("hp", Value::Float(HP[h as usize]))])]);
                }
            }
            Op::RemoveHp(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.remove_component(e, "Health");
                }
            }
            Op::SetTeamDyn(i, t) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.set_fields(e, "Team", &[("id", Value::Int(t as i64))]);
                }
            }
            Op::SetName(i, n) => {
                if let Some(e) = self.pick(i)
                    && let Ok(mut name) = self.world.get_mut::<Name>(e)
                {
                    name.value = format!("n{n}");
                }
            }
            Op::InsertMarked(i, n) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.insert(e, Marked { n });
                }
            }
            Op::RemoveMarked(i) => {
                if let Some(e) = self.pick(i) {
                    let _ = self.world.remove::<(Marked,)>(e);
                }
            }
            Op::SetLink(i, t) => {
                let target = t.and_then(|t| self.pick(t)).unwrap_or(Entity::NULL);
                if let Some(e) = self.pick(i)
                    && let Ok(mut l) = self.world.get_mut::<Link>(e)
                {
                    l.target = target;
                }
            }
            Op::MutDir(i, (a, b)) => {
                if let Some(e) = self.pick(i)
                    && let Ok(mut d) = self.world.get_mut::<Dir>(e)
                {
                    d.v[0] += half(a);
                    d.v[1] += half(b);
                }
            }
            Op::SetPlace(i, (a, b)) => {
                if let Some(e) = self.pick(i) {
                    let (x, y) = (Value::Float(a as f64 / 3.0), Value::Float(b as f64 / 3.0));
                    // Insert when absent (a table move), overwrite otherwise.
                    if self.world.set_fields(e, "Place", &[("x", x.clone()), ("y", y.clone())]).is_err() {
                        let _ = self.world.insert_values(e, &[("Place", &[("x", x), ("y", y)])]);
                    }
                }
            }
            Op::Commands(cmds) => {
                let mut buf = CommandBuffer::new();
                for (i, kind) in cmds {
                    let Some(e) = self.pick(i) else { continue };
                    match kind {
                        0 => {
                            buf.spawn((Pos { x: half(i as i8 % 40 - 20), y: 0.5, z: 0.0 }, Team { id: (i % 4) as u8 }))
                        }
                        1 => buf.despawn(e),
                        2 => buf.insert(e, (Frozen, Team { id: 3 })),
                        3 => buf.remove::<(Pos,)>(e),
                        _ => buf.push(move |w: &mut World| w.set_fields(e, "Health", &[("hp", Value::Float(1.5))])),
                    }
                }
                let report = buf.apply(&mut self.world);
                self.history.extend(report.spawned);
            }
            Op::Refresh(k) => {
                // All indexes, or one, or one component's: the others are left dirty and
                // catch up when a later reader wants them (through the logs or the ticks).
                let defs = self.world.index_definitions();
                let def = &defs[k as usize % defs.len().max(1)];
                match k % 3 {
                    0 => drop(self.world.index_reader()),
                    1 => drop(self.world.index_reader_for(Wanted::One(def.name.as_deref().unwrap_or_default()))),
                    _ => {
                        let id = self.world.component_id(&def.component).unwrap();
                        drop(self.world.index_reader_for(Wanted::On(&[id])))
                    }
                }
            }
            Op::Check(seed) => check_all(&self.world, seed),
            Op::Clear => self.world.clear(),
        }
    }
}

// ----- the scan -------------------------------------------------------------------------

/// Every live entity with the component, ascending by index, with the given fields' values.
fn scan(w: &World, component: &str, fields: &[&str]) -> Vec<(u32, Vec<Value>)> {
    let id = w.component_id(component).unwrap();
    let mut out: Vec<(u32, Vec<Value>)> = w
        .iter_entities()
        .filter(|&e| w.has_component(e, id).unwrap())
        .map(|e| (e.index(), fields.iter().map(|f| w.get_field(e, component, f).unwrap()).collect()))
        .collect();
    out.sort_by_key(|(i, _)| *i);
    out
}

/// The language's `compare`: null/NaN (and type mismatches, which the test avoids) → None.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Entity(x), Value::Entity(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn holds(v: &Value, p: &IndexPredicate) -> bool {
    let eq = |x: &Value| compare(v, x) == Some(Ordering::Equal);
    let in_range = |low: &Bound<Value>, high: &Bound<Value>| {
        let lo = match low {
            Bound::Unbounded => true,
            Bound::Included(x) => matches!(compare(v, x), Some(Ordering::Greater | Ordering::Equal)),
            Bound::Excluded(x) => compare(v, x) == Some(Ordering::Greater),
        };
        let hi = match high {
            Bound::Unbounded => true,
            Bound::Included(x) => matches!(compare(v, x), Some(Ordering::Less | Ordering::Equal)),
            Bound::Excluded(x) => compare(v, x) == Some(Ordering::Less),
        };
        lo && hi
    };
    match p {
        IndexPredicate::Eq(x) => eq(x),
        IndexPredicate::In(xs) => xs.iter().any(eq),
        IndexPredicate::NotEq(x) => compare(v, x).is_some_and(|o| o != Ordering::Equal),
        IndexPredicate::Range { low, high } => in_range(low, high),
        IndexPredicate::Present => true,
        _ => unreachable!(),
    }
}

/// The query engine's `distance`.
fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt()
}

fn floats(vs: &[Value]) -> Vec<f64> {
    match vs {
        [Value::Vec2(v)] => v.to_vec(),
        [Value::Vec3(v)] => v.to_vec(),
        _ => vs.iter().map(|v| v.as_f64().unwrap()).collect(),
    }
}

fn answer_of(w: &World, name: &str, p: &IndexPredicate) -> Option<Vec<u32>> {
    // Only this index is refreshed: every other one stays as the last reader left it.
    let r = w.index_reader_for(Wanted::One(name));
    let est = r.estimate(name, p);
    let ans = r.answer(name, p);
    assert_eq!(est.is_some(), ans.is_some(), "{name} {p:?}: estimate and answer disagree");
    let out: Vec<u32> = match ans? {
        IndexAnswer::Set(s) => {
            if let Some(e) = est.filter(|e| e.exact) {
                assert_eq!(e.rows, s.len(), "{name} {p:?}: exact estimate");
            }
            s.iter().collect()
        }
        IndexAnswer::Ordered(it) => it.collect(),
    };
    // The answer visited in place holds the same entities, each once.
    let mut visited = Vec::new();
    assert!(
        r.answer_each(name, p, &mut |ids| visited.extend_from_slice(ids)).is_some(),
        "{name} {p:?}: answer_each declines"
    );
    visited.sort_unstable();
    let mut expected = out.clone();
    expected.sort_unstable();
    assert_eq!(visited, expected, "{name} {p:?}: answer_each");
    Some(out)
}

/// `=`, `IN`, `!=`, presence or a range, on values of `kind`.
fn rand_predicate(r: &mut Rng, kind: &str) -> IndexPredicate {
    match r.below(5) {
        0 => IndexPredicate::Eq(rand_value(r, kind)),
        1 => IndexPredicate::In((0..r.below(4)).map(|_| rand_value(r, kind)).collect()),
        2 => IndexPredicate::NotEq(rand_value(r, kind)),
        3 => IndexPredicate::Present,
        _ => IndexPredicate::Range { low: rand_bound(r, kind), high: rand_bound(r, kind) },
    }
}

fn rand_value(r: &mut Rng, kind: &str) -> Value {
    match kind {
        "hp" => match r.below(5) {
            0 => Value::Int(r.below(5) as i64 - 2),
            1 => Value::Null,
            _ => Value::Float(*r.pick(&HP)),
        },
        "team" => match r.below(6) {
            0 => Value::Float(*r.pick(&[1.0, 1.5, -0.0])),
            1 => Value::Null,
            _ => Value::Int(r.below(5) as i64 - 1),
        },
        "marked" => match r.below(3) {
            0 => Value::Float(r.below(12) as f64 * 0.5 - 3.0),
            _ => Value::Int(r.below(12) as i64 - 6),
        },
        "name" => Value::Str(format!("n{}", r.below(6))),
        _ => unreachable!(),
    }
}

fn rand_bound(r: &mut Rng, kind: &str) -> Bound<Value> {
    match r.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(rand_value(r, kind)),
        _ => Bound::Excluded(rand_value(r, kind)),
    }
}

/// Sorts rows by value in the language's `ORDER BY` order (nulls first ascending, last
/// descending), ties by entity index.
fn order(rows: &mut [(u32, Value)], descending: bool) {
    rows.sort_by(|(ea, a), (eb, b)| {
        let o = match (a, b) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            // NaN rows only reach here when the index must decline; any total order will do.
            _ => compare(a, b).unwrap_or_else(|| a.as_f64().unwrap_or(0.0).total_cmp(&b.as_f64().unwrap_or(0.0))),
        };
        (if descending { o.reverse() } else { o }).then(ea.cmp(eb))
    });
}

fn check_keyed(w: &World, r: &mut Rng, component: &str, field: &str, kind: &str, indexes: &[(&str, bool)]) {
    let rows = scan(w, component, &[field]);
    let has_nan = rows.iter().any(|(_, v)| matches!(v[0], Value::Float(x) if x.is_nan()));
    for _ in 0..6 {
        let p = rand_predicate(r, kind);
        let want: Vec<u32> = rows.iter().filter(|(_, v)| holds(&v[0], &p)).map(|(e, _)| *e).collect();
        for &(name, ranges) in indexes {
            let got = answer_of(w, name, &p);
            if matches!(p, IndexPredicate::Range { .. }) && !ranges {
                assert!(got.is_none(), "{name} answered a range");
                continue;
            }
            assert_eq!(got.as_ref(), Some(&want), "{name} {p:?}");
        }
        // Ordered scans on the btree.
        let (low, high) = if r.below(2) == 0 {
            (Bound::Unbounded, Bound::Unbounded)
        } else {
            (rand_bound(r, kind), rand_bound(r, kind))
        };
        let unbounded = matches!((&low, &high), (Bound::Unbounded, Bound::Unbounded));
        let descending = r.below(2) == 0;
        let limit = (r.below(3) != 0).then(|| r.below(8));
        let p = IndexPredicate::Ordered { low: low.clone(), high: high.clone(), descending, limit };
        let mut sel: Vec<(u32, Value)> = rows
            .iter()
            .filter(|(_, v)| unbounded || holds(&v[0], &IndexPredicate::Range { low: low.clone(), high: high.clone() }))
            .map(|(e, v)| (*e, v[0].clone()))
            .collect();
        order(&mut sel, descending);
        let want: Vec<u32> = sel.iter().map(|(e, _)| *e).take(limit.unwrap_or(usize::MAX)).collect();
        for &(name, ranges) in indexes {
            let got = answer_of(w, name, &p);
            if !ranges || (has_nan && unbounded) {
                assert!(got.is_none(), "{name} {p:?} must decline");
                continue;
            }
            let got: Vec<u32> = got.unwrap().into_iter().take(limit.unwrap_or(usize::MAX)).collect();
            assert_eq!(got, want, "{name} {p:?}");
        }
    }
}

/// A skip index answers a superset: every matching row, and only rows that have the
/// component; it declines presence and the unbounded range (which nulls match).
fn check_skip(w: &World, r: &mut Rng, component: &str, field: &str, kind: &str) {
    let name = format!("{component}_{field}_skip");
    let rows = scan(w, component, &[field]);
    let all: Vec<u32> = rows.iter().map(|(e, _)| *e).collect();
    for _ in 0..8 {
        let p = rand_predicate(r, kind);
        let got = answer_of(w, &name, &p);
        let declines = matches!(&p, IndexPredicate::Present)
            || matches!(&p, IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Unbounded });
        if declines {
            assert!(got.is_none(), "{name} {p:?} must decline");
            continue;
        }
        let got = got.unwrap_or_else(|| panic!("{name} {p:?}: declined"));
        for (e, v) in &rows {
            assert!(!holds(&v[0], &p) || got.contains(e), "{name} {p:?}: missed {e}");
        }
        assert!(got.iter().all(|e| all.contains(e)), "{name} {p:?}: a row without the component");
    }
}

fn check_spatial(w: &World, r: &mut Rng, names: &[&str], component: &str, fields: &[&str]) {
    let rows: Vec<(u32, Vec<f64>)> = scan(w, component, fields).into_iter().map(|(e, v)| (e, floats(&v))).collect();
    let dims = rows.first().map_or(if fields.len() == 1 { 2 } else { fields.len() }, |(_, p)| p.len());
    let has_nan = rows.iter().any(|(_, p)| p.iter().any(|c| c.is_nan()));
    let thirds = component == "Place";
    let coord = |r: &mut Rng| if thirds { r.below(60) as f64 / 3.0 - 10.0 } else { r.below(50) as f64 * 0.5 - 12.5 };
    for _ in 0..6 {
        let c: Vec<f64> = (0..dims).map(|_| coord(r)).collect();
        let radius = if thirds { r.below(30) as f64 / 3.0 } else { r.below(24) as f64 * 0.5 };
        let inclusive = r.below(2) == 0;
        let p = IndexPredicate::WithinRadius { center: c.clone(), radius, inclusive };
        let want: Vec<u32> = rows
            .iter()
            .filter(|(_, q)| {
                let d = dist(q, &c);
                if inclusive { d <= radius } else { d < radius }
            })
            .map(|(e, _)| *e)
            .collect();
        for n in names {
            assert_eq!(answer_of(w, n, &p).as_ref(), Some(&want), "{n} {p:?}");
        }
        let lo: Vec<f64> = (0..dims).map(|_| coord(r)).collect();
        let hi: Vec<f64> = lo.iter().map(|l| l + r.below(20) as f64 * 0.5 - 1.0).collect();
        let p = IndexPredicate::InsideBox { lo: lo.clone(), hi: hi.clone() };
        let want: Vec<u32> =
            rows.iter().filter(|(_, q)| (0..dims).all(|i| lo[i] <= q[i] && q[i] <= hi[i])).map(|(e, _)| *e).collect();
        for n in names {
            assert_eq!(answer_of(w, n, &p).as_ref(), Some(&want), "{n} {p:?}");
        }
        let k = r.below(10);
        let p = IndexPredicate::Nearest { point: c.clone(), k };
        let mut by_d: Vec<(f64, u32)> = rows.iter().map(|(e, q)| (dist(q, &c), *e)).collect();
        by_d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // The planner may pull past `k` when other filters remain.
        let take = k + r.below(3) * 7;
        let want: Vec<u32> = by_d.iter().take(take).map(|(_, e)| *e).collect();
        for n in names {
            let got = answer_of(w, n, &p);
            if has_nan {
                assert!(got.is_none(), "{n}: kNN must decline with NaN positions");
            } else {
                let got: Vec<u32> = got.unwrap().into_iter().take(take).collect();
                assert_eq!(got, want, "{n} {p:?}");
            }
        }
        let present: Vec<u32> = rows.iter().map(|(e, _)| *e).collect();
        for n in names {
            assert_eq!(answer_of(w, n, &IndexPredicate::Present).as_ref(), Some(&present));
        }
    }
}

fn check_all(w: &World, seed: u64) {
    let mut r = Rng::new(seed);
    check_spatial(w, &mut r, &["Pos_x_y_z_rtree", "pos_per_row", "pos_rebuild"], "Pos", &["x", "y", "z"]);
    check_spatial(w, &mut r, &["Pos_x_y_rtree"], "Pos", &["x", "y"]);
    check_spatial(w, &mut r, &["Dir_v_rtree"], "Dir", &["v"]);
    check_spatial(w, &mut r, &["Place_x_y_rtree"], "Place", &["x", "y"]);
    check_keyed(w, &mut r, "Team", "id", "team", &[("Team_id_bitmap", false), ("Team_id_btree", true)]);
    check_keyed(w, &mut r, "Health", "hp", "hp", &[("Health_hp_bitmap", false), ("Health_hp_btree", true)]);
    check_keyed(w, &mut r, "Name", "value", "name", &[("Name_value_bitmap", false), ("Name_value_btree", true)]);
    check_keyed(w, &mut r, "Marked", "n", "marked", &[("Marked_n_btree", true)]);
    check_skip(w, &mut r, "Team", "id", "team");
    check_skip(w, &mut r, "Health", "hp", "hp");
    check_skip(w, &mut r, "Name", "value", "name");

    // Entity field with nulls: equality, !=, ordered with nulls first/last.
    let links = scan(w, "Link", &["target"]);
    let targets: Vec<Value> = links.iter().map(|(_, v)| v[0].clone()).collect();
    for _ in 0..4 {
        let v = if targets.is_empty() { Value::Null } else { r.pick(&targets).clone() };
        for p in [IndexPredicate::Eq(v.clone()), IndexPredicate::NotEq(v.clone()), IndexPredicate::Present] {
            let want: Vec<u32> = links.iter().filter(|(_, x)| holds(&x[0], &p)).map(|(e, _)| *e).collect();
            assert_eq!(answer_of(w, "Link_target_btree", &p).as_ref(), Some(&want), "{p:?}");
            assert_eq!(answer_of(w, "Link_target_bitmap", &p).as_ref(), Some(&want), "{p:?}");
            // The relation index answers `=` and `IN` exactly, as the bitmap does.
            if matches!(p, IndexPredicate::Eq(_)) {
                assert_eq!(answer_of(w, "Link_target_relation", &p).as_ref(), Some(&want), "relation {p:?}");
                let both = IndexPredicate::In(vec![v.clone(), Value::Null]);
                let want_in: Vec<u32> = links.iter().filter(|(_, x)| holds(&x[0], &both)).map(|(e, _)| *e).collect();
                assert_eq!(answer_of(w, "Link_target_relation", &both), Some(want_in), "relation {both:?}");
            }
            match answer_of(w, "Link_target_skip", &p) {
                None => assert!(matches!(p, IndexPredicate::Present), "skip declined {p:?}"),
                Some(got) => assert!(want.iter().all(|e| got.contains(e)), "skip {p:?}: a superset"),
            }
        }
        let descending = r.below(2) == 0;
        let mut sel: Vec<(u32, Value)> = links.iter().map(|(e, v)| (*e, v[0].clone())).collect();
        order(&mut sel, descending);
        let p = IndexPredicate::Ordered { low: Bound::Unbounded, high: Bound::Unbounded, descending, limit: None };
        assert_eq!(answer_of(w, "Link_target_btree", &p), Some(sel.iter().map(|(e, _)| *e).collect()));
    }

    let frozen: Vec<u32> = scan(w, "Frozen", &[]).into_iter().map(|(e, _)| e).collect();
    assert_eq!(answer_of(w, "Frozen_bitmap", &IndexPredicate::Present), Some(frozen));
    let east: Vec<u32> = scan(w, "Pos", &["x"])
        .into_iter()
        .filter(|(_, v)| v[0].as_f64().is_some_and(|x| x > 0.0))
        .map(|(e, _)| e)
        .collect();
    assert_eq!(answer_of(w, "east", &IndexPredicate::Function { name: "east".into() }), Some(east));
    let low: Vec<u32> = scan(w, "Team", &["id"])
        .into_iter()
        .filter(|(_, v)| v[0] == Value::Int(0) || v[0] == Value::Int(1))
        .map(|(e, _)| e)
        .collect();
    assert_eq!(answer_of(w, "low_team", &IndexPredicate::Function { name: "low_team".into() }), Some(low));

    // Every index holds exactly the component's rows.
    for info in w.indexes() {
        assert_eq!(info.entries as usize, w.component_count(info.component_id), "{}", info.name);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn index_answers_equal_scans(ops in proptest::collection::vec(op(), 1..70), seed in any::<u64>()) {
        let mut h = Harness::new();
        for (i, op) in ops.iter().enumerate() {
            h.apply(op);
            // Checks along the way refresh the indexes between writes: later refreshes
            // then take the rows the columns' write logs name instead of scanning ticks.
            if i % 6 == 5 {
                check_all(&h.world, seed ^ i as u64);
            }
        }
        check_all(&h.world, seed);
    }
}

/// A longer deterministic run that moves many entities by small steps frame after frame, so
/// the R-tree's loose boxes absorb moves, escape, and bulk-reload.
#[test]
fn frames_of_small_moves() {
    let mut h = Harness::new();
    h.apply(&Op::SpawnMany(400, 3));
    let mut r = Rng::new(99);
    for frame in 0..40 {
        for _ in 0..30 {
            let i = r.below(400);
            let d = ((r.below(3) as i8) - 1, (r.below(3) as i8) - 1, 0);
            h.apply(&Op::MutPos(i, d));
        }
        if frame % 5 == 0 {
            h.apply(&Op::QueryMutPos(1));
        }
        if frame % 3 == 0 {
            h.apply(&Op::Despawn(r.below(400)));
            h.apply(&Op::Spawn {
                pos: Some((1, 2, 3)),
                team: Some(1),
                name: None,
                frozen: false,
                marked: None,
                dir: None,
                hp: None,
            });
        }
        check_all(&h.world, frame);
    }
}
