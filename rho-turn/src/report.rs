//! Turning a call's core events into the turn's events and entries.

use crate::validate::ArgumentError;
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEnd, CallEvent, ToolResult};

use crate::cap::OutputCap;
use crate::entry::SessionEntry;
use crate::event::{CallRef, ExecutionEnd, InTurn, TurnEvent};

/// The turn's event for a call's progress: the core's record, placed in
/// the turn; `None` for its end, which the caller reports itself.
pub(crate) fn progress(call: &CallRef, event: CallEvent) -> Option<TurnEvent> {
    Some(match event {
        CallEvent::AwaitingApproval(record) => {
            TurnEvent::ToolExecutionAwaitingApproval(InTurn::placed(call, record))
        }
        CallEvent::Queued(record) => TurnEvent::ToolExecutionQueued(InTurn::placed(call, record)),
        CallEvent::Running(record) => TurnEvent::ToolExecutionRunning(InTurn::placed(call, record)),
        CallEvent::Update(record) => TurnEvent::ToolExecutionUpdate(InTurn::placed(call, record)),
        CallEvent::Ended(_) => return None,
    })
}

/// The end event of a call.
pub(crate) fn end(call: &CallRef, end: CallEnd) -> ExecutionEnd {
    InTurn::placed(call, end)
}

/// The session entry of an ended call: its result under `cap`, with the
/// `kept` details.
pub(crate) fn entry(
    end: &ExecutionEnd,
    kept: Option<Plain>,
    cap: Option<OutputCap>,
) -> SessionEntry {
    let CallEnd {
        call_id,
        tool,
        outcome,
        result,
        waited,
        queued,
        ran,
        ..
    } = end.record();
    // Built part by part from the whole result: a text the cap cuts is
    // copied only as far as it is kept.
    let mut cut_bytes = 0;
    let parts = result
        .content()
        .iter()
        .map(|part| match cap.and_then(|cap| cap.cut_part(part)) {
            Some((kept, cut)) => {
                cut_bytes += cut;
                kept
            }
            None => part.clone(),
        });
    let mut kept_result = ToolResult::from_content(parts, result.is_error);
    kept_result.details = kept;
    SessionEntry {
        call_id: call_id.clone(),
        tool: tool.clone(),
        outcome: *outcome,
        result: kept_result,
        cut_bytes,
        waited: *waited,
        queued: *queued,
        ran: *ran,
        nested: Vec::new(),
    }
}

/// The result of a call whose arguments nested deeper than
/// [`ArgumentError::MAX_DEPTH`](ArgumentError::MAX_DEPTH).
pub(crate) fn too_deep_result(tool: &str) -> ToolResult {
    let max = ArgumentError::MAX_DEPTH;
    ToolResult::error(format!(
        "tool `{tool}` was not run: its arguments are nested deeper than {max} levels"
    ))
    .with_details(Plain::from(serde_json::json!({
        "refused": "arguments_too_deep",
        "tool": tool,
        "max_depth": max,
    })))
}

/// The error result of a call whose id an earlier call of the turn has.
/// The answer to a call the model's message did not give whole, for the
/// `reason` its reader found.
pub(crate) fn malformed_result(reason: &str) -> ToolResult {
    ToolResult::error(format!("this call was not run: {reason}")).with_details(Plain::from(
        serde_json::json!({
            "refused": "malformed_call",
            "reason": reason,
        }),
    ))
}

pub(crate) fn duplicate_result(call_id: &str, earlier: usize) -> ToolResult {
    ToolResult::error(format!(
        "this call was not run: its id `{call_id}` is the id of an earlier call of the same \
         message (call {}, counting from 1); each tool call needs an id of its own",
        earlier + 1
    ))
    .with_details(Plain::from(serde_json::json!({
        "refused": "duplicate_call_id",
        "call_id": call_id,
        "earlier_index": earlier,
    })))
}
