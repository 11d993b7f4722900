//! A small blocking client of the protocol, for the CLI (`--connect`), tests and benchmarks:
//! JSON-RPC over a kept-alive HTTP connection, and a WebSocket for subscriptions.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use tungstenite::{Message, WebSocket};

/// The error object of a JSON-RPC error answer ([`ClientError::Rpc`]).
pub use crate::rpc::RpcError;
use crate::rpc::request;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL is not `http://HOST:PORT/...`.
    #[error("not a server URL (http://HOST:PORT/#token=TOKEN): {0}")]
    Url(String),
    /// The server is unreachable or the connection broke.
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// The server answered with something that is not the protocol.
    #[error("bad answer: {0}")]
    Protocol(String),
    /// The server answered with an HTTP error status.
    #[error("HTTP {0}")]
    Status(u16),
    /// The server answered with a JSON-RPC error.
    #[error("{}", .0.message)]
    Rpc(RpcError),
}

/// Where a server is and its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `HOST:PORT`.
    pub host: String,
    /// The token (empty when unknown).
    pub token: String,
}

impl Endpoint {
    /// Parses the URL `ecsdb serve` prints; `token` (from `--token` or `ECSDB_TOKEN`) overrides
    /// the one in its fragment.
    pub fn parse(url: &str, token: Option<&str>) -> Result<Endpoint, ClientError> {
        let rest = url.strip_prefix("http://").ok_or_else(|| ClientError::Url(url.into()))?;
        let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
        let host = before_fragment.split('/').next().unwrap_or("");
        if host.is_empty() || !host.contains(':') {
            return Err(ClientError::Url(url.into()));
        }
        let from_url = fragment.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or("");
        Ok(Endpoint { host: host.to_string(), token: token.unwrap_or(from_url).to_string() })
    }
}

fn rpc_result(v: Json) -> Result<Json, ClientError> {
    if let Some(e) = v.get("error") {
        let code = e.get("code").and_then(Json::as_i64).unwrap_or(0);
        let message = e.get("message").and_then(Json::as_str).unwrap_or("").to_string();
        return Err(ClientError::Rpc(RpcError { code, message, data: e.get("data").cloned() }));
    }
    v.get("result").cloned().ok_or_else(|| ClientError::Protocol(format!("no result in {v}")))
}

/// JSON-RPC over HTTP, one kept-alive connection.
#[derive(Debug)]
pub struct HttpClient {
    endpoint: Endpoint,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    next_id: u64,
}

impl HttpClient {
    /// A client of `endpoint` (connects on first use).
    pub fn new(endpoint: Endpoint) -> HttpClient {
        HttpClient { endpoint, stream: None, buf: Vec::new(), next_id: 1 }
    }

    /// Calls `method` and returns its result.
    pub fn call(&mut self, method: &str, params: Json) -> Result<Json, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let body = request(id, method, params).to_string();
        let auth = format!("Bearer {}", self.endpoint.token);
        let (status, body) = self.post(&[("Authorization", &auth)], body.as_bytes())?;
        let v: Json = serde_json::from_slice(&body).map_err(|_| match status {
            200 => ClientError::Protocol("the body is not JSON".into()),
            s => ClientError::Status(s),
        })?;
        rpc_result(v)
    }

    /// Sends a `POST /rpc` with these extra headers and body; returns the status and body.
    pub fn post(&mut self, headers: &[(&str, &str)], body: &[u8]) -> Result<(u16, Vec<u8>), ClientError> {
        let mut head =
            format!("POST /rpc HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", self.endpoint.host, body.len());
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut req = head.into_bytes();
        req.extend_from_slice(body);
        self.raw(&req)
    }

    /// Sends raw request bytes and reads one response (reconnecting once if a kept-alive
    /// connection had closed).
    pub fn raw(&mut self, request: &[u8]) -> Result<(u16, Vec<u8>), ClientError> {
        for attempt in 0..2 {
            if self.stream.is_none() {
                let s = TcpStream::connect(&self.endpoint.host)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(Duration::from_secs(60)))?;
                self.stream = Some(s);
                self.buf.clear();
            }
            let s = self.stream.as_mut().expect("connected above");
            match s.write_all(request).and_then(|_| read_response(s, &mut self.buf)) {
                Ok(r) => {
                    if r.2 {
                        self.stream = None;
                    }
                    return Ok((r.0, r.1));
                }
                Err(e) if attempt == 0 && self.buf.is_empty() => {
                    let _ = e;
                    self.stream = None;
                }
                Err(e) => {
                    self.stream = None;
                    return Err(e.into());
                }
            }
        }
        Err(ClientError::Protocol("the server closed the connection".into()))
    }
}

