//! Subscriptions against random writes: applying every notification to the first result gives
//! what the query returns at the notification's tick; and a bounded load test on loopback.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::Served;
use proptest::prelude::*;
use serde_json::{Value as Json, json};

const WORLD: &str = "CREATE COMPONENT Health (hp i32); CREATE COMPONENT Tag (n i32); \
    SPAWN Health {hp: 1}; SPAWN Health {hp: 2}, Tag {n: 1}; SPAWN Tag {n: 2}";

#[derive(Debug, Clone)]
enum Write {
    Spawn(i32),
    SetAll(i32),
    DespawnBelow(i32),
    Tag(i32),
}

impl Write {
    fn text(&self) -> String {
        match self {
            Write::Spawn(hp) => format!("SPAWN Health {{hp: {hp}}}"),
            Write::SetAll(hp) => format!("UPDATE Health SET hp = Health.hp + {hp} WHERE Health.hp < 5"),
            Write::DespawnBelow(hp) => format!("DESPAWN WHERE Health.hp < {hp}"),
            Write::Tag(n) => format!("ADD Tag {{n: {n}}} WHERE Health.hp = {n}"),
        }
    }
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        (0..10).prop_map(Write::Spawn),
        (-2..3).prop_map(Write::SetAll),
        (0..4).prop_map(Write::DespawnBelow),
        (0..10).prop_map(Write::Tag),
    ]
}

fn keyed(rows: &Json) -> BTreeMap<String, Json> {
    rows.as_array().unwrap().iter().map(|r| (r[0].as_str().unwrap().to_string(), r.clone())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(debug_assertions) { 6 } else { 32 }, ..ProptestConfig::default() })]

    #[test]
    fn notifications_replay_to_the_query(writes in proptest::collection::vec(write(), 1..12)) {
        let s = Served::new(WORLD, true, Some(Duration::from_millis(3)));
        let mut ws = s.ws();
        let keyed_text = "SELECT entity, Health.hp, Tag.n WHERE Health.hp >= 1";
        let whole_text = "SELECT Health.hp, count(*) GROUP BY Health.hp ORDER BY Health.hp";
        let k0 = ws.call("subscribe", json!({"id": "k", "text": keyed_text})).unwrap();
        let w0 = ws.call("subscribe", json!({"id": "w", "text": whole_text})).unwrap();
        let mut k = keyed(&k0["rows"]);
        let mut w = w0["rows"].clone();
        let mut http = s.http();
        for wr in &writes {
            // A write that fails (none should) changes nothing.
            let _ = http.call("exec", json!({"text": wr.text()}));
        }
        // The state after every write, as a query sees it, and the tick it reflects.
        let want_k = http.call("query", json!({"text": keyed_text})).unwrap();
        let want_w = http.call("query", json!({"text": whole_text})).unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        let mut last_tick: BTreeMap<String, u64> = BTreeMap::new();
        loop {
            if keyed(&want_k["rows"]) == k && want_w["rows"] == w {
                break;
            }
            prop_assert!(Instant::now() < until, "notifications never reached the queried state");
            let Some(n) = ws.next_notification(Duration::from_millis(500)).unwrap() else { continue };
            let tick = n["tick"].as_u64().unwrap();
            let last = last_tick.entry(n["id"].as_str().unwrap().to_string()).or_insert(0);
            prop_assert!(tick > *last, "at most one notification per tick, in order");
            *last = tick;
            match n["id"].as_str().unwrap() {
                "k" => {
                    for id in n["removed"].as_array().unwrap() {
                        k.remove(id.as_str().unwrap());
                    }
                    for row in n["upserted"].as_array().unwrap() {
                        k.insert(row[0].as_str().unwrap().to_string(), row.clone());
                    }
                }
                "w" => w = n["rows"].clone(),
                other => prop_assert!(false, "unknown subscription {other}"),
            }
        }
    }
}

/// Eight clients, a fixed number of requests each over kept-alive HTTP while the world ticks
/// and takes writes: every answer arrives, and the test ends by itself.
#[test]
fn bounded_load_on_loopback() {
    let s = Served::new(WORLD, true, Some(Duration::from_millis(2)));
    let per_client = if cfg!(debug_assertions) { 100 } else { 1000 };
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let mut c = s.http();
            std::thread::spawn(move || {
                for j in 0..per_client {
                    let r = if i == 0 && j % 10 == 0 {
                        c.call("exec", json!({"text": "SPAWN Health {hp: 3}"}))
                    } else {
                        c.call("query", json!({"text": "SELECT count(*), sum(Health.hp) WHERE Health.hp > 0"}))
                    };
                    r.unwrap();
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let n = s.http().call("query", json!({"text": "SELECT count(*) WHERE Health.hp = 3"})).unwrap();
    assert_eq!(n["rows"], json!([[per_client / 10]]));
}
