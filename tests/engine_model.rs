//! Model test: random sequences of structural and value changes applied both to a `World`
//! and to a plain `HashMap` model; after every step every entity's components and every
//! query's result set must agree.

use std::collections::{BTreeSet, HashMap};

use ecsdb::{CommandBuffer, Component, ComponentDef, Entity, FieldType, Or, QueryState, Value, With, Without, World};
use proptest::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Pos {
    x: f32,
    y: f32,
}
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Vel {
    dx: f32,
}
#[derive(Component, Clone, Debug, PartialEq)]
struct Name {
    value: String,
}
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Tag;
#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Marked {
    n: i32,
}

/// What the model knows about one entity. `hp` is the run-time component `Health(hp f64)`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    pos: Option<Pos>,
    vel: Option<Vel>,
    name: Option<String>,
    tag: bool,
    marked: Option<i32>,
    hp: Option<f64>,
}

#[derive(Clone, Debug)]
enum Op {
    Spawn { pos: Option<f32>, vel: bool, name: Option<u8>, tag: bool, marked: Option<i32> },
    Despawn(usize),
    InsertPos(usize, f32),
    InsertVelTag(usize, f32),
    InsertName(usize, u8),
    InsertMarked(usize, i32),
    RemovePos(usize),
    RemoveVelTag(usize),
    RemoveMarked(usize),
    MutPos(usize, f32),
    QueryMutVel(f32),
    SetPosDynamic(usize, f32),
    SetBadDynamic(usize),
    InsertHealth(usize, i32),
    RemoveHealth(usize),
    RemoveByName(usize, u8),
    Commands(Vec<(usize, u8)>),
    OnStaleHandle(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let ix = 0usize..64;
    prop_oneof![
        4 => (proptest::option::of(-100f32..100.0), any::<bool>(), proptest::option::of(0u8..5), any::<bool>(), proptest::option::of(-5i32..5))
            .prop_map(|(pos, vel, name, tag, marked)| Op::Spawn { pos, vel, name, tag, marked }),
        2 => ix.clone().prop_map(Op::Despawn),
        1 => (ix.clone(), -10f32..10.0).prop_map(|(i, x)| Op::InsertPos(i, x)),
        1 => (ix.clone(), -10f32..10.0).prop_map(|(i, x)| Op::InsertVelTag(i, x)),
        1 => (ix.clone(), 0u8..5).prop_map(|(i, n)| Op::InsertName(i, n)),
        1 => (ix.clone(), -5i32..5).prop_map(|(i, n)| Op::InsertMarked(i, n)),
        1 => ix.clone().prop_map(Op::RemovePos),
        1 => ix.clone().prop_map(Op::RemoveVelTag),
        1 => ix.clone().prop_map(Op::RemoveMarked),
        1 => (ix.clone(), -10f32..10.0).prop_map(|(i, x)| Op::MutPos(i, x)),
        1 => (-1f32..1.0).prop_map(Op::QueryMutVel),
        1 => (ix.clone(), -10f32..10.0).prop_map(|(i, x)| Op::SetPosDynamic(i, x)),
        1 => ix.clone().prop_map(Op::SetBadDynamic),
        1 => (ix.clone(), -100i32..100).prop_map(|(i, x)| Op::InsertHealth(i, x)),
        1 => ix.clone().prop_map(Op::RemoveHealth),
        1 => (ix.clone(), 0u8..6).prop_map(|(i, c)| Op::RemoveByName(i, c)),
        1 => proptest::collection::vec((ix.clone(), 0u8..4), 0..6).prop_map(Op::Commands),
        1 => ix.prop_map(Op::OnStaleHandle),
    ]
}

struct Harness {
    world: World,
    model: HashMap<Entity, Model>,
    /// Every entity ever spawned, so ops can target live and dead ones alike.
    history: Vec<Entity>,
}

impl Harness {
    fn new() -> Harness {
        let mut world = World::new();
        world.define_component(&ComponentDef::new("Health", &[("hp", FieldType::F64)])).unwrap();
        // Name-based operations need the names in the catalog from the start.
        world.register::<Pos>().unwrap();
        world.register::<Vel>().unwrap();
        world.register::<Name>().unwrap();
        world.register::<Tag>().unwrap();
        world.register::<Marked>().unwrap();
        Harness { world, model: HashMap::new(), history: Vec::new() }
    }

