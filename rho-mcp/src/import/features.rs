//! An imported server's resources, prompts and completions, served on:
//! the [`McpFeatures`] of a proxy, or of any host that serves what it
//! imports.
//!
//! rho governs tools; the rest it only carries. Each request goes to the
//! server as the client sent it, on the connection that client's requests
//! go on (the source's, or one of the client's own: see
//! `Server::conduit_for`; started again if the server died), and the
//! server's answer or error comes back as the server gave it, without
//! what only 2026-07-28 has for an older client. The source's timeout
//! bounds each request, so a server that hangs costs the client an error,
//! not a session.
//!
//! A server on 2026-07-28 may answer `prompts/get` or `resources/read`
//! with questions for its client (an input-required result). They go back
//! as they are: a client on that revision answers them and retries
//! itself, and rho's server asks an older client the way its revision
//! asks (requests on its session) and sends the request again with its
//! answers and the server's state, as for any host's features.

use std::future::Future;
use std::sync::{Arc, PoisonError};

use rho_tool_core::async_trait;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ResultType, ServerCapabilities,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
// Deprecated by SEP-2577 with the rest of logging; clients on 2025-11-25
// still set their level.
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{ErrorData, Peer, RoleClient, RoleServer};

use super::connection::speaks_2026;
use super::handler::Heard;
use super::server::{Server, Unavailable};
use crate::serve::{
    Audience, ClientSession, McpClient, McpFeatures, Notifier, SERVER_INFO, ToolShown, is_modern,
    severity,
};

/// The features of the server behind a source.
pub(crate) struct Forwarded {
    pub(crate) server: Arc<Server>,
}

impl Forwarded {
    /// Sends `request`, from the client of `context`, to the server on the
    /// source's runtime, within the source's timeout: the server's answer,
    /// or why there is none. It goes where that client's requests go
    /// ([`Server::conduit_for`]: a lane of its own for a client before
    /// 2026-07-28, when there are lanes), and `request` is given what is
    /// heard there (the followed resources, the log level).
    async fn forward<T, F, Fut>(
        &self,
        method: &'static str,
        context: &RequestContext<RoleServer>,
        request: F,
    ) -> Result<T, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(Peer<RoleClient>, Heard) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, ServiceError>> + Send + 'static,
    {
        let server = Arc::clone(&self.server);
        let timeout = server.settings.timeout;
        let client = (!is_modern(context)).then(|| McpClient::of_request(context));
        let reached = async move {
            let name = &server.name;
            let conduit = server
                .conduit_for(client.as_ref())
                .await
                .map_err(|unavailable| {
                    Refused::Failed(match unavailable {
                        Unavailable::Closed => format!("the MCP source `{name}` was closed"),
                        Unavailable::Quarantined(quarantine) => quarantine.to_string(),
                        Unavailable::StartFailed(why) => format!("MCP server `{name}` {why}"),
                    })
                })?;
            let asking = conduit.heard.asking.clone();
            let asked = request(conduit.connection.peer().clone(), conduit.heard);
            // A person the server asks meanwhile is not the server.
            match asking.within(timeout, asked).await {
                Some(Ok(answer)) => Ok(answer),
                Some(Err(ServiceError::McpError(error))) => Err(Refused::Server(error)),
                Some(Err(error)) => Err(Refused::Failed(format!(
                    "MCP server `{name}` did not answer it ({error})"
                ))),
                None => Err(Refused::Failed(format!(
                    "MCP server `{name}` did not answer it within {} ms",
                    timeout.as_millis()
                ))),
            }
        };
        // The outer `Err` is the source's runtime failing to run it.
        let answered =
            super::source::on_runtime(&self.server, async move { Ok(reached.await) }).await;
        match answered {
            Ok(Ok(answer)) => Ok(answer),
            // The server's own error, as it sent it.
            Ok(Err(Refused::Server(error))) => Err(error),
            Ok(Err(Refused::Failed(why))) => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("`{method}` failed: {why}"),
                None,
            )),
            Err(why) => Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, why, None)),
        }
    }
}

/// A result as rho's server sends it on: a server on a revision before
/// 2026-07-28 sends no `resultType`, which a client on 2026-07-28 needs;
/// the result is the complete one it says it is (rmcp leaves the field
/// out again for older clients).
trait Completed: Sized {
    fn completed(self) -> Self;

