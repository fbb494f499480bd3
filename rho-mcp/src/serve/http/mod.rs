//! Serving over MCP's streamable HTTP, safe by default.
//!
//! - **Loopback unless told otherwise.** [`HttpOptions::new`] binds
//!   `127.0.0.1` (a port the system picks); a host that binds anything
//!   else must set a bearer token, or [`McpServer::serve_http`] refuses
//!   to start.
//! - **DNS rebinding.** The `Host` header must name the server (loopback
//!   names, the bound address, the hosts the host allows), and a request
//!   that carries an `Origin` (a browser's) must come from a loopback
//!   origin or one the host allows; others get `403`.
//! - **Bounded.** A request body is at most [`HttpOptions::DEFAULT_MAX_BODY_BYTES`]
//!   unless set otherwise (`413` beyond); a session has at most its
//!   server's calls in flight ([`McpServer::with_max_calls_per_session`]).
//! - **Malformed JSON-RPC** gets a JSON-RPC error, and the server goes on.
//! - **A session that ends aborts its calls.** A client's `DELETE` (or
//!   the session's expiry after five idle minutes) aborts its calls in
//!   flight at once.
//! - **A client that vanishes has its calls cancelled.** A request whose
//!   answer stream the client closes (it crashed or gave up) is
//!   cancelled unless the client resumes the stream within
//!   [`HttpOptions::with_resume_grace`] (10 s by default), as MCP lets it.
//!
//! Sessions are MCP's (`Mcp-Session-Id`): each is a [`Session`](crate::Session)
//! of the server, with its own `tools/list_changed` stream.

mod bearer;
mod malformed;
mod sessions;
mod vanished;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rho_tool_core::Executor;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use self::sessions::ClosingSessions;
use super::server::McpServer;
use crate::error::ServeError;

impl HttpOptions {
    /// The largest request body accepted by default: 4 MiB.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
}

/// Where and how [`McpServer::serve_http`] serves.
///
/// ```
/// use rho::mcp::HttpOptions;
///
/// // Loopback, a port the system picks, at `/mcp`: the default.
/// let local = HttpOptions::new();
/// // Reachable from other machines: a bearer token is required, and the
/// // name clients use must be allowed.
/// let public = HttpOptions::new()
///     .bind("0.0.0.0:8080".parse().unwrap())
///     .with_bearer_token("a long random secret")
///     .allow_host("tools.example.com");
/// # let _ = (local, public);
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    addr: SocketAddr,
    path: String,
    bearer_token: Option<Arc<str>>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    max_body_bytes: usize,
    resume_grace: Duration,
}

impl HttpOptions {
    /// `127.0.0.1`, a port the system picks, at `/mcp`, no token, bodies
    /// up to [`HttpOptions::DEFAULT_MAX_BODY_BYTES`].
    pub fn new() -> Self {
        Self {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            path: "/mcp".to_owned(),
            bearer_token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: HttpOptions::DEFAULT_MAX_BODY_BYTES,
            resume_grace: vanished::DEFAULT_RESUME_GRACE,
        }
    }

