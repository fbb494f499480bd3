//! An ordered, timed log of what happened in a call, written by the gate,
//! the tool and the loop.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// One step of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The gate is about to return `Allow`.
    GateAllowed,
    /// The tool's future was polled for the first time.
    ToolStarted,
    /// The loop got `CallEvent::Running`.
    LoopSawRunning,
    /// The loop got `CallEvent::Ended`.
    LoopSawEnded,
}

/// The steps of a call, in the order they were logged, each with the
/// moment it was logged.
#[derive(Debug, Default)]
pub struct EventLog {
    steps: Mutex<Vec<(Step, Instant)>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Logs `step` now.
    pub fn log(&self, step: Step) {
        self.lock().push((step, Instant::now()));
    }

    /// The steps so far, in order.
    pub fn steps(&self) -> Vec<Step> {
        self.lock().iter().map(|(step, _)| *step).collect()
    }

    /// When `step` was first logged.
    pub fn at(&self, step: Step) -> Option<Instant> {
        self.lock()
            .iter()
            .find(|(logged, _)| *logged == step)
            .map(|(_, at)| *at)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Step, Instant)>> {
        self.steps.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
