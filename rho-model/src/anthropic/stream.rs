//! A streamed Anthropic Messages response, read event by event.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Block, reply, shape};
use crate::listing::ToolList;
use crate::reading::{ArgumentText, Arguments, ReadError, Reply};

/// Reads the events of a streamed response (`"stream": true`; each SSE
/// `data:` line's JSON): blocks opened by `content_block_start`, grown by
/// `content_block_delta` (text, tool input JSON, thinking and its
/// signature, citations), closed by `content_block_stop`.
/// [`finish`](Self::finish) yields the calls in the blocks' order, whether
/// or not the stream ended well: a call whose input the stream cut off is
/// answered with an error.
///
/// ```
/// use rho::model::anthropic::Anthropic;
/// use serde_json::json;
///
/// let mut stream = Anthropic::new().stream(None);
/// for event in [
///     json!({ "type": "content_block_start", "index": 0,
///             "content_block": { "type": "tool_use", "id": "toolu_1", "name": "add", "input": {} } }),
///     json!({ "type": "content_block_delta", "index": 0,
///             "delta": { "type": "input_json_delta", "partial_json": "{\"x\":" } }),
///     json!({ "type": "content_block_delta", "index": 0,
///             "delta": { "type": "input_json_delta", "partial_json": "1}" } }),
///     json!({ "type": "content_block_stop", "index": 0 }),
///     json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" } }),
/// ] {
///     stream.push(&event).unwrap();
/// }
/// assert_eq!(stream.finish().calls[0].arguments, json!({ "x": 1 }));
/// ```
#[derive(Debug)]
pub struct AnthropicStream<'l> {
    tools: Option<&'l ToolList>,
    /// The blocks by the index the events name.
    blocks: BTreeMap<u64, Open>,
    stop: Option<String>,
}

#[derive(Debug)]
struct Open {
    /// The block as `content_block_start` gave it, grown by the deltas
    /// (all but a tool's input, kept as text apart).
    block: Map<String, Value>,
    /// A tool block's input as streamed so far.
    json: ArgumentText,
    /// Whether any input was streamed (a tool without parameters streams
    /// none, and its input is the start's `{}`).
    streamed: bool,
    /// `content_block_stop` was seen.
    closed: bool,
}

impl<'l> AnthropicStream<'l> {
    pub(crate) fn new(tools: Option<&'l ToolList>) -> Self {
        Self {
            tools,
            blocks: BTreeMap::new(),
            stop: None,
        }
    }

    /// Takes one event. An event of a kind it does not know (`ping`, and
    /// any the API adds) is taken and ignored; one that is not a JSON
    /// object, or a stream `error` event, is an error.
    pub fn push(&mut self, event: &Value) -> Result<(), ReadError> {
        if !event.is_object() {
            return Err(shape("an event that is not an object"));
        }
        let index = event.get("index").and_then(Value::as_u64);
        match event.get("type").and_then(Value::as_str) {
            Some("error") => {
                return Err(shape(&format!(
                    "the stream reported an error: {}",
                    event.get("error").unwrap_or(&Value::Null)
                )));
            }
            Some("content_block_start") => {
                let (Some(index), Some(Value::Object(block))) = (index, event.get("content_block"))
                else {
                    return Ok(());
                };
                self.blocks.insert(
                    index,
                    Open {
                        block: block.clone(),
                        json: ArgumentText::default(),
                        streamed: false,
                        closed: false,
                    },
                );
            }
            Some("content_block_delta") => {
                let (Some(open), Some(delta)) = (
                    index.and_then(|index| self.blocks.get_mut(&index)),
                    event.get("delta"),
                ) else {
                    return Ok(());
                };
                open.grow(delta);
            }
            Some("content_block_stop") => {
                if let Some(open) = index.and_then(|index| self.blocks.get_mut(&index)) {
                    open.closed = true;
                }
            }
            Some("message_delta") => {
                if let Some(reason) = event
                    .get("delta")
                    .and_then(|delta| delta.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop = Some(reason.to_owned());
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The reply: the message to send back, the text, and the calls in
    /// the blocks' order. A block the stream never closed is cut: a call's
    /// input that is not whole JSON is answered with an error.
    pub fn finish(self) -> Reply {
        // Each tool block with its input read where it can be: the
        // streamed JSON, or, when none was streamed, the start's `{}`.
        let blocks: Vec<(Value, Option<&Open>)> = self
            .blocks
            .values()
            .map(|open| {
                let mut block = open.block.clone();
                if !is_call(&open.block) {
                    return (Value::Object(block), None);
                }
                let input = match (open.json.is_too_long(), open.streamed) {
                    (true, _) => None,
                    (false, true) => serde_json::from_str::<Value>(open.json.as_str()).ok(),
                    (false, false) if open.closed => block.get("input").cloned(),
                    (false, false) => None,
                };
                match input {
                    Some(input) => block.insert("input".into(), input),
                    None => block.remove("input"),
                };
                (Value::Object(block), Some(open))
            })
            .collect();
        let read = blocks.iter().map(|(block, open)| match open {
            None => Block::Other(block),
            Some(open) => Block::Call {
                raw: block,
                input: match block.get("input") {
                    Some(input) => Arguments::Value(input.clone()),
                    // Closed, yet not JSON: what the model sent is wrong.
                    None => open.json.arguments(!open.closed),
                },
            },
        });
        reply(read, self.stop.as_deref(), self.tools)
    }
}

fn is_call(block: &Map<String, Value>) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_use")
}

impl Open {
    fn grow(&mut self, delta: &Value) {
        let piece = |key: &str| delta.get(key).and_then(Value::as_str);
        match delta.get("type").and_then(Value::as_str) {
            Some("input_json_delta") => {
                if let Some(piece) = piece("partial_json") {
                    self.streamed = true;
                    self.json.push(piece);
                }
            }
            Some("text_delta") => append_to(&mut self.block, "text", piece("text")),
            Some("thinking_delta") => append_to(&mut self.block, "thinking", piece("thinking")),
            Some("signature_delta") => append_to(&mut self.block, "signature", piece("signature")),
            Some("citations_delta") => {
                if let Some(citation) = delta.get("citation") {
                    let citations = self
                        .block
                        .entry("citations")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if !citations.is_array() {
                        *citations = Value::Array(Vec::new());
                    }
                    if let Value::Array(list) = citations {
                        list.push(citation.clone());
                    }
                }
            }
            _ => {}
        }
    }
}

/// Appends `piece` to the text field `key` of `block`.
fn append_to(block: &mut Map<String, Value>, key: &str, piece: Option<&str>) {
    let Some(piece) = piece else { return };
    match block.get_mut(key) {
        Some(Value::String(text)) => text.push_str(piece),
        _ => {
            block.insert(key.into(), piece.into());
        }
    }
}
