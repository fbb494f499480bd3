//! `OffLoop`: a policy whose hooks run off the loop, for a source that is
//! slow to hear about calls.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};

use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{CallEnd, Content, TaskId, ToolCall, ToolResult, Watch};

use crate::changes::ToolListNotifier;
use crate::policy::{Disabled, SourcePolicy};

/// Wraps a policy whose [`started`](rho_tool_core::Watch::started) and
/// [`ended`](rho_tool_core::Watch::ended) may be slow or block: the loop only puts
/// each event on a channel (one allocation, no waiting) and a [`Drain`]
/// elsewhere hands the events to the inner policy, in order.
///
/// [`disabled`](SourcePolicy::disabled) is a question the look-up needs
/// answered at once, so it still goes to the inner policy directly: keep it
/// quick, and do not hold a lock in the slow hooks that it needs.
///
/// The inner policy gets each end with the result's text only: images,
/// other media and details stay with the loop, which would otherwise copy
/// them (in the loop, where `OffLoop` exists to spare it work) for a policy
/// that counts and keeps a last error.
///
/// The inner policy hears of each end a little later than the loop does;
/// with [`Accounting`](crate::Accounting) inside, a quarantine takes effect
/// when the drain gets to the strike that causes it, so a few calls may
/// still start meanwhile. The channel is unbounded: a policy that stays
/// slower than the calls' rate makes it grow.
///
/// ```
/// use std::sync::Arc;
/// use rho::registry::OffLoop;
/// use rho::{Accounting, Source};
///
/// let accounting = Arc::new(Accounting::default());
/// let off_loop = OffLoop::on_thread(accounting.clone()).expect("a thread");
/// let source = Source::untrusted("agent-written").with_policy(Arc::new(off_loop));
/// # let _ = source;
/// ```
pub struct OffLoop {
    inner: Arc<dyn SourcePolicy>,
    sender: Sender<Event>,
    pending: Arc<AtomicUsize>,
}

/// Hands a [`OffLoop`] policy's events to the inner policy. Runs wherever the
/// host likes: [`run`](Drain::run) on a thread of its own, or
/// [`drain`](Drain::drain) now and then.
pub struct Drain {
    inner: Arc<dyn SourcePolicy>,
    receiver: Receiver<Event>,
    pending: Arc<AtomicUsize>,
}

#[derive(Debug)]
enum Event {
    Started { call: Box<ToolCall>, task: TaskId },
    Ended(Box<CallEnd>),
}

impl OffLoop {
    /// `inner` behind a queue, and the drain that empties it.
    pub fn new(inner: Arc<dyn SourcePolicy>) -> (Self, Drain) {
        let (sender, receiver) = channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let queued = Self {
            inner: inner.clone(),
            sender,
            pending: pending.clone(),
        };
        let drain = Drain {
            inner,
            receiver,
            pending,
        };
        (queued, drain)
    }

    /// `inner` behind a queue drained by a thread of its own (named
    /// `rho-registry-queue`), which ends once this `OffLoop` is dropped and
    /// the queue is empty.
    ///
    /// # Errors
    ///
    /// When the thread cannot be spawned.
    pub fn on_thread(inner: Arc<dyn SourcePolicy>) -> std::io::Result<Self> {
        let (queued, drain) = Self::new(inner);
        std::thread::Builder::new()
            .name("rho-registry-queue".to_owned())
            .spawn(move || drain.run())?;
        Ok(queued)
    }

    /// Events queued and not yet handled by the inner policy.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    fn send(&self, event: Event) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        if self.sender.send(event).is_err() {
            // The drain is gone: nobody will hear of it.
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Watch for OffLoop {
    /// Queues the call without its arguments: they may be large, and the
    /// loop copies what it queues (the end likewise keeps only its text).
    fn started(&self, call: &ToolCall, task: TaskId) {
        let call = ToolCall::new(call.id.clone(), call.name.clone(), serde_json::Value::Null);
        self.send(Event::Started {
            call: Box::new(call),
            task,
        });
    }

    fn ended(&self, end: &CallEnd) {
        self.send(Event::Ended(Box::new(text_only(end))));
    }
}

impl SourcePolicy for OffLoop {
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        self.inner.disabled(tool)
    }

