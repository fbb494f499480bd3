//! One answer per call: a turn's session entries matched to the calls of
//! the model's message, and a result's parts as a model API can take them.

use std::collections::HashMap;

use rho_tool_core::{Content, Image, ResourceContents, ToolCall, ToolResult};
use rho_turn::SessionEntry;

/// The answer to each call of `calls`, in the calls' order: the entry the
/// turn kept for it, or, for a call the turn never ended (the host dropped
/// the turn, or ran no turn at all), an error saying it was not run.
/// Entries of calls the message does not have are left out: the API would
/// refuse an answer to a call it never made.
pub(crate) fn answers<'e>(calls: &[ToolCall], entries: &'e [SessionEntry]) -> Vec<Answer<'e>> {
    let mut by_id: HashMap<&str, &'e SessionEntry> = HashMap::with_capacity(entries.len());
    for entry in entries {
        by_id.entry(entry.call_id.as_str()).or_insert(entry);
    }
    calls
        .iter()
        .map(|call| Answer {
            id: call.id.clone(),
            tool: call.name.clone(),
            caller: call.caller.clone(),
            result: match by_id.get(call.id.as_str()) {
                Some(entry) => Result::Ok(&entry.result),
                None => Result::Err(ToolResult::error(format!(
                    "this call was not run: the turn ended before tool `{}` was called",
                    call.name
                ))),
            },
        })
        .collect()
}

/// One call's answer.
pub(crate) struct Answer<'e> {
    pub(crate) id: String,
    pub(crate) tool: String,
    #[allow(dead_code)] // read by the dialects whose API names it again
    pub(crate) caller: Option<serde_json::Value>,
    result: Result<&'e ToolResult, ToolResult>,
}

impl Answer<'_> {
    pub(crate) fn result(&self) -> &ToolResult {
        match &self.result {
            Ok(result) => result,
            Err(result) => result,
        }
    }
}

/// A part of a result as the model reads it: text, or an image.
pub(crate) enum Part<'r> {
    Text(String),
    Image(&'r Image),
}

/// The parts of `result`, in order, with what the APIs take no part for
/// (sounds, links, embedded resources) as text that says what it was.
/// Details are never among them: they are not the model's.
pub(crate) fn parts(result: &ToolResult) -> Vec<Part<'_>> {
    result
        .content()
        .iter()
        .map(|part| match part {
            Content::Text(text) => Part::Text(text.clone()),
            Content::Image(image) => Part::Image(image),
            Content::Audio(audio) => Part::Text(format!(
                "[a sound ({}, {} bytes) that this API cannot show]",
                audio.mime_type,
                audio.data.len()
            )),
            Content::ResourceLink(link) => Part::Text(match &link.description {
                Some(description) => {
                    format!("[resource `{}`: {} ({description})]", link.uri, link.name)
                }
                None => format!("[resource `{}`: {}]", link.uri, link.name),
            }),
            Content::Resource(resource) => Part::Text(match &resource.contents {
                ResourceContents::Text(text) => text.clone(),
                ResourceContents::Blob(bytes) => format!(
                    "[resource `{}`: {} bytes{} not shown]",
                    resource.uri,
                    bytes.len(),
                    resource
                        .mime_type
                        .as_deref()
                        .map(|mime| format!(" of {mime}"))
                        .unwrap_or_default()
                ),
            }),
            other => Part::Text(format!(
                "[a {} part that this API cannot show]",
                other.kind()
            )),
        })
        .collect()
}

/// The text parts of `parts`, joined by newlines.
pub(crate) fn joined_text(parts: &[Part<'_>]) -> String {
    let mut text = String::new();
    for part in parts {
        if let Part::Text(part) = part {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(part);
        }
    }
    text
}

/// An image's bytes as standard base64 (rho's one encoding of bytes as
/// text).
pub(crate) fn base64(image: &Image) -> String {
    rho_tool_core::untrusted::plain::base64_encode(&image.data)
}
