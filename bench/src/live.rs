//! Suite `live`: the cost of live access to a running world (docs/protocol.md).
//!
//! - `reader_interference`: the writer's tick (`Publisher::begin_tick`, a movement system
//!   over every entity, then `Publisher::end_tick`) with no reader, then with 4 threads
//!   looping a full-scan SELECT; p50/p99 of the tick, in the notes (the requirement: p99
//!   grows by at most 20%). A third run has the same readers scan the first published state
//!   while the writer publishes nothing more and never pauses them (no `begin_tick`): what
//!   scans that run through the writer's ticks cost it on this machine (cores shared with
//!   them, memory bandwidth).
//! - `reader_interference_churn`: the same with entities coming and going (each tick
//!   despawns 1,000 entities and spawns 1,000) and a btree index on `Health.hp`, which the
//!   readers' copies keep too: states are then made by moving rows, not only by copying
//!   changed values.
//! - `rpc_query_roundtrip`: a small `query` over HTTP on loopback, kept-alive (table).
//! - subscription latency (an `exec` to its `changed` notification) and fan-out (100
//!   subscribers of one query against one), in the notes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ecsdb::live::client::{Endpoint, HttpClient, WsClient};
use ecsdb::live::{CopyStats, Publisher, ServeOptions, serve};
use ecsdb::query::Database;
use serde_json::json;

use crate::data::game_world;
use crate::data::typed::{Health, Position, Velocity};
use crate::harness::{Suite, iter};

/// Entities of the interference run (the requirement's 1M; less in debug builds).
const N: usize = if cfg!(debug_assertions) { 20_000 } else { 1_000_000 };
/// Ticks measured per configuration.
const TICKS: usize = if cfg!(debug_assertions) { 30 } else { 300 };

fn world(n: usize) -> Database {
    let mut db = Database::new();
    let rows = game_world(n);
    db.world_mut().spawn_batch(rows.iter().map(|r| {
        (
            Position { x: r.pos[0], y: r.pos[1], z: r.pos[2] },
            Velocity { x: r.vel[0], y: r.vel[1], z: r.vel[2] },
            Health { hp: r.hp, max: r.max },
        )
    }));
    db
}

fn tick(db: &mut Database) {
    for (mut p, v) in db.world_mut().query_mut::<(&mut Position, &Velocity)>() {
        p.x += v.x;
        p.y += v.y;
        p.z += v.z;
    }
}

/// Entities despawned and spawned per tick in the churn run.
const CHURN: usize = 1_000;

