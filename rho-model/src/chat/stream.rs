//! A streamed Chat Completions response, read chunk by chunk.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{assistant_message, echo_call, shape};
use crate::listing::ToolList;
use crate::reading::{ArgumentText, Intake, ReadError, Reply};

/// Reads the chunks of a streamed response (`"stream": true`): text
/// deltas, and tool-call deltas keyed by `index`, the deltas of parallel
/// calls in any interleaving. [`finish`](Self::finish) yields the calls in
/// the model's order (by index), whether or not the stream ended well: a
/// call whose arguments the stream cut off is answered with an error.
///
/// ```
/// use rho::model::chat::Chat;
/// use serde_json::json;
///
/// let mut stream = Chat::new().stream(None);
/// let delta = |index: u64, id: Option<&str>, arguments: &str| json!({ "choices": [{ "index": 0,
///     "delta": { "tool_calls": [{ "index": index, "id": id, "type": "function",
///         "function": { "name": "add", "arguments": arguments } }] } }] });
/// stream.push(&delta(0, Some("a"), "{\"x\":")).unwrap();
/// stream.push(&delta(1, Some("b"), "{\"x\":2}")).unwrap();
/// stream.push(&delta(0, None, "1}")).unwrap();
/// let reply = stream.finish();
/// assert_eq!(reply.calls[0].arguments, json!({ "x": 1 }));
/// assert_eq!(reply.calls[1].arguments, json!({ "x": 2 }));
/// ```
#[derive(Debug)]
pub struct ChatStream<'l> {
    tools: Option<&'l ToolList>,
    text: Option<String>,
    refusal: Option<String>,
    /// The calls by the index the deltas name.
    calls: BTreeMap<u64, Partial>,
    stop: Option<String>,
}

#[derive(Debug, Default)]
struct Partial {
    id: Option<String>,
    name: String,
    arguments: ArgumentText,
}

impl<'l> ChatStream<'l> {
    pub(crate) fn new(tools: Option<&'l ToolList>) -> Self {
        Self {
            tools,
            text: None,
            refusal: None,
            calls: BTreeMap::new(),
            stop: None,
        }
    }

    /// Takes one chunk (one `data:` line's JSON). A chunk without
    /// `choices` (the usage chunk at the end) is taken and ignored; a
    /// chunk that is not a JSON object is an error, and nothing of it is
    /// taken.
    pub fn push(&mut self, chunk: &Value) -> Result<(), ReadError> {
        if !chunk.is_object() {
            return Err(shape("a chunk that is not an object"));
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
        else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.stop = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.text.get_or_insert_with(String::new).push_str(text);
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.get_or_insert_with(String::new).push_str(text);
        }
        let Some(deltas) = delta.get("tool_calls").and_then(Value::as_array) else {
            return Ok(());
        };
        for (position, call) in deltas.iter().enumerate() {
            // A server that sends no index sends one call per chunk, in
            // order: the next index after the last.
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or_else(|| {
                    self.calls
                        .last_key_value()
                        .map_or(position as u64, |(last, _)| {
                            if call.get("id").and_then(Value::as_str).is_some() {
                                last + 1
                            } else {
                                *last
                            }
                        })
                });
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                if !id.is_empty() {
                    partial.id = Some(id.to_owned());
                }
            }
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                // Names come whole in the first delta; a server that splits
                // them is taken too.
                partial.name.push_str(name);
            }
            if let Some(piece) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
            {
                partial.arguments.push(piece);
            }
        }
        Ok(())
    }

    /// The reply: the message to send back, the text, and the calls in
    /// the order of their indexes. A stream that never said why the model
    /// stopped (it was cut off) still yields every call it began; those
    /// whose arguments are not whole JSON are answered with an error.
    pub fn finish(self) -> Reply {
        let mut intake = Intake::new(self.tools);
        let cut = self.stop.is_none();
        let mut calls = Vec::with_capacity(self.calls.len());
        let mut echoed = Vec::with_capacity(self.calls.len());
        for partial in self.calls.into_values() {
            let call = intake.take(
                partial.id.as_deref(),
                &partial.name,
                partial.arguments.arguments(cut),
            );
            echoed.push(echo_call(&call, partial.arguments.sent()));
            calls.push(call);
        }
        Reply {
            history: vec![assistant_message(
                self.text.as_deref(),
                self.refusal.as_deref(),
                echoed,
            )],
            text: self.text,
            calls,
            stop: self.stop,
        }
    }
}
