//! The proxy put together: the server imported as a source of a fresh
//! registry, and that registry served to one client with the policy's
//! gate, the output cap and the audit log.

use rho_tool_core::Tool;
use std::ffi::OsString;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_process::confine::Confinement;
use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_tool_core::{Allowances, AnnotationGate, Runner, Verdict};

use super::Policy;
use rho_turn::OutputCap;
use tokio::io::{AsyncRead, AsyncWrite};

use super::audit::AuditLog;
use super::gate::PolicyGate;
use super::policy::PolicyError;
use crate::error::ServeError;
use crate::import::{AskTheClient, Handshake, HttpSpec, ImportError, McpSource, McpSourceBuilder};
use crate::{HttpOptions, HttpServer, McpServer, McpTasks};

/// How long a server's deaths are remembered for its quarantine.
const DEATH_WINDOW: Duration = Duration::from_secs(300);

/// The server behind the proxy.
#[derive(Debug, Clone)]
enum Upstream {
    /// A stdio server: a program, its arguments, and its confinement.
    Command {
        program: OsString,
        args: Vec<OsString>,
        confinement: Option<Box<Confinement>>,
    },
    /// A streamable HTTP endpoint (whose `Debug` hides the token and the
    /// headers' values).
    Http(HttpSpec),
}

/// How to run a proxy: the server behind it and the proxy's limits.
/// Finished by [`start`](ProxyOptions::start).
#[derive(Debug, Clone)]
#[must_use = "options do nothing until `start`"]
pub struct ProxyOptions {
    name: String,
    upstream: Upstream,
    /// What was set that the upstream's kind does not take.
    misfit: Option<&'static str>,
    policy: AnnotationGate,
    allowances: Allowances,
    audit: Option<PathBuf>,
    audit_arguments: bool,
    timeout: Duration,
    output_cap: Option<usize>,
    quarantine_after: u32,
    max_concurrent_calls: Option<usize>,
    handshake: Handshake,
    tasks: Option<McpTasks>,
    input_deadline: Option<Duration>,
}

impl ProxyOptions {
    /// A proxy in front of the stdio MCP server `program` runs, with the
    /// defaults: every call allowed, no audit log, rho's
    /// `<dyn Tool>::DEFAULT_TIMEOUT`, no output cap, quarantine after 3.
    pub fn new(program: impl Into<OsString>) -> Self {
        let program = program.into();
        let name = Path::new(&program).file_name().map_or_else(
            || "server".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
        Self::with_upstream(
            name,
            Upstream::Command {
                program,
                args: Vec::new(),
                confinement: None,
            },
        )
    }

    /// A proxy in front of the MCP server at the streamable HTTP endpoint
    /// `url`, with the same defaults as [`new`](ProxyOptions::new). The
    /// server's name in error texts is the URL's host unless
    /// [`name`](ProxyOptions::name) says otherwise.
    pub fn http(url: impl Into<String>) -> Self {
        let url = url.into();
        let name = url
            .parse::<http::Uri>()
            .ok()
            .and_then(|uri| uri.host().map(str::to_owned))
            .unwrap_or_else(|| "server".to_owned());
        Self::with_upstream(name, Upstream::Http(HttpSpec::new(url)))
    }

    fn with_upstream(name: String, upstream: Upstream) -> Self {
        Self {
            name,
            upstream,
            misfit: None,
            policy: allow_all(),
            allowances: Allowances::new(),
            audit: None,
            audit_arguments: false,
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
            output_cap: None,
            quarantine_after: 3,
            max_concurrent_calls: None,
            handshake: Handshake::Either,
            tasks: None,
            input_deadline: None,
        }
    }

    /// Adds arguments to the server's command (a stdio server's only:
    /// given for an HTTP server, [`start`](ProxyOptions::start) fails).
    pub fn args<I, S>(mut self, new: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        match &mut self.upstream {
            Upstream::Command { args, .. } => args.extend(new.into_iter().map(Into::into)),
            Upstream::Http(_) => self.misfit = Some("arguments of a command"),
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (an HTTP
    /// server's only: given for a stdio server,
    /// [`start`](ProxyOptions::start) fails).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        match &mut self.upstream {
            Upstream::Http(spec) => spec.bearer = Some(token.into()),
            Upstream::Command { .. } => self.misfit = Some("a bearer token"),
        }
        self
    }

    /// Sends the header `name: value` with every request (an HTTP
    /// server's only, as [`bearer_token`](ProxyOptions::bearer_token)).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.upstream {
            Upstream::Http(spec) => spec.headers.push((name.into(), value.into())),
            Upstream::Command { .. } => self.misfit = Some("an HTTP header"),
        }
        self
    }

