//! Google Gemini (`models/*:generateContent`, and
//! `:streamGenerateContent`), in the REST API's camelCase JSON.
//!
//! - **Tools**: one tool of `functionDeclarations`, each with its schema in
//!   Gemini's own `Schema` subset (`parameters`) where it can be converted,
//!   else as JSON Schema (`parametersJsonSchema`): [`Strictness`] says
//!   which (strict means the subset).
//! - **Calls**: the first candidate's `functionCall` parts, each with its
//!   arguments as an object; streamed, as whole parts chunk by chunk
//!   ([`GeminiStream`]). Gemini's calls need no id: a call without one gets
//!   one of rho's for the turn, and its answer is matched by name and order
//!   as the API does. Parts' `thoughtSignature`s are sent back as they came.
//! - **Results**: one `user` content of `functionResponse` parts, in the
//!   calls' order: `{"output": text}`, or `{"error": text}` for a call that
//!   failed, as Gemini's docs ask; images as the function response's own
//!   `inlineData` parts.
//!
//! [`Strictness`]: crate::Strictness
//!
//! # A host
//!
//! The whole loop: the tools listed, the model asked, its calls run as one
//! turn, their results sent back, until it answers without calls. `send`
//! stands in for the host's HTTP client.
//!
//! ```
//! use rho::model::gemini::Gemini;
//! use rho::tokio::TurnRunner;
//! use rho::ToolRegistry;
//! use serde_json::{Value, json};
//!
//! async fn send(request: Value) -> Value {
//!     let _ = request;
//!     json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Done." }] }, "finishReason": "STOP" }] })
//! }
//!
//! async fn host(turns: TurnRunner, registry: ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//!     let gemini = Gemini::new();
//!     let tools = gemini.tools(&registry.tools())?;
//!     let mut conversation = vec![json!({ "role": "user", "parts": [{ "text": "Tidy the repository." }] })];
//!     loop {
//!         let response = send(json!({ "contents": conversation, "tools": tools.to_json() })).await;
//!         let reply = gemini.read(&response, Some(&tools))?;
//!         conversation.extend(reply.history.iter().cloned());
//!         if reply.calls.is_empty() {
//!             return Ok(());
//!         }
//!         let entries = turns.turn(reply.calls.clone()).await;
//!         conversation.extend(gemini.results(&reply, &entries));
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
use crate::listing::{ListError, Listed, Options, Strictness, ToolList};
use crate::reading::{Arguments, Intake, ReadError, Reply, without_nulls};
use crate::schema;

pub use stream::GeminiStream;

pub(crate) const API: &str = "Gemini";

/// The image types a function response's parts take.
const IMAGE_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
];

/// The Gemini dialect.
///
/// ```
/// use rho::model::gemini::Gemini;
/// use serde_json::json;
///
/// let response = json!({ "candidates": [{ "index": 0, "finishReason": "STOP", "content": {
///     "role": "model", "parts": [{ "functionCall": { "name": "read", "args": { "path": "a.rs" } } }] } }] });
/// let reply = Gemini::new().read(&response, None).unwrap();
/// assert_eq!(reply.calls[0].arguments, json!({ "path": "a.rs" }));
/// assert!(reply.calls[0].malformed.is_none(), "Gemini's calls need no id");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Gemini {
    options: Options,
}

impl Gemini {
    /// The dialect with the default [`Options`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The dialect with `options`.
    pub fn with_options(options: Options) -> Self {
        Self { options }
    }

