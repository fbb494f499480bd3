//! rho's [`Executor`] on tokio.
//!
//! Each call runs as one tokio task ([`Handle::spawn`]); killing a call
//! aborts that task ([`JoinHandle::abort`]); the timeout clock is rho's
//! own (see [below](#the-clock)). Everything else of the call contract (the
//! gate before the clock, panic containment, plain answers) is
//! `rho-tool-core`'s and the same on every runtime.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use rho::tokio::TokioExecutor;
//! use rho::{Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
//!
//! struct Hello;
//!
//! #[async_trait]
//! impl Tool for Hello {
//!     fn name(&self) -> &str { "hello" }
//!     fn description(&self) -> &str { "Greets." }
//!     async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text("hello!")
//!     }
//! }
//!
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
//! let executor = TokioExecutor::new(runtime.handle().clone()).unwrap();
//! let runner = Runner::new(executor);
//! let end = runtime.block_on(runner.start(ToolCall::new("1", "hello", serde_json::json!({})), Arc::new(Hello)));
//! assert_eq!(end.outcome, Outcome::Succeeded);
//! assert_eq!(end.result.text(), "hello!");
//! ```
//!
//! # The clock
//!
//! Timeouts (and [`ToolContext::sleep`](rho_tool_core::ToolContext::sleep))
//! run on one thread of rho's, shared by the whole process and started by
//! the first executor, rather than on tokio's timer. tokio's timer is
//! driven by a worker with nothing else to do, so while every worker is
//! held by a tool that never yields no deadline is seen at all; and it
//! counts in whole milliseconds, rounding each deadline up. rho's clock
//! wakes a call's loop at the deadline whatever the workers are doing,
//! typically well under a millisecond late, and a waiting call's clock is
//! an entry in one ordered map, not an allocation of its own. The runtime
//! still needs its timer (`enable_time`) for the tools that sleep on it.
//!
//! # What a kill can and cannot stop
//!
//! An aborted tokio task stops at its next `.await`. On the multi-thread
//! runtime the loop ends a call at its deadline even when the tool never
//! yields (a busy loop): the loop does not wait for the task to agree, and
//! the result is the timeout text. The loop must be able to run for that:
//! a loop on a thread of its own (`Runtime::block_on`, another runtime) is
//! woken by rho's clock whatever the workers do; a loop that is itself a
//! task of the same runtime needs a worker that no such tool holds, so
//! keep at least one worker more than the tools you expect to misbehave at
//! once. Such a loop is served otherwise (the call's task yields once
//! after its running notice when that notice woke the loop, so the loop
//! starts the clock before the tool runs), but one caveat remains: a
//! partial result (`ToolContext::update`) wakes the loop from the tool's
//! worker, where tokio queues it behind the tool, so a tool that reports
//! and then never yields delays that loop until it yields; run such a loop
//! on a `block_on` thread. The busy task itself keeps its worker thread
//! until it yields, so such a tool still costs a thread; code that must
//! really stop (CPU-bound, blocking) belongs behind a stronger boundary (a
//! child process whose process group is killed: `rho-process`).
//!
//! On the current-thread runtime there is only one thread: a tool that never
//! yields holds it, so nothing else runs (not the loop either) until the
//! tool yields. A call there ends at its deadline only if its tool yields;
//! use the multi-thread runtime for tools you do not trust to yield.
//!
//! # Panic payloads
//!
//! rho's wrapper catches every panic inside the task, so tokio never sees
//! one. Should a [`JoinError`](tokio::task::JoinError) carry a panic anyway,
//! its payload is forgotten (leaked), never dropped in the loop: a foreign
//! `Drop` does not run there.

use std::future::Future;
use std::panic::catch_unwind;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rho_tool_core::{Executor, Joined, TaskHandle};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

mod clock;

/// rho's [`Executor`] on a tokio runtime. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TokioExecutor {
    handle: Handle,
}

/// Why a [`TokioExecutor`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokioExecutorError {
    /// The runtime was built without its timer (`enable_time` or
    /// `enable_all` on the builder). rho's timeouts run on its own clock,
    /// but tools written for tokio sleep on tokio's timer and would crash
    /// at their first sleep: the runtime is refused up front instead.
    #[error("the tokio runtime has no timer: build it with `enable_time()` or `enable_all()`")]
    NoTimer,
    /// rho's clock thread could not be started (the process may be out of
    /// threads); without it no call would ever time out.
    #[error("rho's clock thread could not be started")]
    NoClock,
    /// There is no tokio runtime on this thread.
    #[error("no tokio runtime is running on this thread")]
    NoRuntime,
}

