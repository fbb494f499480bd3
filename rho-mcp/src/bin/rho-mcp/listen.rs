//! Where a command serves its clients: over stdio, or over streamable HTTP
//! with `--http` and its flags (the same for the sample and the proxy).

use std::net::SocketAddr;
use std::time::Duration;

use rho_mcp::HttpOptions;

/// The flags of serving over HTTP.
#[derive(Debug, clap::Args)]
pub(crate) struct HttpArgs {
    /// Serve over streamable HTTP, on ADDR [default: 127.0.0.1:0, loopback
    /// and a port the system picks]; an address off loopback needs --token.
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    pub(crate) http: Option<Option<SocketAddr>>,
    /// Require `Authorization: Bearer TOKEN` (over HTTP).
    #[arg(long, value_name = "TOKEN", requires = "http")]
    pub(crate) token: Option<String>,
    /// Accept this `Host` too (over HTTP).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub(crate) allow_hosts: Vec<String>,
    /// How long a call whose client closed its answer stream waits for the
    /// client to resume it, in milliseconds [default: 10000].
    #[arg(long, value_name = "MS", requires = "http")]
    pub(crate) resume_grace: Option<u64>,
}

/// What to serve over.
pub(crate) enum Transport {
    Stdio,
    Http(HttpOptions),
}

impl HttpArgs {
    pub(crate) fn transport(self) -> Transport {
        let Some(addr) = self.http else {
            return Transport::Stdio;
        };
        let mut options = HttpOptions::new();
        if let Some(addr) = addr {
            options = options.bind(addr);
        }
        if let Some(token) = self.token {
            options = options.with_bearer_token(token);
        }
        for host in self.allow_hosts {
            options = options.allow_host(host);
        }
        if let Some(ms) = self.resume_grace {
            options = options.with_resume_grace(Duration::from_millis(ms));
        }
        Transport::Http(options)
    }
}
