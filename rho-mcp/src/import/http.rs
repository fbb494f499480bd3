//! A server at a streamable HTTP endpoint.
//!
//! rmcp's HTTP client does the protocol (sessions, SSE streams, a new
//! session when the server forgets the old one). What it leaves open, this
//! module closes, so that an HTTP server gets the same contract as a child
//! process:
//!
//! - **A connection that fails is dead.** A request that cannot reach
//!   the server (nothing listens, the connection broke or timed out) ends
//!   the connection, with a text saying what failed; every call in flight
//!   on it ends as crashed at that moment, and the next call connects
//!   again, after the backoff, so a server that stays down is quarantined
//!   like a child that keeps dying. So does an answer's stream that
//!   breaks before the answer (rmcp cannot tell a server that went away
//!   from one that sent an event past the cap, and a session whose server
//!   came back may not recover). So does a session the server no longer
//!   knows: rmcp then starts a new one and answers the requests still
//!   waiting with an error of its own, which is the server's death, not
//!   its answer. A request the server refuses or botches
//!   in its own answer (an HTTP error status, a body past the cap)
//!   crashes that call alone.
//! - **A broken stream is retried briefly.** rmcp would reconnect a
//!   response stream for ever; here three times, after 50, 100 and 200 ms
//!   ([`BriefRetry`]), then the call's answer is lost and the call
//!   crashes. A server's own `retry` hint can lengthen each wait, and a
//!   stream that reconnects and breaks again starts the count afresh; the
//!   call's rho deadline bounds it all.
//! - **Bounded, strict answers.** A response or event past the message cap
//!   is refused before it is read whole, and an answer to a request id
//!   that was never sent ends the connection, as on stdio.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio::sync::watch;

use super::connection::{Connection, Death, DeathSender, Limits, Remote, publish};
use super::handler::Heard;
use super::transport::SentIds;

/// Where an HTTP server is and what to send it with each request.
#[derive(Clone)]
pub(crate) struct HttpSpec {
    /// An `http://` or `https://` URL, checked by [`HttpSpec::check`].
    pub(crate) url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub(crate) bearer: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    /// OAuth, when the host set it up: shared by the source's
    /// connections, so that one approval serves them all.
    #[cfg(feature = "oauth")]
    pub(crate) oauth: Option<Arc<super::oauth::Authorization>>,
}

impl std::fmt::Debug for HttpSpec {
    /// Never shows the token or the headers' values (which may hold keys).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSpec")
            .field("url", &self.url)
            .field("bearer", &self.bearer.as_ref().map(|_| "<hidden>"))
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HttpSpec {
    /// The server at `url`, with nothing sent but MCP.
    pub(crate) fn new(url: String) -> Self {
        Self {
            url,
            bearer: None,
            headers: Vec::new(),
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// Checks the URL and the headers before anything is started.
    ///
    /// # Errors
    ///
    /// What is wrong, as a sentence.
    pub(crate) fn check(&self) -> Result<(), String> {
        let uri: http::Uri = self
            .url
            .parse()
            .map_err(|error| format!("`{}` is not a URL ({error})", self.url))?;
        match uri.scheme_str() {
            Some(scheme) if scheme.eq_ignore_ascii_case("http") => {}
            Some(scheme) if scheme.eq_ignore_ascii_case("https") => {
                if !cfg!(feature = "https") {
                    return Err(format!(
                        "`{}` needs TLS, and rho-mcp was built without its `https` feature",
                        self.url
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "`{}` is not an `http://` or `https://` URL",
                    self.url
                ));
            }
        }
        if uri.authority().is_none() {
            return Err(format!("`{}` names no host", self.url));
        }
        self.header_map().map(drop)
    }

    fn header_map(&self) -> Result<HashMap<HeaderName, HeaderValue>, String> {
        self.headers
            .iter()
            .map(|(name, value)| {
                let header = HeaderName::try_from(name.as_str())
                    .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
                let value = HeaderValue::try_from(value.as_str())
                    .map_err(|_| format!("the value of header `{name}` is not a header value"))?;
                Ok((header, value))
            })
            .collect()
    }
}

/// How often a broken response stream is reconnected: three times, after
/// 50, 100 and 200 ms.
///
/// A server may close a stream on purpose and expect the client to resume
/// it (the client sends `Last-Event-ID`), so one break is not a death;
/// but a server that is gone must not hold a call until its deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BriefRetry;

impl BriefRetry {
    const TRIES: usize = 3;
    const FIRST: Duration = Duration::from_millis(50);
}

impl SseRetryPolicy for BriefRetry {
    fn retry(&self, tries: usize) -> Option<Duration> {
        (tries < Self::TRIES).then(|| Self::FIRST * (1 << tries))
    }
}

/// Whether `error` (a request's, from rmcp's HTTP transport) is the
/// connection failing (nothing listens, the connection broke or timed
/// out), rather than the server refusing or botching one request (an
/// HTTP error status, an answer past the cap, a body that is not MCP).
pub(crate) fn is_connection_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(client)) => {
            client.is_connect() || client.is_request() || client.is_timeout()
        }
        Some(StreamableHttpError::Io(_)) => true,
        _ => false,
    }
}

/// The text rmcp's HTTP client answers a request with, itself, when the
/// server no longer knows the session (it restarted, say) and rmcp starts
/// a new one: the request's answer will never come.
const SESSION_LOST: &str = "streamable HTTP session was re-initialized before the response arrived";

/// Whether `message` is rmcp's own word that the server lost the session
/// under a request, rather than the server's answer: the connection's
/// death, not that request's failure.
fn is_session_lost(message: &ServerJsonRpcMessage) -> bool {
    matches!(message, ServerJsonRpcMessage::Error(error)
        if error.error.code == rmcp::model::ErrorCode::INTERNAL_ERROR
            && error.error.message == SESSION_LOST)
}

/// The HTTP side of a connection: where its death is published, by the
/// transport (its end, an answer nobody asked for) and by the connection
/// (a failed request, the host closing it).
#[derive(Clone)]
pub(crate) struct HttpPeer {
    url: String,
    died: Arc<DeathSender>,
}

impl HttpPeer {
    /// Publishes the connection's death, unless it died already.
    fn die(&self, what: String, deliberate: bool) {
        publish(
            &self.died,
            Death {
                what,
                stderr: String::new(),
                deliberate,
            },
        );
    }

