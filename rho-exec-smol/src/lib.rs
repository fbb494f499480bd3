//! rho's [`Executor`] on smol.
//!
//! Each call runs as one smol task ([`smol::Executor::spawn`], or
//! [`smol::spawn`] for smol's global executor); killing a call cancels that
//! task (its [`Task`](smol::Task) is dropped, which does not wait); the
//! timeout clock is smol's own timer ([`async_io::Timer`]), not tokio's.
//! Everything else of the call contract (the gate before the clock, panic
//! containment, plain answers) is `rho-tool-core`'s and the same on every
//! runtime.
//!
//! # Example
//!
//! A call run through [`Runner`](rho_tool_core::Runner) on an executor the
//! host owns, here driven by the loop's own thread:
//!
//! ```
//! use std::sync::Arc;
//! use rho::smol::SmolExecutor;
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
//! // The host owns the executor; rho only holds a weak reference to it.
//! let ex = Arc::new(smol::Executor::new());
//! let runner = Runner::new(SmolExecutor::new(ex.clone()));
//! let call = ToolCall::new("1", "hello", serde_json::json!({}));
//! let end = smol::block_on(ex.run(runner.start(call, Arc::new(Hello))));
//! assert_eq!(end.outcome, Outcome::Succeeded);
//! assert_eq!(end.result.text(), "hello!");
//! ```
//!
//! A multi-threaded executor (what tools that may not yield need, see
//! below): `N` threads run `ex.run(...)` until the host stops them; the loop
//! may run anywhere, here on the main thread. A tool that sleeps past its
//! timeout ends with the timeout text:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use rho::smol::SmolExecutor;
//! use rho::{Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
//! use rho::untrusted::timeout_text;
//!
//! struct Slow;
//!
//! #[async_trait]
//! impl Tool for Slow {
//!     fn name(&self) -> &str { "slow" }
//!     fn description(&self) -> &str { "Takes an hour." }
//!     fn timeout(&self) -> Duration { Duration::from_millis(50) }
//!     async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         smol::Timer::after(Duration::from_secs(3600)).await;
//!         ToolOutput::text("done")
//!     }
//! }
//!
//! let ex = Arc::new(smol::Executor::new());
//! let (stop, stopped) = smol::channel::unbounded::<()>();
//! let threads: Vec<_> = (0..2)
//!     .map(|_| {
//!         let (ex, stopped) = (ex.clone(), stopped.clone());
//!         std::thread::spawn(move || smol::block_on(ex.run(stopped.recv())))
//!     })
//!     .collect();
//!
//! let runner = Runner::new(SmolExecutor::new(ex.clone()));
//! let call = ToolCall::new("1", "slow", serde_json::json!({}));
//! let end = smol::block_on(runner.start(call, Arc::new(Slow)));
//! assert_eq!(end.outcome, Outcome::TimedOut);
//! assert_eq!(end.result.text(), timeout_text("slow", Duration::from_millis(50)));
//!
//! drop(stop); // every `ex.run` ends
//! for thread in threads {
//!     let _ = thread.join();
//! }
//! ```
//!
//! # Who owns and runs the executor
//!
//! A smol executor runs nothing by itself: the host runs it, with
//! `ex.run(...)` on as many threads as it likes (or inside the loop's own
//! `block_on`). [`SmolExecutor::new`] keeps only a *weak* reference: the
//! host's `Arc`s keep the executor alive, and when the last one goes the
//! executor is dropped with every task in it. Calls in flight then end with
//! [`Outcome::ExecutorGone`](rho_tool_core::Outcome::ExecutorGone) (the
//! handle resolves [`Joined::Lost`]), and calls started afterwards end so at
//! once. (A strong reference would keep a stopped executor alive for as long
//! as a call's handle lives, and a call waiting at its gate would then never
//! end.) So keep an `Arc` of your own for as long as calls should run;
//! `SmolExecutor::new(Arc::new(smol::Executor::new()))` is an executor that
//! is already gone. Dropping a smol executor drops the futures of its tasks
//! on the thread that drops it (contained, see below): stop the executor's
//! threads and drop it from the host's shutdown code rather than from inside
//! the loop.
//!
//! [`SmolExecutor::global`] spawns on smol's global executor
//! ([`smol::spawn`]), which lives for the whole process and is run by
//! `SMOL_THREADS` background threads (one by default).
//!
//! # What a kill can and cannot stop
//!
//! A cancelled smol task stops at its next `.await`: its future is dropped
//! by an executor thread the next time the task is run (a task that is
//! waiting is rescheduled just for that). The loop never waits for this.
//!
//! - **A tool that yields** (awaits I/O, timers, channels): the kill stops it
//!   at its next `.await` and its future is dropped soon after.
//! - **A tool that never yields** (a busy loop): on a multi-threaded
//!   executor (two or more threads running `ex.run(...)`) the loop still ends
//!   the call at its deadline with the timeout text: the timer is async-io's
//!   (it does not need the executor) and the loop runs on another thread.
//!   The busy tool keeps its thread until it yields, and its future is
//!   dropped only then. With a single thread (the loop and the tools sharing
//!   one `ex.run`), a tool that never yields holds that thread, so neither
//!   the loop nor the other tasks run, and the deadline passes unnoticed
//!   until the tool yields: the kill cannot stop it. smol's global executor
//!   has one thread by default: a busy tool there stalls every other global
//!   task, though a loop running outside it (say in `smol::block_on` on its
//!   own thread) still ends the call at its deadline.
//! - **Blocking or CPU-bound code** needs a stronger boundary than a task:
//!   run it with [`smol::unblock`] (the call still ends at its deadline; the
//!   blocking thread is abandoned and finishes on its own), or in a child
//!   process ([`smol::process::Command`] with `kill_on_drop(true)`, so the
//!   kill's drop of the tool future kills the process).
//!
//! # Why a panicking `Drop` does not abort the process
//!
//! async-task, under smol's executor, drops a cancelled task's future inside
//! a guard that *aborts the process* if that drop panics. A tool future whose
//! `Drop` panics, killed at its timeout or by the host, would end the whole
//! program there. It does not, for two reasons:
//!
//! - rho's own wrapper in `rho-tool-core` (`Contained`) polls and drops every
//!   gate and tool future itself, catching a panic of their `Drop` inside
//!   the task body, before async-task's guard could see it;
//! - every future this crate spawns, rho's task body or any raw future given
//!   to [`Executor::spawn`], is itself wrapped in a guard that catches panics
//!   of its polls and of its `Drop`.
//!
//! What no wrapper can contain is a `Drop` that panics while another panic
//! is already unwinding (two fields of one future both panicking in their
//! `Drop`): Rust itself aborts then. And all of this needs
//! `panic = "unwind"` (see
//! [`PANICS_ARE_CONTAINED`](rho_tool_core::untrusted::PANICS_ARE_CONTAINED)).
//!
//! # Panic payloads
//!
//! smol's executor stores a task's panic and *resumes* it in whoever awaits
//! the task, and drops the stored payload wherever the task handle is
//! dropped: either would run a foreign value's code (or an unwind) in the
//! loop. Neither happens here. The spawn guard catches a panic inside the
//! task and disposes of the payload there (its `Drop` contained, a second
//! payload forgotten); the task then ends with a plain marker and the handle
//! resolves [`Joined::Crashed`]. Should a panic reach the handle anyway, the
//! handle polls the task under `catch_unwind` and forgets (leaks) the
//! payload: no `Drop`, `Display` or `Debug` of it runs in the loop.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_io::Timer;
use async_task::FallibleTask;
use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{Executor, Joined, TaskHandle};

