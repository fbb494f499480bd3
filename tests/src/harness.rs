//! [`Harness`]: what an executor crate provides to run the suite.

use std::future::Future;

use rho_tool_core::Executor;

/// What an executor crate provides so the suite can run against it.
///
/// Each point makes one harness with [`new`](Harness::new), drives its loop
/// side with [`block_on`](Harness::block_on) (on the test's own thread),
/// and ends with [`shut_down`](Harness::shut_down); the property points
/// make one harness per property and run every case on it. Points run in
/// parallel (the test harness's threads), each with its own harness.
///
/// # Contract of each item
///
/// - [`Executor`](Harness::Executor): the executor under test, as a host
///   would hold it. The suite wraps it in
///   [`Counting`](crate::support::Counting) to count live tasks; it adds
///   nothing else.
/// - [`MULTI_THREADED`](Harness::MULTI_THREADED): `true` when a task that
///   never yields (a busy loop) can stop neither the loop's `block_on` nor
///   the executor's timer, so the loop can end such a call at its deadline
///   (tasks run on threads of their own, never on the thread that calls
///   `block_on`, and some thread other than the spinning one drives the
///   timer: tokio's multi-thread runtime with two workers or more, smol's
///   executors, whose timer has its own thread). The suite then also
///   checks that no foreign code of a call (a panic payload, an answer, a
///   killed future) runs on the loop's thread at all.
///   `false` when one such task can hold the only thread that runs the
///   loop, the tasks or the timer (tokio's current-thread runtime): the
///   points that need it then check the documented weaker behaviour
///   instead (see the crate docs).
/// - [`SHUTS_DOWN`](Harness::SHUTS_DOWN) (default `true`): `false` only
///   when the executor cannot go away at all (it lives as long as the
///   process); then `shut_down` only has to return.
/// - [`new`](Harness::new): a fresh executor with its own runtime/threads
///   and its timer enabled, used by this one test only.
/// - [`executor`](Harness::executor): a handle to it; cheap, may be called
///   many times, every clone runs tasks on the same executor.
/// - [`block_on`](Harness::block_on): runs `future` (the loop side; not
///   necessarily `Send`) to completion on the calling thread, the test's
///   own, which is never one of the executor's worker threads. While it
///   waits, the executor's tasks and timer must keep running: on the
///   executor's own threads, or driven by `block_on` itself for a
///   single-threaded executor. It must never poll a task from inside a
///   poll of `future` (the loop and the tasks take turns, they do not
///   nest). Called many times in a row on the same harness. While it
///   runs, a loop on another, plain thread (no runtime there) may poll the
///   executor's task handles and sleeps: they must wake it all the same.
/// - [`shut_down`](Harness::shut_down): the executor goes away, while tasks
///   may be in flight (waiting in a gate, running, spinning), and while
///   clones of [`executor`](Harness::executor) are still held by runners
///   and call handles, as a host's would be. It must return without
///   waiting for the tasks. Afterwards, every task handle still in flight
///   resolves [`Joined::Lost`](rho_tool_core::Joined::Lost) (its waker is
///   woken, also one registered before the shutdown by a loop on a plain
///   thread; the suite awaits it with no runtime at all), the tasks' futures
///   are dropped (in the background is fine), `spawn` on a remaining clone
///   neither panics nor runs the future (its handle resolves `Lost`), and
///   `sleep` does not panic.
///
/// # Example
///
/// See the crate docs.
pub trait Harness: Sized + 'static {
    /// The executor under test.
    type Executor: Executor;

    /// Whether a task that never yields still lets the loop end its call at
    /// the deadline (see the trait docs).
    const MULTI_THREADED: bool;

    /// Whether [`shut_down`](Harness::shut_down) makes the executor go away.
    /// Default `true`. `false` only for an executor that lives as long as
    /// the process (smol's global executor): the points about the executor
    /// going away then print that they were skipped, and why, and check
    /// nothing (see the crate docs).
    const SHUTS_DOWN: bool = true;

    /// A fresh executor, with its own threads or runtime, for one test.
    fn new() -> Self;

    /// A handle to the executor under test.
    fn executor(&self) -> Self::Executor;

    /// Runs the loop side `future` to completion on the calling thread.
    fn block_on<F: Future>(&self, future: F) -> F::Output;

    /// Makes the executor go away without waiting for its tasks.
    fn shut_down(self);
}