    /// A request failed in the transport: the connection is dead.
    pub(crate) fn unreachable(&self, what: &str) {
        self.die(format!("failed over HTTP at {} ({what})", self.url), false);
    }

    /// The host closed the connection: the death of nobody's fault, which
    /// ends the watchers and the calls still waiting.
    pub(crate) fn closed(&self) {
        self.die("was disconnected by the host".to_owned(), true);
    }
}

/// Connects to the server at `spec` and shakes hands with it.
///
/// # Errors
///
/// Why it could not be reached, as the end of a sentence about the server.
pub(crate) async fn start(
    spec: &HttpSpec,
    limits: Limits,
    heard: Heard,
) -> Result<Connection, String> {
    // A server behind OAuth is reached through a client that authorizes
    // when the server asks.
    #[cfg(feature = "oauth")]
    if let Some(oauth) = &spec.oauth {
        let client = oauth.client(&spec.url).await?;
        let transport = |config| StreamableHttpClientTransport::with_client(client, config);
        return connect(spec, transport, limits, heard).await;
    }
    let transport = |config| StreamableHttpClientTransport::from_config(config);
    connect(spec, transport, limits, heard).await
}

/// Makes rmcp's transport for `spec` with `transport` (over the HTTP
/// client of the caller's choice) and shakes hands over it.
async fn connect<C, F>(
    spec: &HttpSpec,
    transport: F,
    limits: Limits,
    heard: Heard,
) -> Result<Connection, String>
where
    C: StreamableHttpClient + 'static,
    F: FnOnce(StreamableHttpClientTransportConfig) -> StreamableHttpClientTransport<C>,
{
    // The spec was checked when the source was built; the headers are
    // made again for each connection.
    let mut config = StreamableHttpClientTransportConfig::with_uri(spec.url.as_str())
        .custom_headers(spec.header_map()?)
        .max_json_response_size(limits.max_message)
        .max_sse_event_size(limits.max_message)
        .reinit_on_expired_session(true);
    config.retry_config = Arc::new(BriefRetry);
    if let Some(token) = &spec.bearer {
        config = config.auth_header(token.clone());
    }
    let (died_tx, died) = watch::channel(None);
    let peer = HttpPeer {
        url: spec.url.clone(),
        died: Arc::new(died_tx),
    };
    let transport = Checked {
        inner: transport(config),
        sent: SentIds::default(),
        peer: peer.clone(),
    };
    Connection::handshake(transport, Remote::Http(peer), died, limits, heard).await
}

/// rmcp's HTTP transport, watched: its end is the connection's death, and
/// an answer to a request that was never sent ends it.
struct Checked<T> {
    inner: T,
    sent: SentIds,
    peer: HttpPeer,
}

impl<T> Transport<RoleClient> for Checked<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.sent.record(&message);
        self.inner.send(message)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let Some(message) = self.inner.receive().await else {
            let url = &self.peer.url;
            self.peer
                .die(format!("closed its HTTP session at {url}"), false);
            return None;
        };
        if is_session_lost(&message) {
            let url = &self.peer.url;
            self.peer.die(
                format!(
                    "no longer knew its HTTP session at {url} (it was restarted, say), so the \
                     answers still awaited there will not come"
                ),
                false,
            );
            return None;
        }
        if let Some(id) = self.sent.unsent_answer(&message) {
            let url = &self.peer.url;
            self.peer.die(
                format!(
                    "answered request id {id} over HTTP at {url}, which it was never sent; so \
                     the connection was closed"
                ),
                false,
            );
            return None;
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
