//! How a call ended, as the loop reports it.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_with::DurationMilliSecondsWithFrac;

use crate::call::TaskId;
use crate::queue::WaitingFor;
use crate::result::ToolResult;

/// The class of a call's end.
///
/// Exhaustive on purpose: what counts against a tool, what a screen shows
/// and what a model is told all depend on the class, so a host's `match`
/// should cover every one, and a new class is a change of the contract that
/// the compiler should point out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The tool answered successfully.
    Succeeded,
    /// The tool answered with an error (its own, or an answer rho could not
    /// use).
    Failed,
    /// The gate denied the call; the tool never ran.
    Denied,
    /// The gate or the tool panicked (including the answer's `Serialize` or
    /// `Drop`), or the tool reported a crash it observed
    /// ([`ToolOutput::crashed`](crate::ToolOutput::crashed)).
    Crashed,
    /// The loop killed the tool at its timeout.
    TimedOut,
    /// The host aborted the call.
    Aborted,
    /// The executor went away while the call was in flight.
    ExecutorGone,
    /// The call was refused before anything ran: an unknown or disabled
    /// tool, arguments that do not fit its schema.
    Refused,
}

impl Outcome {
    /// Every class, in the order tables print them: a host that counts or
    /// shows outcomes iterates this instead of naming columns.
    pub const ALL: [Outcome; 8] = [
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::Denied,
        Outcome::Crashed,
        Outcome::TimedOut,
        Outcome::Aborted,
        Outcome::ExecutorGone,
        Outcome::Refused,
    ];

    /// A short snake_case name, as events and logs print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Denied => "denied",
            Outcome::Crashed => "crashed",
            Outcome::TimedOut => "timed_out",
            Outcome::Aborted => "aborted",
            Outcome::ExecutorGone => "executor_gone",
            Outcome::Refused => "refused",
        }
    }

    /// Whether the end counts against the tool (a crash or a timeout), the
    /// way a source's accounting should count it.
    pub fn counts_against_tool(self) -> bool {
        match self {
            Outcome::Crashed | Outcome::TimedOut => true,
            Outcome::Succeeded
            | Outcome::Failed
            | Outcome::Denied
            | Outcome::Aborted
            | Outcome::ExecutorGone
            | Outcome::Refused => false,
        }
    }
}

/// Serialises as its [`as_str`](Outcome::as_str) name, e.g. `"timed_out"`.
impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The gate did not answer a call at once: it is waiting for approval
/// (a person is being asked, say). No clock runs.
///
/// Serialises to JSON with its fields by name, as a turn's event carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AwaitingApproval {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The task running the call.
    pub task: TaskId,
}

/// The gate allowed a call, and it waits for its place before its tool
/// runs ([`Wait`](crate::Wait)): behind an earlier call of its message, or
/// for room under a bound. No clock runs.
///
/// Serialises to JSON with its fields by name, as a turn's event carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Queued {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The task running the call.
    pub task: TaskId,
    /// What it waits for now.
    pub waiting_for: WaitingFor,
}

/// The loop was told that a call's gate allowed it and its place came: its
/// tool runs and its clock started.
///
/// Serialises to JSON with times in milliseconds (`waited_ms`,
/// `queued_ms`), as [`CallEnd`] does.
#[serde_with::serde_as]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Running {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The task running it.
    pub task: TaskId,
    /// How long the call waited for its gate.
    #[serde(rename = "waited_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub waited: Duration,
    /// How long it then waited for its place (the model's order, a bound).
    #[serde(rename = "queued_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub queued: Duration,
}

/// How a call ended: the one record of it, as the loop gets it.
///
/// The same record reaches everyone who hears of the end: the loop that
/// awaited the call, the runner's and the call's [`Watch`](crate::Watch)
/// (so a registry's sources), and, in a turn, the subscribers of its end
/// event. It holds the whole result; what a session keeps of it (under an
/// output cap and a keep-details policy) is the host's own copy.
///
/// Serialises to JSON with the outcome as text and times in milliseconds
/// (`waited_ms`, `queued_ms`, `ran_ms`).
#[serde_with::serde_as]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallEnd {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The task that ran it.
    pub task: TaskId,
    /// The class of the end.
    pub outcome: Outcome,
    /// What the model and the session get.
    pub result: ToolResult,
    /// How long the call waited for its gate (until it ended, if the gate
    /// never allowed it).
    #[serde(rename = "waited_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub waited: Duration,
    /// How long the call then waited for its place before its tool ran
    /// (behind earlier calls of its message, under a bound): zero for a
    /// call that waited for nothing, and until it ended for one that
    /// never got its place.
    #[serde(rename = "queued_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub queued: Duration,
    /// How long the tool ran after the gate allowed it and its place
    /// came; `None` if it never started.
    #[serde(rename = "ran_ms")]
    #[serde_as(as = "Option<DurationMilliSecondsWithFrac<f64>>")]
    pub ran: Option<Duration>,
}

/// A partial result a running tool reported through
/// [`ToolContext::update`](crate::ToolContext::update), as plain data.
///
/// Serialises to JSON with its fields by name, as a turn's event carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Update {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The task running the call.
    pub task: TaskId,
    /// The partial result.
    pub partial: rho_untrusted::Plain,
    /// How many older partial results were dropped before this one because
    /// the loop did not take them in time (the queue keeps the newest 256).
    pub dropped_before: u64,
}

/// What a call reports to the loop, in this order: at most one
/// `AwaitingApproval`, any number of `Queued`s (one for each thing it
/// waits for, as the loop sees them), at most one `Running`, any number of
/// `Update`s, then exactly one `Ended`.
///
/// Exhaustive on purpose, like [`Outcome`]: a loop that reads events one by
/// one should handle each.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// The gate did not answer at once: it is waiting for approval. No
    /// clock runs.
    AwaitingApproval(AwaitingApproval),
    /// The gate allowed the call and it waits for its place. No clock
    /// runs.
    Queued(Queued),
    /// The gate allowed the call, its place came, and its clock started.
    Running(Running),
    /// The running tool reported a partial result.
    Update(Update),
    /// The call ended.
    Ended(CallEnd),
}
