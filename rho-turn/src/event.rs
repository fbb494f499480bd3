//! What subscribers are told: the events of a turn's calls.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEnd, Outcome, TaskId, ToolResult, WaitingFor};
use serde::Serialize;
use serde_with::DurationMilliSecondsWithFrac;

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
/// # use rho::TurnEvent;
/// # fn show(event: &TurnEvent) {
/// let json = serde_json::to_value(event).unwrap();
/// assert_eq!(json["type"], event.name()); // "tool_execution_start", ...
/// # }
/// ```
///
/// Per call, in this order: one `tool_execution_start`, at most one
/// `tool_execution_awaiting_approval`, any number of
/// `tool_execution_queued` (one per thing it waits for before its tool
/// runs: an earlier call, a bound), at most one `tool_execution_running`,
/// any number of `tool_execution_update`s, then one `tool_execution_end`.
/// Events of different calls interleave as things happen.
///
/// Exhaustive on purpose, like the core's
/// [`CallEvent`](rho_tool_core::CallEvent): a screen that handles each
/// event should be told by the compiler when one is added.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    /// `tool_execution_start`: the call is about to be checked and gated.
    ToolExecutionStart(ExecutionStart),
    /// `tool_execution_awaiting_approval`: the gate did not answer at once
    /// (someone is being asked); no clock runs.
    ToolExecutionAwaitingApproval(ExecutionAwaitingApproval),
    /// `tool_execution_queued`: the gate allowed, and the call waits for
    /// its place (behind an earlier call of the message, under a bound);
    /// no clock runs.
    ToolExecutionQueued(ExecutionQueued),
    /// `tool_execution_running`: the gate allowed and the call's place
    /// came; the tool's clock started.
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
            TurnEvent::ToolExecutionQueued(_) => "tool_execution_queued",
            TurnEvent::ToolExecutionRunning(_) => "tool_execution_running",
            TurnEvent::ToolExecutionUpdate(_) => "tool_execution_update",
            TurnEvent::ToolExecutionEnd(_) => "tool_execution_end",
        }
    }

    /// The turn the call belongs to.
    pub fn turn(&self) -> TurnId {
        match self.about() {
            About::Call(call) => call.turn,
            About::End(end) => end.turn,
        }
    }

    /// The call's position in the model's message, from 0.
    pub fn index(&self) -> usize {
        match self.about() {
            About::Call(call) => call.index,
            About::End(end) => end.index,
        }
    }

    /// The call that made this one, for a call made by a running call.
    pub fn parent_call_id(&self) -> Option<&str> {
        match self.about() {
            About::Call(call) => call.parent_call_id.as_deref(),
            About::End(end) => end.parent_call_id.as_deref(),
        }
    }

    /// The id the model gave the call.
    pub fn call_id(&self) -> &str {
        match self.about() {
            About::Call(call) => &call.call_id,
            About::End(end) => end.call_id(),
        }
    }

    /// The tool's name (as the model called it; at the end, as the tool
    /// that ran calls itself, which is the same for every registered tool).
    pub fn tool(&self) -> &str {
        match self.about() {
            About::Call(call) => &call.tool,
            About::End(end) => end.tool(),
        }
    }

    /// Where the event says which call it is about: the end carries the
    /// call's whole [`CallEnd`], the others a [`CallRef`].
    fn about(&self) -> About<'_> {
        match self {
            TurnEvent::ToolExecutionStart(ExecutionStart { call, .. })
            | TurnEvent::ToolExecutionAwaitingApproval(ExecutionAwaitingApproval { call })
            | TurnEvent::ToolExecutionQueued(ExecutionQueued { call, .. })
            | TurnEvent::ToolExecutionRunning(ExecutionRunning { call, .. })
            | TurnEvent::ToolExecutionUpdate(ExecutionUpdate { call, .. }) => About::Call(call),
            TurnEvent::ToolExecutionEnd(end) => About::End(end),
        }
    }

    /// Whether a subscriber that falls behind may lose this event: only
    /// updates are (oldest first); start, approval, queued, running and
    /// end notices never are.
    pub fn is_droppable(&self) -> bool {
        matches!(self, TurnEvent::ToolExecutionUpdate(_))
    }
}

