//! `Session`: the MCP handler of one client connection.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rho_registry::ChangeSubscription;
use rho_tool_core::Executor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, InitializeRequestParams, InitializeResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
// Deprecated by SEP-2577 with the rest of logging; clients on 2025-11-25
// still set their level.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::Semaphore;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::client::{ClientSession, LogThreshold};
use super::contain::{contained, failure_text};
use super::features::{self, McpFeatures};
use super::notify::{self, Subscribed};
use super::older::{self, Retried};
use super::progress::ProgressSink;
use super::server::Shared;
use super::stamp::{self, Stamp};
use super::{call, list_changed, listing, result};
use crate::concurrency;

/// One client connection to an [`McpServer`](crate::McpServer): rmcp's
/// [`ServerHandler`] for it.
///
/// Made by [`McpServer::session`](crate::McpServer::session), or by the
/// transports of this crate for each connection. Its calls are aborted
/// when the session ends ([`close`](Session::close), the transport
/// closing, or the session being dropped).
pub struct Session<E: Executor> {
    /// What its calls need.
    calls: SessionCalls<E>,
    _close_on_drop: DropGuard,
    /// The registry listener, once the client is initialized.
    list_changed: Mutex<Option<ChangeSubscription>>,
    /// The resources the client subscribed to, whose updates it is told.
    subscribed: Subscribed,
}

/// What a session's calls need of it.
pub(crate) struct SessionCalls<E: Executor> {
    shared: Arc<Shared<E>>,
    /// This session's number among the server's, in its calls' ids.
    number: u64,
    /// Cancelled when the connection ends: every call in flight is
    /// aborted, and the list-changed task stops.
    closed: CancellationToken,
    /// Places for calls in flight.
    places: Arc<Semaphore>,
    /// The log level the client asked for, which its calls' tools heed.
    log_threshold: LogThreshold,
}

impl<E: Executor> Clone for SessionCalls<E> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            number: self.number,
            closed: self.closed.clone(),
            places: Arc::clone(&self.places),
            log_threshold: self.log_threshold.clone(),
        }
    }
}

impl<E: Executor> SessionCalls<E> {
    /// Runs one `tools/call` of the session to its result: refused when
    /// the session is closing or has as many calls in flight as it may;
    /// a panic on the way is an error result naming the tool.
    pub(crate) async fn call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        progress: ProgressSink,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.closed.is_cancelled() {
            return Ok(result::error_text(format!(
                "tool `{}` was not run: the session is closing",
                request.name
            ))
            .into());
        }
        let Ok(_place) = self.places.clone().try_acquire_owned() else {
            return Ok(result::error_text(format!(
                "tool `{}` was not run: this session already has {} calls in flight, \
                 the most it may have; try again when one has ended",
                request.name, self.shared.max_calls_per_session
            ))
            .into());
        };
        let tool = request.name.clone();
        // Boxed: rmcp moves each handler's future around (into its task,
        // through its wrappers), and a call's is large.
        let run = Box::pin(call::run(
            &self.shared,
            self.number,
            request,
            context,
            &self.closed,
            progress,
            &self.log_threshold,
        ));
        contained(run).await.unwrap_or_else(|caught| {
            Ok(
                result::error_text(failure_text(&format!("the call of tool `{tool}`"), &caught))
                    .into(),
            )
        })
    }
}

impl<E: Executor> Session<E> {
    pub(crate) fn new(shared: Arc<Shared<E>>, number: u64) -> Self {
        let closed = CancellationToken::new();
        let places = Arc::new(Semaphore::new(shared.max_calls_per_session));
        Self {
            _close_on_drop: closed.clone().drop_guard(),
            calls: SessionCalls {
                shared,
                number,
                closed,
                places,
                log_threshold: LogThreshold::default(),
            },
            list_changed: Mutex::new(None),
            subscribed: Subscribed::default(),
        }
    }

    /// Ends the session's calls in flight (each is aborted at once) and
    /// refuses new ones.
    pub fn close(&self) {
        self.calls.closed.cancel();
    }
}

