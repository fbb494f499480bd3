//! Subscriptions through one proxy (over streamable HTTP,
//! `Proxy::serve_http`), whose clients are rmcp's at 2025-11-25:
//!
//! - one client's unsubscribe does not stop the updates another client
//!   still subscribes to. The server behind the proxy is rho's own on
//!   2026-07-28, whose host announces resource updates (`Notifier`); a
//!   proxy that speaks only 2026-07-28 to it hears them on its
//!   `subscriptions/listen` stream, whose filter names what its clients
//!   follow, and one that gives each client a connection of its own
//!   subscribes each there;
//! - a server before 2026-07-28 that dies and is started again is
//!   subscribed again to what its client follows. The server is the MCP
//!   reference server (`@modelcontextprotocol/server-everything`) over
//!   stdio, which keeps subscriptions per process.

// `resources/subscribe` is legacy in rmcp since 2026-07-28; clients on
// 2025-11-25 still subscribe so, and the proxy serves them.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_mcp::import::Handshake;
use rho_mcp::proxy::{ProxyHttp, ProxyOptions};
use rho_mcp::rmcp::model::{
    CallToolRequestParams, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rho_mcp::rmcp::service::{NotificationContext, RunningService};
use rho_mcp::rmcp::{ClientHandler, RoleClient};
use rho_mcp::{HttpServer, Notifier};

mod import_support;
mod support;

use import_support::{alive, eventually, everything, kill_9, node, processes_with};
use support::announcing::served;
use support::{http_client, proxy_over_http};

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
    let running = http_client(proxy.url(), hearing.clone()).await;
    (hearing, running)
}

/// rho's server over HTTP with the announcing host, and a proxy over
/// HTTP in front of it, greeting it by `handshake`.
async fn proxied(handshake: Handshake) -> (Notifier, HttpServer, ProxyHttp) {
    let (notifier, server) = served().await;
    let proxy = proxy_over_http(ProxyOptions::http(server.url()).handshake(handshake)).await;
    (notifier, server, proxy)
}

/// Property: a resource two clients subscribed to is still followed after
/// one of them unsubscribes: the other hears its updates. Through a proxy
/// that speaks 2026-07-28 alone (one stream for all its clients), a later
/// subscription of the first client (to another resource) makes the
/// proxy open its stream again, so what is heard after it was asked for
/// after the unsubscribe; through one that gives each client a
/// connection of its own, each subscribes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_unsubscribe_does_not_end_anothers_updates() {
    for handshake in [Handshake::Discover, Handshake::Either] {
        unsubscribe_leaves_the_other(handshake).await;
    }
}

async fn unsubscribe_leaves_the_other(handshake: Handshake) {
    let (notifier, server, proxy) = proxied(handshake).await;
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

/// What the reference server is asked to send: an update of each resource
/// its client subscribed to, at once and then every 5 s.
const UPDATES: &str = "toggle-subscriber-updates";

/// Waits until `client` heard that `uri` was updated; panics after `limit`.
async fn heard_within(client: &Hearing, uri: &str, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while !client.heard(uri) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the client heard no update of {uri} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls the reference server's updates switch until a server runs it
/// (the first call after a kill may still find the dead one).
async fn start_updates(client: &RunningService<RoleClient, Hearing>) {
    for _ in 0..20 {
        let answer = client
            .call_tool(CallToolRequestParams::new(UPDATES))
            .await
            .expect("answered");
        if answer.is_error != Some(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no server ran `{UPDATES}`");
}

/// The reference servers running now.
fn everything_servers() -> Vec<u32> {
    processes_with(everything().to_str().expect("a UTF-8 path"))
}

/// The one server in `now` that is not in `before`.
fn the_new_one(before: &[u32], now: &[u32]) -> u32 {
    let new: Vec<_> = now.iter().filter(|pid| !before.contains(pid)).collect();
    match new.as_slice() {
        [pid] => **pid,
        _ => panic!("one new server: {before:?} before, {now:?} now"),
    }
}

/// Property: a server before 2026-07-28 that keeps subscriptions per
/// process, killed and started again by the proxy's next call, is
/// subscribed again to what its client follows through the proxy,
/// before anything is called on it: the client hears the new server's
/// updates without subscribing again. Over HTTP the client's server is a
/// connection of its own, started as the client initialized, and that is
/// the one killed and replaced (the proxy's first connection, whose
/// renewal the same code does, serves a client over stdio).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_subscribed_again_to_what_its_clients_follow() {
    const DOCUMENT: &str = "demo://resource/dynamic/text/1";
    let server = everything().to_str().expect("a UTF-8 path");
    let proxy = proxy_over_http(ProxyOptions::new(node()).args([server, "stdio"])).await;
    let shared = everything_servers();
    let (hearing, client) = connect(&proxy).await;
    client
        .subscribe(SubscribeRequestParams::new(DOCUMENT))
        .await
        .expect("subscribed");
    start_updates(&client).await;
    heard_within(&hearing, DOCUMENT, Duration::from_secs(10)).await;

    let running = everything_servers();
    let first = the_new_one(&shared, &running);
    kill_9(first);
    assert!(
        eventually(Duration::from_secs(5), || !alive(first)),
        "the server died"
    );
    hearing.0.lock().expect("not poisoned").clear();
    start_updates(&client).await;
    let second = the_new_one(&running, &everything_servers());
    assert_ne!(first, second, "a new server");
    // The new server sends at once what it was subscribed to, and again
    // every 5 s: 10 s leaves room for one more.
    heard_within(&hearing, DOCUMENT, Duration::from_secs(10)).await;

    client.cancel().await.expect("closes");
    proxy.shutdown().await.expect("the proxy stops");
}
