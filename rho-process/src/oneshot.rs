//! A one-shot channel from a std thread to a future: a `Mutex` and a `Waker`.
//!
//! The supervising thread blocks (in `waitid`, in `join`), so it cannot be
//! a future; the tool's `run` must be one, on whatever executor rho runs.
//! This is the smallest bridge between the two that needs no runtime: the
//! thread stores the value and wakes the last waker the future left.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// A new channel: the thread keeps the sender, the future awaits the
/// receiver.
pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Mutex::new(Slot {
        value: None,
        closed: false,
        waker: None,
    }));
    (Sender { slot: slot.clone() }, Receiver { slot })
}

struct Slot<T> {
    value: Option<T>,
    /// The sender is gone: with `value` still `None`, nothing will come.
    closed: bool,
    waker: Option<Waker>,
}

fn lock<T>(slot: &Mutex<Slot<T>>) -> MutexGuard<'_, Slot<T>> {
    // Nothing panics while holding the lock; should something ever, the
    // slot's fields are still each valid on their own.
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sending half; sends once. Dropping it unsent closes the channel.
pub(crate) struct Sender<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Sender<T> {
    /// Hands `value` to the receiver and wakes it.
    pub(crate) fn send(self, value: T) {
        let waker = {
            let mut slot = lock(&self.slot);
            slot.value = Some(value);
            slot.waker.take()
        };
        // Woken outside the lock: a waker may run code of the executor.
        if let Some(waker) = waker {
            waker.wake();
        }
        // `Drop` now closes the channel; the value is already in place.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = lock(&self.slot);
            slot.closed = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The receiving half: resolves to the value, or `None` when the sender was
/// dropped without sending (its thread panicked).
pub(crate) struct Receiver<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = lock(&self.slot);
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Some(value));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        match &mut slot.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waker => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll<T>(receiver: &mut Receiver<T>, waker: &Waker) -> Poll<Option<T>> {
        Pin::new(receiver).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_value_sent_from_a_thread_wakes_the_receiver() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let (sender, mut receiver) = channel();
        assert_eq!(poll(&mut receiver, &waker), Poll::Pending);
        std::thread::spawn(move || sender.send(7))
            .join()
            .expect("the sending thread ran");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut receiver, &waker), Poll::Ready(Some(7)));
    }

    #[test]
    fn a_dropped_sender_resolves_none() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let (sender, mut receiver) = channel::<u8>();
        assert_eq!(poll(&mut receiver, &waker), Poll::Pending);
        drop(sender);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut receiver, &waker), Poll::Ready(None));
    }

    #[test]
    fn a_value_sent_before_the_first_poll_is_there() {
        let (sender, mut receiver) = channel();
        sender.send("early");
        assert_eq!(
            poll(&mut receiver, Waker::noop()),
            Poll::Ready(Some("early"))
        );
    }
}