mod pool;

pub use pool::SmolPool;

/// rho's [`Executor`] on smol. Cheap to clone.
///
/// See the [crate docs](crate) for who owns the executor and what a kill
/// can stop.
#[derive(Clone)]
pub struct SmolExecutor {
    target: Target,
}

#[derive(Clone)]
enum Target {
    /// An executor the host owns.
    Shared(Weak<smol::Executor<'static>>),
    /// smol's global executor.
    Global,
}

impl SmolExecutor {
    /// An executor spawning on `executor`.
    ///
    /// Only a weak reference is kept: the host's own `Arc`s keep the executor
    /// alive, and once they are all gone, calls in flight end with
    /// [`Joined::Lost`] (`Outcome::ExecutorGone`) and new calls end so at
    /// once. Keep an `Arc` of your own, and run the executor
    /// (`ex.run(...)`) on some thread: smol runs nothing by itself.
    pub fn new(executor: Arc<smol::Executor<'static>>) -> Self {
        Self {
            target: Target::Shared(Arc::downgrade(&executor)),
        }
    }

    /// An executor spawning on smol's global executor ([`smol::spawn`]),
    /// which lives as long as the process and is run by `SMOL_THREADS`
    /// background threads (one by default).
    pub fn global() -> Self {
        Self {
            target: Target::Global,
        }
    }

    /// Whether this spawns on smol's global executor.
    pub fn is_global(&self) -> bool {
        matches!(self.target, Target::Global)
    }

