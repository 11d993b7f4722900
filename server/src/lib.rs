//! # ecsdb-server
//!
//! The live protocol of ecsdb (`docs/protocol.md`): JSON-RPC 2.0 over HTTP/1.1 (`POST /rpc`)
//! and a WebSocket (`GET /ws`) into a running world, plus the web inspector's static files at
//! `/`. Plain std threads (no async runtime is forced on the embedding program): one accept
//! thread, one thread per connection (at most 64), one subscription hub; statements run on the
//! [`Reader`]'s bounded pool against the state the writer published, so no request ever runs
//! on the game thread.
//!
//! ```no_run
//! use ecsdb_query::{live::Publisher, Database};
//! use ecsdb_server::{serve, ServeOptions};
//! let mut db = Database::new();
//! let mut publisher = Publisher::new();
//! let live = serve(publisher.reader(), ServeOptions::default()).unwrap();
//! println!("{}", live.url());
//! loop {
//!     publisher.begin_tick(); // tools' scans pause while the tick runs
//!     // ... run the game's systems on `db` ...
//!     publisher.end_tick(&mut db);
//!     # break;
//! }
//! ```
//!
//! The public surface is [`serve`] and its [`ServeOptions`], [`ServeError`] and
//! [`LiveServer`], and the [`client`] module (the CLI's `--connect`, tests, benchmarks); the
//! transport, the methods and the subscription hub are private.

#![forbid(unsafe_code)]

mod assets;
pub mod client;
mod http;
mod rpc;
mod security;
mod subscribe;
mod ws;

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use ecsdb_query::live::Reader;
use serde_json::Value as Json;

use crate::http::{ReadError, Request, read_request, write_response};
use crate::rpc::{Methods, RpcError, answer_message, response};
use crate::subscribe::Hub;

/// The most connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a kept-alive HTTP connection may sit idle between requests.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The address to bind (`127.0.0.1:0` by default: loopback, a free port).
    pub bind: SocketAddr,
    /// Whether `exec` is allowed (off by default).
    pub allow_writes: bool,
    /// The token; a fresh random one when `None`.
    pub token: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions { bind: SocketAddr::from(([127, 0, 0, 1], 0)), allow_writes: false, token: None }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding or configuring the socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The operating system gave no random bytes for the token.
    #[error("no random token: {0}")]
    Token(String),
}

/// Everything a connection thread needs.
struct Ctx {
    methods: Methods,
    hub: Arc<Hub>,
    token: String,
    addr: SocketAddr,
    connections: AtomicUsize,
    stop: AtomicBool,
}

/// A running server; dropping it (or [`LiveServer::shutdown`]) stops accepting and the hub.
pub struct LiveServer {
    ctx: Arc<Ctx>,
    accept: Option<JoinHandle<()>>,
    hub: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LiveServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveServer").field("addr", &self.ctx.addr).finish()
    }
}

