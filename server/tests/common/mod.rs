//! A served world for the protocol tests: a writer thread ticking a small world, a server on
//! 127.0.0.1 port 0.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ecsdb_query::Database;
use ecsdb_query::live::Publisher;
use ecsdb_server::client::{Endpoint, HttpClient, WsClient};
use ecsdb_server::{LiveServer, ServeOptions, serve};

pub struct Served {
    pub server: Option<LiveServer>,
    stop: Arc<AtomicBool>,
    writer: Option<JoinHandle<()>>,
}

impl Served {
    /// Serves a world made by `script`, ticking every `tick` (none: applies writes at once).
    pub fn new(script: &str, allow_writes: bool, tick: Option<Duration>) -> Served {
        let mut db = Database::new();
        db.execute_script(script).unwrap();
        let mut publisher = Publisher::with_pool_size(2);
        let server = serve(publisher.reader(), ServeOptions { allow_writes, ..ServeOptions::default() }).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            while !s.load(Ordering::Acquire) {
                match tick {
                    Some(d) => {
                        std::thread::sleep(d);
                        // The world's systems, if it has any, as a game loop would run them.
                        let _ = db.tick(1, d.as_secs_f64());
                        publisher.end_tick(&mut db);
                    }
                    None => {
                        publisher.wait_for_work(Duration::from_millis(2));
                        publisher.apply_queued(&mut db);
                        publisher.publish(&mut db);
                    }
                }
            }
        });
        Served { server: Some(server), stop, writer: Some(writer) }
    }

    pub fn server(&self) -> &LiveServer {
        self.server.as_ref().unwrap()
    }

    pub fn endpoint(&self) -> Endpoint {
        Endpoint::parse(&self.server().url(), None).unwrap()
    }

    pub fn http(&self) -> HttpClient {
        HttpClient::new(self.endpoint())
    }

    pub fn ws(&self) -> WsClient {
        WsClient::connect(&self.endpoint()).unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.take();
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Polls `probe` every few milliseconds until it gives a value; panics saying `what` was
/// awaited when `limit` passes first. (Tests wait for a condition, never for a fixed time.)
pub fn eventually<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub const WORLD: &str = "CREATE COMPONENT Health (hp i32, max i32); CREATE COMPONENT Name (value string); \
    SPAWN Health {hp: 10, max: 20}, Name {value: 'a'}; SPAWN Health {hp: 50, max: 50}; SPAWN Name {value: 'c'}";