    /// Whether the executor went away: the host dropped its last `Arc` of it.
    /// Never true for the global executor.
    pub fn is_gone(&self) -> bool {
        match &self.target {
            Target::Shared(executor) => executor.strong_count() == 0,
            Target::Global => false,
        }
    }
}

impl fmt::Debug for SmolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match &self.target {
            Target::Shared(_) if self.is_gone() => "shared (gone)",
            Target::Shared(_) => "shared",
            Target::Global => "global",
        };
        f.debug_struct("SmolExecutor")
            .field("executor", &target)
            .finish()
    }
}

impl Executor for SmolExecutor {
    /// smol's executor puts every woken task on its shared queue and
    /// wakes an idle thread for it, so the loop a call's running notice
    /// woke is never held behind the call's task on this thread. Giving way
    /// would only requeue the task and wake another thread to take it over.
    const HOLDS_WOKEN_TASKS: bool = false;

    type Handle<T: Send + 'static> = SmolTask<T>;
    type Sleep = SmolSleep;

    fn spawn<F>(&self, future: F) -> SmolTask<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let guarded = Guarded::new(future);
        let spawned = match &self.target {
            Target::Global => catch_unwind(AssertUnwindSafe(|| smol::spawn(guarded))),
            Target::Shared(executor) => match executor.upgrade() {
                Some(executor) => {
                    let spawned = catch_unwind(AssertUnwindSafe(|| executor.spawn(guarded)));
                    release(executor);
                    spawned
                }
                // The executor is gone; the unspawned future is dropped
                // here, its Drop contained by the guard.
                None => return SmolTask::decided(Joined::Lost),
            },
        };
        match spawned {
            Ok(task) => SmolTask {
                state: State::Running(task.fallible()),
            },
            // smol could not spawn (its global executor could not start a
            // thread): treat it as an executor that is not there.
            Err(payload) => {
                std::mem::forget(payload);
                SmolTask::decided(Joined::Lost)
            }
        }
    }

    fn sleep(&self, duration: Duration) -> SmolSleep {
        SmolSleep {
            timer: Some(Timer::after(duration)),
        }
    }
}

/// Lets go of a temporarily upgraded executor. Should the host have dropped
/// its last `Arc` meanwhile, ours is the last one, and dropping the executor
/// drops every task in it: that happens on a thread of its own, not in the
/// loop.
fn release(executor: Arc<smol::Executor<'static>>) {
    if let Some(last) = Arc::into_inner(executor) {
        let dropped = std::thread::Builder::new()
            .name("rho-smol-drop".to_owned())
            .spawn(move || drop(last));
        // No thread to be had: the executor was dropped here after all (the
        // futures in it are guarded, so nothing unwinds).
        drop(dropped);
    }
}

/// A call's task on smol; see [`TaskHandle`].
///
/// Resolves [`Joined::Done`] with the task's value, [`Joined::Killed`] after
/// [`kill`](TaskHandle::kill), [`Joined::Crashed`] when the future panicked,
/// and [`Joined::Lost`] when the executor went away before the task
/// finished. Dropping it detaches the task (it keeps running).
pub struct SmolTask<T> {
    state: State<T>,
}

enum State<T> {
    /// Spawned, not yet seen to finish.
    Running(FallibleTask<Result<T, Crashed>>),
    /// The end is known without polling the task (killed, finished at the
    /// kill, or never spawned). Boxed: it is the rare case, and this task
    /// handle sits inside every call's handle, which would otherwise grow by
    /// the size of the task's output.
    Decided(Box<Joined<T>>),
    /// The end was handed out.
    Resolved,
}

/// The task's future panicked; the payload was disposed of in the task.
struct Crashed;

impl<T> SmolTask<T> {
    fn decided(joined: Joined<T>) -> Self {
        Self {
            state: State::Decided(Box::new(joined)),
        }
    }
}

/// Polls the task for its end. A panic resumed by async-task (none should
/// come: the spawn guard catches them) is caught and its payload forgotten,
/// never dropped here.
fn poll_task<T>(
    task: &mut FallibleTask<Result<T, Crashed>>,
    cx: &mut Context<'_>,
) -> Poll<Joined<T>> {
    match catch_unwind(AssertUnwindSafe(|| Pin::new(task).poll(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(Some(Ok(value)))) => Poll::Ready(Joined::Done(value)),
        Ok(Poll::Ready(Some(Err(Crashed)))) => Poll::Ready(Joined::Crashed),
        // Closed without completing, and we never poll a task we cancelled:
        // the executor dropped it.
        Ok(Poll::Ready(None)) => Poll::Ready(Joined::Lost),
        Err(payload) => {
            std::mem::forget(payload);
            Poll::Ready(Joined::Crashed)
        }
    }
}

// Nothing is ever pinned in place: the task handle is `Unpin` and the value
// is only moved out whole.
impl<T> Unpin for SmolTask<T> {}

impl<T: Send + 'static> Future for SmolTask<T> {
    type Output = Joined<T>;

    /// Resolves once; polling again after that stays pending.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Joined<T>> {
        let this = self.get_mut();
        match std::mem::replace(&mut this.state, State::Resolved) {
            State::Running(mut task) => match poll_task(&mut task, cx) {
                Poll::Pending => {
                    this.state = State::Running(task);
                    Poll::Pending
                }
                // A finished task is closed: dropping its handle here drops
                // nothing of it.
                Poll::Ready(joined) => Poll::Ready(joined),
            },
            State::Decided(joined) => Poll::Ready(*joined),
            State::Resolved => Poll::Pending,
        }
    }
}