/// Reads one response: (status, body, the server closes).
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<(u16, Vec<u8>, bool)> {
    let mut chunk = [0u8; 16384];
    loop {
        let mut hdrs = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut hdrs);
        match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let status = resp.code.unwrap_or(0);
                let header = |name: &str| {
                    resp.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                };
                let len: usize = header("content-length").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
                let close = header("connection").is_some_and(|v| v.contains("close"));
                while buf.len() < n + len {
                    let k = s.read(&mut chunk)?;
                    if k == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    buf.extend_from_slice(&chunk[..k]);
                }
                let body = buf[n..n + len].to_vec();
                buf.drain(..n + len);
                return Ok((status, body, close));
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
        }
        let k = s.read(&mut chunk)?;
        if k == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..k]);
    }
}

/// A WebSocket client, authenticated: calls and `changed` notifications.
#[derive(Debug)]
pub struct WsClient {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    notifications: VecDeque<Json>,
}

impl WsClient {
    /// Connects to `GET /ws` and sends `auth`.
    pub fn connect(endpoint: &Endpoint) -> Result<WsClient, ClientError> {
        let stream = TcpStream::connect(&endpoint.host)?;
        stream.set_nodelay(true)?;
        let url = format!("ws://{}/ws", endpoint.host);
        let (ws, _) = tungstenite::client(url.as_str(), stream).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let mut c = WsClient { ws, next_id: 1, notifications: VecDeque::new() };
        c.call("auth", json!({ "token": endpoint.token }))?;
        Ok(c)
    }

    /// Sends a request and waits for its response; notifications arriving meanwhile are kept.
    pub fn call(&mut self, method: &str, params: Json) -> Result<Json, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_text(&request(id, method, params).to_string())?;
        loop {
            let v = self.next_message(None)?.ok_or_else(|| ClientError::Protocol("no answer".into()))?;
            if v.get("id") == Some(&json!(id)) {
                return rpc_result(v);
            }
            if v.get("method").is_some() {
                self.notifications.push_back(v);
            }
        }
    }

    /// Sends one text message as is.
    pub fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.ws.send(Message::text(text.to_string())).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// The next notification's params, waiting up to `timeout`.
    pub fn next_notification(&mut self, timeout: Duration) -> Result<Option<Json>, ClientError> {
        if let Some(n) = self.notifications.pop_front() {
            return Ok(n.get("params").cloned());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.next_message(Some(left))? {
                Some(v) if v.get("method").is_some() => return Ok(v.get("params").cloned()),
                Some(_) => {}
                None => return Ok(None),
            }
        }
    }

    /// The next text message as JSON; `None` on timeout. A close is an error.
    pub fn next_message(&mut self, timeout: Option<Duration>) -> Result<Option<Json>, ClientError> {
        self.ws.get_mut().set_read_timeout(timeout)?;
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    return serde_json::from_str(t.as_str())
                        .map(Some)
                        .map_err(|e| ClientError::Protocol(e.to_string()));
                }
                Ok(Message::Close(f)) => {
                    let code = f.map(|f| u16::from(f.code)).unwrap_or(1005);
                    return Err(ClientError::Protocol(format!("closed with code {code}")));
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(ClientError::Protocol(e.to_string())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:4000/#token=abc", None).unwrap();
        assert_eq!((e.host.as_str(), e.token.as_str()), ("127.0.0.1:4000", "abc"));
        assert_eq!(Endpoint::parse("http://127.0.0.1:4000", Some("t")).unwrap().token, "t");
        assert!(Endpoint::parse("ftp://x", None).is_err());
        assert!(Endpoint::parse("http://nohost/", None).is_err());
    }
}
