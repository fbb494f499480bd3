//! Log levels of several clients through one proxy (over streamable HTTP,
//! `Proxy::serve_http`), whose clients are rmcp's at 2025-11-25: each
//! client hears only what its own level lets through, and one client's
//! level does not silence another's. Each such client has a connection
//! of its own to the server, where its level is set; on a connection the
//! clients share, the server is asked for the most verbose level any of
//! them asked for. The server is rho's own, greeted at 2025-11-25 (so
//! the level is set on its session with `logging/setLevel`), whose host
//! logs what the test sends on its `Notifier`.

// Logging is deprecated in rmcp by SEP-2577; clients and servers on
// 2025-11-25 still log so, and the proxy carries it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_mcp::Notifier;
use rho_mcp::import::Handshake;
use rho_mcp::proxy::{ProxyHttp, ProxyOptions};
use rho_mcp::rmcp::model::{
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam,
    SetLevelRequestParams,
};
use rho_mcp::rmcp::service::{NotificationContext, RunningService};
use rho_mcp::rmcp::{ClientHandler, RoleClient};
use serde_json::json;

mod support;

use support::announcing::served;
use support::{http_client, proxy_over_http};

/// A client that writes down the log messages it hears, by their data.
#[derive(Clone, Default)]
struct Hearing(Arc<Mutex<Vec<LoggingMessageNotificationParam>>>);

impl Hearing {
    fn heard(&self, text: &str) -> Option<LoggingLevel> {
        self.0
            .lock()
            .expect("not poisoned")
            .iter()
            .find(|message| message.data == json!(text))
            .map(|message| message.level)
    }
}

impl ClientHandler for Hearing {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().expect("not poisoned").push(params);
    }
}

async fn connect(
    proxy: &ProxyHttp,
    level: LoggingLevel,
) -> (Hearing, RunningService<RoleClient, Hearing>) {
    let hearing = Hearing::default();
    let running = http_client(proxy.url(), hearing.clone()).await;
    running
        .set_level(SetLevelRequestParams::new(level))
        .await
        .expect("the level is set");
    (hearing, running)
}

/// Logs `text` at `level` on the host behind the proxy until `client`
/// heard it; panics after 10 s.
async fn until_heard(notifier: &Notifier, client: &Hearing, level: LoggingLevel, text: &str) {
    for _ in 0..200 {
        let message = LoggingMessageNotificationParam::new(level, json!(text));
        notifier.notify(LoggingMessageNotification::new(message).into());
        tokio::time::sleep(Duration::from_millis(50)).await;
        if client.heard(text).is_some() {
            return;
        }
    }
    panic!("the client never heard {text:?} at {level:?}");
}

/// Property: after one client asks for `debug` and another then for
/// `error`, the first still hears debug messages (its level was not
/// replaced by the last one asked), and the second hears only errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_level_does_not_silence_anothers() {
    let (notifier, server) = served().await;
    let proxy =
        proxy_over_http(ProxyOptions::http(server.url()).handshake(Handshake::Initialize)).await;
    let (verbose, first) = connect(&proxy, LoggingLevel::Debug).await;
    let (terse, second) = connect(&proxy, LoggingLevel::Error).await;

    until_heard(&notifier, &verbose, LoggingLevel::Debug, "details").await;
    until_heard(&notifier, &terse, LoggingLevel::Error, "trouble").await;
    until_heard(&notifier, &verbose, LoggingLevel::Error, "trouble").await;
    assert_eq!(
        terse.heard("details"),
        None,
        "debug reached the terse client"
    );

    first.cancel().await.expect("closes");
    second.cancel().await.expect("closes");
    proxy.shutdown().await.expect("the proxy stops");
    server.shutdown().await.expect("the server stops");
}
