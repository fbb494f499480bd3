//! [`McpSource`]: an MCP server's tools as a source of a rho registry.

use rho_tool_core::Tool;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rho_process::confine::{Confinement, Launcher};
use rho_registry::{
    Accounting, ChangeSubscription, Disabled, QuarantineRule, Source, ToolRegistry,
};
use tokio::sync::oneshot;

use super::answering::{Answerer, Answering};
use super::connection::Limits;
use super::error::ImportError;
use super::features::Forwarded;
use super::handshake::Handshake;
use super::health::{Backoff, Health};
use super::http::HttpSpec;
use super::policy::ImportPolicy;
use super::runtime::{RuntimeThread, SourceRuntime};
use super::server::{Endpoint, Server, Settings};
use super::stdio::CommandSpec;
use crate::serve::McpFeatures;

impl McpSource {
    /// The largest message a server may write by default: 16 MiB.
    pub const DEFAULT_MAX_MESSAGE: usize = 16 << 20;
}
impl McpSource {
    /// How long a server has by default to start, answer `initialize` and
    /// list its tools: 30 s.
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
}

/// An MCP server imported into a [`ToolRegistry`] as an untrusted source.
///
/// Made by [`McpSource::stdio`] or [`McpSource::http`] and the builder's
/// `connect`; see the [module docs](super) for what a call of its tools
/// can rely on.
///
/// Dropping it (or [`close`](McpSource::close)) removes the source and
/// its tools from the registry and kills a stdio server's process group
/// (an HTTP server's session is closed);
/// calls in flight end with an error saying the source was closed. A host
/// that removes the source from the registry itself
/// ([`ToolRegistry::remove_source`]) gets the same.
pub struct McpSource {
    server: Arc<Server>,
    registry: ToolRegistry,
    accounting: Arc<Accounting>,
    _removal: ChangeSubscription,
}

impl McpSource {
    /// A builder for the stdio server started by running `program` (with
    /// the builder's arguments), named `name` in the registry and in every
    /// error text.
    pub fn stdio(name: impl Into<String>, program: impl Into<OsString>) -> McpSourceBuilder<Stdio> {
        McpSourceBuilder::new(
            name.into(),
            Stdio(CommandSpec {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                current_dir: None,
                confinement: None,
                launcher: None,
            }),
        )
    }

