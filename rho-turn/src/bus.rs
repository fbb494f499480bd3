//! `EventBus`: where turns publish their events and subscribers come and go.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::event::TurnEvent;
use crate::mailbox::Mailbox;
use crate::stream::EventStream;
use crate::subscriber::{Subscriber, Subscription};

impl EventBus {
    /// How many updates a subscriber's buffer keeps by default before it drops
    /// the oldest.
    pub const DEFAULT_BUFFER: usize = 1024;
}

/// Identifies one subscriber of a bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(u64);

impl SubscriberId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for SubscriberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "subscriber#{}", self.0)
    }
}

/// The subscribers of one or more turns. Cheap to clone; clones share the
/// subscribers.
///
/// Subscribers are added and removed at any time, also while a turn runs;
/// an event goes to the subscribers there are at the moment it is
/// published.
///
/// # Delivery guarantee
///
/// Each subscriber has a buffer of its own, and publishing only puts the
/// event in each buffer: the loop never waits for a subscriber, and one
/// subscriber being slow, stuck or panicking changes nothing for the others
/// (nor for the turn's timing).
///
/// - Start, approval, running and end events are never dropped: every call
///   a subscriber saw start, it sees end (unless it unsubscribes).
/// - Updates are kept up to the buffer's size (per subscriber, default
///   [`EventBus::DEFAULT_BUFFER`]); when a subscriber falls that far behind, its
///   oldest buffered update is dropped and its lag count grows
///   ([`Subscriber::on_lagged`], [`Subscription::lagged`],
///   [`EventStream::lagged`]). Updates are progress: the newest is kept.
/// - Each subscriber gets the events in the order they were published.
/// - A callback subscriber ([`subscribe`](EventBus::subscribe)) is called on
///   a thread of its own. A panic in it is contained there: that event is
///   counted in [`Subscription::panics`] and the subscriber goes on getting
///   later events.
/// - A subscriber removed ([`unsubscribe`](EventBus::unsubscribe), or its
///   [`EventStream`] dropped) gets nothing more, not even what was buffered.
///   When the last clone of the bus goes, every subscriber ends the same way
///   (its thread finishes the event in hand and exits).
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    subscribers: Mutex<Arc<[Entry]>>,
    next_id: AtomicU64,
    buffer: usize,
}

#[derive(Clone)]
struct Entry {
    id: SubscriberId,
    mailbox: Arc<Mailbox>,
}

impl EventBus {
    /// A bus without subscribers, whose subscribers keep [`EventBus::DEFAULT_BUFFER`]
    /// updates each.
    pub fn new() -> Self {
        Self::with_buffer(EventBus::DEFAULT_BUFFER)
    }

    /// A bus whose subscribers keep at most `updates` updates each (at
    /// least one) before dropping the oldest.
    pub fn with_buffer(updates: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                subscribers: Mutex::new(Arc::from(Vec::new())),
                next_id: AtomicU64::new(1),
                buffer: updates.max(1),
            }),
        }
    }

    /// How many updates each subscriber's buffer keeps.
    pub fn buffer(&self) -> usize {
        self.inner.buffer
    }

    /// Adds a callback subscriber; it is called on a thread of its own
    /// (named `rho-turn-subscriber-N`) with every event from now on, under
    /// the bus's [delivery guarantee](EventBus#delivery-guarantee).
    ///
    /// The returned [`Subscription`] reads the subscriber's counts and can
    /// remove it; dropping it leaves the subscriber subscribed.
    ///
    /// # Errors
    ///
    /// When the operating system cannot start the thread; nothing is
    /// subscribed then.
    pub fn subscribe(&self, subscriber: impl Subscriber) -> io::Result<Subscription> {
        let (id, mailbox) = self.add();
        match crate::subscriber::deliver(id, mailbox.clone(), subscriber) {
            Ok(()) => Ok(Subscription::new(id, mailbox, Arc::downgrade(&self.inner))),
            Err(error) => {
                self.unsubscribe(id);
                Err(error)
            }
        }
    }

    /// Adds a subscriber that the host polls itself: a stream of the events
    /// from now on, under the bus's
    /// [delivery guarantee](EventBus#delivery-guarantee). Dropping the
    /// stream unsubscribes it.
    pub fn stream(&self) -> EventStream {
        let (id, mailbox) = self.add();
        EventStream::new(id, mailbox, Arc::downgrade(&self.inner))
    }

    /// Removes a subscriber; returns whether it was subscribed. It gets no
    /// more events, not even those already buffered for it.
    pub fn unsubscribe(&self, id: SubscriberId) -> bool {
        self.inner.remove(id)
    }

    /// How many subscribers there are.
    pub fn subscriber_count(&self) -> usize {
        self.inner.list().len()
    }

    /// Puts `event` in every subscriber's buffer. Never blocks on a
    /// subscriber.
    pub(crate) fn publish(&self, event: TurnEvent) {
        let subscribers = self.inner.list();
        if subscribers.is_empty() {
            return;
        }
        let event = Arc::new(event);
        for entry in subscribers.iter() {
            entry.mailbox.push(event.clone());
        }
    }

    fn add(&self) -> (SubscriberId, Arc<Mailbox>) {
        let id = SubscriberId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let mailbox = Arc::new(Mailbox::new(self.inner.buffer));
        let mut list = self.inner.lock();
        let mut entries: Vec<Entry> = list.iter().cloned().collect();
        entries.push(Entry {
            id,
            mailbox: mailbox.clone(),
        });
        *list = Arc::from(entries);
        (id, mailbox)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Arc<[Entry]>> {
        // Only the list is swapped under this lock.
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The subscribers now: publishing reads this copy, so adding and
    /// removing never waits for a publish in progress.
    fn list(&self) -> Arc<[Entry]> {
        self.lock().clone()
    }

    pub(crate) fn remove(&self, id: SubscriberId) -> bool {
        let removed = {
            let mut list = self.lock();
            let Some(position) = list.iter().position(|entry| entry.id == id) else {
                return false;
            };
            let mut entries: Vec<Entry> = list.iter().cloned().collect();
            let removed = entries.remove(position);
            *list = Arc::from(entries);
            removed
        };
        removed.mailbox.close();
        true
    }
}

/// Unsubscribes through a bus that may be gone already.
pub(crate) fn remove(bus: &Weak<Inner>, id: SubscriberId) -> bool {
    bus.upgrade().is_some_and(|inner| inner.remove(id))
}

impl Drop for Inner {
    fn drop(&mut self) {
        for entry in self.lock().iter() {
            entry.mailbox.close();
        }
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for EventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.subscriber_count())
            .field("buffer", &self.inner.buffer)
            .finish()
    }
}