/// Despawns the `CHURN` oldest entities and spawns as many new ones.
fn churn(db: &mut Database, alive: &mut std::collections::VecDeque<ecsdb::Entity>, round: usize) {
    let world = db.world_mut();
    for e in alive.drain(..CHURN.min(alive.len())) {
        world.despawn(e).expect("a live entity");
    }
    let rows = (0..CHURN).map(|i| {
        let f = ((round * CHURN + i) % 1000) as f32;
        (Position { x: f, y: 0.0, z: 0.0 }, Velocity { x: 1.0, y: 0.0, z: 0.0 }, Health { hp: f % 100.0, max: 100.0 })
    });
    alive.extend(world.spawn_batch(rows));
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// What the writer's ticks took in one run, in ms.
struct TickRun {
    p50: f64,
    p99: f64,
    slowest: f64,
    /// The longest the writer waited for its world at a tick's first write (the copier
    /// still had it), and the tick (from 0).
    longest_wait: (f64, usize),
    /// Answers the readers got.
    answers: usize,
    copies: CopyStats,
}

/// `TICKS` ticks with `readers` threads scanning in a loop. With `publish` false, only the
/// ticks until the first state is out publish. With `alive`, each tick also churns those
/// entities.
fn ticks_with_readers(
    db: &mut Database,
    readers: usize,
    publish: bool,
    mut alive: Option<&mut std::collections::VecDeque<ecsdb::Entity>>,
) -> TickRun {
    let mut publisher = Publisher::new();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = (readers > 0).then(|| publisher.reader());
    let threads: Vec<_> = (0..readers)
        .map(|_| {
            let r = reader.clone().expect("a reader");
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut answers = 0;
                while !stop.load(Ordering::Acquire) {
                    let q = r.query("SELECT count(*), avg(Health.hp) WHERE Health.hp < 50", ());
                    answers += usize::from(q.is_ok());
                }
                answers
            })
        })
        .collect();
    let stats_reader = publisher.reader();
    drop(reader);
    let mut times = Vec::with_capacity(TICKS);
    let mut longest_wait = (0.0f64, 0usize);
    for i in 0..TICKS {
        let t = Instant::now();
        // The first state is made over as many ticks as its copy takes (the writer recalls
        // its world at each tick's first write).
        let publishing = publish || (readers > 0 && stats_reader.copy_stats().full == 0);
        if publishing {
            // Readers' statements pause for the tick (a game loop does the same).
            publisher.begin_tick();
        }
        // The tick's first write takes the world back from the copier, if it still has it.
        let w = Instant::now();
        db.world_mut();
        let wait = w.elapsed().as_secs_f64() * 1e3;
        if wait > longest_wait.0 {
            longest_wait = (wait, i);
        }
        tick(db);
        if let Some(alive) = alive.as_deref_mut() {
            churn(db, alive, i);
        }
        if publishing {
            publisher.end_tick(db);
        }
        times.push(t.elapsed().as_secs_f64() * 1e3);
        // A game leaves time between ticks (60 Hz); so do we, so readers get the cores.
        std::thread::sleep(Duration::from_millis(16).saturating_sub(t.elapsed()));
    }
    stop.store(true, Ordering::Release);
    let answers = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    times.sort_by(f64::total_cmp);
    TickRun {
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        slowest: times.last().copied().unwrap_or(0.0),
        longest_wait,
        answers,
        copies: stats_reader.copy_stats(),
    }
}

/// `p50/p99/slowest` of a run.
fn ticks(run: &TickRun) -> String {
    format!("{:.2}/{:.2}/{:.2}", run.p50, run.p99, run.slowest)
}

/// What a run with readers got: answers, states and the writer's longest wait for its world.
fn copies(run: &TickRun) -> String {
    let c = run.copies;
    format!(
        "{} answers; states published: {} full, {} incremental, {} recalled by the writer; longest wait for the \
         world {:.2} ms, at tick {}",
        run.answers, c.full, c.incremental, c.recalled, run.longest_wait.0, run.longest_wait.1
    )
}

/// A served world with a writer thread (ticking every `period`, or applying writes at once).
struct Served {
    endpoint: Endpoint,
    stop: Arc<AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
    _server: ecsdb::live::LiveServer,
}

