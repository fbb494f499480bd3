//! A streamed OpenAI Responses response, read event by event.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Item, arguments_of, call_of, item_type, reply, shape, stop_of};
use crate::listing::ToolList;
use crate::reading::{ArgumentText, Arguments, ReadError, Reply};

/// Reads the events of a streamed response (`"stream": true`; each SSE
/// `data:` line's JSON): output items added, grown by argument and text
/// deltas (the deltas of parallel calls interleaved), and done; then the
/// whole response, whose output is taken as the last word.
/// [`finish`](Self::finish) yields the calls in the items' order, whether
/// or not the stream ended well: a call whose arguments the stream cut off
/// is answered with an error.
///
/// ```
/// use rho::model::responses::Responses;
/// use serde_json::json;
///
/// let mut stream = Responses::new().stream(None);
/// for event in [
///     json!({ "type": "response.output_item.added", "output_index": 0, "item": {
///         "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": "" } }),
///     json!({ "type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": "{\"x\":" }),
///     json!({ "type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": "1}" }),
/// ] {
///     stream.push(&event).unwrap();
/// }
/// assert_eq!(stream.finish().calls[0].arguments, json!({ "x": 1 }));
/// ```
#[derive(Debug)]
pub struct ResponsesStream<'l> {
    tools: Option<&'l ToolList>,
    /// The items by the output index the events name.
    items: BTreeMap<u64, Open>,
    stop: Option<String>,
}

#[derive(Debug)]
struct Open {
    item: Map<String, Value>,
    /// A call's arguments as streamed so far (its `done` event, or the
    /// item's, replaces them whole).
    arguments: ArgumentText,
    /// The item was given whole (`output_item.done`, the completed
    /// response): nothing of it was cut.
    done: bool,
}

impl<'l> ResponsesStream<'l> {
    pub(crate) fn new(tools: Option<&'l ToolList>) -> Self {
        Self {
            tools,
            items: BTreeMap::new(),
            stop: None,
        }
    }

    /// Takes one event. An event of a kind it does not know is taken and
    /// ignored; one that is not a JSON object, or an `error` event, is an
    /// error.
    pub fn push(&mut self, event: &Value) -> Result<(), ReadError> {
        if !event.is_object() {
            return Err(shape("an event that is not an object"));
        }
        let index = event.get("output_index").and_then(Value::as_u64);
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "error" => {
                return Err(shape(&format!("the stream reported an error: {event}")));
            }
            "response.output_item.added" | "response.output_item.done" => {
                let (Some(index), Some(Value::Object(item))) = (index, event.get("item")) else {
                    return Ok(());
                };
                self.items
                    .insert(index, Open::whole(item, kind.ends_with("done")));
            }
            "response.function_call_arguments.delta" => {
                if let (Some(open), Some(delta)) = (
                    self.find(index, event),
                    event.get("delta").and_then(Value::as_str),
                ) {
                    open.arguments.push(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(open), Some(arguments)) = (
                    self.find(index, event),
                    event.get("arguments").and_then(Value::as_str),
                ) {
                    open.arguments.set(arguments);
                }
            }
            "response.content_part.added" => {
                if let (Some(open), Some(part)) = (self.find(index, event), event.get("part")) {
                    if let Value::Array(parts) = open
                        .item
                        .entry("content")
                        .or_insert_with(|| Value::Array(Vec::new()))
                    {
                        parts.push(part.clone());
                    }
                }
            }
            "response.output_text.delta" => {
                let at = event.get("content_index").and_then(Value::as_u64);
                if let (Some(open), Some(at), Some(delta)) = (
                    self.find(index, event),
                    at,
                    event.get("delta").and_then(Value::as_str),
                ) {
                    let part = open
                        .item
                        .get_mut("content")
                        .and_then(|parts| parts.get_mut(at as usize));
                    if let Some(Value::String(text)) = part.and_then(|part| part.get_mut("text")) {
                        text.push_str(delta);
                    }
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let Some(response) = event.get("response") else {
                    return Ok(());
                };
                self.stop = stop_of(response).map(str::to_owned);
                // The whole output, when the response gives it, is the
                // last word on every item.
                if let Some(output) = response.get("output").and_then(Value::as_array) {
                    if !output.is_empty() {
                        self.items = output
                            .iter()
                            .enumerate()
                            .filter_map(|(index, item)| {
                                item.as_object()
                                    .map(|item| (index as u64, Open::whole(item, true)))
                            })
                            .collect();
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The item an event is about: by its output index, or else by its
    /// item id.
    fn find(&mut self, index: Option<u64>, event: &Value) -> Option<&mut Open> {
        if let Some(index) = index {
            if self.items.contains_key(&index) {
                return self.items.get_mut(&index);
            }
        }
        let id = event.get("item_id").and_then(Value::as_str)?;
        self.items
            .values_mut()
            .find(|open| open.item.get("id").and_then(Value::as_str) == Some(id))
    }

    /// The reply: the items to send back, the text, and the calls in the
    /// items' order. A call the stream cut inside its arguments is
    /// answered with an error.
    pub fn finish(self) -> Reply {
        let built: Vec<(Value, Option<&Open>)> = self
            .items
            .values()
            .map(|open| {
                let mut item = Value::Object(open.item.clone());
                match call_of(&item) {
                    None => (item, None),
                    Some((_, "arguments")) => {
                        item["arguments"] = open.arguments.sent().into();
                        (item, Some(open))
                    }
                    // A client tool's call: its action or operation comes
                    // whole in the item.
                    Some(_) => (item, Some(open)),
                }
            })
            .collect();
        let items = built.iter().map(|(item, open)| match open {
            None => Item::Other(item),
            Some(open) => Item::Call {
                raw: item,
                arguments: match call_of(item) {
                    Some((_, "arguments")) => open.arguments.arguments(!open.done),
                    Some((_, field)) if open.done => arguments_of(item, field),
                    // Cut before the item was done: its action may be
                    // part of one.
                    _ => Arguments::Cut,
                },
            },
        });
        reply(items, self.stop.as_deref(), self.tools)
    }
}

impl Open {
    /// An item as an event gives it whole.
    fn whole(item: &Map<String, Value>, done: bool) -> Self {
        let mut open = Open {
            item: item.clone(),
            arguments: ArgumentText::default(),
            done,
        };
        let value = Value::Object(item.clone());
        if item_type(&value) == Some("function_call") {
            match arguments_of(&value, "arguments") {
                Arguments::Text(text) => open.arguments.push(text),
                Arguments::Value(other) => open.arguments.push(&other.to_string()),
                Arguments::TooLong(_) | Arguments::Cut => {}
            }
        }
        open
    }
}