    fn pick(&self, i: usize) -> Option<Entity> {
        (!self.history.is_empty()).then(|| self.history[i % self.history.len()])
    }

    fn spawn(&mut self, pos: Option<f32>, vel: bool, name: Option<u8>, tag: bool, marked: Option<i32>) -> Entity {
        // Spawn through a typed bundle for the common shapes, then add the rest.
        let e = match pos {
            Some(x) => self.world.spawn(Pos { x, y: -x }),
            None => self.world.spawn(()),
        };
        let mut m = Model { pos: pos.map(|x| Pos { x, y: -x }), ..Model::default() };
        if vel {
            self.world.insert(e, Vel { dx: 1.0 }).unwrap();
            m.vel = Some(Vel { dx: 1.0 });
        }
        if let Some(n) = name {
            self.world.insert(e, Name { value: format!("n{n}") }).unwrap();
            m.name = Some(format!("n{n}"));
        }
        if tag {
            self.world.insert(e, Tag).unwrap();
            m.tag = true;
        }
        if let Some(n) = marked {
            self.world.insert(e, Marked { n }).unwrap();
            m.marked = Some(n);
        }
        self.model.insert(e, m);
        self.history.push(e);
        e
    }

    /// Applies `op` to both sides; returns whether the world's result (ok or error) matched
    /// the model's expectation.
    fn apply(&mut self, op: &Op) {
        match op.clone() {
            Op::Spawn { pos, vel, name, tag, marked } => {
                self.spawn(pos, vel, name, tag, marked);
            }
            Op::Despawn(i) => {
                let Some(e) = self.pick(i) else { return };
                let r = self.world.despawn(e);
                assert_eq!(r.is_ok(), self.model.remove(&e).is_some());
            }
            Op::InsertPos(i, x) => self.with_entity(i, |w, e, m| {
                w.insert(e, Pos { x, y: 0.0 })?;
                m.pos = Some(Pos { x, y: 0.0 });
                Ok(())
            }),
            Op::InsertVelTag(i, x) => self.with_entity(i, |w, e, m| {
                w.insert(e, (Vel { dx: x }, Tag))?;
                m.vel = Some(Vel { dx: x });
                m.tag = true;
                Ok(())
            }),
            Op::InsertName(i, n) => self.with_entity(i, |w, e, m| {
                w.insert(e, Name { value: format!("n{n}") })?;
                m.name = Some(format!("n{n}"));
                Ok(())
            }),
            Op::InsertMarked(i, n) => self.with_entity(i, |w, e, m| {
                w.insert(e, Marked { n })?;
                m.marked = Some(n);
                Ok(())
            }),
            Op::RemovePos(i) => self.with_entity(i, |w, e, m| {
                let r = w.remove::<Pos>(e);
                assert_eq!(r.as_ref().ok(), m.pos.as_ref(), "removed value");
                if r.is_ok() {
                    m.pos = None;
                }
                Ok(())
            }),
            Op::RemoveVelTag(i) => self.with_entity(i, |w, e, m| {
                let r = w.remove::<(Vel, Tag)>(e);
                assert_eq!(r.is_ok(), m.vel.is_some() && m.tag, "bundle removal needs every component");
                if r.is_ok() {
                    m.vel = None;
                    m.tag = false;
                }
                Ok(())
            }),
            Op::RemoveMarked(i) => self.with_entity(i, |w, e, m| {
                let r = w.remove::<Marked>(e);
                assert_eq!(r.ok().map(|m| m.n), m.marked);
                m.marked = None;
                Ok(())
            }),
            Op::MutPos(i, x) => self.with_entity(i, |w, e, m| {
                match w.get_mut::<Pos>(e) {
                    Ok(mut p) => {
                        p.x = x;
                        m.pos.as_mut().expect("model agrees").x = x;
                    }
                    Err(_) => assert!(m.pos.is_none()),
                }
                Ok(())
            }),
            Op::QueryMutVel(d) => {
                for (mut v,) in self.world.query_filtered_mut::<(&mut Vel,), With<Tag>>() {
                    v.dx += d;
                }
                for m in self.model.values_mut() {
                    if let (Some(v), true) = (m.vel.as_mut(), m.tag) {
                        v.dx += d;
                    }
                }
            }
            Op::SetPosDynamic(i, x) => self.with_entity(i, |w, e, m| {
                let r = w.set_fields(e, "Pos", &[("y", Value::Float(x as f64))]);
                assert_eq!(r.is_ok(), m.pos.is_some());
                if let Some(p) = m.pos.as_mut() {
                    p.y = x;
                }
                Ok(())
            }),
            Op::SetBadDynamic(i) => self.with_entity(i, |w, e, _| {
                // Fails on the second field: nothing may change.
                assert!(w.set_fields(e, "Pos", &[("x", Value::Float(99.0)), ("y", Value::Str("no".into()))]).is_err());
                assert!(w.insert_values(e, &[("Health", &[("hp", Value::Int(1))]), ("Nope", &[])]).is_err());
                Ok(())
            }),
            Op::InsertHealth(i, hp) => self.with_entity(i, |w, e, m| {
                w.insert_values(e, &[("Health", &[("hp", Value::Int(hp as i64))])])?;
                m.hp = Some(hp as f64);
                Ok(())
            }),
            Op::RemoveHealth(i) => self.with_entity(i, |w, e, m| {
                assert_eq!(w.remove_component(e, "Health")?, m.hp.take().is_some());
                Ok(())
            }),
            Op::RemoveByName(i, c) => self.with_entity(i, |w, e, m| {
                let name = ["Pos", "Vel", "Name", "Tag", "Marked", "Health"][c as usize];
                let had = w.remove_component(e, name)?;
                let expected = match c {
                    0 => m.pos.take().is_some(),
                    1 => m.vel.take().is_some(),
                    2 => m.name.take().is_some(),
                    3 => std::mem::take(&mut m.tag),
                    4 => m.marked.take().is_some(),
                    _ => m.hp.take().is_some(),
                };
                assert_eq!(had, expected, "remove_component({name})");
                Ok(())
            }),
            Op::Commands(cmds) => {
                let mut buf = CommandBuffer::new();
                let mut expect_errors = 0;
                for (i, kind) in cmds {
                    let Some(e) = self.pick(i) else { continue };
                    let alive = self.model.contains_key(&e);
                    match kind {
                        0 => {
                            buf.despawn(e);
                            if alive {
                                self.model.remove(&e);
                            } else {
                                expect_errors += 1;
                            }
                        }
                        1 => {
                            buf.insert(e, Tag);
                            match self.model.get_mut(&e) {
                                Some(m) => m.tag = true,
                                None => expect_errors += 1,
                            }
                        }
                        2 => {
                            buf.remove::<Tag>(e);
                            match self.model.get_mut(&e) {
                                Some(m) if m.tag => m.tag = false,
                                _ => expect_errors += 1,
                            }
                        }
                        _ => buf.spawn((Pos { x: 7.0, y: -7.0 }, Marked { n: 7 })),
                    }
                }
                let report = buf.apply(&mut self.world);
                assert_eq!(report.errors.len(), expect_errors, "{:?}", report.errors);
                for e in report.spawned {
                    let m = Model { pos: Some(Pos { x: 7.0, y: -7.0 }), marked: Some(7), ..Model::default() };
                    self.model.insert(e, m);
                    self.history.push(e);
                }
            }
            Op::OnStaleHandle(i) => {
                let Some(e) = self.pick(i) else { return };
                if self.model.contains_key(&e) {
                    return;
                }
                assert!(self.world.insert(e, Tag).is_err());
                assert!(self.world.get::<Pos>(e).is_err());
                assert!(self.world.remove::<Pos>(e).is_err());
                assert!(self.world.set_fields(e, "Pos", &[]).is_err());
                assert!(self.world.get_field(e, "Health", "hp").is_err());
                assert!(!self.world.is_alive(e));
            }
        }
    }