    /// A builder for the server at the streamable HTTP endpoint `url`
    /// (`http://host:port/mcp`), named `name` in the registry and in every
    /// error text. An `https://` URL needs the crate's `https` feature.
    ///
    /// An HTTP server is not a process of the host's: nothing is killed
    /// when the source goes, its session is closed (an HTTP `DELETE`, as
    /// the protocol asks). A request that cannot reach the server (nothing
    /// listens, the connection broke, an answer's stream broke) ends the
    /// connection as a death: the calls in flight on it end as crashed,
    /// and the next call connects again after the backoff, so an endpoint
    /// that stays down is quarantined like a stdio server that keeps
    /// dying. A call the server refuses in its own answer (an HTTP error,
    /// a response body past the cap) crashes alone.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> McpSourceBuilder<Http> {
        McpSourceBuilder::new(name.into(), Http(HttpSpec::new(url.into())))
    }

    /// The source's name.
    pub fn name(&self) -> &str {
        &self.server.name
    }

    /// The names of its tools the model can call now, sorted (a tool
    /// quarantined on its own, or all of them while the server is, are
    /// left out).
    pub fn tools(&self) -> Vec<String> {
        self.registry
            .tools()
            .into_iter()
            .filter(|tool| tool.source == self.server.name)
            .map(|tool| tool.name)
            .collect()
    }

    /// The accounting of its tools' calls (counts, last errors, each
    /// tool's quarantine).
    pub fn accounting(&self) -> &Arc<Accounting> {
        &self.accounting
    }

    /// The server's process id while it runs (it is started again on the
    /// next call after it died); `None` for an HTTP server.
    pub fn server_pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// The instructions for the model the server gave at `initialize`
    /// (the current one, or the last one that ran), if any.
    pub fn instructions(&self) -> Option<String> {
        self.server.server_info()?.instructions.clone()
    }

    /// Who the server said it is at `initialize` (or `server/discover`):
    /// its name, version, title, icons and website, as it gave them.
    pub fn server_identity(&self) -> Option<rmcp::model::Implementation> {
        self.server.server_info()?.server_info.clone()
    }

    /// What the server declared it serves (nothing before it first
    /// answered).
    pub fn server_capabilities(&self) -> rmcp::model::ServerCapabilities {
        self.server.capabilities()
    }

    /// The end of the server's stderr (the current one, or the last one
    /// that ran).
    pub fn stderr_tail(&self) -> String {
        self.server.stderr_tail()
    }

    /// How many times the server died or failed to start, and the text of
    /// the last time.
    pub fn deaths(&self) -> (u64, Option<String>) {
        self.server.health.deaths()
    }

    /// The quarantine of the whole server, while it kept dying.
    pub fn quarantine(&self) -> Option<Disabled> {
        self.server.health.quarantine()
    }

    /// Ends the server's quarantine: the next call starts it again.
    /// Returns whether it was quarantined.
    pub fn reenable(&self) -> bool {
        self.server.health.reenable()
    }

    /// Lists the server's tools again and makes them the source's (the
    /// source does so by itself when the server says they changed).
    ///
    /// # Errors
    ///
    /// [`ImportError::Server`] when the server could not be reached or
    /// did not list its tools; the tools listed before stay.
    pub async fn refresh(&self) -> Result<(), ImportError> {
        let server = Arc::clone(&self.server);
        on_runtime(&self.server, async move { server.refresh().await })
            .await
            .map_err(ImportError::Server)
    }

    /// The server's resources, resource templates, prompts and
    /// completions, to serve on beside its tools
    /// ([`McpServer::with_features`](crate::McpServer::with_features)):
    /// what a proxy offers its client. Each request goes to the server as
    /// it came, within the source's timeout, and its answer or error comes
    /// back as the server gave it; the capabilities are what the server
    /// declared of them.
    pub fn features(&self) -> Arc<dyn McpFeatures> {
        Arc::new(Forwarded {
            server: Arc::clone(&self.server),
        })
    }

    /// Gives each client before 2026-07-28 of the source's features and
    /// tools, when served over MCP, a connection to the server of its own,
    /// with a session of its own there, as it would have directly: for a
    /// source served to many clients at once (a proxy over HTTP).
    pub(crate) fn serve_older_clients_apart(&self) {
        self.server.lanes_for_all();
    }

    /// Serves the source's features and tools to one client (a proxy over
    /// stdio): in front of a server that speaks only 2025-11-25, the
    /// server is started again as that client initializes, told only what
    /// the client offered, as it would have been directly (when that is
    /// less than the source offers).
    pub(crate) fn serve_one_client(&self) {
        self.server.serve_one_client();
    }

    /// Closes the source now, as dropping it does.
    pub fn close(&self) {
        // Only this source: the host may have removed it and registered
        // another of the same name since.
        let registered = self.server.is_registered();
        self.server.close();
        if registered {
            self.registry.remove_source(&self.server.name);
        }
    }
}

impl Drop for McpSource {
    fn drop(&mut self) {
        self.close();
    }
}

impl fmt::Debug for McpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSource")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Runs `work` on the source's runtime and awaits it from any executor.
/// A caller that stops waiting (its future dropped: a client cancelled
/// the request it serves) stops the work too, so that what the work sent
/// the server is cancelled rather than waited for by nobody.
pub(crate) async fn on_runtime<T: Send + 'static>(
    server: &Server,
    work: impl Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    let (mut done, answer) = oneshot::channel();
    drop(server.runtime.handle().spawn(async move {
        let answered = tokio::select! {
            answered = work => answered,
            () = done.closed() => return,
        };
        let _ = done.send(answered);
    }));
    answer.await.unwrap_or_else(|_| {
        Err(if server.runtime.is_host() && !server.is_closed() {
            // The task panicked: tokio's own words on a runtime built
            // without IO or timers.
            format!(
                "the MCP source `{}` stopped on the host's tokio runtime without an answer \
                 (a source needs a runtime with IO and timers: build it with `enable_all`)",
                server.name
            )
        } else {
            format!("the MCP source `{}` was closed", server.name)
        })
    })
}

