//! A copy mirrored after random writes answers like the world it copies: the same entities
//! with the same values, in the same table rows, and the same index answers.

use std::ops::Bound;

use proptest::prelude::*;

use super::Mirrored;
use crate::index::{IndexDef, IndexKind, IndexPredicate, Wanted};
use crate::{ComponentDef, ComponentId, Entity, FieldType, SaveOptions, Value, World};

#[derive(Clone, Debug)]
enum Op {
    /// Spawns with `P`, and `S`/`Tag`/`B` by the bits of the second number.
    Spawn(i32, u8),
    Despawn(usize),
    SetX(usize, i32),
    Rename(usize, u8),
    AddTag(usize),
    RemoveTag(usize),
    AddB(usize, i32),
    RemoveB(usize),
    /// Brings the copy up to date and compares.
    Mirror,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (-20..20i32, any::<u8>()).prop_map(|(x, bits)| Op::Spawn(x, bits)),
        2 => any::<usize>().prop_map(Op::Despawn),
        2 => (any::<usize>(), -20..20i32).prop_map(|(k, x)| Op::SetX(k, x)),
        1 => (any::<usize>(), 0..4u8).prop_map(|(k, n)| Op::Rename(k, n)),
        1 => any::<usize>().prop_map(Op::AddTag),
        1 => any::<usize>().prop_map(Op::RemoveTag),
        1 => (any::<usize>(), 0..3i32).prop_map(|(k, v)| Op::AddB(k, v)),
        1 => any::<usize>().prop_map(Op::RemoveB),
        3 => Just(Op::Mirror),
    ]
}

fn source() -> World {
    let mut w = World::new();
    w.define_component(&ComponentDef::new("P", &[("x", FieldType::I32), ("y", FieldType::F32)])).unwrap();
    w.define_component(&ComponentDef::new("S", &[("n", FieldType::I64), ("s", FieldType::String)])).unwrap();
    w.define_component(&ComponentDef::new("Tag", &[])).unwrap();
    w.define_component(&ComponentDef::new("B", &[("v", FieldType::I32)]).sparse()).unwrap();
    w.create_index(IndexDef::new("P", &["x"], IndexKind::Btree).named("px")).unwrap();
    w.create_index(IndexDef::new("S", &["s"], IndexKind::Bitmap).named("ss")).unwrap();
    w.create_index(IndexDef::new("Tag", &[], IndexKind::Bitmap).named("tag")).unwrap();
    w.create_index(IndexDef::new("B", &["v"], IndexKind::Btree).named("bv")).unwrap();
    w
}

fn copy_of(w: &World) -> (World, Vec<Option<ComponentId>>) {
    copy_saved(w, &SaveOptions { skip_opaque: true, ..SaveOptions::default() })
}

/// An empty copy of `w`'s schema, to fill by mirrors.
fn schema_copy_of(w: &World) -> (World, Vec<Option<ComponentId>>) {
    copy_saved(w, &SaveOptions { skip_opaque: true, schema_only: true, ..SaveOptions::default() })
}

fn copy_saved(w: &World, opts: &SaveOptions) -> (World, Vec<Option<ComponentId>>) {
    let copy = World::load_from_bytes(&w.save_to_vec(opts).unwrap()).unwrap();
    let ids = w.components().iter().map(|c| copy.component_id(c.name()).ok()).collect();
    (copy, ids)
}