    /// Runs the stdio server confined by the kernel (see
    /// [`McpSourceBuilder::confined`](crate::import::McpSourceBuilder::confined)),
    /// through the launcher this program embeds (`rho-mcp` does) or the
    /// installed one. For an HTTP server, [`start`](ProxyOptions::start)
    /// fails.
    pub fn confined(mut self, confinement: Confinement) -> Self {
        match &mut self.upstream {
            Upstream::Command {
                confinement: slot, ..
            } => *slot = Some(Box::new(confinement)),
            Upstream::Http(_) => self.misfit = Some("a confinement"),
        }
        self
    }

    /// The policy file's gate and, if it has one, its confinement
    /// ([`load_policy`](super::load_policy)).
    pub fn policy_file(self, policy: Policy) -> Self {
        let options = self.policy(policy.gate).allowances(policy.allowances);
        match policy.confinement {
            Some(confinement) => options.confined(confinement),
            None => options,
        }
    }

    /// The server's name in error texts (default: the program's file
    /// name, or the URL's host).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The policy every call goes through: a gate's rules and steps, read
    /// from a file ([`load_policy`](super::load_policy)) or built in code
    /// (default: every call allowed). An `ask` goes to the person at the
    /// client ([`PolicyGate`](super::PolicyGate)).
    pub fn policy(mut self, policy: AnnotationGate) -> Self {
        self.policy = policy;
        self
    }

