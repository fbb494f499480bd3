//! A minimal set of futures polled as they are woken, the way a host's
//! loop awaits many calls at once (a `FuturesUnordered` or `JoinSet`).
//!
//! Each slot has its own waker, made once and reused by the calls that take
//! the slot after it, so a call pushed into a warm driver costs it no
//! allocation. A wake queues the slot's index once (until it is polled);
//! only queued slots are polled, so calls that wait cost a poll nothing.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

#[derive(Default)]
struct Shared {
    ready: Mutex<Ready>,
}

#[derive(Default)]
struct Ready {
    indices: VecDeque<usize>,
    waker: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ready> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct SlotWaker {
    index: usize,
    /// The index is in the ready queue (or being polled after it).
    queued: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let waker = {
            let mut ready = self.shared.lock();
            ready.indices.push_back(self.index);
            ready.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Futures of one type, polled when woken.
pub(crate) struct Driver<F> {
    slots: Vec<Option<F>>,
    wakers: Vec<Arc<SlotWaker>>,
    free: Vec<usize>,
    shared: Arc<Shared>,
    len: usize,
}

impl<F: Future + Unpin> Driver<F> {
    pub(crate) fn new() -> Self {
        Self {
            slots: Vec::new(),
            wakers: Vec::new(),
            free: Vec::new(),
            shared: Arc::new(Shared::default()),
            len: 0,
        }
    }

    /// Adds `future`; it is polled at the next `poll_next`. Returns its slot.
    pub(crate) fn push(&mut self, future: F) -> usize {
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index] = Some(future);
                index
            }
            None => {
                let index = self.slots.len();
                self.slots.push(Some(future));
                self.wakers.push(Arc::new(SlotWaker {
                    index,
                    queued: AtomicBool::new(false),
                    shared: self.shared.clone(),
                }));
                index
            }
        };
        self.len += 1;
        self.wakers[index].wake_by_ref();
        index
    }

    /// The next future to finish: its slot and output; `None` when none is
    /// left.
    ///
    /// A future that wakes itself while it is polled asks its loop to yield
    /// (tokio's cooperative budget does that once the loop's task used it
    /// up): after the second such future this returns, waking the loop, so
    /// the runtime gets its turn, never spinning here.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<(usize, F::Output)>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        let mut budget = self.len;
        let mut self_woken = 0;
        loop {
            let index = {
                let mut ready = self.shared.lock();
                match ready.indices.pop_front() {
                    Some(index) => index,
                    None => {
                        match &ready.waker {
                            Some(known) if known.will_wake(cx.waker()) => {}
                            _ => ready.waker = Some(cx.waker().clone()),
                        }
                        return Poll::Pending;
                    }
                }
            };
            let slot_waker = &self.wakers[index];
            slot_waker.queued.store(false, Ordering::Release);
            let Some(future) = self.slots[index].as_mut() else {
                continue; // woken after it finished
            };
            let waker = Waker::from(slot_waker.clone());
            let polled = Pin::new(future).poll(&mut Context::from_waker(&waker));
            if let Poll::Ready(output) = polled {
                self.slots[index] = None;
                self.free.push(index);
                self.len -= 1;
                return Poll::Ready(Some((index, output)));
            }
            if slot_waker.queued.load(Ordering::Acquire) {
                self_woken += 1;
            }
            budget -= 1;
            if self_woken >= 2 || budget == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }

    /// Waits for the next future to finish.
    pub(crate) async fn next(&mut self) -> Option<(usize, F::Output)> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }
}
