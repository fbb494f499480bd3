//! Servers behind OAuth 2.1, MCP's authorization: rmcp does the protocol
//! (discovery from the server's `401`, client registration, PKCE, the
//! token exchange, refreshing); the host does what only it can, sending
//! its user to the authorization page.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use std::pin::Pin;

use futures_core::Stream;
use http::{HeaderName, HeaderValue};
use rho_tool_core::async_trait;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// A stream of SSE events, as rmcp's HTTP client returns it.
type Events = Pin<Box<dyn Stream<Item = Result<Sse, SseError>> + Send>>;

/// The host's part of an OAuth authorization: having its user approve
/// rho at the authorization server.
///
/// Called when a server answers `401` (and again if it later refuses the
/// token rho holds and no refresh helps). A desktop host opens `url` in
/// the user's browser and waits for the redirect to its redirect URI (a
/// listener on loopback, say); a host with no user fails.
#[async_trait]
pub trait Authorize: Send + Sync + 'static {
    /// Has the user approve rho at `url`, the authorization server's page
    /// for this request, and returns the URL the server redirected back to
    /// (the redirect URI with its `code`, `state` and perhaps `iss`).
    ///
    /// # Errors
    ///
    /// Why there is no approval, as a sentence (the user declined, no one
    /// answered): `connect`, or the call that needed the server, fails
    /// with it.
    async fn authorize(&self, url: String) -> Result<String, String>;
}

/// How an import authorizes with a server behind OAuth 2.1, set by
/// [`McpSourceBuilder::oauth`](super::McpSourceBuilder::oauth).
///
/// Nothing happens until the server asks: its `401` says where its
/// authorization server is and which scopes it wants. rho then registers
/// itself as a client (pre-registered, by a client ID metadata document,
/// or by dynamic registration, in that order of preference, as far as the
/// authorization server offers each), has the host's [`Authorize`] send
/// the user to approve, exchanges the code for a token (PKCE), and
/// connects again with it. Tokens are refreshed when they expire; they
/// live as long as the source, in memory only.
///
/// ```no_run
/// use rho_mcp::import::{Authorize, McpSource, OAuth};
/// use rho_registry::ToolRegistry;
/// use rho_tool_core::async_trait;
///
/// /// Shows the page to the user and waits for the browser to come back.
/// struct AskTheUser;
///
/// #[async_trait]
/// impl Authorize for AskTheUser {
///     async fn authorize(&self, url: String) -> Result<String, String> {
///         println!("Open {url} to let the agent use the server");
///         // A desktop host listens on the redirect URI's port here and
///         // returns the URL the browser requested.
///         Err("no one is at the keyboard".into())
///     }
/// }
///
/// # async fn host() -> Result<(), rho_mcp::import::ImportError> {
/// let registry = ToolRegistry::new();
/// let source = McpSource::http("tickets", "https://mcp.example.com/mcp")
///     .oauth(OAuth::new("http://127.0.0.1:8976/callback", AskTheUser).client_name("my agent"))
///     .connect(&registry)
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuth {
    redirect_uri: String,
    authorize: Arc<dyn Authorize>,
    client_name: String,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Vec<String>,
}

