//! The hosts a confinement with [`Network::Hosts`](super::Network::Hosts)
//! may reach, by name: the rules ([`AllowedHost`]) and which addresses a
//! rule's name may lead to ([`is_public`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A host a confined process may reach through the confinement's proxy:
/// a name, every name under a domain, or an address, on any port or on
/// one.
///
/// Written as text, as in a policy file:
///
/// | text | allows |
/// |---|---|
/// | `crates.io` | `crates.io` on any port |
/// | `static.crates.io:443` | that name on port 443 only |
/// | `*.npmjs.org` | every name under `npmjs.org` (`registry.npmjs.org`, `a.b.npmjs.org`), not `npmjs.org` itself |
/// | `93.184.215.14`, `[2606:2800::1]:443` | that address (given as the address, never as a name that resolves to it) |
///
/// Names are matched without case and without a final dot. A name that
/// resolves to a loopback, private or link-local address is still
/// refused unless the confinement names that address
/// ([`Confinement::with_host_address`](super::Confinement::with_host_address)):
/// allowing `metadata.example` must not reach `169.254.169.254`.
///
/// ```
/// use rho::process::confine::AllowedHost;
///
/// let npm: AllowedHost = "*.npmjs.org:443".parse().unwrap();
/// assert!(npm.allows("registry.npmjs.org", 443));
/// assert!(!npm.allows("registry.npmjs.org", 80));
/// assert!(!npm.allows("npmjs.org", 443));
/// assert!(!npm.allows("evil-npmjs.org", 443));
/// assert!("*".parse::<AllowedHost>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowedHost {
    host: Pattern,
    port: Option<u16>,
}

/// What an [`AllowedHost`] matches before its port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Pattern {
    /// One name, lower case, no final dot.
    Name(String),
    /// Every name that ends with `.` and this domain.
    Under(String),
    /// One address, given as an address.
    Address(IpAddr),
}

/// Why a text is not an [`AllowedHost`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHostError {
    text: String,
    why: &'static str,
}

impl fmt::Display for AllowedHostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not an allowed host: {}", self.text, self.why)
    }
}

impl std::error::Error for AllowedHostError {}

impl AllowedHost {
    /// Whether it allows a connection to `host` (a name or an address as
    /// text) on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|allowed| allowed != port) {
            return false;
        }
        match &self.host {
            Pattern::Address(address) => parse_address(host) == Some(*address),
            Pattern::Name(name) => normal_name(host).is_some_and(|asked| asked == *name),
            Pattern::Under(domain) => normal_name(host).is_some_and(|asked| {
                asked
                    .strip_suffix(domain.as_str())
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }),
        }
    }

    /// The address it names, if it is one.
    pub fn address(&self) -> Option<IpAddr> {
        match self.host {
            Pattern::Address(address) => Some(address),
            _ => None,
        }
    }

    /// The one port it allows, if it names one.
    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

impl FromStr for AllowedHost {
    type Err = AllowedHostError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let refuse = |why| AllowedHostError {
            text: text.to_owned(),
            why,
        };
        let (host, port) =
            split_port(text).ok_or_else(|| refuse("its port is not a number from 1 to 65535"))?;
        let host = if let Some(domain) = host.strip_prefix("*.") {
            let domain = normal_name(domain)
                .ok_or_else(|| refuse("what follows `*.` is not a host name"))?;
            if !domain.contains('.') {
                return Err(refuse(
                    "`*.` must be followed by a domain with a dot, such as `*.example.com`",
                ));
            }
            Pattern::Under(domain)
        } else if let Some(address) = parse_address(host) {
            Pattern::Address(address)
        } else if host.contains('*') {
            return Err(refuse(
                "`*` is only allowed as a whole first label, as in `*.example.com`",
            ));
        } else {
            Pattern::Name(normal_name(host).ok_or_else(|| refuse("it is not a host name"))?)
        };
        Ok(Self { host, port })
    }
}

impl TryFrom<&str> for AllowedHost {
    type Error = AllowedHostError;

    fn try_from(text: &str) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Pattern::Name(name) => f.write_str(name)?,
            Pattern::Under(domain) => write!(f, "*.{domain}")?,
            Pattern::Address(IpAddr::V6(address)) if self.port.is_some() => {
                write!(f, "[{address}]")?;
            }
            Pattern::Address(address) => write!(f, "{address}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl Serialize for AllowedHost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AllowedHost {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `host` and its port, if it has one. `None` for a port that is not a
/// number from 1 to 65535. A bare IPv6 address has no port; one with a
/// port is written in brackets.
fn split_port(text: &str) -> Option<(&str, Option<u16>)> {
    let port = |digits: &str| digits.parse::<u16>().ok().filter(|port| *port != 0);
    if let Some(rest) = text.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(digits) => Some((address, Some(port(digits)?))),
            None if after.is_empty() => Some((address, None)),
            None => None,
        };
    }
    match text.rsplit_once(':') {
        // More than one colon and no brackets: an IPv6 address alone.
        Some((head, _)) if head.contains(':') => Some((text, None)),
        Some((host, digits)) => Some((host, Some(port(digits)?))),
        None => Some((text, None)),
    }
}

/// An address written as one: IPv4 dotted, or IPv6 with or without
/// brackets.
pub(crate) fn parse_address(text: &str) -> Option<IpAddr> {
    let bare = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse().ok()
}

/// A host name as matched: lower case, without a final dot; `None` when
/// it is not one (empty labels, a label over 63 bytes, a character other
/// than a letter, a digit, `-` or `_`, a name over 253 bytes, or an
/// address).
pub(crate) fn normal_name(text: &str) -> Option<String> {
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return None;
    }
    if parse_address(&name).is_some() {
        return None;
    }
    Some(name)
}

