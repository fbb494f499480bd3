//! Subscriptions of several clients through one proxy (over streamable
//! HTTP, `Proxy::serve_http`): one client's unsubscribe does not stop the
//! updates another client still subscribes to. The server behind the
//! proxy is rho's own on 2026-07-28, whose host announces resource updates
//! (`Notifier`); the proxy hears them on its `subscriptions/listen`
//! stream, whose filter names what its clients follow. The clients are
//! rmcp's at 2025-11-25 over streamable HTTP.

// `resources/subscribe` is legacy in rmcp since 2026-07-28; clients on
// 2025-11-25 still subscribe so, and the proxy serves them.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_mcp::proxy::{ProxyHttp, ProxyOptions};
use rho_mcp::rmcp::model::{
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rho_mcp::rmcp::service::{NotificationContext, RunningService};
use rho_mcp::rmcp::transport::StreamableHttpClientTransport;
use rho_mcp::rmcp::{ClientHandler, RoleClient, ServiceExt};
use rho_mcp::{HttpOptions, HttpServer, Notifier};

mod support;

use support::announcing::served;

const WATCHED: &str = "file:///watched.md";
const OTHER: &str = "file:///other.md";

/// A client that writes down the updates it hears.
#[derive(Clone, Default)]
struct Hearing(Arc<Mutex<Vec<String>>>);

impl Hearing {
    fn heard(&self, uri: &str) -> bool {
        self.0
            .lock()
            .expect("not poisoned")
            .iter()
            .any(|heard| heard == uri)
    }
}

impl ClientHandler for Hearing {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().expect("not poisoned").push(params.uri);
    }
}

/// Announces an update of `uri` until `client` heard one; panics after
/// 10 s.
async fn until_heard(notifier: &Notifier, client: &Hearing, uri: &str) {
    for _ in 0..200 {
        let update = ResourceUpdatedNotificationParam::new(uri);
        notifier.notify(ResourceUpdatedNotification::new(update).into());
        tokio::time::sleep(Duration::from_millis(50)).await;
        if client.heard(uri) {
            return;
        }
    }
    panic!("the client never heard that {uri} was updated");
}

async fn connect(proxy: &ProxyHttp) -> (Hearing, RunningService<RoleClient, Hearing>) {
    let hearing = Hearing::default();
    let running = hearing
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(proxy.url()))
        .await
        .expect("initializes");
    (hearing, running)
}

/// rho's server over HTTP with the announcing host, and a proxy over
/// HTTP in front of it.
async fn proxied() -> (Notifier, HttpServer, ProxyHttp) {
    let (notifier, server) = served().await;
    let proxy = ProxyOptions::http(server.url())
        .start()
        .await
        .expect("the proxy connects")
        .serve_http(HttpOptions::new())
        .await
        .expect("the proxy serves");
    (notifier, server, proxy)
}

/// Property: a resource two clients subscribed to is still followed after
/// one of them unsubscribes: the other hears its updates. A later
/// subscription of the first client (to another resource) makes the
/// proxy open its stream again, so what is heard after it was asked for
/// after the unsubscribe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_unsubscribe_does_not_end_anothers_updates() {
    let (notifier, server, proxy) = proxied().await;
    let (staying, stays) = connect(&proxy).await;
    let (leaving, leaves) = connect(&proxy).await;
    for client in [&stays, &leaves] {
        client
            .subscribe(SubscribeRequestParams::new(WATCHED))
            .await
            .expect("subscribed");
    }
    until_heard(&notifier, &staying, WATCHED).await;
    until_heard(&notifier, &leaving, WATCHED).await;

    leaves
        .unsubscribe(UnsubscribeRequestParams::new(WATCHED))
        .await
        .expect("unsubscribed");
    stays
        .subscribe(SubscribeRequestParams::new(OTHER))
        .await
        .expect("subscribed");
    // Heard on the stream opened after both changes.
    until_heard(&notifier, &staying, OTHER).await;
    staying.0.lock().expect("not poisoned").clear();
    until_heard(&notifier, &staying, WATCHED).await;

    stays.cancel().await.expect("closes");
    leaves.cancel().await.expect("closes");
    proxy.shutdown().await.expect("the proxy stops");
    server.shutdown().await.expect("the server stops");
}
