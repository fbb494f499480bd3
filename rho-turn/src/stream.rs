//! `EventStream`: a subscriber the host polls itself.

use std::fmt;
use std::future::poll_fn;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use crate::bus::{self, Inner, SubscriberId};
use crate::event::TurnEvent;
use crate::mailbox::Mailbox;

/// A subscriber that the host polls: await [`recv`](EventStream::recv) in a
/// task of its own (a UI task, say). Made by
/// [`EventBus::stream`](crate::EventBus::stream); dropping it unsubscribes.
///
/// It works on any runtime (it only needs a `Waker`) and has the bus's
/// [delivery guarantee](crate::EventBus#delivery-guarantee): a stream that
/// is not polled only buffers, dropping its oldest updates when full.
pub struct EventStream {
    id: SubscriberId,
    mailbox: Arc<Mailbox>,
    bus: Weak<Inner>,
}

impl EventStream {
    pub(crate) fn new(id: SubscriberId, mailbox: Arc<Mailbox>, bus: Weak<Inner>) -> Self {
        Self { id, mailbox, bus }
    }

    /// The stream's id on its bus.
    pub fn id(&self) -> SubscriberId {
        self.id
    }

    /// The next event; `None` once the stream is unsubscribed or its bus is
    /// gone.
    pub async fn recv(&mut self) -> Option<Arc<TurnEvent>> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next event; see [`recv`](EventStream::recv).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<TurnEvent>>> {
        self.mailbox
            .poll_take(cx)
            .map(|taken| taken.map(|taken| taken.event))
    }

    /// The next event if one is buffered, without waiting.
    pub fn try_recv(&mut self) -> Option<Arc<TurnEvent>> {
        self.mailbox.try_take().map(|taken| taken.event)
    }

    /// Updates dropped because the stream fell behind, in all.
    pub fn lagged(&self) -> u64 {
        self.mailbox.stats().lagged
    }

    /// Events buffered, not yet received.
    pub fn pending(&self) -> usize {
        self.mailbox.pending()
    }

    /// Unsubscribes now; later `recv`s give `None`.
    pub fn close(&mut self) {
        bus::remove(&self.bus, self.id);
        self.mailbox.close();
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.close();
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("id", &self.id)
            .field("pending", &self.pending())
            .field("lagged", &self.lagged())
            .finish()
    }
}