/// Whether `address` is one a name may lead to without the confinement
/// naming it: not loopback, private, link-local, unique local, shared
/// (carrier-grade NAT), unspecified, broadcast, multicast or reserved,
/// nor an IPv6 form of one of those IPv4 addresses.
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            is_public_v6(v6)
        }
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, ..] = address.octets();
    let shared = a == 100 && (64..128).contains(&b);
    let benchmarking = a == 198 && (18..20).contains(&b);
    let reserved = a >= 240 || a == 0;
    let protocol_assignments = a == 192 && b == 0 && address.octets()[2] == 0;
    !(address.is_loopback()
        || address.is_private()
        || address.is_link_local()
        || address.is_broadcast()
        || address.is_multicast()
        || address.is_unspecified()
        || shared
        || benchmarking
        || reserved
        || protocol_assignments)
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    let first = address.segments()[0];
    let unique_local = first & 0xfe00 == 0xfc00;
    let link_local = first & 0xffc0 == 0xfe80;
    let site_local = first & 0xffc0 == 0xfec0;
    // Forms that carry an IPv4 address judge that one: NAT64
    // (64:ff9b::/96), SIIT (::ffff:0:a.b.c.d), the old IPv4-compatible
    // form (::a.b.c.d), and 6to4 (2002:ab:cd::/16). The local-use NAT64
    // prefix (64:ff9b:1::/48) leads inside a network: never public.
    let segments = address.segments();
    if segments[..3] == [0x64, 0xff9b, 1] {
        return false;
    }
    let low_v4 = |[high, low]: [u16; 2]| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    let embedded = if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
        || segments[..6] == [0, 0, 0, 0, 0xffff, 0]
        || segments[..6] == [0; 6]
    {
        Some(low_v4([segments[6], segments[7]]))
    } else if segments[0] == 0x2002 {
        Some(low_v4([segments[1], segments[2]]))
    } else {
        None
    };
    if let Some(v4) = embedded.filter(|_| !address.is_loopback() && !address.is_unspecified()) {
        return is_public_v4(v4);
    }
    !(address.is_loopback()
        || address.is_unspecified()
        || address.is_multicast()
        || unique_local
        || link_local
        || site_local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> AllowedHost {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_name_matches_itself_without_case_or_final_dot_on_any_port_unless_one_is_named() {
        let crates = host("Crates.IO");
        assert!(crates.allows("crates.io", 443));
        assert!(crates.allows("CRATES.io.", 80));
        assert!(!crates.allows("static.crates.io", 443));
        assert!(!crates.allows("crates.io.evil.com", 443));
        let one_port = host("crates.io:443");
        assert!(one_port.allows("crates.io", 443));
        assert!(!one_port.allows("crates.io", 8443));
        assert_eq!(one_port.to_string(), "crates.io:443");
    }

    #[test]
    fn a_domain_pattern_matches_the_names_under_it_and_not_the_domain() {
        let npm = host("*.npmjs.org");
        assert!(npm.allows("registry.npmjs.org", 443));
        assert!(npm.allows("a.b.npmjs.org", 443));
        assert!(!npm.allows("npmjs.org", 443));
        assert!(!npm.allows("evilnpmjs.org", 443));
        assert!(!npm.allows(".npmjs.org", 443));
        assert_eq!(npm.to_string(), "*.npmjs.org");
    }

    #[test]
    fn an_address_matches_only_that_address_written_as_one() {
        let v4 = host("93.184.215.14:443");
        assert!(v4.allows("93.184.215.14", 443));
        assert!(!v4.allows("93.184.215.15", 443));
        let v6 = host("[2606:2800::1]:443");
        assert!(v6.allows("[2606:2800::1]", 443));
        assert!(v6.allows("2606:2800:0::1", 443));
        assert_eq!(v6.to_string(), "[2606:2800::1]:443");
        let bare = host("2606:2800::1");
        assert_eq!(bare.port(), None);
        assert_eq!(bare.address(), "2606:2800::1".parse().ok());
    }

    #[test]
    fn what_is_not_a_host_is_refused_saying_why() {
        for bad in [
            "*",
            "*.com",
            "a*.b.com",
            "crates.io:0",
            "crates.io:99999",
            "crates.io:x",
            "",
            "bad host",
            "a..b",
            "[::1",
            "[::1]x",
            "-.é.com",
        ] {
            let refused = bad.parse::<AllowedHost>();
            assert!(refused.is_err(), "{bad:?} was taken: {refused:?}");
        }
        let error = "*".parse::<AllowedHost>().expect_err("refused");
        assert!(
            error
                .to_string()
                .starts_with("`*` is not an allowed host: "),
            "{error}"
        );
    }

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
            "ff02::1",
            "192.0.0.8",
        ] {
            let address: IpAddr = private.parse().expect("an address");
            assert!(!is_public(address), "{private} was taken for public");
        }
        for public in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let address: IpAddr = public.parse().expect("an address");
            assert!(is_public(address), "{public} was taken for private");
        }
    }

    #[test]
    fn a_rule_reads_and_writes_as_its_text() {
        let rules: Vec<AllowedHost> =
            serde_json::from_str(r#"["crates.io", "*.npmjs.org:443", "[::1]:8080"]"#)
                .expect("rules");
        let text = serde_json::to_string(&rules).expect("text");
        assert_eq!(text, r#"["crates.io","*.npmjs.org:443","[::1]:8080"]"#);
        let refused = serde_json::from_str::<Vec<AllowedHost>>(r#"["*"]"#);
        assert!(refused.is_err());
    }
}
