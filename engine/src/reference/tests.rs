use super::*;
use crate::World;
use crate::error::EngineError;
use crate::index::{IndexDef, IndexKind};
use crate::value::Value;
use crate::{ComponentDef, FieldType};

fn world_with(policy: OnDelete, acyclic: bool, indexed: bool) -> World {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("ChildOf", &[("parent", FieldType::Entity)])).unwrap();
    w.define_component(&ComponentDef::new("Name", &[("value", FieldType::String)])).unwrap();
    w.declare_reference(&ReferenceDef::new("ChildOf", "parent", policy, acyclic)).unwrap();
    if indexed {
        w.create_index(IndexDef::new("ChildOf", &["parent"], IndexKind::Relation)).unwrap();
    }
    w
}

fn child(w: &mut World, parent: Entity) -> Entity {
    w.spawn_values(&[("ChildOf", &[("parent", Value::Entity(parent))])]).unwrap()
}

fn parent_field(w: &World) -> (ComponentId, usize) {
    (w.component_id("ChildOf").unwrap(), 0)
}

#[test]
fn cascade_despawns_whole_subtrees_and_counts_them() {
    for indexed in [false, true] {
        let mut w = world_with(OnDelete::Cascade, true, indexed);
        let root = w.spawn_values(&[]).unwrap();
        let a = child(&mut w, root);
        let b = child(&mut w, a);
        let c = child(&mut w, b);
        let other = w.spawn_values(&[]).unwrap();
        let keep = child(&mut w, other);
        assert_eq!(w.despawn_many(&[a]).unwrap(), 3);
        for e in [a, b, c] {
            assert!(!w.is_alive(e));
        }
        assert!(w.is_alive(root) && w.is_alive(keep));
        let (id, f) = parent_field(&w);
        assert_eq!(w.referrers(other, id, f), [keep]);
    }
}

#[test]
fn set_null_remove_and_no_action() {
    for indexed in [false, true] {
        for policy in [OnDelete::SetNull, OnDelete::Remove, OnDelete::NoAction] {
            let mut w = world_with(policy, false, indexed);
            let p = w.spawn_values(&[]).unwrap();
            let c = child(&mut w, p);
            w.despawn(p).unwrap();
            assert!(w.is_alive(c));
            let id = w.component_id("ChildOf").unwrap();
            match policy {
                OnDelete::SetNull => assert_eq!(w.entity_field(c, id, 0), Some(Entity::NULL)),
                OnDelete::Remove => assert!(!w.has_component(c, id).unwrap()),
                _ => {
                    assert_eq!(w.entity_field(c, id, 0), Some(p));
                    assert_eq!(w.live_target(c, id, 0), None);
                }
            }
        }
    }
}

#[test]
fn restrict_refuses_unless_the_referrer_goes_too() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("ChildOf", &[("parent", FieldType::Entity)])).unwrap();
    w.define_component(&ComponentDef::new("Target", &[("of", FieldType::Entity)])).unwrap();
    w.declare_reference(&ReferenceDef::new("ChildOf", "parent", OnDelete::Cascade, true)).unwrap();
    w.declare_reference(&ReferenceDef::new("Target", "of", OnDelete::Restrict, false)).unwrap();
    let root = w.spawn_values(&[]).unwrap();
    let a = child(&mut w, root);
    let b = child(&mut w, a);
    let outsider = w.spawn_values(&[("Target", &[("of", Value::Entity(b))])]).unwrap();
    // Halfway down the cascade a RESTRICT referrer survives: nothing changes.
    let before = w.len();
    assert!(matches!(w.despawn(root), Err(EngineError::Constraint(_))));
    assert_eq!(w.len(), before);
    assert!(w.is_alive(root) && w.is_alive(a) && w.is_alive(b));
    // A referrer inside the cascade does not refuse it.
    let inside = child(&mut w, a);
    w.insert_values(inside, &[("Target", &[("of", Value::Entity(b))])]).unwrap();
    w.despawn(outsider).unwrap();
    assert_eq!(w.despawn_many(&[root]).unwrap(), 4);
    assert_eq!(w.len(), 0);
}

