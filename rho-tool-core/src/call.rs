//! What the model asked for, and the ids that follow a call around.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// One tool call as the model issued it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the model gave the call; results are matched to calls by it.
    pub id: String,
    /// The name of the tool to run.
    pub name: String,
    /// The arguments, as JSON (normally an object).
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// A call of tool `name` with id `id` and `arguments`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The id of the task that runs one call, unique in the process.
///
/// rho gives it out itself rather than asking the executor, so it means the
/// same on every runtime.
///
/// Serialises as its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct TaskId(u64);

impl TaskId {
    /// The id of no task: a call that ended before any task was spawned
    /// for it (a turn's call aborted while it waited for its place). Every
    /// real task's id is another.
    pub const NONE: TaskId = TaskId(0);

    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task#{}", self.0)
    }
}
