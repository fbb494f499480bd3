//! The floor: what a careful engineer would write by hand to run one tool
//! call in its own task, with the same observable job as rho's runner and
//! nothing else.
//!
//! Per call it does, on the runtime's own primitives:
//!
//! - one `spawn` of the call's task;
//! - in the task, a gate-like step: a `dyn` gate's boxed `check` future,
//!   polled inside `catch_unwind` (the default gate allows at once);
//! - a one-shot running notice to the loop (`tokio::sync::oneshot`, a
//!   runtime-agnostic one-shot, on both runtimes);
//! - the `dyn` tool's boxed `run` future, polled inside `catch_unwind`;
//!   a panic payload is read if it is a `String` or `&str`, then dropped;
//! - on the loop's side, a handle that polls the join handle first, then the
//!   notice, starts the timeout timer when the notice arrives (at the
//!   notice's instant plus the timeout), and aborts the task at the deadline
//!   (and when the handle is dropped unfinished);
//! - the join: the task's output, or "lost" when the runtime cancelled it.
//!
//! What it leaves out is exactly what rho adds on top: containment of a
//! panicking `Drop` of the gate's and the tool's futures and of their
//! creation, the watch, events (waiting gate, running, partial results), an
//! abort handle, answers normalised into `ToolResult`s with plain details,
//! texts for the model, and call timings in the end record.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rho_tool_core::ToolCall;
use tokio::sync::oneshot;

/// The runtime primitives the floor uses: spawn, join, abort and a timer.
pub(crate) trait FloorRt: Clone + Send + Sync + 'static {
    /// A join handle: the task's output, or `None` when it was cancelled.
    type Join<T: Send + 'static>: Future<Output = Option<T>> + Unpin + Send;
    /// A timer that completes at a deadline.
    type Sleep: Future<Output = ()> + Unpin + Send;

    fn spawn<F>(&self, future: F) -> Self::Join<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Cancels the task without waiting for it.
    fn abort<T: Send + 'static>(join: &mut Self::Join<T>);

    /// A timer that completes at `deadline`.
    fn sleep_until(deadline: Instant) -> Self::Sleep;
}

/// The floor's gate: the same shape as rho's `Gate` (a boxed future).
#[async_trait]
pub(crate) trait FloorGate: Send + Sync {
    async fn check(&self, call: &ToolCall) -> bool;
}

/// The floor's tool: the same shape as rho's `Tool` (a boxed future).
#[async_trait]
pub(crate) trait FloorTool: Send + Sync {
    fn timeout(&self) -> Duration;
    async fn run(&self, arguments: serde_json::Value) -> String;
}

/// The default gate of the floor: allows every call at once.
#[derive(Debug)]
pub(crate) struct AllowAll;

#[async_trait]
impl FloorGate for AllowAll {
    async fn check(&self, _call: &ToolCall) -> bool {
        true
    }
}

/// How a floor call ended.
#[derive(Debug, PartialEq)]
pub(crate) enum FloorEnd {
    Answered(String),
    Denied,
    Panicked(Option<String>),
    TimedOut,
    Lost,
}

/// A finished floor call.
#[derive(Debug)]
pub(crate) struct FloorDone {
    #[allow(dead_code)] // held as a real loop holds it; the bench does not read it
    pub(crate) call_id: String,
    pub(crate) end: FloorEnd,
    /// How long the tool ran (from the running notice to the end), if it
    /// started.
    pub(crate) ran: Option<Duration>,
}

/// Starts floor calls on a runtime with a gate.
#[derive(Clone)]
pub(crate) struct Floor<R> {
    rt: R,
    gate: Arc<dyn FloorGate>,
}

impl<R: FloorRt> Floor<R> {
    pub(crate) fn new(rt: R, gate: Arc<dyn FloorGate>) -> Self {
        Self { rt, gate }
    }

    /// Starts `call` of `tool` as one task.
    pub(crate) fn start(&self, call: ToolCall, tool: Arc<dyn FloorTool>) -> FloorCall<R> {
        let timeout = tool.timeout();
        let call_id = call.id.clone();
        let gate = self.gate.clone();
        let (running, notice) = oneshot::channel();
        let join = self.rt.spawn(async move {
            match Caught(gate.check(&call)).await {
                Ok(true) => {}
                Ok(false) => return FloorEnd::Denied,
                Err(message) => return FloorEnd::Panicked(message),
            }
            drop(gate);
            let _ = running.send(Instant::now());
            match Caught(tool.run(call.arguments)).await {
                Ok(text) => FloorEnd::Answered(text),
                Err(message) => FloorEnd::Panicked(message),
            }
        });
        FloorCall {
            call_id,
            join,
            notice: Some(notice),
            deadline: None,
            timeout,
            running_at: None,
            done: false,
        }
    }
}

/// A boxed future polled inside `catch_unwind`.
struct Caught<F>(F);

impl<F: Future + Unpin> Future for Caught<F> {
    type Output = Result<F::Output, Option<String>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(future).poll(cx))) {
            Ok(polled) => Poll::Ready(Ok(ready!(polled))),
            Err(payload) => Poll::Ready(Err(message(payload))),
        }
    }
}

fn message(payload: Box<dyn Any + Send>) -> Option<String> {
    if let Some(text) = payload.downcast_ref::<&str>() {
        Some((*text).to_owned())
    } else {
        payload.downcast_ref::<String>().cloned()
    }
}

/// A floor call in flight, seen from the loop.
pub(crate) struct FloorCall<R: FloorRt> {
    call_id: String,
    join: R::Join<FloorEnd>,
    notice: Option<oneshot::Receiver<Instant>>,
    deadline: Option<R::Sleep>,
    timeout: Duration,
    running_at: Option<Instant>,
    done: bool,
}

impl<R: FloorRt> FloorCall<R> {
    fn finish(&mut self, end: FloorEnd) -> FloorDone {
        self.done = true;
        FloorDone {
            call_id: std::mem::take(&mut self.call_id),
            end,
            ran: self.running_at.map(|at| at.elapsed()),
        }
    }
}

impl<R: FloorRt> Future for FloorCall<R> {
    type Output = FloorDone;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<FloorDone> {
        let this = self.get_mut();
        if this.done {
            return Poll::Pending;
        }
        if let Poll::Ready(joined) = Pin::new(&mut this.join).poll(cx) {
            return Poll::Ready(this.finish(joined.unwrap_or(FloorEnd::Lost)));
        }
        if let Some(notice) = &mut this.notice
            && let Poll::Ready(sent) = Pin::new(notice).poll(cx)
        {
            this.notice = None;
            if let Ok(at) = sent {
                this.running_at = Some(at);
                this.deadline = Some(R::sleep_until(at + this.timeout));
            }
        }
        if let Some(deadline) = &mut this.deadline
            && Pin::new(deadline).poll(cx).is_ready()
        {
            R::abort(&mut this.join);
            return Poll::Ready(this.finish(FloorEnd::TimedOut));
        }
        Poll::Pending
    }
}

impl<R: FloorRt> Drop for FloorCall<R> {
    fn drop(&mut self) {
        if !self.done {
            R::abort(&mut self.join);
        }
    }
}
