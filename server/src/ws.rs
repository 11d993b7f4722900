//! The WebSocket side: the upgrade, `auth` first, requests, subscriptions and their
//! notifications on one non-blocking socket per connection.

use std::collections::HashSet;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

use crate::http::{MAX_BODY_BYTES, REQUEST_TIMEOUT, Request, write_response};
use crate::rpc::{RpcError, answer_message, response, statement_params, str_param};
use crate::subscribe::{MAX_SUBSCRIPTIONS_PER_CONNECTION, Outbox};
use crate::{Ctx, security};

/// How long the connection thread sleeps when neither the client nor the hub has anything.
const POLL: Duration = Duration::from_millis(2);

/// Answers the upgrade request and serves the socket until it closes.
pub(crate) fn upgrade(mut stream: TcpStream, req: &Request, read_ahead: Vec<u8>, ctx: &Ctx) {
    let upgrade_ok = req.header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let version_ok = req.header("sec-websocket-version").is_some_and(|v| v.trim() == "13");
    let Some(key) = req.header("sec-websocket-key").filter(|_| upgrade_ok && version_ok) else {
        let _ = write_response(&mut stream, 426, "text/plain", b"Upgrade Required: a WebSocket handshake", true);
        return;
    };
    let accept = tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).and_then(|_| stream.flush()).is_err() || stream.set_nonblocking(true).is_err()
    {
        return;
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_BODY_BYTES))
        .max_frame_size(Some(MAX_BODY_BYTES))
        .max_write_buffer_size(64 << 20);
    let ws = WebSocket::from_partially_read(stream, read_ahead, Role::Server, Some(config));
    Session { ws, ctx, outbox: Arc::new(Outbox::default()), subs: HashSet::new(), authed: false }.run();
}

struct Session<'a> {
    ws: WebSocket<TcpStream>,
    ctx: &'a Ctx,
    outbox: Arc<Outbox>,
    subs: HashSet<String>,
    authed: bool,
}

fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io) if io.kind() == io::ErrorKind::WouldBlock)
}

impl Session<'_> {
    fn run(mut self) {
        let started = Instant::now();
        loop {
            if self.ctx.stop.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            if !self.authed && started.elapsed() > REQUEST_TIMEOUT {
                self.close(CloseCode::Policy, "no auth in time");
                break;
            }
            let mut busy = false;
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    busy = true;
                    if !self.message(t.as_bytes()) {
                        break;
                    }
                }
                Ok(Message::Binary(_)) => {
                    busy = true;
                    let e = RpcError::invalid_request("binary frames are not requests; send text");
                    if !self.send(&response(&Json::Null, Err(e))) {
                        break;
                    }
                }
                Ok(Message::Close(_)) => break,
                Ok(_) => busy = true,
                Err(e) if would_block(&e) => {}
                Err(_) => break,
            }
            // Hand the client more notifications only once it took the previous ones, so a slow
            // client's changes wait merged in the outbox.
            match self.ws.flush() {
                Ok(()) => {
                    for n in self.outbox.take() {
                        busy = true;
                        if !self.send(&n) {
                            return self.finish();
                        }
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(_) => break,
            }
            if !busy {
                self.outbox.wait(POLL);
            }
        }
        self.finish();
    }

    fn finish(self) {
        for id in &self.subs {
            self.ctx.hub.unsubscribe(&self.outbox, id);
        }
    }

    fn send(&mut self, v: &Json) -> bool {
        match self.ws.write(Message::text(v.to_string())) {
            Ok(()) => true,
            Err(e) => would_block(&e),
        }
    }

    fn close(&mut self, code: CloseCode, reason: &str) {
        let _ = self.ws.close(Some(CloseFrame { code, reason: reason.into() }));
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            match self.ws.flush() {
                Err(e) if would_block(&e) => std::thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
    }

    /// Handles one text message; `false` ends the connection.
    fn message(&mut self, bytes: &[u8]) -> bool {
        if !self.authed {
            return self.auth(bytes);
        }
        let ctx = self.ctx;
        let mut subs = std::mem::take(&mut self.subs);
        let outbox = Arc::clone(&self.outbox);
        let answer = answer_message(bytes, |method, p| match method {
            "auth" => Some(Ok(json!({}))),
            "subscribe" => Some((|| {
                let id = str_param(p, "id")?;
                let text = str_param(p, "text")?;
                let params = statement_params(p)?;
                if subs.contains(id) {
                    return Err(RpcError::params("id", "a subscription with this id is open"));
                }
                if subs.len() >= MAX_SUBSCRIPTIONS_PER_CONNECTION {
                    return Err(RpcError::limit("subscriptions", "at most 32 subscriptions per connection"));
                }
                let params_json = p.get("params").cloned().unwrap_or(Json::Null);
                let r = ctx.hub.subscribe(&outbox, id, text, params, &params_json)?;
                subs.insert(id.to_string());
                Ok(r)
            })()),
            "unsubscribe" => Some((|| {
                let id = str_param(p, "id")?;
                if subs.remove(id) {
                    ctx.hub.unsubscribe(&outbox, id);
                }
                Ok(json!({}))
            })()),
            _ => ctx.methods.call(method, p),
        });
        self.subs = subs;
        match answer {
            Some(a) => self.send(&a),
            None => true,
        }
    }

    fn auth(&mut self, bytes: &[u8]) -> bool {
        let v: Option<Json> = serde_json::from_slice(bytes).ok();
        let id = v.as_ref().and_then(|v| v.get("id")).cloned().unwrap_or(Json::Null);
        let ok = v.as_ref().is_some_and(|v| {
            v.get("method") == Some(&json!("auth"))
                && v.get("params")
                    .and_then(|p| p.get("token"))
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| security::tokens_equal(t.as_bytes(), self.ctx.token.as_bytes()))
        });
        if ok {
            self.authed = true;
            return self.send(&response(&id, Ok(json!({}))));
        }
        self.send(&response(&id, Err(RpcError::unauthorized())));
        self.close(CloseCode::from(4401), "missing or wrong token");
        false
    }
}