/// Starts serving `reader`'s world.
pub fn serve(reader: Reader, options: ServeOptions) -> Result<LiveServer, ServeError> {
    let listener = TcpListener::bind(options.bind).map_err(|source| ServeError::Bind { addr: options.bind, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: options.bind, source })?;
    let token = match options.token {
        Some(t) => t,
        None => security::new_token().map_err(|e| ServeError::Token(e.to_string()))?,
    };
    let hub = Arc::new(Hub::new(reader.clone()));
    let ctx = Arc::new(Ctx {
        methods: Methods { reader, allow_writes: options.allow_writes },
        hub: Arc::clone(&hub),
        token,
        addr,
        connections: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let hub_thread = std::thread::Builder::new()
        .name("ecsdb-live-hub".into())
        .spawn(move || hub.run())
        .map_err(|source| ServeError::Bind { addr, source })?;
    let accept_ctx = Arc::clone(&ctx);
    let accept = std::thread::Builder::new()
        .name("ecsdb-live-accept".into())
        .spawn(move || accept_loop(listener, accept_ctx))
        .map_err(|source| ServeError::Bind { addr, source })?;
    Ok(LiveServer { ctx, accept: Some(accept), hub: Some(hub_thread) })
}

impl LiveServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.ctx.addr
    }

    /// The token clients must present.
    pub fn token(&self) -> &str {
        &self.ctx.token
    }

    /// `http://127.0.0.1:PORT/#token=TOKEN`: the line `ecsdb serve` prints.
    pub fn url(&self) -> String {
        format!("http://{}/#token={}", self.ctx.addr, self.ctx.token)
    }

    /// How many times the hub evaluated a subscribed query.
    pub fn subscription_evaluations(&self) -> u64 {
        self.ctx.hub.evaluations()
    }

    /// Stops accepting connections and stops the hub; open connections end at their next
    /// request.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.ctx.stop.store(true, Ordering::Release);
        self.ctx.hub.stop();
        // Wake the accept loop with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.ctx.addr, Duration::from_secs(1));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        if let Some(h) = self.hub.take() {
            let _ = h.join();
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>) {
    for stream in listener.incoming() {
        if ctx.stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors or similar: back off instead of spinning.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_nodelay(true);
        if ctx.connections.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            ctx.connections.fetch_sub(1, Ordering::AcqRel);
            let body = error_body(&RpcError::limit("connections", "too many connections"));
            let mut s = stream;
            let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = write_response(&mut s, 503, "application/json", &body, true);
            continue;
        }
        let c = Arc::clone(&ctx);
        let spawned = std::thread::Builder::new().name("ecsdb-live-conn".into()).spawn(move || {
            serve_connection(stream, &c);
            c.connections.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            ctx.connections.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn error_body(e: &RpcError) -> Vec<u8> {
    response(&Json::Null, Err(e.clone())).to_string().into_bytes()
}

/// Serves HTTP requests on one connection until it closes, errs or upgrades.
fn serve_connection(mut stream: TcpStream, ctx: &Ctx) {
    let _ = stream.set_write_timeout(Some(http::REQUEST_TIMEOUT));
    let mut buf = Vec::new();
    loop {
        if ctx.stop.load(Ordering::Acquire) {
            return;
        }
        let req = match read_request(&mut stream, &mut buf, IDLE_TIMEOUT) {
            Ok(r) => r,
            Err(ReadError::Closed) => return,
            Err(ReadError::Status(s)) => {
                let _ = write_response(&mut stream, s, "text/plain", http::reason(s).as_bytes(), true);
                return;
            }
        };
        let close = req.wants_close();
        if !security::host_ok(req.header("host"), ctx.addr) || !security::origin_ok(req.header("origin"), ctx.addr) {
            let _ = write_response(&mut stream, 403, "text/plain", b"Forbidden", true);
            return;
        }
        let ok = match (req.method.as_str(), req.path.as_str()) {
            ("POST", "/rpc") => {
                let (status, body) = rpc_over_http(&req, ctx);
                write_response(&mut stream, status, if body.is_empty() { "" } else { "application/json" }, &body, close)
            }
            ("GET", "/ws") => {
                ws::upgrade(stream, &req, std::mem::take(&mut buf), ctx);
                return;
            }
            ("GET" | "HEAD", path) => match assets::get(path) {
                Some((ty, bytes)) => write_response(&mut stream, 200, ty, bytes, close),
                None => write_response(&mut stream, 404, "text/plain", b"Not Found", close),
            },
            (_, "/rpc" | "/ws") => write_response(&mut stream, 405, "text/plain", b"Method Not Allowed", close),
            _ => write_response(&mut stream, 404, "text/plain", b"Not Found", close),
        };
        if ok.is_err() || close {
            return;
        }
    }
}

/// Answers a `POST /rpc`: (status, body).
fn rpc_over_http(req: &Request, ctx: &Ctx) -> (u16, Vec<u8>) {
    if !security::bearer_ok(req.header("authorization"), &ctx.token) {
        return (401, error_body(&RpcError::unauthorized()));
    }
    match answer_message(&req.body, |method, p| {
        if matches!(method, "subscribe" | "unsubscribe") {
            return Some(Err(RpcError::new(-32601, format!("method '{method}' needs the WebSocket (GET /ws)"))));
        }
        ctx.methods.call(method, p)
    }) {
        Some(v) => (200, v.to_string().into_bytes()),
        None => (204, Vec::new()),
    }
}
