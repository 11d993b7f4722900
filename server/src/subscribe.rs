//! Subscriptions: one hub thread re-runs each distinct subscribed query (text + parameters)
//! once per newly published tick, for all its subscribers, and merges each change into the
//! subscribers' outboxes. A connection thread drains its outbox when its socket can take more,
//! so a slow client gets merged changes, loses none, and never holds up the hub or the world.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use ecsdb_query::Params;
use ecsdb_query::live::{Reader, subscription_shape};
use serde_json::{Value as Json, json};

use crate::rpc::{RpcError, rows_json};

/// A subscription whose result has more rows than this is refused.
pub const MAX_SUBSCRIPTION_ROWS: usize = 100_000;
/// Subscriptions one connection may hold.
pub const MAX_SUBSCRIPTIONS_PER_CONNECTION: usize = 32;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Changes of one subscription not yet sent, merged.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    /// The whole new result.
    Rows { tick: u64, rows: Vec<Json> },
    /// Keyed by entity: rows to insert or replace, entities to drop.
    Keyed { tick: u64, upserted: BTreeMap<String, Json>, removed: BTreeSet<String> },
}

impl Change {
    fn merge(&mut self, newer: Change) {
        match (self, newer) {
            (Change::Keyed { tick, upserted, removed }, Change::Keyed { tick: t, upserted: u, removed: r }) => {
                *tick = t;
                for k in r {
                    upserted.remove(&k);
                    removed.insert(k);
                }
                for (k, row) in u {
                    removed.remove(&k);
                    upserted.insert(k, row);
                }
            }
            (this, newer) => *this = newer,
        }
    }

    fn params(&self, id: &str) -> Json {
        match self {
            Change::Rows { tick, rows } => json!({ "id": id, "tick": tick, "rows": rows }),
            Change::Keyed { tick, upserted, removed } => json!({
                "id": id,
                "tick": tick,
                "upserted": upserted.values().collect::<Vec<_>>(),
                "removed": removed.iter().collect::<Vec<_>>(),
            }),
        }
    }
}

/// One connection's pending notifications, in the order their subscriptions first changed.
#[derive(Debug, Default)]
pub struct Outbox {
    pending: Mutex<Vec<(String, Change)>>,
    ready: Condvar,
}

impl Outbox {
    fn push(&self, id: &str, change: Change) {
        let mut p = lock(&self.pending);
        match p.iter_mut().find(|(i, _)| i == id) {
            Some((_, c)) => c.merge(change),
            None => p.push((id.to_string(), change)),
        }
        drop(p);
        self.ready.notify_all();
    }

    /// Takes every pending notification (as `changed` messages).
    pub fn take(&self) -> Vec<Json> {
        let p = std::mem::take(&mut *lock(&self.pending));
        p.into_iter().map(|(id, c)| json!({ "jsonrpc": "2.0", "method": "changed", "params": c.params(&id) })).collect()
    }

    /// Waits up to `d` for a notification to be pending.
    pub fn wait(&self, d: Duration) {
        let p = lock(&self.pending);
        if p.is_empty() {
            let _ = self.ready.wait_timeout(p, d);
        }
    }

    fn forget(&self, id: &str) {
        lock(&self.pending).retain(|(i, _)| i != id);
    }
}

/// One distinct subscribed query and its last result.
struct SharedQuery {
    text: String,
    params: Params,
    /// `text` + the parameters' JSON: identical subscriptions share one evaluation.
    key: String,
    keyed: bool,
    /// The components it reads (by name); `None`: evaluated at every tick.
    reads: Option<BTreeSet<String>>,
    columns: Vec<String>,
    tick: u64,
    rows: Vec<Json>,
    by_entity: HashMap<String, Json>,
    subscribers: Vec<(Weak<Outbox>, String)>,
}

/// The subscription hub of one server.
pub struct Hub {
    reader: Reader,
    queries: Mutex<Vec<SharedQuery>>,
    wake: Condvar,
    stop: AtomicBool,
    /// How many evaluations ran (the fan-out benchmark and tests read it).
    evaluations: std::sync::atomic::AtomicU64,
}

