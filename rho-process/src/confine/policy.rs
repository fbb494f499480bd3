//! [`Confinement`]: what a confined process may do, as data.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::hosts::AllowedHost;

/// What a confined process may reach of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// No network at all: a network namespace whose only interface, its
    /// loopback, is down. A connect fails with "Network is unreachable",
    /// a name lookup fails.
    #[default]
    None,
    /// A loopback of its own, up: the process and its children may talk
    /// to each other over `127.0.0.1` and `::1`. The host's loopback (and
    /// every server listening on it) is another namespace's and is not
    /// reachable.
    Loopback,
    /// A loopback of its own, and the hosts the confinement allows by
    /// name ([`Confinement::with_allowed_host`]) and nothing else.
    ///
    /// The process's network namespace still has no route out. A proxy
    /// outside it (HTTP with `CONNECT`, and SOCKS5 with names resolved by
    /// the proxy) listens on the namespace's own loopback and is offered
    /// in the variables tools honour (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, `NO_PROXY`, in both cases). It checks the name asked
    /// for against the allowed hosts, resolves it itself, and refuses a
    /// loopback, private or link-local address unless the confinement
    /// names it ([`Confinement::with_host_address`]). There is no DNS in
    /// the namespace, and a connection to an address fails. Each refusal
    /// is told to the client (a `403` naming the host, a SOCKS5 "not
    /// allowed") and named in the call's result. The proxy ends with the
    /// call, and every connection through it.
    ///
    /// What it holds to: every connection goes to an address an allowed
    /// name resolves to (or an allowed address). A tunnel opened for a
    /// name whose first bytes name another host (a TLS server name, an
    /// HTTP `Host`), or carry TLS without a server name, is cut; past the
    /// first bytes, and inside TLS, the proxy sees nothing, so another
    /// site served from the same addresses (a shared CDN's) can still be
    /// asked for there.
    Hosts,
    /// The host's network, unrestricted.
    Full,
}

impl Network {
    /// The word for it in texts: "none", "loopback" or "full".
    pub fn as_str(self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Loopback => "loopback",
            Network::Hosts => "hosts",
            Network::Full => "full",
        }
    }
}

/// What a confined process sees of the file system outside the paths it
/// is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rest {
    /// Nothing: the process runs in a new root made of the paths it was
    /// given, a fresh `/proc`, a minimal `/dev` and its scratch `/tmp`.
    #[default]
    Hidden,
    /// The host's whole tree, read-only (its `/tmp`, `/run` and
    /// `/dev/shm` replaced by empty ones, so the host's sockets and
    /// temporary files stay out of reach); writes only where allowed.
    ReadOnly,
}

/// Whether what the kernel cannot enforce refuses the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Everything the confinement says is enforced, or the process is not
    /// started and the call fails saying what this kernel cannot do.
    #[default]
    Required,
    /// What the kernel can enforce is; the call's result ends with a line
    /// naming what was not.
    BestEffort,
}

/// Resource limits of a confined process, each enforced by the kernel
/// (`setrlimit`, with the hard limit equal to the soft one so the process
/// cannot raise it). `None` leaves a limit as the host has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Bytes of memory each process may allocate (`RLIMIT_DATA`: its heap
    /// and private mappings, not the address space it merely reserves, so
    /// runtimes such as V8 still start). Default: 2 GiB.
    pub memory: Option<u64>,
    /// CPU time each process may use. `SIGXCPU` at the limit, `SIGKILL`
    /// a second later. Default: none (the call's timeout bounds wall time).
    #[serde(with = "seconds", skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Duration>,
    /// Processes (and threads) that may exist in the confinement at once.
    /// Default: 512.
    pub processes: Option<u64>,
    /// Files each process may have open. Default: 1024.
    pub open_files: Option<u64>,
    /// The largest file a process may write, in bytes. Default: 1 GiB.
    pub file_size: Option<u64>,
    /// Bytes a call may write in total to its writable paths (the
    /// workspace and the `write` paths), a file it changes counting whole.
    /// Default: none.
    ///
    /// Set (or [`files`](Limits::files) set), each writable path is an
    /// overlay whose changes the kernel keeps in a tmpfs of this size: a
    /// write past it fails with "No space left on device". The changes
    /// are written back to the host's paths when the command ends by
    /// itself (each file replaced by a rename); a call killed at its
    /// deadline before then leaves them as they were. The tmpfs is memory:
    /// the bound is also what the call's writes may hold of it.
    pub written: Option<u64>,
    /// Files, directories and links a call may create or change in its
    /// writable paths (a changed file's folders count too), and in its
    /// scratch `/tmp`. Default: none. Enforced as
    /// [`written`](Limits::written) is, by the tmpfs's count of inodes;
    /// without `written`, the changes may hold as many bytes as the
    /// scratch size.
    pub files: Option<u64>,
}