    /// Answers the policy's `ask`s about the calls `allowances` cover in
    /// advance (default: none): such a call runs without asking the
    /// person at the client, and the audit log names the allowance. The
    /// policy file's `[allowances]` table sets them.
    pub fn allowances(mut self, allowances: Allowances) -> Self {
        self.allowances = allowances;
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
    /// `notifications/cancelled` (default `<dyn Tool>::DEFAULT_TIMEOUT`).
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

    /// At most `calls` calls on the server at once; the rest wait their
    /// turn in order, their clocks held (default: no bound). `1` serves a
    /// server that cannot take parallel calls one call at a time, however
    /// many the client sends. See
    /// [`McpSourceBuilder::max_concurrent_calls`](crate::import::McpSourceBuilder::max_concurrent_calls).
    pub fn max_concurrent_calls(mut self, calls: usize) -> Self {
        self.max_concurrent_calls = Some(calls);
        self
    }

    /// How the proxy greets its server (default [`Handshake::Either`]:
    /// 2026-07-28 with a server that speaks it, so the server's questions
    /// come back with the call they belong to and say what the proxy's
    /// client of that call takes; 2025-11-25 with an older one, at the
    /// price of one more round trip when it starts). `Initialize` spares
    /// that round trip to a server known to be older, or one that does
    /// not answer a request it does not know.
    pub fn handshake(mut self, handshake: Handshake) -> Self {
        self.handshake = handshake;
        self
    }

    /// Which of the server's tools the proxy runs as MCP tasks for its
    /// clients that take them (the tasks extension of 2026-07-28), and
    /// after how long (see [`McpTasks`]; default: none). A call that has
    /// run that long answering nothing becomes a task the client polls
    /// instead of a request it holds open; its `tasks/cancel` stops the
    /// call, and the proxy cancels the call's request (or its own task) on
    /// the server, so the server's work stops too. Older clients, and
    /// clients that take no tasks, get plain answers. Whether the server
    /// itself makes tasks of calls does not matter: the proxy follows
    /// those to their end either way.
    pub fn tasks(mut self, tasks: McpTasks) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// How long a call asked about waits for the answer of a client on
    /// 2026-07-28, which is asked through an input-required result and
    /// answers with a new request (default ten minutes, see
    /// [`McpServer::with_input_deadline`]). A call nobody answers by then
    /// is aborted; the wait counts against no tool and no server.
    pub fn input_deadline(mut self, deadline: Duration) -> Self {
        self.input_deadline = Some(deadline);
        self
    }

    /// After how many crashes or timeouts a tool is quarantined, and after
    /// how many deaths within five minutes the whole server is (default 3;
    /// 0: never). A quarantined tool leaves the client's list until
    /// [`Proxy::reenable`] (`SIGUSR1` to a proxy serving stdio) or a
    /// restart.
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
    /// [`ProxyError::Options`] when something was set that the server's
    /// kind does not take (arguments for an HTTP server, a header for a
    /// command), [`ProxyError::Audit`] when the audit log cannot be
    /// opened, [`ProxyError::Import`] when the server did not start or
    /// answer, [`ProxyError::Runtime`] outside a tokio runtime with a
    /// timer.
    pub async fn start(self) -> Result<Proxy, ProxyError> {
        if let Some(misfit) = self.misfit {
            let kind = match self.upstream {
                Upstream::Command { .. } => "a stdio server",
                Upstream::Http(_) => "an HTTP server",
            };
            return Err(ProxyError::Options(format!(
                "{misfit} cannot be given for {kind}"
            )));
        }
        let executor =
            TokioExecutor::current().map_err(|error| ProxyError::Runtime(error.to_string()))?;
        let believe_hints = self.policy.believes_untrusted_hints();
        let gate = PolicyGate::new(self.policy).with_allowances(self.allowances.clone());
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
        let accounting = Arc::new(Accounting::new(rule));
        let limits = Limits {
            timeout: self.timeout,
            rule,
            max_concurrent_calls: self.max_concurrent_calls,
            handshake: self.handshake,
        };
        let source = match self.upstream {
            Upstream::Command {
                program,
                args,
                confinement,
            } => {
                let mut builder = McpSource::stdio(self.name, program).args(args);
                if let Some(confinement) = confinement {
                    builder = builder.confined(*confinement);
                }
                guarded(builder, &limits, &accounting)
                    // A desktop client logs its servers' stderr; the
                    // proxy's is where the server's goes.
                    .forward_stderr(true)
                    .connect(&registry)
                    .await?
            }
            Upstream::Http(spec) => {
                let builder = McpSource::http(self.name, spec.url);
                let mut builder = guarded(builder, &limits, &accounting);
                if let Some(token) = spec.bearer {
                    builder = builder.bearer_token(token);
                }
                for (name, value) in spec.headers {
                    builder = builder.header(name, value);
                }
                builder.connect(&registry).await?
            }
        };
        let asks = gate.elicitation();
        let approver = gate.approver();
        // One store for the gate and the runner: an allowance the runner
        // keeps is one the gate answers with too.
        let runner = Runner::new(executor)
            .with_gate(gate)
            .with_approver(approver)
            .with_allowances(self.allowances);
        let mut server = McpServer::new(runner, registry)
            // The client sees the server it asked for: its name, version,
            // title, icons and website; and tools and logging only when the
            // server declared them, as the only tools and logs are its.
            .with_identity(source.server_identity().unwrap_or_else(|| {
                rmcp::model::Implementation::new("rho-mcp-proxy", env!("CARGO_PKG_VERSION"))
            }))
            .fronting(source.server_capabilities())
            .with_elicitation(asks)
            // What the proxy does not govern passes through: the server's
            // resources, prompts and completions.
            .with_features(source.features())
            // Believed hints reach the client too: its own prompts and
            // filters then read the server's tools as the user chose to.
            .believe_untrusted_hints(believe_hints);
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
        if let Some(tasks) = self.tasks {
            server = server.with_tasks(tasks);
        }
        if let Some(deadline) = self.input_deadline {
            server = server.with_input_deadline(deadline);
        }
        if let Some(calls) = self.max_concurrent_calls {
            // Told to the proxy's clients, so a rho host behind it queues
            // on its side, where the wait is not charged to its calls.
            server = server.advertise_max_concurrent_calls(calls);
        }
        Ok(Proxy { server, source })
    }
}

/// A proxy serving its clients over streamable HTTP, made by
/// [`Proxy::serve_http`]. Dropping it stops nothing that
/// [`shutdown`](ProxyHttp::shutdown) would not: the imported server is
/// killed with the proxy.
pub struct ProxyHttp {
    proxy: Proxy,
    http: HttpServer,
}

impl fmt::Debug for ProxyHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyHttp")
            .field("url", &self.http.url())
            .field("source", &self.proxy.source)
            .finish_non_exhaustive()
    }
}

