//! The proxy's HTTP side: `CONNECT host:port` for a tunnel (HTTPS, and
//! anything else a client tunnels), and absolute-form requests
//! (`GET http://host/path`) for plain HTTP. Request heads are parsed by
//! `httparse`.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::rules::{Refusal, same_host};
use super::{Served, tunnel};

/// The largest request head the proxy reads.
pub(super) const MAX_HEAD: usize = 64 << 10;
/// The most headers a request head may have.
const MAX_HEADERS: usize = 100;

/// A request head read from a client: the bytes, and where the head ends
/// (what follows is the start of the body or of the tunnel's traffic).
pub(super) struct Head {
    pub(super) bytes: Vec<u8>,
    pub(super) end: usize,
}

/// Reads from `stream` into `bytes` until `bytes` holds a whole request
/// head; `None` when the stream ends first, the head is larger than
/// [`MAX_HEAD`] or it is not HTTP.
pub(super) fn read_head(stream: &mut TcpStream, mut bytes: Vec<u8>) -> Option<Head> {
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = head_end(&bytes)? {
            return Some(Head { bytes, end });
        }
        if bytes.len() >= MAX_HEAD {
            return None;
        }
        let read = stream.read(&mut chunk).ok().filter(|read| *read > 0)?;
        bytes.extend_from_slice(&chunk[..read]);
    }
}

/// Where a whole request head in `bytes` ends: `Some(None)` while it is
/// not whole yet, `None` if `bytes` is not a request head.
pub(super) fn head_end(bytes: &[u8]) -> Option<Option<usize>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(end)) => Some(Some(end)),
        Ok(httparse::Status::Partial) => Some(None),
        Err(_) => None,
    }
}

/// The `Host` header of the whole request head `head`, if it has one
/// (without its port); `Err` when it has more than one, or one that is
/// not text: a request that could name two hosts.
pub(super) fn host_header(head: &[u8]) -> Option<Result<String, ()>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    request.parse(head).ok()?;
    let mut hosts = request
        .headers
        .iter()
        .filter(|header| header.name.eq_ignore_ascii_case("host"));
    let value = hosts.next()?.value;
    if hosts.next().is_some() {
        return Some(Err(()));
    }
    let Ok(text) = std::str::from_utf8(value) else {
        return Some(Err(()));
    };
    let text = text.trim();
    Some(Ok(split_authority(text)
        .map_or(text, |(host, _)| host)
        .to_owned()))
}

/// `host:port` (or `[v6]:port`) split; `None` without a port.
fn split_authority(text: &str) -> Option<(&str, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.contains(':') && !bracketed {
        return None;
    }
    Some((host, port.parse().ok()?))
}

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

    #[test]
    fn the_host_header_is_read_without_its_port() {
        let head = b"GET / HTTP/1.1\r\nHost: other.test:8080\r\n\r\n";
        assert_eq!(host_header(head), Some(Ok("other.test".to_owned())));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHo"), Some(None));
        assert_eq!(head_end(b"\x16\x03\x01\x02\x00"), None);
    }
}