impl<E: Executor> Session<E> {
    /// Answers `method`, the request of `context`, from the host's
    /// [`McpFeatures`] by `ask`, a panic of the host's code contained;
    /// "method not found" when the host serves none. A client before
    /// 2026-07-28 is asked in its session: the request's context carries
    /// its [`ClientSession`], which a proxy keeps a connection for.
    async fn features<T, F>(
        &self,
        method: &'static str,
        mut context: RequestContext<RoleServer>,
        ask: impl FnOnce(Arc<dyn McpFeatures>, RequestContext<RoleServer>) -> F,
    ) -> Result<T, ErrorData>
    where
        F: Future<Output = Result<T, ErrorData>>,
    {
        let Some(features) = self.calls.shared.features.clone() else {
            return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None));
        };
        self.in_session(&mut context);
        let cancelled = context.ct.clone();
        let answer = async {
            contained(ask(features, context))
                .await
                .unwrap_or_else(|caught| {
                    Err(ErrorData::internal_error(
                        failure_text(method, &caught),
                        None,
                    ))
                })
        };
        self.until_stopped(method, &cancelled, answer).await
    }

    /// Puts this session in `context` for the features, when its client
    /// is before 2026-07-28 (a later one keeps no session).
    fn in_session(&self, context: &mut RequestContext<RoleServer>) {
        if !call::is_modern(context) {
            context.extensions.insert(ClientSession {
                number: self.calls.number,
                closed: self.calls.closed.clone(),
            });
        }
    }

    /// `work`, the answer to `method`, unless the request is `cancelled`
    /// or the host closes the session first: then the error saying so.
    ///
    /// The work is dropped at once then: rmcp only cancels the request's
    /// token, and a host's handler that does not watch it (an imported
    /// server's request, waiting on its answer) would otherwise run on
    /// for nobody.
    async fn until_stopped<T>(
        &self,
        method: &'static str,
        cancelled: &CancellationToken,
        work: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        tokio::select! {
            biased;
            () = cancelled.cancelled() => Err(ended(method, "the client cancelled it")),
            () = self.calls.closed.cancelled() => Err(ended(method, "the session was closed")),
            answer = work => answer,
        }
    }

    /// Answers `request` of `context` from the features by `ask`, as
    /// [`features`](Session::features) does; for a client before
    /// 2026-07-28, the features' questions are put to it and `request`
    /// asked again with its answers (see `older`).
    async fn asking<R, F>(
        &self,
        mut request: R,
        context: RequestContext<RoleServer>,
        ask: impl Fn(Arc<dyn McpFeatures>, R, RequestContext<RoleServer>) -> F,
    ) -> Result<R::Response, ErrorData>
    where
        R: Retried,
        F: Future<Output = Result<R::Response, ErrorData>>,
    {
        if call::is_modern(&context) {
            return self
                .features(R::METHOD, context, |features, context| {
                    ask(features, request, context)
                })
                .await;
        }
        let cancelled = context.ct.clone();
        let rounds = async {
            for _ in 0..older::QUESTION_ROUNDS {
                let response = self
                    .features(R::METHOD, context.clone(), |features, context| {
                        ask(features, request.clone(), context)
                    })
                    .await?;
                match R::questions(response) {
                    Err(answer) => return Ok(answer),
                    Ok(asked) => older::ask_again(&mut request, asked, &context).await?,
                }
            }
            Err(older::too_many_rounds::<R>())
        };
        self.until_stopped(R::METHOD, &cancelled, rounds).await
    }
}