impl<T: Send + 'static> TaskHandle<T> for SmolTask<T> {
    /// Cancels the task without waiting: its future is dropped by an
    /// executor thread. A task that already finished keeps its end.
    fn kill(&mut self) {
        let State::Running(task) = &mut self.state else {
            return;
        };
        let mut cx = Context::from_waker(Waker::noop());
        let decided = match poll_task(task, &mut cx) {
            Poll::Ready(joined) => joined,
            Poll::Pending => Joined::Killed,
        };
        // Replacing the running state drops the task handle: that cancels
        // the task (async-task reschedules it so that the executor drops its
        // future) and returns at once.
        self.state = State::Decided(Box::new(decided));
    }
}

impl<T> Drop for SmolTask<T> {
    fn drop(&mut self) {
        if let State::Running(task) = std::mem::replace(&mut self.state, State::Resolved) {
            task.detach();
        }
    }
}

impl<T> fmt::Debug for SmolTask<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Running(_) => "running",
            State::Decided(_) => "ended",
            State::Resolved => "resolved",
        };
        f.debug_struct("SmolTask").field("state", &state).finish()
    }
}

pin_project_lite::pin_project! {
    /// The guard around every spawned future: its polls and its drop never
    /// unwind into async-task, which would abort the process on a panicking
    /// drop and carry a poll's panic payload to the task's handle.
    ///
    /// The future lives inline, pinned in place inside smol's own task, so
    /// that a spawn allocates nothing more than that task.
    struct Guarded<F> {
        #[pin]
        future: Option<F>,
    }

    impl<F> PinnedDrop for Guarded<F> {
        fn drop(this: Pin<&mut Self>) {
            drop_in_place_contained(this.project().future);
        }
    }
}

impl<F> Guarded<F> {
    fn new(future: F) -> Self {
        Self {
            future: Some(future),
        }
    }
}

/// Drops the future in place now, containing a panic of its `Drop`.
///
/// An assignment whose old value's `Drop` panics still stores the new
/// value, so the slot is empty afterwards either way: the future is never
/// dropped twice.
fn drop_in_place_contained<F>(mut slot: Pin<&mut Option<F>>) {
    if slot.is_some() {
        let _ = call_contained(|| slot.set(None));
    }
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, Crashed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.project().future;
        let Some(future) = slot.as_mut().as_pin_mut() else {
            // async-task never polls a finished future.
            return Poll::Pending;
        };
        // Contained the way rho contains every foreign poll: the payload
        // is disposed of here, in the task (its Drop contained, a second
        // payload forgotten), and the quiet hook knows the panic is caught.
        match call_contained(|| future.poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                drop_in_place_contained(slot);
                Poll::Ready(Ok(output))
            }
            Err(_caught) => {
                drop_in_place_contained(slot);
                Poll::Ready(Err(Crashed))
            }
        }
    }
}

/// smol's timer ([`async_io::Timer`]) as rho's sleep.
///
/// Never panics: should the timer ever panic (async-io could not start its
/// reactor), the sleep stays pending instead and the call ends some other
/// way (its task's end, an abort).
#[derive(Debug)]
pub struct SmolSleep {
    timer: Option<Timer>,
}

impl Future for SmolSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(timer) = self.timer.as_mut() else {
            return Poll::Pending;
        };
        match catch_unwind(AssertUnwindSafe(|| Pin::new(timer).poll(cx))) {
            Ok(Poll::Ready(_instant)) => {
                self.timer = None;
                Poll::Ready(())
            }
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                std::mem::forget(payload);
                if let Some(timer) = self.timer.take() {
                    // The timer may be in a broken state: forget it too rather
                    // than risk its Drop panicking here.
                    std::mem::forget(timer);
                }
                Poll::Pending
            }
        }
    }
}
