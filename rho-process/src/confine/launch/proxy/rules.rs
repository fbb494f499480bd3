//! Which destinations the proxy connects to: the confinement's allowed
//! hosts, the addresses it names, and the name service for the rest,
//! with every address a name leads to judged before it is used.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::confine::Confinement;
use crate::confine::hosts::{AllowedHost, is_public, normal_name, parse_address};

/// How long the proxy tries one address of a destination.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The allowed hosts and named addresses of one confinement.
#[derive(Debug, Clone)]
pub(super) struct Rules {
    hosts: Vec<AllowedHost>,
    addresses: BTreeMap<String, IpAddr>,
}

/// Why a destination is refused, in words for the client, the command's
/// stderr and the call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// No allowed host matches it.
    NotAllowed,
    /// The name is allowed but leads only to addresses that are not
    /// public and that the confinement does not name.
    NotPublic(IpAddr),
    /// The name could not be resolved.
    Unresolved(String),
    /// What was asked is not a host name or an address.
    NotAHost,
    /// The request named one host and its traffic another.
    Mismatch(String),
    /// Something else the proxy does not carry (UDP, a listening socket).
    Unsupported(&'static str),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAllowed => f.write_str("it is not one of the confinement's allowed hosts"),
            Refusal::NotPublic(address) => write!(
                f,
                "it resolves to {address}, a loopback, private or link-local address the confinement does not name"
            ),
            Refusal::Unresolved(error) => write!(f, "its name could not be resolved: {error}"),
            Refusal::NotAHost => f.write_str("it is not a host name or an address"),
            Refusal::Mismatch(other) => write!(
                f,
                "the connection was asked for it but its traffic names {other}"
            ),
            Refusal::Unsupported(what) => write!(f, "the proxy does not carry {what}"),
        }
    }
}

impl Refusal {
    /// What the person or model can do about it, if anything.
    pub(super) fn remedy(&self, host: &str) -> Option<String> {
        match self {
            Refusal::NotAllowed => Some(format!(
                "to allow it, add `{host}` to the allowed hosts (the confinement's, a call's grant, or rho-sandbox --allow-host)"
            )),
            Refusal::NotPublic(address) => Some(format!(
                "name its address for it (`with_host_address(\"{host}\", {address})`) to allow it"
            )),
            _ => None,
        }
    }
}

impl Rules {
    pub(super) fn of(confinement: &Confinement) -> Self {
        Self {
            hosts: confinement.allowed_hosts().to_vec(),
            addresses: confinement.host_addresses().clone(),
        }
    }

    /// The addresses to connect to for `host` on `port`, or why not.
    pub(super) fn decide(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        let allowed = self.hosts.iter().any(|rule| rule.allows(host, port));
        if let Some(address) = parse_address(host) {
            // An address is reached only when a rule names it: naming
            // is allowing, public or not.
            return if allowed {
                Ok(vec![SocketAddr::new(address, port)])
            } else {
                Err(Refusal::NotAllowed)
            };
        }
        let name = normal_name(host).ok_or(Refusal::NotAHost)?;
        if !allowed {
            return Err(Refusal::NotAllowed);
        }
        if let Some(address) = self.addresses.get(&name) {
            return Ok(vec![SocketAddr::new(*address, port)]);
        }
        let found = resolve(&name, port)?;
        // Only the name's own entry in `addresses` (above) may lead to an
        // address that is not public: another name whose answer a DNS
        // server controls must not reach it.
        let public: Vec<SocketAddr> = found
            .iter()
            .copied()
            .filter(|address| is_public(address.ip()))
            .collect();
        match (public.is_empty(), found.first()) {
            (false, _) => Ok(public),
            (true, Some(first)) => Err(Refusal::NotPublic(first.ip())),
            (true, None) => Err(Refusal::Unresolved("no address".to_owned())),
        }
    }
}

/// The addresses of `name`, asked as the absolute name first (so the name
/// service's search domains do not make it another name), then as given
/// (the hosts file knows `localhost`, not `localhost.`).
fn resolve(name: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let absolute = format!("{name}.");
    let found = (absolute.as_str(), port)
        .to_socket_addrs()
        .or_else(|_| (name, port).to_socket_addrs())
        .map_err(|error| Refusal::Unresolved(error.to_string()))?;
    Ok(found.collect())
}

/// A connection to the first of `addresses` that answers.
pub(super) fn connect(addresses: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = None;
    for address in addresses {
        match TcpStream::connect_timeout(address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address to connect to")))
}

/// Whether two ways of writing a host are the same host: names without
/// case or final dot, addresses by value.
pub(super) fn same_host(one: &str, other: &str) -> bool {
    match (parse_address(one), parse_address(other)) {
        (Some(a), Some(b)) => a == b,
        (None, None) => normal_name(one).is_some_and(|a| normal_name(other) == Some(a)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(hosts: &[&str]) -> Rules {
        let mut confinement = Confinement::new();
        for host in hosts {
            confinement = confinement.with_allowed_host(host.parse().expect("a host"));
        }
        Rules::of(&confinement)
    }

    #[test]
    fn a_name_not_on_the_list_is_refused_before_any_lookup() {
        let rules = rules(&["registry.test"]);
        assert_eq!(rules.decide("evil.test", 443), Err(Refusal::NotAllowed));
        assert_eq!(rules.decide("bad name", 443), Err(Refusal::NotAHost));
    }

    #[test]
    fn an_allowed_name_leading_to_a_private_address_is_refused_unless_named() {
        // `localhost` resolves to a loopback address on every host.
        let refused = rules(&["localhost"]).decide("localhost", 80);
        assert!(
            matches!(refused, Err(Refusal::NotPublic(address)) if address.is_loopback()),
            "{refused:?}"
        );
        let confinement = Confinement::new()
            .with_allowed_host("registry.test".parse().expect("a host"))
            .with_host_address("Registry.Test.", IpAddr::from([127, 0, 0, 1]));
        let named = Rules::of(&confinement);
        assert_eq!(
            named.decide("registry.test", 8080),
            Ok(vec![SocketAddr::from(([127, 0, 0, 1], 8080))])
        );
    }

    #[test]
    fn an_address_is_reached_only_when_a_rule_names_it() {
        let rules = rules(&["registry.test", "[::1]:8080"]);
        assert_eq!(rules.decide("127.0.0.1", 80), Err(Refusal::NotAllowed));
        assert_eq!(rules.decide("[::1]", 8081), Err(Refusal::NotAllowed));
        assert_eq!(
            rules.decide("[::1]", 8080),
            Ok(vec![SocketAddr::from((
                std::net::Ipv6Addr::LOCALHOST,
                8080
            ))])
        );
    }

    #[test]
    fn hosts_are_the_same_without_case_final_dot_or_address_spelling() {
        assert!(same_host("Example.COM.", "example.com"));
        assert!(same_host("[::1]", "0:0::1"));
        assert!(!same_host("example.com", "example.org"));
        assert!(!same_host("127.0.0.1", "localhost"));
    }
}
