//! Partial results as `notifications/progress`, for a client that asked.
//!
//! A client that wants progress puts a progress token in the call's
//! `_meta`; each partial result the tool reports
//! ([`ToolContext::update`](rho_tool_core::ToolContext::update)) then goes
//! out as a progress notification with that token. MCP wants `progress` to
//! grow with every notification: a partial result that carries a number
//! `progress` greater than the last one sent gives it (and `total` and
//! `message`, when it has them); any other partial result counts one step
//! on, and its text (a string as it is, anything else as compact JSON) is
//! the message.
//!
//! The call never waits for the client: notifications go through a small
//! queue to a task of their own, and when the client reads slower than the
//! tool reports, the newest partial results are dropped (the tool's clock
//! must not depend on how fast a client reads). The queue and its task are
//! made at the first partial result: some clients (rmcp's) send a progress
//! token with every call, and most tools never report one.

use rho_tool_core::Update;
use rho_tool_core::untrusted::Plain;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;

/// How many progress notifications may wait for the client per call.
const QUEUE: usize = 64;
/// How many bytes of a partial result a message keeps.
const MAX_MESSAGE: usize = 4096;

/// Sends one call's partial results to the client that asked for them.
#[derive(Debug)]
pub(crate) struct Progress {
    token: ProgressToken,
    last: f64,
    queue: Queue,
}

/// Where notifications go: the client, until the first one is sent; then
/// the queue of the task that sends them.
#[derive(Debug)]
enum Queue {
    NotYet(Peer<RoleServer>),
    Started(mpsc::Sender<ProgressNotificationParam>),
}

impl Progress {
    /// A sender of notifications with `token` to `peer`; the task that
    /// sends them (started at the first) ends when this is dropped, after
    /// what is queued.
    pub(crate) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        Self {
            token,
            last: 0.0,
            queue: Queue::NotYet(peer),
        }
    }

    /// Queues the notification of `update`; drops it when the queue is
    /// full.
    pub(crate) fn report(&mut self, update: &Update) {
        let notification = self.notification(&update.partial);
        if let Queue::NotYet(peer) = &self.queue {
            let peer = peer.clone();
            let (queue, mut queued) = mpsc::channel::<ProgressNotificationParam>(QUEUE);
            tokio::spawn(async move {
                while let Some(notification) = queued.recv().await {
                    if peer.notify_progress(notification).await.is_err() {
                        // The client is gone: nothing more to tell.
                        break;
                    }
                }
            });
            self.queue = Queue::Started(queue);
        }
        if let Queue::Started(queue) = &self.queue {
            let _ = queue.try_send(notification);
        }
    }

    fn notification(&mut self, partial: &Plain) -> ProgressNotificationParam {
        let number = |key: &str| partial.get(key).and_then(Plain::as_f64);
        let (progress, total, message) = match number("progress") {
            Some(progress) if progress > self.last && progress.is_finite() => (
                progress,
                number("total").filter(|total| total.is_finite()),
                partial
                    .get("message")
                    .and_then(Plain::as_str)
                    .map(str::to_owned),
            ),
            _ => (self.last + 1.0, None, Some(message_of(partial))),
        };
        self.last = progress;
        let mut notification = ProgressNotificationParam::new(self.token.clone(), progress);
        notification.total = total;
        notification.message = message.map(|text| cut(text, MAX_MESSAGE));
        notification
    }
}

fn message_of(partial: &Plain) -> String {
    match partial.as_str() {
        Some(text) => text.to_owned(),
        None => partial.to_json().to_string(),
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