/// A stdio server to import: a program run as a child process. The kind of
/// endpoint of a [`McpSourceBuilder<Stdio>`].
#[derive(Debug, Clone)]
pub struct Stdio(CommandSpec);

/// A server at a streamable HTTP endpoint. The kind of endpoint of a
/// [`McpSourceBuilder<Http>`].
#[derive(Debug, Clone)]
pub struct Http(HttpSpec);

impl From<Stdio> for Endpoint {
    fn from(Stdio(command): Stdio) -> Self {
        Endpoint::Stdio(command)
    }
}

impl From<Http> for Endpoint {
    fn from(Http(spec): Http) -> Self {
        Endpoint::Http(spec)
    }
}

/// How to import an MCP server: made by [`McpSource::stdio`] or
/// [`McpSource::http`], finished by `connect`.
///
/// `K` is the kind of endpoint ([`Stdio`] or [`Http`]): what only one
/// kind has (a command's arguments, an HTTP header) is set only on a
/// builder of that kind.
#[derive(Debug)]
#[must_use = "a builder does nothing until `connect`"]
pub struct McpSourceBuilder<K = Stdio> {
    name: String,
    endpoint: K,
    timeout: Duration,
    prefix: String,
    max_message: usize,
    startup_timeout: Duration,
    rule: QuarantineRule,
    backoff: Backoff,
    accounting: Option<Arc<Accounting>>,
    forward_stderr: bool,
    handshake: Handshake,
    answering: Answering,
    host_runtime: Option<tokio::runtime::Handle>,
    max_concurrent_calls: Option<usize>,
}

impl<K> McpSourceBuilder<K> {
    fn new(name: String, endpoint: K) -> Self {
        Self {
            name,
            endpoint,
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
            prefix: String::new(),
            max_message: McpSource::DEFAULT_MAX_MESSAGE,
            startup_timeout: McpSource::DEFAULT_STARTUP_TIMEOUT,
            rule: QuarantineRule::after(3).within(Duration::from_secs(300)),
            backoff: Backoff::default(),
            accounting: None,
            forward_stderr: false,
            handshake: Handshake::default(),
            answering: Answering::default(),
            host_runtime: None,
            max_concurrent_calls: None,
        }
    }

