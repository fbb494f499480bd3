//! One subscriber's buffer: what the bus has published and the subscriber
//! has not taken yet.
//!
//! Two queues, one for notices that are never dropped (start, approval,
//! running, end) and one for updates, bounded: when it is full the oldest
//! update goes and the lag count grows. Each event carries its sequence
//! number, so taking the lower of the two heads gives the events back in
//! the order they were published. Publishing takes this mailbox's lock for
//! a push and nothing more: a subscriber's own code never runs under it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::event::TurnEvent;

/// An event as it waits in a mailbox, with the lag before it.
#[derive(Debug)]
pub(crate) struct Taken {
    pub(crate) event: Arc<TurnEvent>,
    /// Updates dropped since the previous event this subscriber took.
    pub(crate) lagged: u64,
}

#[derive(Debug)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
    changed: Condvar,
    capacity: usize,
}

#[derive(Debug, Default)]
struct State {
    next_seq: u64,
    notices: VecDeque<(u64, Arc<TurnEvent>)>,
    updates: VecDeque<(u64, Arc<TurnEvent>)>,
    lag_pending: u64,
    stats: Stats,
    /// The consumer took an event and has not said it is done with it.
    busy: bool,
    closed: bool,
    waker: Option<Waker>,
}

/// What a subscriber got, as its handle reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub(crate) delivered: u64,
    pub(crate) lagged: u64,
    pub(crate) panics: u64,
    pub(crate) last_panic: Option<String>,
}

impl Mailbox {
    /// A mailbox that keeps at most `capacity` updates (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Only this module's bookkeeping runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `event`; never blocks on the consumer.
    pub(crate) fn push(&self, event: Arc<TurnEvent>) {
        let waker = {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            if event.is_droppable() {
                if state.updates.len() >= self.capacity {
                    // Dropped here, in the loop: a `TurnEvent` is rho's own
                    // plain data.
                    state.updates.pop_front();
                    state.lag_pending += 1;
                    state.stats.lagged += 1;
                }
                state.updates.push_back((seq, event));
            } else {
                state.notices.push_back((seq, event));
            }
            state.waker.take()
        };
        self.changed.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// No more events: the consumer stops, what is buffered is dropped.
    pub(crate) fn close(&self) {
        let waker = {
            let mut state = self.lock();
            state.closed = true;
            state.notices.clear();
            state.updates.clear();
            state.waker.take()
        };
        self.changed.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn take_locked(state: &mut State) -> Option<Taken> {
        let from_notices = match (state.notices.front(), state.updates.front()) {
            (Some((a, _)), Some((b, _))) => a < b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let (_, event) = if from_notices {
            state.notices.pop_front()?
        } else {
            state.updates.pop_front()?
        };
        state.stats.delivered += 1;
        Some(Taken {
            event,
            lagged: std::mem::take(&mut state.lag_pending),
        })
    }

    /// Blocks until there is an event (marking the consumer busy with it)
    /// or the mailbox is closed (`None`).
    pub(crate) fn wait_take(&self) -> Option<Taken> {
        let mut state = self.lock();
        state.busy = false;
        self.changed.notify_all();
        loop {
            if state.closed {
                return None;
            }
            if let Some(taken) = Self::take_locked(&mut state) {
                state.busy = true;
                return Some(taken);
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The next event if there is one, without waiting.
    pub(crate) fn try_take(&self) -> Option<Taken> {
        Self::take_locked(&mut self.lock())
    }

    /// The next event, or the waker is kept to be woken by the next push.
    /// `Ready(None)` once the mailbox is closed and empty.
    pub(crate) fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Taken>> {
        let mut state = self.lock();
        if let Some(taken) = Self::take_locked(&mut state) {
            return Poll::Ready(Some(taken));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        match &mut state.waker {
            Some(known) if known.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Records a panic of the consumer's code.
    pub(crate) fn note_panic(&self, message: Option<String>) {
        let mut state = self.lock();
        state.stats.panics += 1;
        state.stats.last_panic =
            Some(message.unwrap_or_else(|| "a panic whose payload is not text".to_owned()));
    }

    pub(crate) fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }

    /// Events waiting to be taken.
    pub(crate) fn pending(&self) -> usize {
        let state = self.lock();
        state.notices.len() + state.updates.len()
    }

    /// Waits until everything published so far has been taken and handled
    /// (or the mailbox is closed). Returns whether it got there in time.
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            let idle = state.notices.is_empty() && state.updates.is_empty() && !state.busy;
            if idle || state.closed {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