    /// Runs `f` on a live entity; for a dead one, checks the world refuses and changes nothing.
    fn with_entity(&mut self, i: usize, f: impl FnOnce(&mut World, Entity, &mut Model) -> ecsdb::Result<()>) {
        let Some(e) = self.pick(i) else { return };
        match self.model.get_mut(&e) {
            Some(m) => {
                let mut copy = m.clone();
                f(&mut self.world, e, &mut copy).expect("operation on a live entity");
                *m = copy;
            }
            None => {
                // A stale handle: the operation must fail without touching anything (the
                // `check` after every step proves nothing changed).
                let mut dummy = Model::default();
                let _ = f(&mut self.world, e, &mut dummy);
                assert!(matches!(self.world.insert(e, Tag), Err(ecsdb::EngineError::StaleEntity(_))));
            }
        }
    }

    fn check(&self) {
        let w = &self.world;
        assert_eq!(w.len(), self.model.len());
        for (&e, m) in &self.model {
            assert!(w.is_alive(e));
            assert_eq!(w.get::<Pos>(e).ok(), m.pos.as_ref(), "{e} Pos");
            assert_eq!(w.get::<Vel>(e).ok(), m.vel.as_ref(), "{e} Vel");
            assert_eq!(w.get::<Name>(e).ok().map(|n| n.value.clone()), m.name, "{e} Name");
            assert_eq!(w.has::<Tag>(e).unwrap(), m.tag, "{e} Tag");
            assert_eq!(w.get::<Marked>(e).ok().map(|m| m.n), m.marked, "{e} Marked");
            let hp = w.get_field(e, "Health", "hp").ok();
            assert_eq!(hp, m.hp.map(Value::Float), "{e} Health");
            if let Some(p) = m.pos {
                assert_eq!(w.get_field(e, "Pos", "x").unwrap(), Value::Float(p.x as f64));
            }
        }
        let set = |it: &mut dyn Iterator<Item = Entity>| it.collect::<BTreeSet<_>>();
        let model_set = |f: &dyn Fn(&Model) -> bool| {
            self.model.iter().filter(|(_, m)| f(m)).map(|(e, _)| *e).collect::<BTreeSet<_>>()
        };
        assert_eq!(set(&mut w.query::<(Entity, &Pos)>().map(|x| x.0)), model_set(&|m| m.pos.is_some()));
        assert_eq!(
            set(&mut w.query::<(Entity, &Pos, &Vel)>().map(|x| x.0)),
            model_set(&|m| m.pos.is_some() && m.vel.is_some())
        );
        assert_eq!(set(&mut w.query_filtered::<Entity, Without<Tag>>()), model_set(&|m| !m.tag));
        assert_eq!(
            set(&mut w.query_filtered::<Entity, Or<(With<Tag>, With<Marked>)>>()),
            model_set(&|m| m.tag || m.marked.is_some())
        );
        assert_eq!(
            set(&mut w.query::<(Entity, &Marked, Option<&Name>)>().map(|x| x.0)),
            model_set(&|m| m.marked.is_some())
        );
        let opt: HashMap<Entity, Option<String>> =
            w.query::<(Entity, Option<&Name>)>().map(|(e, n)| (e, n.map(|n| n.value.clone()))).collect();
        assert_eq!(opt.len(), self.model.len());
        for (e, m) in &self.model {
            assert_eq!(&opt[e], &m.name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn world_agrees_with_model(ops in proptest::collection::vec(op(), 1..120)) {
        let mut h = Harness::new();
        for op in &ops {
            h.apply(op);
            h.check();
        }
    }
}

#[test]
fn prepared_changed_query_sees_each_write_once() {
    let mut h = Harness::new();
    let es: Vec<Entity> = (0..20).map(|i| h.spawn(Some(i as f32), i % 2 == 0, None, false, None)).collect();
    let mut q: QueryState<Entity, ecsdb::Changed<Pos>> = h.world.query_state();
    assert_eq!(q.iter(&h.world).count(), 20);
    for e in es.iter().step_by(3) {
        h.world.get_mut::<Pos>(*e).unwrap().y = 1.0;
    }
    let changed: BTreeSet<Entity> = q.iter(&h.world).collect();
    assert_eq!(changed, es.iter().step_by(3).copied().collect());
    assert_eq!(q.iter(&h.world).count(), 0);
}
