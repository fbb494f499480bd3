//! The few bits the task and the loop share about one call.
//!
//! One small mutex per call rather than a channel: the task sets "running"
//! once, the host may set "abort" once, and the loop reads both and leaves
//! its waker. Nothing foreign is ever stored here.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Instant;

#[derive(Debug, Default)]
pub(crate) struct Notice {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running_at: Option<Instant>,
    abort: bool,
    loop_waker: Option<Waker>,
}

/// What the loop saw when it looked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    /// When the task said "running" (the gate allowed), if it has.
    pub(crate) running_at: Option<Instant>,
    pub(crate) abort: bool,
}

impl Notice {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code that can panic runs under this lock; a poisoned lock still
        // holds consistent booleans.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Called by the task once its gate allowed: the call is running.
    ///
    /// The moment is recorded here, in the task, so the loop's clock starts
    /// at the notice even when the loop looks later.
    pub(crate) fn set_running(&self) {
        let now = Instant::now();
        let waker = {
            let mut state = self.lock();
            state.running_at = Some(now);
            state.loop_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Called by the host: stop the call.
    pub(crate) fn request_abort(&self) {
        let waker = {
            let mut state = self.lock();
            state.abort = true;
            state.loop_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Called by the loop: reads the flags and leaves `waker` to be woken
    /// when either changes.
    pub(crate) fn look(&self, waker: &Waker) -> Seen {
        let mut state = self.lock();
        match &mut state.loop_waker {
            Some(known) if known.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        Seen {
            running_at: state.running_at,
            abort: state.abort,
        }
    }
}
