//! A tunnel's traffic: the client's first bytes checked against the host
//! the tunnel was opened for (a TLS ClientHello's server name, read by
//! rustls; an HTTP request's `Host`), then carried both ways until either
//! side ends.
//!
//! What the check holds: a tunnel opened for a name is refused when its
//! first bytes name another host, carry TLS without a server name, or
//! look like TLS or HTTP and cannot be read as either. Past them, and
//! inside TLS, it sees nothing: what a tunnel is bound to is the addresses
//! its allowed name resolves to, and another site served from those same
//! addresses can still be asked for in a later request.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};

use super::Served;
use super::head::{MAX_HEAD, head_end, host_header};
use super::rules::{Refusal, same_host};
use crate::confine::hosts::parse_address;

/// A TLS record carrying a handshake message: what a ClientHello starts
/// with.
const TLS_HANDSHAKE: u8 = 0x16;

/// What the client's first bytes say of where they are going.
#[derive(Debug, PartialEq, Eq)]
enum Names {
    /// This host (a TLS server name, an HTTP `Host`).
    Host(String),
    /// TLS without a server name (or one rustls cannot read as a name).
    NoServerName,
    /// A protocol that names no host (neither TLS nor HTTP).
    Nothing,
    /// Not yet known: more bytes are needed.
    Unknown,
    /// What looks like TLS or HTTP but cannot be read as either.
    Garbled(&'static str),
}

/// Carries `client` to `upstream`, a tunnel opened for `host:port`, after
/// checking the client's first bytes (`early`, and what follows) name no
/// other host.
pub(super) fn carry(
    mut client: TcpStream,
    upstream: TcpStream,
    host: &str,
    port: u16,
    early: Vec<u8>,
    served: &Served,
) {
    // The server side flows at once: a protocol where the server speaks
    // first works, and the check below holds back only the client's side.
    let Some(back) = flow_back(&client, &upstream) else {
        return;
    };
    // No time limit on the first bytes: a client of a protocol where the
    // server speaks first sends them once it has read the server, and a
    // client that waits is never let past the check for waiting.
    let _ = client.set_read_timeout(None);
    let mut first = early;
    let named = loop {
        match names(&first) {
            Names::Unknown if first.len() < MAX_HEAD => {}
            Names::Unknown => break Names::Garbled("more than 64 KiB that name no host yet"),
            other => break other,
        }
        let mut chunk = [0u8; 8192];
        match client.read(&mut chunk) {
            // Ended before saying anything: nothing to carry.
            Ok(0) | Err(_) if first.is_empty() => break Names::Nothing,
            Ok(0) | Err(_) => break Names::Garbled("traffic cut before it named its host"),
            Ok(read) => first.extend_from_slice(&chunk[..read]),
        }
    };
    // A tunnel opened for an address goes to that address whatever its
    // traffic names; one opened for a name must name it, in TLS too.
    let by_address = parse_address(host).is_some();
    let refusal = match named {
        Names::Host(other) if !by_address && !same_host(&other, host) => {
            Some(Refusal::Mismatch(other))
        }
        Names::NoServerName if !by_address => Some(Refusal::Mismatch(
            "a TLS handshake without a server name".into(),
        )),
        Names::Garbled(what) => Some(Refusal::Mismatch(what.into())),
        _ => None,
    };
    if let Some(refusal) = refusal {
        served.report(host, port, &refusal);
        let _ = client.shutdown(Shutdown::Both);
        let _ = upstream.shutdown(Shutdown::Both);
        let _ = back.join();
        return;
    }
    forward(client, upstream, &first);
    let _ = back.join();
}

/// Carries a connection whose request already went: both ways, no check.
pub(super) fn relay(client: TcpStream, upstream: TcpStream) {
    let Some(back) = flow_back(&client, &upstream) else {
        return;
    };
    forward(client, upstream, &[]);
    let _ = back.join();
}

/// Starts carrying `upstream` to `client` on a thread of its own.
fn flow_back(client: &TcpStream, upstream: &TcpStream) -> Option<std::thread::JoinHandle<()>> {
    let mut to_client = client.try_clone().ok()?;
    let mut from_upstream = upstream.try_clone().ok()?;
    std::thread::Builder::new()
        .name("rho-proxy-back".into())
        .spawn(move || {
            let _ = std::io::copy(&mut from_upstream, &mut to_client);
            let _ = to_client.shutdown(Shutdown::Write);
        })
        .ok()
}

/// Writes `first`, then carries the rest of `client` to `upstream`.
fn forward(mut client: TcpStream, mut upstream: TcpStream, first: &[u8]) {
    // The time to ask is over: a tunnel may idle as long as it likes.
    let _ = client.set_read_timeout(None);
    if upstream.write_all(first).is_ok() {
        let _ = std::io::copy(&mut client, &mut upstream);
    }
    let _ = upstream.shutdown(Shutdown::Write);
}

/// What `bytes`, the first a client sent through a tunnel, name.
fn names(bytes: &[u8]) -> Names {
    match bytes.first() {
        None => Names::Unknown,
        Some(&TLS_HANDSHAKE) => server_name(bytes),
        Some(_) => match head_end(bytes) {
            Some(Some(end)) => match host_header(&bytes[..end]) {
                Some(Ok(host)) => Names::Host(host),
                Some(Err(())) => Names::Garbled("an HTTP request naming more than one host"),
                None => Names::Nothing,
            },
            Some(None) => Names::Unknown,
            // A request line httparse will not read (too many headers, an
            // HTTP/2 preface): it may name any host further on.
            None if looks_like_a_request(bytes) => {
                Names::Garbled("an HTTP request the proxy cannot read")
            }
            // Neither TLS nor HTTP: a protocol that names no host.
            None => Names::Nothing,
        },
    }
}

/// Whether `bytes` start as an HTTP request line does: a method of
/// capital letters, then a space.
fn looks_like_a_request(bytes: &[u8]) -> bool {
    let method = bytes
        .iter()
        .take_while(|byte| byte.is_ascii_uppercase())
        .count();
    method > 0 && bytes.get(method) == Some(&b' ')
}

/// The server name of the ClientHello that `bytes` start with.
fn server_name(bytes: &[u8]) -> Names {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        if acceptor.read_tls(&mut rest).is_err() {
            return Names::Garbled("a TLS handshake the proxy cannot read");
        }
        match acceptor.accept() {
            // rustls gives no name for a server name extension it cannot
            // read as one (an address, another name type): for a tunnel
            // opened for a name, that is no name, and refused.
            Ok(Some(accepted)) => {
                return accepted
                    .client_hello()
                    .server_name()
                    .map_or(Names::NoServerName, |name| Names::Host(name.to_owned()));
            }
            Ok(None) => {}
            Err(_) => return Names::Garbled("a TLS handshake the proxy cannot read"),
        }
    }
    Names::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_traffic_names_its_one_host_header() {
        assert_eq!(
            names(b"GET / HTTP/1.1\r\nHost: Other.test\r\n\r\n"),
            Names::Host("Other.test".into())
        );
        assert_eq!(names(b"GET / HTTP/1.1\r\nHost: a"), Names::Unknown);
        assert_eq!(names(b"SSH-2.0-OpenSSH_9.6\r\n"), Names::Nothing);
        assert_eq!(names(b""), Names::Unknown);
        assert!(matches!(
            names(b"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n"),
            Names::Garbled(_)
        ));
    }

    #[test]
    fn a_request_the_proxy_cannot_read_is_garbled() {
        assert!(matches!(
            names(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            Names::Garbled(_)
        ));
        let many: String = (0..150).map(|i| format!("X-{i}: y\r\n")).collect();
        let request = format!("GET / HTTP/1.1\r\n{many}Host: b.test\r\n\r\n");
        assert!(matches!(names(request.as_bytes()), Names::Garbled(_)));
    }

    #[test]
    fn a_tls_record_that_is_no_client_hello_is_garbled() {
        assert!(matches!(
            names(&[0x16, 0x03, 0x01, 0x00, 0x04, 0xff, 0, 0, 0]),
            Names::Garbled(_)
        ));
        // A record header promising more than has come: not known yet.
        assert_eq!(names(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), Names::Unknown);
    }
}
