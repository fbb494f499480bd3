//! What a source is told about its tools' calls, and how it disables a tool.

use std::fmt;
use std::time::Duration;

use rho_tool_core::untrusted::{Exit, exit_text};
use rho_tool_core::{Outcome, TaskId, ToolResult};

/// A source's side of the watch: told each task of the source's tools and
/// how it ended, and asked whether a tool is disabled.
///
/// [`Accounting`](crate::Accounting) is the ready-made implementation
/// (counts and quarantine); a source with its own rules implements this
/// trait, possibly by wrapping an `Accounting`.
///
/// # Contract
///
/// - [`started`](SourcePolicy::started) and [`ended`](SourcePolicy::ended)
///   run in the agent loop, while it starts or finishes a call (that is
///   where the core's [`Watch`](rho_tool_core::Watch) runs). They must be
///   quick and must not block: a slow hook delays every call the loop
///   handles. Wrap a policy that needs to block (write to a database, send a
///   message) in [`Queued`](crate::Queued), which moves the hooks onto a
///   thread of their own.
/// - [`disabled`](SourcePolicy::disabled) runs at every look-up of one of
///   the source's tools and for each of them when the registry lists tools:
///   it must be quicker still (an atomic load, a short lock).
/// - A panic in any of them is contained by the registry and changes nothing
///   about the call: the call runs, ends and reaches the model as if the
///   hook had returned. A panicking `disabled` counts as "not disabled".
/// - Each task that was `started` is `ended` exactly once, even when the
///   tool was removed from the registry in between.
pub trait SourcePolicy: Send + Sync {
    /// A call of `tool` is about to run in `task` (its gate has not run yet).
    fn started(&self, tool: &str, task: TaskId) {
        let _ = (tool, task);
    }

    /// A call of one of the source's tools ended.
    fn ended(&self, end: &Ended<'_>) {
        let _ = end;
    }

    /// Whether `tool` is disabled now, and why. A disabled tool leaves the
    /// model's tool list, and its calls get an error result built from the
    /// answer instead of running.
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        let _ = tool;
        None
    }
}

/// How one call of a source's tool ended, as its source is told.
///
/// The class of the end and, when the watch handed it over, the result the
/// model got; [`describe`](Ended::describe) gives it in words.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Ended<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The task the call ran in.
    pub task: TaskId,
    /// The class of the end.
    pub outcome: Outcome,
    /// The tool's timeout when the call started (for the timeout text).
    pub timeout: Duration,
    /// The result the model got, when the watch was given it.
    pub result: Option<&'a ToolResult>,
}

impl<'a> Ended<'a> {
    /// The end of `tool`'s call in `task`, with `outcome`.
    pub fn new(tool: &'a str, task: TaskId, outcome: Outcome, timeout: Duration) -> Self {
        Self {
            tool,
            task,
            outcome,
            timeout,
            result: None,
        }
    }

    /// The same end, with the result the model got.
    pub fn with_result(mut self, result: &'a ToolResult) -> Self {
        self.result = Some(result);
        self
    }

    /// The end in words, for a health screen's "last error".
    ///
    /// The text the model got when the end carries the result; otherwise a
    /// summary of the class (a timeout, an abort and a lost executor give
    /// the model's text either way).
    pub fn describe(&self) -> String {
        let tool = self.tool;
        if let Some(result) = self.result {
            return result.text();
        }
        match self.outcome {
            Outcome::Succeeded => format!("tool `{tool}` succeeded"),
            Outcome::Failed => format!("tool `{tool}` answered with an error"),
            Outcome::Denied => format!("tool `{tool}` was not run: the gate denied it"),
            Outcome::Crashed => format!("tool `{tool}` crashed (it panicked)"),
            Outcome::TimedOut => exit_text(tool, Exit::TimedOut(self.timeout)),
            Outcome::Aborted => exit_text(tool, Exit::Aborted),
            Outcome::ExecutorGone => exit_text(tool, Exit::ExecutorGone),
            other => format!("tool `{tool}` ended: {other}"),
        }
    }
}

/// Why a source disabled one of its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Disabled {
    /// Why, in words for the model (and the host's screens).
    pub reason: String,
    /// After how many failures the tool was disabled (0 when it was not
    /// for failures).
    pub failures: u32,
}

impl Disabled {
    /// A tool disabled after `failures` failures, for `reason`.
    pub fn new(reason: impl Into<String>, failures: u32) -> Self {
        Self {
            reason: reason.into(),
            failures,
        }
    }
}

impl fmt::Display for Disabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.failures {
            0 => write!(f, "disabled: {}", self.reason),
            1 => write!(f, "disabled after 1 failure: {}", self.reason),
            n => write!(f, "disabled after {n} failures: {}", self.reason),
        }
    }
}
