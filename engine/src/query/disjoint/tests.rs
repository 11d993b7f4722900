use crate::{Added, Changed, Component, EngineError, QueryState, With, World};

#[derive(Component, Debug, PartialEq)]
struct A {
    v: u32,
}
#[derive(Component, Debug, PartialEq)]
struct B {
    v: u32,
}
#[derive(Component, Debug, PartialEq)]
struct C {
    v: String,
}
#[derive(Component, Debug, PartialEq)]
#[component(storage = "sparse")]
struct S {
    v: u32,
}

/// Rows in two tables, (A, B, C) and (A, B) (a third of the latter with sparse S), plus an
/// emptied table (B, C).
fn world() -> World {
    let mut w = World::new();
    for i in 0..20u32 {
        match i % 3 {
            0 => w.spawn((A { v: i }, B { v: i }, C { v: format!("c{i}") })),
            1 => w.spawn((A { v: i }, B { v: i })),
            _ => w.spawn((A { v: i }, B { v: i }, S { v: i })),
        };
    }
    let gone = w.spawn((B { v: 0 }, C { v: String::new() }));
    w.despawn(gone).unwrap();
    w
}

#[test]
fn writers_of_different_components_run_on_threads_of_their_own() {
    let mut w = world();
    let mut add_a: QueryState<&mut A> = w.query_state();
    let mut double_b: QueryState<(&mut B, &A)> = w.query_state();
    let mut grow_c: QueryState<&mut C, With<A>> = w.query_state();
    let mut runs = w.disjoint_runs();
    let a = runs.prepare(&mut add_a).unwrap();
    let c = runs.prepare(&mut grow_c).unwrap();
    assert!(matches!(runs.prepare(&mut double_b), Err(EngineError::ConflictingRuns(n)) if n.ends_with('A')));
    assert_eq!((a.table_count(), c.table_count()), (2, 1));
    std::thread::scope(|s| {
        s.spawn(move || a.for_each(|mut a| a.v += 100));
        s.spawn(move || c.run(|items| items.for_each(|mut c| c.v.push('!'))));
    });
    let mut rows: Vec<(u32, u32, Option<String>)> =
        w.query::<(&A, &B, Option<&C>)>().map(|(a, b, c)| (a.v, b.v, c.map(|c| c.v.clone()))).collect();
    rows.sort();
    let want: Vec<_> = (0..20).map(|i| (i + 100, i, (i % 3 == 0).then(|| format!("c{i}!")))).collect();
    assert_eq!(rows, want);
}

#[test]
fn accesses_that_overlap_are_refused_and_leave_nothing_prepared() {
    let mut w = world();
    let mut read_a: QueryState<&A> = w.query_state();
    let mut read_a_again: QueryState<(&A, &B)> = w.query_state();
    let mut write_a: QueryState<&mut A> = w.query_state();
    let mut changed_b: QueryState<&A, Changed<B>> = w.query_state();
    let mut write_b: QueryState<&mut B> = w.query_state();
    let mut added_b: QueryState<&C, Added<B>> = w.query_state();
    // Readers share; a writer of what they read does not join them.
    let mut runs = w.disjoint_runs();
    runs.prepare(&mut read_a).unwrap();
    runs.prepare(&mut read_a_again).unwrap();
    assert!(matches!(runs.prepare(&mut write_a), Err(EngineError::ConflictingRuns(_))));
    // A change filter reads its component's ticks: it does not run beside that writer.
    let mut runs = w.disjoint_runs();
    runs.prepare(&mut write_b).unwrap();
    assert!(matches!(runs.prepare(&mut changed_b), Err(EngineError::ConflictingRuns(_))));
    assert!(matches!(runs.prepare(&mut added_b), Err(EngineError::ConflictingRuns(_))));
    // The refused queries did not run: every row is still new to them.
    assert_eq!(changed_b.iter(&w).count(), 20);
    assert_eq!(added_b.iter(&w).count(), 7);
}

#[test]
fn sparse_writers_are_sent_to_run_alone_and_sparse_readers_join() {
    let mut w = world();
    let mut write_s: QueryState<&mut S> = w.query_state();
    let mut read_s: QueryState<(&S, &B)> = w.query_state();
    let mut write_a: QueryState<(&mut A, &S)> = w.query_state();
    assert!(write_s.writes_sparse());
    let mut runs = w.disjoint_runs();
    assert!(matches!(runs.prepare(&mut write_s), Err(EngineError::SparseWriteInParallel(n)) if n.ends_with('S')));
    let r = runs.prepare(&mut read_s).unwrap();
    let a = runs.prepare(&mut write_a).unwrap();
    let (sum, ()) = std::thread::scope(|s| {
        let sum = s.spawn(move || r.run(|items| items.map(|(s, b)| s.v + b.v).sum::<u32>()));
        let add = s.spawn(move || a.for_each(|(mut a, s)| a.v += s.v));
        (sum.join().unwrap(), add.join().unwrap())
    });
    let expect: u32 = (0..20).filter(|i| i % 3 == 2).map(|i| 2 * i).sum();
    assert_eq!(sum, expect);
    let a_sum: u32 = w.query::<&A>().map(|a| a.v).sum();
    assert_eq!(a_sum, (0..20).sum::<u32>() + (0..20).filter(|i| i % 3 == 2).sum::<u32>());
}

#[test]
fn change_filters_beside_writers_of_the_same_table_see_their_own_ticks() {
    let mut w = world();
    let mut added_b: QueryState<&C, Added<B>> = w.query_state();
    let mut changed_a: QueryState<&B, Changed<A>> = w.query_state();
    let mut write_a: QueryState<&mut A> = w.query_state();
    assert_eq!(changed_a.iter(&w).count(), 20);
    // Every row of (A, B, C) was added at once: the filter reads the column's one shared
    // added tick while the writer of A, in the same table, runs on another thread.
    let mut runs = w.disjoint_runs();
    let added = runs.prepare(&mut added_b).unwrap();
    let writer = runs.prepare(&mut write_a).unwrap();
    let seen = std::thread::scope(|s| {
        let seen = s.spawn(move || added.run(|items| items.count()));
        s.spawn(move || writer.for_each(|mut a| a.v += 1));
        seen.join().unwrap()
    });
    assert_eq!(seen, 7);
    // The writes were stamped: a change filter run later sees every row written.
    assert_eq!(changed_a.iter(&w).count(), 20);
    assert_eq!(changed_a.iter(&w).count(), 0);
}
