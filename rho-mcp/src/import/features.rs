//! An imported server's resources, prompts and completions, served on:
//! the [`McpFeatures`] of a proxy, or of any host that serves what it
//! imports.
//!
//! rho governs tools; the rest it only carries. Each request goes to the
//! server as the client sent it, on the source's connection (started
//! again if the server died), and the server's answer or error comes back
//! as the server gave it. The source's timeout bounds each request, so a
//! server that hangs costs the client an error, not a session.
//!
//! One thing is translated, not carried: a server on 2026-07-28 may answer
//! `prompts/get` or `resources/read` with questions for its client (an
//! input-required result). A client on that revision answers them and
//! retries itself, so it gets the result as it is; an older client cannot
//! read one, so rho asks it the questions the way its revision asks
//! (requests on its session: elicitation, sampling, roots) and sends the
//! request again with its answers and the server's state.

use std::future::Future;
use std::sync::{Arc, PoisonError};

use rho_tool_core::async_trait;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    InputRequiredResult, InputResponses, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResultType, ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
// Deprecated by SEP-2577 with the rest of logging; clients on 2025-11-25
// still set their level.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{ErrorData, Peer, RoleClient, RoleServer};

use super::call::QUESTION_ROUNDS;
use super::connection::speaks_2026;
use super::server::{Server, Unavailable};
use crate::serve::{McpClient, McpFeatures, Notifier, SERVER_INFO, is_modern, severity};

/// The features of the server behind a source.
pub(crate) struct Forwarded {
    pub(crate) server: Arc<Server>,
}

impl Forwarded {
    /// Sends `request` to the server on the source's runtime, within the
    /// source's timeout: the server's answer, or why there is none.
    async fn forward<T, F, Fut>(&self, method: &'static str, request: F) -> Result<T, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(Peer<RoleClient>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, ServiceError>> + Send + 'static,
    {
        let server = Arc::clone(&self.server);
        let timeout = server.settings.timeout;
        let reached = async move {
            let name = &server.name;
            let connection = server.connection().await.map_err(|unavailable| {
                Refused::Failed(match unavailable {
                    Unavailable::Closed => format!("the MCP source `{name}` was closed"),
                    Unavailable::Quarantined(quarantine) => quarantine.to_string(),
                    Unavailable::StartFailed(why) => format!("MCP server `{name}` {why}"),
                })
            })?;
            match tokio::time::timeout(timeout, request(connection.peer().clone())).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(ServiceError::McpError(error))) => Err(Refused::Server(error)),
                Ok(Err(error)) => Err(Refused::Failed(format!(
                    "MCP server `{name}` did not answer it ({error})"
                ))),
                Err(_) => Err(Refused::Failed(format!(
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

    /// Forwards `request`, a request the server may answer with questions
    /// for the client that sent it (`context`'s): a client on 2026-07-28
    /// gets them as they are, an older one is asked them on its session
    /// and the request goes again with its answers, for at most
    /// [`QUESTION_ROUNDS`] rounds.
    async fn forward_asking<R: Asks>(
        &self,
        mut request: R,
        context: &RequestContext<RoleServer>,
    ) -> Result<R::Response, ErrorData> {
        let modern = is_modern(context);
        for _ in 0..QUESTION_ROUNDS {
            let sent = request.clone();
            let response = self.forward(R::METHOD, |peer| sent.send(peer)).await?;
            let asked = match R::questions(response) {
                Err(answer) => return Ok(answer.for_client(modern)),
                Ok(asked) if modern => return Ok(R::Response::from(asked)),
                Ok(asked) => asked,
            };
            let questions = asked.input_requests.unwrap_or_default().into();
            let answers = McpClient::of_request(context)
                .ask(questions)
                .await
                .map_err(|error| {
                    ErrorData::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "`{}`: MCP server `{}` asked the client a question that was not \
                             answered: {error}",
                            R::METHOD,
                            self.server.name
                        ),
                        None,
                    )
                })?;
            request.retry(answers.to_responses(), asked.request_state);
        }
        Err(ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "`{}`: MCP server `{}` asked {QUESTION_ROUNDS} rounds of questions without an \
                 answer; rho gave up on it",
                R::METHOD,
                self.server.name
            ),
            None,
        ))
    }
}

/// A request a server on 2026-07-28 may answer with questions for its
/// client (an input-required result): its answer type, how it is sent,
/// and how it goes again with the client's answers.
trait Asks: Clone + Send + 'static {
    /// The answer: a result, or the server's questions.
    type Response: Completed + From<InputRequiredResult> + Send + 'static;
    /// The request's method, for error texts.
    const METHOD: &'static str;
    /// Sends the request once, without following its questions.
    fn send(
        self,
        peer: Peer<RoleClient>,
    ) -> impl Future<Output = Result<Self::Response, ServiceError>> + Send + 'static;
    /// The server's questions, or the result when it asked none.
    fn questions(response: Self::Response) -> Result<InputRequiredResult, Self::Response>;
    /// The same request with the client's answers and the server's state.
    fn retry(&mut self, answers: InputResponses, state: Option<String>);
}

