//! rmcp's client handler for one connection: routes progress to the call
//! that asked for it and tells the source when the server's tool list
//! changed. Everything else (sampling, roots, elicitation) is declined by
//! rmcp's defaults: rho offers the server no capabilities.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc};

/// Where each call in flight wants its progress, by progress token.
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<Value>>>>;

/// The handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) routes: ProgressRoutes,
    /// Woken when the server says its tools changed.
    pub(crate) tools_changed: Arc<Notify>,
}

impl Handler {
    pub(crate) fn new(tools_changed: Arc<Notify>) -> Self {
        Self {
            routes: Arc::default(),
            tools_changed,
        }
    }

    fn route(&self, token: &ProgressToken) -> Option<mpsc::Sender<Value>> {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned()
    }
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let mut route = self.route(&params.progress_token);
        if route.is_none() {
            // The call registers its token right after rmcp queued the
            // request; a server quick enough to report progress before
            // that gets one more chance.
            tokio::task::yield_now().await;
            route = self.route(&params.progress_token);
        }
        if let Some(route) = route {
            // A call that is not reading its progress loses some: progress
            // is a stream of snapshots, the next one says more.
            let _ = route.try_send(progress_value(params));
        }
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

/// A progress notification as the call's partial result:
/// `{"progress": 2, "total": 5, "message": "..."}`.
fn progress_value(params: ProgressNotificationParam) -> Value {
    let mut partial = Map::new();
    partial.insert("progress".to_owned(), number(params.progress));
    if let Some(total) = params.total {
        partial.insert("total".to_owned(), number(total));
    }
    if let Some(message) = params.message {
        partial.insert("message".to_owned(), Value::String(message));
    }
    Value::Object(partial)
}

/// `value` as JSON: an integer when it is one, so `2.0` reads as `2`.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}
