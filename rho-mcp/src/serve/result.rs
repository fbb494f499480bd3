//! A rho call's end as MCP's `CallToolResult`.
//!
//! rho's [`ToolResult`] already holds MCP's content parts, so the content
//! maps one to one: text, images (base64 on the wire), audio, resource
//! links and embedded resources. The `isError` flag is the result's own: a
//! tool's error answer, a panic, a timeout, a gate's denial, an unknown tool
//! or invalid arguments are all results the model reads, never a dropped
//! request or a JSON-RPC error.
//!
//! Details (data for screens beside what the model reads) become
//! `structuredContent`. MCP wants that to be a JSON object: details that
//! are not one are sent as `{"details": <value>}`. A tool with an output
//! schema promises details that fit it, and MCP clients check that promise
//! (the Python SDK rejects a successful result without them); so a
//! successful answer of such a tool whose details are missing or do not
//! fit is turned into an error result naming the tool and every failing
//! path, instead of reaching the client as a protocol violation.

use rho_tool_core::untrusted::plain::base64_encode;
use rho_tool_core::{CallEnd, Content, ToolResult};
use rho_turn::{ArgumentError, SchemaCache};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The MCP result of `end`, for a tool whose output schema is
/// `output_schema` (checked with `schemas`).
pub(crate) fn to_mcp(
    end: &CallEnd,
    output_schema: Option<&Value>,
    schemas: &SchemaCache,
) -> CallToolResult {
    let result = &end.result;
    let structured = result
        .details
        .as_ref()
        .map(|details| as_object(details.to_json()));
    match (output_schema, result.is_error) {
        (Some(schema), false) => match &structured {
            None => error_text(format!(
                "tool `{}` declares an output schema but answered without details \
                 (structured content); its answer was: {}",
                end.tool,
                result.text()
            )),
            Some(value) => match schemas.check(&end.tool, schema, value) {
                Ok(()) => with_structured(content(result), false, structured),
                Err(error) => error_text(misfit_text(&end.tool, &error)),
            },
        },
        // An error result of a tool with an output schema carries no
        // structured content: it need not fit the schema, and a client
        // may check it anyway.
        (Some(_), true) => with_structured(content(result), true, None),
        (None, is_error) => with_structured(content(result), is_error, structured),
    }
}

/// An error result of `text` alone.
pub(crate) fn error_text(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn with_structured(
    content: Vec<ContentBlock>,
    is_error: bool,
    structured: Option<Value>,
) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured;
    result
}

/// MCP's content blocks of `result`, in order.
pub(crate) fn content(result: &ToolResult) -> Vec<ContentBlock> {
    result.content().iter().filter_map(block).collect()
}

fn block(part: &Content) -> Option<ContentBlock> {
    Some(match part {
        Content::Text(text) => ContentBlock::text(text.clone()),
        Content::Image(image) => {
            ContentBlock::image(base64_encode(&image.data), image.mime_type.clone())
        }
        Content::Audio(audio) => {
            ContentBlock::audio(base64_encode(&audio.data), audio.mime_type.clone())
        }
        // Links, embedded resources and whatever MCP adds later: rho
        // serialises them in MCP's own shape, which rmcp reads back.
        other => {
            return serde_json::to_value(other)
                .ok()
                .and_then(|json| serde_json::from_value(json).ok());
        }
    })
}

/// `value` as a JSON object: itself, or `{"details": value}`.
fn as_object(value: Value) -> Value {
    match value {
        Value::Object(_) => value,
        other => serde_json::json!({ "details": other }),
    }
}

/// The error text of details that do not fit the output schema: the same
/// words as for arguments, about the answer instead.
fn misfit_text(tool: &str, error: &ArgumentError) -> String {
    match error {
        ArgumentError::Invalid {
            failures, total, ..
        } => {
            let mut text = format!(
                "tool `{tool}` answered with details that do not fit its output schema \
                 ({total} {}):",
                if *total == 1 { "problem" } else { "problems" }
            );
            for failure in failures {
                let at = if failure.path.is_empty() {
                    "the details".to_owned()
                } else {
                    format!("`{}`", failure.path)
                };
                text.push_str(&format!("\n  - at {at}: {}", failure.message));
            }
            text
        }
        ArgumentError::BadSchema { reason, .. } => format!(
            "tool `{tool}` was run, but its output schema is not a valid JSON Schema \
             ({reason}), so its answer cannot be checked; the tool must be fixed by its author"
        ),
        other => format!("tool `{tool}`'s answer cannot be checked: {other}"),
    }
}