impl TokioExecutor {
    /// An executor on the runtime of `handle`.
    ///
    /// # Errors
    ///
    /// [`TokioExecutorError::NoTimer`] when the runtime has no timer,
    /// [`TokioExecutorError::NoClock`] when rho's clock thread (started by
    /// the first executor of the process) could not be started.
    pub fn new(handle: Handle) -> Result<Self, TokioExecutorError> {
        let probe = {
            let _entered = handle.enter();
            // tokio offers no query for "timer enabled"; making a sleep is
            // the check, and it panics (in this one place) when there is none.
            catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO)))
        };
        if probe.is_err() {
            return Err(TokioExecutorError::NoTimer);
        }
        if !clock::start() {
            return Err(TokioExecutorError::NoClock);
        }
        Ok(Self { handle })
    }

    /// An executor on the runtime this thread is running in.
    ///
    /// # Errors
    ///
    /// [`TokioExecutorError::NoRuntime`] outside a runtime, and as
    /// [`new`](TokioExecutor::new).
    pub fn current() -> Result<Self, TokioExecutorError> {
        let handle = Handle::try_current().map_err(|_| TokioExecutorError::NoRuntime)?;
        Self::new(handle)
    }

    /// The runtime's handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Executor for TokioExecutor {
    type Handle<T: Send + 'static> = TokioTask<T>;
    type Sleep = TokioSleep;

    fn spawn<F>(&self, future: F) -> TokioTask<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        TokioTask {
            join: self.handle.spawn(future),
            killed: false,
            consumed: false,
        }
    }

    fn sleep(&self, duration: Duration) -> TokioSleep {
        TokioSleep {
            inner: clock::ClockSleep::after(duration),
        }
    }
}

/// A call's task on tokio; see [`TaskHandle`].
#[derive(Debug)]
pub struct TokioTask<T> {
    join: JoinHandle<T>,
    killed: bool,
    /// The join handle resolved: its output was taken (tokio panics when a
    /// finished handle is polled again).
    consumed: bool,
}

impl<T: Send + 'static> Future for TokioTask<T> {
    type Output = Joined<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Joined<T>> {
        if self.consumed {
            // Polled after it resolved; a task ends once.
            return Poll::Pending;
        }
        let output = ready!(Pin::new(&mut self.join).poll(cx));
        self.consumed = true;
        let joined = match output {
            Ok(value) => Joined::Done(value),
            Err(error) => {
                let panicked = forget_panic(error);
                if self.killed {
                    // A future whose Drop panicked while being killed was
                    // still killed.
                    Joined::Killed
                } else if panicked {
                    Joined::Crashed
                } else {
                    // Cancelled without our kill: the runtime shut down.
                    Joined::Lost
                }
            }
        };
        Poll::Ready(joined)
    }
}

/// Whether `error` was a panic; its payload is foreign, so it is forgotten
/// rather than dropped (its `Drop` would run here, in the loop).
fn forget_panic(error: tokio::task::JoinError) -> bool {
    if error.is_panic() {
        std::mem::forget(error.into_panic());
        true
    } else {
        false
    }
}

impl<T> Drop for TokioTask<T> {
    fn drop(&mut self) {
        // Dropping a JoinHandle whose task has finished drops the task's
        // output here, and a panic payload is output too. Take it out first
        // and forget it. (A task that finishes after this check drops its
        // output on the worker that ran it.)
        if !self.consumed && self.join.is_finished() {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            if let Poll::Ready(Err(error)) = Pin::new(&mut self.join).poll(&mut cx) {
                forget_panic(error);
            }
        }
    }
}

impl<T: Send + 'static> TaskHandle<T> for TokioTask<T> {
    fn kill(&mut self) {
        self.join.abort();
        self.killed = true;
    }
}

/// A sleep on rho's clock (see [the crate docs](crate#the-clock)): it
/// completes at its deadline whatever the runtime's workers are doing, and
/// also after the runtime shut down. `Unpin`; it allocates nothing.
#[derive(Debug)]
pub struct TokioSleep {
    inner: clock::ClockSleep,
}

impl Future for TokioSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// This crate's README examples, compiled and run as doc tests so they stay
/// true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
