//! rho over MCP: a rho tool registry served to any MCP client, MCP servers
//! imported as sources, and a proxy in front of any MCP server, with rho's
//! guarantees for every call.
//!
//! MCP servers are where agent hosts get most of their tools, and where
//! tools hang, crash and flood. The SDKs leave that to each handler: a
//! handler that panics loses its request (the client waits for its own
//! timeout), a cancelled handler stops only if it checks, and nothing
//! bounds a call's time unless the handler does. [`McpServer`] serves a
//! [`ToolRegistry`](rho_registry::ToolRegistry) so that every `tools/call`
//! is a rho call instead:
//!
//! - **Listed from the registry.** `tools/list` gives every enabled tool
//!   (name, title, description, input schema, output schema, annotations;
//!   an untrusted tool's behaviour hints left out), and clients get
//!   `notifications/tools/list_changed` whenever the list changes (a
//!   source or tool added or removed, a tool quarantined or put back).
//! - **Checked before the gate.** An unknown tool is an error result with
//!   the nearest names; arguments that do not fit the schema are an error
//!   result listing every failing path. Neither reaches the gate.
//! - **Run as a rho call.** The host's gate runs in the call's task (and
//!   may wait), the tool's clock starts when the gate allows, and at the
//!   deadline the call is killed without waiting for the tool.
//! - **One result, however it ended.** A panic, a timeout, a crash or a
//!   denial is an `isError` result naming the tool, never a dropped
//!   request. Every part of a result becomes MCP content, in order (text,
//!   images, audio, resource links, embedded resources, with the
//!   annotations and `_meta` a part carries); details become
//!   `structuredContent`, checked against the tool's output schema when it
//!   has one.
//! - **Approval at the client.** With an [`ElicitationApprover`] in the
//!   host's gate, a call that needs a person is put to the user of the
//!   client that made it (MCP elicitation), when that client can be asked;
//!   otherwise the host's own approver decides.
//! - **Questions the 2026-07-28 way.** A client on 2026-07-28 or later,
//!   which takes no requests from its server, is asked (the gate's
//!   approval, a tool's questions) through an input-required result: the
//!   call waits on the server, its clock held, for the client's retry with
//!   the answers, and runs once however many rounds it takes. Its
//!   `requestState` is a random token good for one retry of that call; a
//!   call whose client never answers ends at the server's input deadline
//!   ([`McpServer::with_input_deadline`]).
//! - **Long calls as tasks.** The tools a host picks ([`McpTasks`]) run as
//!   MCP tasks for clients that take them once a call has run a moment:
//!   `tasks/get` tells its status and result, `tasks/update` answers its
//!   questions, `tasks/cancel` aborts the rho call (the tool is stopped,
//!   not told).
//! - **A way back to the client.** A tool that wants it takes the client
//!   its call came from ([`McpClient::of`]) and logs to it (at the level
//!   the client set), asks its model (sampling), its user (elicitation,
//!   the call's clock held meanwhile) or for its roots, one at a time or
//!   several at once ([`McpClient::ask`]), each only when the client
//!   offered it. The same tool run outside MCP finds no client.
//! - **Beside the tools.** A host's resources, prompts and completions
//!   ([`McpFeatures`]) are served as they are, their panics answered.
//! - **Live and stoppable.** Partial results become
//!   `notifications/progress` when the client sent a progress token;
//!   `notifications/cancelled` or the client leaving aborts the call at
//!   once (an abort is never counted against the tool).
//!
//! # Example
//!
//! A registry with one tool, served over an in-memory pipe; the test plays
//! the client with raw JSON-RPC lines, as any MCP client writes them.
//!
//! ```
//! use std::sync::Arc;
//! use rho::tokio::TokioExecutor;
//! use rho::mcp::McpServer;
//! use rho::{Source, Tool, ToolContext, ToolOutput, ToolRegistry, async_trait};
//! use serde_json::{Value, json};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! struct Add;
//!
//! #[async_trait]
//! impl Tool for Add {
//!     fn name(&self) -> &str { "add" }
//!     fn description(&self) -> &str { "Adds `a` and `b`." }
//!     fn parameters(&self) -> Value {
//!         json!({ "type": "object", "required": ["a", "b"],
//!                 "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } } })
//!     }
//!     async fn run(&self, args: Value, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).to_string())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolRegistry::new();
//! registry.add_source(Source::trusted("builtin"))?.add(Add)?;
//! let server = McpServer::new(TokioExecutor::current()?, registry);
//!
//! // In a real server: `server.serve_stdio().await?`.
//! let (client, server_end) = tokio::io::duplex(64 << 10);
//! let (from_client, to_client) = tokio::io::split(server_end);
//! tokio::spawn(async move { server.serve_io(from_client, to_client).await });
//!
//! let (reader, mut writer) = tokio::io::split(client);
//! let mut lines = BufReader::new(reader).lines();
//! for message in [
//!     json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
//!         "protocolVersion": "2025-06-18", "capabilities": {},
//!         "clientInfo": { "name": "example", "version": "1" } } }),
//!     json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
//!     json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
//!             "params": { "name": "add", "arguments": { "a": 2, "b": 3 } } }),
//!     json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
//!             "params": { "name": "ad", "arguments": {} } }),
//! ] {
//!     writer.write_all(format!("{message}\n").as_bytes()).await?;
//! }
//! let mut answers = std::collections::HashMap::new();
//! while answers.len() < 3 {
//!     let line = lines.next_line().await?.expect("the server answers");
//!     let answer: Value = serde_json::from_str(&line)?;
//!     answers.insert(answer["id"].as_i64().expect("a response"), answer);
//! }
//! assert_eq!(answers[&2]["result"]["content"][0]["text"], "5");
//! let unknown = &answers[&3]["result"];
//! assert_eq!(unknown["isError"], true);
//! assert!(unknown["content"][0]["text"].as_str().unwrap().contains("the nearest tool is `add`"));
//! # Ok(())
//! # }
//! ```
//!
//! # MCP servers as sources
//!
//! The other way round, [`import::McpSource`] makes an MCP server (a child
//! process over stdio, or a streamable HTTP endpoint) a source of a
//! registry: its tools become untrusted
//! rho tools with rho's deadline, cancellation, crash accounting and
//! quarantine, on tokio or smol. See the [`import`] module.
//!
//! # The proxy
//!
//! [`proxy`] puts the two together: `rho-mcp proxy -- <server command>`
//! (or `--url <endpoint>`) is a stdio MCP server in front of any MCP
//! server, with rho's
//! deadline, crash quarantine, an output cap, a policy file (allow, deny
//! or ask through elicitation) and a JSON Lines audit log.
//!
//! # Which transports
//!
//! [`McpServer::serve_stdio`] serves one client over stdin and stdout;
//! [`McpServer::serve_io`] over any reader and writer;
//! [`McpServer::serve_http`] any number over MCP's streamable HTTP, safe
//! by default (loopback, `Host` and `Origin` checked, a bearer token off
//! loopback, bounded bodies and calls; see [`HttpOptions`]). A host with a
//! transport of its own gives rmcp a [`Session`] per connection.

mod answered;
mod concurrency;
mod error;
#[cfg(unix)]
pub mod import;
mod lines;
mod output;
#[cfg(unix)]
pub mod proxy;
pub mod serve;

pub use concurrency::CONCURRENCY_CAPABILITY;
pub use error::ServeError;
pub use serve::{
    Answer, Answers, CallObserver, ElicitationApprover, HttpOptions, HttpServer, McpClient,
    McpClientError, McpFeatures, McpServer, McpTasks, Notifier, Questions, ServedCall, Session,
};

/// Re-exported: the MCP SDK the server is built on, for hosts that wire
/// their own transport.
pub use rmcp;