impl ProxyHttp {
    /// The URL the proxy's clients connect to.
    pub fn url(&self) -> String {
        self.http.url()
    }

    /// The proxy (its imported server, its quarantines).
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }

    /// Serves until `until` ends or the process is told to stop (SIGTERM,
    /// SIGINT, SIGHUP), lifting every quarantine at each `SIGUSR1`; then
    /// stops serving and kills the imported server.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Runtime`] when signals cannot be listened for;
    /// [`ProxyError::Serve`] when the HTTP server failed.
    pub async fn serve_until(self, until: impl Future<Output = ()>) -> Result<(), ProxyError> {
        let served = self
            .proxy
            .until_stopped(async {
                until.await;
                Ok(())
            })
            .await;
        let stopped = self.shutdown().await;
        served.and(stopped)
    }

    /// Stops serving (the calls in flight end as their clients' sessions
    /// close) and kills the imported server.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Serve`] when the HTTP server failed.
    pub async fn shutdown(self) -> Result<(), ProxyError> {
        let stopped = self.http.shutdown().await;
        self.proxy.source.close();
        Ok(stopped?)
    }
}

/// The policy of a proxy given none: every call runs, read-only or not.
fn allow_all() -> AnnotationGate {
    AnnotationGate::new()
        .read_only_tools(Verdict::Allow)
        .otherwise(Verdict::Allow)
}

/// What the proxy bounds the imported source's calls by.
struct Limits {
    timeout: Duration,
    rule: QuarantineRule,
    max_concurrent_calls: Option<usize>,
    handshake: Handshake,
}

