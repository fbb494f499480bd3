//! The proxy put together: the server imported as a source of a fresh
//! registry, and that registry served to one client with the policy's
//! gate, the output cap and the audit log.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_tool_core::{DEFAULT_TIMEOUT, Runner};
use rho_turn::OutputCap;
use tokio::io::{AsyncRead, AsyncWrite};

use super::audit::AuditLog;
use super::gate::PolicyGate;
use super::policy::{Policy, PolicyError};
use crate::McpServer;
use crate::error::ServeError;
use crate::import::{ImportError, McpSource};

/// How long a server's deaths are remembered for its quarantine.
const DEATH_WINDOW: Duration = Duration::from_secs(300);

/// How to run a proxy: the server's command and the proxy's limits.
/// Finished by [`start`](ProxyOptions::start).
#[derive(Debug, Clone)]
#[must_use = "options do nothing until `start`"]
pub struct ProxyOptions {
    name: String,
    program: OsString,
    args: Vec<OsString>,
    policy: Policy,
    audit: Option<PathBuf>,
    audit_arguments: bool,
    timeout: Duration,
    output_cap: Option<usize>,
    quarantine_after: u32,
}

impl ProxyOptions {
    /// A proxy in front of the stdio MCP server `program` runs, with the
    /// defaults: every call allowed, no audit log, rho's
    /// [`DEFAULT_TIMEOUT`], no output cap, quarantine after 3.
    pub fn new(program: impl Into<OsString>) -> Self {
        let program = program.into();
        let name = Path::new(&program).file_name().map_or_else(
            || "server".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
        Self {
            name,
            program,
            args: Vec::new(),
            policy: Policy::allow_all(),
            audit: None,
            audit_arguments: false,
            timeout: DEFAULT_TIMEOUT,
            output_cap: None,
            quarantine_after: 3,
        }
    }

    /// Adds arguments to the server's command.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The server's name in error texts (default: the program's file
    /// name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The policy every call goes through (default:
    /// [`Policy::allow_all`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Appends a JSON line per call end to the file at `path` (see
    /// [`AuditLog`]).
    pub fn audit(mut self, path: impl Into<PathBuf>) -> Self {
        self.audit = Some(path.into());
        self
    }

    /// Whether the audit log holds each call's arguments too (default:
    /// no).
    pub fn audit_arguments(mut self, arguments: bool) -> Self {
        self.audit_arguments = arguments;
        self
    }

    /// Every call's time limit, counted from the policy's approval: at the
    /// deadline the call ends with an error result and the server is sent
    /// `notifications/cancelled` (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Cuts each text part of a result to `bytes` (its head and tail
    /// around a marker); default: no cap.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = Some(bytes);
        self
    }

    /// After how many crashes or timeouts a tool is quarantined, and after
    /// how many deaths within five minutes the whole server is (default 3;
    /// 0: never). A quarantined tool leaves the client's list until the
    /// proxy is started again.
    pub fn quarantine_after(mut self, failures: u32) -> Self {
        self.quarantine_after = failures;
        self
    }