    /// The result as the client of `modern`'s revision reads it: complete,
    /// and for a client before 2026-07-28 without what only that revision
    /// has ([`without_later_fields`]); the proxy may be speaking 2026-07-28
    /// to its server whatever its client speaks.
    fn for_client(self, modern: bool) -> Self;
}

/// `result` without the fields a server adds at 2026-07-28 only: its
/// caching hints (`ttlMs`, `cacheScope`) and its identity in `_meta`.
/// A result rmcp cannot read back is left as it was.
fn without_later_fields<T: Serialize + DeserializeOwned>(result: T) -> T {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(&result) else {
        return result;
    };
    let hints = fields.remove("ttlMs").is_some() | fields.remove("cacheScope").is_some();
    let mut identity = false;
    if let Some(Value::Object(meta)) = fields.get_mut("_meta") {
        identity = meta.remove(SERVER_INFO).is_some();
        if meta.is_empty() {
            fields.remove("_meta");
        }
    }
    if !hints && !identity {
        return result;
    }
    serde_json::from_value(Value::Object(fields)).unwrap_or(result)
}

fn complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

macro_rules! completed {
    ($($result:ty),*) => {$(
        impl Completed for $result {
            fn completed(mut self) -> Self {
                complete(&mut self.result_type);
                self
            }

            fn for_client(self, modern: bool) -> Self {
                let completed = self.completed();
                if modern {
                    completed
                } else {
                    without_later_fields(completed)
                }
            }
        }
    )*};
}

completed!(
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    CompleteResult
);

impl Completed for ReadResourceResponse {
    fn completed(mut self) -> Self {
        if let ReadResourceResponse::Complete(result) = &mut self {
            complete(&mut result.result_type);
        }
        self
    }

    fn for_client(self, modern: bool) -> Self {
        match self.completed() {
            ReadResourceResponse::Complete(result) if !modern => {
                ReadResourceResponse::Complete(without_later_fields(result))
            }
            other => other,
        }
    }
}

impl Completed for GetPromptResponse {
    fn completed(mut self) -> Self {
        if let GetPromptResponse::Complete(result) = &mut self {
            complete(&mut result.result_type);
        }
        self
    }

    fn for_client(self, modern: bool) -> Self {
        match self.completed() {
            GetPromptResponse::Complete(result) if !modern => {
                GetPromptResponse::Complete(without_later_fields(result))
            }
            other => other,
        }
    }
}

/// The more verbose of the level asked `before` (if any) and `level`.
#[allow(deprecated)]
fn most_verbose(before: Option<LoggingLevel>, level: LoggingLevel) -> LoggingLevel {
    match before {
        Some(before) if severity(before) < severity(level) => before,
        _ => level,
    }
}

/// Why a forwarded request has no answer.
enum Refused {
    /// The server answered with an error.
    Server(ErrorData),
    /// The server could not be reached, broke the protocol, or hung: why,
    /// as a sentence.
    Failed(String),
}

#[async_trait]
impl McpFeatures for Forwarded {
    /// The tool as the server listed it on the source's connection.
    fn tool_listing(&self, name: &str) -> Option<crate::serve::ToolListing> {
        self.server.listing_of(name)
    }

    /// An older client with a connection of its own is shown this
    /// server's tools as the server listed them there, which declares
    /// what that client offered (a server may list a tool only to a
    /// client that can answer its questions); a tool listed there that
    /// the source's connection did not list is not the registry's, and
    /// not shown. Any other client, and any tool of another source, is
    /// shown as the source's connection (or the registry) has it.
    fn tool_shown(&self, name: &str, context: &RequestContext<RoleServer>) -> ToolShown {
        let Some(shared) = self.tool_listing(name) else {
            // Not this server's tool.
            return ToolShown::Recorded;
        };
        let on_lane = context
            .extensions
            .get::<ClientSession>()
            .and_then(|session| self.server.lane_listing_of(session.number, name));
        match on_lane {
            Some(Some(listing)) => ToolShown::Listed(listing),
            Some(None) => ToolShown::Hidden,
            None => ToolShown::Listed(shared),
        }
    }

    /// What the server declared of resources, prompts and completions
    /// (nothing before it first answered).
    fn capabilities(&self) -> ServerCapabilities {
        let declared = self.server.capabilities();
        let mut capabilities = ServerCapabilities::default();
        capabilities.resources = declared.resources;
        capabilities.prompts = declared.prompts;
        capabilities.completions = declared.completions;
        capabilities
    }

