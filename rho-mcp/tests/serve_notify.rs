//! What a host's features announce (`Notifier`) reaches rho's server's
//! clients as each asked: a client on 2025-11-25 hears its list changes,
//! updates of the resources it subscribed to and log messages at its
//! level; one on 2026-07-28 hears, on its `subscriptions/listen` stream,
//! exactly what its filter names. Real rmcp clients over streamable HTTP.

// Logging is deprecated by SEP-2577; clients on 2025-11-25 still log, and
// this tests that they hear it.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_mcp::Notifier;
use rho_mcp::rmcp::model::{
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam,
    PromptListChangedNotification, ProtocolVersion, ResourceListChangedNotification,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
    SubscribeRequestParams, SubscriptionFilter,
};
use rho_mcp::rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext};
use rho_mcp::rmcp::transport::StreamableHttpClientTransport;
use rho_mcp::rmcp::{ClientHandler, RoleClient};
use serde_json::json;

mod support;

use support::announcing::served;
use support::http_client;

const WATCHED: &str = "file:///watched.md";
const OTHER: &str = "file:///other.md";

fn updated(uri: &str) -> ServerNotification {
    ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)).into()
}

fn log(level: LoggingLevel, text: &str) -> ServerNotification {
    LoggingMessageNotification::new(
        LoggingMessageNotificationParam::new(level, json!(text)).with_logger("host"),
    )
    .into()
}

/// What the host announces after the marker was heard: only some of it
/// is for the client.
fn announcements() -> Vec<ServerNotification> {
    vec![
        log(LoggingLevel::Info, "below the level"),
        updated(OTHER),
        log(LoggingLevel::Error, "at the level"),
        updated(WATCHED),
        ResourceListChangedNotification::default().into(),
        // The end: every client asked for it.
        PromptListChangedNotification::default().into(),
    ]
}

/// A notification as a line to compare.
fn line(notification: &ServerNotification) -> String {
    match notification {
        ServerNotification::LoggingMessageNotification(message) => {
            format!("log {:?} {}", message.params.level, message.params.data)
        }
        ServerNotification::ResourceUpdatedNotification(update) => {
            format!("updated {}", update.params.uri)
        }
        ServerNotification::ResourceListChangedNotification(_) => "resources changed".into(),
        ServerNotification::PromptListChangedNotification(_) => "prompts changed".into(),
        other => format!("other {other:?}"),
    }
}

/// A client on 2025-11-25 that writes down what it hears.
#[derive(Clone, Default)]
struct Hearing(Arc<Mutex<Vec<String>>>);

impl Hearing {
    fn heard(&self) -> Vec<String> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn push(&self, notification: ServerNotification) {
        self.0
            .lock()
            .expect("not poisoned")
            .push(line(&notification));
    }
}

impl ClientHandler for Hearing {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.push(LoggingMessageNotification::new(params).into());
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.push(updated(&params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.push(ResourceListChangedNotification::default().into());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.push(PromptListChangedNotification::default().into());
    }
}

/// Announces the marker (a prompt list change) until `heard` says it
/// arrived: from then on the session hears the host.
async fn until_heard(notifier: &Notifier, mut heard: impl AsyncFnMut() -> bool) {
    for _ in 0..100 {
        notifier.notify(PromptListChangedNotification::default().into());
        if heard().await {
            return;
        }
    }
    panic!("the session never heard the host");
}

/// Property: a client on 2025-11-25 that subscribed to one resource and
/// set its level to `warning` hears exactly the error message, that
/// resource's update and both list changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_2025_hears_what_it_subscribed_to_at_its_level() {
    let (notifier, http) = served().await;
    let hearing = Hearing::default();
    let client = http_client(http.url(), hearing.clone()).await;
    assert_eq!(
        client.peer_info().map(|info| info.protocol_version.clone()),
        Some(ProtocolVersion::LATEST_WITH_INITIALIZE)
    );
    {
        client
            .subscribe(SubscribeRequestParams::new(WATCHED))
            .await
            .expect("subscribed");
        client
            .set_level(rho_mcp::rmcp::model::SetLevelRequestParams::new(
                LoggingLevel::Warning,
            ))
            .await
            .expect("level set");
    }
    until_heard(&notifier, async || {
        tokio::time::sleep(Duration::from_millis(50)).await;
        !hearing.heard().is_empty()
    })
    .await;
    let before = hearing.heard().len();
    for notification in announcements() {
        notifier.notify(notification);
    }
    // rmcp's client hands each notification to its own task, so the
    // client may write them down out of the order they came in: what it
    // heard is compared as a set (markers still on their way included).
    let expected = BTreeSet::from([
        "log Error \"at the level\"".to_owned(),
        "updated file:///watched.md".to_owned(),
        "resources changed".to_owned(),
        "prompts changed".to_owned(),
    ]);
    let heard = || -> BTreeSet<String> { hearing.heard().split_off(before).into_iter().collect() };
    for _ in 0..250 {
        if heard().len() >= expected.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A moment more for what should not come.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(heard(), expected);
    client.cancel().await.expect("closes");
    http.shutdown().await.expect("stops");
}

/// Property: a client on 2026-07-28 listening for one resource's updates
/// and the prompt list hears exactly those, in the order sent: not the
/// other resource, not the resource list it did not ask for, and no log
/// messages (they are not for a listen stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_2026_hears_what_its_listen_filter_names() {
    let (notifier, http) = served().await;
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(http.url()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discovers");
    let asked = SubscriptionFilter::builder()
        .prompts_list_changed()
        .resource_subscriptions([WATCHED])
        .build();
    let mut subscription = client.peer().listen(asked.clone()).await.expect("listens");
    assert_eq!(
        subscription.acknowledged(),
        &asked,
        "all it asked is accepted"
    );
    until_heard(&notifier, async || {
        tokio::time::timeout(Duration::from_millis(50), subscription.next())
            .await
            .is_ok()
    })
    .await;
    for notification in announcements() {
        notifier.notify(notification);
    }
    let mut heard = Vec::new();
    // Until a marker comes after something else (or nothing more comes).
    while !(heard.last().is_some_and(|last| last == "prompts changed")
        && heard.iter().any(|line| line != "prompts changed"))
    {
        let next = tokio::time::timeout(Duration::from_secs(5), subscription.next())
            .await
            .unwrap_or_else(|_| panic!("no end; heard {heard:?}"))
            .expect("the stream holds")
            .expect("the stream is open");
        heard.push(line(&next));
    }
    // Markers sent while the listener was starting to hear may come first.
    let heard: Vec<_> = heard
        .into_iter()
        .skip_while(|line| line == "prompts changed")
        .collect();
    assert_eq!(heard, ["updated file:///watched.md", "prompts changed"]);
    client.cancel().await.expect("closes");
    http.shutdown().await.expect("stops");
}