impl Limits {
    /// No limits beyond the host's own.
    pub const NONE: Limits = Limits {
        memory: None,
        cpu: None,
        processes: None,
        open_files: None,
        file_size: None,
        written: None,
        files: None,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: Some(2 << 30),
            cpu: None,
            processes: Some(512),
            open_files: Some(1024),
            file_size: Some(1 << 30),
            written: None,
            files: None,
        }
    }
}

/// `Option<Duration>` as fractional seconds.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => s.serialize_f64(duration.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let seconds = Option::<f64>::deserialize(d)?;
        seconds
            .map(|s| Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// What a process rho starts may do: the paths it may read and write,
/// the network it may reach, the environment it gets and its resource
/// limits. Enforced by the kernel (see the [module docs](super)).
///
/// [`Confinement::new`] is the sensible default: the system's program
/// and library directories read-only, a fresh scratch `/tmp` per call
/// writable, everything else hidden, no network, secret-looking
/// environment variables dropped, [`Limits::default`].
/// [`with_workspace`](Confinement::with_workspace) adds the host's
/// workspace, writable, as the working directory.
///
/// ```
/// use rho::process::confine::{Confinement, Network};
///
/// let confinement = Confinement::new()
///     .with_workspace("/home/me/project")
///     .with_read("/opt/toolchain")
///     .with_network(Network::Loopback)
///     .with_env_pass("RUST_LOG");
/// assert!(confinement.write_paths().iter().any(|p| p.ends_with("project")));
/// ```
///
/// A confinement is also data: it reads from and writes to any serde
/// format (the proxy's policy file has it as a TOML section), with
/// unknown fields refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Confinement {
    /// Paths the process may read (and run programs from), beside the
    /// system directories unless `system` is off.
    read: Vec<PathBuf>,
    /// Paths the process may read and write.
    write: Vec<PathBuf>,
    /// The working directory, and a writable path: the host's workspace.
    workspace: Option<PathBuf>,
    /// Whether the system's program and library directories are readable.
    system: bool,
    /// What is seen of everything else.
    rest: Rest,
    /// The network.
    network: Network,
    /// The hosts reachable by name under [`Network::Hosts`].
    hosts: Vec<AllowedHost>,
    /// Names the proxy resolves to these addresses instead of asking the
    /// name service; such an address is reachable even when it is not
    /// public.
    addresses: BTreeMap<String, IpAddr>,
    /// Size of the scratch `/tmp`, in bytes (memory-backed, gone with the
    /// call).
    scratch_size: u64,
    /// Environment variable names that pass even when they look like
    /// secrets.
    env_pass: Vec<String>,
    /// Resource limits.
    limits: Limits,
    /// Whether what cannot be enforced refuses the call.
    enforcement: Enforcement,
}

impl Default for Confinement {
    fn default() -> Self {
        Self::new()
    }
}

