//! An index stays right through every public write path, also when safe code outside the
//! crate reads the columns through `&World` in between: nothing it can reach consumes the
//! written-rows record the index refresh relies on.

use ecsdb_engine::index::{IndexDef, IndexKind, IndexPredicate};
use ecsdb_engine::storage::TableId;
use ecsdb_engine::{Component, Entity, FieldRows, TypedFieldValues, Value, World};

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Score {
    v: i64,
}

/// The entities whose score the index says is in `low..=high`, sorted.
fn from_index(w: &World, name: &str, low: i64, high: i64) -> Vec<u32> {
    let mut v = w.index_answer(name, &IndexPredicate::between(low, high)).unwrap().unwrap().into_vec(None);
    v.sort_unstable();
    v
}

/// The same, by reading every entity.
fn from_scan(w: &World, es: &[Entity], low: i64, high: i64) -> Vec<u32> {
    let mut v: Vec<u32> = es
        .iter()
        .filter(|e| w.get::<Score>(**e).is_ok_and(|s| (low..=high).contains(&s.v)))
        .map(|e| e.index())
        .collect();
    v.sort_unstable();
    v
}

/// Everything `&World` lets safe code read of the columns.
fn read_every_column(w: &World) -> usize {
    let mut n = 0;
    for t in w.tables() {
        for c in t.columns() {
            n += c.len() + c.changed_ticks().len() + c.added_ticks().len() + c.memory_bytes().0;
        }
    }
    n
}

#[test]
fn a_btree_index_stays_right_through_every_public_write_path() {
    let mut w = World::new();
    let es: Vec<Entity> = (0..64).map(|i| w.spawn(Score { v: i })).collect();
    let ix = w.create_index(IndexDef::new("Score", &["v"], IndexKind::Btree)).unwrap();
    let id = w.component_id("Score").unwrap();
    let table = TableId(w.location(es[0]).unwrap().table);
    // A first refresh arms the columns' write logs: from here on refreshes take the rows
    // the logs name, so a log drained by someone else would leave the index stale.
    w.refresh_indexes();
    let check = |w: &World, low: i64, high: i64| {
        assert!(read_every_column(w) > 0);
        assert_eq!(from_index(w, &ix, low, high), from_scan(w, &es, low, high), "{low}..={high}");
    };

    // typed get_mut
    w.get_mut::<Score>(es[3]).unwrap().v = 1000;
    read_every_column(&w);
    check(&w, 1000, 1000);

    // a field set by name
    w.set_fields(es[5], "Score", &[("v", Value::Int(2000))]).unwrap();
    read_every_column(&w);
    check(&w, 2000, 2000);

    // a run of rows written column-wise
    w.write_fields_run(id, table, 10, 14, vec![(0, TypedFieldValues::I64(vec![3000; 4]))]).unwrap();
    read_every_column(&w);
    check(&w, 3000, 3000);

    // scattered rows written column-wise
    let rows = [20, 30, 40];
    w.write_field_rows(id, 0, FieldRows::Table(table, &rows), TypedFieldValues::I64(vec![4000; 3])).unwrap();
    read_every_column(&w);
    check(&w, 4000, 4000);

    // a component writer
    w.component_writer(id)
        .unwrap()
        .write_field_rows(0, FieldRows::TableRun { table, start: 50, end: 52 }, TypedFieldValues::I64(vec![5000; 2]))
        .unwrap();
    read_every_column(&w);
    check(&w, 5000, 5000);

    // a mutable query
    for mut s in w.query_mut::<&mut Score>() {
        if s.v < 64 {
            s.v += 6000;
        }
    }
    read_every_column(&w);
    check(&w, 6000, 6100);
    check(&w, 0, 10_000);
}
