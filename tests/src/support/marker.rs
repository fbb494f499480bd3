//! The loop marker: a thread-local that is set while the loop side of a
//! call is polled or dropped.
//!
//! The contract says no code of a foreign value (a panic payload, an answer)
//! runs in the loop. The suite checks it by running the whole loop side of a
//! point inside [`InLoop`]; every hostile value records whether
//! [`in_loop`] was true when its code ran (see
//! [`Recorder`](super::Recorder)). An executor whose tasks are polled from
//! inside the loop's own poll (nested) would show up here too.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    /// Set while the loop side polls or drops something on this thread.
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is inside a loop-side poll or drop.
pub fn in_loop() -> bool {
    IN_LOOP.with(Cell::get)
}

/// Marks the current thread as "in the loop" until dropped; restores the
/// previous mark, so marks nest.
#[must_use = "the mark lasts as long as the value"]
pub struct LoopMark {
    previous: bool,
}

impl LoopMark {
    /// Sets the mark on this thread.
    pub fn enter() -> Self {
        let previous = IN_LOOP.with(|flag| flag.replace(true));
        Self { previous }
    }
}

impl Drop for LoopMark {
    fn drop(&mut self) {
        let previous = self.previous;
        IN_LOOP.with(|flag| flag.set(previous));
    }
}

impl fmt::Debug for LoopMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopMark")
            .field("previous", &self.previous)
            .finish()
    }
}

/// The loop side: polls and drops `F` with the thread marked as in the
/// loop.
///
/// Every point runs its whole loop side (starting calls, awaiting them,
/// aborting them, dropping their handles) inside one `InLoop`.
pub struct InLoop<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F> InLoop<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Self {
            inner: Some(Box::pin(inner)),
        }
    }
}

impl<F: Future> Future for InLoop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _mark = LoopMark::enter();
        match this.inner.as_mut() {
            Some(inner) => inner.as_mut().poll(cx),
            // Only after drop; never polled then.
            None => Poll::Pending,
        }
    }
}

impl<F> Drop for InLoop<F> {
    fn drop(&mut self) {
        let _mark = LoopMark::enter();
        drop(self.inner.take());
    }
}

impl<F> fmt::Debug for InLoop<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InLoop").finish_non_exhaustive()
    }
}