impl<E: Executor> Session<E> {
    /// What a result to `context`'s request is given before it leaves: the
    /// server's identity in its `_meta` on 2026-07-28 (see `stamp`).
    fn stamp_for<T: Stamp>(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> impl FnOnce(T) -> T + use<T, E> {
        let modern = call::is_modern(context);
        let identity = self.calls.shared.identity.clone();
        move |result| stamp::stamped(result, modern, &identity)
    }
}

impl<E: Executor> Session<E> {
    /// What the session declares to its client: rho's tools (or, for a
    /// proxy, tools and logging as its server declared them) and the
    /// features' resources, prompts and completions. `own` is what the
    /// features declare to this session's client when that is its own
    /// ([`McpFeatures::capabilities_for`]), in place of what they declare
    /// to every client.
    // `enable_logging` is deprecated by SEP-2577; see `set_level`.
    #[allow(deprecated)]
    fn declared(&self, own: Option<ServerCapabilities>) -> ServerCapabilities {
        let shared = &self.calls.shared;
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        let builder = match &shared.tasks {
            Some(_) => builder.enable_tasks(),
            None => builder,
        };
        let mut capabilities = builder.build();
        match shared
            .fronted
            .as_ref()
            .map(|upstream| own.as_ref().unwrap_or(upstream))
        {
            // Tools log to the client through `McpClient::log`.
            None => capabilities.logging = Some(JsonObject::new()),
            // A proxy's tools and logs are its server's: declared as it
            // did. The list-changed flag stays: the proxy's quarantine
            // changes the list too.
            Some(upstream) => {
                capabilities.logging.clone_from(&upstream.logging);
                if upstream.tools.is_none() {
                    capabilities.tools = None;
                }
            }
        }
        let theirs = match own {
            Some(own) => Some(own),
            None => shared
                .features
                .as_ref()
                .map(|features| features.capabilities()),
        };
        let mut capabilities = features::merged(capabilities, theirs);
        if let Some(calls) = shared.advertised_max_calls {
            concurrency::declare(&mut capabilities, calls);
        }
        capabilities
    }
}

impl<E: Executor> ServerHandler for Session<E> {
    fn get_info(&self) -> ServerConfig {
        let shared = &self.calls.shared;
        let capabilities = self.declared(None);
        let config = ServerConfig::new(capabilities).with_server_info(shared.identity.clone());
        match &shared.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// rmcp's own answer, with what the features declare to this client
    /// (a proxy's server, on the connection the proxy opened for it) in
    /// place of what they declare to every client.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if self.calls.shared.features.is_some() {
            // A failure leaves what the features declare to every client.
            // Boxed, as for `resources/read`: it runs once a session.
            let own = Box::pin(self.features(
                "initialize",
                context,
                |features, context| async move { Ok(features.capabilities_for(context).await) },
            ))
            .await
            .ok()
            .flatten();
            if own.is_some() {
                result.capabilities = self.declared(own);
            }
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        mut context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.in_session(&mut context);
        contained(async {
            let shared = &self.calls.shared;
            listing::list(
                &shared.registry,
                shared.believe_untrusted_hints,
                shared.features.as_ref(),
                &context,
            )
        })
        .await
        .map(stamp)
        .map_err(|caught| ErrorData::internal_error(failure_text("tools/list", &caught), None))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features("resources/list", context, |features, context| async move {
            features.list_resources(request, context).await
        })
        .await
        .map(stamp)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features("resources/templates/list", context, |features, context| async move {
            features.list_resource_templates(request, context).await
        })
        .await
        .map(stamp)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let stamp = self.stamp_for(&context);
        // Boxed, as a call's is: rmcp moves each handler's future around,
        // and one that may ask the client is large.
        Box::pin(
            self.asking(request, context, |features, request, context| async move {
                features.read_resource(request, context).await
            }),
        )
        .await
        .map(stamp)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = request.uri.clone();
        self.features(
            "resources/subscribe",
            context,
            |features, context| async move { features.subscribe(request, context).await },
        )
        .await?;
        self.subscribed.add(uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed.remove(&request.uri);
        self.features(
            "resources/unsubscribe",
            context,
            |features, context| async move { features.unsubscribe(request, context).await },
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features("prompts/list", context, |features, context| async move {
            features.list_prompts(request, context).await
        })
        .await
        .map(stamp)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let stamp = self.stamp_for(&context);
        // Boxed, as for `resources/read`.
        Box::pin(
            self.asking(request, context, |features, request, context| async move {
                features.get_prompt(request, context).await
            }),
        )
        .await
        .map(stamp)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features(
            "completion/complete",
            context,
            |features, context| async move { features.complete(request, context).await },
        )
        .await
        .map(stamp)
    }

    /// What a rho server can tell of: its tool list, and what the host's
    /// features declare they announce (their lists, the resources a client
    /// may subscribe to); rmcp keeps only what the client asked for.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder().tools_list_changed().build();
        let features = self.calls.shared.features.as_ref();
        if let Some(declared) = features.map(|features| features.capabilities()) {
            let announces = |list_changed: bool| list_changed.then_some(true);
            if let Some(resources) = declared.resources {
                accepted.resources_list_changed = announces(resources.list_changed == Some(true));
                if resources.subscribe == Some(true) {
                    accepted
                        .resource_subscriptions
                        .clone_from(&requested.resource_subscriptions);
                }
            }
            if let Some(prompts) = declared.prompts {
                accepted.prompts_list_changed = announces(prompts.list_changed == Some(true));
            }
        }
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let closed = &self.calls.closed;
        let tools = list_changed::listen(&self.calls.shared.registry, &subscription, closed);
        match self
            .calls
            .shared
            .features
            .as_ref()
            .and_then(|features| features.notifier())
        {
            Some(notifier) => {
                // Each ends when the client stops listening or the session
                // closes; one whose stream failed leaves the other to end so.
                tokio::join!(
                    tools,
                    notify::listen(&notifier, self.calls.number, &subscription, closed)
                );
            }
            None => tools.await,
        }
        Ok(())
    }

    /// The tool `name` as `tools/list` shows it, for rmcp's checks of a
    /// request against its tool (over HTTP, the `Mcp-Param-*` headers a
    /// client derives from parameters marked `x-mcp-header`).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let shared = &self.calls.shared;
        let resolved = shared.registry.resolve(name).ok()?;
        listing::to_mcp_tool(resolved.info(), shared.believe_untrusted_hints)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let progress: ProgressSink = context.peer.clone();
        let stamp = self.stamp_for(&context);
        self.calls
            .call(request, &context, progress)
            .await
            .map(stamp)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self.calls.shared.task_list.detailed(&request.task_id)?;
        Ok(self.stamp_for(&context)(GetTaskResult::new(task)))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.calls
            .shared
            .task_list
            .update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.calls.shared.task_list.cancel(&request.task_id)
    }