/// Which call an event is about, as `TurnEvent::about` finds it.
enum About<'a> {
    Call(&'a CallRef),
    End(&'a ExecutionEnd),
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
    /// The call that made this one, for a call made by a running call (a
    /// script's call of a tool: see
    /// [`TurnRunner::turn_within`](crate::TurnRunner::turn_within)); not
    /// in the JSON when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
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
pub struct ExecutionAwaitingApproval {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
}

/// `tool_execution_queued`: what the call waits for now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionQueued {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The task running it.
    pub task: TaskId,
    /// What it waits for: an earlier call (`{"for": "call", "call_id",
    /// "index"}`) or room under a bound (`{"for": "tool" | "source",
    /// "name", "limit"}`).
    pub waiting_for: WaitingFor,
}

/// `tool_execution_running`.
#[serde_with::serde_as]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionRunning {
    /// The call.
    #[serde(flatten)]
    pub call: CallRef,
    /// The task running it.
    pub task: TaskId,
    /// How long the call waited for its gate (`waited_ms` in JSON).
    #[serde(rename = "waited_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub waited: Duration,
    /// How long it then waited for its place (`queued_ms` in JSON).
    #[serde(rename = "queued_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub queued: Duration,
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

/// `tool_execution_end`: the call's [`CallEnd`], whole, and where the
/// call sits in its turn.
///
/// A view of the core's one record of how a call ended (the same the
/// loop and the tool's source get), placed in its turn: all its text (no
/// output cap) and its details (no keep-details policy). Its accessors
/// read the record ([`outcome`](ExecutionEnd::outcome),
/// [`result`](ExecutionEnd::result), ...); [`call_end`](ExecutionEnd::call_end)
/// lends it whole. In JSON its fields sit at the top level beside `turn`
/// and `index`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionEnd {
    /// The turn.
    pub turn: TurnId,
    /// The call's position in the model's message, from 0.
    pub index: usize,
    /// The call that made this one, as [`CallRef::parent_call_id`] says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// How the call ended.
    #[serde(flatten)]
    pub(crate) end: CallEnd,
}

impl ExecutionEnd {
    /// The call's end, placed at `index` of `turn`, made by `parent_call_id`
    /// when a tool's own code made it. For a host that replays or tests
    /// events; a turn makes its own.
    pub fn new(turn: TurnId, index: usize, parent_call_id: Option<String>, end: CallEnd) -> Self {
        Self {
            turn,
            index,
            parent_call_id,
            end,
        }
    }

    /// The record of the end, whole: the same the loop and the tool's
    /// source got.
    pub fn call_end(&self) -> &CallEnd {
        &self.end
    }

    /// The record of the end, taken.
    pub fn into_call_end(self) -> CallEnd {
        self.end
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.end.call_id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.end.tool
    }

    /// The task that ran the call.
    pub fn task(&self) -> TaskId {
        self.end.task
    }

    /// The class of the end.
    pub fn outcome(&self) -> Outcome {
        self.end.outcome
    }

    /// The whole result.
    pub fn result(&self) -> &ToolResult {
        &self.end.result
    }

    /// The result's details, whole.
    pub fn details(&self) -> Option<&Plain> {
        self.end.result.details.as_ref()
    }

    /// How long the call waited for its gate.
    pub fn waited(&self) -> Duration {
        self.end.waited
    }

    /// How long the call waited for its place after its gate allowed it.
    pub fn queued(&self) -> Duration {
        self.end.queued
    }

    /// How long the tool ran after the gate allowed it; `None` if it never
    /// started.
    pub fn ran(&self) -> Option<Duration> {
        self.end.ran
    }
}
