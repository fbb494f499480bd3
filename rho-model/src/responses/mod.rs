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
//!
//! # A host
//!
//! The whole loop: the tools listed, the model asked, its calls run as one
//! turn, their results sent back, until it answers without calls. `send`
//! stands in for the host's HTTP client.
//!
//! ```
//! use rho::model::responses::Responses;
//! use rho::tokio::TurnRunner;
//! use rho::ToolRegistry;
//! use serde_json::{Value, json};
//!
//! async fn send(request: Value) -> Value {
//!     let _ = request;
//!     json!({ "output": [], "status": "completed" })
//! }
//!
//! async fn host(turns: TurnRunner, registry: ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//!     let responses = Responses::new();
//!     let tools = responses.tools(&registry.tools())?;
//!     let mut conversation = vec![json!({ "role": "user", "content": "Tidy the repository." })];
//!     loop {
//!         let response = send(json!({ "model": "gpt-5", "input": conversation, "tools": tools.to_json(), "store": false })).await;
//!         let reply = responses.read(&response, Some(&tools))?;
//!         conversation.extend(reply.history.iter().cloned());
//!         if reply.calls.is_empty() {
//!             return Ok(());
//!         }
//!         let entries = turns.turn(reply.calls.clone()).await;
//!         conversation.extend(responses.results(&reply, &entries));
//!     }
//! }
//! # #[tokio::main]
//! # async fn main() {
//! #     let registry = ToolRegistry::new();
//! #     let turns = TurnRunner::new(rho::tokio::TokioExecutor::current().unwrap(), registry.clone());
//! #     host(turns, registry).await.unwrap();
//! # }
//! ```

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
    client_tools: Vec<ClientTool>,
}

/// One of the Responses API's client tools: declared by a type OpenAI
/// defines, executed by the host. rho runs both on its own tools
/// ([`client`](crate::client), on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientTool {
    /// `{"type": "shell"}`, the registry's tool named `shell`: the model's
    /// `shell_call` items, answered by `shell_call_output` items.
    Shell,
    /// `{"type": "apply_patch"}`, the registry's tool named
    /// `apply_patch`: `apply_patch_call` items, answered by
    /// `apply_patch_call_output` items.
    ApplyPatch,
}

/// The name of the Responses API's shell tool.
pub(crate) const SHELL: &str = "shell";
/// The name of its apply_patch tool.
pub(crate) const APPLY_PATCH: &str = "apply_patch";

impl ClientTool {
    /// The name the registry's tool must have.
    pub fn name(self) -> &'static str {
        match self {
            ClientTool::Shell => SHELL,
            ClientTool::ApplyPatch => APPLY_PATCH,
        }
    }

    /// The declaration, in OpenAI's own type.
    fn declaration(self) -> Value {
        match self {
            ClientTool::Shell => json!({ "type": "shell" }),
            ClientTool::ApplyPatch => json!({ "type": "apply_patch" }),
        }
    }
}

/// The output item types that are calls, the tool each calls, and where
/// its arguments are.
const CALL_ITEMS: [(&str, Option<&str>, &str); 3] = [
    ("function_call", None, "arguments"),
    ("shell_call", Some(SHELL), "action"),
    ("apply_patch_call", Some(APPLY_PATCH), "operation"),
];

/// The tool an output item calls, and the field of its arguments, if it
/// is a call.
fn call_of(item: &Value) -> Option<(&str, &'static str)> {
    let kind = item_type(item)?;
    let (_, tool, field) = CALL_ITEMS.iter().find(|(call, _, _)| *call == kind)?;
    let tool = match tool {
        Some(tool) => tool,
        None => item.get("name").and_then(Value::as_str).unwrap_or_default(),
    };
    Some((tool, field))
}

impl Responses {
    /// The dialect with the default [`Options`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The dialect with `options`.
    pub fn with_options(options: Options) -> Self {
        Self {
            options,
            client_tools: Vec::new(),
        }
    }

    /// Declares the registry's tool of `tool`'s name as that client tool,
    /// in OpenAI's own type, instead of as a function; its calls come as
    /// the tool's own items and are answered in its own output items.
    ///
    /// ```
    /// use rho::model::responses::{ClientTool, Responses};
    ///
    /// let dialect = Responses::new()
    ///     .with_client_tool(ClientTool::Shell)
    ///     .with_client_tool(ClientTool::ApplyPatch);
    /// # let _ = dialect;
    /// ```
    #[must_use]
    pub fn with_client_tool(mut self, tool: ClientTool) -> Self {
        self.client_tools.retain(|known| *known != tool);
        self.client_tools.push(tool);
        self
    }

