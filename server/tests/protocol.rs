//! Conformance of the live protocol over real sockets on 127.0.0.1 (port 0): every method,
//! every error code, batches, limits, token, Host and Origin.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use common::{Served, WORLD, eventually};
use ecsdb_query::BUILTIN_FUNCTIONS;
use ecsdb_query::lex::KEYWORDS;
use ecsdb_server::client::ClientError;
use serde_json::{Value as Json, json};

fn code(r: Result<Json, ClientError>) -> (i64, Option<Json>) {
    match r {
        Err(ClientError::Rpc(e)) => (e.code, e.data),
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

#[test]
fn every_read_method() {
    let s = Served::new(WORLD, false, None);
    let mut c = s.http();
    let q = c
        .call("query", json!({"text": "SELECT entity, Health.hp WHERE Health.hp > $1 ORDER BY 2", "params": {"1": 5}}))
        .unwrap();
    assert_eq!(q["columns"], json!(["entity", "Health.hp"]));
    assert_eq!(q["rows"], json!([["0v0", 10], ["1v0", 50]]));
    assert_eq!(q["truncated"], json!(false));
    assert!(q["tick"].is_u64());
    let cut = c.call("query", json!({"text": "SELECT entity", "limit": 1})).unwrap();
    assert_eq!((cut["rows"].as_array().unwrap().len(), &cut["truncated"]), (1, &json!(true)));
    let named =
        c.call("query", json!({"text": "SELECT count(*) WHERE Name.value = $n", "params": {"n": "c"}})).unwrap();
    assert_eq!(named["rows"], json!([[1]]));

    let plan = c.call("explain", json!({"text": "SELECT Health.hp"})).unwrap();
    let direct = c.call("query", json!({"text": "EXPLAIN SELECT Health.hp"})).unwrap();
    let rows: Vec<Json> = direct["rows"].as_array().unwrap().iter().map(|r| r[0].clone()).collect();
    assert_eq!(plan["plan"], Json::Array(rows));

    let schema = c.call("schema", json!({})).unwrap();
    let health = schema["components"].as_array().unwrap().iter().find(|c| c["name"] == "Health").unwrap().clone();
    assert_eq!(
        health,
        json!({"name": "Health", "fields": [{"name": "hp", "type": "i32"}, {"name": "max", "type": "i32"}], "storage": "table", "entities": 2})
    );
    assert!(
        schema["tables"].as_array().unwrap().iter().any(|t| t == &json!({"components": ["Health", "Name"], "rows": 1}))
    );
    assert_eq!(schema["systems"], json!([]));
    assert_eq!(schema["writable"], json!(false));

    let e = c.call("entity", json!({"id": "0v0"})).unwrap();
    assert_eq!(e["components"], json!({"Health": {"hp": 10, "max": 20}, "Name": {"value": "a"}}));
    let (k, data) = code(c.call("entity", json!({"id": "0v7"})));
    assert_eq!((k, data.unwrap()["kind"].clone()), (-32000, json!("stale_entity")));
    assert_eq!(code(c.call("entity", json!({"id": "999v0"}))).0, -32000);
    assert_eq!(code(c.call("entity", json!({"id": "zz"}))).0, -32602);

    let st = c.call("stats", json!({})).unwrap();
    assert_eq!((st["entities"].clone(), st["tables"].is_u64()), (json!(3), true));
    assert_eq!(st["tick_ms"], json!({"last": null, "p50": null, "p99": null}));
    assert!(st["memory_bytes"].as_u64().unwrap() > 0);
}

/// `schema` carries the language's keywords and functions as the query crate defines them, so
/// that a client (the inspector) highlights and completes what the server's parser reads.
#[test]
fn schema_lists_the_languages_keywords_and_functions() {
    let s = Served::new(WORLD, false, None);
    let schema = s.http().call("schema", json!({})).unwrap();
    let keywords = schema["keywords"].as_array().expect("keywords");
    let words: Vec<&str> = keywords.iter().map(|k| k["word"].as_str().unwrap()).collect();
    assert_eq!(words, KEYWORDS.iter().map(|k| k.word).collect::<Vec<_>>());
    for (sent, k) in keywords.iter().zip(KEYWORDS) {
        assert_eq!(sent, &json!({"word": k.word, "reserved": k.reserved, "starts_statement": k.starts_statement}));
    }
    let select = keywords.iter().find(|k| k["word"] == "SELECT").unwrap();
    assert_eq!(select, &json!({"word": "SELECT", "reserved": true, "starts_statement": true}));
    let phase = keywords.iter().find(|k| k["word"] == "PHASE").unwrap();
    assert_eq!(phase["reserved"], json!(false), "contextual keywords say so");

    let functions = schema["functions"].as_array().expect("functions");
    let names: Vec<&str> = functions.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, BUILTIN_FUNCTIONS.iter().map(|f| f.name).collect::<Vec<_>>());
    for (sent, f) in functions.iter().zip(BUILTIN_FUNCTIONS) {
        assert_eq!((sent["signature"].as_str(), sent["kind"].is_string()), (Some(f.signature), true));
    }
    let kind = |name: &str| functions.iter().find(|f| f["name"] == name).unwrap()["kind"].clone();
    assert_eq!(
        [kind("sum"), kind("abs"), kind("has"), kind("depth")],
        [json!("aggregate"), json!("scalar"), json!("component"), json!("hierarchy")]
    );
}

/// A field's `DEFAULT` is in `schema`, as results write the value; a field without one has no
/// `default` key.
#[test]
fn schema_fields_carry_their_defaults() {
    let s =
        Served::new("CREATE COMPONENT Unit (hp f32 DEFAULT 100, name string DEFAULT 'grunt', kills i32)", false, None);
    let schema = s.http().call("schema", json!({})).unwrap();
    let unit = schema["components"].as_array().unwrap().iter().find(|c| c["name"] == "Unit").unwrap();
    assert_eq!(
        unit["fields"],
        json!([
            {"name": "hp", "type": "f32", "default": 100.0},
            {"name": "name", "type": "string", "default": "grunt"},
            {"name": "kills", "type": "i32"},
        ])
    );
}

#[test]
fn every_error_code() {
    let s = Served::new(WORLD, false, None);
    let mut c = s.http();
    let auth = format!("Bearer {}", s.server().token());
    let post = |c: &mut ecsdb_server::client::HttpClient, body: &str| {
        let (status, body) = c.post(&[("Authorization", &auth)], body.as_bytes()).unwrap();
        (status, serde_json::from_slice::<Json>(&body).unwrap_or(Json::Null))
    };
    let (st, v) = post(&mut c, "{not json");
    assert_eq!((st, v["error"]["code"].clone()), (200, json!(-32700)));
    assert_eq!(post(&mut c, r#"{"id": 1, "method": "query"}"#).1["error"]["code"], -32600);
    assert_eq!(post(&mut c, r#"[]"#).1["error"]["code"], -32600);
    assert_eq!(code(c.call("nope", json!({}))).0, -32601);
    assert_eq!(code(c.call("subscribe", json!({"id": "a", "text": "SELECT entity"}))).0, -32601);
    let (k, data) = code(c.call("query", json!({})));
    assert_eq!((k, data), (-32602, Some(json!({"field": "text"}))));
    assert_eq!(
        code(c.call("query", json!({"text": "SELECT 1", "limit": 1_000_001}))).1,
        Some(json!({"field": "limit"}))
    );
    assert_eq!(code(c.call("query", json!({"text": "SELECT 1", "limit": -1}))).0, -32602);
    assert_eq!(code(c.call("exec", json!({"text": "SPAWN Name {value: 'x'}"}))).0, -32003);
    let (k, data) = code(c.call("query", json!({"text": "SELEC 1"})));
    let data = data.unwrap();
    assert_eq!((k, data["kind"].clone(), data["line"].clone()), (-32000, json!("syntax"), json!(1)));
    assert!(data["column"].is_u64() && data["message"].is_string());
    let (_, data) = code(c.call("query", json!({"text": "SELECT Helth.hp"})));
    assert_eq!(data.unwrap()["hint"], json!("did you mean 'Health'?"));
    let (_, data) = code(c.call("query", json!({"text": "DESPAWN 0v0"})));
    assert_eq!(data.unwrap()["kind"], json!("constraint"));
    assert_eq!(c.call("query", json!({"text": "SELECT count(*)"})).unwrap()["rows"], json!([[3]]));

    // Token.
    let (st, v) = c.post(&[], br#"{"jsonrpc":"2.0","id":1,"method":"stats"}"#).unwrap();
    assert_eq!((st, serde_json::from_slice::<Json>(&v).unwrap()["error"]["code"].clone()), (401, json!(-32001)));
    let (st, _) = c.post(&[("Authorization", "Bearer 0000")], br#"{"jsonrpc":"2.0","id":1,"method":"stats"}"#).unwrap();
    assert_eq!(st, 401);
}

#[test]
fn batches_and_notifications() {
    let s = Served::new(WORLD, false, None);
    let mut c = s.http();
    let auth = format!("Bearer {}", s.server().token());
    let body = r#"[{"jsonrpc":"2.0","id":1,"method":"query","params":{"text":"SELECT count(*)"}},
                   {"jsonrpc":"2.0","method":"stats"},
                   {"jsonrpc":"2.0","id":"x","method":"nope"},
                   5]"#;
    let (st, v) = c.post(&[("Authorization", &auth)], body.as_bytes()).unwrap();
    let v: Json = serde_json::from_slice(&v).unwrap();
    assert_eq!(st, 200);
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(v[0]["result"]["rows"], json!([[3]]));
    assert_eq!((v[1]["id"].clone(), v[1]["error"]["code"].clone()), (json!("x"), json!(-32601)));
    assert_eq!(v[2]["error"]["code"], json!(-32600));
    let (st, body) = c.post(&[("Authorization", &auth)], br#"{"jsonrpc":"2.0","method":"stats"}"#).unwrap();
    assert_eq!((st, body.len()), (204, 0));
}

fn raw(s: &Served, request: &[u8]) -> String {
    let mut t = TcpStream::connect(s.server().addr()).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = t.write_all(request);
    let mut out = Vec::new();
    let _ = t.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn limits_host_origin_and_paths() {
    let s = Served::new(WORLD, false, None);
    let port = s.server().addr().port();
    let auth = format!("Authorization: Bearer {}\r\n", s.server().token());
    let big = format!("POST /rpc HTTP/1.1\r\nHost: localhost:{port}\r\n{auth}Content-Length: 1048577\r\n\r\n");
    assert!(raw(&s, big.as_bytes()).starts_with("HTTP/1.1 413"));
    let long = format!("GET / HTTP/1.1\r\nHost: localhost\r\nX: {}\r\n\r\n", "a".repeat(17 * 1024));
    assert!(raw(&s, long.as_bytes()).starts_with("HTTP/1.1 431"));
    let rebinding = format!("POST /rpc HTTP/1.1\r\nHost: evil.example:{port}\r\n{auth}Content-Length: 2\r\n\r\n{{}}");
    assert!(raw(&s, rebinding.as_bytes()).starts_with("HTTP/1.1 403"));
    for origin in ["null", "http://evil.example", "http://localhost:1"] {
        let r =
            format!("POST /rpc HTTP/1.1\r\nHost: localhost\r\nOrigin: {origin}\r\n{auth}Content-Length: 2\r\n\r\n{{}}");
        assert!(raw(&s, r.as_bytes()).starts_with("HTTP/1.1 403"), "{origin}");
    }
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"stats"}"#;
    let own = format!(
        "POST /rpc HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:{port}\r\n{auth}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert!(raw(&s, own.as_bytes()).starts_with("HTTP/1.1 200"));
    let page = raw(&s, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("<html"));
    assert!(
        raw(&s, b"GET /favicon.ico HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .starts_with("HTTP/1.1 200")
    );
    assert!(raw(&s, b"GET /nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").starts_with("HTTP/1.1 404"));
    assert!(raw(&s, b"garbage\x00\r\n\r\n").starts_with("HTTP/1.1 400"));
    // A half-sent request is answered 408 after the 10 s limit; others are served meanwhile.
    let (sent, half_sent) = mpsc::channel();
    let slow = std::thread::spawn({
        let addr = s.server().addr();
        move || {
            let mut t = TcpStream::connect(addr).unwrap();
            t.write_all(b"POST /rpc HTTP/1.1\r\nHost: localhost\r\n").unwrap();
            sent.send(()).unwrap();
            let mut out = String::new();
            let _ = t.read_to_string(&mut out);
            out
        }
    });
    half_sent.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(s.http().call("stats", json!({})).is_ok());
    assert!(!slow.is_finished(), "another request was served while the half-sent one waited");
    assert!(slow.join().unwrap().starts_with("HTTP/1.1 408"));
}

#[test]
fn connection_limit() {
    let s = Served::new(WORLD, false, None);
    let held: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(s.server().addr()).unwrap()).collect();
    // The server accepts in connection order, so once it has taken the 64 held ones a 65th is
    // refused; until then a probe is served, and closed at once.
    let over = eventually("the 65th connection refused", Duration::from_secs(10), || {
        let answer = raw(&s, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        answer.starts_with("HTTP/1.1 503").then_some(answer)
    });
    assert!(over.contains("-32004"), "{over}");
    drop(held);
    eventually("a connection served again", Duration::from_secs(10), || s.http().call("stats", json!({})).ok());
}

#[test]
fn exec_applies_all_or_nothing_and_reports_its_tick() {
    let s = Served::new(WORLD, true, None);
    let mut c = s.http();
    let before = c.call("query", json!({"text": "SELECT count(*)"})).unwrap();
    let bad = code(c.call("exec", json!({"text": "SPAWN Name {value: 'x'}; SPAWN Nope"})));
    assert_eq!(bad.1.unwrap()["kind"], json!("unknown_component"));
    let ok = c.call("exec", json!({"text": "SPAWN Name {value: $1}; SELECT count(*)", "params": {"1": "y"}})).unwrap();
    let tick = ok["tick"].as_u64().unwrap();
    assert!(tick > before["tick"].as_u64().unwrap());
    assert_eq!(ok["results"][1]["rows"], json!([[4]]));
    let after = eventually("a state of the exec's tick", Duration::from_secs(10), || {
        let a = c.call("query", json!({"text": "SELECT count(*)"})).unwrap();
        (a["tick"].as_u64().unwrap() >= tick).then_some(a)
    });
    assert_eq!(after["rows"], json!([[4]]));
}

#[test]
fn an_alter_over_exec_reaches_the_schema_and_queries_of_its_tick() {
    let s = Served::new(WORLD, true, None);
    let mut c = s.http();
    let ok = c
        .call(
            "exec",
            json!({"text": "ALTER COMPONENT Health ADD FIELD armor i32 DEFAULT 3; \
        ALTER COMPONENT Health RENAME FIELD max TO cap"}),
        )
        .unwrap();
    let tick = ok["tick"].as_u64().unwrap();
    let answer = eventually("a state of the ALTER's tick", Duration::from_secs(10), || {
        let a = c.call("query", json!({"text": "SELECT Health.hp, Health.cap, Health.armor ORDER BY entity"})).ok()?;
        (a["tick"].as_u64()? >= tick).then_some(a)
    });
    assert_eq!(answer["rows"], json!([[10, 20, 3], [50, 50, 3]]));
    let schema = c.call("schema", json!({})).unwrap();
    let health = schema["components"].as_array().unwrap().iter().find(|c| c["name"] == "Health").unwrap();
    assert_eq!(
        health["fields"],
        json!([{"name": "hp", "type": "i32"}, {"name": "cap", "type": "i32"}, {"name": "armor", "type": "i32", "default": 3}])
    );
    // A refused change is an error with its kind, and the world keeps its fields.
    let (k, data) = code(c.call("exec", json!({"text": "ALTER COMPONENT Health DROP FIELD nope"})));
    assert_eq!((k, data.unwrap()["kind"].clone()), (-32000, json!("unknown_field")));
    // A storage change: the schema of its tick says so, and the answers stay.
    let ok = c.call("exec", json!({"text": "ALTER COMPONENT Health SET STORAGE SPARSE"})).unwrap();
    let tick = ok["tick"].as_u64().unwrap();
    let storage = eventually("a schema of the storage change's tick", Duration::from_secs(10), || {
        let schema = c.call("schema", json!({})).ok()?;
        (schema["tick"].as_u64()? >= tick).then_some(schema)
    });
    let health = storage["components"].as_array().unwrap().iter().find(|c| c["name"] == "Health").unwrap();
    assert_eq!(health["storage"], json!("sparse"));
    let answer =
        c.call("query", json!({"text": "SELECT Health.hp, Health.cap, Health.armor ORDER BY entity"})).unwrap();
    assert_eq!(answer["rows"], json!([[10, 20, 3], [50, 50, 3]]));
}

#[test]
fn websocket_auth_methods_and_subscriptions() {
    let s = Served::new(WORLD, true, Some(Duration::from_millis(5)));
    // Wrong token: the error, then close code 4401.
    let mut bad = ecsdb_server::client::Endpoint::parse(&s.server().url(), None).unwrap();
    bad.token = "wrong".into();
    match ecsdb_server::client::WsClient::connect(&bad) {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32001),
        other => panic!("{other:?}"),
    }
    let mut ws = s.ws();
    assert_eq!(ws.call("query", json!({"text": "SELECT count(*)"})).unwrap()["rows"], json!([[3]]));
    let keyed = ws.call("subscribe", json!({"id": "k", "text": "SELECT entity, Health.hp"})).unwrap();
    assert_eq!(keyed["columns"], json!(["entity", "Health.hp"]));
    let whole = ws.call("subscribe", json!({"id": "w", "text": "SELECT count(*) WHERE Health.hp > 0"})).unwrap();
    assert_eq!(whole["rows"], json!([[2]]));
    let twice = ws.call("subscribe", json!({"id": "k", "text": "SELECT 1"}));
    assert!(matches!(twice, Err(ClientError::Rpc(e)) if e.code == -32602));
    ws.call("exec", json!({"text": "UPDATE Health SET hp = 11 WHERE Health.hp = 10; SPAWN Health {hp: 1, max: 1}"}))
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(ws.next_notification(Duration::from_secs(10)).unwrap().expect("a notification"));
    }
    let k = got.iter().find(|n| n["id"] == "k").unwrap();
    assert_eq!(k["removed"], json!([]));
    let mut up = k["upserted"].as_array().unwrap().clone();
    up.sort_by_key(|r| r[0].as_str().unwrap().to_string());
    assert_eq!(up, vec![json!(["0v0", 11]), json!(["3v0", 1])]);
    assert_eq!(got.iter().find(|n| n["id"] == "w").unwrap()["rows"], json!([[3]]));
    assert_eq!(ws.call("unsubscribe", json!({"id": "w"})).unwrap(), json!({}));
    // Unchanged results send nothing; binary frames get an error, not a dropped connection.
    assert!(ws.next_notification(Duration::from_millis(200)).unwrap().is_none());
    assert_eq!(ws.call("stats", json!({})).unwrap()["entities"], json!(4));
    let mut limited = s.ws();
    for i in 0..32 {
        limited.call("subscribe", json!({"id": i.to_string(), "text": "SELECT count(*)"})).unwrap();
    }
    let over = limited.call("subscribe", json!({"id": "x", "text": "SELECT count(*)"}));
    assert!(matches!(over, Err(ClientError::Rpc(e)) if e.code == -32004));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Opens a WebSocket by hand (no client library), so any bytes can follow the handshake.
    fn raw_ws(s: &Served) -> TcpStream {
        let mut t = TcpStream::connect(s.server().addr()).unwrap();
        t.write_all(
            b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        )
        .unwrap();
        let mut head = [0u8; 129];
        t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let n = t.read(&mut head).unwrap();
        assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 101"));
        t
    }

    /// A masked client frame (the server requires masking).
    fn frame(opcode: u8, payload: &[u8], fin: bool) -> Vec<u8> {
        let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
        let len = payload.len();
        if len < 126 {
            f.push(0x80 | len as u8);
        } else {
            f.push(0x80 | 126);
            f.extend_from_slice(&(len as u16).to_be_bytes());
        }
        let mask = [1u8, 2, 3, 4];
        f.extend_from_slice(&mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        f
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 24 } else { 256 }))]

        /// Random bytes, random frames (before and after auth): the server never panics and
        /// goes on serving others.
        #[test]
        fn any_websocket_input(
            raw in proptest::collection::vec(any::<u8>(), 0..300),
            opcode in 0u8..16,
            payload in proptest::collection::vec(any::<u8>(), 0..200),
            fin in any::<bool>(),
            authed in any::<bool>(),
        ) {
            let s = Served::new(WORLD, false, None);
            let mut t = raw_ws(&s);
            if authed {
                let auth = format!(r#"{{"jsonrpc":"2.0","id":0,"method":"auth","params":{{"token":"{}"}}}}"#, s.server().token());
                t.write_all(&frame(1, auth.as_bytes(), true)).unwrap();
            }
            let _ = t.write_all(&frame(opcode, &payload, fin));
            let _ = t.write_all(&raw);
            let _ = t.shutdown(std::net::Shutdown::Write);
            let mut c = s.http();
            let alive = c.call("stats", json!({})).is_ok();
            prop_assert!(alive, "the server stopped serving others");
        }
    }
}

#[test]
fn schema_and_stats_show_the_systems_and_whether_writes_are_allowed() {
    let script = format!("{WORLD}; CREATE SYSTEM heal AS UPDATE Health SET hp = Health.hp + 1");
    let s = Served::new(&script, true, Some(Duration::from_millis(5)));
    let mut c = s.http();
    let schema = c.call("schema", json!({})).unwrap();
    assert_eq!(schema["writable"], json!(true));
    assert_eq!(
        schema["systems"],
        json!([{"name": "heal", "phase": "OnUpdate", "position": 0, "reads": ["Health"], "writes": ["Health"]}])
    );
    // The writer's counters reach `stats` once it has ticked with a reader attached.
    let systems = eventually("two runs of heal in stats", Duration::from_secs(10), || {
        let systems = c.call("stats", json!({})).unwrap()["systems"].clone();
        systems[0]["runs"].as_u64().is_some_and(|r| r >= 2).then_some(systems)
    });
    let heal = &systems[0];
    assert_eq!((heal["name"].clone(), heal["phase"].clone()), (json!("heal"), json!("OnUpdate")), "{systems}");
    assert!(heal["runs"].as_u64().unwrap() >= 2 && heal["rows"].as_u64().unwrap() >= 4, "{systems}");
    assert!(heal["ms"].as_f64().unwrap() >= 0.0 && heal["total_ms"].as_f64().unwrap() >= heal["ms"].as_f64().unwrap());
}
