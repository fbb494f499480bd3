//! OpenAI Chat Completions (`POST /v1/chat/completions`), also what
//! OpenAI-compatible servers speak (vLLM, llama.cpp, Ollama, LM Studio).
//!
//! - **Tools**: `{"type": "function", "function": {name, description,
//!   parameters, strict}}`, strict where the schema can be made so.
//! - **Calls**: the assistant message's `tool_calls`, each with its
//!   arguments as JSON *text*; streamed, as deltas keyed by `index`, the
//!   deltas of parallel calls interleaved ([`ChatStream`]).
//! - **Results**: one `tool` message per call, in the calls' order. A tool
//!   message takes text only, so a result's images go in one `user`
//!   message right after the tool messages, each named by its call; the
//!   tool message says they follow. Chat Completions has no error flag: an
//!   error's text says what failed.
//!
//! # A host
//!
//! The whole loop: the tools listed, the model asked, its calls run as one
//! turn, their results sent back, until it answers without calls. `send`
//! stands in for the host's HTTP client.
//!
//! ```
//! use rho::model::chat::Chat;
//! use rho::tokio::TurnRunner;
//! use rho::ToolRegistry;
//! use serde_json::{Value, json};
//!
//! async fn send(request: Value) -> Value {
//!     let _ = request;
//!     json!({ "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": "Done." } }] })
//! }
//!
//! async fn host(turns: TurnRunner, registry: ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//!     let chat = Chat::new();
//!     let tools = chat.tools(&registry.tools())?;
//!     let mut conversation = vec![json!({ "role": "user", "content": "Tidy the repository." })];
//!     loop {
//!         let response = send(json!({ "model": "gpt-5", "messages": conversation, "tools": tools.to_json() })).await;
//!         let reply = chat.read(&response, Some(&tools))?;
//!         conversation.extend(reply.history.iter().cloned());
//!         if reply.calls.is_empty() {
//!             return Ok(());
//!         }
//!         let entries = turns.turn(reply.calls.clone()).await;
//!         conversation.extend(chat.results(&reply, &entries));
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
use crate::reading::{Arguments, Intake, ReadError, Reply};
use crate::schema::{self, Converted};

pub use stream::ChatStream;

pub(crate) const API: &str = "Chat Completions";

/// The Chat Completions dialect.
///
/// ```
/// use rho::model::chat::Chat;
/// use serde_json::json;
///
/// let chat = Chat::new();
/// let response = json!({
///     "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
///     "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
///         "role": "assistant", "content": null,
///         "tool_calls": [{ "id": "call_1", "type": "function",
///             "function": { "name": "read", "arguments": "{\"path\":\"a.rs\"}" } }],
///     }}],
/// });
/// let reply = chat.read(&response, None).unwrap();
/// assert_eq!(reply.calls[0].arguments, json!({ "path": "a.rs" }));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Chat {
    options: Options,
}

impl Chat {
    /// The dialect with the default [`Options`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The dialect with `options`.
    pub fn with_options(options: Options) -> Self {
        Self { options }
    }

    /// The request's `tools`, from the tools a registry lists
    /// ([`ToolRegistry::tools`](rho_registry::ToolRegistry::tools)).
    pub fn tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolInfo>,
    ) -> Result<ToolList, ListError> {
        function_tools(
            &self.options,
            tools,
            |_| None,
            |info, converted, strict| {
                let mut function = Map::new();
                function.insert("name".into(), info.name.clone().into());
                if !info.description.is_empty() {
                    function.insert("description".into(), info.description.clone().into());
                }
                function.insert("parameters".into(), converted.schema.clone());
                function.insert("strict".into(), strict.into());
                json!({ "type": "function", "function": function })
            },
        )
    }

    /// The model's answer in a whole (not streamed) response: its first
    /// choice's message. `tools`, the list the request was made with,
    /// reads strict mode's `null`s back; without it, arguments are taken
    /// as they come.
    pub fn read(&self, response: &Value, tools: Option<&ToolList>) -> Result<Reply, ReadError> {
        let choice = response
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
            .ok_or_else(|| shape("no `choices`"))?;
        let message = choice
            .get("message")
            .ok_or_else(|| shape("its first choice has no `message`"))?;
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let refusal = message
            .get("refusal")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut intake = Intake::new(tools);
        let mut calls = Vec::new();
        let mut echoed = Vec::new();
        let listed = match message.get("tool_calls") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(list)) => list.as_slice(),
            Some(_) => return Err(shape("`tool_calls` is not a list")),
        };
        for raw in listed {
            let function = raw.get("function");
            let name = function
                .and_then(|function| function.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let arguments = match function.and_then(|function| function.get("arguments")) {
                Some(Value::String(text)) => Arguments::Text(text),
                // Some servers send an object; take it as one.
                Some(value @ Value::Object(_)) => Arguments::Value(value.clone()),
                None | Some(Value::Null) => Arguments::Text(""),
                Some(other) => Arguments::Value(other.clone()),
            };
            let text_of = |arguments: &Arguments<'_>| match arguments {
                Arguments::Text(text) => (*text).to_owned(),
                Arguments::Value(value) => value.to_string(),
                Arguments::TooLong(_) | Arguments::Cut => String::new(),
            };
            let sent = text_of(&arguments);
            let call = intake.take(raw.get("id").and_then(Value::as_str), name, arguments);
            echoed.push(echo_call(&call, &sent));
            calls.push(call);
        }
        Ok(Reply {
            history: vec![assistant_message(
                text.as_deref(),
                refusal.as_deref(),
                echoed,
            )],
            text,
            calls,
            stop: choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// A reader of a streamed response's chunks.
    pub fn stream<'l>(&self, tools: Option<&'l ToolList>) -> ChatStream<'l> {
        ChatStream::new(tools)
    }

    /// The messages that answer `reply`'s calls, from the entries of the
    /// turn that ran them: one `tool` message per call in the calls'
    /// order, then, if any result has images, one `user` message with
    /// them. Every call gets its answer; one the turn did not end (or ran
    /// no turn for) is answered as not run.
    pub fn results(&self, reply: &Reply, entries: &[SessionEntry]) -> Vec<Value> {
        results_for(&reply.calls, entries)
    }
}

