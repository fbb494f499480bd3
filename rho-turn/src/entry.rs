//! `SessionEntry`: what the host stores for each call, and the model reads.

use std::time::Duration;

use rho_tool_core::{Outcome, ToolResult};
use serde::Serialize;

use crate::event::{maybe_millis, millis};

/// One call of a turn as the session keeps it: the result the model reads
/// (its text under the output cap, if any) with the details the host's
/// [`KeepDetails`](crate::KeepDetails) policy kept.
///
/// A turn returns one per call, in the order the model issued the calls.
/// It serialises to JSON with the outcome as text and times in
/// milliseconds (`waited_ms`, `ran_ms`).
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
    #[serde(rename = "waited_ms", serialize_with = "millis")]
    pub waited: Duration,
    /// How long the tool ran; `None` if it never started.
    #[serde(rename = "ran_ms", serialize_with = "maybe_millis")]
    pub ran: Option<Duration>,
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
