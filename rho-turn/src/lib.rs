//! A turn of tool calls: all the calls of one model message, side by side
//! where that cannot change what the model reads and in the model's order
//! where it can, with their progress live on the host's screens, their
//! results back in the order the model asked, and a way for a person to
//! stop it all.
//!
//! `rho-tool-core` says how one call runs safely (gate in the call's task,
//! clock after approval, kill at the deadline, panics contained, answers
//! made plain data). This crate is the loop side of that contract at the
//! scale of a turn:
//!
//! - [`TurnRunner::turn`] makes a [`Turn`]: each call is looked up in the
//!   [`ToolRegistry`](rho_registry::ToolRegistry), its arguments are checked
//!   against the tool's JSON Schema *before the gate* (so no one is asked to
//!   approve a malformed call; [`SchemaCache`]), and it is started on the
//!   [`Runner`](rho_tool_core::Runner), with an optional bound on how many
//!   run at once. Awaiting the turn gives one [`SessionEntry`] per call, in
//!   the model's order.
//! - Each call's tool starts in its place in the model's order (see
//!   below); waiting for it, like waiting for approval, is off the tool's
//!   clock.
//! - Events ([`TurnEvent`]: `tool_execution_start`,
//!   `tool_execution_awaiting_approval`, `tool_execution_queued`,
//!   `tool_execution_running`,
//!   `tool_execution_update`, `tool_execution_end`) go out on an
//!   [`EventBus`] as things happen.
//! - [`KeepDetails`] decides what the session keeps of each call's details;
//!   [`OutputCap`] how much text the model reads. Subscribers always get
//!   both whole.
//! - [`TurnAbort`] stops one call or the whole turn from anywhere.
//! - [`Typed`] makes a [`Tool`](rho_tool_core::Tool) of a [`TypedTool`], whose
//!   argument type gives the schema.
//! - Each call gets a `tracing` span after the OpenTelemetry GenAI
//!   conventions (`execute_tool {tool}`, `gen_ai.tool.name`,
//!   `gen_ai.tool.call.id`, `error.type` when it does not succeed).
//!
//! # The model's order
//!
//! A message like `[edit_file(a.rs), run_tests()]` means "edit, then test":
//! run side by side, the tests could read the file before it is written.
//! A turn keeps the order where it matters and nothing more, as a fair
//! read/write lock taken in the model's order would: each tool says how
//! its calls may overlap ([`Tool::concurrency`](rho_tool_core::Tool::concurrency)),
//!
//! | [`Concurrency`](rho_tool_core::Concurrency) | runs |
//! |---|---|
//! | `Shared` (default for a tool whose annotations say read-only) | side by side with the shared calls around it |
//! | `Bounded(n)` | as `Shared`, and at most `n` of the tool's calls at once, across every turn of the registry |
//! | `Exclusive` (default for any other tool) | after every earlier call of the message has ended, and before any later one starts |
//!
//! so `[read a, read b, write c, read d, read e]` runs the two reads
//! together, then the write alone, then the last two reads together. What
//! the order never holds back:
//!
//! - **The gate.** Each call's gate runs at once in its own task, so a
//!   person approving sees the whole message at once; only the tool waits
//!   for its place.
//! - **The clock.** A call's timeout starts when its tool starts. Time spent
//!   waiting (an earlier call, a [`Bound`](rho_registry::Bound) of the tool
//!   or its source) is the entry's [`queued`](SessionEntry::queued), beside
//!   [`waited`](SessionEntry::waited) for approval, and each wait that does
//!   not answer at once is a `tool_execution_queued` event naming what it
//!   waits for.
//! - **An end.** Every call still ends exactly once: an abort ends waiting
//!   calls at once with the abort text, and a call that fails does not stop
//!   the later ones (the model reads each result) unless the host asks for
//!   it ([`TurnRunner::with_stop_on_failure`]), in which case each later
//!   call is answered "not run" naming the failed one.
//!
//! A host sets a tool's concurrency per name
//! ([`TurnRunner::with_concurrency`]) or turns the order off
//! ([`TurnRunner::with_ordering`]) for today's every-call-side-by-side.
//!
//! ## Meeting the model APIs
//!
//! The model APIs ask every tool call of a message to be answered, in one
//! follow-up, before the model goes on; a turn answers every call, in the
//! message's order, whatever ended it, so the order relation changes when
//! tools run and never which calls are answered. The APIs also let a
//! request say whether the model may send several calls in one message
//! (`parallel_tool_calls` for OpenAI, `disable_parallel_tool_use` for
//! Anthropic). The turn keeps the order whatever the switch says, so
//! leaving it on is always safe; [`TurnRunner::runs_side_by_side`] tells
//! whether a set of tools would all run side by side, for a host that
//! would rather have the model read each exclusive call's result before
//! it sends the next.
//!
//! # Approvals that end and approvals that are remembered
//!
//! A call the gate asks about goes to the runner's approver, in the
//! call's task, off the clock. Two things keep a person's answers from
//! costing more than they must:
//!
//! - **A deadline.** [`TurnRunner::with_approval_deadline`]: a question
//!   nobody answers in time is denied, fail-closed, and counted as denied,
//!   never as a strike against the tool.
//! - **"Allow for the rest of this session."** An approver may answer
//!   [`Verdict::Remember`](rho_tool_core::Verdict::Remember) with an
//!   [`Allowance`](rho_tool_core::Allowance): the whole tool, these
//!   arguments, or (for a shell) a command prefix, matched on the words
//!   bash would run, so `git status; rm -rf ~` is not `git status`. The
//!   turn runner keeps them ([`TurnRunner::allowances`]: list, revoke,
//!   clear, shared by its clones) and allows a call one covers without
//!   asking, whichever gate asked (an
//!   [`AnnotationGate`](rho_tool_core::AnnotationGate), the MCP proxy's
//!   policy, your own); a gate's denial still denies. An allowance covers
//!   a destructive tool (a shell, any untrusted tool) only as the host
//!   allows ([`DestructiveTools`](rho_tool_core::DestructiveTools), set on
//!   the [`Allowances`](rho_tool_core::Allowances) given to
//!   [`TurnRunner::with_allowances`]).
//!
//! # Why a turn is one future
//!
//! A turn is a plain future that polls its calls' handles itself, each
//! with a waker of its own (so only calls with news are polled), instead of
//! a task per call that reports over channels. It needs nothing of the
//! runtime beyond the core's [`Executor`](rho_tool_core::Executor), so the
//! same turn runs on tokio, on smol or on the host's own executor; the
//! calls' tasks still run in parallel on the executor, and the loop stays
//! the one place where results and events are put in order.
//!
//! # Delivery guarantee of subscribers
//!
//! Publishing an event only puts it in each subscriber's own buffer; the
//! turn never waits for a subscriber. A callback subscriber runs on a
//! thread of its own; a stream subscriber is polled by the host. So a slow,
//! stuck or panicking subscriber never blocks the turn and never costs
//! another subscriber an event. Start, approval, running and end events are
//! never dropped; updates are kept up to the buffer size per subscriber and
//! then dropped oldest first, with a lag count. A panicking callback is
//! contained on its thread, counted, and keeps getting later events. See
//! [`EventBus`](EventBus#delivery-guarantee).
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use rho::tokio::TokioExecutor;
//! use rho::{
//!     Outcome, Source, ToolCall, ToolContext, ToolOutput, ToolRegistry, TurnEvent, TurnRunner, Typed,
//!     TypedTool, async_trait,
//! };
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct AddArgs { a: i64, b: i64 }
//!
//! struct Add;
//!
//! #[async_trait]
//! impl TypedTool for Add {
//!     type Args = AddArgs;
//!     fn name(&self) -> &str { "add" }
//!     fn description(&self) -> &str { "Adds `a` and `b`." }
//!     async fn run(&self, args: AddArgs, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text((args.a + args.b).to_string())
//!     }
//! }
//!
//! let registry = ToolRegistry::new();
//! registry.add_source(Source::trusted("builtin"))?.add(Typed::new(Add).into_arc())?;
//!
//! let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
//! let turns = TurnRunner::new(TokioExecutor::new(runtime.handle().clone())?, registry);
//!
//! // A screen: told of every end as it happens, on a thread of its own.
//! let (tx, ends) = std::sync::mpsc::channel();
//! turns.events().subscribe(move |event: &TurnEvent| {
//!     if let TurnEvent::ToolExecutionEnd(end) = event {
//!         let _ = tx.send((end.call_id().to_owned(), end.outcome()));
//!     }
//! })?;
//!
//! let entries = runtime.block_on(turns.turn([
//!     ToolCall::new("c1", "add", json!({ "a": 2, "b": 3 })),
//!     ToolCall::new("c2", "add", json!({ "a": "two", "b": 3 })), // refused before its gate
//!     ToolCall::new("c3", "sub", json!({})),                     // no such tool
//! ]));
//!
//! assert_eq!(entries[0].text(), "5");
//! assert_eq!(entries[1].outcome, Outcome::Refused);
//! assert!(entries[1].text().contains("at `/a`: \"two\" is not of type \"integer\""));
//! assert!(entries[2].text().contains("no such tool `sub`"));
//! for _ in 0..3 {
//!     let (id, outcome) = ends.recv_timeout(std::time::Duration::from_secs(5))?;
//!     println!("{id}: {outcome}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: bus, stream, subscriber — the event bus and its two kinds of
// subscriber: the bus makes each, and each reaches back into the bus's
// shared state to unsubscribe when it is dropped.
// One concept: runner, turn — a `TurnRunner` is what the turns of a session
// share: it makes each `Turn`, and the turn reads the runner's `Config` as
// it runs.
mod abort;
mod bus;
mod cap;
mod depth;
mod entry;
mod event;
mod keep;
mod mailbox;
mod nested;
mod order;
mod ready;
mod report;
mod runner;
mod span;
mod stop;
mod stream;
mod subscriber;
mod turn;
mod typed;
mod validate;

pub use abort::TurnAbort;
pub use bus::{EventBus, SubscriberId};
pub use cap::OutputCap;
pub use entry::SessionEntry;
pub use event::{
    CallRef, ExecutionAwaitingApproval, ExecutionEnd, ExecutionQueued, ExecutionRunning,
    ExecutionStart, ExecutionUpdate, InTurn, TurnEvent, TurnId,
};
pub use keep::{KeepDetails, KeepFn, json_size};
pub use runner::{TurnRunner, WeakTurnRunner};
pub use stream::EventStream;
pub use subscriber::{Subscriber, Subscription};
pub use turn::Turn;
pub use typed::{Typed, TypedTool};
pub use validate::{ArgumentError, Failure, SchemaCache};

/// Re-exported so typed tools derive `JsonSchema` from the same `schemars`.
pub use schemars;
