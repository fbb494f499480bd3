//! OpenAI Responses (`POST /v1/responses`).
//!
//! - **Tools**: `{"type": "function", name, description, parameters,
//!   strict}`, strict where the schema can be made so.
//! - **Calls**: the response's `function_call` output items, each with its
//!   `call_id` and its arguments as JSON *text*; streamed, as argument
//!   deltas per output item ([`ResponsesStream`]). An item's `caller` (a
//!   program the model wrote) is kept on the call and named again beside
//!   its result.
//! - **Results**: one `function_call_output` item per call, in the calls'
//!   order; its `output` is the text, or a list of `input_text` and
//!   `input_image` parts when the result has images. Responses has no error
//!   flag: an error's text says what failed.
//!
//! The response's other output items (messages, reasoning, the API's own
//! tool calls) are sent back as they came, as a stateless conversation
//! (`store: false`) requires.

mod stream;

use rho_registry::ToolInfo;
use rho_tool_core::ToolCall;
use rho_turn::SessionEntry;
use serde_json::{Map, Value, json};

use crate::answer::{self, Part};
use crate::chat::function_tools;
use crate::listing::{ListError, Options, ToolList};
use crate::reading::{Arguments, Intake, ReadError, Reply, without_nulls};

pub use stream::ResponsesStream;

pub(crate) const API: &str = "OpenAI Responses";

/// The OpenAI Responses dialect.
///
/// ```
/// use rho::model::responses::Responses;
/// use serde_json::json;
///
/// let response = json!({ "id": "resp_1", "object": "response", "status": "completed", "output": [
///     { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
///       "arguments": "{\"path\":\"a.rs\"}", "status": "completed" },
/// ] });
/// let reply = Responses::new().read(&response, None).unwrap();
/// assert_eq!(reply.calls[0].id, "call_1");
/// assert_eq!(reply.calls[0].arguments, json!({ "path": "a.rs" }));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Responses {
    options: Options,
}

impl Responses {
    /// The dialect with the default [`Options`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The dialect with `options`.
    pub fn with_options(options: Options) -> Self {
        Self { options }
    }

    /// The request's `tools`, from the tools a registry lists.
    pub fn tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolInfo>,
    ) -> Result<ToolList, ListError> {
        function_tools(&self.options, tools, |info, converted, strict| {
            let mut tool = Map::new();
            tool.insert("type".into(), "function".into());
            tool.insert("name".into(), info.name.clone().into());
            if !info.description.is_empty() {
                tool.insert("description".into(), info.description.clone().into());
            }
            tool.insert("parameters".into(), converted.schema.clone());
            tool.insert("strict".into(), strict.into());
            Value::Object(tool)
        })
    }

    /// The model's answer in a whole (not streamed) response: its
    /// `output` items.
    pub fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
        let output = response
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("no `output` list"))?;
        let items = output.iter().map(|item| match item_type(item) {
            Some("function_call") => Item::Call {
                raw: item,
                arguments: arguments_of(item),
            },
            _ => Item::Other(item),
        });
        Ok(reply(items, stop_of(response), tools))
    }

    /// A reader of a streamed response's events.
    pub fn stream<'l>(&self, tools: Option<&'l ToolList>) -> ResponsesStream<'l> {
        ResponsesStream::new(tools)
    }

    /// The items that answer `reply`'s calls, from the entries of the turn
    /// that ran them: one `function_call_output` per call, in the calls'
    /// order.
    pub fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value> {
        answer::answers(&reply.calls, entries)
            .iter()
            .map(|answer| {
                let parts = answer::parts(answer.result());
                let images = parts.iter().any(|part| matches!(part, Part::Image(_)));
                let output = if images {
                    Value::Array(
                        parts
                            .iter()
                            .filter(|part| !matches!(part, Part::Text(text) if text.is_empty()))
                            .map(|part| match part {
                                Part::Text(text) => json!({ "type": "input_text", "text": text }),
                                Part::Image(image) => json!({ "type": "input_image",
                                    "image_url": format!("data:{};base64,{}", image.mime_type, answer::base64(image)) }),
                            })
                            .collect(),
                    )
                } else {
                    answer::joined_text(&parts).into()
                };
                let mut item = Map::new();
                item.insert("type".into(), "function_call_output".into());
                item.insert("call_id".into(), answer.id.clone().into());
                item.insert("output".into(), output);
                if let Some(caller) = &answer.caller {
                    item.insert("caller".into(), caller.clone());
                }
                Value::Object(item)
            })
            .collect()
    }
}

/// An output item, as read.
pub(crate) enum Item<'a> {
    /// A `function_call` and its arguments.
    Call {
        raw: &'a Value,
        arguments: Arguments<'a>,
    },
    /// Anything else, sent back as it came.
    Other(&'a Value),
}

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// A whole `function_call` item's arguments.
fn arguments_of(item: &Value) -> Arguments<'_> {
    match item.get("arguments") {
        Some(Value::String(text)) => Arguments::Text(text),
        None | Some(Value::Null) => Arguments::Text(""),
        Some(other) => Arguments::Value(other.clone()),
    }
}

/// Why the response stopped: its status, and the reason it is incomplete.
fn stop_of(response: &Value) -> Option<&str> {
    response
        .get("incomplete_details")
        .and_then(|details| details.get("reason"))
        .and_then(Value::as_str)
        .or_else(|| response.get("status").and_then(Value::as_str))
}

/// The reply of a response of output `items`.
pub(crate) fn reply<'a>(
    items: impl Iterator<Item = Item<'a>>,
    stop: Option<&str>,
    tools: Option<&ToolList>,
) -> Reply {
    let mut intake = Intake::new(tools);
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut history = Vec::new();
    let mut text: Option<String> = None;
    for item in items {
        match item {
            Item::Call { raw, arguments } => {
                let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
                let mut call =
                    intake.take(raw.get("call_id").and_then(Value::as_str), name, arguments);
                if let Some(caller) = raw.get("caller").filter(|caller| !caller.is_null()) {
                    call = call.with_caller(caller.clone());
                }
                let mut echoed = without_nulls(raw);
                echoed.insert("call_id".into(), call.id.clone().into());
                if !matches!(echoed.get("arguments"), Some(Value::String(_))) {
                    let sent = raw.get("arguments").filter(|value| !value.is_null());
                    echoed.insert(
                        "arguments".into(),
                        sent.map_or_else(String::new, Value::to_string).into(),
                    );
                }
                history.push(Value::Object(echoed));
                calls.push(call);
            }
            Item::Other(raw) => {
                if item_type(raw) == Some("message") {
                    for part in raw
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(piece) = part.get("text").and_then(Value::as_str) {
                            let text = text.get_or_insert_with(String::new);
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(piece);
                        }
                    }
                }
                history.push(Value::Object(without_nulls(raw)));
            }
        }
    }
    Reply {
        history,
        text,
        calls,
        stop: stop.map(str::to_owned),
    }
}

fn shape(reason: &str) -> ReadError {
    ReadError::Shape {
        api: API,
        reason: reason.to_owned(),
    }
}
