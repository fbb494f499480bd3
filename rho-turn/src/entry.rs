//! `SessionEntry`: what the host stores for each call, and the model reads.

use std::time::Duration;

use rho_tool_core::{Outcome, ToolResult};
use serde::Serialize;
use serde_with::DurationMilliSecondsWithFrac;

/// One call of a turn as the session keeps it: the result the model reads
/// (its text under the output cap, if any) with the details the host's
/// [`KeepDetails`](crate::KeepDetails) policy kept.
///
/// # Why this is not the call's [`CallEnd`](rho_tool_core::CallEnd)
///
/// The `CallEnd` is the whole end, as the loop, the tool's source and the
/// subscribers get it (in [`ExecutionEnd`](crate::ExecutionEnd)). The
/// session keeps less, under the host's policies, and says how much it cut;
/// it has no task id, which means nothing once the process is gone. Two
/// records, because the session's copy is made from the whole one and the
/// whole one must still exist for the screens.
///
/// A turn returns one per call, in the order the model issued the calls.
/// It serialises to JSON with the outcome as text and times in
/// milliseconds (`waited_ms`, `queued_ms`, `ran_ms`).
#[serde_with::serde_as]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEntry {
    /// The id the model gave the call.
    pub call_id: String,
    /// The tool's name, as the model called it.
    pub tool: String,
    /// The class of the end.
    pub outcome: Outcome,
    /// What the model reads, and the kept details.
    pub result: ToolResult,
    /// How many bytes of text the output cap cut (0 when nothing was).
    pub cut_bytes: usize,
    /// How long the call waited for its gate.
    #[serde(rename = "waited_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub waited: Duration,
    /// How long the call then waited for its place before its tool ran:
    /// behind earlier calls of its message (the model's order), or under a
    /// bound. Never on the tool's clock.
    #[serde(rename = "queued_ms")]
    #[serde_as(as = "DurationMilliSecondsWithFrac<f64>")]
    pub queued: Duration,
    /// How long the tool ran; `None` if it never started.
    #[serde(rename = "ran_ms")]
    #[serde_as(as = "Option<DurationMilliSecondsWithFrac<f64>>")]
    pub ran: Option<Duration>,
    /// The calls this call made while it ran (a script's calls of tools,
    /// through [`TurnRunner::turn_within`](crate::TurnRunner::turn_within)),
    /// each as the session keeps it, in the order they ended; empty for
    /// most calls, and then not in the JSON.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<SessionEntry>,
}

impl SessionEntry {
    /// The result's text, as the model reads it.
    pub fn text(&self) -> String {
        self.result.text()
    }

    /// Whether the call failed (any outcome but success).
    pub fn is_error(&self) -> bool {
        self.result.is_error
    }
}
