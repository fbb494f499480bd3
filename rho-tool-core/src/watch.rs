//! The hook through which a tool's source learns of each of its calls.

use crate::call::{TaskId, ToolCall};
use crate::end::Outcome;

/// Told of each call's task when it starts and how it ended.
///
/// The runner calls [`started`](Watch::started) before the task is spawned
/// and [`ended`](Watch::ended) once, when the loop has the call's result.
/// Both run in the loop: they must be quick (hand slow work to a queue). A
/// panic in either is contained and changes nothing about the call.
///
/// `rho-registry` implements it to tell each source about its own tools;
/// the core only defines the hook, so it knows nothing of registries.
pub trait Watch: Send + Sync {
    /// The call is about to run in `task`.
    fn started(&self, call: &ToolCall, task: TaskId) {
        let _ = (call, task);
    }

    /// The call of tool `tool` that ran in `task` ended with `outcome`.
    fn ended(&self, tool: &str, task: TaskId, outcome: Outcome) {
        let _ = (tool, task, outcome);
    }
}
