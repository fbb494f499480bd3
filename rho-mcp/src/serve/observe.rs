//! Watching the calls a server serves: one report per call end, with the
//! result the client got, for an audit log or a host's screen.

use rho_tool_core::CallEnd;
use rmcp::model::CallToolResult;
use serde_json::Value;

/// Told of every `tools/call` a server answers, once, when it ends
/// (refusals, denials, timeouts and cancellations included), before the
/// result is sent.
///
/// It runs on the session's task: keep it short (a line written to a
/// file is fine; a network round trip is not). A panic in it is
/// contained and answered as an error result, like any handler's.
pub trait CallObserver: Send + Sync + 'static {
    /// Call `served.end` has ended.
    fn ended(&self, served: &ServedCall<'_>);
}

/// What an observer hears of one served call.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServedCall<'a> {
    /// The rho call's end: its id, tool, outcome, times and whole result
    /// (before the output cap).
    pub end: &'a CallEnd,
    /// The MCP result the client gets (after the output cap).
    pub result: &'a CallToolResult,
    /// The arguments the client sent.
    pub arguments: &'a Value,
    /// How many bytes of text the server's output cap cut (0 without a
    /// cap, or when everything fitted).
    pub cut_bytes: usize,
}