    /// The request's `tools`, from the tools a registry lists.
    pub fn tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolInfo>,
    ) -> Result<ToolList, ListError> {
        let declared = |info: &ToolInfo| {
            self.client_tools
                .iter()
                .find(|client| client.name() == info.name)
                .map(|client| client.declaration())
        };
        let list = function_tools(&self.options, tools, declared, |info, converted, strict| {
            let mut tool = Map::new();
            tool.insert("type".into(), "function".into());
            tool.insert("name".into(), info.name.clone().into());
            if !info.description.is_empty() {
                tool.insert("description".into(), info.description.clone().into());
            }
            tool.insert("parameters".into(), converted.schema.clone());
            tool.insert("strict".into(), strict.into());
            Value::Object(tool)
        })?;
        if let Some(missing) = self
            .client_tools
            .iter()
            .find(|client| !list.contains(client.name()))
        {
            return Err(ListError::Missing {
                tool: missing.name().to_owned(),
            });
        }
        Ok(list)
    }

    /// The model's answer in a whole (not streamed) response: its
    /// `output` items.
    pub fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
        let output = response
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("no `output` list"))?;
        let items = output.iter().map(|item| match call_of(item) {
            Some((_, field)) => Item::Call {
                raw: item,
                arguments: arguments_of(item, field),
            },
            None => Item::Other(item),
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
        // The item type of each call, by call id: a client tool's call is
        // answered in its own output item.
        let kinds: std::collections::HashMap<&str, &str> = reply
            .history
            .iter()
            .filter_map(|item| Some((item.get("call_id")?.as_str()?, item_type(item)?)))
            .collect();
        answer::answers(&reply.calls, entries)
            .iter()
            .map(|answer| {
                match kinds.get(answer.id.as_str()).copied() {
                    Some("shell_call") => return shell_output(answer),
                    Some("apply_patch_call") => return patch_output(answer),
                    _ => {}
                }
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

/// The `shell_call_output` answering a shell call: the output list the
/// shell tool wrote as JSON, or, for any other answer (a refusal, a crash,
/// a text the output cap cut), that text as one command's stderr.
fn shell_output(answer: &answer::Answer<'_>) -> Value {
    let result = answer.result();
    let text = result.text();
    let output = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(output)) if !output.is_empty() => Value::Array(output),
        _ => json!([{ "stdout": "", "stderr": text,
            "outcome": { "type": "exit", "exit_code": if result.is_error { 1 } else { 0 } } }]),
    };
    let mut item = Map::new();
    item.insert("type".into(), "shell_call_output".into());
    item.insert("call_id".into(), answer.id.clone().into());
    item.insert("output".into(), output);
    if let Some(caller) = &answer.caller {
        item.insert("caller".into(), caller.clone());
    }
    Value::Object(item)
}

/// The `apply_patch_call_output` answering a patch: completed or failed,
/// with the tool's text.
fn patch_output(answer: &answer::Answer<'_>) -> Value {
    let result = answer.result();
    let mut item = Map::new();
    item.insert("type".into(), "apply_patch_call_output".into());
    item.insert("call_id".into(), answer.id.clone().into());
    item.insert(
        "status".into(),
        if result.is_error {
            "failed"
        } else {
            "completed"
        }
        .into(),
    );
    item.insert("output".into(), result.text().into());
    if let Some(caller) = &answer.caller {
        item.insert("caller".into(), caller.clone());
    }
    Value::Object(item)
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

/// A whole call item's arguments, from its field `field` (a function's
/// JSON text, a shell call's action, a patch's operation).
fn arguments_of<'a>(item: &'a Value, field: &str) -> Arguments<'a> {
    match item.get(field) {
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
                let name = call_of(raw).map_or("", |(name, _)| name);
                let mut call =
                    intake.take(raw.get("call_id").and_then(Value::as_str), name, arguments);
                if let Some(caller) = raw.get("caller").filter(|caller| !caller.is_null()) {
                    call = call.with_caller(caller.clone());
                }
                let mut echoed = without_nulls(raw);
                echoed.insert("call_id".into(), call.id.clone().into());
                let function = item_type(raw) == Some("function_call");
                if function && !matches!(echoed.get("arguments"), Some(Value::String(_))) {
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
