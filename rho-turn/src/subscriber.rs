//! Callback subscribers: the trait, the thread that calls one, and the
//! handle the host keeps.

use std::fmt;
use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rho_tool_core::untrusted::{call_contained, drop_contained};

use crate::bus::{self, Inner, SubscriberId};
use crate::event::TurnEvent;
use crate::mailbox::Mailbox;

/// A callback subscriber of an [`EventBus`](crate::EventBus).
///
/// Implemented for every `FnMut(&TurnEvent) + Send + 'static` closure; a
/// type of your own implements it to hear about lag too. It is called on a
/// thread of its own, one event at a time, in publishing order: it may take
/// as long as it likes (it only falls behind) and it may panic (the panic is
/// contained on that thread, counted, and the next event comes as usual).
///
/// ```
/// use rho::turn::{EventBus, TurnEvent};
///
/// let bus = EventBus::new();
/// let subscription = bus.subscribe(|event: &TurnEvent| {
///     println!("{} {}", event.name(), event.call_id());
/// })?;
/// assert_eq!(bus.subscriber_count(), 1);
/// subscription.unsubscribe();
/// assert_eq!(bus.subscriber_count(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait Subscriber: Send + 'static {
    /// One event.
    fn on_event(&mut self, event: &TurnEvent);

    /// `dropped` updates were dropped because this subscriber fell behind;
    /// called just before the next event it gets. Default: nothing.
    fn on_lagged(&mut self, dropped: u64) {
        let _ = dropped;
    }
}

impl<F: FnMut(&TurnEvent) + Send + 'static> Subscriber for F {
    fn on_event(&mut self, event: &TurnEvent) {
        self(event)
    }
}

/// Starts the thread that hands `mailbox`'s events to `subscriber`.
pub(crate) fn deliver<S: Subscriber>(
    id: SubscriberId,
    mailbox: Arc<Mailbox>,
    subscriber: S,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("rho-turn-subscriber-{}", id.as_u64()))
        .spawn(move || run(&mailbox, subscriber))
        .map(drop)
}

fn run<S: Subscriber>(mailbox: &Mailbox, mut subscriber: S) {
    while let Some(taken) = mailbox.wait_take() {
        if taken.lagged > 0 {
            if let Err(caught) = call_contained(|| subscriber.on_lagged(taken.lagged)) {
                mailbox.note_panic(caught.message);
            }
        }
        if let Err(caught) = call_contained(|| subscriber.on_event(&taken.event)) {
            mailbox.note_panic(caught.message);
        }
    }
    // The subscriber is the host's value, but its `Drop` runs on this
    // thread and must not end it with an unwind either.
    let _ = drop_contained(subscriber);
}

/// The host's handle on a callback subscriber: its counts, and a way to
/// remove it. Cheap to clone. Dropping it leaves the subscriber subscribed.
#[derive(Clone)]
pub struct Subscription {
    id: SubscriberId,
    mailbox: Arc<Mailbox>,
    bus: Weak<Inner>,
}

impl Subscription {
    pub(crate) fn new(id: SubscriberId, mailbox: Arc<Mailbox>, bus: Weak<Inner>) -> Self {
        Self { id, mailbox, bus }
    }

    /// The subscriber's id on its bus.
    pub fn id(&self) -> SubscriberId {
        self.id
    }

    /// Removes the subscriber: it gets no more events (its thread finishes
    /// the event in hand and exits). Returns whether it was subscribed.
    pub fn unsubscribe(&self) -> bool {
        let removed = bus::remove(&self.bus, self.id);
        self.mailbox.close();
        removed
    }

    /// Whether the subscriber still gets events.
    pub fn is_active(&self) -> bool {
        !self.mailbox.is_closed()
    }

    /// Events handed to the subscriber so far.
    pub fn delivered(&self) -> u64 {
        self.mailbox.stats().delivered
    }

    /// Updates dropped because the subscriber fell behind, in all.
    pub fn lagged(&self) -> u64 {
        self.mailbox.stats().lagged
    }

    /// How many times the subscriber panicked (each panic cost it that one
    /// event, nothing more).
    pub fn panics(&self) -> u64 {
        self.mailbox.stats().panics
    }

    /// The message of the subscriber's last panic.
    pub fn last_panic(&self) -> Option<String> {
        self.mailbox.stats().last_panic
    }

    /// Events buffered for the subscriber, not yet handed to it.
    pub fn pending(&self) -> usize {
        self.mailbox.pending()
    }

    /// Blocks the calling thread until the subscriber has handled every
    /// event published so far, or `timeout` passed; returns whether it got
    /// there (also `true` once unsubscribed). For tests and shutdown; never
    /// call it from inside an async task.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.mailbox.wait_idle(timeout)
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("active", &self.is_active())
            .field("stats", &self.mailbox.stats())
            .finish()
    }
}
