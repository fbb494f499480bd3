//! MCP servers imported as sources of a rho registry.
//!
//! An agent host gets most of its tools from MCP servers: other people's
//! processes, which hang, crash, flood and die. [`McpSource`] makes one
//! such server a source of a [`ToolRegistry`](rho_registry::ToolRegistry),
//! untrusted, so that each of its tools is a rho tool with rho's contract:
//!
//! - **Its tools, as it lists them.** Name (with an optional prefix),
//!   description, input schema, output schema and annotations (hints that
//!   are the server's claims: the tools are untrusted, and a gate such as
//!   [`AnnotationGate`](rho_tool_core::AnnotationGate) does not believe
//!   them). `notifications/tools/list_changed` lists them again, and so
//!   does a restart.
//! - **rho's deadline.** Every call has the tool's rho timeout (the
//!   builder's, or two minutes: `<dyn Tool>::DEFAULT_TIMEOUT`),
//!   whatever the server and the SDK would wait. At the deadline or a host
//!   abort the call ends at once and the server is sent
//!   `notifications/cancelled` for it; the server keeps serving the
//!   others.
//! - **Answers whole.** A `tools/call` result becomes a
//!   [`ToolResult`](rho_tool_core::ToolResult) part for part, in the order
//!   sent: text, images and audio with their bytes, resource links,
//!   embedded resources with their text or bytes, each part's
//!   `annotations` and `_meta` as its
//!   [`extras`](rho_tool_core::ToolResult::extras); `isError` as sent
//!   (an error keeps its images); `structuredContent` as the details.
//!   Served on (the proxy), it is the answer the server gave. Bytes are
//!   kept up to the message limit ([`McpSource::DEFAULT_MAX_MESSAGE`] unless set),
//!   past which the call ends with an error naming the limit. Progress
//!   notifications become partial results
//!   ([`ToolContext::update`](rho_tool_core::ToolContext::update)).
//! - **A death is a crash of every call on it.** A stdio server runs as a
//!   [`ChildGroup`](rho_process::ChildGroup): a process group of its own,
//!   reaped by a thread, watched. When it exits, is killed, or closes its
//!   stdout, every call in flight on it ends at that moment as
//!   [`Outcome::Crashed`](rho_tool_core::Outcome::Crashed) (so each is
//!   counted against its tool), with how it died and the end of its stderr
//!   in the text. The next call starts it again, after a backoff that
//!   doubles with each death in a row; a server that keeps dying (three
//!   deaths or failed starts within five minutes, by default) is
//!   quarantined as a whole: its tools leave the model's list until the
//!   host calls [`McpSource::reenable`].
//! - **Over HTTP too.** [`McpSource::http`] imports a server at a
//!   streamable HTTP endpoint (an `https://` one with the crate's `https`
//!   feature), with a bearer token or headers if it needs them, or
//!   behind OAuth 2.1 ([`OAuth`], feature `oauth`, on by default: rho
//!   registers, has the host's [`Authorize`] send its user to approve,
//!   and keeps and refreshes the token; a `401` or a `403` for a missing
//!   scope later asks again, and the refused request is sent once more).
//!   Its
//!   "death" is a request that cannot reach it (nothing listens, the
//!   connection or an answer's stream broke): the calls in flight end as
//!   crashed, the next call
//!   connects again after the backoff, and an endpoint that stays down is
//!   quarantined as a whole, as a stdio server that keeps dying is. A
//!   call the server refuses in its own answer crashes alone.
//! - **Either revision.** A server is greeted with `initialize`
//!   (2025-11-25) unless the builder's [`Handshake`] says otherwise:
//!   [`Handshake::Discover`] speaks 2026-07-28, where there is no handshake
//!   and every request carries its revision and capabilities (over HTTP
//!   also as headers, a tool's `x-mcp-header` arguments included, so a
//!   load balancer can route on them, and what the host answers for the
//!   call: [`Answerer::capabilities_for`]); [`Handshake::Either`] asks
//!   first and falls back. Such a server announces only on a stream asked
//!   of it, so the source listens (`subscriptions/listen`) for its tool
//!   list and for what its features follow.
//! - **Tasks, followed.** To a server on 2026-07-28 the import says it
//!   takes tasks (the tasks extension): a call the server answers with a
//!   task is followed to its end (`tasks/get` at the server's pace, its
//!   questions answered as below through `tasks/update`) and ends with the
//!   task's result, as any call does; a call given up cancels its task
//!   (`tasks/cancel`), so the server's work stops too. A tool the server
//!   serves only as a task runs like the others. So does one a server on
//!   2025-11-25 runs only as a task (that revision's tasks): its call is
//!   made a task (`tools/call` with `task`, then `tasks/result`), known
//!   from the listing over stdio and from the server's refusal of a
//!   plain call (JSON-RPC's -32601) otherwise.
//! - **Its questions, answered by the host.** What the server asks its
//!   client while a call runs (the user through elicitation, the model
//!   through sampling, the roots), as a request of its own or, on
//!   2026-07-28, as an input-required result (the call is then sent again
//!   with the answers and the server's state), goes to the host's
//!   [`Answerer`], with the call's clock held; [`AskTheClient`] passes it
//!   on to the client of the served call (a proxy). Without an answerer
//!   the server is offered none of them. A server on 2026-07-28 that
//!   refuses a call for what the call's client lacks (MCP's
//!   missing-capability error) is heard by the answerer too
//!   ([`Answerer::missing_capabilities`]), which a proxy passes on.
//! - **The rest of what it serves, served on.** [`McpSource::features`]
//!   is an [`McpFeatures`](crate::serve::McpFeatures) that forwards
//!   resources, prompts and completions to the server, and announces what
//!   the server announces (log messages, its lists changed, resource
//!   updates), so a host that serves its imports (the proxy) passes them
//!   through. A client before 2026-07-28 whom a server that speaks both
//!   revisions could not ask the older way, or any such client of a
//!   source served to many (the proxy over HTTP), gets a connection of
//!   its own as it initializes, declaring what it offered: its calls and
//!   requests go there, and what the server announces there reaches it
//!   alone, so it has the session it would have had directly.
//! - **Garbage is a clear error, in bounded memory.** A line on stdout
//!   that is not an MCP message, a line longer than the cap
//!   ([`McpSource::DEFAULT_MAX_MESSAGE`] unless set), or an answer to a request that
//!   was never sent ends the connection: the server is killed and its
//!   calls crash with a text quoting what it wrote. Nothing past the cap is
//!   held, and no other server notices.
//! - **Any executor.** rmcp needs tokio, so each source runs it on a small
//!   current-thread runtime of its own, on its own thread. A tool's future
//!   only waits on channels, so imported tools run unchanged in a tokio
//!   host and in a smol host. A tokio host may hand its own runtime
//!   instead ([`McpSourceBuilder::on_tokio_runtime`]), which spares each
//!   call two turns between threads.
//! - **Gone with the source.** Dropping the [`McpSource`], closing it, or
//!   the host removing the source from the registry kills the server's
//!   whole process group. When the host process exits however it exits,
//!   the server's stdin closes, which is how MCP tells a stdio server to
//!   end (nothing can kill a group after its host is gone).
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use rho::tokio::{Runner, TokioExecutor};
//! use rho::mcp::import::McpSource;
//! use rho::{ToolCall, ToolRegistry};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolRegistry::new();
//! let everything = McpSource::stdio("everything", "npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .timeout(Duration::from_secs(30))
//!     .connect(&registry)
//!     .await?;
//! println!("{:?}", everything.tools());
//!
//! let runner = Runner::new(TokioExecutor::current()?);
//! let call = ToolCall::new("1", "echo", serde_json::json!({ "message": "hi" }));
//! let end = runner.start(call, registry.start_for("echo")).await;
//! println!("{}", end.result.text());
//! # Ok(())
//! # }
//! ```
//!
//! A server at an HTTP endpoint, beside it in the same registry (each
//! source's tools under a prefix of its own, so two `echo`s can live
//! together):
//!
//! ```no_run
//! # use rho::mcp::import::McpSource;
//! # use rho::ToolRegistry;
//! # async fn example(registry: &ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//! let remote = McpSource::http("remote", "http://127.0.0.1:3001/mcp")
//!     .bearer_token(std::env::var("REMOTE_MCP_TOKEN")?)
//!     .prefix("remote_")
//!     .connect(registry)
//!     .await?;
//! assert!(remote.server_pid().is_none(), "not a process of this host's");
//! # Ok(())
//! # }
//! ```
//!
//! One concept a module: `source` is the public face, `server` the
//! connection a source keeps (started on demand, restarted), `connection`
//! one connection of either kind and its death, `stdio` a child process
//! and its watcher, `http` an endpoint, `transport` rmcp's transport over
//! a child's pipes, strict about what the child writes, `progress` each
//! call's progress routed as it is read, `handler` rmcp's client side
//! (late progress, list changes and other announcements, questions),
//! `listen` what a server on 2026-07-28 announces on the stream asked of it,
//! `features` the server's resources, prompts and completions served on,
//! `lanes` the connections opened for one client each, `asking` the
//! deadline a question outside any call holds,
//! `call` one
//! `tools/call`, `answer` its result as rho's, `tool` an
//! imported tool, `health` deaths, backoff and the server's quarantine,
//! `policy` the source's policy, `runtime` where its tasks run.

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: handler, listen — what a server says unasked: the handler
// hears it on the connection, `listen` on the streams a 2026-07-28 client
// opens, and each hands on the other's record (`Heard`, `Followed`).
// One concept: connection, http, stdio — one connection of either kind:
// `connection` shakes hands with and watches the peer that `http` or
// `stdio` starts, and both kinds report a death in the connection's terms.
// One concept: call, server, tool — an imported tool's call: the tool's
// `run` is `call` on its server, the server keeps its tools (`ToolSpec`,
// `ImportedTool`), and a call needs the server's live connection.
// One concept: features, source — a source and what it serves on beside its
// tools: an `McpSource` hands out its server's features (`Forwarded`), which
// reach the server on the source's runtime (`source::on_runtime`).
mod answer;
mod answering;
mod asking;
mod call;
mod connection;
mod error;
mod features;
mod handler;
mod handshake;
mod health;
mod http;
mod lanes;
mod listed;
mod listen;
#[cfg(feature = "oauth")]
mod oauth;
mod policy;
mod progress;
mod runtime;
mod server;
mod source;
mod stdio;
mod task_support;
mod tool;
mod transport;

pub use answering::{Answerer, AskTheClient};
pub use error::ImportError;
pub use handshake::Handshake;
pub use health::Backoff;
pub(crate) use http::HttpSpec;
#[cfg(feature = "oauth")]
pub use oauth::{Authorize, OAuth};
pub use source::{Http, McpSource, McpSourceBuilder, Stdio};