#[test]
fn writes_refuse_stale_targets_and_cycles() {
    let mut w = world_with(OnDelete::Cascade, true, false);
    let dead = w.spawn_values(&[]).unwrap();
    w.despawn(dead).unwrap();
    let stale = w.spawn_values(&[("ChildOf", &[("parent", Value::Entity(dead))])]);
    assert_eq!(stale, Err(EngineError::StaleEntity(dead)));
    assert_eq!(w.len(), 0);
    let a = w.spawn_values(&[]).unwrap();
    let b = child(&mut w, a);
    let c = child(&mut w, b);
    // c → a would not loop; a → c would (a ← b ← c), as would b → b.
    assert!(w.insert_values(a, &[("ChildOf", &[("parent", Value::Entity(c))])]).is_err());
    assert!(matches!(w.set_reference(b, "ChildOf", "parent", b), Err(EngineError::Constraint(_))));
    assert!(matches!(w.set_reference(b, "ChildOf", "parent", dead), Err(EngineError::StaleEntity(_))));
    w.set_reference(c, "ChildOf", "parent", a).unwrap();
    let (id, f) = parent_field(&w);
    assert_eq!(w.live_target(b, id, f), Some(a));
    // A statement checked on its final state: swapping who is the parent is fine together.
    let writes = [
        ReferenceWrite { entity: Some(a), component: id, field: f, target: b },
        ReferenceWrite { entity: Some(b), component: id, field: f, target: Entity::NULL },
    ];
    w.check_reference_writes(&writes).unwrap();
    assert!(w.check_reference_writes(&writes[..1]).is_err());
}

#[test]
fn declaring_checks_existing_data() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("Link", &[("to", FieldType::Entity), ("n", FieldType::I32)])).unwrap();
    let a = w.spawn_values(&[]).unwrap();
    let b = w.spawn_values(&[("Link", &[("to", Value::Entity(a))])]).unwrap();
    w.insert_values(a, &[("Link", &[("to", Value::Entity(b))])]).unwrap();
    let def = ReferenceDef::new("Link", "to", OnDelete::Cascade, true);
    assert!(matches!(w.declare_reference(&def), Err(EngineError::Constraint(_))));
    assert!(w.declare_reference(&ReferenceDef::new("Link", "n", OnDelete::Cascade, false)).is_err());
    assert!(w.declare_reference(&ReferenceDef::new("Link", "nope", OnDelete::Cascade, false)).is_err());
    w.declare_reference(&ReferenceDef::new("Link", "to", OnDelete::SetNull, false)).unwrap();
    assert!(w.declare_reference(&ReferenceDef::new("Link", "to", OnDelete::SetNull, false)).is_err());
    assert_eq!(w.reference_definitions(), [ReferenceDef::new("Link", "to", OnDelete::SetNull, false)]);
    // On a loop, walks end.
    let id = w.component_id("Link").unwrap();
    assert_eq!(w.walk_up(a, id, 0), Chain { depth: None, root: None });
    assert!(w.is_descendant_of(a, id, 0, b, None));
    assert!(!w.is_descendant_of(a, id, 0, a, None));
    assert_eq!(w.ancestors(a, id, 0), [b]);
}