    /// Opens the audit log, starts the server and lists its tools.
    ///
    /// Call it within a tokio runtime with a timer (`enable_all`): the
    /// calls run on it.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Audit`] when the audit log cannot be opened,
    /// [`ProxyError::Import`] when the server did not start or answer,
    /// [`ProxyError::Runtime`] outside a tokio runtime with a timer.
    pub async fn start(self) -> Result<Proxy, ProxyError> {
        let executor =
            TokioExecutor::current().map_err(|error| ProxyError::Runtime(error.to_string()))?;
        let gate = PolicyGate::new(self.policy);
        let audit = match &self.audit {
            Some(path) => Some(
                AuditLog::open(path)
                    .map_err(|error| ProxyError::Audit {
                        path: path.clone(),
                        error,
                    })?
                    .with_arguments(self.audit_arguments)
                    .with_gate(&gate),
            ),
            None => None,
        };
        let rule = match self.quarantine_after {
            0 => QuarantineRule::never(),
            n => QuarantineRule::after(n),
        };
        let registry = ToolRegistry::new();
        let source = McpSource::stdio(self.name, self.program)
            .args(self.args)
            .timeout(self.timeout)
            .quarantine(rule.within(DEATH_WINDOW))
            .accounting(Arc::new(Accounting::new(rule)))
            // A desktop client logs its servers' stderr; the proxy's is
            // where the server's goes.
            .forward_stderr(true)
            .connect(&registry)
            .await?;
        let asks = gate.elicitation();
        let runner = Runner::new(executor).with_gate(Arc::new(gate));
        let mut server = McpServer::new(runner, registry)
            .with_name("rho-mcp-proxy", env!("CARGO_PKG_VERSION"))
            .with_elicitation(asks);
        // The server's word to the model about its tools still reaches it.
        if let Some(instructions) = source.instructions() {
            server = server.with_instructions(instructions);
        }
        if let Some(bytes) = self.output_cap {
            server = server.with_output_cap(OutputCap::bytes(bytes));
        }
        if let Some(audit) = audit {
            server = server.with_call_observer(Arc::new(audit));
        }
        Ok(Proxy { server, source })
    }
}

/// A running proxy: the imported server and the MCP server in front of
/// it. Dropping it kills the imported server's process group.
pub struct Proxy {
    server: McpServer<TokioExecutor>,
    source: McpSource,
}

impl Proxy {
    /// The imported server (its pid, deaths, quarantine, stderr).
    pub fn source(&self) -> &McpSource {
        &self.source
    }

    /// The MCP server the client talks to.
    pub fn server(&self) -> &McpServer<TokioExecutor> {
        &self.server
    }

    /// Serves one client over stdin and stdout until it closes stdin, or
    /// the process is told to stop (SIGTERM, SIGINT, SIGHUP); then the
    /// imported server is killed, whole.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Serve`] when the client's handshake failed.
    pub async fn serve_stdio(self) -> Result<(), ProxyError> {
        let stop = stop_signal()?;
        let served = tokio::select! {
            served = self.server.serve_stdio() => served,
            () = stop => Ok(()),
        };
        self.source.close();
        Ok(served?)
    }

    /// Serves one client that writes to `reader` and reads from `writer`,
    /// until it closes its end of `reader`; then the imported server is
    /// killed.
    ///
    /// # Errors
    ///
    /// As [`serve_stdio`](Proxy::serve_stdio).
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), ProxyError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let served = self.server.serve_io(reader, writer).await;
        self.source.close();
        Ok(served?)
    }
}

/// A future that ends at the first SIGTERM, SIGINT or SIGHUP.
fn stop_signal() -> Result<impl Future<Output = ()>, ProxyError> {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind: SignalKind| {
        signal(kind)
            .map_err(|error| ProxyError::Runtime(format!("cannot listen for signals: {error}")))
    };
    let mut term = listen(SignalKind::terminate())?;
    let mut int = listen(SignalKind::interrupt())?;
    let mut hup = listen(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    })
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("server", &self.server)
            .field("source", &self.source)
            .finish()
    }
}

/// Why the proxy could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The policy file is wrong.
    #[error("{0}")]
    Policy(#[from] PolicyError),
    /// The audit log could not be opened.
    #[error("cannot open the audit log {}: {error}", path.display())]
    Audit {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The server could not be started or did not answer.
    #[error("{0}")]
    Import(#[from] ImportError),
    /// No tokio runtime with a timer, or no signal handling.
    #[error("{0}")]
    Runtime(String),
    /// Serving the client failed.
    #[error("{0}")]
    Serve(#[from] ServeError),
}

impl ProxyError {
    /// The exit code a command line should end with: 2 for a mistake in
    /// what it was given (the policy file, the audit log's path), 1 for
    /// the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            ProxyError::Policy(_) | ProxyError::Audit { .. } => 2,
            _ => 1,
        }
    }
}
