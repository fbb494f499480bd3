//! The proxy's SOCKS5 side (RFC 1928): no authentication, `CONNECT` to a
//! name (resolved by the proxy, as `socks5h://` asks) or to an address;
//! nothing else (no UDP, no listening). The messages are read and
//! written by `socks5-impl`.

use std::net::{SocketAddr, TcpStream};

use socks5_impl::protocol::{AuthMethod, Command, Reply, Request, Response, handshake};
use socks5_impl::{Address, StreamOperation};

use super::rules::Refusal;
use super::{Served, tunnel};

/// Serves one client whose first byte was SOCKS version 5.
pub(super) fn serve(mut client: TcpStream, served: &Served) {
    let Ok(greeting) = handshake::Request::retrieve_from_stream(&mut client) else {
        return;
    };
    if !greeting.evaluate_method(AuthMethod::NoAuth) {
        let _ =
            handshake::Response::new(AuthMethod::NoAcceptableMethods).write_to_stream(&mut client);
        return;
    }
    if handshake::Response::new(AuthMethod::NoAuth)
        .write_to_stream(&mut client)
        .is_err()
    {
        return;
    }
    let request = match Request::retrieve_from_stream(&mut client) {
        Ok(request) => request,
        // An unknown command or address type.
        Err(_) => {
            reply(&mut client, Reply::CommandNotSupported);
            return;
        }
    };
    let (host, port) = match &request.address {
        Address::DomainAddress(name, port) => (name.to_string(), *port),
        Address::SocketAddress(SocketAddr::V4(address)) => {
            (address.ip().to_string(), address.port())
        }
        Address::SocketAddress(SocketAddr::V6(address)) => {
            (format!("[{}]", address.ip()), address.port())
        }
    };
    if request.command != Command::Connect {
        let what = match request.command {
            Command::UdpAssociate => "UDP (SOCKS5 UDP ASSOCIATE)",
            _ => "a listening socket (SOCKS5 BIND)",
        };
        served.report(&host, port, &Refusal::Unsupported(what));
        reply(&mut client, Reply::CommandNotSupported);
        return;
    }
    let addresses = match served.rules.decide(&host, port) {
        Ok(addresses) => addresses,
        Err(refusal) => {
            served.report(&host, port, &refusal);
            reply(&mut client, Reply::ConnectionNotAllowed);
            return;
        }
    };
    let upstream = match super::rules::connect(&addresses) {
        Ok(upstream) => upstream,
        Err(error) => {
            let code = if error.kind() == std::io::ErrorKind::ConnectionRefused {
                Reply::ConnectionRefused
            } else {
                Reply::HostUnreachable
            };
            reply(&mut client, code);
            return;
        }
    };
    if Response::new(Reply::Succeeded, Address::unspecified_v4())
        .write_to_stream(&mut client)
        .is_err()
    {
        return;
    }
    tunnel::carry(client, upstream, &host, port, Vec::new(), served);
}

/// Writes a reply with `code` and no bound address, and closes.
fn reply(client: &mut TcpStream, code: Reply) {
    let _ = Response::new(code, Address::unspecified_v4()).write_to_stream(client);
    let _ = client.shutdown(std::net::Shutdown::Both);
}