    /// Listens on `addr`. An address that is not loopback needs
    /// [`with_bearer_token`](HttpOptions::with_bearer_token).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Serves MCP at `path` (default `/mcp`).
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(Arc::from(token.into()));
        self
    }

    /// Accepts requests whose `Host` is `host` (a name, or `name:port`),
    /// besides loopback names and the bound address.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts browser requests from `origin` (`https://app.example.com`,
    /// `:*` for any port), besides loopback origins.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Refuses request bodies over `bytes` with `413`.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a call whose client closed its answer stream (the
    /// client crashed or gave up) waits for the client to resume
    /// that stream, as MCP lets a client do, before it is cancelled
    /// (aborted, and not charged to the tool). Default: 10 s, longer than
    /// the SDKs' reconnection delays. `Duration::ZERO` cancels at once, as
    /// MCP's newest revision reads a closed stream.
    pub fn with_resume_grace(mut self, grace: Duration) -> Self {
        self.resume_grace = grace;
        self
    }

    /// Why these options are unsafe to serve with, if they are.
    fn check(&self) -> Result<(), ServeError> {
        if self.bearer_token.as_deref().is_some_and(str::is_empty) {
            return Err(ServeError::Unsafe("the bearer token is empty".to_owned()));
        }
        if !self.addr.ip().is_loopback() && self.bearer_token.is_none() {
            return Err(ServeError::Unsafe(format!(
                "{} is not a loopback address: anyone who reaches it could call the tools, \
                 so a bearer token is required (HttpOptions::with_bearer_token)",
                self.addr.ip()
            )));
        }
        if !self.path.starts_with('/') {
            return Err(ServeError::Unsafe(format!(
                "the path `{}` does not start with `/`",
                self.path
            )));
        }
        Ok(())
    }

    /// rmcp's configuration: host and origin checks, the body bound.
    fn rmcp_config(
        &self,
        bound: SocketAddr,
        stop: CancellationToken,
    ) -> StreamableHttpServerConfig {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).into();
        if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
            hosts.push(bound.ip().to_string());
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        let mut origins: Vec<String> =
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(str::to_owned)
                .into();
        origins.extend(self.allowed_origins.iter().cloned());
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_cancellation_token(stop)
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("path", &self.path)
            // Never print the secret.
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<set>"))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("resume_grace", &self.resume_grace)
            .finish()
    }
}

/// A running streamable HTTP server. Dropping it stops the server: keep it
/// for as long as the server should serve.
pub struct HttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
    task: JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// The address it listens on (with the port the system picked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL clients connect to, e.g. `http://127.0.0.1:41234/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Stops accepting, ends every session (aborting their calls) and waits
    /// for the server to stop.
    ///
    /// # Errors
    ///
    /// [`ServeError::Io`] when the server had failed, [`ServeError::Task`]
    /// when its task did.
    pub async fn shutdown(self) -> Result<(), ServeError> {
        self.stop.cancel();
        self.task.await??;
        Ok(())
    }
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("url", &self.url())
            .field("stopped", &self.stop.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl<E: Executor> McpServer<E> {
    /// Serves over MCP's streamable HTTP, as `options` say, on a task of
    /// the current tokio runtime; returns once it listens.
    ///
    /// # Errors
    ///
    /// [`ServeError::Unsafe`] when the options are unsafe (an address off
    /// loopback without a bearer token, say); [`ServeError::Io`] when the
    /// address cannot be bound.
    pub async fn serve_http(&self, options: HttpOptions) -> Result<HttpServer, ServeError> {
        options.check()?;
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let router = self.http_router(&options, addr, stop.child_token());
        let until = stop.clone().cancelled_owned();
        // An answer is written in small pieces (headers, an event, the
        // stream's end): without TCP_NODELAY, Nagle's algorithm holds the
        // last piece back until the client's delayed ACK, some 40 ms a
        // call on a kept-alive connection (a load balancer's, say).
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            // A socket that refuses the option still serves, slower.
            let _ = stream.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(until)
                .await
        });
        Ok(HttpServer {
            addr,
            path: options.path,
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
            task,
        })
    }

    /// The axum router that serves MCP at `options`' path, with its safety
    /// checks, for a server bound at `bound`; `stop` ends its sessions.
    fn http_router(
        &self,
        options: &HttpOptions,
        bound: SocketAddr,
        stop: CancellationToken,
    ) -> Router {
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.session()),
            Arc::new(ClosingSessions::new(options.resume_grace, stop.clone())),
            options.rmcp_config(bound, stop),
        );
        // Layers run outside in: the token first, then the body's shape,
        // then rmcp (with its host and origin checks).
        let router = Router::new().nest_service(&options.path, service).layer(
            axum::middleware::from_fn_with_state(options.max_body_bytes, malformed::guard),
        );
        match &options.bearer_token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(
                token.clone(),
                bearer::require,
            )),
            None => router,
        }
    }
}
