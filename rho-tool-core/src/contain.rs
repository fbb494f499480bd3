//! The wrapper that keeps a foreign future from unwinding into rho's task.
//!
//! Every future rho did not write (a gate's check, a tool's run) is polled
//! and dropped through [`Contained`]. Containing each one separately, rather
//! than the task body as a whole, matters: an unwind through the task body
//! would drop the other foreign futures still alive in it during the unwind,
//! and a `Drop` that panics then aborts the process.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use rho_untrusted::{Caught, call_contained, drop_contained};

/// A foreign future whose creation, polls and drop never unwind.
///
/// Resolves to `Ok(output)`, or `Err(caught)` when the future panicked (its
/// message if the payload was a `String` or `&str`, and its location when
/// the quiet hook recorded one; the payload itself is gone); in
/// both cases the inner future is dropped (contained) as soon as it is
/// finished, so its resources go at once.
pub(crate) struct Contained<F> {
    state: State<F>,
}

enum State<F> {
    Running(F),
    /// Boxed: a panic is rare, and this state is part of every call's task.
    Panicked(Box<Caught>),
    Finished,
}

impl<F: Future + Unpin> Contained<F> {
    /// Creates the future by calling `make`, containing a panic of `make`
    /// itself (a hand-written `async_trait` method can panic before it
    /// returns its future).
    pub(crate) fn start(make: impl FnOnce() -> F) -> Self {
        let state = match call_contained(make) {
            Ok(future) => State::Running(future),
            Err(caught) => State::Panicked(Box::new(caught)),
        };
        Self { state }
    }
}

impl<F> Contained<F> {
    /// Drops the future now, if it is still there, containing a panic of
    /// its `Drop`: after it finished or panicked, such a panic changes
    /// nothing about the call's end; when it is killed mid-run (timeout,
    /// abort, executor shutdown), it must not unwind into rho's task.
    fn finish(&mut self) {
        if let State::Running(future) = std::mem::replace(&mut self.state, State::Finished) {
            let _ = drop_contained(future);
        }
    }
}

impl<F: Future + Unpin> Future for Contained<F> {
    type Output = Result<F::Output, Box<Caught>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let future = match &mut this.state {
            State::Running(future) => future,
            State::Panicked(_) => {
                return match std::mem::replace(&mut this.state, State::Finished) {
                    State::Panicked(caught) => Poll::Ready(Err(caught)),
                    // Matched just above; stays pending like a finished one.
                    State::Running(_) | State::Finished => Poll::Pending,
                };
            }
            // Only rho polls this, and never after it resolved.
            State::Finished => return Poll::Pending,
        };
        match call_contained(|| Pin::new(future).poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                this.finish();
                Poll::Ready(Ok(output))
            }
            Err(caught) => {
                this.finish();
                Poll::Ready(Err(Box::new(caught)))
            }
        }
    }
}

impl<F> Drop for Contained<F> {
    fn drop(&mut self) {
        self.finish();
    }
}
