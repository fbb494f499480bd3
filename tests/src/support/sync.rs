//! [`Latch`]: a one-shot, runtime-free signal a task can await.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// A one-shot signal: closed until [`open`](Latch::open), then open for
/// ever. Awaiting it ([`wait`](Latch::wait)) needs no runtime, so gates and
/// tools can wait for the test on any executor.
#[derive(Default)]
pub struct Latch {
    open: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Latch {
    /// A closed latch.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Opens the latch and wakes every waiter. Idempotent.
    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(&mut *self.lock());
        for waker in wakers {
            waker.wake();
        }
    }

    /// Whether the latch is open.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    /// A future that completes once the latch is open.
    pub fn wait(self: &Arc<Self>) -> LatchWait {
        LatchWait {
            latch: self.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waker>> {
        self.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Latch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latch")
            .field("open", &self.is_open())
            .finish_non_exhaustive()
    }
}

/// The future of [`Latch::wait`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct LatchWait {
    latch: Arc<Latch>,
}

impl Future for LatchWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.latch.is_open() {
            return Poll::Ready(());
        }
        {
            let mut wakers = self.latch.lock();
            if !wakers.iter().any(|known| known.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        // Opened between the first look and the registration.
        if self.latch.is_open() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A fresh shared flag.
pub fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}
