//! `Session`: the MCP handler of one client connection.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rho_registry::ChangeSubscription;
use rho_tool_core::Executor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
// Deprecated by SEP-2577 with the rest of logging; clients on 2025-11-25
// still set their level.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::Semaphore;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::client::LogThreshold;
use super::contain::{contained, failure_text};
use super::features::{self, McpFeatures};
use super::notify::{self, Subscribed};
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
    /// Answers `method` from the host's [`McpFeatures`] by `ask`, a panic
    /// of the host's code contained; "method not found" when the host
    /// serves none.
    ///
    /// The host's future is dropped as soon as the client cancels the
    /// request (`cancelled`, the request's token) or the host closes the
    /// session: rmcp only cancels the token, and a host's handler that
    /// does not watch it (an imported server's request, waiting on its
    /// answer) would otherwise run on for nobody.
    async fn features<T, F>(
        &self,
        method: &'static str,
        cancelled: CancellationToken,
        ask: impl FnOnce(Arc<dyn McpFeatures>) -> F,
    ) -> Result<T, ErrorData>
    where
        F: Future<Output = Result<T, ErrorData>>,
    {
        let Some(features) = self.calls.shared.features.clone() else {
            return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None));
        };
        tokio::select! {
            biased;
            () = cancelled.cancelled() => Err(ended(method, "the client cancelled it")),
            () = self.calls.closed.cancelled() => Err(ended(method, "the session was closed")),
            answer = contained(ask(features)) => answer.unwrap_or_else(|caught| {
                Err(ErrorData::internal_error(
                    failure_text(method, &caught),
                    None,
                ))
            }),
        }
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

impl<E: Executor> ServerHandler for Session<E> {
    // `enable_logging` is deprecated by SEP-2577; see `set_level`.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let shared = &self.calls.shared;
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        let builder = match &shared.tasks {
            Some(_) => builder.enable_tasks(),
            None => builder,
        };
        let mut capabilities = builder.build();
        match &shared.fronted {
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
        let mut capabilities = features::merged(capabilities, shared.features.as_ref());
        if let Some(calls) = shared.advertised_max_calls {
            concurrency::declare(&mut capabilities, calls);
        }
        let config = ServerConfig::new(capabilities).with_server_info(shared.identity.clone());
        match &shared.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        contained(async {
            let shared = &self.calls.shared;
            listing::list(
                &shared.registry,
                shared.believe_untrusted_hints,
                shared.features.as_ref(),
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
        self.features(
            "resources/list",
            context.ct.clone(),
            |features| async move { features.list_resources(request, context).await },
        )
        .await
        .map(stamp)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features(
            "resources/templates/list",
            context.ct.clone(),
            |features| async move { features.list_resource_templates(request, context).await },
        )
        .await
        .map(stamp)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features(
            "resources/read",
            context.ct.clone(),
            |features| async move { features.read_resource(request, context).await },
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
            context.ct.clone(),
            |features| async move { features.subscribe(request, context).await },
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
            context.ct.clone(),
            |features| async move { features.unsubscribe(request, context).await },
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let stamp = self.stamp_for(&context);
        self.features("prompts/list", context.ct.clone(), |features| async move {
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
        self.features("prompts/get", context.ct.clone(), |features| async move {
            features.get_prompt(request, context).await
        })
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
            context.ct.clone(),
            |features| async move { features.complete(request, context).await },
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
                tokio::join!(tools, notify::listen(&notifier, &subscription, closed));
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
            context.ct.clone(),
            |features| async move { features.set_level(request, context).await },
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
