//! A rho call's end as MCP's `CallToolResult`.
//!
//! rho's [`ToolResult`] already holds MCP's content parts, so the content
//! maps one to one, in order: text, images (base64 on the wire), audio,
//! resource links and embedded resources, each with the extras it came
//! with (its `annotations`, `_meta` and any other field; see
//! [`ToolResult::extras`]), so an imported server's answer served on is
//! the answer the server gave. The `isError` flag is the result's own: a
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
    let parts = result.content();
    if (0..parts.len()).all(|index| result.extras(index).is_none()) {
        return parts.iter().filter_map(block).collect();
    }
    // rho's own JSON of the result merges each part's extras in; written
    // once for all the parts.
    let merged = match serde_json::to_value(result) {
        Ok(Value::Object(mut json)) => match json.remove("content") {
            Some(Value::Array(merged)) => merged,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let mut merged = merged.into_iter();
    parts
        .iter()
        .enumerate()
        .filter_map(|(index, part)| {
            let json = merged.next();
            match (result.extras(index), json) {
                // Extras rmcp cannot read (a host's own, say) are left out
                // rather than the part.
                (Some(_), Some(json)) => serde_json::from_value(json).ok().or_else(|| block(part)),
                _ => block(part),
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_part_is_served_in_order_with_its_extras() {
        let content = json!([
            { "type": "text", "text": "a", "annotations": { "priority": 0.25 } },
            { "type": "image", "mimeType": "image/png", "data": "AQID" },
            { "type": "audio", "mimeType": "audio/wav", "data": "UklGRg==", "_meta": { "k": [1] } },
            { "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs",
              "icons": [{ "src": "https://example.com/a.png" }] },
            { "type": "resource", "resource": { "uri": "file:///b", "blob": "/w==", "_meta": { "x": 1 } } },
            { "type": "text", "text": "b" },
        ]);
        let result: ToolResult =
            serde_json::from_value(json!({ "content": content, "isError": true }))
                .expect("rho reads it");
        let served = serde_json::to_value(self::content(&result)).expect("rmcp writes it");
        assert_eq!(served, content);
    }

    #[test]
    fn extras_rmcp_cannot_read_are_left_out_not_the_part() {
        let mut result = ToolResult::from_content([Content::text("kept")], false);
        result.set_extras(
            0,
            Some(rho_tool_core::untrusted::Plain::from(
                json!({ "annotations": { "priority": "high" } }),
            )),
        );
        let served = serde_json::to_value(content(&result)).expect("rmcp writes it");
        assert_eq!(served, json!([{ "type": "text", "text": "kept" }]));
    }
}
