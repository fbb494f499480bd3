//! What the task and the loop share about one call.
//!
//! One small mutex per call rather than channels: the task says "the gate is
//! waiting" and "running" once each and queues partial results; the host may
//! say "abort" once; the loop reads it all and leaves its waker. Only plain
//! data is ever stored here: partial results are made plain in the task
//! before they are queued.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Instant;

use rho_untrusted::Plain;

/// How many partial results wait for the loop before the oldest is dropped.
/// A loop that polls its calls keeps this near empty; the bound only stops
/// a chatty tool from growing memory while the loop is busy elsewhere.
pub(crate) const UPDATE_QUEUE: usize = 256;

#[derive(Debug, Default)]
pub(crate) struct Notice {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    gate_waiting: bool,
    running_at: Option<Instant>,
    abort: bool,
    /// The loop has reported the end: later updates are ignored.
    closed: bool,
    updates: VecDeque<Plain>,
    /// Updates dropped (oldest first) since the loop last took one.
    dropped: u64,
    loop_waker: Option<Waker>,
}

/// What the loop saw when it looked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seen {
    /// The gate did not answer at its first poll: it is waiting.
    pub(crate) gate_waiting: bool,
    /// When the task said "running" (the gate allowed), if it has.
    pub(crate) running_at: Option<Instant>,
    pub(crate) abort: bool,
    /// Partial results are queued.
    pub(crate) has_update: bool,
}

impl Notice {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code that can panic runs under this lock; a poisoned lock still
        // holds consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn change(&self, change: impl FnOnce(&mut State)) {
        let waker = {
            let mut state = self.lock();
            change(&mut state);
            state.loop_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Called by the task when its gate did not answer at once.
    pub(crate) fn set_gate_waiting(&self) {
        self.change(|state| state.gate_waiting = true);
    }

    /// Called by the task once its gate allowed: the call is running.
    ///
    /// The moment is recorded here, in the task, so the loop's clock starts
    /// at the notice even when the loop looks later.
    pub(crate) fn set_running(&self) {
        let now = Instant::now();
        self.change(|state| state.running_at = Some(now));
    }

    /// Called by the task: a partial result, already plain data.
    pub(crate) fn push_update(&self, update: Plain) {
        self.change(|state| {
            if state.closed {
                return;
            }
            if state.updates.len() == UPDATE_QUEUE {
                state.updates.pop_front();
                state.dropped += 1;
            }
            state.updates.push_back(update);
        });
    }

    /// Called by the host: stop the call.
    pub(crate) fn request_abort(&self) {
        self.change(|state| state.abort = true);
    }

    /// Called by the loop when it reported the end, or when nobody reads
    /// partial results: no more updates are queued.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.updates.clear();
    }

    /// Called by the loop: reads the state and leaves `waker` to be woken
    /// when anything changes.
    pub(crate) fn look(&self, waker: &Waker) -> Seen {
        let mut state = self.lock();
        match &mut state.loop_waker {
            Some(known) if known.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        Seen {
            gate_waiting: state.gate_waiting,
            running_at: state.running_at,
            abort: state.abort,
            has_update: !state.updates.is_empty(),
        }
    }

    /// Called by the loop: the oldest queued partial result, and how many
    /// older ones were dropped to keep the queue bounded.
    pub(crate) fn take_update(&self) -> Option<(Plain, u64)> {
        let mut state = self.lock();
        let update = state.updates.pop_front()?;
        Some((update, std::mem::take(&mut state.dropped)))
    }
}
