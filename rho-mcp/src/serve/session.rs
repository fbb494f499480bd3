//! `Session`: the MCP handler of one client connection.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rho_registry::ChangeSubscription;
use rho_tool_core::Executor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::Semaphore;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::contain::{contained, failure_text};
use super::progress::ProgressSink;
use super::server::Shared;
use super::{call, list_changed, listing, result};

/// One client connection to an [`McpServer`](crate::McpServer): rmcp's
/// [`ServerHandler`] for it.
///
/// Made by [`McpServer::session`](crate::McpServer::session), or by the
/// transports of this crate for each connection. Its calls are aborted
/// when the session ends ([`close`](Session::close), the transport
/// closing, or the session being dropped).
pub struct Session<E: Executor> {
    /// What its calls need, shared with the calls a transport runs
    /// itself (see `dispatch`).
    calls: SessionCalls<E>,
    _close_on_drop: DropGuard,
    /// The registry listener, once the client is initialized.
    list_changed: Mutex<Option<ChangeSubscription>>,
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
}

impl<E: Executor> Clone for SessionCalls<E> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            number: self.number,
            closed: self.closed.clone(),
            places: Arc::clone(&self.places),
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
    ) -> CallToolResult {
        if self.closed.is_cancelled() {
            return result::error_text(format!(
                "tool `{}` was not run: the session is closing",
                request.name
            ));
        }
        let Ok(_place) = self.places.clone().try_acquire_owned() else {
            return result::error_text(format!(
                "tool `{}` was not run: this session already has {} calls in flight, \
                 the most it may have; try again when one has ended",
                request.name, self.shared.max_calls_per_session
            ));
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
        ));
        contained(run).await.unwrap_or_else(|caught| {
            result::error_text(failure_text(&format!("the call of tool `{tool}`"), &caught))
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
            },
            list_changed: Mutex::new(None),
        }
    }

    /// Ends the session's calls in flight (each is aborted at once) and
    /// refuses new ones.
    pub fn close(&self) {
        self.calls.closed.cancel();
    }

    /// What its calls need, for a transport that runs calls itself.
    pub(crate) fn calls(&self) -> SessionCalls<E> {
        self.calls.clone()
    }
}

impl<E: Executor> ServerHandler for Session<E> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let shared = &self.calls.shared;
        let config = ServerConfig::new(capabilities).with_server_info(shared.identity.clone());
        match &shared.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        contained(async {
            let shared = &self.calls.shared;
            listing::list(&shared.registry, shared.believe_untrusted_hints)
        })
        .await
        .map_err(|caught| ErrorData::internal_error(failure_text("tools/list", &caught), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let progress = ProgressSink::Peer(context.peer.clone());
        Ok(self.calls.call(request, &context, progress).await.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let subscription = list_changed::forward(
            &self.calls.shared.registry,
            context.peer,
            self.calls.closed.clone(),
        );
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