    /// Registration is not a call: the inner policy is told at once.
    fn attach(&self, notifier: ToolListNotifier) {
        self.inner.attach(notifier);
    }
}

/// A copy of `end` whose result keeps its text parts and nothing else.
fn text_only(end: &CallEnd) -> CallEnd {
    let texts = end
        .result
        .content()
        .iter()
        .filter_map(Content::as_text)
        .map(Content::text);
    CallEnd {
        call_id: end.call_id.clone(),
        tool: end.tool.clone(),
        task: end.task,
        outcome: end.outcome,
        result: ToolResult::from_content(texts, end.result.is_error),
        waited: end.waited,
        queued: end.queued,
        ran: end.ran,
    }
}

impl Drain {
    /// Hands events to the inner policy as they come, until every sender
    /// (the [`OffLoop`]) is gone and the queue is empty. Blocks: run it on a
    /// thread of its own.
    pub fn run(self) {
        while let Ok(event) = self.receiver.recv() {
            self.handle(event);
        }
    }

    /// Hands the events queued now to the inner policy, without waiting for
    /// more; returns how many there were.
    pub fn drain(&self) -> usize {
        let mut handled = 0;
        loop {
            match self.receiver.try_recv() {
                Ok(event) => {
                    self.handle(event);
                    handled += 1;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return handled,
            }
        }
    }

    fn handle(&self, event: Event) {
        // A panic of the inner policy loses that one event, not the drain.
        let _ = call_contained(|| match &event {
            Event::Started { call, task } => self.inner.started(call, *task),
            Event::Ended(end) => self.inner.ended(end),
        });
        self.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

impl fmt::Debug for OffLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OffLoop")
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Drain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drain")
            .field("pending", &self.pending.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

/// Taken by value where a policy is asked for
/// ([`Source::with_policy`](crate::Source::with_policy)).
impl rho_tool_core::IntoShared<dyn SourcePolicy> for OffLoop {
    fn into_shared(self) -> std::sync::Arc<dyn SourcePolicy> {
        std::sync::Arc::new(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use rho_tool_core::untrusted::Plain;
    use rho_tool_core::{Image, Outcome};

    use super::*;

    #[derive(Default)]
    struct Keep(Mutex<Vec<CallEnd>>);

    impl Watch for Keep {
        fn ended(&self, end: &CallEnd) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(end.clone());
        }
    }

    impl SourcePolicy for Keep {}

    /// The loop copies only the end's text for an off-loop policy: a megabyte
    /// image and the details stay with the loop, and the rest of the end
    /// arrives as it was.
    #[test]
    fn the_inner_policy_gets_the_ends_text_without_images_or_details() {
        let keep = Arc::new(Keep::default());
        let (queued, drain) = OffLoop::new(keep.clone());
        let picture = Image::new("image/png", vec![7; 1 << 20]);
        let result = ToolResult::from_content(
            [
                Content::text("a chart"),
                Content::image(picture),
                Content::text("of sales"),
            ],
            true,
        )
        .with_details(Plain::from(serde_json::json!({ "rows": [1, 2, 3] })));
        let end = CallEnd {
            call_id: "call-1".to_owned(),
            tool: "chart".to_owned(),
            task: TaskId::NONE,
            outcome: Outcome::Failed,
            result,
            waited: Duration::from_millis(3),
            queued: Duration::ZERO,
            ran: Some(Duration::from_millis(5)),
        };
        queued.ended(&end);
        assert_eq!(queued.pending(), 1);
        assert_eq!(drain.drain(), 1);
        let got = keep
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .expect("the end arrived");
        assert_eq!(
            got.result.content(),
            [Content::text("a chart"), Content::text("of sales")]
        );
        assert_eq!(got.result.details, None);
        assert!(got.result.is_error);
        assert_eq!(
            (
                got.call_id.as_str(),
                got.tool.as_str(),
                got.outcome,
                got.waited,
                got.ran
            ),
            ("call-1", "chart", Outcome::Failed, end.waited, end.ran)
        );
    }
}
