//! A host whose features announce what a test sends on its notifier:
//! resources to subscribe to and lists that change, served by rho's
//! server over streamable HTTP (`serve_notify.rs`, and behind the proxy in
//! `proxy_subscriptions.rs`).

use std::sync::Arc;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::rmcp::model::{ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams};
use rho_mcp::rmcp::service::RequestContext;
use rho_mcp::rmcp::{ErrorData, RoleServer};
use rho_mcp::{HttpOptions, HttpServer, McpFeatures, McpServer, Notifier};
use rho_registry::ToolRegistry;

/// Resources a client may subscribe to, and lists that change.
pub struct Announcing(pub Notifier);

#[rho_tool_core::async_trait]
impl McpFeatures for Announcing {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .build()
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn notifier(&self) -> Option<Notifier> {
        Some(self.0.clone())
    }
}

/// A server of no tools whose features announce what the host sends on
/// the notifier, over streamable HTTP.
pub async fn served() -> (Notifier, HttpServer) {
    let notifier = Notifier::new();
    let http = McpServer::new(
        TokioExecutor::current().expect("a runtime"),
        ToolRegistry::new(),
    )
    .with_features(Arc::new(Announcing(notifier.clone())))
    .serve_http(HttpOptions::new())
    .await
    .expect("serves");
    (notifier, http)
}
