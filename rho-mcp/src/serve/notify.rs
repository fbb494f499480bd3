//! What a host's features tell its clients: their resource or prompt lists
//! changed, a resource changed, a log message.
//!
//! The host sends each notification once, on its [`Notifier`]; every
//! session hears it and passes on what its client asked for: the list
//! changes always, an update of a resource only to a client subscribed to
//! it, a log message only at the client's level or more severe. A client
//! before 2026-07-28 hears them from its `initialized` on; one on
//! 2026-07-28 only on a `subscriptions/listen` stream, as that stream's
//! filter allows (rmcp applies it).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ServerNotification;
use rmcp::service::SubscriptionContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::client::LogThreshold;

/// How many notifications a session may fall behind before it misses
/// some: a session that falls further behind is told both lists changed,
/// so it lists them again, and loses the log messages and updates between.
const BACKLOG: usize = 256;

/// Where a host's [`McpFeatures`](crate::serve::McpFeatures) send
/// notifications to the server's clients.
///
/// Cheap to clone; hand it out from
/// [`McpFeatures::notifier`](crate::serve::McpFeatures::notifier). What is
/// sent reaches the sessions open at the time; with no session open it is
/// dropped, as a client that is not connected cannot be told.
///
/// ```
/// use rho_mcp::rmcp::model::{ResourceUpdatedNotification, ResourceUpdatedNotificationParam};
/// use rho_mcp::serve::Notifier;
///
/// let notifier = Notifier::new();
/// notifier.notify(
///     ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new("file:///README.md"))
///         .into(),
/// );
/// ```
#[derive(Clone, Debug)]
pub struct Notifier {
    sender: broadcast::Sender<ServerNotification>,
}

impl Notifier {
    /// A notifier no session hears yet.
    pub fn new() -> Self {
        Self {
            sender: broadcast::Sender::new(BACKLOG),
        }
    }

    /// Sends `notification` to every session, which passes it on if its
    /// client asked for it. A server's features send
    /// `notifications/resources/list_changed`,
    /// `notifications/resources/updated`,
    /// `notifications/prompts/list_changed` and `notifications/message`;
    /// the rest (tools, progress, tasks) are rho's to send, and sessions
    /// pass them on to nobody.
    pub fn notify(&self, notification: ServerNotification) {
        // An error only says no session is open.
        let _ = self.sender.send(notification);
    }

    fn hear(&self) -> broadcast::Receiver<ServerNotification> {
        self.sender.subscribe()
    }
}

impl Default for Notifier {
    fn default() -> Self {
        Self::new()
    }
}

/// The resources a session's client subscribed to (before 2026-07-28).
#[derive(Clone, Default)]
pub(crate) struct Subscribed(Arc<Mutex<HashSet<String>>>);

impl Subscribed {
    pub(crate) fn add(&self, uri: String) {
        self.set().insert(uri);
    }

    pub(crate) fn remove(&self, uri: &str) {
        self.set().remove(uri);
    }

    fn contains(&self, uri: &str) -> bool {
        self.set().contains(uri)
    }

    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a session whose client subscribed to `subscribed` and logs at
/// `threshold` passes `notification` on.
fn wanted(
    notification: &ServerNotification,
    subscribed: &Subscribed,
    threshold: &LogThreshold,
) -> bool {
    match notification {
        ServerNotification::ResourceListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_) => true,
        ServerNotification::ResourceUpdatedNotification(update) => {
            subscribed.contains(&update.params.uri)
        }
        // Deprecated by SEP-2577 with the rest of logging; servers on
        // 2025-11-25 still log so.
        #[allow(deprecated)]
        ServerNotification::LoggingMessageNotification(message) => {
            threshold.passes(message.params.level)
        }
        _ => false,
    }
}

/// What a session hears when it fell behind: both lists may have changed.
fn relisted() -> [ServerNotification; 2] {
    [
        ServerNotification::ResourceListChangedNotification(Default::default()),
        ServerNotification::PromptListChangedNotification(Default::default()),
    ]
}

/// Passes what `notifier` sends on to `peer`, as its client asked, until
/// `closed` is cancelled or the client is gone (a session before
/// 2026-07-28, from its `initialized` on).
pub(crate) fn forward(
    notifier: &Notifier,
    peer: Peer<RoleServer>,
    subscribed: Subscribed,
    threshold: LogThreshold,
    closed: CancellationToken,
) {
    let mut heard = notifier.hear();
    tokio::spawn(async move {
        loop {
            let notifications = tokio::select! {
                () = closed.cancelled() => break,
                received = heard.recv() => match received {
                    Ok(notification) if wanted(&notification, &subscribed, &threshold) => {
                        vec![notification]
                    }
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => relisted().into(),
                    Err(RecvError::Closed) => break,
                },
            };
            for notification in notifications {
                if peer.send_notification(notification).await.is_err() {
                    return;
                }
            }
        }
    });
}

/// Passes what `notifier` sends on to the client listening on
/// `subscription`, as far as its filter allows, until it stops listening,
/// the session is `closed`, or the stream fails.
pub(crate) async fn listen(
    notifier: &Notifier,
    subscription: &SubscriptionContext,
    closed: &CancellationToken,
) {
    let mut heard = notifier.hear();
    let sink = subscription.sink().clone();
    loop {
        let notifications = tokio::select! {
            () = subscription.cancelled() => break,
            () = closed.cancelled() => break,
            received = heard.recv() => match received {
                Ok(notification) => vec![notification],
                Err(RecvError::Lagged(_)) => relisted().into(),
                Err(RecvError::Closed) => break,
            },
        };
        for notification in notifications {
            use rmcp::service::SubscriptionSendError;
            match sink.send(notification).await {
                // Not asked for, or not for a stream: it is not this
                // client's.
                Ok(())
                | Err(
                    SubscriptionSendError::NotificationNotAccepted(_)
                    | SubscriptionSendError::UnsupportedNotification(_),
                ) => {}
                Err(_) => return,
            }
        }
    }
}
