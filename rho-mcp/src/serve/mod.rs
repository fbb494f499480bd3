//! Serving a rho registry to MCP clients.
//!
//! One concept a module: `server` holds what every session shares,
//! `session` is rmcp's handler of one connection, `listing` answers
//! `tools/list`, `call` runs `tools/call` as a rho call, `follow`
//! follows it to its end (through its questions, or as a task: `tasks`),
//! `result` maps its end to MCP's result, `progress` turns partial
//! results into progress notifications, `list_changed` tells clients when
//! the list changes, `closing` tells calls that their client has gone,
//! `contain` answers a request whose handling panicked, `client` is the
//! client a served call came from, handed to its tool, `input` asks
//! clients on 2026-07-28 and later through input-required results,
//! `features` serves a host's resources, prompts and completions beside
//! the tools, `older` puts their questions to a client before 2026-07-28,
//! `notify` passes on what those features tell the clients,
//! `elicit` asks the client's user to approve a call,
//! `observe` reports each call's end (an audit log's hook), `stdio`
//! serves over a byte stream on rmcp's transport (`stdio_fd` reading
//! stdin and writing stdout on the reactor) and `http` streamable HTTP.
//! Every message goes through rmcp's service.

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: call, server, session, tasks — one served call over the
// server's shared state: that state (`server::Shared`) holds the calls parked
// for their clients' answers and the task table; a session hands each
// `tools/call` to `call`, which runs it on that state and may turn it into a
// task; a task ends and is observed as a call does (`call::finish`).
// One concept: client, input — how a served call asks its client: an
// `McpClient` asks by request or through input-required results (`input`),
// and both fail with the client's error (`McpClientError`).
mod call;
mod client;
mod closing;
mod contain;
mod elicit;
mod features;
mod follow;
mod http;
mod input;
mod list_changed;
mod listing;
mod notify;
mod observe;
mod older;
mod progress;
mod result;
mod server;
mod session;
mod stamp;
mod stdio;
#[cfg(unix)]
mod stdio_fd;
mod tasks;

pub(crate) use call::is_modern;
pub(crate) use client::ClientSession;
pub(crate) use client::severity;
pub use client::{McpClient, McpClientError};
pub use elicit::ElicitationApprover;
pub use features::{McpFeatures, ToolListing, ToolShown};
pub use http::{HttpOptions, HttpServer};
pub use input::{Answer, Answers, Questions};
pub(crate) use notify::Audience;
pub use notify::Notifier;
pub use observe::{CallObserver, ServedCall};
pub(crate) use older::QUESTION_ROUNDS;
pub use server::McpServer;
pub use session::Session;
pub(crate) use stamp::SERVER_INFO;
pub use tasks::McpTasks;