fn apply(w: &mut World, live: &mut Vec<Entity>, op: &Op) {
    let pick = |k: usize| (!live.is_empty()).then(|| live[k % live.len()]);
    match *op {
        Op::Spawn(x, bits) => {
            let s = [("n", Value::Int(bits as i64)), ("s", Value::Str(format!("s{}", bits % 3)))];
            let mut parts: Vec<(&str, &[(&str, Value)])> = Vec::new();
            let p = [("x", Value::Int(x as i64)), ("y", Value::Float(0.5))];
            parts.push(("P", &p));
            if bits & 1 != 0 {
                parts.push(("S", &s));
            }
            if bits & 2 != 0 {
                parts.push(("Tag", &[]));
            }
            let b = [("v", Value::Int((bits % 3) as i64))];
            if bits & 4 != 0 {
                parts.push(("B", &b));
            }
            live.push(w.spawn_values(&parts).unwrap());
        }
        Op::Despawn(k) => {
            if let Some(e) = pick(k) {
                w.despawn(e).unwrap();
                live.retain(|x| *x != e);
            }
        }
        Op::SetX(k, x) => {
            if let Some(e) = pick(k) {
                w.set_fields(e, "P", &[("x", Value::Int(x as i64))]).unwrap();
            }
        }
        Op::Rename(k, n) => {
            if let Some(e) = pick(k) {
                let _ = w.set_fields(e, "S", &[("s", Value::Str(format!("s{n}")))]);
            }
        }
        Op::AddTag(k) => {
            if let Some(e) = pick(k) {
                w.insert_values(e, &[("Tag", &[])]).unwrap();
            }
        }
        Op::RemoveTag(k) => {
            if let Some(e) = pick(k) {
                w.remove_component(e, "Tag").unwrap();
            }
        }
        Op::AddB(k, v) => {
            if let Some(e) = pick(k) {
                w.insert_values(e, &[("B", &[("v", Value::Int(v as i64))])]).unwrap();
            }
        }
        Op::RemoveB(k) => {
            if let Some(e) = pick(k) {
                w.remove_component(e, "B").unwrap();
            }
        }
        Op::Mirror => {}
    }
}

/// Applies `op` and records every entity it made live in `all`.
fn apply_tracked(w: &mut World, live: &mut Vec<Entity>, all: &mut Vec<Entity>, op: &Op) {
    apply(w, live, op);
    for e in live.iter() {
        if !all.contains(e) {
            all.push(*e);
        }
    }
}

/// Every entity ever spawned: whether it lives, and its values by component.
fn values(w: &World, all: &[Entity]) -> Vec<(bool, Vec<Option<Value>>)> {
    let fields = [("P", "x"), ("P", "y"), ("S", "n"), ("S", "s"), ("B", "v")];
    all.iter()
        .map(|&e| {
            let has_tag = w.component_id("Tag").and_then(|t| w.has_component(e, t)).unwrap_or(false);
            let mut v: Vec<Option<Value>> = fields.iter().map(|(c, f)| w.get_field(e, c, f).ok()).collect();
            v.push(Some(Value::Bool(has_tag)));
            (w.entities().contains(e), v)
        })
        .collect()
}

/// Each index's answer to a few predicates, as sorted entity indices.
fn index_answers(w: &World) -> Vec<Vec<u32>> {
    let every = IndexPredicate::Range { low: Bound::Unbounded, high: Bound::Unbounded };
    let cases = [
        ("px", every.clone()),
        ("px", IndexPredicate::Range { low: Bound::Included(Value::Int(0)), high: Bound::Excluded(Value::Int(10)) }),
        ("ss", IndexPredicate::Eq(Value::Str("s1".into()))),
        ("tag", IndexPredicate::Present),
        ("ss", IndexPredicate::Present),
        ("bv", IndexPredicate::Eq(Value::Int(1))),
        ("bv", every),
    ];
    let reader = w.index_reader();
    cases
        .iter()
        .map(|(name, pred)| {
            let mut rows = Vec::new();
            reader
                .answer_each(*name, pred, &mut |r| rows.extend_from_slice(r))
                .unwrap_or_else(|| panic!("index {name} does not answer {pred:?}"));
            rows.sort_unstable();
            rows
        })
        .collect()
}

fn table_rows(w: &World) -> Vec<Vec<Entity>> {
    let mut t: Vec<Vec<Entity>> = w.tables().iter().map(|t| t.entities().to_vec()).filter(|e| !e.is_empty()).collect();
    t.sort();
    t
}

/// A mirror stopped at its `stop`-th look (`None`: never), and the copy's change run
/// moved on when it completed, or stopped with its rows current.
fn mirror_stopping_at(
    copy: &mut World,
    src: &mut World,
    ids: &[Option<ComponentId>],
    synced: &mut u64,
    stop: Option<usize>,
) -> Mirrored {
    let (window, this_run) = src.begin_change_run(Some(*synced));
    let looks = std::cell::Cell::new(0usize);
    let stop_here = || {
        looks.set(looks.get() + 1);
        Some(looks.get()) == stop
    };
    let done = copy.mirror_from(src, ids, &window, &stop_here).unwrap();
    if matches!(done, Mirrored::Done(_) | Mirrored::Stopped { rows_current: true }) {
        *synced = this_run;
    }
    done
}