#[test]
fn hierarchy_walks_with_and_without_the_index() {
    for indexed in [false, true] {
        let mut w = world_with(OnDelete::NoAction, true, indexed);
        let root = w.spawn_values(&[]).unwrap();
        let a = child(&mut w, root);
        let b = child(&mut w, a);
        let c = child(&mut w, root);
        let (id, f) = parent_field(&w);
        assert_eq!(w.walk_up(b, id, f), Chain { depth: Some(2), root: Some(root) });
        assert_eq!(w.walk_up(root, id, f), Chain { depth: Some(0), root: Some(root) });
        assert!(w.is_descendant_of(b, id, f, root, None));
        assert!(!w.is_descendant_of(b, id, f, root, Some(1)));
        assert!(w.is_descendant_of(b, id, f, root, Some(2)));
        assert!(!w.is_descendant_of(root, id, f, root, None));
        let mut kids = w.referrers(root, id, f);
        kids.sort();
        assert_eq!(kids, [a, c]);
        let mut all = w.descendants(root, id, f);
        all.sort();
        assert_eq!(all, [a, b, c]);
        assert_eq!(w.ancestors(b, id, f), [a, root]);
        if indexed {
            let r = w.index_reader();
            let name = r.relation_on(id, f).unwrap();
            let d = r.descendants(&name, root, Some(1)).unwrap();
            assert_eq!(d.iter().collect::<Vec<_>>(), [a.index(), c.index()]);
        }
    }
}

#[test]
fn snapshots_keep_references_and_relation_indexes() {
    let mut w = world_with(OnDelete::Cascade, true, true);
    w.define_component(&ComponentDef::new("Owner", &[("who", FieldType::Entity)])).unwrap();
    w.declare_reference(&ReferenceDef::new("Owner", "who", OnDelete::SetNull, false)).unwrap();
    let root = w.spawn_values(&[]).unwrap();
    let a = child(&mut w, root);
    let dog = w.spawn_values(&[("Owner", &[("who", Value::Entity(a))])]).unwrap();
    let opts = crate::SaveOptions::default();
    {
        let mut back = World::load_from_bytes(&w.save_to_vec(&opts).unwrap()).unwrap();
        assert_eq!(back.reference_definitions(), w.reference_definitions());
        assert_eq!(back.indexes().len(), 1);
        assert_eq!(back.despawn_many(&[root]).unwrap(), 2);
        let owner = back.component_id("Owner").unwrap();
        assert_eq!(back.entity_field(dog, owner, 0), Some(Entity::NULL));
    }
    // A world without references writes the index section as before (version 1).
    let mut plain = World::new();
    plain.define_component(&ComponentDef::new("ChildOf", &[("parent", FieldType::Entity)])).unwrap();
    let bytes = plain.save_to_vec(&opts).unwrap();
    // The body ends with the index section (version u32, no definitions: u64 0) and then the
    // empty schedule section (version u32, no systems u64, fixed_hz u32, three u64 clocks).
    let schedule = 4 + 8 + 4 + 3 * 8;
    let at = bytes.len() - schedule - 12;
    assert_eq!(bytes[at..at + 4], 1u32.to_le_bytes());
    assert_eq!(bytes[at + 4..at + 12], 0u64.to_le_bytes());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: crate::test_size(proptest::prelude::ProptestConfig::default().cases, 3),
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// The batch walk agrees with the one-entity walk on any parent graph, loops included,
    /// and with the relation index's walk down.
    #[test]
    fn hops_to_ancestor_agrees_with_is_descendant_of(
        parents in proptest::collection::vec(0usize..14, 1..crate::test_size(14, 8)),
    ) {
        let mut w = world_with(OnDelete::NoAction, false, true);
        let nodes: Vec<Entity> = (0..parents.len()).map(|_| child(&mut w, Entity::NULL)).collect();
        for (i, &p) in parents.iter().enumerate() {
            // Indices past the end leave a node without a parent.
            let target = nodes.get(p).copied().unwrap_or(Entity::NULL);
            w.set_reference(nodes[i], "ChildOf", "parent", target).unwrap();
        }
        let (id, f) = parent_field(&w);
        let name = w.index_reader().relation_on(id, f).unwrap();
        for &ancestor in &nodes {
            let hops = w.hops_to_ancestor(&nodes, id, f, ancestor);
            for max in [None, Some(0), Some(1), Some(2), Some(5)] {
                for (e, h) in nodes.iter().zip(&hops) {
                    let batch = h.is_some_and(|h| max.is_none_or(|m| h <= m));
                    proptest::prop_assert_eq!(batch, w.is_descendant_of(*e, id, f, ancestor, max), "{} under {}", e, ancestor);
                }
                let walked = w.index_reader().descendants(&name, ancestor, max).unwrap();
                let expected: Vec<u32> = nodes
                    .iter()
                    .filter(|e| w.is_descendant_of(**e, id, f, ancestor, max))
                    .map(|e| e.index())
                    .collect();
                proptest::prop_assert_eq!(walked.iter().collect::<Vec<_>>(), expected);
            }
        }
    }
}

