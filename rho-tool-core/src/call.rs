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
    /// Why the call could not be taken as the model sent it, when a reader
    /// of a model API's message found it so: arguments that are not JSON,
    /// a stream cut off inside them, a missing or reused id. Written to
    /// follow "this call was not run: " (`its arguments are not JSON
    /// (...)`); `arguments` is then `null` or whatever could be read.
    ///
    /// Such a call is never run: a turn answers it with an error that
    /// quotes this reason, so the model can send the call again, and its
    /// tool's source hears of it as a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
    /// What made the call, as the model API names it, when it was not the
    /// model itself: some APIs let a program the model wrote in the API's
    /// own sandbox call a host's tools, and want the caller named again
    /// beside the result. Opaque to rho; `None` for a call of the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<serde_json::Value>,
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
            malformed: None,
            caller: None,
        }
    }

    /// A call of tool `name` with id `id` that could not be taken as the
    /// model sent it, for the reason `error` (see
    /// [`malformed`](Self::malformed)).
    pub fn malformed(
        id: impl Into<String>,
        name: impl Into<String>,
        error: impl Into<String>,
    ) -> Self {
        Self {
            malformed: Some(error.into()),
            ..Self::new(id, name, serde_json::Value::Null)
        }
    }

    /// The call, made by `caller` (see [`caller`](Self::caller)).
    pub fn with_caller(mut self, caller: serde_json::Value) -> Self {
        self.caller = Some(caller);
        self
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
