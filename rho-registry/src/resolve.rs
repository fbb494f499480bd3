//! The answer of a look-up: a tool to start, or why there is none.

use std::fmt;
use std::sync::Arc;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{Start, Tool, ToolResult, Wait, Watch};

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

    /// The tool, to read (its name, timeout, annotations...).
    ///
    /// A borrow, not the `Arc`: a call of a registered tool starts with the
    /// `Resolved` itself (`runner.start(call, resolved)`) or
    /// [`refused`](Resolved::refused), which tell its source. Starting it
    /// on a runner from here does not compile:
    ///
    /// ```compile_fail,E0277
    /// # use rho::registry::Resolved;
    /// # use rho::{Executor, Runner, ToolCall};
    /// fn sidestep<E: Executor>(resolved: &Resolved, runner: &Runner<E>, call: ToolCall) {
    ///     runner.start(call, resolved.tool().clone()); // the source would never hear of it
    /// }
    /// ```
    pub fn tool(&self) -> &dyn Tool {
        self.entry.tool.as_ref()
    }

    /// The tool itself, for a call its source is **not** told of: no
    /// counts, no quarantine, no refusals, whatever the source's policy.
    ///
    /// For a host that runs the tool outside a [`Runner`](rho_tool_core::Runner). A call started
    /// on a runner with this `Arc` alone is invisible to the tool's source:
    /// a tool that keeps crashing is never quarantined. Start the call with
    /// the `Resolved` itself (`runner.start(call, resolved)`) unless that
    /// is what you mean.
    pub fn unaccounted_tool(&self) -> Arc<dyn Tool> {
        self.entry.tool.clone()
    }

    /// What the model is told about it, and its source. Shared with the
    /// registry: the same `Arc` for as long as the tool stays registered
    /// (a cache may key on it).
    pub fn info(&self) -> &Arc<ToolInfo> {
        &self.entry.info
    }

    /// The watch a call of this tool is given: the tool's own entry, which
    /// tells its source (`None` when the source has no policy, so there is
    /// nobody to tell). For a host that builds the call's [`Start`] itself
    /// ([`Start::maybe_watched_by`]).
    pub fn watch(&self) -> Option<Arc<dyn Watch>> {
        self.entry.call_watch()
    }

    /// A call of the tool refused with `result` before it ran (its
    /// arguments do not fit its schema, say), for
    /// [`Runner::start`](rho_tool_core::Runner::start): it ends as
    /// [`Outcome::Refused`](rho_tool_core::Outcome::Refused), and the tool's
    /// source is told, so it learns that the model sends its tool bad
    /// calls. A refusal never counts against the tool.
    pub fn refused(self, result: ToolResult) -> Start {
        Start::refused(result).maybe_watched_by(self.entry.call_watch())
    }
}

impl Resolved {
    /// The call's [`Start`] (as `Start::from(resolved)`), waiting first
    /// for `waits` and only then for the bounds of the tool and its
    /// source.
    ///
    /// For a starter that orders calls itself (a turn: the model's order):
    /// a call waits for its place before it takes room under a bound, so
    /// a call held back by order never holds room that a call free to run
    /// is waiting for.
    pub fn start_after(self, waits: impl IntoIterator<Item = Wait>) -> Start {
        let watch = self.entry.call_watch();
        let start = Start::tool(self.entry.tool.clone()).maybe_watched_by(watch);
        waits
            .into_iter()
            .chain(self.entry.waits())
            .fold(start, Start::after)
    }
}

