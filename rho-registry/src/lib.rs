//! rho's tool registry: the tools a host offers the model, gathered from
//! sources, looked up by name, and held to account.
//!
//! A host collects tools from several places: its built-in tools, plugins,
//! MCP servers, and tools the agent wrote itself. This crate puts them
//! behind one name space ([`ToolRegistry`]) and answers the three questions
//! the agent loop asks about a tool call:
//!
//! - *Which tool is this?* [`ToolRegistry::resolve`] gives the tool
//!   ([`Resolved`]) or the reason there is none ([`Refusal`]): no tool of
//!   that name (with the nearest names the registry has, which is usually
//!   what the model meant), or a tool its source disabled.
//!   Either one is what a [`Runner`](rho_tool_core::Runner) starts the
//!   call with (`runner.start(call, resolved)`, or
//!   [`ToolRegistry::start_for`] for the look-up and the start in one),
//!   giving back the same [`CallHandle`](rho_tool_core::CallHandle) either
//!   way, so the loop awaits a refused call like any other.
//! - *What may the model call?* [`ToolRegistry::tools`] lists every enabled
//!   tool's name, description and parameter schema, sorted by name so the
//!   model's prompt stays stable from turn to turn.
//! - *How did it go?* Each source's [`SourcePolicy`] is told each call of
//!   its own tools and how it ended ([`CallEnd`](rho_tool_core::CallEnd)):
//!   a call started through the registry is given its tool's entry as the
//!   call's own [`Watch`](rho_tool_core::Watch), on any runner, so there is
//!   nothing to wire. [`Accounting`] is the ready-made policy: counts per
//!   tool, the last error, and a quarantine that takes a tool which keeps
//!   crashing or hanging out of the model's reach ([`QuarantineRule`])
//!   until the host puts it back. Calls refused for their arguments, and
//!   calls of a tool while it is quarantined, reach the source too, as
//!   refusals (never as strikes). Its [`health`](Accounting::health) is
//!   data ([`ToolHealth`]: counts by [`Outcome`](rho_tool_core::Outcome),
//!   a [`ToolState`], the last error), beside the text table.
//!
//! # Why it is built this way
//!
//! **Snapshots.** The registry's state is an immutable snapshot behind an
//! `Arc`; a look-up clones the `Arc` and reads. Thousands of concurrent
//! calls never wait on each other or on a source that is changing its
//! tools, and every change ([`SourceHandle::add_all`],
//! [`SourceHandle::set_tools`], ...) appears at once: nobody sees half of a
//! batch, or a tool before its metadata. A resolved call holds its own `Arc`
//! of the tool, so a call in flight finishes with the tool it started with,
//! whatever the source does meanwhile; calls after a removal get "no such
//! tool".
//!
//! **One name, one tool.** Two sources offering the same name is an error
//! at registration ([`RegistryError::DuplicateTool`], naming both sources),
//! never a silent precedence: the model cannot say which of two `search`
//! tools it meant, so the host must decide.
//!
//! **Hooks in the loop are the source's risk, not the call's.** The core
//! runs a call's watch in the loop, where the call starts and ends. The
//! registry's own part there is one atomic count of the calls in flight,
//! and it contains each policy's panics: a policy that panics changes
//! nothing about the call's result. A policy cannot be preempted, so one
//! that *blocks* would hold the loop: such a policy is wrapped in
//! [`OffLoop`], which turns each hook into a channel send and runs the
//! policy on a thread of its own. [`Accounting`] itself is lock-light
//! (atomics, a per-tool lock only on failures), so it runs directly.
//!
//! **A source learns how each call ended, and what the model read.** The
//! policy gets the core's whole `CallEnd`, so [`Accounting`]'s "last error"
//! is the exact text the model got.
//!
//! # Example
//!
//! A built-in tool and an agent-written one that panics; after two crashes
//! the agent's tool is quarantined and leaves the model's list.
//!
//! ```
//! use std::sync::Arc;
//! use rho::tokio::TokioExecutor;
//! use rho::{
//!     Accounting, Outcome, QuarantineRule, Refusal, Runner, Source, Tool, ToolCall, ToolContext,
//!     ToolOutput, ToolRegistry, async_trait,
//! };
//!
//! struct Echo;
//!
//! #[async_trait]
//! impl Tool for Echo {
//!     fn name(&self) -> &str { "echo" }
//!     fn description(&self) -> &str { "Repeats `text`." }
//!     async fn run(&self, args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text(args["text"].as_str().unwrap_or_default())
//!     }
//! }
//!
//! /// An agent-written tool with a bug.
//! struct Flaky;
//!
//! #[async_trait]
//! impl Tool for Flaky {
//!     fn name(&self) -> &str { "count_words" }
//!     fn description(&self) -> &str { "Counts the words of `text`." }
//!     async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         panic!("index out of bounds")
//!     }
//! }
//!
//! let registry = ToolRegistry::new();
//! registry.add_source(Source::trusted("builtin"))?.add(Echo)?;
//! let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
//! let agent = registry.add_source(Source::untrusted("agent").with_policy(accounting.clone()))?;
//! agent.add(Flaky)?;
//!
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
//! let runner = Runner::new(TokioExecutor::new(runtime.handle().clone())?);
//!
//! runtime.block_on(async {
//!     let call = |id: &str, name: &str| ToolCall::new(id, name, serde_json::json!({"text": "hi there"}));
//!     let start = |id: &str, name: &str| runner.start(call(id, name), registry.start_for(name));
//!
//!     let end = start("1", "echo").await;
//!     assert_eq!(end.result.text(), "hi there");
//!
//!     // Two crashes: the second one quarantines the tool.
//!     for id in ["2", "3"] {
//!         let end = start(id, "count_words").await;
//!         assert_eq!(end.outcome, Outcome::Crashed);
//!     }
//!     let names: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
//!     assert_eq!(names, ["echo"]);
//!     let end = start("4", "count_words").await;
//!     assert!(end.result.is_error);
//!     assert!(end.result.text().contains("disabled after 2 failures"), "{}", end.result.text());
//!
//!     // A typo gets the nearest names.
//!     match registry.resolve("ecko") {
//!         Err(Refusal::Unknown { nearest, .. }) => assert_eq!(nearest, ["echo"]),
//!         other => panic!("{other:?}"),
//!     }
//! });
//!
//! // Its source heard of every call, the refused one too.
//! let health = accounting.tool_health("count_words").expect("it was called");
//! assert_eq!((health.calls, health.crashed, health.refused), (3, 2, 1));
//! println!("{}", accounting.health_table());
//!
//! // The host puts it back.
//! assert!(accounting.reenable("count_words"));
//! assert_eq!(registry.tools().len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod accounting;
mod bound;
mod changes;
mod entry;
mod error;
mod flights;
mod handle;
mod health;
mod off_loop;
mod policy;
mod quarantine;
mod registry;
mod resolve;
mod snapshot;
mod source;
mod suggest;

pub use accounting::Accounting;
pub use bound::Bound;
pub use changes::{ChangeSubscription, ToolListNotifier};
pub use entry::ToolInfo;
pub use error::RegistryError;
pub use handle::SourceHandle;
pub use health::{HealthTable, ToolHealth, ToolState};
pub use off_loop::{Drain, OffLoop};
pub use policy::{Disabled, SourcePolicy};
pub use quarantine::{Quarantine, QuarantineRule};
pub use registry::ToolRegistry;
pub use resolve::{DisabledTool, Refusal, Resolved};
pub use source::Source;
