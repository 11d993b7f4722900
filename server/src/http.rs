//! Reading one HTTP/1.1 request off a socket within the protocol's limits, and writing
//! responses. Parsing is `httparse`'s; this module adds the limits (16 KiB of headers in total,
//! 1 MiB of body, 10 s to send a request) and never panics on any input.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

/// The most header bytes (request line included) a request may have.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The largest request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long a client has to send a whole request, from its first byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How many header lines a request may have.
const MAX_HEADERS: usize = 64;

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, query string cut off.
    pub path: String,
    /// Header names lower-cased, values as sent (invalid UTF-8 is replaced).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header of this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Whether the client asked to close the connection after this request.
    pub fn wants_close(&self) -> bool {
        self.header("connection").is_some_and(|v| v.to_ascii_lowercase().contains("close"))
    }
}

/// Why no request could be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The connection closed (or idled out) before a request began: not an error to report.
    #[error("connection closed")]
    Closed,
    /// Answer with this status, then close.
    #[error("HTTP {0}")]
    Status(u16),
}

/// Reads one request. `buf` carries bytes already read past the previous request (pipelining)
/// and keeps the bytes past this one. `idle` is how long to wait for a first byte.
pub fn read_request(stream: &mut impl ReadTimeout, buf: &mut Vec<u8>, idle: Duration) -> Result<Request, ReadError> {
    let mut deadline: Option<Instant> = if buf.is_empty() { None } else { Some(Instant::now() + REQUEST_TIMEOUT) };
    let idle_until = Instant::now() + idle;
    let mut chunk = [0u8; 8192];
    // Headers.
    let (head_len, method, path, headers) = loop {
        let mut hdrs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut hdrs);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                if n > MAX_HEADER_BYTES {
                    return Err(ReadError::Status(431));
                }
                let headers = req
                    .headers
                    .iter()
                    .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
                    .collect::<Vec<_>>();
                let path = req.path.unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/").to_string();
                break (n, req.method.unwrap_or("").to_string(), path, headers);
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEADER_BYTES {
                    return Err(ReadError::Status(431));
                }
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ReadError::Status(431)),
            Err(_) => return Err(ReadError::Status(400)),
        }
        let until = deadline.unwrap_or(idle_until);
        match read_some(stream, &mut chunk, until) {
            Ok(0) | Err(_) if deadline.is_none() => return Err(ReadError::Closed),
            Ok(0) => return Err(ReadError::Status(400)),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                deadline.get_or_insert_with(|| Instant::now() + REQUEST_TIMEOUT);
            }
            Err(e) if is_timeout(&e) => return Err(ReadError::Status(408)),
            Err(_) => return Err(ReadError::Closed),
        }
    };
    let deadline = deadline.unwrap_or_else(|| Instant::now() + REQUEST_TIMEOUT);
    let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim());
    if find("transfer-encoding").is_some() {
        // Chunked bodies are not needed by any client of this protocol.
        return Err(ReadError::Status(501));
    }
    let body_len = match find("content-length") {
        None => 0,
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > MAX_BODY_BYTES as u64 => return Err(ReadError::Status(413)),
            Ok(n) => n as usize,
            Err(_) => return Err(ReadError::Status(400)),
        },
    };
    while buf.len() < head_len + body_len {
        match read_some(stream, &mut chunk, deadline) {
            Ok(0) => return Err(ReadError::Status(400)),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if is_timeout(&e) => return Err(ReadError::Status(408)),
            Err(_) => return Err(ReadError::Closed),
        }
    }
    let body = buf[head_len..head_len + body_len].to_vec();
    buf.drain(..head_len + body_len);
    Ok(Request { method, path, headers, body })
}

/// A stream whose reads can be bounded in time (a `TcpStream`; tests use in-memory ones).
pub trait ReadTimeout: Read {
    /// Sets the timeout of the next reads (`None`: block).
    fn set_timeout(&mut self, d: Option<Duration>) -> io::Result<()>;
}

impl ReadTimeout for std::net::TcpStream {
    fn set_timeout(&mut self, d: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(d)
    }
}

fn read_some(stream: &mut impl ReadTimeout, chunk: &mut [u8], until: Instant) -> io::Result<usize> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "request deadline"));
    }
    stream.set_timeout(Some(left))?;
    loop {
        match stream.read(chunk) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

/// The reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Writes a whole response. `close` adds `Connection: close`.
pub fn write_response(w: &mut impl Write, status: u16, content_type: &str, body: &[u8], close: bool) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n", reason(status), body.len());
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    head.push_str("Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    w.write_all(&out)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An in-memory stream: reads return the given pieces, then end of file.
    struct Pieces(Vec<Vec<u8>>);

    impl Read for Pieces {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let mut p = self.0.remove(0);
            let n = p.len().min(out.len());
            out[..n].copy_from_slice(&p[..n]);
            if n < p.len() {
                p.drain(..n);
                self.0.insert(0, p);
            }
            Ok(n)
        }
    }

    impl ReadTimeout for Pieces {
        fn set_timeout(&mut self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
    }

    fn read(bytes: &[u8]) -> Result<Request, ReadError> {
        read_request(&mut Pieces(vec![bytes.to_vec()]), &mut Vec::new(), Duration::from_secs(1))
    }

    #[test]
    fn a_post_with_a_body() {
        let r = read(b"POST /rpc?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.body.as_slice()), ("POST", "/rpc", &b"{}"[..]));
        assert_eq!(r.header("host"), Some("localhost"));
    }

    #[test]
    fn limits_give_their_status() {
        let big = format!("POST /rpc HTTP/1.1\r\nContent-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1);
        assert!(matches!(read(big.as_bytes()), Err(ReadError::Status(413))));
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEADER_BYTES));
        assert!(matches!(read(long.as_bytes()), Err(ReadError::Status(431))));
        assert!(matches!(read(b"GET / HTTP/1.1\r\nHost: x\r\n"), Err(ReadError::Status(400))));
        assert!(matches!(read(b"\x00\x01garbage\r\n\r\n"), Err(ReadError::Status(400))));
        assert!(matches!(read(b""), Err(ReadError::Closed)));
    }

    #[test]
    fn pipelined_requests_keep_their_bytes() {
        let mut s = Pieces(vec![b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n".to_vec()]);
        let mut buf = Vec::new();
        assert_eq!(read_request(&mut s, &mut buf, Duration::from_secs(1)).unwrap().path, "/a");
        assert_eq!(read_request(&mut s, &mut buf, Duration::from_secs(1)).unwrap().path, "/b");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 256 } else { 4096 }))]

        /// Any bytes, cut anywhere: a request or an error, never a panic or a hang.
        #[test]
        fn any_bytes_in_any_pieces(bytes in proptest::collection::vec(any::<u8>(), 0..600), cuts in proptest::collection::vec(1usize..64, 0..8)) {
            let mut pieces = Vec::new();
            let mut rest = &bytes[..];
            for c in cuts {
                let c = c.min(rest.len());
                pieces.push(rest[..c].to_vec());
                rest = &rest[c..];
            }
            pieces.push(rest.to_vec());
            let _ = read_request(&mut Pieces(pieces), &mut Vec::new(), Duration::from_secs(1));
        }

        /// Mutations of a valid request: same.
        #[test]
        fn mutated_requests(pos in 0usize..80, byte in any::<u8>(), len in 0u64..3_000_000) {
            let mut req = format!("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len}\r\n\r\n{{}}").into_bytes();
            let p = pos % req.len();
            req[p] = byte;
            let _ = read(&req);
        }
    }
}