/// Whether `a` reports every component `b` reports changed (both completed).
fn reports_all_of(a: &Mirrored, b: &Mirrored) -> bool {
    match (a, b) {
        (Mirrored::Done(a), Mirrored::Done(b)) => b.iter().all(|c| a.contains(c)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::test_size(256, 3),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_mirrored_copy_answers_like_its_source(
        start in proptest::collection::vec(op(), 0..6),
        ops in proptest::collection::vec(op(), 1..crate::test_size(48, 12)),
    ) {
        let mut w = source();
        let (mut all, mut live) = (Vec::new(), Vec::new());
        for op in &start {
            apply(&mut w, &mut live, op);
            all.clone_from(&live);
        }
        let (mut copy, ids) = copy_of(&w);
        let (_, mut synced) = w.begin_change_run(None);
        for op in ops.iter().chain([&Op::Mirror]) {
            apply_tracked(&mut w, &mut live, &mut all, op);
            if !matches!(op, Op::Mirror) {
                continue;
            }
            let (window, this_run) = w.begin_change_run(Some(synced));
            let done = copy.mirror_from(&w, &ids, &window, &|| false).unwrap();
            prop_assert!(matches!(done, Mirrored::Done(_)));
            synced = this_run;
            prop_assert_eq!(copy.len(), w.len());
            prop_assert_eq!(values(&copy, &all), values(&w, &all), "after {:?}", op);
            prop_assert_eq!(table_rows(&copy), table_rows(&w));
            prop_assert_eq!(index_answers(&copy), index_answers(&w));
        }
    }

    /// Mirrors stopped anywhere (while values are copied or rows move), with writes to the
    /// source before the next try, end where mirrors that never stop end: the same rows,
    /// values and index answers. They report every component the other reports changed, and
    /// may report more: rows a stopped try moved that the source then took back changed in
    /// the copy twice, and net not at all.
    #[test]
    fn a_mirror_stopped_anywhere_is_finished_by_the_next(
        ops in proptest::collection::vec((op(), proptest::option::of(1..40usize)), 1..crate::test_size(48, 12)),
    ) {
        let mut w = source();
        let (mut all, mut live) = (Vec::new(), Vec::new());
        let (mut stopped, ids) = copy_of(&w);
        let (mut whole, _) = copy_of(&w);
        let (_, first) = w.begin_change_run(None);
        let (mut synced_stopped, mut synced_whole) = (first, first);
        for (op, stop) in ops.iter().chain([&(Op::Mirror, None)]) {
            apply_tracked(&mut w, &mut live, &mut all, op);
            if !matches!(op, Op::Mirror) {
                continue;
            }
            // A stopped try leaves its work to the next mirror; writes may come in between.
            if stop.is_some() && synced_stopped == synced_whole {
                let tried = mirror_stopping_at(&mut stopped, &mut w, &ids, &mut synced_stopped, *stop);
                if matches!(tried, Mirrored::Stopped { .. }) {
                    continue;
                }
                // It completed (the stop came after its last look): catch the other copy up.
                let other = mirror_stopping_at(&mut whole, &mut w, &ids, &mut synced_whole, None);
                prop_assert!(reports_all_of(&tried, &other), "{:?} misses some of {:?}", tried, other);
            } else {
                let same_window = synced_stopped == synced_whole;
                let a = mirror_stopping_at(&mut stopped, &mut w, &ids, &mut synced_stopped, None);
                let b = mirror_stopping_at(&mut whole, &mut w, &ids, &mut synced_whole, None);
                prop_assert!(!same_window || reports_all_of(&a, &b), "{:?} misses some of {:?}", a, b);
            }
            for copy in [&stopped, &whole] {
                prop_assert_eq!(copy.len(), w.len());
                prop_assert_eq!(values(copy, &all), values(&w, &all), "after {:?}", op);
                prop_assert_eq!(table_rows(copy), table_rows(&w));
                prop_assert_eq!(index_answers(copy), index_answers(&w));
            }
        }
    }

    /// A copy made from the schema alone and filled over calls stopped anywhere, with writes
    /// to the source between them, ends like its source when each call takes the window the
    /// last one allows: a later one after a stop with the rows current.
    #[test]
    fn a_copy_filled_from_the_schema_over_stopped_calls_ends_like_its_source(
        start in proptest::collection::vec(op(), 0..40),
        tries in proptest::collection::vec(
            (proptest::collection::vec(op(), 0..6), 1..30usize),
            1..crate::test_size(12, 4),
        ),
    ) {
        let mut w = source();
        let (mut all, mut live) = (Vec::new(), Vec::new());
        for op in &start {
            apply_tracked(&mut w, &mut live, &mut all, op);
        }
        let (mut copy, ids) = schema_copy_of(&w);
        prop_assert!(copy.is_empty());
        let mut synced = None;
        for (ops, stop_at) in &tries {
            let (window, this_run) = w.begin_change_run(synced);
            let looks = std::cell::Cell::new(0usize);
            let stop = || {
                looks.set(looks.get() + 1);
                looks.get() == *stop_at
            };
            if matches!(
                copy.mirror_from(&w, &ids, &window, &stop).unwrap(),
                Mirrored::Done(_) | Mirrored::Stopped { rows_current: true }
            ) {
                synced = Some(this_run);
            }
            for op in ops {
                apply_tracked(&mut w, &mut live, &mut all, op);
            }
        }
        let (window, _) = w.begin_change_run(synced);
        prop_assert!(matches!(copy.mirror_from(&w, &ids, &window, &|| false).unwrap(), Mirrored::Done(_)));
        prop_assert_eq!(copy.len(), w.len());
        prop_assert_eq!(values(&copy, &all), values(&w, &all));
        prop_assert_eq!(table_rows(&copy), table_rows(&w));
        prop_assert_eq!(index_answers(&copy), index_answers(&w));
    }
}

#[test]
fn a_copy_filled_from_the_schema_goes_on_where_it_stopped() {
    let mut w = source();
    let es: Vec<Entity> =
        (0..40).map(|i| w.spawn_values(&[("P", &[("x", Value::Int(i)), ("y", Value::Float(0.0))])]).unwrap()).collect();
    let (window, synced) = w.begin_change_run(None);
    // The first stop that leaves some rows placed (after the allocator's slots and the look
    // before the table).
    let (mut copy, ids) = (1..)
        .find_map(|stop_at| {
            let (mut copy, ids) = schema_copy_of(&w);
            let looks = std::cell::Cell::new(0);
            let stop = || {
                looks.set(looks.get() + 1);
                looks.get() == stop_at
            };
            let stopped = copy.mirror_from(&w, &ids, &window, &stop).unwrap();
            assert!(matches!(stopped, Mirrored::Stopped { .. }), "stopped at look {stop_at}");
            let placed = copy.tables().iter().map(|t| t.len()).sum::<usize>();
            (placed > 0).then(|| {
                assert_eq!(stopped, Mirrored::Stopped { rows_current: true }, "a stop while appending");
                assert!(placed < es.len(), "{placed} rows placed before the stop");
                (copy, ids)
            })
        })
        .unwrap();
    // A row already placed changes: the later window holds it, and the next call copies it.
    w.set_fields(es[0], "P", &[("x", Value::Int(-5))]).unwrap();
    let (window, _) = w.begin_change_run(Some(synced));
    assert!(matches!(copy.mirror_from(&w, &ids, &window, &|| false).unwrap(), Mirrored::Done(_)));
    assert_eq!(copy.get_field(es[0], "P", "x").unwrap(), Value::Int(-5));
    assert_eq!(copy.get_field(es[39], "P", "x").unwrap(), Value::Int(39));
    assert_eq!(copy.len(), w.len());
    assert_eq!(index_answers(&copy), index_answers(&w));
}

#[test]
fn a_stop_while_rows_move_keeps_them_and_the_next_call_finishes() {
    let mut w = source();
    let es: Vec<Entity> =
        (0..6).map(|i| w.spawn_values(&[("P", &[("x", Value::Int(i)), ("y", Value::Float(0.0))])]).unwrap()).collect();
    let (mut copy, ids) = copy_of(&w);
    let (_, synced) = w.begin_change_run(None);
    // Two tables change hands: entities move to P+Tag, one leaves P for S only.
    w.insert_values(es[1], &[("Tag", &[])]).unwrap();
    w.insert_values(es[2], &[("Tag", &[])]).unwrap();
    w.despawn(es[3]).unwrap();
    let (window, _) = w.begin_change_run(Some(synced));
    let looks = std::cell::Cell::new(0);
    // The first look goes on, the second stops (within the first table whose rows move).
    let second = || {
        looks.set(looks.get() + 1);
        looks.get() == 2
    };
    assert!(matches!(copy.mirror_from(&w, &ids, &window, &second).unwrap(), Mirrored::Stopped { .. }));
    let done = copy.mirror_from(&w, &ids, &window, &|| false).unwrap();
    let (p, tag) = (w.component_id("P").unwrap(), w.component_id("Tag").unwrap());
    assert_eq!(done, Mirrored::Done(vec![p, tag]));
    assert!(!copy.is_alive(es[3]));
    assert_eq!(copy.location(es[1]).unwrap().table, w.location(es[1]).unwrap().table);
    assert_eq!(index_answers(&copy), index_answers(&w));
}

/// Every look of a mirror that moves rows within one table (rows that change hands,
/// rows appended, rows cut) is a place it may stop; the next call finishes from there.
#[test]
fn a_stop_within_a_table_at_any_look_is_finished_by_the_next_call() {
    let mut w = source();
    let es: Vec<Entity> = (0..30)
        .map(|i| {
            let s = [("n", Value::Int(i)), ("s", Value::Str(format!("s{}", i % 3)))];
            w.spawn_values(&[("P", &[("x", Value::Int(i)), ("y", Value::Float(0.0))]), ("S", &s)]).unwrap()
        })
        .collect();
    let all_before = es.clone();
    let (_, synced) = w.begin_change_run(None);
    let copy_bytes = w.save_to_vec(&SaveOptions { skip_opaque: true, ..SaveOptions::default() }).unwrap();
    // Rows change hands (despawns fill holes from the end), values change, rows are added.
    let mut all = all_before.clone();
    for &e in es.iter().step_by(4) {
        w.despawn(e).unwrap();
    }
    for &e in es.iter().skip(1).step_by(5) {
        if w.is_alive(e) {
            w.set_fields(e, "P", &[("x", Value::Int(-1))]).unwrap();
        }
    }
    for i in 0..9 {
        let s = [("n", Value::Int(100 + i)), ("s", Value::Str(format!("new{i}")))];
        all.push(w.spawn_values(&[("P", &[("x", Value::Int(100)), ("y", Value::Float(1.0))]), ("S", &s)]).unwrap());
    }
    let (window, _) = w.begin_change_run(Some(synced));
    let mut stops = 0;
    for stop_at in 1.. {
        let mut copy = World::load_from_bytes(&copy_bytes).unwrap();
        let ids: Vec<_> = w.components().iter().map(|c| copy.component_id(c.name()).ok()).collect();
        let looks = std::cell::Cell::new(0usize);
        let stop = || {
            looks.set(looks.get() + 1);
            looks.get() == stop_at
        };
        let first = copy.mirror_from(&w, &ids, &window, &stop).unwrap();
        let stopped = matches!(first, Mirrored::Stopped { .. });
        let done = match first {
            Mirrored::Stopped { .. } => {
                stops += 1;
                copy.mirror_from(&w, &ids, &window, &|| false).unwrap()
            }
            done => done,
        };
        let (p, s) = (w.component_id("P").unwrap(), w.component_id("S").unwrap());
        assert_eq!(done, Mirrored::Done(vec![p, s]), "stopped at look {stop_at}");
        assert_eq!(copy.len(), w.len());
        assert_eq!(values(&copy, &all), values(&w, &all), "stopped at look {stop_at}");
        assert_eq!(table_rows(&copy), table_rows(&w));
        assert_eq!(index_answers(&copy), index_answers(&w), "stopped at look {stop_at}");
        if !stopped {
            break;
        }
    }
    assert!(stops > 4, "the table's rows were copied and moved in several chunks ({stops} stops)");
}

#[test]
fn a_stop_while_copying_values_leaves_the_work_for_the_next_call() {
    let mut w = source();
    let es: Vec<Entity> =
        (0..40).map(|i| w.spawn_values(&[("P", &[("x", Value::Int(i)), ("y", Value::Float(0.0))])]).unwrap()).collect();
    let (mut copy, ids) = copy_of(&w);
    let (_, synced) = w.begin_change_run(None);
    for &e in &es {
        w.set_fields(e, "P", &[("x", Value::Int(7))]).unwrap();
    }
    let (window, _) = w.begin_change_run(Some(synced));
    let stopped = copy.mirror_from(&w, &ids, &window, &|| true).unwrap();
    assert_eq!(stopped, Mirrored::Stopped { rows_current: false }, "values are left to copy");
    assert_eq!(copy.get_field(es[0], "P", "x").unwrap(), Value::Int(0), "nothing copied yet");
    let p = w.component_id("P").unwrap();
    assert_eq!(copy.mirror_from(&w, &ids, &window, &|| false).unwrap(), Mirrored::Done(vec![p]));
    assert_eq!(copy.get_field(es[39], "P", "x").unwrap(), Value::Int(7));
}

#[test]
fn a_component_with_other_fields_cannot_be_mirrored() {
    let w = source();
    let mut other = World::new();
    other.define_component(&ComponentDef::new("P", &[("x", FieldType::F64), ("y", FieldType::F32)])).unwrap();
    let ids: Vec<_> = w.components().iter().map(|c| other.component_id(c.name()).ok()).collect();
    let (window, _) = w.begin_change_run(None);
    assert!(other.mirror_from(&w, &ids, &window, &|| false).is_err());
    assert!(other.mirror_from(&w, &ids[..1], &window, &|| false).is_err(), "an id for each component");
}

/// The copy's indexes hear of a component lost even when another entity gains one in the
/// same window (their entry counts then match, so only the removal hook keeps them exact).
#[test]
fn a_component_lost_leaves_the_copys_index_when_another_is_gained() {
    let mut w = source();
    let mut live = Vec::new();
    for i in 0..4 {
        apply(&mut w, &mut live, &Op::Spawn(i, if i == 0 { 2 } else { 0 }));
    }
    let (mut copy, ids) = copy_of(&w);
    let (_, synced) = w.begin_change_run(None);
    assert_eq!(index_answers(&copy), index_answers(&w));
    apply(&mut w, &mut live, &Op::RemoveTag(0));
    apply(&mut w, &mut live, &Op::AddTag(2));
    let (window, _) = w.begin_change_run(Some(synced));
    copy.mirror_from(&w, &ids, &window, &|| false).unwrap();
    // Before a refresh feeds the rows written: the entry of the entity that lost its tag is
    // gone (a refresh would otherwise find one entry too many and rebuild the whole index).
    let unrefreshed = copy.index_reader_for(Wanted::Named(&[])).info("tag").unwrap();
    assert_eq!(unrefreshed.entries, 0);
    assert_eq!(index_answers(&copy), index_answers(&w));
}

#[test]
fn changed_rows_are_found_in_runs_cut_to_the_rows() {
    let mut w = source();
    let (n, mid) = (crate::test_size(6000, 200), crate::test_size(600, 100));
    let es: Vec<Entity> =
        (0..n).map(|i| w.spawn_values(&[("P", &[("x", Value::Int(i)), ("y", Value::Float(0.0))])]).unwrap()).collect();
    let (_, synced) = w.begin_change_run(None);
    let rows = [3usize, mid, mid + 1, n as usize - 1];
    for &r in &rows {
        w.set_fields(es[r], "P", &[("x", Value::Int(-1))]).unwrap();
    }
    let (window, _) = w.begin_change_run(Some(synced));
    let p = w.component_id("P").unwrap();
    let column = w.tables()[w.location(es[0]).unwrap().table as usize].column(p).unwrap();
    // Blocks apart: a run each, cut to the rows.
    let all = 0..n as usize;
    assert_eq!(
        super::changed_runs(column, &window, all.clone()),
        [(3, 4), (mid, mid + 2), (n as usize - 1, n as usize)]
    );
    // Within a range, only its rows.
    assert_eq!(super::changed_runs(column, &window, 4..mid + 1), [(mid, mid + 1)]);
    let (nothing, _) = w.begin_change_run(Some(w.begin_change_run(None).1));
    assert!(super::changed_runs(column, &nothing, all).is_empty());
}
