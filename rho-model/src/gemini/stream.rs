//! A streamed Gemini response, read chunk by chunk.

use serde_json::Value;

use super::{reply, shape};
use crate::listing::ToolList;
use crate::reading::{ReadError, Reply};

/// Reads the chunks of a streamed response (`:streamGenerateContent`;
/// each SSE `data:` line's JSON, or each item of the JSON array the API
/// sends without `alt=sse`). Gemini streams each call as one whole part,
/// so a stream cut anywhere still yields whole calls: every call it
/// carried, in order, and the text so far.
///
/// ```
/// use rho::model::gemini::Gemini;
/// use serde_json::json;
///
/// let mut stream = Gemini::new().stream(None);
/// stream.push(&json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Adding." }] } }] })).unwrap();
/// stream.push(&json!({ "candidates": [{ "content": { "role": "model", "parts": [
///     { "functionCall": { "name": "add", "args": { "x": 1 } } }] }, "finishReason": "STOP" }] })).unwrap();
/// let reply = stream.finish();
/// assert_eq!(reply.text.as_deref(), Some("Adding."));
/// assert_eq!(reply.calls[0].arguments, json!({ "x": 1 }));
/// ```
#[derive(Debug)]
pub struct GeminiStream<'l> {
    tools: Option<&'l ToolList>,
    parts: Vec<Value>,
    stop: Option<String>,
}

impl<'l> GeminiStream<'l> {
    pub(crate) fn new(tools: Option<&'l ToolList>) -> Self {
        Self {
            tools,
            parts: Vec::new(),
            stop: None,
        }
    }

    /// Takes one chunk: the parts of its first candidate, and why the
    /// model stopped (or why the prompt was blocked) when it says. A chunk
    /// that is not a JSON object is an error.
    pub fn push(&mut self, chunk: &Value) -> Result<(), ReadError> {
        if !chunk.is_object() {
            return Err(shape("a chunk that is not an object"));
        }
        if let Some(blocked) = chunk
            .get("promptFeedback")
            .and_then(|feedback| feedback.get("blockReason"))
            .and_then(Value::as_str)
        {
            self.stop = Some(blocked.to_owned());
        }
        let Some(candidate) = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first())
        else {
            return Ok(());
        };
        if let Some(parts) = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array)
        {
            self.parts.extend(parts.iter().cloned());
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.stop = Some(reason.to_owned());
        }
        Ok(())
    }

    /// The reply: the content to send back, the text, and the calls in
    /// the model's order.
    pub fn finish(self) -> Reply {
        reply(&self.parts, self.stop.as_deref(), self.tools)
    }
}
