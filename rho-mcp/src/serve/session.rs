//! `Session`: the MCP handler of one client connection.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rho_registry::ChangeSubscription;
use rho_tool_core::Executor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::Semaphore;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::contain::{contained, failure_text};
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
    shared: Arc<Shared<E>>,
    /// This session's number among the server's, in its calls' ids.
    number: u64,
    /// Cancelled when the connection ends: every call in flight is
    /// aborted, and the list-changed task stops.
    closed: CancellationToken,
    _close_on_drop: DropGuard,
    /// The registry listener, once the client is initialized.
    list_changed: Mutex<Option<ChangeSubscription>>,
    /// Places for calls in flight.
    calls: Arc<Semaphore>,
}

impl<E: Executor> Session<E> {
    pub(crate) fn new(shared: Arc<Shared<E>>, number: u64) -> Self {
        let closed = CancellationToken::new();
        let calls = Arc::new(Semaphore::new(shared.max_calls_per_session));
        Self {
            shared,
            number,
            _close_on_drop: closed.clone().drop_guard(),
            closed,
            list_changed: Mutex::new(None),
            calls,
        }
    }

    /// Ends the session's calls in flight (each is aborted at once) and
    /// refuses new ones.
    pub fn close(&self) {
        self.closed.cancel();
    }
}

impl<E: Executor> ServerHandler for Session<E> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let config = ServerConfig::new(capabilities).with_server_info(self.shared.identity.clone());
        match &self.shared.instructions {
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
            listing::list(&self.shared.registry, self.shared.believe_untrusted_hints)
        })
        .await
        .map_err(|caught| ErrorData::internal_error(failure_text("tools/list", &caught), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.closed.is_cancelled() {
            return Ok(result::error_text(format!(
                "tool `{}` was not run: the session is closing",
                request.name
            ))
            .into());
        }
        let Ok(_place) = self.calls.clone().try_acquire_owned() else {
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
            &context,
            &self.closed,
        ));
        let result = contained(run).await.unwrap_or_else(|caught| {
            result::error_text(failure_text(&format!("the call of tool `{tool}`"), &caught))
        });
        Ok(result.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let subscription =
            list_changed::forward(&self.shared.registry, context.peer, self.closed.clone());
        *self
            .list_changed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(subscription);
    }
}

impl<E: Executor> fmt::Debug for Session<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("closed", &self.closed.is_cancelled())
            .field(
                "calls_in_flight",
                &(self.shared.max_calls_per_session - self.calls.available_permits()),
            )
            .finish_non_exhaustive()
    }
}