    // Deprecated by SEP-2577 with the rest of logging; clients on
    // 2025-11-25 still set their level.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.calls.log_threshold.set(request.level);
        self.features(
            "logging/setLevel",
            context,
            |features, context| async move { features.set_level(request, context).await },
        )
        .await
        .or_else(|error| match error.code {
            // A host without features: the level was all there was to set.
            ErrorCode::METHOD_NOT_FOUND => Ok(()),
            _ => Err(error),
        })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let shared = &self.calls.shared;
        if let Some(notifier) = shared
            .features
            .as_ref()
            .and_then(|features| features.notifier())
        {
            notify::forward(
                &notifier,
                self.calls.number,
                context.peer.clone(),
                self.subscribed.clone(),
                self.calls.log_threshold.clone(),
                self.calls.closed.clone(),
            );
        }
        let subscription =
            list_changed::forward(&shared.registry, context.peer, self.calls.closed.clone());
        *self
            .list_changed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(subscription);
    }
}

impl<E: Executor> fmt::Debug for Session<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("closed", &self.calls.closed.is_cancelled())
            .field(
                "calls_in_flight",
                &(self.calls.shared.max_calls_per_session - self.calls.places.available_permits()),
            )
            .finish_non_exhaustive()
    }
}

/// The answer to a request of the host's features that was stopped (the
/// client does not read it: it went, or cancelled the request).
fn ended(method: &str, why: &str) -> ErrorData {
    ErrorData::internal_error(format!("`{method}` was stopped: {why}"), None)
}
