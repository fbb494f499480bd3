//! Which calls of a turn have something to report: one waker per call, so
//! a turn of a thousand calls polls only the calls that were woken.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Wake, Waker};

#[derive(Debug, Default)]
pub(crate) struct ReadySet {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Calls woken since the turn last looked, each once.
    ready: Vec<usize>,
    queued: Vec<bool>,
    /// Something other than a call woke the turn (an abort).
    poked: bool,
    turn: Option<Waker>,
}

impl ReadySet {
    pub(crate) fn new(calls: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queued: vec![false; calls],
                ..State::default()
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Only this module's bookkeeping runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The waker that marks call `index` ready and wakes the turn.
    pub(crate) fn waker(self: &Arc<Self>, index: usize) -> Waker {
        Waker::from(Arc::new(CallWaker {
            index,
            set: self.clone(),
        }))
    }

    /// Keeps the turn's waker, to be woken by the next mark or poke.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut state = self.lock();
        match &mut state.turn {
            Some(known) if known.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    pub(crate) fn mark(&self, index: usize) {
        let waker = {
            let mut state = self.lock();
            match state.queued.get_mut(index) {
                Some(queued) if !*queued => *queued = true,
                _ => return,
            }
            state.ready.push(index);
            state.turn.clone()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Wakes the turn without marking a call.
    pub(crate) fn poke(&self) {
        let waker = {
            let mut state = self.lock();
            state.poked = true;
            state.turn.clone()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The calls woken since the last look, and whether the turn was poked.
    pub(crate) fn take(&self) -> (Vec<usize>, bool) {
        let mut state = self.lock();
        let ready = std::mem::take(&mut state.ready);
        for &index in &ready {
            state.queued[index] = false;
        }
        (ready, std::mem::take(&mut state.poked))
    }
}

struct CallWaker {
    index: usize,
    set: Arc<ReadySet>,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.set.mark(self.index);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.set.mark(self.index);
    }
}
