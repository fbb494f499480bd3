//! A turn that stops at the first call that does not succeed
//! ([`TurnRunner::with_stop_on_failure`](crate::TurnRunner::with_stop_on_failure)).
//!
//! The first call whose end is not a success is the turn's failure; every
//! later call of the message whose tool has not started by then ends
//! refused, with a text naming the failed call. "Not started" is checked
//! in each call's task right before its tool would run (after its gate,
//! its place in the order and its bounds), so a call that was waiting
//! anywhere, or whose gate was still asking, is stopped too; a call
//! already running beside the failed one goes on.

use std::sync::{Arc, Mutex, PoisonError};

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Outcome, ToolResult, Wait, WaitingFor};

/// The first call of a turn that did not succeed.
#[derive(Debug, Clone)]
pub(crate) struct Failed {
    pub(crate) index: usize,
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) outcome: Outcome,
}

impl Failed {
    /// The error result of a later call not run because of this one.
    pub(crate) fn skipped_result(&self) -> ToolResult {
        ToolResult::error(format!(
            "this call was not run: call `{}` ({} of the message, tool `{}`) before it did \
             not succeed ({}), and this turn stops at the first call that does not succeed",
            self.call_id,
            self.index + 1,
            self.tool,
            self.outcome,
        ))
        .with_details(Plain::from(serde_json::json!({
            "refused": "earlier_call_failed",
            "call_id": self.call_id,
            "index": self.index,
            "outcome": self.outcome.as_str(),
        })))
    }
}

/// The turn's failure, once there is one; shared with its calls' tasks.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    failed: Mutex<Option<Failed>>,
}

impl Stop {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Failed>> {
        // Only this module's reads and writes run under the lock.
        self.failed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The failure, if there is one.
    pub(crate) fn failed(&self) -> Option<Failed> {
        self.lock().clone()
    }

    /// Records `failed` unless a call failed before; whether it was the
    /// first.
    pub(crate) fn fail(&self, failed: Failed) -> bool {
        let mut first = self.lock();
        if first.is_some() {
            return false;
        }
        *first = Some(failed);
        true
    }

    /// The last thing call `index` (whose previous call is `previous`, id
    /// and index) waits for before its tool runs: never pending, it ends
    /// the call refused if an earlier call has failed by then.
    pub(crate) fn check(self: &Arc<Self>, index: usize, previous: (String, usize)) -> Wait {
        let stop = self.clone();
        let (call_id, at) = previous;
        // Named as an earlier call, though it never waits: events name
        // only waits that were pending.
        Wait::new(WaitingFor::Call { call_id, index: at }, async move {
            match stop.lock().as_ref() {
                Some(failed) if failed.index < index => Err(failed.skipped_result()),
                _ => Ok(()),
            }
        })
    }
}
