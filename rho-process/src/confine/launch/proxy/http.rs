//! The proxy's HTTP side: `CONNECT host:port` for a tunnel (HTTPS, and
//! anything else a client tunnels), and absolute-form requests
//! (`GET http://host/path`) for plain HTTP. Request heads are parsed by
//! `httparse`.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::head::{MAX_HEADERS, host_header, read_head, split_authority};
use super::rules::{Refusal, same_host};
use super::{Served, tunnel};

/// Serves one client whose first bytes (`first`) are HTTP.
pub(super) fn serve(mut client: TcpStream, first: Vec<u8>, served: &Served) {
    let Some(head) = read_head(&mut client, first) else {
        answer(
            &mut client,
            400,
            "the proxy takes an HTTP/1 request head of at most 64 KiB",
        );
        return;
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(
        request.parse(&head.bytes),
        Ok(httparse::Status::Complete(_))
    ) {
        answer(&mut client, 400, "the request head is not valid HTTP/1");
        return;
    }
    let (Some(method), Some(target)) = (request.method, request.path) else {
        answer(&mut client, 400, "the request has no method or target");
        return;
    };
    let asked_host = match host_header(&head.bytes[..head.end]) {
        Some(Ok(host)) => Some(host),
        Some(Err(())) => {
            answer(&mut client, 400, "the request names more than one host");
            return;
        }
        None => None,
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(target) else {
            answer(&mut client, 400, "CONNECT takes host:port");
            return;
        };
        let host = host.to_owned();
        if let Some(other) = asked_host.filter(|other| !same_host(other, &host)) {
            refuse(&mut client, served, &host, port, &Refusal::Mismatch(other));
            return;
        }
        let Some(upstream) = open(&mut client, served, &host, port) else {
            return;
        };
        if client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .is_err()
        {
            return;
        }
        let early = head.bytes[head.end..].to_vec();
        tunnel::carry(client, upstream, &host, port, early, served);
        return;
    }
    // Plain HTTP: an absolute-form target.
    let Some((host, port, path)) = absolute_target(target) else {
        answer(
            &mut client,
            400,
            "the proxy takes CONNECT host:port, or a request for an absolute http:// URL",
        );
        return;
    };
    if let Some(other) = asked_host.filter(|other| !same_host(other, &host)) {
        refuse(&mut client, served, &host, port, &Refusal::Mismatch(other));
        return;
    }
    let Some(mut upstream) = open(&mut client, served, &host, port) else {
        return;
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for header in request.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        // Hop-by-hop headers, the proxy's own: the request goes on asking
        // the server to close the connection after it. Bytes the client
        // sends after it on this connection go to the same server (the
        // same allowed host's addresses), unread.
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
            continue;
        }
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(&head.bytes[head.end..]);
    if upstream.write_all(&out).is_err() {
        answer(
            &mut client,
            502,
            &format!("{host}:{port} closed the connection"),
        );
        return;
    }
    tunnel::relay(client, upstream);
}

/// `http://host[:port]/path` split into host, port and the origin-form
/// path.
fn absolute_target(target: &str) -> Option<(String, u16, String)> {
    let rest = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], rest[at..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path
    };
    // No credentials in the URL: they would be sent to the server.
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    match split_authority(authority) {
        Some((host, port)) => Some((host.to_owned(), port, path)),
        // No port: the whole authority is the host (an IPv6 address only
        // in brackets).
        None if !authority.contains(':') || authority.ends_with(']') => {
            Some((authority.to_owned(), 80, path))
        }
        None => None,
    }
}

/// Decides and connects to `host:port`; on refusal or failure answers the
/// client and returns `None`.
fn open(client: &mut TcpStream, served: &Served, host: &str, port: u16) -> Option<TcpStream> {
    let addresses = match served.rules.decide(host, port) {
        Ok(addresses) => addresses,
        Err(refusal) => {
            refuse(client, served, host, port, &refusal);
            return None;
        }
    };
    match super::rules::connect(&addresses) {
        Ok(upstream) => Some(upstream),
        Err(error) => {
            answer(
                client,
                502,
                &format!("could not connect to {host}:{port}: {error}"),
            );
            None
        }
    }
}

/// Tells the client and the call that `host:port` was refused.
fn refuse(client: &mut TcpStream, served: &Served, host: &str, port: u16, refusal: &Refusal) {
    let text = served.report(host, port, refusal);
    answer(client, 403, &text);
}

/// Writes a response with `status` and `text` as its body, and closes
/// once the client has stopped sending.
pub(super) fn answer(client: &mut TcpStream, status: u16, text: &str) {
    respond(client, status, text);
    // A lingering close: closing with the client's bytes unread would
    // reset the connection, and the client could lose the answer. Read
    // what it still sends, a bounded amount for a bounded time.
    let _ = client.set_read_timeout(Some(LINGER));
    let mut sink = [0u8; 8192];
    let mut drained = 0;
    while drained < MAX_LINGER_BYTES {
        match client.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(read) => drained += read,
        }
    }
}

/// Writes a response with `status` and `text` as its body, and shuts the
/// connection for writing, at once (for the thread that accepts).
pub(super) fn respond(client: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let body = format!("{text}\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes());
    let _ = client.shutdown(std::net::Shutdown::Write);
}

/// How long, and how much, an answered client's further bytes are read
/// before its connection is closed.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);
const MAX_LINGER_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absolute_target_splits_into_host_port_and_path() {
        assert_eq!(
            absolute_target("http://Example.com:8080/a?b"),
            Some(("Example.com".into(), 8080, "/a?b".into()))
        );
        assert_eq!(
            absolute_target("HTTP://example.com?x"),
            Some(("example.com".into(), 80, "/?x".into()))
        );
        assert_eq!(
            absolute_target("http://[::1]:81/"),
            Some(("[::1]".into(), 81, "/".into()))
        );
        assert_eq!(absolute_target("https://example.com/"), None);
        assert_eq!(absolute_target("http://user:pw@example.com/"), None);
        assert_eq!(absolute_target("/relative"), None);
        assert_eq!(absolute_target("http://[::1"), None);
        assert_eq!(
            absolute_target("http://[::1]/"),
            Some(("[::1]".into(), 80, "/".into()))
        );
    }
}
