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
//!
//! A notification may also be for one session alone ([`Audience`]): what
//! a proxy's server said on the connection the proxy opened for that
//! session's client (a change of the tools it lists there among them,
//! which is what that client is shown of the registry's: the registry's
//! own changes reach every session from the registry). Such a session is then served apart: it hears what
//! is sent to it, and no longer what is sent to every session (that came
//! from a connection that is not its own).

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
    sender: broadcast::Sender<(Audience, ServerNotification)>,
    /// The sessions that hear only what is sent to them alone.
    apart: Arc<Mutex<HashSet<u64>>>,
}

/// Who a notification sent on a [`Notifier`] is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Audience {
    /// Every session not served apart.
    #[default]
    Everyone,
    /// The session of this number alone.
    Session(u64),
}

impl Notifier {
    /// A notifier no session hears yet.
    pub fn new() -> Self {
        Self {
            sender: broadcast::Sender::new(BACKLOG),
            apart: Arc::default(),
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
        self.notify_to(Audience::Everyone, notification);
    }

    /// Sends `notification` to `audience`, which passes it on as
    /// [`notify`](Notifier::notify) says.
    pub(crate) fn notify_to(&self, audience: Audience, notification: ServerNotification) {
        // An error only says no session is open.
        let _ = self.sender.send((audience, notification));
    }

    /// Serves session `number` apart (`true`: it hears only what is sent
    /// to it alone) or with every session again (`false`).
    pub(crate) fn set_apart(&self, number: u64, apart: bool) {
        let mut sessions = self.apart.lock().unwrap_or_else(PoisonError::into_inner);
        if apart {
            sessions.insert(number);
        } else {
            sessions.remove(&number);
        }
    }

    /// Whether session `number` hears what was sent to `audience`.
    fn reaches(&self, audience: Audience, number: u64) -> bool {
        match audience {
            Audience::Session(only) => only == number,
            Audience::Everyone => !self
                .apart
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&number),
        }
    }

    fn hear(&self) -> broadcast::Receiver<(Audience, ServerNotification)> {
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
/// `threshold` passes `notification`, sent to `audience`, on.
fn wanted(
    audience: Audience,
    notification: &ServerNotification,
    subscribed: &Subscribed,
    threshold: &LogThreshold,
) -> bool {
    match notification {
        ServerNotification::ResourceListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_) => true,
        // The registry tells every session of its own changes; what is
        // sent to one session alone is what that client is shown of them.
        ServerNotification::ToolListChangedNotification(_) => {
            matches!(audience, Audience::Session(_))
        }
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

/// What a session hears when it fell behind: every list may have changed
/// (its tools too, when what it is shown of them is told to it alone).
fn relisted() -> [ServerNotification; 3] {
    [
        ServerNotification::ResourceListChangedNotification(Default::default()),
        ServerNotification::PromptListChangedNotification(Default::default()),
        ServerNotification::ToolListChangedNotification(Default::default()),
    ]
}

/// Passes what `notifier` sends on to `peer`, the client of session
/// `number`, as it asked, until `closed` is cancelled or the client is
/// gone (a session before 2026-07-28, from its `initialized` on).
pub(crate) fn forward(
    notifier: &Notifier,
    number: u64,
    peer: Peer<RoleServer>,
    subscribed: Subscribed,
    threshold: LogThreshold,
    closed: CancellationToken,
) {
    let mut heard = notifier.hear();
    let notifier = notifier.clone();
    tokio::spawn(async move {
        loop {
            let notifications = tokio::select! {
                () = closed.cancelled() => break,
                received = heard.recv() => match received {
                    Ok((audience, notification))
                        if notifier.reaches(audience, number)
                            && wanted(audience, &notification, &subscribed, &threshold) =>
                    {
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
/// `subscription` in session `number`, as far as its filter allows, until
/// it stops listening, the session is `closed`, or the stream fails.
pub(crate) async fn listen(
    notifier: &Notifier,
    number: u64,
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
                Ok((audience, notification)) if notifier.reaches(audience, number) => {
                    vec![notification]
                }
                Ok(_) => continue,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Property: a notification for one session reaches that session
    /// alone; one for everyone reaches every session except those served
    /// apart, and reaches a session again once it is no longer apart.
    #[test]
    fn a_session_served_apart_hears_only_what_is_its_own() {
        let notifier = Notifier::new();
        notifier.set_apart(1, true);
        assert!(notifier.reaches(Audience::Session(1), 1));
        assert!(!notifier.reaches(Audience::Everyone, 1));
        assert!(!notifier.reaches(Audience::Session(1), 2));
        assert!(notifier.reaches(Audience::Everyone, 2));
        assert!(!notifier.reaches(Audience::Session(2), 1));
        notifier.set_apart(1, false);
        assert!(notifier.reaches(Audience::Everyone, 1));
    }
}