#[test]
fn hops_to_ancestor_on_long_chains_and_long_loops() {
    let mut w = world_with(OnDelete::NoAction, false, false);
    let (id, f) = parent_field(&w);
    // A chain of 40 below `top`, then the same nodes closed into a loop of 40.
    let top = w.spawn_values(&[]).unwrap();
    let mut nodes = vec![child(&mut w, top)];
    for _ in 1..40 {
        let last = *nodes.last().unwrap();
        nodes.push(child(&mut w, last));
    }
    let deepest_first: Vec<Entity> = nodes.iter().rev().copied().collect();
    let hops = w.hops_to_ancestor(&deepest_first, id, f, top);
    assert_eq!(hops, (1..=40u64).rev().map(Some).collect::<Vec<_>>());
    w.set_reference(nodes[0], "ChildOf", "parent", nodes[39]).unwrap();
    assert_eq!(w.hops_to_ancestor(&deepest_first, id, f, top), vec![None; 40]);
    let hops = w.hops_to_ancestor(&deepest_first, id, f, nodes[10]);
    for (e, h) in deepest_first.iter().zip(&hops) {
        assert_eq!(h.is_some(), w.is_descendant_of(*e, id, f, nodes[10], None), "{e}");
    }
    assert_eq!(hops[0], Some(29));
}

mod typed {
    use super::*;
    use crate::{CommandBuffer, Component};

    #[derive(Component)]
    struct Parent {
        #[references(on_delete = "cascade", acyclic)]
        of: Entity,
    }

    #[derive(Component)]
    struct Label {
        text: String,
    }

    /// An entity field with no reference declared by its type.
    #[derive(Component)]
    struct Holder {
        target: Entity,
    }

    fn world() -> (World, Entity, Entity) {
        let mut w = World::new();
        let root = w.spawn(Label { text: "root".into() });
        let gone = w.spawn(());
        w.despawn(gone).unwrap();
        (w, root, gone)
    }

    #[test]
    fn typed_spawns_and_inserts_refuse_stale_targets_and_cycles() {
        let (mut w, root, gone) = world();
        let kid = w.try_spawn((Label { text: "kid".into() }, Parent { of: root })).unwrap();
        let before = w.len();
        // A stale target: refused, nothing spawned, the label's String dropped (Miri checks).
        let err = w.try_spawn((Label { text: "x".into() }, Parent { of: gone })).unwrap_err();
        assert_eq!(err, EngineError::StaleEntity(gone));
        assert_eq!(w.len(), before);
        // A cycle through an insert: refused, the root keeps no parent.
        let err = w.insert(root, Parent { of: kid }).unwrap_err();
        assert!(matches!(err, EngineError::Constraint(_)), "{err}");
        assert!(w.get::<Parent>(root).is_err());
        assert!(matches!(w.insert(kid, Parent { of: gone }), Err(EngineError::StaleEntity(_))));
        assert_eq!(w.get::<Parent>(kid).unwrap().of, root);
        // A null target and a live one are fine.
        w.insert(kid, (Parent { of: Entity::NULL }, Label { text: "kid2".into() })).unwrap();
        assert_eq!(w.get::<Label>(kid).unwrap().text, "kid2");
        w.insert(kid, Parent { of: root }).unwrap();
        assert_eq!(w.children_of::<Parent>(root, "of").unwrap(), [kid]);
    }

