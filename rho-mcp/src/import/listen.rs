//! Hearing a server on 2026-07-28, which announces only on the streams a
//! client opens with `subscriptions/listen`: its tool list changed (the
//! source lists again), its resource and prompt lists changed and updates
//! of the resources the source's features were asked to follow (handed to
//! the source's notifier, as a server on 2025-11-25 announces them by
//! itself).
//!
//! One stream a connection, opened again with a new filter when the set of
//! followed resources changes, after a pause when the server ends it, and
//! only with a new filter when the server refused it; its owner stops
//! following when the connection dies. Nothing is heard while no stream is
//! open, so each open is followed by what a change would have caused: the
//! source lists its tools again, and on a stream opened again its features
//! are told that everything they pass on may have changed.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{
    PromptListChangedNotification, ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerNotification, SubscriptionFilter,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use tokio::sync::watch;

use super::handler::Heard;

/// How long to wait before listening again on a stream the server ended
/// (or refused to open).
const AGAIN_AFTER: Duration = Duration::from_secs(1);

/// The resources a source's features were asked to follow, shared by its
/// connections: whoever listens follows what it holds when it opens its
/// stream, and opens it again when it changes.
///
/// Each resource is counted by how many subscriptions ask for it: the
/// source serves many clients (a proxy over HTTP), and one client's
/// unsubscribe must not stop the updates another still wants. A client
/// that leaves without unsubscribing keeps its count, which costs updates
/// nobody reads (rho's server sends each client only what it subscribed
/// to), never updates that are wanted.
#[derive(Clone)]
pub(crate) struct Followed(watch::Sender<BTreeMap<String, usize>>);

impl Default for Followed {
    fn default() -> Self {
        Self(watch::Sender::new(BTreeMap::new()))
    }
}

impl Followed {
    /// One more subscription to `uri`; whether it is the first, which
    /// changes what the server is asked for.
    pub(crate) fn follow(&self, uri: String) -> bool {
        self.0.send_if_modified(|uris| {
            let count = uris.entry(uri).or_default();
            *count += 1;
            *count == 1
        })
    }

    /// One subscription to `uri` fewer; whether it was the last (and the
    /// server is no longer asked for its updates). Unfollowing what
    /// nobody follows changes nothing.
    pub(crate) fn unfollow(&self, uri: &str) -> bool {
        self.0.send_if_modified(|uris| match uris.get_mut(uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => uris.remove(uri).is_some(),
            None => false,
        })
    }

    /// Each resource followed now, once.
    pub(crate) fn uris(&self) -> Vec<String> {
        self.0.borrow().keys().cloned().collect()
    }

    fn watch(&self) -> watch::Receiver<BTreeMap<String, usize>> {
        self.0.subscribe()
    }
}

/// What to ask the server for: its tool list always, its other lists and
/// subscriptions as far as it declared them.
fn filter(declared: &ServerCapabilities, followed: &BTreeMap<String, usize>) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::builder().tools_list_changed().build();
    if let Some(resources) = &declared.resources {
        if resources.list_changed == Some(true) {
            filter.resources_list_changed = Some(true);
        }
        if resources.subscribe == Some(true) && !followed.is_empty() {
            filter.resource_subscriptions = Some(followed.keys().cloned().collect());
        }
    }
    if declared
        .prompts
        .as_ref()
        .and_then(|prompts| prompts.list_changed)
        == Some(true)
    {
        filter.prompts_list_changed = Some(true);
    }
    filter
}

/// Listens to the server behind `peer`, handing what it announces to
/// `heard`; returns only when nobody follows resources any more (the
/// source is gone).
pub(crate) async fn follow(peer: Peer<RoleClient>, declared: ServerCapabilities, heard: Heard) {
    let mut followed = heard.followed.watch();
    let mut opened_before = false;
    loop {
        let asked = filter(&declared, &followed.borrow_and_update());
        let listening = peer.listen(asked).await;
        let again = match listening {
            Ok(mut subscription) => {
                if std::mem::replace(&mut opened_before, true) {
                    missed_while_deaf(&heard, subscription.acknowledged());
                } else {
                    // The tools listed at the handshake may have changed
                    // before the server acknowledged this stream.
                    heard.tools_changed.notify_one();
                }
                loop {
                    tokio::select! {
                        changed = followed.changed() => {
                            if changed.is_err() {
                                return;
                            }
                            // Dropping the stream cancels it; the next one
                            // asks for the new set.
                            break Again::Now;
                        }
                        next = subscription.next() => match next {
                            Ok(Some(notification)) => hear(&heard, notification),
                            // Ended by the server, or broken.
                            Ok(None) | Err(_) => break Again::AfterAPause,
                        },
                    }
                }
            }
            // Refused: asking the same again would be refused again.
            Err(ServiceError::McpError(_)) => Again::WhenTheFilterChanges,
            Err(_) => Again::AfterAPause,
        };
        match again {
            Again::Now => {}
            Again::AfterAPause => tokio::time::sleep(AGAIN_AFTER).await,
            Again::WhenTheFilterChanges => {
                if followed.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// What a stream opened again may have missed while none was open: the
/// source lists its tools again, and its features are told that what the
/// new stream follows (as the server acknowledged it) changed.
fn missed_while_deaf(heard: &Heard, asked: &SubscriptionFilter) {
    heard.tools_changed.notify_one();
    if asked.resources_list_changed == Some(true) {
        heard.announce(ResourceListChangedNotification::default().into());
    }
    if asked.prompts_list_changed == Some(true) {
        heard.announce(PromptListChangedNotification::default().into());
    }
    for uri in asked.resource_subscriptions.iter().flatten() {
        heard.announce(
            ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri.clone()))
                .into(),
        );
    }
}

/// When to listen again.
enum Again {
    /// The filter changed.
    Now,
    /// The server ended the stream, or could not be reached.
    AfterAPause,
    /// The server refused the stream.
    WhenTheFilterChanges,
}

/// Hands one announcement to where the source hears it.
fn hear(heard: &Heard, notification: ServerNotification) {
    match notification {
        ServerNotification::ToolListChangedNotification(_) => heard.tools_changed.notify_one(),
        other @ (ServerNotification::ResourceListChangedNotification(_)
        | ServerNotification::ResourceUpdatedNotification(_)
        | ServerNotification::PromptListChangedNotification(_)) => heard.announce(other),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::Followed;

    fn followed(followed: &Followed) -> Vec<String> {
        followed.watch().borrow().keys().cloned().collect()
    }

    /// Property: a resource stays followed while any subscription to it
    /// is left, and only the first follow and the last unfollow change
    /// what the server is asked for.
    #[test]
    fn a_resource_is_followed_until_its_last_subscription_goes() {
        let set = Followed::default();
        assert!(
            set.follow("a".into()),
            "the first follow changes the filter"
        );
        assert!(!set.follow("a".into()), "a second one does not");
        assert!(!set.unfollow("a"), "one subscription is left");
        assert_eq!(followed(&set), ["a"]);
        assert!(set.unfollow("a"), "the last one goes");
        assert!(followed(&set).is_empty());
        assert!(!set.unfollow("a"), "nobody follows it");
        assert!(!set.unfollow("never"), "nobody ever did");
    }
}
