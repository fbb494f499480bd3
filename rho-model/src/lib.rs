//! The model's side of a turn: a registry's tools as a model API's tool
//! list, the model's calls read out of its response, and the turn's results
//! written back in the shape the API wants next.
//!
//! rho holds no HTTP client for model APIs: a host already has one. This
//! crate converts between rho's words ([`ToolInfo`], [`ToolCall`],
//! [`SessionEntry`]) and each API's JSON (`serde_json::Value`), so it fits
//! any client crate. It owns the corners hosts get wrong:
//!
//! - **Schemas** in the subset each API takes ([`schema`]): `$ref`s
//!   inlined, recursion refused with where, strict mode where it can be had,
//!   and every change reported with what it costs, so that a host can refuse
//!   a lossy one. rho's own validation still checks every call against the
//!   tool's own schema.
//! - **Calls in**, whole or streamed: nothing the model sends wrong is a
//!   panic or a dropped call. Arguments that are not JSON, a stream cut off
//!   inside them, an id missing or used twice: each becomes a call the turn
//!   answers with an error the model reads ([`ToolCall::malformed`]).
//! - **Results out**: exactly one answer per call, in the model's order,
//!   even for a call the turn never ended; images where the API takes them
//!   and next to the answer where it does not; details never.
//!
//! # Dialects
//!
//! | module | API |
//! |---|---|
//! | [`chat`] | OpenAI Chat Completions, and the OpenAI-compatible servers |
//! | [`responses`] | OpenAI Responses |
//! | [`anthropic`] | Anthropic Messages |
//! | [`gemini`] | Google Gemini (`generateContent`) |
//!
//! Each dialect type has the same four methods (`tools`, `read`, `stream`,
//! `results`); [`Dialect`] is the same surface behind `dyn`, for a host
//! that picks its API at run time.
//!
//! The APIs' own client tools (Anthropic's bash and text editor, OpenAI's
//! shell and apply_patch) are rho tools in [`client`] (on Linux, where the
//! kernel confines them), declared in each API's own types by
//! `with_client_tool`.
//!
//! # Why a data layer
//!
//! The shapes are the contract with the APIs, so they are checked against
//! the APIs' official SDKs in this crate's tests (the SDKs' own request
//! types judge every value written; every response read is built by their
//! response models), not against examples written here.
//!
//! # A host's loop
//!
//! The model's response here is a stand-in; a host sends
//! `request` with its HTTP client and reads the response's JSON.
//!
//! ```
//! use std::sync::Arc;
//! use rho::model::chat::Chat;
//! use rho::tokio::{TokioExecutor, TurnRunner};
//! use rho::{Source, Tool, ToolContext, ToolOutput, ToolRegistry, async_trait};
//! use serde_json::json;
//!
//! struct Weather;
//!
//! #[async_trait]
//! impl Tool for Weather {
//!     fn name(&self) -> &str { "weather" }
//!     fn description(&self) -> &str { "The weather in a city." }
//!     fn parameters(&self) -> serde_json::Value {
//!         json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] })
//!     }
//!     async fn run(&self, args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = ToolRegistry::new();
//!     registry.add_source(Source::trusted("builtin"))?.add(Weather)?;
//!     let turns = TurnRunner::new(TokioExecutor::current()?, registry.clone());
//!
//!     let chat = Chat::new();
//!     let tools = chat.tools(&registry.tools())?;
//!     let mut messages = vec![json!({ "role": "user", "content": "Weather in Paris and Oslo?" })];
//!     let _request = json!({ "model": "any", "messages": messages, "tools": tools.to_json() });
//!
//!     // What the model answered (from the host's HTTP client).
//!     let response = json!({ "choices": [{ "index": 0, "finish_reason": "tool_calls",
//!         "message": { "role": "assistant", "content": null, "tool_calls": [
//!             { "id": "c1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Paris\"}" } },
//!             { "id": "c2", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":" } },
//!         ] } }] });
//!     let reply = chat.read(&response, Some(&tools))?;
//!     messages.extend(reply.history.iter().cloned());
//!     let entries = turns.turn(reply.calls.clone()).await;
//!     messages.extend(chat.results(&reply, &entries));
//!
//!     assert_eq!(messages[2], json!({ "role": "tool", "tool_call_id": "c1", "content": "sunny in Paris" }));
//!     // The cut-off arguments reach the model as an error it can fix.
//!     assert!(messages[3]["content"].as_str().unwrap().starts_with("this call was not run: its arguments are not JSON"));
//!     Ok(())
//! }
//! ```
//!
//! [`ToolInfo`]: rho_registry::ToolInfo
//! [`ToolCall`]: rho_tool_core::ToolCall
//! [`ToolCall::malformed`]: rho_tool_core::ToolCall::malformed
//! [`SessionEntry`]: rho_turn::SessionEntry

mod answer;
pub mod anthropic;
pub mod chat;
#[cfg(target_os = "linux")]
pub mod client;
mod dialect;
pub mod gemini;
mod listing;
mod reading;
pub mod responses;
pub mod schema;

pub use dialect::{Dialect, StreamReader};
pub use listing::{ListError, Listed, Options, Strictness, ToolList};
pub use reading::{MAX_ARGUMENTS_BYTES, ReadError, Reply};
