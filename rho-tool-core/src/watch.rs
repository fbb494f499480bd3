//! The hook through which a tool's source learns of each of its calls.

use crate::call::{TaskId, ToolCall};
use crate::end::CallEnd;

/// Told of each call's task when it starts and how it ended.
///
/// The runner calls [`started`](Watch::started) before the task is spawned
/// and [`ended`](Watch::ended) once, when the loop has the call's result
/// (a call the host drops unfinished ends as aborted). A call refused
/// before it started ([`Start::refused`](crate::Start::refused)) is told
/// too, and ends as [`Outcome::Refused`](crate::Outcome::Refused): a source
/// learns that the model sends its tool bad arguments.
/// Both run in the loop: they must be quick (hand slow work to a queue). A
/// panic in either is contained and changes nothing about the call.
///
/// A watch is given either to the runner ([`Runner::with_watch`](crate::Runner::with_watch)),
/// which tells it of every call, or to one call
/// ([`Start::watched_by`](crate::Start::watched_by)). A registry
/// gives each call of its tools the tool's own entry this way, so the
/// tool's source is told exactly, whatever the host did with the runner;
/// the core only defines the hook, so it knows nothing of registries.
pub trait Watch: Send + Sync {
    /// The call is about to run in `task`.
    fn started(&self, call: &ToolCall, task: TaskId) {
        let _ = (call, task);
    }

    /// The call that ran in `end.task` ended: its outcome and the result
    /// the model gets (plain data).
    fn ended(&self, end: &CallEnd) {
        let _ = end;
    }
}