    /// Runs the source's connection and calls on the host's tokio runtime
    /// (`handle`, one with IO and timers: `enable_all`; on one without,
    /// `connect` fails saying so) instead of a small runtime on a thread
    /// of the source's own.
    ///
    /// Each call then takes two fewer turns between threads (to the
    /// source's thread and back); a proxy, whose every call crosses, does
    /// this. Only for a tokio host whose runtime has threads to spare for
    /// the source's tasks (a multi-thread runtime); by default the source
    /// keeps to its own thread, which is what lets a smol host import
    /// servers.
    pub fn on_tokio_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.host_runtime = Some(handle);
        self
    }

    /// Every tool's rho timeout (default `<dyn Tool>::DEFAULT_TIMEOUT`), which holds
    /// whatever the server and the SDK would wait: at the deadline the call
    /// ends and the server is sent `notifications/cancelled`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Puts `prefix` before each tool's name in the registry (two servers
    /// with an `echo` each, say); the server is still called by its own
    /// names.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The largest message the server may send (default
    /// [`McpSource::DEFAULT_MAX_MESSAGE`]): one line of a stdio server, one response
    /// body or stream event of an HTTP server. A longer one is refused with
    /// no more of it held than this: on stdio it ends the connection as a
    /// protocol violation; over HTTP a response body past it crashes its
    /// call alone, and a stream event past it ends the connection (rmcp
    /// reports it as a broken stream).
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// How long the server has to start (or be reached) and answer
    /// `initialize`, and to answer each `tools/list` (default
    /// [`McpSource::DEFAULT_STARTUP_TIMEOUT`]).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// When the whole server is quarantined: at the rule's count of deaths
    /// and failed starts (default: 3 within 5 minutes).
    pub fn quarantine(mut self, rule: QuarantineRule) -> Self {
        self.rule = rule;
        self
    }

    /// How restarts after a death are spaced (default: [`Backoff::default`]).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The accounting the source's calls are counted in (default: a new
    /// [`Accounting::default`]); share one to see the health of several
    /// sources in one table.
    pub fn accounting(mut self, accounting: Arc<Accounting>) -> Self {
        self.accounting = Some(accounting);
        self
    }

    /// At most `calls` calls of this source's tools run on its server at
    /// once (default: no bound); the others wait their turn, in the order
    /// they came, with their clocks held (see
    /// [`ToolContext::pause_clock`](rho_tool_core::ToolContext::pause_clock)):
    /// the wait is the server's, not the tool's. For a server that cannot
    /// take parallel calls (one that handles a request at a time, or
    /// corrupts shared state when two overlap), `1` makes a turn's calls
    /// to it run one after another without the host arranging it. A call
    /// stopped while it waits (its deadline, an abort) leaves the queue;
    /// closing the source ends every waiting call. `0` counts as `1`.
    ///
    /// A call stopped while the server runs it frees its turn as rho sends
    /// the server `notifications/cancelled`: MCP's cancellation has no
    /// answer, so when the server really stops is its own.
    ///
    /// Without a bound from the host, the source takes the one its server
    /// declares, if it does: MCP has no field for it, so rho reads the
    /// experimental capability [`CONCURRENCY_CAPABILITY`](crate::CONCURRENCY_CAPABILITY)
    /// (which `rho-mcp proxy --max-concurrent-calls` and
    /// [`McpServer::advertise_max_concurrent_calls`](crate::McpServer::advertise_max_concurrent_calls)
    /// declare), as the first connection that declares it says it.
    pub fn max_concurrent_calls(mut self, calls: usize) -> Self {
        self.max_concurrent_calls = Some(calls.max(1));
        self
    }

    /// How the conversation with the server opens (default
    /// [`Handshake::Initialize`]): [`Handshake::Discover`] for a server
    /// that speaks only MCP 2026-07-28, [`Handshake::Either`] for one whose
    /// revision the host does not know. A server that restarts (or an
    /// HTTP server that forgets its session) is greeted the same way again.
    pub fn handshake(mut self, handshake: Handshake) -> Self {
        self.handshake = handshake;
        self
    }

    /// Who answers what the server asks its client while its tools run
    /// (the user through elicitation, the model through sampling, the
    /// roots): see [`Answerer`]. [`AskTheClient`](super::AskTheClient)
    /// passes each question on to the client of the served call it came
    /// in. Without one, the server is offered none of them.
    pub fn answerer(mut self, answerer: impl Answerer) -> Self {
        self.answering = Answering::new(Arc::new(answerer));
        self
    }

    /// Connects to the builder's endpoint, lists its tools and registers
    /// them.
    async fn connect_to(self, registry: &ToolRegistry) -> Result<McpSource, ImportError>
    where
        K: Into<Endpoint>,
    {
        let endpoint = self.endpoint.into();
        let name = self.name;
        let runtime = match self.host_runtime {
            Some(handle) => SourceRuntime::Host(handle),
            None => RuntimeThread::start(&name)
                .map(SourceRuntime::Own)
                .map_err(|error| ImportError::Runtime {
                    source_name: name.clone(),
                    error,
                })?,
        };
        let health = Arc::new(Health::new(name.clone(), self.rule, self.backoff));
        let accounting = self.accounting.unwrap_or_default();
        let policy = Arc::new(ImportPolicy {
            accounting: Arc::clone(&accounting),
            health: Arc::clone(&health),
        });
        let handle = registry.add_source(Source::untrusted(name.clone()).with_policy(policy))?;
        let settings = Settings {
            timeout: self.timeout,
            prefix: self.prefix,
            max_concurrent_calls: self.max_concurrent_calls,
            limits: Limits {
                max_message: self.max_message,
                startup_timeout: self.startup_timeout,
                forward_stderr: self.forward_stderr,
                handshake: self.handshake,
                answering: self.answering,
            },
        };
        let server = Arc::new(Server::new(
            name,
            endpoint,
            settings,
            runtime,
            health,
            handle.clone(),
        ));
        let first = Arc::clone(&server);
        if let Err(why) = on_runtime(&server, async move { first.refresh().await }).await {
            server.close();
            registry.remove_source(&server.name);
            return Err(ImportError::Server(why));
        }
        server.follow_tool_changes();
        // The host removing the source is the source closing.
        let watched: Weak<Server> = Arc::downgrade(&server);
        let removal = registry.on_tools_changed(move || {
            if let Some(server) = watched.upgrade()
                && !handle.is_registered()
            {
                server.close();
            }
        });
        Ok(McpSource {
            server,
            registry: registry.clone(),
            accounting,
            _removal: removal,
        })
    }
}

