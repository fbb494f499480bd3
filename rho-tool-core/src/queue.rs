//! What a call waits for after its gate allowed it and before its tool
//! runs: its place in the model's order, room under a bound. [`Wait`] is
//! one such thing, [`WaitingFor`] names it.
//!
//! The waiting happens in the call's task, between the gate and the
//! running notice, so it is on no clock: the tool's timeout starts when
//! the tool starts, as it always did. Whoever orders or bounds calls (a
//! turn, a registry) hands the waits to the call through its
//! [`Start`](crate::Start); the core only waits, says so, and lets go of
//! what a wait gave (a permit) when the call ends.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::Serialize;

use crate::result::ToolResult;

/// What a queued call waits for, as its events and its end name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "for", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitingFor {
    /// An earlier call of the same message, which must end first (the
    /// model's order).
    Call {
        /// The earlier call's id.
        call_id: String,
        /// Its position in the message, from 0.
        index: usize,
    },
    /// Room under the bound on calls of one tool at once.
    Tool {
        /// The tool.
        name: String,
        /// The bound.
        limit: usize,
    },
    /// Room under the bound on calls of one source's tools at once.
    Source {
        /// The source.
        name: String,
        /// The bound.
        limit: usize,
    },
}

impl fmt::Display for WaitingFor {
    /// `call c1 (1 of the message)`, `tool `x` (at its bound of 2)`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Call { call_id, index } => {
                write!(f, "call `{call_id}` ({} of the message)", index + 1)
            }
            Self::Tool { name, limit } => {
                write!(f, "tool `{name}`, at its bound of {limit} calls at once")
            }
            Self::Source { name, limit } => {
                write!(f, "source `{name}`, at its bound of {limit} calls at once")
            }
        }
    }
}

/// What a wait gives the call while its tool runs (a permit): kept until
/// the call ends, then dropped, wherever the end is seen first.
pub(crate) type Held = Box<dyn Any + Send>;

/// The future of a [`Wait`], type erased.
type Until = Pin<Box<dyn Future<Output = Result<Held, ToolResult>> + Send>>;

/// One thing a call waits for after its gate allowed it and before its
/// tool runs ([`Start::after`](crate::Start::after)): a place in the
/// model's order, room under a bound.
///
/// Made of what it waits for, as events name it, and a future that
/// resolves when the call may go on, to either
///
/// - `Ok(permit)`: the call goes on; `permit` (any `Send` value, `()`
///   when there is nothing to hold) is kept until the call ends, however
///   it ends (its tool answered, its clock ran out, the host aborted it),
///   and dropped then; or
/// - `Err(result)`: the call ends as
///   [`Outcome::Refused`](crate::Outcome::Refused) with `result`, its
///   tool never run (a turn that stops after a failure ends the calls
///   still waiting behind it this way).
///
/// The future runs in the call's task, after the gate and before the
/// running notice: on no clock. It is the starter's own code, like the
/// gate's wiring, and should not panic (a panic ends the call as
/// crashed). The waits of one call are waited for one after another, in
/// the order they were given; give them in one order everywhere (rho: the
/// model's order, then the tool's bound, then the source's), so that no
/// two calls wait for each other.
///
/// ```
/// use rho::call::{Start, Wait, WaitingFor};
/// # fn demo(tool: std::sync::Arc<dyn rho::Tool>) {
/// let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(2));
/// let wait = Wait::new(WaitingFor::Tool { name: "fetch".into(), limit: 2 }, async move {
///     permits.acquire_owned().await.map_err(|_| rho::ToolResult::error("closed"))
/// });
/// let _start = Start::tool(tool).after(wait);
/// # }
/// ```
pub struct Wait {
    pub(crate) waiting_for: WaitingFor,
    pub(crate) until: Until,
}

impl Wait {
    /// A wait for `waiting_for`, over when `until` resolves (see the type's
    /// docs for what each answer does).
    pub fn new<F, P>(waiting_for: WaitingFor, until: F) -> Self
    where
        F: Future<Output = Result<P, ToolResult>> + Send + 'static,
        P: Send + 'static,
    {
        Self {
            waiting_for,
            until: Box::pin(async move { until.await.map(|permit| Box::new(permit) as Held) }),
        }
    }

    /// What the call waits for.
    pub fn waiting_for(&self) -> &WaitingFor {
        &self.waiting_for
    }
}

impl fmt::Debug for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("waiting_for", &self.waiting_for)
            .finish_non_exhaustive()
    }
}