    /// What the server declared on the connection opened for this client
    /// (see [`Server::conduit_for`]), which is opened now: the client is
    /// told what its own session with the server has, as it would be
    /// directly (a server may declare otherwise at 2025-11-25 than at
    /// 2026-07-28, the revision of the shared connection). `None` for a
    /// client whose requests share the source's connection.
    async fn capabilities_for(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Option<ServerCapabilities> {
        let client = McpClient::of_request(&context);
        client.session()?;
        let server = Arc::clone(&self.server);
        let conduit = super::source::on_runtime(&self.server, async move {
            Ok(server.conduit_for(Some(&client)).await.ok())
        })
        .await
        .ok()
        .flatten()?;
        if conduit.heard.audience == Audience::Everyone {
            return None;
        }
        conduit
            .connection
            .server_info()
            .map(|info| info.capabilities.clone())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.forward("resources/list", &context, |peer, _| async move {
            peer.list_resources(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.forward("resources/templates/list", &context, |peer, _| async move {
            peer.list_resource_templates(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    /// The server's questions, if it answers with them, go back as they
    /// are: rho's server puts them to a client before 2026-07-28 and
    /// sends the request again with its answers.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.forward("resources/read", &context, |peer, _| async move {
            peer.read_resource_once(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward("resources/subscribe", &context, |peer, heard| async move {
            let followed = heard.followed;
            if speaks_2026(&peer) {
                // Such a server has no `resources/subscribe`: the source's
                // stream asks for the resource's updates from now on.
                followed.follow(request.uri);
                return Ok(());
            }
            // Carried for clients before 2026-07-28, which subscribe so.
            // Every subscribe goes to the server (it is idempotent there,
            // and renews one a restarted server forgot); it is counted so
            // that only the last unsubscribe goes too.
            let uri = request.uri.clone();
            #[allow(deprecated)]
            peer.subscribe(request).await?;
            followed.follow(uri);
            Ok(())
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward(
            "resources/unsubscribe",
            &context,
            |peer, heard| async move {
                let followed = heard.followed;
                if speaks_2026(&peer) {
                    followed.unfollow(&request.uri);
                    return Ok(());
                }
                // Another client may still follow it: the server hears of
                // the last unsubscribe only.
                if !followed.unfollow(&request.uri) {
                    return Ok(());
                }
                #[allow(deprecated)]
                peer.unsubscribe(request).await
            },
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.forward("prompts/list", &context, |peer, _| async move {
            peer.list_prompts(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    /// The server's questions go back as they are, as for
    /// `resources/read`.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.forward("prompts/get", &context, |peer, _| async move {
            peer.get_prompt_once(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.forward("completion/complete", &context, |peer, _| async move {
            peer.complete(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    /// The level goes to the server too, so it sends what the client
    /// asked for: set on a server before 2026-07-28, sent with each call
    /// to one on 2026-07-28. A client with a lane of its own (see
    /// [`Server::conduit_for`]) sets its lane's level, as it would set its
    /// session's directly. On the shared connection, with several clients
    /// (the proxy over HTTP) the server is asked for the most verbose
    /// level any of them asked for, and each client's session passes on
    /// only what its own level lets through: one client's `error` does not
    /// silence another's `debug`. That level is never made less verbose
    /// again (the source does not know when a client leaves), which costs
    /// messages nobody reads, never messages that are wanted.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        mut request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward("logging/setLevel", &context, |peer, heard| async move {
            {
                let mut asked = heard
                    .log_level
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if heard.audience == Audience::Everyone {
                    request.level = most_verbose(*asked, request.level);
                }
                *asked = Some(request.level);
            }
            // Set where the connection has it: a server may declare
            // logging on 2025-11-25 and not on 2026-07-28 (SEP-2577), and
            // on 2026-07-28 the level goes with each call instead.
            let logs = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.logging.is_some());
            if !logs || speaks_2026(&peer) {
                return Ok(());
            }
            peer.set_level(request).await
        })
        .await
    }

    /// What the server announces, as the source heard it.
    fn notifier(&self) -> Option<Notifier> {
        Some(self.server.heard.notifier.clone())
    }
}
