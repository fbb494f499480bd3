//! `rho-sandbox`: runs any command confined by the kernel, the way rho
//! confines the commands of an agent's tools.
//!
//! ```text
//! rho-sandbox --workspace . --allow-host pypi.org --allow-host files.pythonhosted.org \
//!     -- pip install --target vendor requests
//! ```
//!
//! The command sees the system's programs and libraries read-only, the
//! paths it is given, a scratch `/tmp`, and nothing else; it reaches the
//! hosts it is allowed by name through a proxy outside the box, or no
//! network at all; it gets the caller's environment without the variables
//! whose names look like secrets; it inherits no descriptor but stdin,
//! stdout and stderr; what it may write in total can be bounded
//! (`--max-written`, `--max-files`); and everything it starts ends when
//! it does. Each
//! connection the proxy refuses is printed on stderr as it happens
//! (`rho-confine: refused host ...`). `rho-sandbox` exits with the
//! command's status (killed by a signal, it kills itself with the same
//! one); 125 when the confinement cannot be set up, 127 when the command
//! cannot be started inside it, 2 for a usage error.
//!
//! It is its own launcher: it becomes the confinement's outer process
//! (`exec`), so killing it kills the box and everything in it. In front
//! of an MCP server, in a client's configuration:
//!
//! ```json
//! { "command": "rho-sandbox",
//!   "args": ["--read", "/home/me/notes", "--allow-host", "api.github.com",
//!            "--env", "GITHUB_TOKEN", "--", "npx", "-y", "some-mcp-server"] }
//! ```
//!
//! Linux only: elsewhere it refuses to run anything.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rho_process::confine::{
    AllowedHost, Confinement, Launcher, Limits, Network, Rest, inherited_env, serve_if_launcher,
};

/// Runs a command confined by the kernel: what it may read and write,
/// which hosts it may reach by name, its limits.
#[derive(Debug, Parser)]
#[command(name = "rho-sandbox", version, after_help = AFTER_HELP)]
struct Args {
    /// A confinement in TOML (the fields of rho's `Confinement`, as in
    /// `rho-mcp proxy`'s `[confinement]` table); the flags add to it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// A directory the command may read and write, and its working
    /// directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,

    /// A path the command may read and write (repeatable).
    #[arg(long = "write", value_name = "PATH")]
    writes: Vec<PathBuf>,

    /// A path the command may read and run programs from (repeatable).
    #[arg(long = "read", value_name = "PATH")]
    reads: Vec<PathBuf>,

    /// The host's whole tree read-only instead of hidden (its /tmp, /run
    /// and /dev/shm replaced by empty ones).
    #[arg(long)]
    read_only_rest: bool,

    /// A host the command may reach by name, through the proxy: `name`,
    /// `name:port`, `*.domain` or an address (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    hosts: Vec<AllowedHost>,

    /// Resolve NAME to ADDRESS in the proxy instead of asking the name
    /// service, and allow that address though it is private or loopback.
    #[arg(long = "host-address", value_name = "NAME=ADDRESS", value_parser = name_and_address)]
    addresses: Vec<(String, IpAddr)>,

    /// No network at all (the default without --allow-host).
    #[arg(long, conflicts_with_all = ["hosts", "network"])]
    no_network: bool,

    /// The network: `none`, `loopback` (one of its own), `hosts` (only
    /// --allow-host) or `full` (the host's, unrestricted).
    #[arg(long, value_name = "NETWORK", value_parser = network)]
    network: Option<Network>,

    /// Let this environment variable through though its name looks like a
    /// secret (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    env_pass: Vec<String>,

    /// Memory each process may allocate, in bytes (`512M`, `2G`).
    #[arg(long, value_name = "BYTES", value_parser = bytes)]
    memory: Option<u64>,

    /// CPU seconds each process may use.
    #[arg(long, value_name = "SECONDS")]
    cpu: Option<u64>,

    /// Processes that may exist in the box at once.
    #[arg(long, value_name = "N")]
    processes: Option<u64>,

    /// The largest file a process may write, in bytes (`100M`).
    #[arg(long, value_name = "BYTES", value_parser = bytes)]
    file_size: Option<u64>,

    /// Bytes the command may write in total to its writable paths
    /// (`100M`): its changes are kept in a tmpfs of that size and written
    /// back when it ends by itself.
    #[arg(long, value_name = "BYTES", value_parser = bytes)]
    max_written: Option<u64>,

    /// Files the command may create or change in its writable paths and
    /// its scratch /tmp.
    #[arg(long, value_name = "N")]
    max_files: Option<u64>,

    /// Run with what this kernel can enforce, saying what it cannot,
    /// instead of refusing.
    #[arg(long)]
    best_effort: bool,

