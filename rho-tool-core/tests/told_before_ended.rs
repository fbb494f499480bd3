//! What a call's task told the loop comes before its end, even when the
//! task ran whole between two of the loop's looks.
//!
//! On a multi-threaded executor a call's task can send its running notice,
//! queue partial results and end while the loop is between reading the
//! notice and polling the task. The executor here makes that interleaving
//! certain instead of rare: a task runs only inside its handle's poll, so
//! the handle's first look at the notice finds nothing, and the poll that
//! follows runs the whole task.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use rho_tool_core::{
    CallEvent, Executor, Joined, Outcome, Runner, TaskHandle, Tool, ToolCall, ToolContext,
    ToolOutput, async_trait,
};
use serde_json::Value;

/// An executor whose tasks run where their handles are awaited, and whose
/// timers never fire (the calls here end well before any deadline).
#[derive(Clone)]
struct WhereAwaited;

struct Awaited<T> {
    future: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
}

impl<T> Future for Awaited<T> {
    type Output = Joined<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Joined<T>> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Ready(Joined::Killed);
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(value) => {
                self.future = None;
                Poll::Ready(Joined::Done(value))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Send + 'static> TaskHandle<T> for Awaited<T> {
    fn kill(&mut self) {
        self.future = None;
    }
}

impl Executor for WhereAwaited {
    type Handle<T: Send + 'static> = Awaited<T>;
    type Sleep = std::future::Pending<()>;

    // The task never waits behind the loop: it runs inside the loop's poll.
    const HOLDS_WOKEN_TASKS: bool = false;

    fn spawn<F>(&self, future: F) -> Awaited<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Awaited {
            future: Some(Box::pin(future)),
        }
    }

    fn sleep(&self, _duration: Duration) -> Self::Sleep {
        std::future::pending()
    }
}

/// A tool that reports `updates` partial results and answers at once.
struct Reports {
    updates: usize,
}

#[async_trait]
impl Tool for Reports {
    fn name(&self) -> &str {
        "reports"
    }

    fn description(&self) -> &str {
        "Reports partial results, then answers."
    }

    async fn run(&self, _arguments: Value, cx: ToolContext) -> ToolOutput {
        for step in 0..self.updates {
            cx.update(&step).expect("a number is plain data");
        }
        ToolOutput::text("done")
    }
}

struct Nobody;

impl Wake for Nobody {
    fn wake(self: Arc<Self>) {}
}

/// Polls `poll` to readiness; every task here is ready at its first poll.
fn ready<T>(mut poll: impl FnMut(&mut Context<'_>) -> Poll<T>) -> T {
    let waker = Waker::from(Arc::new(Nobody));
    let mut cx = Context::from_waker(&waker);
    match poll(&mut cx) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("the call did not go on at once"),
    }
}

fn call() -> ToolCall {
    ToolCall::new("c1", "reports", serde_json::json!({}))
}

/// Property: read event by event, a call whose task sent its notice and
/// partial results and ended before the loop saw any of it reports
/// `Running`, then every partial result in order, then its end, which
/// counts a run.
#[test]
fn running_and_partial_results_come_before_an_end_seen_at_once() {
    let runner = Runner::new(WhereAwaited);
    let mut handle = runner.start(call(), Arc::new(Reports { updates: 3 }));
    let mut events = Vec::new();
    loop {
        match ready(|cx| handle.poll_event(cx)) {
            Some(CallEvent::Ended(end)) => {
                assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
                assert!(end.ran.is_some(), "the end counts no run: {end:?}");
                events.push("ended".to_owned());
                break;
            }
            Some(CallEvent::Running(_)) => events.push("running".to_owned()),
            Some(CallEvent::Update(update)) => events.push(format!("update {:?}", update.partial)),
            Some(other) => events.push(format!("{other:?}")),
            None => panic!("the call ended without its end: {events:?}"),
        }
    }
    assert_eq!(
        events,
        [
            "running",
            "update UInt(0)",
            "update UInt(1)",
            "update UInt(2)",
            "ended",
        ],
    );
    assert!(
        ready(|cx| handle.poll_event(cx)).is_none(),
        "events after the end"
    );
}

/// Property: awaited for its end only, such a call's end still counts the
/// run (its `ran` is the time since the gate allowed, not absent).
#[test]
fn an_end_seen_at_once_still_counts_its_run() {
    let runner = Runner::new(WhereAwaited);
    let mut handle = runner.start(call(), Arc::new(Reports { updates: 0 }));
    let end = ready(|cx| Pin::new(&mut handle).poll(cx));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert!(end.ran.is_some(), "the end counts no run: {end:?}");
}
