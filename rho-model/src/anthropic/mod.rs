//! Anthropic Messages (`POST /v1/messages`).
//!
//! - **Tools**: `{name, description, input_schema}`, the schema as the tool
//!   gives it (an object at its root).
//! - **Calls**: the message's `tool_use` content blocks, each with its
//!   input as an object; streamed, as `input_json_delta` pieces of one
//!   block after another ([`AnthropicStream`]). A block's `caller` (a
//!   program the model wrote in Anthropic's code execution sandbox) is kept
//!   on the call ([`ToolCall::caller`]).
//! - **Results**: one `user` message of `tool_result` blocks, in the calls'
//!   order, each with its text and image blocks and `is_error` when the
//!   call failed. Anthropic takes JPEG, PNG, GIF and WebP images; another
//!   kind is named in text instead.
//!
//! The rest of the model's message (thinking blocks and their signatures,
//! server tool blocks) is sent back as it came, as the API requires.
//!
//! [`ToolCall::caller`]: rho_tool_core::ToolCall::caller
//!
//! # A host
//!
//! The whole loop: the tools listed, the model asked, its calls run as one
//! turn, their results sent back, until it answers without calls. `send`
//! stands in for the host's HTTP client.
//!
//! ```
//! use rho::model::anthropic::Anthropic;
//! use rho::tokio::TurnRunner;
//! use rho::ToolRegistry;
//! use serde_json::{Value, json};
//!
//! async fn send(request: Value) -> Value {
//!     let _ = request;
//!     json!({ "content": [], "stop_reason": "end_turn" })
//! }
//!
//! async fn host(turns: TurnRunner, registry: ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//!     let anthropic = Anthropic::new();
//!     let tools = anthropic.tools(&registry.tools())?;
//!     let mut conversation = vec![json!({ "role": "user", "content": "Tidy the repository." })];
//!     loop {
//!         let response = send(json!({ "model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": conversation, "tools": tools.to_json() })).await;
//!         let reply = anthropic.read(&response, Some(&tools))?;
//!         conversation.extend(reply.history.iter().cloned());
//!         if reply.calls.is_empty() {
//!             return Ok(());
//!         }
//!         let entries = turns.turn(reply.calls.clone()).await;
//!         conversation.extend(anthropic.results(&reply, &entries));
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
use crate::listing::{ListError, Listed, Options, ToolList};
use crate::reading::{Arguments, Intake, ReadError, Reply, without_nulls};
use crate::schema::{self, Converted};

pub use stream::AnthropicStream;

pub(crate) const API: &str = "Anthropic Messages";

/// The image types a `tool_result` takes.
const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The Anthropic Messages dialect.
///
/// ```
/// use rho::model::anthropic::Anthropic;
/// use serde_json::json;
///
/// let response = json!({
///     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
///     "stop_reason": "tool_use", "stop_sequence": null,
///     "usage": { "input_tokens": 1, "output_tokens": 1 },
///     "content": [
///         { "type": "text", "text": "Reading it." },
///         { "type": "tool_use", "id": "toolu_1", "name": "read", "input": { "path": "a.rs" } },
///     ],
/// });
/// let reply = Anthropic::new().read(&response, None).unwrap();
/// assert_eq!(reply.text.as_deref(), Some("Reading it."));
/// assert_eq!(reply.calls[0].arguments, json!({ "path": "a.rs" }));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Anthropic {
    options: Options,
    client_tools: Vec<ClientTool>,
}

/// One of Anthropic's client tools: declared by a type Anthropic defines
/// (the model knows it from training), executed by the host. rho runs
/// both on its own tools ([`client`](crate::client), on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientTool {
    /// `bash_20250124`, the registry's tool named `bash`.
    Bash,
    /// `text_editor_20250728`, the registry's tool named
    /// `str_replace_based_edit_tool`, its views cut at `max_characters`
    /// when given (the editor's own bound should say the same).
    TextEditor {
        /// The most characters a view shows.
        max_characters: Option<usize>,
    },
}

/// The name of Anthropic's bash tool.
pub(crate) const BASH: &str = "bash";
/// The name of Anthropic's current text editor tool.
pub(crate) const TEXT_EDITOR: &str = "str_replace_based_edit_tool";

impl ClientTool {
    /// The name the registry's tool must have.
    pub fn name(self) -> &'static str {
        match self {
            ClientTool::Bash => BASH,
            ClientTool::TextEditor { .. } => TEXT_EDITOR,
        }
    }

    /// The declaration, in Anthropic's own type.
    fn declaration(self) -> Value {
        match self {
            ClientTool::Bash => json!({ "type": "bash_20250124", "name": BASH }),
            ClientTool::TextEditor { max_characters } => {
                let mut tool = json!({ "type": "text_editor_20250728", "name": TEXT_EDITOR });
                if let Some(max) = max_characters {
                    tool["max_characters"] = max.into();
                }
                tool
            }
        }
    }
}

impl Anthropic {
    /// The dialect with the default [`Options`] (strictness does not
    /// apply: schemas are sent as the tools give them).
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
    /// in Anthropic's own type, instead of as a tool of its schema. Its
    /// calls and results are read and written like any other tool's.
    ///
    /// ```
    /// use rho::model::anthropic::{Anthropic, ClientTool};
    ///
    /// let dialect = Anthropic::new()
    ///     .with_client_tool(ClientTool::Bash)
    ///     .with_client_tool(ClientTool::TextEditor { max_characters: Some(10_000) });
    /// # let _ = dialect;
    /// ```
    #[must_use]
    pub fn with_client_tool(mut self, tool: ClientTool) -> Self {
        self.client_tools
            .retain(|known| known.name() != tool.name());
        self.client_tools.push(tool);
        self
    }

