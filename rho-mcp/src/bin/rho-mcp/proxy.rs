//! `rho-mcp proxy`: its arguments, read by clap into the library's options.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgGroup;

use crate::listen::{HttpArgs, Transport};
use rho_mcp::McpTasks;
use rho_mcp::import::Handshake;
use rho_mcp::proxy::{Policy, ProxyOptions, load_policy};
use rho_tool_core::annotation_gate::Match;

/// Serve an MCP server over stdio, with rho's guarantees on every call.
///
/// The server is the one SERVER_COMMAND runs (over its stdio), or the one
/// at the streamable HTTP endpoint URL. With --http the proxy serves its
/// clients over streamable HTTP instead of stdio: the first line on stdout
/// is the URL, and it serves until SIGTERM, SIGINT or SIGHUP. `kill -USR1`
/// the proxy to lift every quarantine.
#[derive(Debug, clap::Args)]
#[command(
    override_usage = "rho-mcp proxy [OPTIONS] -- SERVER_COMMAND [ARGS]...\n       \
                      rho-mcp proxy [OPTIONS] --url URL",
    // The server: a command after `--`, or a URL; one of them.
    group(ArgGroup::new("server").required(true).args(["url", "command"])),
)]
pub(crate) struct ProxyArgs {
    /// Allow, deny or ask, by tool name or annotation (TOML; see the
    /// README) [default: allow all].
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Append a JSON line per call end to FILE.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Log each call's arguments in the audit too (left out by default).
    #[arg(long)]
    audit_arguments: bool,
    /// Each call's limit, counted from approval [default: 120000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Cut each text part of a result to BYTES [default: none].
    #[arg(long, value_name = "BYTES")]
    output_cap: Option<usize>,
    /// At most N calls on the server at once, the rest queued with their
    /// clocks held (1: one at a time, for a server that cannot take
    /// parallel calls) [default: no bound].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_concurrent_calls: Option<u64>,
    /// A call that runs MS without answering becomes an MCP task for a
    /// client that takes them (2026-07-28): the client polls it instead of
    /// holding its request open, and its cancel stops the server's work
    /// too [default: no tasks].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    tasks_after: Option<u64>,
    /// How long a call waits for the answer of a client on 2026-07-28 asked
    /// about it (an approval the policy asks for, a question of the
    /// server's); a call nobody answers by then is aborted, counted against
    /// no tool [default: 600000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    input_deadline: Option<u64>,
    /// Quarantine a tool after N crashes or timeouts, and the server after
    /// N deaths in 5 minutes (0: never) [default: 3].
    #[arg(long, value_name = "N")]
    quarantine_after: Option<u32>,
    /// How to greet the server: `either` asks for 2026-07-28 and falls back
    /// to `initialize` (2025-11-25) for an older server; `initialize` only
    /// that, for a server that does not answer requests it does not know;
    /// `discover` 2026-07-28 only [default: either].
    #[arg(long, value_name = "HOW", value_parser = handshake)]
    handshake: Option<Handshake>,
    /// The server's name in error texts [default: the command's file name,
    /// or the URL's host].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Proxy the server at this streamable HTTP endpoint.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Send the token in environment variable VAR as `Authorization:
    /// Bearer` (kept out of the command line, which other users can read).
    #[arg(long, value_name = "VAR")]
    bearer_token_env: Option<String>,
    /// Send this header with every request.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = header)]
    headers: Vec<(String, String)>,
    /// The command that runs the server, and its arguments (after `--`).
    #[arg(last = true, value_name = "SERVER_COMMAND")]
    command: Vec<OsString>,
    /// Where the proxy's own clients reach it.
    #[command(flatten)]
    listen: HttpArgs,
}

/// What `rho-mcp proxy ...` asked for: the options, the policy file to
/// read (read by the caller, whose error has an exit code of its own), and
/// where to serve.
pub(crate) struct Proxy {
    pub(crate) options: ProxyOptions,
    pub(crate) policy: Option<PathBuf>,
    pub(crate) transport: Transport,
}

impl ProxyArgs {
    /// The library's options; an error for what clap cannot check (an
    /// environment variable that is not set).
    pub(crate) fn into_proxy(self) -> Result<Proxy, String> {
        let mut options = match (self.url, self.command.split_first()) {
            (Some(url), _) => ProxyOptions::http(url),
            (None, Some((program, server_args))) => ProxyOptions::new(program).args(server_args),
            (None, None) => return Err("no server command after `--`".to_owned()),
        };
        options = options.audit_arguments(self.audit_arguments);
        if let Some(path) = self.audit {
            options = options.audit(path);
        }
        if let Some(ms) = self.timeout {
            options = options.timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = self.output_cap {
            options = options.output_cap(bytes);
        }
        if let Some(calls) = self.max_concurrent_calls {
            options = options.max_concurrent_calls(usize::try_from(calls).unwrap_or(usize::MAX));
        }
        if let Some(ms) = self.tasks_after {
            // Every tool: the proxy cannot tell which of the server's
            // calls run long, so any call may become a task once it has.
            let tasks = McpTasks::new()
                .optional(Match::Always)
                .after(Duration::from_millis(ms));
            options = options.tasks(tasks);
        }
        if let Some(ms) = self.input_deadline {
            options = options.input_deadline(Duration::from_millis(ms));
        }
        if let Some(failures) = self.quarantine_after {
            options = options.quarantine_after(failures);
        }
        if let Some(name) = self.name {
            options = options.name(name);
        }
        if let Some(handshake) = self.handshake {
            options = options.handshake(handshake);
        }
        if let Some(variable) = self.bearer_token_env {
            let token = std::env::var(&variable).map_err(|_| {
                format!("--bearer-token-env: environment variable `{variable}` is not set")
            })?;
            options = options.bearer_token(token);
        }
        for (name, value) in self.headers {
            options = options.header(name, value);
        }
        Ok(Proxy {
            options,
            policy: self.policy,
            transport: self.listen.transport(),
        })
    }
}

#[cfg(test)]
impl ProxyArgs {
    /// `--timeout`, as given.
    pub(crate) fn timeout(&self) -> Option<u64> {
        self.timeout
    }

    /// The server's command and its arguments, as given.
    pub(crate) fn command(&self) -> Vec<&str> {
        self.command
            .iter()
            .map(|arg| arg.to_str().expect("UTF-8"))
            .collect()
    }
}

/// `NAME: VALUE`, each trimmed.
fn header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or("a header is `NAME: VALUE`, with a colon")?;
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

/// Reads the policy file, if one was given: its gate and confinement.
pub(crate) fn policy(proxy: &Proxy) -> Result<Option<Policy>, String> {
    proxy
        .policy
        .as_deref()
        .map(load_policy)
        .transpose()
        .map_err(|error| error.to_string())
}

/// `--handshake`: `either`, `initialize` or `discover`.
fn handshake(given: &str) -> Result<Handshake, String> {
    match given {
        "either" => Ok(Handshake::Either),
        "initialize" => Ok(Handshake::Initialize),
        "discover" => Ok(Handshake::Discover),
        other => Err(format!(
            "`{other}` is not a handshake: either, initialize or discover"
        )),
    }
}