/// The tool messages and the image message for `calls`.
pub(crate) fn results_for(calls: &[ToolCall], entries: &[SessionEntry]) -> Vec<Value> {
    let answers = answer::answers(calls, entries);
    let mut messages = Vec::with_capacity(answers.len() + 1);
    let mut images: Vec<Value> = Vec::new();
    for answer in &answers {
        let parts = answer::parts(answer.result());
        let mut text = answer::joined_text(&parts);
        let shown: Vec<_> = parts
            .iter()
            .filter_map(|part| match part {
                Part::Image(image) => Some(*image),
                Part::Text(_) => None,
            })
            .collect();
        if !shown.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{} image{} of this result follow in the next user message]",
                shown.len(),
                if shown.len() == 1 { "" } else { "s" }
            ));
            images.push(json!({ "type": "text", "text": format!(
                "Images of tool call `{}` ({}):", answer.id, answer.tool) }));
            for image in shown {
                images.push(json!({ "type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", image.mime_type, answer::base64(image)) } }));
            }
        }
        messages.push(json!({ "role": "tool", "tool_call_id": answer.id, "content": text }));
    }
    if !images.is_empty() {
        messages.push(json!({ "role": "user", "content": images }));
    }
    messages
}

/// The assistant message to send back.
pub(crate) fn assistant_message(
    text: Option<&str>,
    refusal: Option<&str>,
    calls: Vec<Value>,
) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        text.map_or(Value::Null, |text| text.into()),
    );
    if let Some(refusal) = refusal {
        message.insert("refusal".into(), refusal.into());
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// A call as the assistant message lists it, with the id rho settled on
/// and the argument text as the model sent it.
pub(crate) fn echo_call(call: &ToolCall, arguments: &str) -> Value {
    json!({ "id": call.id, "type": "function",
            "function": { "name": call.name, "arguments": arguments } })
}

fn shape(reason: &str) -> ReadError {
    ReadError::Shape {
        api: API,
        reason: reason.to_owned(),
    }
}

/// Function tools, as both OpenAI dialects list them: each schema strict
/// where the options ask and it can be, written by `write`; a tool
/// `declared` gives a declaration of its own (a client tool) is listed so.
pub(crate) fn function_tools<'a>(
    options: &Options,
    tools: impl IntoIterator<Item = &'a ToolInfo>,
    declared: impl Fn(&ToolInfo) -> Option<Value>,
    write: impl Fn(&ToolInfo, &Converted, bool) -> Value,
) -> Result<ToolList, ListError> {
    let mut list = ToolList::default();
    for info in tools {
        if list.contains(&info.name) {
            return Err(ListError::Duplicate {
                tool: info.name.clone(),
            });
        }
        if let Some(declaration) = declared(info) {
            let listed = Listed::new(&info.name, false, Converted::unchanged(Value::Null));
            list.push(declaration, listed);
            continue;
        }
        let error = |error| ListError::Schema {
            tool: info.name.clone(),
            error,
        };
        let loose = || schema::object_root(&info.parameters).map_err(error);
        let (converted, strict, not_strict) = match options.strict {
            Strictness::Never => (loose()?, false, None),
            Strictness::Always => (schema::strict(&info.parameters).map_err(error)?, true, None),
            Strictness::WherePossible => match schema::strict(&info.parameters) {
                Ok(converted) => (converted, true, None),
                Err(why) => (loose()?, false, Some(why)),
            },
        };
        let value = write(info, &converted, strict);
        let mut listed = Listed::new(&info.name, strict, converted);
        listed.not_strict = not_strict;
        options.check(info, &listed)?;
        list.push(value, listed);
    }
    Ok(list)
}