fn entity_key(row: &Json) -> String {
    match row.get(0) {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

impl Hub {
    /// A hub reading through `reader`; call [`Hub::run`] on a thread of its own.
    pub fn new(reader: Reader) -> Hub {
        Hub {
            reader,
            queries: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            evaluations: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many times a subscribed query has been evaluated.
    pub fn evaluations(&self) -> u64 {
        self.evaluations.load(Ordering::Relaxed)
    }

    /// Subscribes: the result now (`{tick, columns, rows}`), then changes into `outbox`.
    pub fn subscribe(
        &self,
        outbox: &Arc<Outbox>,
        id: &str,
        text: &str,
        params: Params,
        params_json: &Json,
    ) -> Result<Json, RpcError> {
        let key = format!("{text}\u{0}{params_json}");
        let mut queries = lock(&self.queries);
        if let Some(q) = queries.iter_mut().find(|q| q.key == key) {
            q.subscribers.push((Arc::downgrade(outbox), id.to_string()));
            return Ok(json!({ "tick": q.tick, "columns": q.columns, "rows": q.rows }));
        }
        let state = self.reader.state().map_err(|e| RpcError::statement(&e, text))?;
        let shape = subscription_shape(&state.db, text).map_err(|e| RpcError::statement(&e, text))?;
        let rs = state.db.query(text, &params).map_err(|e| RpcError::statement(&e, text))?;
        if rs.rows.len() > MAX_SUBSCRIPTION_ROWS {
            return Err(RpcError::limit(
                "rows",
                format!("a subscription's result may have at most {MAX_SUBSCRIPTION_ROWS} rows"),
            ));
        }
        self.evaluations.fetch_add(1, Ordering::Relaxed);
        let rows = rows_json(&rs.rows);
        let by_entity =
            if shape.keyed { rows.iter().map(|r| (entity_key(r), r.clone())).collect() } else { HashMap::new() };
        let answer = json!({ "tick": state.tick, "columns": rs.columns, "rows": rows });
        let columns = rs.columns;
        queries.push(SharedQuery {
            text: text.to_string(),
            params,
            key,
            keyed: shape.keyed,
            reads: shape.reads,
            columns,
            tick: state.tick,
            rows,
            by_entity,
            subscribers: vec![(Arc::downgrade(outbox), id.to_string())],
        });
        drop(queries);
        self.wake.notify_all();
        Ok(answer)
    }

    /// Drops subscription `id` of `outbox`'s connection.
    pub fn unsubscribe(&self, outbox: &Arc<Outbox>, id: &str) {
        let mut queries = lock(&self.queries);
        for q in queries.iter_mut() {
            q.subscribers.retain(|(o, i)| !(i == id && o.upgrade().is_some_and(|o| Arc::ptr_eq(&o, outbox))));
        }
        queries.retain(|q| !q.subscribers.is_empty());
        outbox.forget(id);
    }

    /// Stops [`Hub::run`].
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    /// The hub's loop: waits for subscriptions and newer ticks, re-evaluates, notifies.
    pub fn run(&self) {
        let mut last_tick = 0u64;
        while !self.stop.load(Ordering::Acquire) {
            {
                let queries = lock(&self.queries);
                if queries.is_empty() {
                    let _ = self.wake.wait_timeout(queries, Duration::from_millis(200));
                    continue;
                }
                last_tick = last_tick.max(queries.iter().map(|q| q.tick).min().unwrap_or(0));
            }
            let Some(state) = self.reader.wait_for_tick(last_tick + 1, Duration::from_millis(200)) else { continue };
            if state.tick <= last_tick {
                continue;
            }
            last_tick = state.tick;
            let mut queries = lock(&self.queries);
            for q in queries.iter_mut() {
                q.subscribers.retain(|(o, _)| o.strong_count() > 0);
                if q.tick >= state.tick || q.subscribers.is_empty() {
                    continue;
                }
                // Nothing it reads changed since its last answer: that answer still holds.
                if q.reads.as_ref().is_some_and(|reads| !state.changes.changed_since(q.tick, reads)) {
                    q.tick = state.tick;
                    continue;
                }
                self.evaluations.fetch_add(1, Ordering::Relaxed);
                let Ok(rs) = state.db.query(&q.text, &q.params) else { continue };
                q.tick = state.tick;
                let rows = rows_json(&rs.rows);
                let change = if q.keyed {
                    let by_entity: HashMap<String, Json> = rows.iter().map(|r| (entity_key(r), r.clone())).collect();
                    let upserted: BTreeMap<String, Json> = by_entity
                        .iter()
                        .filter(|(k, r)| q.by_entity.get(*k) != Some(*r))
                        .map(|(k, r)| (k.clone(), r.clone()))
                        .collect();
                    let removed: BTreeSet<String> =
                        q.by_entity.keys().filter(|k| !by_entity.contains_key(*k)).cloned().collect();
                    q.by_entity = by_entity;
                    q.rows = rows;
                    (!upserted.is_empty() || !removed.is_empty()).then_some(Change::Keyed {
                        tick: state.tick,
                        upserted,
                        removed,
                    })
                } else if rows != q.rows {
                    q.rows = rows.clone();
                    Some(Change::Rows { tick: state.tick, rows })
                } else {
                    None
                };
                if let Some(change) = change {
                    for (o, id) in &q.subscribers {
                        if let Some(o) = o.upgrade() {
                            o.push(id, change.clone());
                        }
                    }
                }
            }
            queries.retain(|q| !q.subscribers.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecsdb_query::Database;
    use ecsdb_query::live::Publisher;

    /// Ends ticks until readers see the newest one (the copier may skip a tick while busy).
    fn publish(p: &mut Publisher, db: &mut Database, reader: &Reader) -> u64 {
        loop {
            p.end_tick(db);
            let tick = p.tick();
            if reader.wait_for_tick(tick, Duration::from_millis(50)).is_some_and(|s| s.tick == tick) {
                return tick;
            }
        }
    }

    #[test]
    fn a_subscription_is_evaluated_again_only_when_what_it_reads_changed() {
        let mut db = Database::new();
        db.execute_script(
            "CREATE COMPONENT Health (hp i32); CREATE COMPONENT Pos (x f32); \
             SPAWN Health {hp: 1}, Pos {x: 0}; SPAWN Health {hp: 9}, Pos {x: 0}",
        )
        .unwrap();
        let mut p = Publisher::with_pool_size(1);
        let reader = p.reader();
        publish(&mut p, &mut db, &reader);
        let hub = Arc::new(Hub::new(p.reader()));
        let runner = {
            let hub = Arc::clone(&hub);
            std::thread::spawn(move || hub.run())
        };
        let outbox = Arc::new(Outbox::default());
        let answer =
            hub.subscribe(&outbox, "s", "SELECT count(*) WHERE Health.hp > 5", Params::new(), &json!([])).unwrap();
        assert_eq!(answer["rows"], json!([[1]]));
        let settle = |hub: &Hub, tick: u64| {
            // Until the hub has looked at `tick`.
            for _ in 0..400 {
                if lock(&hub.queries).iter().all(|q| q.tick >= tick) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            panic!("the hub never reached tick {tick}");
        };
        let before = hub.evaluations();
        for _ in 0..5 {
            db.execute("UPDATE Pos SET x = Pos.x + 1", ()).unwrap();
            let tick = publish(&mut p, &mut db, &reader);
            settle(&hub, tick);
        }
        assert_eq!(hub.evaluations(), before, "Pos changed, the query reads Health only");
        db.execute("UPDATE Health SET hp = 10", ()).unwrap();
        let tick = publish(&mut p, &mut db, &reader);
        settle(&hub, tick);
        assert_eq!(hub.evaluations(), before + 1);
        outbox.wait(Duration::from_secs(5));
        let sent = outbox.take();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["params"]["rows"], json!([[2]]));
        // Two more states, so that both copies are past the Health change (each copy's
        // changes span the two states since it was last brought up to date).
        for _ in 0..2 {
            db.execute("UPDATE Pos SET x = Pos.x + 1", ()).unwrap();
            let tick = publish(&mut p, &mut db, &reader);
            settle(&hub, tick);
        }
        let before = hub.evaluations();
        // An entity spawned without Health cannot change the answer; one with Health can.
        db.execute("SPAWN Pos {x: 1}", ()).unwrap();
        let tick = publish(&mut p, &mut db, &reader);
        settle(&hub, tick);
        assert_eq!(hub.evaluations(), before, "the new entity has no Health");
        db.execute("SPAWN Health {hp: 7}", ()).unwrap();
        let tick = publish(&mut p, &mut db, &reader);
        settle(&hub, tick);
        assert_eq!(hub.evaluations(), before + 1);
        outbox.wait(Duration::from_secs(5));
        assert_eq!(outbox.take()[0]["params"]["rows"], json!([[3]]));
        // A query that requires no component ranges over every entity: any spawn counts.
        hub.subscribe(&outbox, "all", "SELECT count(*)", Params::new(), &json!([])).unwrap();
        db.execute("SPAWN Pos {x: 2}", ()).unwrap();
        let tick = publish(&mut p, &mut db, &reader);
        settle(&hub, tick);
        outbox.wait(Duration::from_secs(5));
        let sent = outbox.take();
        let all: Vec<&Json> = sent.iter().filter(|m| m["params"]["id"] == "all").collect();
        assert_eq!(all.len(), 1, "SELECT count(*) sees the spawn: {sent:?}");
        assert_eq!(all[0]["params"]["rows"], json!([[5]]));
        hub.stop();
        runner.join().unwrap();
    }

    #[test]
    fn keyed_changes_merge_to_the_net_effect() {
        let mut a = Change::Keyed {
            tick: 1,
            upserted: [("1v0".to_string(), json!(["1v0", 1]))].into(),
            removed: ["2v0".to_string()].into(),
        };
        a.merge(Change::Keyed {
            tick: 2,
            upserted: [("2v0".to_string(), json!(["2v0", 5]))].into(),
            removed: ["1v0".to_string()].into(),
        });
        assert_eq!(
            a,
            Change::Keyed {
                tick: 2,
                upserted: [("2v0".to_string(), json!(["2v0", 5]))].into(),
                removed: ["1v0".to_string()].into(),
            }
        );
    }
}