    /// The request's `tools`: one tool of function declarations.
    pub fn tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolInfo>,
    ) -> Result<ToolList, ListError> {
        let mut list = ToolList::wrapped("functionDeclarations");
        for info in tools {
            if list.contains(&info.name) {
                return Err(ListError::Duplicate {
                    tool: info.name.clone(),
                });
            }
            let error = |error| ListError::Schema {
                tool: info.name.clone(),
                error,
            };
            let loose = || schema::object_root(&info.parameters).map_err(error);
            let (converted, subset, not_subset) = match self.options.strict {
                Strictness::Never => (loose()?, false, None),
                Strictness::Always => {
                    (schema::gemini(&info.parameters).map_err(error)?, true, None)
                }
                Strictness::WherePossible => match schema::gemini(&info.parameters) {
                    Ok(converted) => (converted, true, None),
                    Err(why) => (loose()?, false, Some(why)),
                },
            };
            let mut declaration = Map::new();
            declaration.insert("name".into(), info.name.clone().into());
            if !info.description.is_empty() {
                declaration.insert("description".into(), info.description.clone().into());
            }
            let field = if subset {
                "parameters"
            } else {
                "parametersJsonSchema"
            };
            declaration.insert(field.into(), converted.schema.clone());
            let mut listed = Listed::new(&info.name, subset, converted);
            listed.not_strict = not_subset;
            self.options.check(info, &listed)?;
            list.push(Value::Object(declaration), listed);
        }
        Ok(list)
    }

    /// The model's answer in a whole (not streamed) response: its first
    /// candidate's content. A response without candidates (the prompt was
    /// blocked) is a reply without calls, stopped for the reason given.
    pub fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
        if !response.is_object() {
            return Err(shape("a response that is not an object"));
        }
        let candidate = response
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first());
        let Some(candidate) = candidate else {
            let blocked = response
                .get("promptFeedback")
                .and_then(|feedback| feedback.get("blockReason"))
                .and_then(Value::as_str)
                .ok_or_else(|| shape("no `candidates`, and no `promptFeedback` saying why"))?;
            return Ok(reply(&[], Some(blocked), tools));
        };
        let parts = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let stop = candidate.get("finishReason").and_then(Value::as_str);
        Ok(reply(parts, stop, tools))
    }

    /// A reader of a streamed response's chunks.
    pub fn stream<'l>(&self, tools: Option<&'l ToolList>) -> GeminiStream<'l> {
        GeminiStream::new(tools)
    }

    /// The content that answers `reply`'s calls, from the entries of the
    /// turn that ran them: one `user` content of `functionResponse` parts,
    /// one per call in the calls' order (none when there were no calls).
    pub fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value> {
        // The ids the model gave, by call: a call it gave none is answered
        // without one (rho's id is not the model's).
        let given: Vec<bool> = reply
            .history
            .first()
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("functionCall"))
            .map(|call| call.get("id").is_some_and(Value::is_string))
            .collect();
        let parts: Vec<Value> = answer::answers(&reply.calls, entries)
            .iter()
            .enumerate()
            .map(|(index, answer)| {
                let result = answer.result();
                let parts = answer::parts(result);
                let mut text = answer::joined_text(&parts);
                let mut inline = Vec::new();
                for part in &parts {
                    if let Part::Image(image) = part {
                        if IMAGE_TYPES.contains(&image.mime_type.as_str()) {
                            inline.push(json!({ "inlineData": {
                                "mimeType": image.mime_type, "data": answer::base64(image) } }));
                        } else {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(&format!(
                                "[an image of type {} ({} bytes), which this API cannot show]",
                                image.mime_type,
                                image.data.len()
                            ));
                        }
                    }
                }
                let key = if result.is_error { "error" } else { "output" };
                let mut response = Map::new();
                if given.get(index).copied().unwrap_or(true) {
                    response.insert("id".into(), answer.id.clone().into());
                }
                response.insert("name".into(), answer.tool.clone().into());
                response.insert("response".into(), json!({ key: text }));
                if !inline.is_empty() {
                    response.insert("parts".into(), Value::Array(inline));
                }
                json!({ "functionResponse": response })
            })
            .collect();
        if parts.is_empty() {
            return Vec::new();
        }
        vec![json!({ "role": "user", "parts": parts })]
    }
}

/// The reply of a candidate of content `parts`.
pub(crate) fn reply(parts: &[Value], stop: Option<&str>, tools: Option<&ToolList>) -> Reply {
    let mut intake = Intake::new(tools).ids_optional();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut echoed: Vec<Value> = Vec::new();
    let mut text: Option<String> = None;
    for part in parts {
        let mut part = without_nulls(part);
        if let Some(call) = part.get("functionCall").cloned() {
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let id = call.get("id").and_then(Value::as_str);
            let arguments = match call.get("args") {
                None | Some(Value::Null) => Arguments::Text(""),
                Some(args) => Arguments::Value(args.clone()),
            };
            let taken = intake.take(id, name, arguments);
            // An id the model gave but reused is replaced; none is added
            // where it gave none.
            if id.is_some() && id != Some(taken.id.as_str()) {
                let mut call = without_nulls(&call);
                call.insert("id".into(), taken.id.clone().into());
                part.insert("functionCall".into(), Value::Object(call));
            }
            calls.push(taken);
            echoed.push(Value::Object(part));
            continue;
        }
        if let Some(piece) = part.get("text").and_then(Value::as_str) {
            if part.get("thought") != Some(&Value::Bool(true)) {
                text.get_or_insert_with(String::new).push_str(piece);
            }
        }
        // Plain text streamed in pieces is sent back as one part, as a
        // whole response has it.
        let plain = |part: &Map<String, Value>| part.len() == 1 && part.contains_key("text");
        if let Some(Value::Object(last)) = echoed.last_mut() {
            if plain(last) && plain(&part) {
                if let (Some(Value::String(before)), Some(Value::String(piece))) =
                    (last.get_mut("text"), part.get("text"))
                {
                    before.push_str(piece);
                    continue;
                }
            }
        }
        echoed.push(Value::Object(part));
    }
    // A candidate of no parts (a blocked prompt, a cut stream) has nothing
    // to send back: the API takes no content without parts.
    let history = if echoed.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "role": "model", "parts": echoed })]
    };
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
