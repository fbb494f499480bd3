//! What subscribers are told: the events of a turn's calls.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Outcome, TaskId, ToolResult};
use serde::{Serialize, Serializer};

/// The id of one turn, unique in the process; every event carries it, so
/// subscribers of an [`EventBus`](crate::EventBus) shared by several turns
/// (sub-agents, say) can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TurnId(u64);

impl TurnId {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "turn#{}", self.0)
    }
}

/// Something that happened to one call of a turn.
///
/// Named after the events agent hosts already use; each serialises to a
/// JSON object whose `type` is the event's [`name`](TurnEvent::name):
///
/// ```
/// # use rho_turn::TurnEvent;
/// # fn show(event: &TurnEvent) {
/// let json = serde_json::to_value(event).unwrap();
/// assert_eq!(json["type"], event.name()); // "tool_execution_start", ...
/// # }
/// ```
///
/// Per call, in this order: one `tool_execution_start`, at most one
/// `tool_execution_awaiting_approval`, at most one `tool_execution_running`,
/// any number of `tool_execution_update`s, then one `tool_execution_end`.
/// Events of different calls interleave as things happen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnEvent {
    /// `tool_execution_start`: the call is about to be checked and gated.
    ToolExecutionStart(ExecutionStart),
    /// `tool_execution_awaiting_approval`: the gate did not answer at once
    /// (someone is being asked); no clock runs.
    ToolExecutionAwaitingApproval(AwaitingApproval),
    /// `tool_execution_running`: the gate allowed; the tool's clock started.
    ToolExecutionRunning(ExecutionRunning),
    /// `tool_execution_update`: a partial result the running tool reported.
    ToolExecutionUpdate(ExecutionUpdate),
    /// `tool_execution_end`: the call ended; the whole result.
    ToolExecutionEnd(ExecutionEnd),
}

impl TurnEvent {
    /// The event's name, as its JSON `type` says it.
    pub fn name(&self) -> &'static str {
        match self {
            TurnEvent::ToolExecutionStart(_) => "tool_execution_start",
            TurnEvent::ToolExecutionAwaitingApproval(_) => "tool_execution_awaiting_approval",
            TurnEvent::ToolExecutionRunning(_) => "tool_execution_running",
            TurnEvent::ToolExecutionUpdate(_) => "tool_execution_update",
            TurnEvent::ToolExecutionEnd(_) => "tool_execution_end",
        }
    }

    /// The turn the call belongs to.
    pub fn turn(&self) -> TurnId {
        self.call().turn
    }

    /// The call's position in the model's message, from 0.
    pub fn index(&self) -> usize {
        self.call().index
    }

    /// The id the model gave the call.
    pub fn call_id(&self) -> &str {
        &self.call().call_id
    }

    /// The tool's name, as the model called it.
    pub fn tool(&self) -> &str {
        &self.call().tool
    }

    /// Whether a subscriber that falls behind may lose this event: only
    /// updates are (oldest first); start, approval, running and end notices
    /// never are.
    pub fn is_droppable(&self) -> bool {
        matches!(self, TurnEvent::ToolExecutionUpdate(_))
    }

    fn call(&self) -> &CallRef {
        match self {
            TurnEvent::ToolExecutionStart(e) => &e.call,
            TurnEvent::ToolExecutionAwaitingApproval(e) => &e.call,
            TurnEvent::ToolExecutionRunning(e) => &e.call,
            TurnEvent::ToolExecutionUpdate(e) => &e.call,
            TurnEvent::ToolExecutionEnd(e) => &e.call,
        }
    }
}

/// Which call an event is about. Every event has these fields at its top
/// level in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRef {
    /// The turn.
    pub turn: TurnId,
    /// The call's position in the model's message, from 0. Two calls with
    /// the same id (a model's mistake) still have different indexes.
    pub index: usize,
    /// The id the model gave the call.
    pub call_id: String,
    /// The tool's name, as the model called it.
    pub tool: String,
}

/// `tool_execution_start`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionStart {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The arguments the model gave, before validation.
    pub arguments: serde_json::Value,
    /// Whether the registry's tool of that name is untrusted (`false` when
    /// there is no such tool).
    pub untrusted: bool,
}

/// `tool_execution_awaiting_approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AwaitingApproval {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
}

/// `tool_execution_running`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionRunning {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The task running it.
    #[serde(serialize_with = "task_id")]
    pub task: TaskId,
    /// How long the call waited for its gate (`waited_ms` in JSON).
    #[serde(rename = "waited_ms", serialize_with = "millis")]
    pub waited: Duration,
}

/// `tool_execution_update`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionUpdate {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The partial result, plain data (made so inside the call's task).
    pub partial: Plain,
    /// How many older partial results of this call the core dropped before
    /// this one because the loop had not taken them yet.
    pub dropped_before: u64,
}

/// `tool_execution_end`: the whole result, whatever the session keeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionEnd {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The class of the end (`"succeeded"`, `"aborted"`, ... in JSON).
    pub outcome: Outcome,
    /// The whole result: all its text (no output cap) and its details
    /// (no keep-details policy).
    pub result: ToolResult,
    /// How long the call waited for its gate (`waited_ms` in JSON).
    #[serde(rename = "waited_ms", serialize_with = "millis")]
    pub waited: Duration,
    /// How long the tool ran; `None` if it never started (`ran_ms`).
    #[serde(rename = "ran_ms", serialize_with = "maybe_millis")]
    pub ran: Option<Duration>,
}

impl ExecutionEnd {
    /// The result's details, whole.
    pub fn details(&self) -> Option<&Plain> {
        self.result.details.as_ref()
    }
}

pub(crate) fn millis<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(d.as_secs_f64() * 1000.0)
}

pub(crate) fn maybe_millis<S: Serializer>(
    d: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, serializer),
        None => serializer.serialize_none(),
    }
}

fn task_id<S: Serializer>(task: &TaskId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(task.as_u64())
}
