//! The proxy's SOCKS5 side (RFC 1928): no authentication, `CONNECT` to a
//! name (resolved by the proxy, as `socks5h://` asks) or to an address;
//! nothing else (no UDP, no listening).
//!
//! Written here, in its few fixed-layout messages: the one crate that
//! reads them with blocking I/O (`socks5-impl`) is GPL-licensed, and the
//! others are tied to tokio, which this proxy does not run.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpStream};

use super::rules::Refusal;
use super::{Served, tunnel};

/// The protocol's version byte.
const VERSION: u8 = 5;
/// The method "no authentication required", and "no acceptable method".
const NO_AUTHENTICATION: u8 = 0;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;

/// Commands.
const CONNECT: u8 = 1;
const BIND: u8 = 2;
const UDP_ASSOCIATE: u8 = 3;

/// Address types.
const IPV4: u8 = 1;
const DOMAIN: u8 = 3;
const IPV6: u8 = 4;

/// Replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Reply {
    Succeeded = 0,
    GeneralFailure = 1,
    NotAllowed = 2,
    HostUnreachable = 4,
    ConnectionRefused = 5,
    CommandNotSupported = 7,
    AddressTypeNotSupported = 8,
}

/// What a client asks for after the greeting.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    command: u8,
    /// A name, or an address as text (IPv6 in brackets).
    host: String,
    port: u16,
}

/// Why a request could not be read.
#[derive(Debug)]
enum Unreadable {
    /// The stream failed or ended.
    Io,
    /// An address type the protocol does not have.
    AddressType,
    /// A name that is not UTF-8.
    Name,
}

/// Serves one client whose first byte was SOCKS version 5.
pub(super) fn serve(mut client: TcpStream, served: &Served) {
    if !greet(&mut client) {
        return;
    }
    let request = match read_request(&mut client) {
        Ok(request) => request,
        Err(Unreadable::Io) => return,
        Err(Unreadable::AddressType) => {
            reply(&mut client, Reply::AddressTypeNotSupported);
            return;
        }
        Err(Unreadable::Name) => {
            reply(&mut client, Reply::GeneralFailure);
            return;
        }
    };
    let Request {
        command,
        host,
        port,
    } = request;
    if command != CONNECT {
        let what = match command {
            UDP_ASSOCIATE => "UDP (SOCKS5 UDP ASSOCIATE)",
            BIND => "a listening socket (SOCKS5 BIND)",
            _ => "this SOCKS5 command",
        };
        served.report(&host, port, &Refusal::Unsupported(what));
        reply(&mut client, Reply::CommandNotSupported);
        return;
    }
    let addresses = match served.rules.decide(&host, port) {
        Ok(addresses) => addresses,
        Err(refusal) => {
            served.report(&host, port, &refusal);
            reply(&mut client, Reply::NotAllowed);
            return;
        }
    };
    let upstream = match super::rules::connect(&addresses) {
        Ok(upstream) => upstream,
        Err(error) => {
            let code = if error.kind() == io::ErrorKind::ConnectionRefused {
                Reply::ConnectionRefused
            } else {
                Reply::HostUnreachable
            };
            reply(&mut client, code);
            return;
        }
    };
    if write_reply(&mut client, Reply::Succeeded).is_err() {
        return;
    }
    tunnel::carry(client, upstream, &host, port, Vec::new(), served);
}

/// Reads the greeting and answers it: no authentication, or none
/// acceptable. Whether the client may go on.
fn greet(client: &mut TcpStream) -> bool {
    let mut head = [0u8; 2];
    if client.read_exact(&mut head).is_err() || head[0] != VERSION {
        return false;
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    if client.read_exact(&mut methods).is_err() {
        return false;
    }
    let method = if methods.contains(&NO_AUTHENTICATION) {
        NO_AUTHENTICATION
    } else {
        NO_ACCEPTABLE_METHOD
    };
    client.write_all(&[VERSION, method]).is_ok() && method == NO_AUTHENTICATION
}

/// Reads a request: version, command, a reserved byte, an address, a port.
fn read_request(stream: &mut impl Read) -> Result<Request, Unreadable> {
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).map_err(|_| Unreadable::Io)?;
    let [version, command, _reserved, kind] = head;
    if version != VERSION {
        return Err(Unreadable::Io);
    }
    let host = match kind {
        IPV4 => {
            let mut octets = [0u8; 4];
            stream.read_exact(&mut octets).map_err(|_| Unreadable::Io)?;
            Ipv4Addr::from(octets).to_string()
        }
        IPV6 => {
            let mut octets = [0u8; 16];
            stream.read_exact(&mut octets).map_err(|_| Unreadable::Io)?;
            format!("[{}]", Ipv6Addr::from(octets))
        }
        DOMAIN => {
            let mut length = [0u8; 1];
            stream.read_exact(&mut length).map_err(|_| Unreadable::Io)?;
            let mut name = vec![0u8; usize::from(length[0])];
            stream.read_exact(&mut name).map_err(|_| Unreadable::Io)?;
            String::from_utf8(name).map_err(|_| Unreadable::Name)?
        }
        _ => return Err(Unreadable::AddressType),
    };
    let mut port = [0u8; 2];
    stream.read_exact(&mut port).map_err(|_| Unreadable::Io)?;
    Ok(Request {
        command,
        host,
        port: u16::from_be_bytes(port),
    })
}

/// Writes a reply with `code` and no bound address (`0.0.0.0:0`).
fn write_reply(client: &mut TcpStream, code: Reply) -> io::Result<()> {
    client.write_all(&[VERSION, code as u8, 0, IPV4, 0, 0, 0, 0, 0, 0])
}

/// Writes a refusal with `code`, and closes.
fn reply(client: &mut TcpStream, code: Reply) {
    let _ = write_reply(client, code);
    let _ = client.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Request, Unreadable> {
        read_request(&mut &bytes[..])
    }

    #[test]
    fn a_request_reads_a_name_an_address_or_an_ipv6_address() {
        let name = read(b"\x05\x01\x00\x03\x0bexample.com\x01\xbb").expect("a request");
        assert_eq!(
            name,
            Request {
                command: CONNECT,
                host: "example.com".into(),
                port: 443
            }
        );
        let v4 = read(b"\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x35").expect("a request");
        assert_eq!(
            (v4.command, v4.host.as_str(), v4.port),
            (UDP_ASSOCIATE, "127.0.0.1", 53)
        );
        let mut v6 = b"\x05\x01\x00\x04".to_vec();
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0, 80]);
        assert_eq!(read(&v6).expect("a request").host, "[::1]");
    }

    #[test]
    fn a_cut_or_odd_request_is_unreadable() {
        assert!(matches!(
            read(b"\x05\x01\x00\x03\x0bexam"),
            Err(Unreadable::Io)
        ));
        assert!(matches!(
            read(b"\x05\x01\x00\x09\x00\x00"),
            Err(Unreadable::AddressType)
        ));
        assert!(matches!(
            read(b"\x05\x01\x00\x03\x02\xff\xfe\x00\x50"),
            Err(Unreadable::Name)
        ));
        assert!(matches!(read(b"\x04\x01\x00\x01"), Err(Unreadable::Io)));
    }
}