    /// Print what the command is allowed on stderr before it runs.
    #[arg(long, short)]
    verbose: bool,

    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

const AFTER_HELP: &str = "\
Exit status: the command's; 125 when the confinement cannot be set up, 127 when the \
command cannot be started inside it, 2 for a usage error.";

fn main() -> ExitCode {
    // First thing: this program is also the confinement's launcher.
    serve_if_launcher();
    let args = Args::parse();
    match run(args) {
        Ok(never) => match never {},
        Err(text) => {
            eprintln!("rho-sandbox: {text}");
            ExitCode::from(125)
        }
    }
}

/// Builds the confinement and becomes its launcher; returns only on
/// failure.
fn run(args: Args) -> Result<std::convert::Infallible, String> {
    let confinement = confinement(&args)?;
    if args.verbose {
        eprintln!("rho-sandbox: {}", confinement.summary());
    }
    let launcher = Launcher::embedded()?;
    let (program, rest) = args.command.split_first().ok_or("no command was given")?;
    let mut command = std::process::Command::new(program);
    command.args(rest).envs(inherited_env(&confinement));
    if let Some(cwd) = working_directory(&args, &confinement) {
        command.current_dir(cwd);
    }
    let confined = launcher
        .confine(&command, &confinement)
        .map_err(|error| error.to_string())?;
    for mechanism in confined.not_enforced() {
        eprintln!("rho-sandbox: not enforced here: {}", mechanism.enforces());
    }
    exec(confined.into_command())
}

#[cfg(unix)]
fn exec(mut command: std::process::Command) -> Result<std::convert::Infallible, String> {
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    Err(format!("could not start the confinement: {error}"))
}

#[cfg(not(unix))]
fn exec(_: std::process::Command) -> Result<std::convert::Infallible, String> {
    Err("confinement is only implemented on Linux".into())
}

/// The file's confinement (or the default), with the flags added.
fn confinement(args: &Args) -> Result<Confinement, String> {
    let mut confinement = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| format!("could not read {}: {error}", path.display()))?;
            toml::from_str::<Confinement>(&text)
                .map_err(|error| format!("{} is not a confinement: {error}", path.display()))?
        }
        None => Confinement::new(),
    };
    let absolute = |path: &Path| {
        std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
    };
    if let Some(workspace) = &args.workspace {
        confinement = confinement.with_workspace(absolute(workspace)?);
    }
    for path in &args.writes {
        confinement = confinement.with_write(absolute(path)?);
    }
    for path in &args.reads {
        confinement = confinement.with_read(absolute(path)?);
    }
    if args.read_only_rest {
        confinement = confinement.with_rest(Rest::ReadOnly);
    }
    for host in &args.hosts {
        confinement = confinement.with_allowed_host(host.clone());
    }
    for (name, address) in &args.addresses {
        confinement = confinement.with_host_address(name.clone(), *address);
    }
    if args.no_network {
        confinement = confinement.with_network(Network::None);
    }
    if let Some(network) = args.network {
        confinement = confinement.with_network(network);
    }
    for name in &args.env_pass {
        confinement = confinement.with_env_pass(name.clone());
    }
    let mut limits: Limits = confinement.limits();
    limits.memory = args.memory.or(limits.memory);
    limits.cpu = args.cpu.map(Duration::from_secs).or(limits.cpu);
    limits.processes = args.processes.or(limits.processes);
    limits.file_size = args.file_size.or(limits.file_size);
    limits.written = args.max_written.or(limits.written);
    limits.files = args.max_files.or(limits.files);
    confinement = confinement.with_limits(limits);
    if args.best_effort {
        confinement = confinement.best_effort();
    }
    Ok(confinement)
}

/// The command's working directory: the workspace, else the current
/// directory when the command may see it.
fn working_directory(args: &Args, confinement: &Confinement) -> Option<PathBuf> {
    if let Some(workspace) = confinement.workspace() {
        return Some(workspace.to_path_buf());
    }
    let here = std::env::current_dir().ok()?;
    let seen = confinement
        .write_paths()
        .into_iter()
        .chain(confinement.read_paths().iter().cloned())
        .any(|path| here.starts_with(path));
    (seen || args.read_only_rest).then_some(here)
}

/// `NAME=ADDRESS`.
fn name_and_address(text: &str) -> Result<(String, IpAddr), String> {
    let (name, address) = text
        .split_once('=')
        .ok_or("expected NAME=ADDRESS, such as registry.test=127.0.0.1")?;
    let address = address
        .parse()
        .map_err(|error| format!("`{address}` is not an address: {error}"))?;
    Ok((name.to_owned(), address))
}

/// `none`, `loopback`, `hosts` or `full`.
fn network(text: &str) -> Result<Network, String> {
    match text {
        "none" => Ok(Network::None),
        "loopback" => Ok(Network::Loopback),
        "hosts" => Ok(Network::Hosts),
        "full" => Ok(Network::Full),
        _ => Err("expected none, loopback, hosts or full".to_owned()),
    }
}

/// A count of bytes, with an optional binary suffix: `4096`, `512K`,
/// `100M`, `2G`.
fn bytes(text: &str) -> Result<u64, String> {
    let (digits, unit) = match text.char_indices().last() {
        Some((at, unit)) if unit.is_ascii_alphabetic() => (&text[..at], unit.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => return Err(format!("`{text}`: the unit is K, M or G")),
    };
    let count: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a number of bytes"))?;
    count
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(bytes("4096"), Ok(4096));
        assert_eq!(bytes("512k"), Ok(512 << 10));
        assert_eq!(bytes("2G"), Ok(2 << 30));
        assert!(bytes("2T").is_err());
        assert!(bytes("x").is_err());
        assert!(bytes("99999999999G").is_err());
    }

    #[test]
    fn the_flags_add_to_the_file() {
        let args = Args::parse_from([
            "rho-sandbox",
            "--allow-host",
            "pypi.org",
            "--host-address",
            "mirror.test=10.0.0.5",
            "--memory",
            "1G",
            "--",
            "pip",
            "--version",
        ]);
        let confinement = confinement(&args).expect("a confinement");
        assert_eq!(confinement.network(), Network::Hosts);
        assert_eq!(confinement.allowed_hosts().len(), 1);
        assert_eq!(
            confinement.host_addresses().get("mirror.test"),
            Some(&IpAddr::from([10, 0, 0, 5]))
        );
        assert_eq!(confinement.limits().memory, Some(1 << 30));
        assert_eq!(args.command, ["pip", "--version"]);
    }

    #[test]
    fn no_network_and_allowed_hosts_do_not_go_together() {
        let refused = Args::try_parse_from([
            "rho-sandbox",
            "--no-network",
            "--allow-host",
            "pypi.org",
            "true",
        ]);
        assert!(refused.is_err());
    }
}
