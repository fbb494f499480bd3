//! The answer of a look-up: a tool to start, or why there is none.

use std::fmt;
use std::sync::Arc;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{CallHandle, Executor, Runner, Tool, ToolCall, ToolResult, Watch};

use crate::entry::{Entry, ToolInfo};
use crate::policy::Disabled;

/// A tool the registry found for a call, ready to start.
///
/// It holds its own `Arc` of the tool: a call started from it runs this
/// tool even if the source removes or swaps it meanwhile.
#[derive(Debug, Clone)]
pub struct Resolved {
    entry: Arc<Entry>,
}

impl Resolved {
    pub(crate) fn new(entry: Arc<Entry>) -> Self {
        Self { entry }
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.entry.tool
    }

    /// What the model is told about it, and its source. Shared with the
    /// registry: the same `Arc` for as long as the tool stays registered
    /// (a cache may key on it).
    pub fn info(&self) -> &Arc<ToolInfo> {
        &self.entry.info
    }

    /// The watch a call of this tool is given: the tool's own entry, which
    /// tells its source (`None` when the source has no policy, so there is
    /// nobody to tell). For a host that starts the tool's calls itself with
    /// [`Runner::start_watched`].
    pub fn watch(&self) -> Option<Arc<dyn Watch>> {
        self.entry.call_watch()
    }

    /// Starts `call` of the tool on `runner`.
    ///
    /// The tool's source is told of the call (when it has a policy), on any
    /// runner: this very tool's source, even if the name has moved to
    /// another source by the time the call starts.
    pub fn start<E: Executor>(self, runner: &Runner<E>, call: ToolCall) -> CallHandle<E> {
        let watch = self.entry.call_watch();
        runner.start_watched(call, self.entry.tool.clone(), watch)
    }

    /// A call of the tool refused with `result` before it ran (its
    /// arguments do not fit its schema, say): it ends as
    /// [`Outcome::Refused`](rho_tool_core::Outcome::Refused), and the tool's
    /// source is told, so it learns that the model sends its tool bad
    /// calls. A refusal never counts against the tool.
    pub fn refuse<E: Executor>(
        self,
        runner: &Runner<E>,
        call: ToolCall,
        result: ToolResult,
    ) -> CallHandle<E> {
        runner.refuse_watched(call, result, self.entry.call_watch())
    }
}

/// Why a call gets no tool: the error result the model gets instead.
///
/// Its `Display` is the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No tool has this name (it never had, or it was removed).
    Unknown {
        /// The name the call asked for.
        name: String,
        /// The nearest names the registry has, best first (at most three;
        /// disabled tools are not suggested).
        nearest: Vec<String>,
    },
    /// The tool's source disabled it (a quarantine, for example).
    Disabled {
        /// The tool's name.
        name: String,
        /// The source that disabled it.
        source_name: String,
        /// Why, and after how many failures.
        disabled: Disabled,
    },
}

impl Refusal {
    /// The tool name the call asked for.
    pub fn name(&self) -> &str {
        match self {
            Refusal::Unknown { name, .. } | Refusal::Disabled { name, .. } => name,
        }
    }

    /// The error result for the model, with details for host screens
    /// (`{"refused": "unknown_tool" | "disabled", ...}`).
    pub fn to_result(&self) -> ToolResult {
        ToolResult::error(self.to_string()).with_details(self.details())
    }

    /// An already-finished call of `call` ending with this refusal, so the
    /// host awaits it like any other call.
    ///
    /// It ends as [`Outcome::Refused`] with [`to_result`](Refusal::to_result),
    /// through [`Runner::refuse`]: not checked by the runner's gate (there
    /// is nothing to approve). The runner's watch is told; no source is
    /// (there is no such tool, or its source itself refused it).
    ///
    /// [`Outcome::Refused`]: rho_tool_core::Outcome::Refused
    pub fn start<E: Executor>(&self, runner: &Runner<E>, call: ToolCall) -> CallHandle<E> {
        runner.refuse(call, self.to_result())
    }

    fn details(&self) -> Plain {
        let json = match self {
            Refusal::Unknown { name, nearest } => serde_json::json!({
                "refused": "unknown_tool",
                "tool": name,
                "nearest": nearest,
            }),
            Refusal::Disabled {
                name,
                source_name,
                disabled,
            } => serde_json::json!({
                "refused": "disabled",
                "tool": name,
                "source": source_name,
                "failures": disabled.failures,
                "reason": disabled.reason,
            }),
        };
        Plain::from(json)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unknown { name, nearest } => {
                write!(f, "no such tool `{name}`")?;
                match nearest.as_slice() {
                    [] => write!(f, " (no tool has a similar name)"),
                    [only] => write!(f, "; the nearest tool is `{only}`"),
                    [first, rest @ ..] => {
                        write!(f, "; the nearest tools are `{first}`")?;
                        for other in rest {
                            write!(f, ", `{other}`")?;
                        }
                        Ok(())
                    }
                }
            }
            Refusal::Disabled { name, disabled, .. } => write!(
                f,
                "tool `{name}` was {disabled}; it will not run until the host re-enables it"
            ),
        }
    }
}

impl std::error::Error for Refusal {}
