//! [`Counting`]: an executor wrapper that counts rho's live tasks and marks
//! which task is being polled, on any executor.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use rho_tool_core::Executor;

thread_local! {
    /// The [`Counting`] task being polled or dropped on this thread.
    static CURRENT_TASK: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The task of a [`Counting`] executor whose future is being polled or
/// dropped on this thread right now, if any (a number unique in the
/// process).
///
/// Foreign code that runs with `current_task() == None` ran outside every
/// task: in the loop, or in some other code of the executor.
pub fn current_task() -> Option<u64> {
    CURRENT_TASK.with(Cell::get)
}

struct TaskMark {
    previous: Option<u64>,
}

impl TaskMark {
    fn enter(task: u64) -> Self {
        let previous = CURRENT_TASK.with(|current| current.replace(Some(task)));
        Self { previous }
    }
}

impl Drop for TaskMark {
    fn drop(&mut self) {
        let previous = self.previous;
        CURRENT_TASK.with(|current| current.set(previous));
    }
}

#[derive(Default)]
struct Counts {
    spawned: AtomicUsize,
    live: AtomicUsize,
}

/// An [`Executor`] that runs every task on `E`, counting the tasks whose
/// future is still alive.
///
/// Each spawned future is boxed inside a wrapper that counts it as live from
/// `spawn` until the future finished or was dropped (whichever comes
/// first), so "no task leaks" can be checked on any executor: after every
/// call ended, [`live`](Counting::live) must come back to 0 (a killed task's
/// future is dropped asynchronously, so wait for it with a bound). The
/// wrapper also marks the thread with the task while it polls or drops the
/// future ([`current_task`]). It adds no other behaviour: handles and
/// sleeps are `E`'s own.
pub struct Counting<E> {
    inner: E,
    counts: Arc<Counts>,
}

impl<E> Counting<E> {
    /// Wraps `inner`, with its own counts.
    pub fn new(inner: E) -> Self {
        Self {
            inner,
            counts: Arc::new(Counts::default()),
        }
    }

    /// The wrapped executor.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Tasks spawned through this executor (and its clones) so far.
    pub fn spawned(&self) -> usize {
        self.counts.spawned.load(Ordering::SeqCst)
    }

    /// Tasks whose future has neither finished nor been dropped.
    pub fn live(&self) -> usize {
        self.counts.live.load(Ordering::SeqCst)
    }
}

impl<E: Clone> Clone for Counting<E> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            counts: self.counts.clone(),
        }
    }
}

impl<E> fmt::Debug for Counting<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counting")
            .field("spawned", &self.spawned())
            .field("live", &self.live())
            .finish_non_exhaustive()
    }
}

impl<E: Executor> Executor for Counting<E> {
    type Handle<T: Send + 'static> = E::Handle<T>;
    type Sleep = E::Sleep;

    fn spawn<F>(&self, future: F) -> E::Handle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        self.counts.spawned.fetch_add(1, Ordering::SeqCst);
        self.counts.live.fetch_add(1, Ordering::SeqCst);
        let tracked = Tracked {
            task: NEXT.fetch_add(1, Ordering::Relaxed),
            future: Some(Box::pin(future)),
            live: Some(Live(self.counts.clone())),
        };
        self.inner.spawn(tracked)
    }

    fn sleep(&self, duration: Duration) -> E::Sleep {
        self.inner.sleep(duration)
    }
}

/// Counts one live task until dropped (also when dropped by an unwind).
struct Live(Arc<Counts>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Tracked<F> {
    task: u64,
    future: Option<Pin<Box<F>>>,
    live: Option<Live>,
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // `Tracked` is `Unpin`: its future is boxed.
        let this = self.get_mut();
        let _mark = TaskMark::enter(this.task);
        let Some(future) = this.future.as_mut() else {
            return Poll::Pending;
        };
        let output = future.as_mut().poll(cx);
        if output.is_ready() {
            let live = this.live.take();
            drop(this.future.take());
            drop(live);
        }
        output
    }
}

impl<F> Drop for Tracked<F> {
    fn drop(&mut self) {
        let _mark = TaskMark::enter(self.task);
        // `live` is a local: should the future's Drop unwind, it still
        // counts the task as gone.
        let live = self.live.take();
        drop(self.future.take());
        drop(live);
    }
}
