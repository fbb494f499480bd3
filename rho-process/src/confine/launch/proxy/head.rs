//! A request head, as both the proxy's HTTP side and a tunnel's check of
//! its first bytes read it (parsed by `httparse`): where it ends, its
//! `Host`, its authority.

use std::io::Read;
use std::net::TcpStream;

/// The largest request head the proxy reads.
pub(super) const MAX_HEAD: usize = 64 << 10;
/// The most headers a request head may have.
pub(super) const MAX_HEADERS: usize = 100;

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
pub(super) fn split_authority(text: &str) -> Option<(&str, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.contains(':') && !bracketed {
        return None;
    }
    Some((host, port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_header_is_read_without_its_port() {
        let head = b"GET / HTTP/1.1\r\nHost: other.test:8080\r\n\r\n";
        assert_eq!(host_header(head), Some(Ok("other.test".to_owned())));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHo"), Some(None));
        assert_eq!(head_end(b"\x16\x03\x01\x02\x00"), None);
    }
}
