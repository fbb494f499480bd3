//! rmcp's client handler for one connection: routes the progress the
//! transport could not (see `progress`) and tells the source when the
//! server's tool list changed. Everything else (sampling, roots,
//! elicitation) is declined by rmcp's defaults: rho offers the server no
//! capabilities.

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

use super::progress::{HandlerTally, ProgressRoutes, route};

/// The handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) routes: ProgressRoutes,
    /// Woken when the server says its tools changed.
    pub(crate) tools_changed: Arc<Notify>,
    /// Counts each progress notification handled.
    pub(crate) tally: Arc<HandlerTally>,
}

impl Handler {
    pub(crate) fn new(tools_changed: Arc<Notify>) -> Self {
        Self {
            routes: Arc::default(),
            tools_changed,
            tally: Arc::default(),
        }
    }
}

impl ClientHandler for Handler {
    /// Progress the transport could not route as it read it: its call had
    /// not registered yet (see `progress`).
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // The call registers its token right after rmcp queued the
        // request; a server quick enough to report progress before that
        // gets one more chance.
        if !route(&self.routes, &params) {
            tokio::task::yield_now().await;
            route(&self.routes, &params);
        }
        self.tally.handled_one();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("rho", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
