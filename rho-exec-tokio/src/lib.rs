//! rho's [`Executor`] on tokio.
//!
//! Each call runs as one tokio task ([`Handle::spawn`]); killing a call
//! aborts that task ([`JoinHandle::abort`]); the timeout clock is tokio's
//! timer. Everything else of the call contract (the gate before the clock,
//! panic containment, plain answers) is `rho-tool-core`'s and the same on
//! every runtime.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use rho_exec_tokio::TokioExecutor;
//! use rho_tool_core::{Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
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
//! # What a kill can and cannot stop
//!
//! An aborted tokio task stops at its next `.await`. On the multi-thread
//! runtime with two or more workers the loop ends a call at its deadline
//! even when the tool never yields (a busy loop): the loop does not wait for
//! the task to agree, and the result is the timeout text. With a single
//! worker the busy tool also stalls tokio's timer, so the deadline passes
//! unseen until the tool yields: keep at least one worker more than the
//! tools you expect to misbehave at once. A loop that is itself a task of
//! the same runtime is served too (the call's task yields once after its
//! running notice, so the loop starts the clock before the tool runs), but
//! one caveat remains: a partial result (`ToolContext::update`) wakes the
//! loop from the tool's worker, where tokio queues it behind the tool, so a
//! tool that reports and then never yields delays that loop until it
//! yields; run such a loop on a `block_on` thread. The busy task itself
//! keeps its worker thread until it yields, so such a tool still costs a
//! thread; code
//! that must really stop (CPU-bound, blocking) belongs behind a stronger
//! boundary (a child process whose process group is killed: `rho-process`).
//!
//! On the current-thread runtime there is only one thread: a tool that never
//! yields holds it, so nothing else runs (not the loop, not the timer) until
//! the tool yields. A call there ends at its deadline only if its tool
//! yields; use the multi-thread runtime for tools you do not trust to yield.
//!
//! # Panic payloads
//!
//! rho's wrapper catches every panic inside the task, so tokio never sees
//! one. Should a [`JoinError`](tokio::task::JoinError) carry a panic anyway,
//! its payload is forgotten (leaked), never dropped in the loop: a foreign
//! `Drop` does not run there.

#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rho_tool_core::{Executor, Joined, TaskHandle};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

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
    /// `enable_all` on the builder), which rho needs for timeouts.
    #[error("the tokio runtime has no timer: build it with `enable_time()` or `enable_all()`")]
    NoTimer,
    /// There is no tokio runtime on this thread.
    #[error("no tokio runtime is running on this thread")]
    NoRuntime,
}

impl TokioExecutor {
    /// An executor on the runtime of `handle`.
    ///
    /// # Errors
    ///
    /// [`TokioExecutorError::NoTimer`] when the runtime has no timer: every
    /// call's timeout would otherwise panic in the loop.
    pub fn new(handle: Handle) -> Result<Self, TokioExecutorError> {
        let probe = {
            let _entered = handle.enter();
            // tokio offers no query for "timer enabled"; making a sleep is
            // the check, and it panics (in this one place) when there is none.
            catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO)))
        };
        match probe {
            Ok(()) => Ok(Self { handle }),
            Err(_tokio_message) => Err(TokioExecutorError::NoTimer),
        }
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
        let _entered = self.handle.enter();
        TokioSleep {
            sleep: Some(Box::pin(tokio::time::sleep(duration))),
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

/// tokio's timer, made safe to poll after the runtime shut down.
///
/// tokio panics when a sleep is polled after its runtime's timer shut down;
/// this sleep then stays pending instead, and the call ends by its task
/// reporting the executor gone.
#[derive(Debug)]
pub struct TokioSleep {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Future for TokioSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(sleep) = self.sleep.as_mut() else {
            return Poll::Pending;
        };
        match catch_unwind(AssertUnwindSafe(|| sleep.as_mut().poll(cx))) {
            Ok(polled) => polled,
            Err(_shutdown) => {
                self.sleep = None;
                Poll::Pending
            }
        }
    }
}

/// The README's examples, compiled and run as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
