//! A tunnel's traffic: the client's first bytes checked against the host
//! the tunnel was opened for (a TLS ClientHello's server name, read by
//! rustls; an HTTP request's `Host`), then carried both ways until either
//! side ends.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};

use super::Served;
use super::http::{MAX_HEAD, head_end, host_header};
use super::rules::{Refusal, same_host};

/// A TLS record carrying a handshake message: what a ClientHello starts
/// with.
const TLS_HANDSHAKE: u8 = 0x16;

/// What the client's first bytes say of where they are going.
#[derive(Debug, PartialEq, Eq)]
enum Names {
    /// This host (a TLS server name, an HTTP `Host`).
    Host(String),
    /// No host: TLS without a server name, or a protocol that names none.
    Nothing,
    /// Not yet known: more bytes are needed.
    Unknown,
    /// A TLS record that is not a ClientHello rustls can read.
    Garbled,
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
    let mut first = early;
    let named = loop {
        match names(&first) {
            Names::Unknown if first.len() < MAX_HEAD => {}
            other => break other,
        }
        let mut chunk = [0u8; 8192];
        match client.read(&mut chunk) {
            Ok(0) | Err(_) => break Names::Nothing,
            Ok(read) => first.extend_from_slice(&chunk[..read]),
        }
    };
    let refusal = match named {
        Names::Host(other) if !same_host(&other, host) => Some(Refusal::Mismatch(other)),
        Names::Garbled => Some(Refusal::Mismatch(
            "a TLS handshake the proxy cannot read".into(),
        )),
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
            Some(Some(end)) => host_header(&bytes[..end]).map_or(Names::Nothing, Names::Host),
            Some(None) => Names::Unknown,
            // Neither TLS nor HTTP: a protocol that names no host.
            None => Names::Nothing,
        },
    }
}

/// The server name of the ClientHello that `bytes` start with.
fn server_name(bytes: &[u8]) -> Names {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        if acceptor.read_tls(&mut rest).is_err() {
            return Names::Garbled;
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                return accepted
                    .client_hello()
                    .server_name()
                    .map_or(Names::Nothing, |name| Names::Host(name.to_owned()));
            }
            Ok(None) => {}
            Err(_) => return Names::Garbled,
        }
    }
    Names::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_traffic_names_its_host_header() {
        assert_eq!(
            names(b"GET / HTTP/1.1\r\nHost: Other.test\r\n\r\n"),
            Names::Host("Other.test".into())
        );
        assert_eq!(names(b"GET / HTTP/1.1\r\nHost: a"), Names::Unknown);
        assert_eq!(names(b"SSH-2.0-OpenSSH_9.6\r\n"), Names::Nothing);
        assert_eq!(names(b""), Names::Unknown);
    }

    #[test]
    fn a_tls_record_that_is_no_client_hello_is_garbled() {
        assert_eq!(
            names(&[0x16, 0x03, 0x01, 0x00, 0x04, 0xff, 0, 0, 0]),
            Names::Garbled
        );
        // A record header promising more than has come: not known yet.
        assert_eq!(names(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), Names::Unknown);
    }
}