impl Served {
    fn new(n: usize, period: Option<Duration>) -> Served {
        let mut db = world(n);
        let mut publisher = Publisher::new();
        let server = serve(publisher.reader(), ServeOptions { allow_writes: true, ..ServeOptions::default() })
            .expect("serving on loopback");
        let endpoint = Endpoint::parse(&server.url(), None).expect("its own URL");
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            while !s.load(Ordering::Acquire) {
                match period {
                    Some(p) => {
                        std::thread::sleep(p);
                        publisher.end_tick(&mut db);
                    }
                    None => {
                        publisher.wait_for_work(Duration::from_millis(5));
                        publisher.apply_queued(&mut db);
                        publisher.publish(&mut db);
                    }
                }
            }
        });
        Served { endpoint, stop, writer: Some(writer), _server: server }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Milliseconds from an `exec` until all `subscribers` subscriptions of one query (25 per
/// socket, within the connection limit) got their `changed` notification, median of `samples`.
fn notify_ms(served: &Served, subscribers: usize, samples: usize) -> f64 {
    let per_socket = 25;
    let mut sockets: Vec<(WsClient, usize)> = Vec::new();
    for first in (0..subscribers).step_by(per_socket) {
        let mut ws = WsClient::connect(&served.endpoint).expect("ws");
        let n = per_socket.min(subscribers - first);
        for i in 0..n {
            let sub = json!({"id": format!("s{i}"), "text": "SELECT count(*) WHERE Health.hp >= 1000"});
            ws.call("subscribe", sub).expect("subscribe");
        }
        sockets.push((ws, n));
    }
    let mut writer = WsClient::connect(&served.endpoint).expect("ws");
    let mut times = Vec::new();
    for _ in 0..samples {
        let t = Instant::now();
        writer.call("exec", json!({"text": "SPAWN Health {hp: 1000, max: 1000}"})).expect("exec");
        for (ws, n) in &mut sockets {
            for _ in 0..*n {
                ws.next_notification(Duration::from_secs(10)).expect("socket").expect("a notification");
            }
        }
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    percentile(&times, 0.5)
}

/// Registers the suite.
pub fn run(s: &mut Suite) {
    if s.enabled("reader_interference") {
        let mut db = world(N);
        let none = ticks_with_readers(&mut db, 0, true, None);
        let four = ticks_with_readers(&mut db, 4, true, None);
        let scan = ticks_with_readers(&mut db, 4, false, None);
        s.note(format!(
            "reader_interference ({N} entities, {TICKS} ticks at 60 Hz): writer tick p50/p99/slowest {} ms with no \
             reader, {} ms with 4 readers scanning ({}); p99 ratio {:.2}x (requirement ≤ 1.20x). The same readers \
             scanning one state through the ticks (nothing more published once it is out, no pause): {} ms, p99 \
             ratio {:.2}x (what unpaused scans cost the writer here)",
            ticks(&none),
            ticks(&four),
            copies(&four),
            four.p99 / none.p99,
            ticks(&scan),
            scan.p99 / none.p99,
        ));
    }
    if s.enabled("reader_interference_churn") {
        let mut db = world(N);
        db.execute("CREATE INDEX ON Health (hp) USING btree", ()).expect("an index");
        let mut alive: std::collections::VecDeque<ecsdb::Entity> =
            db.world().tables().iter().flat_map(|t| t.entities().iter().copied()).collect();
        let none = ticks_with_readers(&mut db, 0, true, Some(&mut alive));
        let four = ticks_with_readers(&mut db, 4, true, Some(&mut alive));
        s.note(format!(
            "reader_interference_churn ({N} entities, {CHURN} despawned and {CHURN} spawned a tick, a btree index; \
             {TICKS} ticks at 60 Hz): writer tick p50/p99/slowest {} ms with no reader, {} ms with 4 readers \
             scanning ({}); p99 ratio {:.2}x (requirement ≤ 1.20x)",
            ticks(&none),
            ticks(&four),
            copies(&four),
            four.p99 / none.p99,
        ));
    }
    s.workload("rpc_query_roundtrip", |w| {
        let served = Served::new(1000, None);
        let mut c = HttpClient::new(served.endpoint.clone());
        c.call("query", json!({"text": "SELECT 1"})).expect("first query");
        w.lib(
            "ecsdb",
            iter(move || {
                let _keep = &served;
                c.call("query", json!({"text": "SELECT count(*) WHERE Health.hp < 50"})).expect("query")
            }),
        );
    });
    if s.enabled("subscription") {
        let period = Duration::from_millis(16);
        let served = Served::new(1000, Some(period));
        let samples = if cfg!(debug_assertions) { 5 } else { 30 };
        let one = notify_ms(&served, 1, samples);
        let hundred = notify_ms(&served, 100, samples);
        s.note(format!(
            "subscription latency (exec → changed, ticking every {} ms): p50 {one:.2} ms with 1 subscriber \
             (requirement ≤ 1 tick + 1 ms; the exec itself waits for its tick); fan-out: p50 {hundred:.2} ms until all \
             100 subscribers of one query got it, {:.2}x one (requirement ≤ 2x)",
            period.as_millis(),
            hundred / one
        ));
    }
}
