//! The contract of one tool call, independent of any async runtime.
//!
//! An agent loop asks the model for a turn, gets tool calls back, runs them
//! and hands the results to the model. This crate says how one call runs so
//! that no tool can hurt the loop:
//!
//! 1. [`Runner::start`] spawns the call as one task on an [`Executor`]. Nothing
//!    that happens in the task (a panic, a kill, a `Drop` that panics)
//!    reaches the loop as an unwind.
//! 2. The runner's [`Watch`] and the call's own (its tool's source, which
//!    a registry gives through [`Start::watched_by`]) are told the task.
//! 3. Inside the task the [`Gate`] runs first; it may wait as long as it
//!    likes, no clock runs, and the loop goes on with other calls. A denial
//!    ends the call with an error result naming the reason; a gate that
//!    asks ([`Verdict::Ask`]) hands the call to the runner's async
//!    [`Approver`], in the same task. [`AnnotationGate`] is a ready gate:
//!    it decides by the tool's [`ToolAnnotations`].
//! 4. Once the gate allows, the call waits for what its starter asked it
//!    to wait for ([`Wait`]: its place in the model's order, room under a
//!    bound), still on no clock; then the task tells the loop "running",
//!    and only then does the [`CallHandle`] start the tool's timeout clock.
//! 5. The [`Tool`] runs; its [`ToolOutput`] is normalised into a
//!    [`ToolResult`], with details made plain data inside the task.
//! 6. A panic of the gate or the tool (any payload type) is caught in the
//!    task and turned into text; only a `String` or `&str` payload is read.
//! 7. At the deadline the handle kills the task and returns the timeout
//!    text; an executor that went away gives `exit_text`'s text.
//! 8. The loop, the watches and any screen get one record of the end,
//!    [`CallEnd`].
//!
//! # Why the core knows no runtime
//!
//! Hosts run on tokio, on smol, or on their own executor. The contract above
//! is the same on all of them, so it lives here once, in rho's own wrapper
//! around the task body; an executor crate only maps its runtime's spawn,
//! abort, join and timer onto [`Executor`] and [`TaskHandle`]. A tool and a
//! gate written once run unchanged on any of them.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use rho::{Executor, Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
//!
//! struct Add;
//!
//! #[async_trait]
//! impl Tool for Add {
//!     fn name(&self) -> &str { "add" }
//!     fn description(&self) -> &str { "Adds `a` and `b`." }
//!     async fn run(&self, args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         match (args["a"].as_i64(), args["b"].as_i64()) {
//!             (Some(a), Some(b)) => ToolOutput::text((a + b).to_string())
//!                 .with_details(serde_json::json!({ "a": a, "b": b })),
//!             _ => ToolOutput::error("`a` and `b` must be integers"),
//!         }
//!     }
//! }
//!
//! /// Runs one call on whatever executor the host uses.
//! async fn add_two_and_three<E: Executor>(executor: E) -> String {
//!     let runner = Runner::new(executor);
//!     let call = ToolCall::new("call-1", "add", serde_json::json!({ "a": 2, "b": 3 }));
//!     let end = runner.start(call, Arc::new(Add)).await;
//!     assert_eq!(end.outcome, Outcome::Succeeded);
//!     end.result.text()
//! }
//! ```

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: handle, notice, runner — one call's two sides and what they
// share: the runner starts the task and gives the loop its handle, the
// notice is the state both hold (the runner's parts among it), and the
// handle reads the task's end as the runner's task reports it (`TaskEnd`).
// One concept: allowance, gate — approval: a gate's verdict may remember an
// allowance, and an allowance is cut from the request it answers.
mod allowance;
pub mod annotation_gate;
mod annotations;
mod call;
mod concurrency;
mod contain;
mod content;
mod end;
mod executor;
mod extensions;
mod gate;
mod handle;
mod notice;
mod output;
mod queue;
mod result;
mod runner;
mod shared;
mod start;
mod tool;
mod watch;

pub use allowance::{Allowance, AllowanceId, AllowanceScope, Allowances, DestructiveTools};
pub use annotation_gate::AnnotationGate;
pub use annotations::ToolAnnotations;
pub use call::{TaskId, ToolCall};
pub use concurrency::Concurrency;
pub use content::{Audio, Content, EmbeddedResource, Image, ResourceContents, ResourceLink};
pub use end::{AwaitingApproval, CallEnd, CallEvent, Outcome, Queued, Running, Update};
pub use executor::{Executor, Joined, TaskHandle};
pub use gate::{AllowAll, ApprovalRequest, Approver, Gate, Verdict};
pub use handle::{AbortHandle, CallHandle};
pub use output::{AnswerError, ToolOutput};
pub use queue::{Wait, WaitingFor};
pub use result::ToolResult;
pub use runner::Runner;
pub use shared::IntoShared;
pub use start::Start;
pub use tool::{ClockPause, Tool, ToolContext};
pub use watch::Watch;

/// Re-exported so tool authors use the same `async_trait` as the traits.
pub use async_trait::async_trait;
/// Re-exported: the plain data, limits and texts of `rho-untrusted`.
pub use rho_untrusted as untrusted;