    /// The request's `tools`, from the tools a registry lists.
    pub fn tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolInfo>,
    ) -> Result<ToolList, ListError> {
        let mut list = ToolList::default();
        for info in tools {
            if list.contains(&info.name) {
                return Err(ListError::Duplicate {
                    tool: info.name.clone(),
                });
            }
            if let Some(client) = self
                .client_tools
                .iter()
                .find(|client| client.name() == info.name)
            {
                let listed = Listed::new(&info.name, false, Converted::unchanged(Value::Null));
                list.push(client.declaration(), listed);
                continue;
            }
            let converted =
                schema::object_root(&info.parameters).map_err(|error| ListError::Schema {
                    tool: info.name.clone(),
                    error,
                })?;
            let mut tool = Map::new();
            tool.insert("name".into(), info.name.clone().into());
            if !info.description.is_empty() {
                tool.insert("description".into(), info.description.clone().into());
            }
            tool.insert("input_schema".into(), converted.schema.clone());
            let listed = Listed::new(&info.name, false, converted);
            self.options.check(info, &listed)?;
            list.push(Value::Object(tool), listed);
        }
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

    /// The model's answer in a whole (not streamed) response.
    pub fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
        let content = response
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("no `content` list"))?;
        let blocks = content
            .iter()
            .map(|block| match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => Block::Call {
                    raw: block,
                    input: match block.get("input") {
                        Some(input) => Arguments::Value(input.clone()),
                        None => Arguments::Text(""),
                    },
                },
                _ => Block::Other(block),
            });
        Ok(reply(
            blocks,
            response.get("stop_reason").and_then(Value::as_str),
            tools,
        ))
    }

    /// A reader of a streamed response's events.
    pub fn stream<'l>(&self, tools: Option<&'l ToolList>) -> AnthropicStream<'l> {
        AnthropicStream::new(tools)
    }

    /// The message that answers `reply`'s calls, from the entries of the
    /// turn that ran them: one `user` message of `tool_result` blocks, one
    /// per call in the calls' order (none when there were no calls).
    pub fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value> {
        let blocks: Vec<Value> = answer::answers(&reply.calls, entries)
            .iter()
            .map(|answer| {
                let result = answer.result();
                let mut content = Vec::new();
                for part in answer::parts(result) {
                    match part {
                        // The API refuses empty text blocks.
                        Part::Text(text) if text.is_empty() => {}
                        Part::Text(text) => content.push(json!({ "type": "text", "text": text })),
                        Part::Image(image) if IMAGE_TYPES.contains(&image.mime_type.as_str()) => {
                            content.push(json!({ "type": "image", "source": {
                                "type": "base64", "media_type": image.mime_type,
                                "data": answer::base64(image) } }));
                        }
                        Part::Image(image) => {
                            content.push(json!({ "type": "text", "text": format!(
                            "[an image of type {} ({} bytes), which this API cannot show]",
                            image.mime_type, image.data.len()) }))
                        }
                    }
                }
                let mut block = Map::new();
                block.insert("type".into(), "tool_result".into());
                block.insert("tool_use_id".into(), answer.id.clone().into());
                if !content.is_empty() {
                    block.insert("content".into(), Value::Array(content));
                }
                if result.is_error {
                    block.insert("is_error".into(), true.into());
                }
                Value::Object(block)
            })
            .collect();
        if blocks.is_empty() {
            return Vec::new();
        }
        vec![json!({ "role": "user", "content": blocks })]
    }
}

/// A content block of the model's message, as read.
pub(crate) enum Block<'a> {
    /// A `tool_use` block and its input.
    Call {
        raw: &'a Value,
        input: Arguments<'a>,
    },
    /// Anything else, sent back as it came.
    Other(&'a Value),
}

/// The reply of a message of `blocks`.
pub(crate) fn reply<'a>(
    blocks: impl Iterator<Item = Block<'a>>,
    stop: Option<&str>,
    tools: Option<&ToolList>,
) -> Reply {
    let mut intake = Intake::new(tools);
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut content = Vec::new();
    let mut text: Option<String> = None;
    for block in blocks {
        match block {
            Block::Call { raw, input } => {
                let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
                let mut call = intake.take(raw.get("id").and_then(Value::as_str), name, input);
                if let Some(caller) = raw.get("caller").filter(|caller| !caller.is_null()) {
                    call = call.with_caller(caller.clone());
                }
                let mut echoed = without_nulls(raw);
                echoed.insert("id".into(), call.id.clone().into());
                // Sent back as the object the API takes: the input read,
                // or none for a call whose input could not be.
                let input = if call.malformed.is_some() || !call.arguments.is_object() {
                    Value::Object(Map::new())
                } else {
                    raw.get("input")
                        .filter(|input| input.is_object())
                        .cloned()
                        .unwrap_or_else(|| call.arguments.clone())
                };
                echoed.insert("input".into(), input);
                content.push(Value::Object(echoed));
                calls.push(call);
            }
            Block::Other(raw) => {
                if raw.get("type").and_then(Value::as_str) == Some("text") {
                    if let Some(piece) = raw.get("text").and_then(Value::as_str) {
                        let text = text.get_or_insert_with(String::new);
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(piece);
                    }
                }
                content.push(Value::Object(without_nulls(raw)));
            }
        }
    }
    Reply {
        history: vec![json!({ "role": "assistant", "content": content })],
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