/// `builder` with what the proxy sets on the imported source, whichever
/// its kind: the calls' timeout and concurrency bound, the quarantine rule
/// and its accounting, the proxy's own runtime, and the server's questions
/// passed on to the proxy's client.
fn guarded<K>(
    builder: McpSourceBuilder<K>,
    limits: &Limits,
    accounting: &Arc<Accounting>,
) -> McpSourceBuilder<K> {
    let builder = match limits.max_concurrent_calls {
        Some(calls) => builder.max_concurrent_calls(calls),
        None => builder,
    };
    builder
        .timeout(limits.timeout)
        .quarantine(limits.rule.within(DEATH_WINDOW))
        .accounting(Arc::clone(accounting))
        // Every call crosses the source: on the proxy's own runtime it
        // takes two fewer turns between threads than on a thread of its
        // own.
        .on_tokio_runtime(tokio::runtime::Handle::current())
        // What the server asks its client (its user, its model, its
        // roots) goes to the proxy's client, with the call it came in.
        .answerer(AskTheClient)
        .handshake(limits.handshake)
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

    /// Lifts every quarantine: the server's as a whole, and each tool's.
    /// The tools return to the client's list (it is told the list
    /// changed) and their strikes start afresh. Returns how many
    /// quarantines were lifted.
    pub fn reenable(&self) -> usize {
        let server = usize::from(self.source.reenable());
        let accounting = self.source.accounting();
        let tools = accounting
            .health()
            .iter()
            .filter(|health| accounting.reenable(&health.tool))
            .count();
        server + tools
    }

    /// Serves one client over stdin and stdout until it closes stdin, or
    /// the process is told to stop (SIGTERM, SIGINT, SIGHUP); then the
    /// imported server is killed, whole. The server is told what that
    /// client offered, as it would be directly: a server that speaks only
    /// 2025-11-25 is started again as the client initializes, when it was
    /// told more. A `SIGUSR1` lifts every
    /// quarantine ([`reenable`](Proxy::reenable)) and says so on stderr:
    /// `kill -USR1 <pid>` puts a fixed server's tools back without
    /// restarting the client.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Serve`] when the client's handshake failed.
    pub async fn serve_stdio(self) -> Result<(), ProxyError> {
        // Its one client's offer is what the server is told, as directly.
        self.source.serve_one_client();
        let served = self.until_stopped(self.server.serve_stdio()).await;
        self.source.close();
        served
    }

    /// Serves clients over streamable HTTP with `options` (loopback,
    /// `Host` and `Origin` checked, a bearer token off loopback: see
    /// [`HttpOptions`]), each session with the proxy's policy, limits and
    /// audit log; a question the server asks during a call goes to the
    /// client whose call it is. The proxy then runs until
    /// [`ProxyHttp::serve_until`] or [`ProxyHttp::shutdown`].
    ///
    /// # Errors
    ///
    /// [`ProxyError::Serve`] when the options do not fit together or the
    /// address cannot be bound.
    pub async fn serve_http(self, options: HttpOptions) -> Result<ProxyHttp, ProxyError> {
        // Each client has a session of its own with the server, as it
        // would directly: none sees or changes another's.
        self.source.serve_older_clients_apart();
        let http = self.server.serve_http(options).await?;
        Ok(ProxyHttp { proxy: self, http })
    }

    /// Runs `served` until it ends or the process is told to stop,
    /// lifting every quarantine at each `SIGUSR1`.
    async fn until_stopped(
        &self,
        served: impl Future<Output = Result<(), ServeError>>,
    ) -> Result<(), ProxyError> {
        use tokio::signal::unix::{SignalKind, signal};
        let stop = stop_signal()?;
        let mut lift = signal(SignalKind::user_defined1())
            .map_err(|error| ProxyError::Runtime(format!("cannot listen for signals: {error}")))?;
        tokio::pin!(stop, served);
        loop {
            tokio::select! {
                served = &mut served => return Ok(served?),
                () = &mut stop => return Ok(()),
                Some(()) = lift.recv() => {
                    let lifted = self.reenable();
                    // A client that stopped reading stderr must not end
                    // the proxy: the line is dropped then.
                    let _ = writeln!(
                        std::io::stderr(),
                        "rho-mcp proxy: SIGUSR1: lifted {lifted} quarantine(s)"
                    );
                }
            }
        }
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
        self.source.serve_one_client();
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
    /// The options do not fit together (a header for a stdio server, say).
    #[error("{0}")]
    Options(String),
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
            ProxyError::Policy(_)
            | ProxyError::Options(_)
            | ProxyError::Audit { .. }
            | ProxyError::Import(ImportError::Endpoint(_)) => 2,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options end up in logs (`{:?}`): an HTTP server's token and header
    /// values must not, its URL and header names may.
    #[test]
    fn the_debug_of_options_hides_the_token_and_header_values() {
        let options = ProxyOptions::http("http://tools.example.com/mcp")
            .bearer_token("token-s3cret")
            .header("X-Api-Key", "key-s3cret");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("tools.example.com"), "{shown}");
        assert!(shown.contains("X-Api-Key"), "{shown}");
    }
}
