//! Turning a call's core events into the turn's events and entries.

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallEnd, CallEvent, Content, ToolResult};

use crate::cap::OutputCap;
use crate::entry::SessionEntry;
use crate::event::{
    AwaitingApproval, CallRef, ExecutionEnd, ExecutionRunning, ExecutionUpdate, TurnEvent,
};

/// The turn's event for a call's progress (anything but its end).
pub(crate) fn progress(call: &CallRef, event: CallEvent) -> Option<TurnEvent> {
    let call = call.clone();
    match event {
        CallEvent::AwaitingGate(_) => {
            Some(TurnEvent::ToolExecutionAwaitingApproval(AwaitingApproval {
                call,
            }))
        }
        CallEvent::Running(running) => Some(TurnEvent::ToolExecutionRunning(ExecutionRunning {
            call,
            task: running.task,
            waited: running.waited,
        })),
        CallEvent::Update(update) => Some(TurnEvent::ToolExecutionUpdate(ExecutionUpdate {
            call,
            partial: update.partial,
            dropped_before: update.dropped_before,
        })),
        // `Ended` is handled by the caller; a kind of event this crate does
        // not know yet is not reported.
        _ => None,
    }
}

/// The end event of a call.
pub(crate) fn end(call: &CallRef, end: CallEnd) -> ExecutionEnd {
    ExecutionEnd {
        call: call.clone(),
        outcome: end.outcome,
        result: end.result,
        waited: end.waited,
        ran: end.ran,
    }
}

/// The session entry of an ended call: its result under `cap`, with the
/// `kept` details.
pub(crate) fn entry(
    end: &ExecutionEnd,
    kept: Option<Plain>,
    cap: Option<OutputCap>,
) -> SessionEntry {
    let mut cut_bytes = 0;
    let content = end
        .result
        .content
        .iter()
        .map(|part| match (part, cap) {
            (Content::Text { text }, Some(cap)) => {
                let (text, cut) = cap.cut(text);
                cut_bytes += cut;
                Content::Text { text }
            }
            (other, _) => other.clone(),
        })
        .collect();
    SessionEntry {
        call_id: end.call.call_id.clone(),
        tool: end.call.tool.clone(),
        outcome: end.outcome,
        result: ToolResult {
            content,
            details: kept,
            is_error: end.result.is_error,
        },
        cut_bytes,
        waited: end.waited,
        ran: end.ran,
    }
}

/// The error result of a call whose id an earlier call of the turn has.
/// The result of a call whose arguments nested deeper than
/// [`MAX_ARGUMENT_DEPTH`](crate::MAX_ARGUMENT_DEPTH).
pub(crate) fn too_deep_result(tool: &str) -> ToolResult {
    let max = crate::MAX_ARGUMENT_DEPTH;
    ToolResult {
        details: Some(Plain::from(serde_json::json!({
            "refused": "arguments_too_deep",
            "tool": tool,
            "max_depth": max,
        }))),
        ..ToolResult::error(format!(
            "tool `{tool}` was not run: its arguments are nested deeper than {max} levels"
        ))
    }
}

pub(crate) fn duplicate_result(call_id: &str, earlier: usize) -> ToolResult {
    ToolResult {
        details: Some(Plain::from(serde_json::json!({
            "refused": "duplicate_call_id",
            "call_id": call_id,
            "earlier_index": earlier,
        }))),
        ..ToolResult::error(format!(
            "this call was not run: its id `{call_id}` is the id of an earlier call of the same \
             message (call {}, counting from 1); each tool call needs an id of its own",
            earlier + 1
        ))
    }
}