impl Confinement {
    /// The system's program and library directories, and the files of
    /// `/etc` programs read to start (the dynamic linker's cache,
    /// alternatives, time zone, TLS roots, name service configuration):
    /// readable under [`Confinement::new`]. Paths missing on a host are
    /// skipped.
    pub const SYSTEM_PATHS: &'static [&'static str] = &[
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/etc/alternatives",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/localtime",
        "/etc/ssl",
        "/etc/ca-certificates",
        "/etc/nsswitch.conf",
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/passwd",
        "/etc/group",
    ];

    /// The default scratch size: 256 MiB.
    pub const DEFAULT_SCRATCH_SIZE: u64 = 256 << 20;

    /// The sensible default; see the type's docs.
    pub fn new() -> Self {
        Self {
            read: Vec::new(),
            write: Vec::new(),
            workspace: None,
            system: true,
            rest: Rest::Hidden,
            network: Network::None,
            hosts: Vec::new(),
            addresses: BTreeMap::new(),
            scratch_size: Self::DEFAULT_SCRATCH_SIZE,
            env_pass: Vec::new(),
            limits: Limits::default(),
            enforcement: Enforcement::Required,
        }
    }

    /// The host's workspace: writable, and the process's working
    /// directory (unless its tool sets another inside the confinement).
    #[must_use]
    pub fn with_workspace(mut self, path: impl AsRef<Path>) -> Self {
        self.workspace = Some(path.as_ref().to_path_buf());
        self
    }

    /// Adds a path the process may read and run programs from.
    #[must_use]
    pub fn with_read(mut self, path: impl AsRef<Path>) -> Self {
        self.read.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds a path the process may read and write.
    #[must_use]
    pub fn with_write(mut self, path: impl AsRef<Path>) -> Self {
        self.write.push(path.as_ref().to_path_buf());
        self
    }

    /// Whether [`SYSTEM_PATHS`](Self::SYSTEM_PATHS) are readable. Default:
    /// yes. Off, the process sees only what it is given (a static binary
    /// needs nothing else).
    #[must_use]
    pub fn with_system_paths(mut self, readable: bool) -> Self {
        self.system = readable;
        self
    }

    /// What is seen of the rest of the file system. Default:
    /// [`Rest::Hidden`].
    #[must_use]
    pub fn with_rest(mut self, rest: Rest) -> Self {
        self.rest = rest;
        self
    }

    /// The network. Default: [`Network::None`].
    #[must_use]
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Allows connections to `host` (see [`AllowedHost`]) through the
    /// confinement's proxy, and makes the network [`Network::Hosts`] if
    /// it was less ([`Network::Full`] stays full).
    ///
    /// ```
    /// use rho::process::confine::{Confinement, Network};
    ///
    /// let confinement = Confinement::new()
    ///     .with_allowed_host("crates.io".parse().unwrap())
    ///     .with_allowed_host("*.crates.io:443".parse().unwrap());
    /// assert_eq!(confinement.network(), Network::Hosts);
    /// assert_eq!(confinement.allowed_hosts().len(), 2);
    /// ```
    #[must_use]
    pub fn with_allowed_host(mut self, host: AllowedHost) -> Self {
        if !self.hosts.contains(&host) {
            self.hosts.push(host);
        }
        self.network = self.network.max_with(Network::Hosts);
        self
    }

    /// Has the proxy resolve `name` to `address` instead of asking the
    /// name service (as `curl --resolve` does), and lets it reach that
    /// address even if it is loopback or private: naming it is allowing
    /// it. The name must still be allowed ([`with_allowed_host`](Self::with_allowed_host)).
    /// For a registry mirror on the local network, or a test's server.
    #[must_use]
    pub fn with_host_address(mut self, name: impl Into<String>, address: IpAddr) -> Self {
        let name = name.into();
        let name = super::hosts::normal_name(&name).unwrap_or(name);
        self.addresses.insert(name, address);
        self
    }

    /// The size of the scratch `/tmp`. Default:
    /// [`DEFAULT_SCRATCH_SIZE`](Self::DEFAULT_SCRATCH_SIZE).
    #[must_use]
    pub fn with_scratch_size(mut self, bytes: u64) -> Self {
        self.scratch_size = bytes;
        self
    }

    /// Lets the environment variable `name` pass even though its name
    /// looks like a secret (see [`looks_secret`](super::looks_secret)).
    #[must_use]
    pub fn with_env_pass(mut self, name: impl Into<String>) -> Self {
        self.env_pass.push(name.into());
        self
    }

    /// The resource limits. Default: [`Limits::default`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// What the kernel cannot enforce is reported in the call's result
    /// instead of refusing the call.
    #[must_use]
    pub fn best_effort(mut self) -> Self {
        self.enforcement = Enforcement::BestEffort;
        self
    }

    /// Whether what cannot be enforced refuses the call.
    #[must_use]
    pub fn with_enforcement(mut self, enforcement: Enforcement) -> Self {
        self.enforcement = enforcement;
        self
    }

    /// The paths readable beside the system directories.
    pub fn read_paths(&self) -> &[PathBuf] {
        &self.read
    }

    /// Every writable path: the workspace first, then those added.
    pub fn write_paths(&self) -> Vec<PathBuf> {
        self.workspace.iter().chain(&self.write).cloned().collect()
    }

    /// The workspace, if one was named.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Whether the system directories are readable.
    pub fn system_paths(&self) -> bool {
        self.system
    }

    /// What is seen of the rest of the file system.
    pub fn rest(&self) -> Rest {
        self.rest
    }

    /// The network: at least [`Network::Hosts`] when hosts are allowed
    /// (as a file that lists `hosts` and no `network` means).
    pub fn network(&self) -> Network {
        if self.hosts.is_empty() {
            self.network
        } else {
            self.network.max_with(Network::Hosts)
        }
    }

    /// The hosts reachable by name under [`Network::Hosts`].
    pub fn allowed_hosts(&self) -> &[AllowedHost] {
        &self.hosts
    }

    /// The names the proxy resolves to a given address
    /// ([`with_host_address`](Self::with_host_address)).
    pub fn host_addresses(&self) -> &BTreeMap<String, IpAddr> {
        &self.addresses
    }

    /// The size of the scratch `/tmp`, in bytes.
    pub fn scratch_size(&self) -> u64 {
        self.scratch_size
    }

    /// The names that pass though they look like secrets.
    pub fn env_pass(&self) -> &[String] {
        &self.env_pass
    }

    /// The resource limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether what cannot be enforced refuses the call.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// A copy with more access: `grant`'s paths and network added (the
    /// wider network of the two). What a retry approved through the gate
    /// runs with.
    #[must_use]
    pub fn widened(&self, grant: &super::Grant) -> Self {
        let mut wider = self.clone();
        wider.read.extend(grant.read.iter().cloned());
        wider.write.extend(grant.write.iter().cloned());
        if let Some(network) = grant.network {
            wider.network = wider.network.max_with(network);
        }
        for host in &grant.hosts {
            wider = wider.with_allowed_host(host.clone());
        }
        wider
    }

    /// One line a model reads: what the process was allowed.
    pub fn summary(&self) -> String {
        let writable: Vec<String> = self
            .write_paths()
            .iter()
            .map(|p| p.display().to_string())
            .chain(std::iter::once("/tmp (scratch)".to_owned()))
            .collect();
        let mut readable: Vec<String> = self.read.iter().map(|p| p.display().to_string()).collect();
        if self.system {
            readable.insert(0, "the system directories".to_owned());
        }
        let rest = match self.rest {
            Rest::Hidden => "nothing else exists",
            Rest::ReadOnly => "everything else read-only",
        };
        let network = if self.network() == Network::Hosts {
            let hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
            if hosts.is_empty() {
                "hosts (none allowed)".to_owned()
            } else {
                format!("hosts {}", hosts.join(", "))
            }
        } else {
            self.network().as_str().to_owned()
        };
        format!(
            "confined: writable {}; readable {}; {rest}; network {}",
            writable.join(", "),
            if readable.is_empty() {
                "nothing more".to_owned()
            } else {
                readable.join(", ")
            },
            network,
        )
    }
}

impl Network {
    /// The wider of two.
    fn max_with(self, other: Network) -> Network {
        let rank = |n: Network| match n {
            Network::None => 0,
            Network::Loopback => 1,
            Network::Hosts => 2,
            Network::Full => 3,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}
