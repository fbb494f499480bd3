//! The runtime seam: what rho asks of an async runtime.

use std::future::Future;
use std::time::Duration;

/// How a task ended, as its handle reports it.
///
/// Nothing foreign is inside: a panic payload that reached the runtime is not
/// carried here (the executor must dispose of it without dropping it in the
/// loop, see [`TaskHandle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joined<T> {
    /// The task finished with its value.
    Done(T),
    /// The task was stopped by [`TaskHandle::kill`].
    Killed,
    /// The task panicked past everything meant to contain it.
    Crashed,
    /// The executor went away (shut down, dropped) before the task finished.
    Lost,
}

/// An async runtime that can run rho's tasks.
///
/// Implemented by `rho-exec-tokio` and `rho-exec-smol`; a third party can
/// implement it for another runtime and check it with `rho-conformance`.
///
/// # Contract
///
/// - [`spawn`](Executor::spawn) starts the future as its own task, not linked
///   to the caller: nothing that happens in it reaches the caller as an
///   unwind. It must not block and must not panic, even when the runtime is
///   shutting down (the handle then resolves [`Joined::Lost`]).
/// - [`sleep`](Executor::sleep) is the timer of each call's timeout clock
///   (and of tools' [`ToolContext::sleep`](crate::ToolContext::sleep)); it
///   must not panic. The runtime's own timer will do; one that fires while
///   every worker is busy does better (`rho-exec-tokio` runs its own clock
///   thread for that reason).
/// - A clone should not keep the runtime alive: every in-flight call's
///   [`CallHandle`](crate::CallHandle) holds one, and a runtime kept alive by
///   its calls can never go away, so they could never end as "executor
///   gone". (tokio's `Handle` and a weak reference to a smol executor do
///   not keep theirs alive.)
pub trait Executor: Clone + Send + Sync + 'static {
    /// The handle of a spawned task.
    type Handle<T: Send + 'static>: TaskHandle<T>;
    /// The future returned by [`sleep`](Executor::sleep). `Unpin`, so each
    /// call can keep its clock inline rather than in a box of its own.
    type Sleep: Future<Output = ()> + Send + Unpin + 'static;

    /// Spawns `future` as a task.
    fn spawn<F>(&self, future: F) -> Self::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Self::Sleep;

    /// Whether a task this executor wakes from inside another task may
    /// wait behind that task on the same thread.
    ///
    /// A call's task wakes the loop with its running notice (the loop then
    /// starts the call's clock). On a runtime that runs a task woken from a
    /// worker on that same worker next (tokio's LIFO slot), the loop would
    /// wait behind a tool that never yields, with no clock started; so the
    /// call's task gives way once before its tool runs. A runtime that puts
    /// every woken task on a shared queue and wakes an idle thread for it
    /// (smol) never holds the loop so, and says `false`: its calls go on at
    /// once. Default: `true`, the safe answer.
    const HOLDS_WOKEN_TASKS: bool = true;
}

/// A spawned task: await it for how it ended, or kill it.
///
/// # Contract
///
/// - Resolves once, to a [`Joined`] that carries no foreign data. When the
///   runtime reports a panic, the payload is disposed of without its `Drop`
///   running in the awaiting task (leaking it is acceptable).
/// - [`kill`](TaskHandle::kill) is idempotent and does not block or wait
///   for the task to agree; afterwards the handle resolves
///   [`Joined::Killed`] unless the task had already finished.
/// - Dropping the handle detaches the task (it is not killed).
pub trait TaskHandle<T>: Future<Output = Joined<T>> + Send + Unpin {
    /// Asks the runtime to stop the task at its next `.await`.
    fn kill(&mut self);
}