impl From<Resolved> for Start {
    /// The tool, with its source as the call's watch (when it has a
    /// policy): on any runner, this very tool's source is told of the call,
    /// even if the name has moved to another source by the time the call
    /// starts. A bound of the tool or of its source is waited for after
    /// the gate ([`Start::after`]).
    fn from(resolved: Resolved) -> Self {
        resolved.start_after([])
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
    Disabled(DisabledTool),
}

/// A registered tool its source disabled: which, by whom, and why.
///
/// It keeps the way to the tool's source, so a refused call of it is told
/// to that source (`runner.start(call, refusal)`): a host sees, in its
/// [`Accounting`](crate::Accounting)'s `refused` count, a model that keeps
/// calling a quarantined tool. Two are equal when they name the same tool,
/// source and reason.
#[derive(Clone)]
pub struct DisabledTool {
    entry: Arc<Entry>,
    disabled: Disabled,
}

impl DisabledTool {
    pub(crate) fn new(entry: Arc<Entry>, disabled: Disabled) -> Self {
        Self { entry, disabled }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.entry.name()
    }

    /// The name of the source that disabled it.
    pub fn source_name(&self) -> &str {
        &self.entry.info.source
    }

    /// Why, and after how many failures.
    pub fn disabled(&self) -> &Disabled {
        &self.disabled
    }

    /// What the model was told about the tool while it was enabled.
    pub fn info(&self) -> &Arc<ToolInfo> {
        &self.entry.info
    }

    /// The watch a refused call of this tool is given, as
    /// [`Resolved::watch`]: the tool's own entry, which tells its source
    /// (`None` when the source has no policy). For a host that refuses the
    /// call with a result of its own ([`Start::refused`]).
    pub fn watch(&self) -> Option<Arc<dyn Watch>> {
        self.entry.call_watch()
    }
}

impl PartialEq for DisabledTool {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
            && self.source_name() == other.source_name()
            && self.disabled == other.disabled
    }
}

impl Eq for DisabledTool {}

impl fmt::Debug for DisabledTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DisabledTool")
            .field("name", &self.name())
            .field("source_name", &self.source_name())
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl From<Refusal> for Start {
    /// A call that ends at once as
    /// [`Outcome::Refused`](rho_tool_core::Outcome::Refused) with the
    /// refusal's [`to_result`](Refusal::to_result): not checked by the
    /// runner's gate (there is nothing to approve). The runner's watch is
    /// told, and so is the source of a disabled tool, which counts the call
    /// as refused (a model that keeps calling a quarantined tool shows in
    /// its health); an unknown name has no source to tell.
    fn from(refusal: Refusal) -> Self {
        Start::refused(refusal.to_result()).maybe_watched_by(refusal.watch())
    }
}

impl Refusal {
    /// The tool name the call asked for.
    pub fn name(&self) -> &str {
        match self {
            Refusal::Unknown { name, .. } => name,
            Refusal::Disabled(tool) => tool.name(),
        }
    }

    /// The error result for the model, with details for host screens
    /// (`{"refused": "unknown_tool" | "disabled", ...}`).
    pub fn to_result(&self) -> ToolResult {
        ToolResult::error(self.to_string()).with_details(self.details())
    }

    /// The watch a refused call is given: a disabled tool's, which tells
    /// its source ([`DisabledTool::watch`]); `None` for an unknown name,
    /// which has no source. For a host that refuses the call with a result
    /// of its own ([`Start::refused`]).
    pub fn watch(&self) -> Option<Arc<dyn Watch>> {
        match self {
            Refusal::Unknown { .. } => None,
            Refusal::Disabled(tool) => tool.watch(),
        }
    }

    fn details(&self) -> Plain {
        let json = match self {
            Refusal::Unknown { name, nearest } => serde_json::json!({
                "refused": "unknown_tool",
                "tool": name,
                "nearest": nearest,
            }),
            Refusal::Disabled(tool) => serde_json::json!({
                "refused": "disabled",
                "tool": tool.name(),
                "source": tool.source_name(),
                "failures": tool.disabled.failures,
                "reason": tool.disabled.reason,
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
            Refusal::Disabled(tool) => write!(
                f,
                "tool `{}` was {}; it will not run until the host re-enables it",
                tool.name(),
                tool.disabled
            ),
        }
    }
}

impl std::error::Error for Refusal {}