impl fmt::Debug for OAuth {
    /// Never shows the client secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<hidden>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Authorizes by sending the user to approve with `authorize`, and
    /// asking the authorization server to redirect back to `redirect_uri`.
    /// rho registers itself dynamically, named "rho", unless told
    /// otherwise.
    pub fn new(redirect_uri: impl Into<String>, authorize: impl Authorize) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(authorize),
            client_name: "rho".to_owned(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            scopes: Vec::new(),
        }
    }

    /// The name rho registers under dynamically (default "rho"), which the
    /// user sees when asked to approve.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// A client registered with the authorization server beforehand: its
    /// ID, and its secret when it is a confidential client. Preferred to
    /// every other way of registering.
    #[must_use]
    pub fn preregistered(mut self, client_id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// The `https://` URL of the host's client ID metadata document, used
    /// as its client ID where the authorization server accepts those
    /// (instead of registering dynamically).
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scopes to ask for. By default rho asks for what the server's
    /// `401` names, else what it says it supports.
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// A source's OAuth state, shared by its connections: the configuration,
/// and rmcp's authorized HTTP client once the first connection made it.
pub(crate) struct Authorization {
    oauth: OAuth,
    client: tokio::sync::OnceCell<AuthClient<reqwest::Client>>,
    /// Held while an authorization runs, so that requests refused at once
    /// cause one approval, not one each; counts the approvals.
    approvals: tokio::sync::Mutex<u64>,
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorization")
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    pub(crate) fn new(oauth: OAuth) -> Self {
        Self {
            oauth,
            client: tokio::sync::OnceCell::new(),
            approvals: tokio::sync::Mutex::new(0),
        }
    }

    /// The HTTP client for the server at `url`: rmcp's, which sends the
    /// token and refreshes it, inside one that authorizes when the server
    /// asks.
    ///
    /// # Errors
    ///
    /// When rmcp cannot make its client (a URL it cannot use).
    pub(crate) async fn client(self: &Arc<Self>, url: &str) -> Result<Authorizing, String> {
        let inner = self
            .client
            .get_or_try_init(|| async {
                AuthorizationManager::new(url)
                    .await
                    .map(|manager| AuthClient::new(reqwest::Client::default(), manager))
                    .map_err(|error| format!("OAuth could not start: {error}"))
            })
            .await?
            .clone();
        Ok(Authorizing {
            inner,
            authorization: Arc::clone(self),
            url: url.into(),
        })
    }

    /// Runs an authorization for the server at `url` from its `challenge`
    /// (a `WWW-Authenticate` value), asking for `scopes` (none: what the
    /// challenge and the server's metadata say), and has `client` send its
    /// token from then on. Does nothing when another request's
    /// authorization ended since `seen` approvals.
    ///
    /// # Errors
    ///
    /// What failed, as a sentence: discovery, registration, the host's
    /// [`Authorize`], the token exchange.
    async fn authorize(
        &self,
        client: &AuthClient<reqwest::Client>,
        url: &str,
        challenge: &str,
        scopes: Vec<String>,
        seen: u64,
    ) -> Result<(), String> {
        let mut approvals = self.approvals.lock().await;
        if *approvals != seen {
            return Ok(());
        }
        let oauth = &self.oauth;
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|error| format!("OAuth could not start: {error}"))?;
        let metadata = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(|error| format!("OAuth discovery failed: {error}"))?;
        manager.set_metadata(metadata.metadata);
        let scopes = if scopes.is_empty() {
            oauth.scopes.clone()
        } else {
            scopes
        };
        let mut request = AuthorizationRequest::new(oauth.redirect_uri.clone())
            .with_challenge(challenge)
            .with_client_name(oauth.client_name.clone())
            .with_scopes(scopes);
        if let Some(id) = &oauth.client_id {
            request = request.with_preregistered_client(id.clone());
        }
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret.clone());
        }
        if let Some(document) = &oauth.client_metadata_url {
            request = request.with_client_metadata_url(document.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| format!("OAuth registration failed: {error}"))?;
        let redirected = oauth
            .authorize
            .authorize(session.get_authorization_url().to_owned())
            .await
            .map_err(|why| format!("OAuth authorization was not given: {why}"))?;
        session
            .handle_callback_url(&redirected)
            .await
            .map_err(|error| format!("OAuth token exchange failed: {error}"))?;
        *client.auth_manager.lock().await = session.auth_manager;
        *approvals += 1;
        Ok(())
    }

    async fn approvals(&self) -> u64 {
        *self.approvals.lock().await
    }
}

/// rmcp's OAuth HTTP client, which authorizes when the server asks: a
/// request refused for want of a token (`401`, once refreshing did not
/// help) or of a scope (`403`) starts an authorization, and is sent once
/// more after it.
#[derive(Clone)]
pub(crate) struct Authorizing {
    inner: AuthClient<reqwest::Client>,
    authorization: Arc<Authorization>,
    url: Arc<str>,
}

/// The error of rmcp's HTTP client.
type HttpError = StreamableHttpError<reqwest::Error>;

impl Authorizing {
    /// Runs `request`; when the server refuses it for want of
    /// authorization, authorizes and runs it once more.
    async fn authorized<T, F, Fut>(&self, request: F) -> Result<T, HttpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let seen = self.authorization.approvals().await;
        let (challenge, scopes) = match request().await {
            Err(StreamableHttpError::AuthRequired(required)) => {
                (required.www_authenticate_header, Vec::new())
            }
            Err(StreamableHttpError::InsufficientScope(refused)) => {
                // Ask for what was granted and what is missing, so that the
                // new token does not lose what the old one could do.
                let mut scopes = self
                    .inner
                    .auth_manager
                    .lock()
                    .await
                    .get_current_scopes()
                    .await;
                scopes.extend(refused.required_scope.iter().flat_map(|required| {
                    required
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                }));
                scopes.sort();
                scopes.dedup();
                (refused.www_authenticate_header, scopes)
            }
            answered => return answered,
        };
        self.authorization
            .authorize(&self.inner, &self.url, &challenge, scopes, seen)
            .await
            .map_err(|why| StreamableHttpError::UnexpectedServerResponse(why.into()))?;
        request().await
    }
}

impl StreamableHttpClient for Authorizing {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(|| {
            self.inner.post_message(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(|| {
            self.inner.post_message_with_response_limits(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, HttpError> {
        self.authorized(|| {
            self.inner.get_stream(
                Arc::clone(&uri),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, HttpError> {
        self.authorized(|| {
            self.inner.get_stream_with_max_sse_event_size(
                Arc::clone(&uri),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
