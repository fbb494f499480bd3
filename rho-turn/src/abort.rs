//! `TurnAbort`: the host stops one call or the whole turn, from anywhere.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rho_tool_core::AbortHandle;

use crate::ready::ReadySet;

/// Stops a turn's calls from any thread or task (a person pressed Esc).
/// Cheap to clone; get it with [`Turn::abort_handle`](crate::Turn::abort_handle).
///
/// An aborted call ends with an "aborted" error result
/// ([`Outcome::Aborted`](rho_tool_core::Outcome::Aborted)), whatever it was
/// doing: a waiting gate is cancelled, a running tool is killed, a call
/// that had not started (it waited for a free slot) ends without running.
/// Aborts are never counted against a tool. The turn must be polled (be
/// awaited) for the ends to be reported; they are, at once.
#[derive(Clone)]
pub struct TurnAbort {
    control: Arc<Control>,
}

impl TurnAbort {
    pub(crate) fn new(control: Arc<Control>) -> Self {
        Self { control }
    }

    /// Aborts every call of the turn that has not ended. Idempotent.
    pub fn abort(&self) {
        self.control.abort(true, |_| true);
    }

    /// Aborts the unfinished calls whose id is `call_id`; returns whether
    /// there was one.
    pub fn abort_call(&self, call_id: &str) -> bool {
        let ids = self.control.call_ids.clone();
        self.control.abort(false, |index| ids[index] == call_id)
    }

    /// Aborts the call at `index` in the model's message, unless it ended;
    /// returns whether it had not.
    pub fn abort_index(&self, index: usize) -> bool {
        self.control.abort(false, |at| at == index)
    }

    /// Whether [`abort`](TurnAbort::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.control.lock().all
    }
}

impl fmt::Debug for TurnAbort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnAbort")
            .field("calls", &self.control.call_ids.len())
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

/// What the turn and its abort handles share.
pub(crate) struct Control {
    call_ids: Arc<[String]>,
    state: Mutex<State>,
    ready: Arc<ReadySet>,
}

struct State {
    all: bool,
    calls: Vec<CallState>,
}

#[derive(Clone)]
enum CallState {
    /// Not started yet; `true` once aborted.
    Waiting(bool),
    Started(AbortHandle),
    Ended,
}

impl Control {
    pub(crate) fn new(call_ids: Arc<[String]>, ready: Arc<ReadySet>) -> Arc<Self> {
        let calls = vec![CallState::Waiting(false); call_ids.len()];
        Arc::new(Self {
            call_ids,
            state: Mutex::new(State { all: false, calls }),
            ready,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Only this module's bookkeeping runs under the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the unfinished calls that `pick` picks aborted: a started call
    /// is told through its handle, a waiting one is left for the turn.
    fn abort(&self, all: bool, pick: impl Fn(usize) -> bool) -> bool {
        let mut handles = Vec::new();
        let mut any = false;
        {
            let mut state = self.lock();
            state.all |= all;
            for (index, call) in state.calls.iter_mut().enumerate() {
                if !pick(index) {
                    continue;
                }
                match call {
                    CallState::Waiting(aborted) => {
                        *aborted = true;
                        any = true;
                    }
                    CallState::Started(handle) => {
                        handles.push(handle.clone());
                        any = true;
                    }
                    CallState::Ended => {}
                }
            }
        }
        for handle in handles {
            handle.abort();
        }
        if any {
            self.ready.poke();
        }
        any
    }

    /// Whether the waiting call `index` was aborted before it started.
    pub(crate) fn aborted_before_start(&self, index: usize) -> bool {
        matches!(self.lock().calls[index], CallState::Waiting(true))
    }

    /// The call `index` started; its abort handle is kept. If an abort came
    /// in between the check and now, it is passed on at once.
    pub(crate) fn started(&self, index: usize, handle: AbortHandle) {
        let aborted_meanwhile = {
            let mut state = self.lock();
            let aborted = matches!(state.calls[index], CallState::Waiting(true));
            state.calls[index] = CallState::Started(handle.clone());
            aborted
        };
        if aborted_meanwhile {
            handle.abort();
        }
    }

    pub(crate) fn ended(&self, index: usize) {
        self.lock().calls[index] = CallState::Ended;
    }
}
