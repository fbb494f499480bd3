//! What the policy decided about each call in flight, from the gate to the
//! audit log: the gate runs inside the call, the log hears of its end, and
//! the call's id joins the two.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What the policy decided about one call, and what the person said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallDecision {
    /// The number of the rule that decided; `None` for the default.
    pub(crate) rule: Option<usize>,
    /// What the policy said to do.
    pub(crate) action: &'static str,
    /// Whether a person was asked (an `ask` the client could put to one).
    pub(crate) asked: bool,
    /// Whether the call may run; `None` while a person is being asked.
    pub(crate) approved: Option<bool>,
    /// The number of the allowance that answered the policy's `ask`.
    pub(crate) allowance: Option<u64>,
    /// The denial's text, for the log.
    pub(crate) denial: Option<String>,
}

/// The decisions of the calls in flight, by call id. Cheap to clone;
/// clones share the table.
///
/// Nothing is kept until someone reads the decisions ([`follow`]): with
/// no audit log, nobody would take them out again.
///
/// [`follow`]: Decisions::follow
#[derive(Clone, Default)]
pub(crate) struct Decisions {
    calls: Arc<Mutex<HashMap<String, CallDecision>>>,
    followed: Arc<AtomicBool>,
}

impl Decisions {
    /// From now on, keeps each call's decision until [`take`](Self::take).
    pub(crate) fn follow(&self) {
        self.followed.store(true, Ordering::Release);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, CallDecision>> {
        // Only map operations run under the lock.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn record(&self, call_id: &str, decision: CallDecision) {
        if !self.followed.load(Ordering::Acquire) {
            return;
        }
        self.lock().insert(call_id.to_owned(), decision);
    }

    pub(crate) fn update(&self, call_id: &str, change: impl FnOnce(&mut CallDecision)) {
        if let Some(decision) = self.lock().get_mut(call_id) {
            change(decision);
        }
    }

    /// The call's decision, forgotten here: the call has ended.
    pub(crate) fn take(&self, call_id: &str) -> Option<CallDecision> {
        self.lock().remove(call_id)
    }
}

impl fmt::Debug for Decisions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decisions")
            .field("in_flight", &self.lock().len())
            .finish()
    }
}
