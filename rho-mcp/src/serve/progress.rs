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
//! The call never waits for the client while it runs: notifications go
//! through a small queue to a task of their own, and when the client reads
//! slower than the tool reports, the newest partial results are dropped
//! (the tool's clock must not depend on how fast a client reads). Its
//! answer waits for that task, so it never overtakes its own progress
//! (unless the call was stopped: its progress then goes with it). The
//! queue and its task are made at the first partial result: some clients
//! (rmcp's) send a progress token with every call, and most tools never
//! report one.

use rho_tool_core::Update;
use rho_tool_core::untrusted::Plain;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How many progress notifications may wait for the client per call.
const QUEUE: usize = 64;
/// How many bytes of a partial result a message keeps.
const MAX_MESSAGE: usize = 4096;

/// Where a call's progress notifications go: through rmcp's service, as
/// its handlers' messages go (so before the call's answer).
pub(crate) type ProgressSink = Peer<RoleServer>;

/// Sends one call's partial results to the client that asked for them.
pub(crate) struct Progress {
    token: ProgressToken,
    last: f64,
    queue: Queue,
}

/// Where notifications go: the sink, until the first one is sent; then
/// the queue of the task that sends them.
enum Queue {
    NotYet(ProgressSink),
    Started {
        queue: mpsc::Sender<ProgressNotificationParam>,
        task: JoinHandle<()>,
    },
    /// Finished or given up.
    Done,
}

/// A call given up leaves no progress behind: what is still queued would
/// reach the client after the call's end, or hold its stream for a
/// client that stopped reading.
impl Drop for Progress {
    fn drop(&mut self) {
        if let Queue::Started { task, .. } = &self.queue {
            task.abort();
        }
    }
}

impl Progress {
    /// A sender of notifications with `token` to `sink`; the task that
    /// sends them is started at the first.
    pub(crate) fn start(sink: ProgressSink, token: ProgressToken) -> Self {
        Self {
            token,
            last: 0.0,
            queue: Queue::NotYet(sink),
        }
    }

    /// Queues the notification of `update`; drops it when the queue is
    /// full.
    pub(crate) fn report(&mut self, update: &Update) {
        let notification = self.notification(&update.partial);
        if let Queue::NotYet(sink) = &self.queue {
            let sink = sink.clone();
            let (queue, queued) = mpsc::channel::<ProgressNotificationParam>(QUEUE);
            let task = tokio::spawn(send_all(sink, queued));
            self.queue = Queue::Started { queue, task };
        }
        if let Queue::Started { queue, .. } = &self.queue {
            let _ = queue.try_send(notification);
        }
    }

    /// Waits until what was queued is sent (or the client is gone): the
    /// call's answer must not overtake its progress.
    pub(crate) async fn finish(mut self) {
        if let Queue::Started { queue, task } = std::mem::replace(&mut self.queue, Queue::Done) {
            drop(queue);
            let _ = task.await;
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

/// Sends each queued notification to `sink`, in order, until the queue
/// closes or the client is gone.
async fn send_all(sink: ProgressSink, mut queued: mpsc::Receiver<ProgressNotificationParam>) {
    while let Some(notification) = queued.recv().await {
        let sent = sink.notify_progress(notification).await.is_ok();
        if !sent {
            // The client is gone: nothing more to tell.
            break;
        }
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
