//! Bounded waiting, on the loop side (with the executor's timer) and on a
//! plain thread (after the executor went away).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rho_tool_core::Executor;

/// Generous bound for what should happen "soon" on a loaded machine.
/// Points never fail for being slow under it; they only fail when it passes.
pub const SOON: Duration = Duration::from_secs(20);

/// How long the hanging tools and gates of the points would wait if not
/// killed: far longer than any point runs.
pub const HANG: Duration = Duration::from_secs(120);

/// How often bounded waits look again.
const TICK: Duration = Duration::from_millis(2);

/// Waits on the loop side, with `executor`'s timer, until `done` returns
/// true or `limit` passed; returns whether `done` became true.
pub async fn wait_until<E: Executor>(
    executor: &E,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        executor.sleep(TICK).await;
    }
}

/// As [`wait_until`], blocking a plain thread (for when there is no
/// executor any more).
pub fn wait_until_blocking(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(TICK);
    }
}

/// `future`, or `None` if it did not finish within `limit` of the
/// executor's timer.
pub async fn within<E: Executor, F: Future>(
    executor: &E,
    limit: Duration,
    future: F,
) -> Option<F::Output> {
    Within {
        future: Box::pin(future),
        limit: Box::pin(executor.sleep(limit)),
    }
    .await
}

struct Within<F, S> {
    future: Pin<Box<F>>,
    limit: Pin<Box<S>>,
}

impl<F: Future, S: Future<Output = ()>> Future for Within<F, S> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(output) = self.future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        match self.limit.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Returns `Pending` once (waking itself), then `Ready`: lets the
/// executor run something else, on any runtime.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// Polls `future` once; `Some(output)` if it was ready.
pub async fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| match Pin::new(&mut *future).poll(cx) {
        Poll::Ready(output) => Poll::Ready(Some(output)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

impl fmt::Debug for Unpark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unpark").finish_non_exhaustive()
    }
}

/// Runs `future` on the calling thread with no runtime at all (the thread
/// parks until woken), giving up after `limit`: `None` then.
///
/// This is the loop's driver once the executor went away
/// ([`Harness::shut_down`](crate::Harness::shut_down)): a call in flight
/// must still end, woken by its task handle alone.
pub fn block_on_within<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    let deadline = Instant::now() + limit;
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::park_timeout(deadline - now);
    }
}