    #[test]
    fn batches_and_command_buffers_are_checked_before_anything_changes() {
        let (mut w, root, gone) = world();
        let before = w.len();
        let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.spawn_batch([Parent { of: root }, Parent { of: gone }]);
        }));
        assert!(batch.is_err());
        assert_eq!(w.len(), before, "no bundle of a refused batch is spawned");
        assert_eq!(w.spawn_batch([Parent { of: root }, Parent { of: root }]).len(), 2);
        let mut commands = CommandBuffer::new();
        commands.spawn(Parent { of: gone });
        commands.spawn(Parent { of: root });
        let report = commands.apply(&mut w);
        assert_eq!(report.spawned.len(), 1);
        assert_eq!(report.errors.len(), 1);
        assert!(matches!(report.errors[0], (0, EngineError::StaleEntity(_))));
    }

    #[test]
    fn reference_components_are_not_borrowed_mutably() {
        let (mut w, root, _) = world();
        let kid = w.spawn(Parent { of: root });
        assert!(matches!(w.get_mut::<Parent>(kid), Err(EngineError::MutableReference { .. })));
        assert!(w.get_mut::<Label>(root).is_ok());
        let err = crate::QueryState::<&mut Parent>::try_new(&mut w).err().expect("refused");
        assert!(err.to_string().contains("Parent.of"), "{err}");
        assert!(crate::QueryState::<&Parent>::try_new(&mut w).is_ok());
        let mut labels = crate::QueryState::<&mut Label>::try_new(&mut w).unwrap();
        labels.for_each_mut(&mut w, |mut l| l.text.push('!'));
        assert_eq!(w.get::<Label>(root).unwrap().text, "root!");
        // A reference declared after a query state was made: its next mutable run refuses.
        w.spawn(Holder { target: root });
        let mut holders = crate::QueryState::<&mut Holder>::try_new(&mut w).unwrap();
        holders.for_each_mut(&mut w, |mut h| h.target = Entity::NULL);
        assert_eq!(w.query_mut::<&mut Holder>().count(), 1); // one-shot state now kept by the world
        w.declare_reference(&ReferenceDef::new("Holder", "target", OnDelete::NoAction, false)).unwrap();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| holders.for_each_mut(&mut w, |_| {})));
        assert!(run.is_err());
        let one_shot = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.query_mut::<&mut Holder>().count()));
        assert!(one_shot.is_err(), "the kept one-shot state refuses too");
        // The typed helper writes one reference field, checked.
        w.set_reference(kid, "Parent", "of", Entity::NULL).unwrap();
        assert_eq!(w.get::<Parent>(kid).unwrap().of, Entity::NULL);
    }
}

/// `get_component_value` and `get_field` (the server's entity reads) turn a dangling
/// `NO ACTION` reference into null, as queries do; a plain entity field keeps its handle.
#[test]
fn a_dangling_reference_reads_as_null_through_the_value_paths() {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("L", &[("who", FieldType::Entity), ("raw", FieldType::Entity)])).unwrap();
    w.declare_reference(&ReferenceDef::new("L", "who", OnDelete::NoAction, false)).unwrap();
    let target = w.spawn_values(&[]).unwrap();
    let l = w.spawn_values(&[("L", &[("who", Value::Entity(target)), ("raw", Value::Entity(target))])]).unwrap();
    let id = w.component_id("L").unwrap();
    let object = |who: Value| Value::Object(vec![("who".into(), who), ("raw".into(), Value::Entity(target))]);
    assert_eq!(w.get_component_value(l, id).unwrap(), object(Value::Entity(target)));
    w.despawn(target).unwrap();
    assert_eq!(w.get_component_value(l, id).unwrap(), object(Value::Null));
    assert_eq!(w.get_field(l, "L", "who").unwrap(), Value::Null);
    assert_eq!(w.get_field(l, "L", "raw").unwrap(), Value::Entity(target));
    // The handle itself is still stored (NO ACTION leaves it).
    assert_eq!(w.entity_field(l, id, 0), Some(target));
}