impl Asks for GetPromptRequestParams {
    type Response = GetPromptResponse;
    const METHOD: &'static str = "prompts/get";
    async fn send(self, peer: Peer<RoleClient>) -> Result<GetPromptResponse, ServiceError> {
        peer.get_prompt_once(self).await
    }
    fn questions(response: GetPromptResponse) -> Result<InputRequiredResult, GetPromptResponse> {
        match response {
            GetPromptResponse::InputRequired(asked) => Ok(asked),
            answer => Err(answer),
        }
    }
    fn retry(&mut self, answers: InputResponses, state: Option<String>) {
        self.input_responses = Some(answers);
        self.request_state = state;
    }
}

impl Asks for ReadResourceRequestParams {
    type Response = ReadResourceResponse;
    const METHOD: &'static str = "resources/read";
    async fn send(self, peer: Peer<RoleClient>) -> Result<ReadResourceResponse, ServiceError> {
        peer.read_resource_once(self).await
    }
    fn questions(
        response: ReadResourceResponse,
    ) -> Result<InputRequiredResult, ReadResourceResponse> {
        match response {
            ReadResourceResponse::InputRequired(asked) => Ok(asked),
            answer => Err(answer),
        }
    }
    fn retry(&mut self, answers: InputResponses, state: Option<String>) {
        self.input_responses = Some(answers);
        self.request_state = state;
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
    /// What the server declared of resources, prompts and completions
    /// (nothing before it first answered).
    fn tool_listing(&self, name: &str) -> Option<crate::serve::ToolListing> {
        self.server.listing_of(name)
    }

    fn capabilities(&self) -> ServerCapabilities {
        let declared = self.server.capabilities();
        let mut capabilities = ServerCapabilities::default();
        capabilities.resources = declared.resources;
        capabilities.prompts = declared.prompts;
        capabilities.completions = declared.completions;
        capabilities
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.forward("resources/list", |peer| async move {
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
        self.forward("resources/templates/list", |peer| async move {
            peer.list_resource_templates(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.forward_asking(request, &context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let followed = self.server.heard.followed.clone();
        self.forward("resources/subscribe", |peer| async move {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let followed = self.server.heard.followed.clone();
        self.forward("resources/unsubscribe", |peer| async move {
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
        })
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.forward("prompts/list", |peer| async move {
            peer.list_prompts(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.forward_asking(request, &context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.forward("completion/complete", |peer| async move {
            peer.complete(request).await
        })
        .await
        .map(|result| result.for_client(is_modern(&context)))
    }

    /// The level goes to the server too, so it sends what the client
    /// asked for: set on a server before 2026-07-28, sent with each call
    /// to one on 2026-07-28. With several clients (the proxy over HTTP)
    /// the server is asked for the most verbose level any of them asked
    /// for, and each client's session passes on only what its own level
    /// lets through: one client's `error` does not silence another's
    /// `debug`. The level is never made less verbose again (the source
    /// does not know when a client leaves), which costs messages nobody
    /// reads, never messages that are wanted.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        mut request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        {
            let mut asked = self
                .server
                .heard
                .log_level
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(before) = *asked
                && severity(before) < severity(request.level)
            {
                request.level = before;
            }
            *asked = Some(request.level);
        }
        if self.server.capabilities().logging.is_none() {
            return Ok(());
        }
        self.forward("logging/setLevel", |peer| async move {
            if speaks_2026(&peer) {
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
