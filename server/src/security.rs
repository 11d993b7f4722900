//! The token and the Host and Origin checks of the protocol's security section.

use std::net::SocketAddr;

/// A fresh token: 128 random bits from the operating system, as 32 hex digits.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two tokens in time that depends only on their lengths.
pub fn tokens_equal(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Whether an `Authorization` header carries the token.
pub fn bearer_ok(header: Option<&str>, token: &str) -> bool {
    header
        .and_then(|h| h.trim().strip_prefix("Bearer "))
        .is_some_and(|t| tokens_equal(t.trim().as_bytes(), token.as_bytes()))
}

/// The host names a loopback server answers to.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Whether the `Host` header is acceptable. On a loopback bind only the loopback names (with
/// or without the server's port) pass, which stops DNS rebinding; on another bind any host
/// passes (the token still guards it).
pub fn host_ok(host: Option<&str>, addr: SocketAddr) -> bool {
    if !addr.ip().is_loopback() {
        return true;
    }
    let Some(host) = host else { return false };
    let host = host.trim().to_ascii_lowercase();
    let port = addr.port().to_string();
    LOOPBACK_NAMES.iter().any(|n| host == *n || host.strip_prefix(n).and_then(|r| r.strip_prefix(':')) == Some(&port))
}

/// Whether an `Origin` header (if any) is the server's own origin: `http://` + an allowed
/// host name + the server's port. `Origin: null` is refused.
pub fn origin_ok(origin: Option<&str>, addr: SocketAddr) -> bool {
    let Some(origin) = origin else { return true };
    let origin = origin.trim().to_ascii_lowercase();
    let port = addr.port();
    if addr.ip().is_loopback() {
        LOOPBACK_NAMES.iter().any(|n| origin == format!("http://{n}:{port}"))
    } else {
        let ip = match addr {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        };
        origin == format!("http://{ip}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_long() {
        let a = new_token().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_token().unwrap());
        assert!(bearer_ok(Some(&format!("Bearer {a}")), &a));
        assert!(!bearer_ok(Some("Bearer x"), &a));
        assert!(!bearer_ok(None, &a));
    }

    #[test]
    fn host_and_origin() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert!(host_ok(Some("localhost:4000"), addr));
        assert!(host_ok(Some("127.0.0.1"), addr));
        assert!(host_ok(Some("[::1]:4000"), addr));
        assert!(!host_ok(Some("evil.example:4000"), addr));
        assert!(!host_ok(Some("localhost:4001"), addr));
        assert!(!host_ok(None, addr));
        assert!(origin_ok(None, addr));
        assert!(origin_ok(Some("http://localhost:4000"), addr));
        assert!(!origin_ok(Some("null"), addr));
        assert!(!origin_ok(Some("http://evil.example:4000"), addr));
        assert!(!origin_ok(Some("http://localhost:4001"), addr));
    }
}