impl McpSourceBuilder<Stdio> {
    /// Adds an argument to the server's command.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.endpoint.0.args.push(arg.into());
        self
    }

    /// Adds arguments to the server's command.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.endpoint
            .0
            .args
            .extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the server.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.endpoint.0.env.push((key.into(), value.into()));
        self
    }

    /// Runs the server in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.endpoint.0.current_dir = Some(dir.into());
        self
    }

    /// Runs the server confined by the kernel
    /// ([`rho_process::confine`]): it reads, writes and reaches only what
    /// `confinement` allows (give it its program's directories to read:
    /// a Node server needs its package), gets the host's environment less
    /// the variables that look like secrets, and every process it starts
    /// ends with it. A server that cannot be confined as asked is not
    /// started: the import fails saying why.
    pub fn confined(mut self, confinement: Confinement) -> Self {
        self.endpoint.0.confinement = Some(Box::new(confinement));
        self
    }

    /// The launcher that confines the server. Default:
    /// [`Launcher::find`].
    pub fn launcher(mut self, launcher: Launcher) -> Self {
        self.endpoint.0.launcher = Some(launcher);
        self
    }

    /// Whether the server's stderr is also copied to this process's
    /// stderr as it comes (default: no; its end is kept for error texts
    /// either way). A proxy does, so that its client's logs still show
    /// what the server says there.
    pub fn forward_stderr(mut self, forward: bool) -> Self {
        self.forward_stderr = forward;
        self
    }

    /// Starts the server, shakes hands, lists its tools and registers them
    /// in `registry` as the untrusted source named after the builder.
    ///
    /// The returned future waits on a channel only: await it on any
    /// executor (tokio, smol, a plain `block_on`).
    ///
    /// # Errors
    ///
    /// [`ImportError::Registry`] when the name or a tool's name is taken;
    /// [`ImportError::Server`] when the server could not be started, did
    /// not answer in time, or broke the protocol; [`ImportError::Runtime`]
    /// when no thread could be started. Nothing is left behind.
    pub async fn connect(self, registry: &ToolRegistry) -> Result<McpSource, ImportError> {
        self.connect_to(registry).await
    }
}

impl McpSourceBuilder<Http> {
    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.endpoint.0.bearer = Some(token.into());
        self
    }

    /// Sends the header `name: value` with every request (an API key, say).
    /// A name or value HTTP does not allow fails `connect`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.endpoint.0.headers.push((name.into(), value.into()));
        self
    }

    /// Authorizes with OAuth 2.1 when the server asks (MCP's
    /// authorization): see [`OAuth`](super::OAuth). Without it, a server
    /// that answers `401` fails `connect`, saying so.
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: super::OAuth) -> Self {
        self.endpoint.0.oauth = Some(Arc::new(super::oauth::Authorization::new(oauth)));
        self
    }

    /// Reaches the server, shakes hands, lists its tools and registers
    /// them in `registry` as the untrusted source named after the builder.
    ///
    /// The returned future waits on a channel only: await it on any
    /// executor (tokio, smol, a plain `block_on`).
    ///
    /// # Errors
    ///
    /// [`ImportError::Endpoint`] when the URL or a header is not usable
    /// (checked before anything is sent); [`ImportError::Registry`] when
    /// the name or a tool's name is taken; [`ImportError::Server`] when the
    /// server could not be reached, did not answer in time, or broke the
    /// protocol; [`ImportError::Runtime`] when no thread could be started.
    /// Nothing is left behind.
    pub async fn connect(self, registry: &ToolRegistry) -> Result<McpSource, ImportError> {
        self.endpoint.0.check().map_err(ImportError::Endpoint)?;
        self.connect_to(registry).await
    }
}
