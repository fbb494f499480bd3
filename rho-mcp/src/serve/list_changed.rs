//! `notifications/tools/list_changed` when the registry's list changes:
//! to a session from its `initialized` on (revisions up to 2025-11-25),
//! and on each `subscriptions/listen` stream that asked for it (2026-07-28,
//! where a request may be a session of its own and notifications come
//! only to a client that listens).
//!
//! The registry calls a listener on the thread that changed it (a source
//! adding a tool, the loop that quarantined one); the listener only wakes
//! the task that tells the client. Changes that come while a notification
//! is being sent are told once more after it, so the client always ends up
//! listing the current tools.

use std::sync::Arc;

use rho_registry::{ChangeSubscription, ToolRegistry};
use rmcp::service::SubscriptionContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Tells `peer` of every change of `registry`'s tool list until `closed`
/// is cancelled or the subscription is dropped.
pub(crate) fn forward(
    registry: &ToolRegistry,
    peer: Peer<RoleServer>,
    closed: CancellationToken,
) -> ChangeSubscription {
    let changed = Arc::new(Notify::new());
    let wake = changed.clone();
    // `notify_one` keeps one wake-up when the task is busy: no change is
    // lost, and a burst of changes is told once or twice, not once each.
    let subscription = registry.on_tools_changed(move || wake.notify_one());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = closed.cancelled() => break,
                () = changed.notified() => {
                    if peer.notify_tool_list_changed().await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    subscription
}

/// Tells the client listening on `subscription` of every change of
/// `registry`'s tool list, until it stops listening, the session is
/// `closed`, or the stream fails.
pub(crate) async fn listen(
    registry: &ToolRegistry,
    subscription: &SubscriptionContext,
    closed: &CancellationToken,
) {
    let changed = Arc::new(Notify::new());
    let wake = changed.clone();
    let _listening = registry.on_tools_changed(move || wake.notify_one());
    let sink = subscription.sink().clone();
    loop {
        tokio::select! {
            () = subscription.cancelled() => break,
            () = closed.cancelled() => break,
            () = changed.notified() => {
                if sink.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        }
    }
}
