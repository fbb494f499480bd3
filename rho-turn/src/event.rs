//! What subscribers are told: the events of a turn's calls.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{
    AwaitingApproval, CallEnd, Outcome, Queued, Running, TaskId, ToolResult, Update,
};
use serde::Serialize;

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
        self.about().turn
    }

    /// The call's position in the model's message, from 0.
    pub fn index(&self) -> usize {
        self.about().index
    }

    /// The call that made this one, for a call made by a running call.
    pub fn parent_call_id(&self) -> Option<&str> {
        self.about().parent_call_id
    }

    /// The id the model gave the call.
    pub fn call_id(&self) -> &str {
        self.about().call_id
    }

    /// The tool's name: at the start as the model called it, after it as
    /// the core's record names it (the tool that runs calls itself that,
    /// which is the same for every registered tool).
    pub fn tool(&self) -> &str {
        self.about().tool
    }

    /// Which call the event is about, read where each event keeps it: the
    /// start in its [`CallRef`], the others in their turn's place and the
    /// core's record.
    fn about(&self) -> About<'_> {
        match self {
            TurnEvent::ToolExecutionStart(start) => About {
                turn: start.call.turn,
                index: start.call.index,
                parent_call_id: start.call.parent_call_id.as_deref(),
                call_id: &start.call.call_id,
                tool: &start.call.tool,
            },
            TurnEvent::ToolExecutionAwaitingApproval(event) => {
                event.about(&event.record.call_id, &event.record.tool)
            }
            TurnEvent::ToolExecutionQueued(event) => {
                event.about(&event.record.call_id, &event.record.tool)
            }
            TurnEvent::ToolExecutionRunning(event) => {
                event.about(&event.record.call_id, &event.record.tool)
            }
            TurnEvent::ToolExecutionUpdate(event) => {
                event.about(&event.record.call_id, &event.record.tool)
            }
            TurnEvent::ToolExecutionEnd(event) => {
                event.about(&event.record.call_id, &event.record.tool)
            }
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
struct About<'a> {
    turn: TurnId,
    index: usize,
    parent_call_id: Option<&'a str>,
    call_id: &'a str,
    tool: &'a str,
}

/// Which call an event is about. A `tool_execution_start` has these
/// fields at its top level in JSON (the other events have the same
/// fields, from their [`InTurn`] place and the core's record).
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

/// `tool_execution_start`: the turn's own event (the core has no record
/// of a call before it starts it).
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

/// One of the core's records of a call ([`CallEvent`](rho_tool_core::CallEvent)'s
/// and [`CallEnd`]), placed in its turn: the turn, the call's position in
/// the model's message and the call that made it.
///
/// Every event after the start is one: the record is the same value the
/// core reported to the loop, whole, so a field the core adds to a call's
/// record reaches the turn's event with it. In JSON the record's fields
/// sit at the top level beside `turn` and `index`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InTurn<R> {
    /// The turn.
    pub turn: TurnId,
    /// The call's position in the model's message, from 0. Two calls with
    /// the same id (a model's mistake) still have different indexes.
    pub index: usize,
    /// The call that made this one, as [`CallRef::parent_call_id`] says;
    /// not in the JSON when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// The core's record.
    #[serde(flatten)]
    record: R,
}

impl<R> InTurn<R> {
    /// The core's `record` of a call, placed at `index` of `turn`, made by
    /// `parent_call_id` when a tool's own code made it. For a host that
    /// replays or tests events; a turn makes its own.
    pub fn new(turn: TurnId, index: usize, parent_call_id: Option<String>, record: R) -> Self {
        Self {
            turn,
            index,
            parent_call_id,
            record,
        }
    }

    /// The call placed as `call` says, with its `record`.
    pub(crate) fn placed(call: &CallRef, record: R) -> Self {
        Self::new(call.turn, call.index, call.parent_call_id.clone(), record)
    }

    /// The core's record, whole: the same the loop got.
    pub fn record(&self) -> &R {
        &self.record
    }

    /// The core's record, taken.
    pub fn into_record(self) -> R {
        self.record
    }

    fn about<'a>(&'a self, call_id: &'a str, tool: &'a str) -> About<'a> {
        About {
            turn: self.turn,
            index: self.index,
            parent_call_id: self.parent_call_id.as_deref(),
            call_id,
            tool,
        }
    }
}

/// `tool_execution_awaiting_approval`: the core's [`AwaitingApproval`],
/// placed in its turn.
pub type ExecutionAwaitingApproval = InTurn<AwaitingApproval>;

/// `tool_execution_queued`: the core's [`Queued`] (what the call waits
/// for now: an earlier call, `{"for": "call", "call_id", "index"}`, or
/// room under a bound, `{"for": "tool" | "source", "name", "limit"}`),
/// placed in its turn.
pub type ExecutionQueued = InTurn<Queued>;

/// `tool_execution_running`: the core's [`Running`] (the task, and how
/// long the call waited for its gate and then for its place, `waited_ms`
/// and `queued_ms` in JSON), placed in its turn.
pub type ExecutionRunning = InTurn<Running>;

/// `tool_execution_update`: the core's [`Update`] (the partial result,
/// plain data made so inside the call's task, and how many older ones the
/// core dropped before it), placed in its turn.
pub type ExecutionUpdate = InTurn<Update>;

/// `tool_execution_end`: the core's [`CallEnd`], whole, placed in its
/// turn.
///
/// The core's one record of how a call ended (the same the loop and the
/// tool's source get): all its text (no output cap) and its details (no
/// keep-details policy). Its accessors read the record
/// ([`outcome`](InTurn::outcome), [`result`](InTurn::result), ...);
/// [`record`](InTurn::record) lends it whole.
pub type ExecutionEnd = InTurn<CallEnd>;

/// The end's accessors, read from its [`CallEnd`].
impl InTurn<CallEnd> {
    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.record.call_id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.record.tool
    }

    /// The task that ran the call.
    pub fn task(&self) -> TaskId {
        self.record.task
    }

    /// The class of the end.
    pub fn outcome(&self) -> Outcome {
        self.record.outcome
    }

    /// The whole result.
    pub fn result(&self) -> &ToolResult {
        &self.record.result
    }

    /// The result's details, whole.
    pub fn details(&self) -> Option<&Plain> {
        self.record.result.details.as_ref()
    }

    /// How long the call waited for its gate.
    pub fn waited(&self) -> Duration {
        self.record.waited
    }

    /// How long the call waited for its place after its gate allowed it.
    pub fn queued(&self) -> Duration {
        self.record.queued
    }

    /// How long the tool ran after the gate allowed it; `None` if it never
    /// started.
    pub fn ran(&self) -> Option<Duration> {
        self.record.ran
    }
}
