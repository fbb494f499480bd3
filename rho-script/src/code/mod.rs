//! Code mode: a script calls the host's tools as async functions
//! (`await tools.read_file({ path })`), and every such call is a full rho
//! call.
//!
//! Hosts that let a model write one program instead of one tool call per
//! message usually run the program's tool calls as plain functions: no
//! gate, no timeout, no accounting. Here a script's call of a tool goes
//! through the host's [`TurnRunner`], as a call the model made would:
//! arguments validated before the gate, the gate (a person may be asked,
//! and that wait does not run the script's clock), its own timeout from
//! approval, kill at its deadline, its crash counted against that tool,
//! its events on the host's bus naming the script's call as their parent,
//! its session entry kept inside the script's. The script sees what the
//! model would have read: the result's details (or its text), or a thrown
//! `Error` with the result's text.
//!
//! This is what `tools.<name>` stands for: the sandbox only installs the
//! names a job lists and hands the calls across; [`CodeCalls`] runs them.
//! Built on the sandbox; the script tools ([`crate::tool`]) take a
//! [`CodeMode`] to grant it.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rho_registry::ToolInfo;
use rho_tool_core::{CallEnd, Executor, Outcome, ToolCall, ToolContext};
use rho_turn::WeakTurnRunner;

use crate::sandbox::{HostAnswer, HostAsk, plain_to_wire};

mod declare;

/// How much one script run may ask of the host's tools.
///
/// ```
/// use rho::script::CodeLimits;
/// let limits = CodeLimits::default().with_max_calls(50).with_max_in_flight(4);
/// assert_eq!((limits.max_calls, limits.max_in_flight), (50, 4));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Calls of tools one run may make in all (default 256); past it a
    /// call throws at once.
    pub max_calls: usize,
    /// Calls of tools one run may have in flight at once (default 16);
    /// past it a call throws at once (await some first).
    pub max_in_flight: usize,
    /// Bytes of results (as JSON) one run may get back from tools in all
    /// (default 8 MiB); the call that passes it throws instead.
    pub max_bytes_back: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self {
            max_calls: 256,
            max_in_flight: 16,
            max_bytes_back: 8 << 20,
        }
    }
}

impl CodeLimits {
    /// Sets how many calls of tools one run may make.
    #[must_use]
    pub fn with_max_calls(mut self, calls: usize) -> Self {
        self.max_calls = calls;
        self
    }

    /// Sets how many calls of tools one run may have in flight at once.
    #[must_use]
    pub fn with_max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = calls;
        self
    }

    /// Sets how many bytes of results one run may get back.
    #[must_use]
    pub fn with_max_bytes_back(mut self, bytes: usize) -> Self {
        self.max_bytes_back = bytes;
        self
    }
}

/// The future of one tool call made by a script: how it ended, whole.
pub(crate) type EntryFuture = Pin<Box<dyn Future<Output = Option<CallEnd>> + Send>>;

/// The host's tools as a script reaches them, with the executor's type
/// erased.
trait Tools: Send + Sync {
    /// Every tool of the registry, or `None` once the host is gone.
    fn list(&self) -> Option<Vec<ToolInfo>>;
    /// The tool called `name` (`Some(None)`: no such tool, or disabled),
    /// or `None` once the host is gone.
    fn find(&self, name: &str) -> Option<Option<Arc<ToolInfo>>>;
    /// Runs `call` within the script's call `parent`.
    fn call(&self, parent: &ToolContext, call: ToolCall) -> EntryFuture;
}

struct TurnTools<E: Executor> {
    turns: WeakTurnRunner<E>,
}

impl<E: Executor> Tools for TurnTools<E> {
    fn list(&self) -> Option<Vec<ToolInfo>> {
        self.turns.upgrade().map(|turns| turns.registry().tools())
    }

    fn find(&self, name: &str) -> Option<Option<Arc<ToolInfo>>> {
        let turns = self.turns.upgrade()?;
        Some(
            turns
                .registry()
                .resolve(name)
                .ok()
                .map(|resolved| Arc::clone(resolved.info())),
        )
    }

    fn call(&self, parent: &ToolContext, call: ToolCall) -> EntryFuture {
        let Some(turns) = self.turns.upgrade() else {
            return Box::pin(std::future::ready(None));
        };
        let mut turn = turns.turn_within(parent, [call]).keep_ends();
        Box::pin(async move {
            (&mut turn).await;
            turn.take_ends().into_iter().next()
        })
    }
}

/// Which tools a script may call: the host's tools, by source or by name,
/// through the host's [`TurnRunner`](rho_turn::TurnRunner). Give it to a
/// script tool, a `run_script` or every tool of a source in their
/// [`ScriptOptions`](crate::ScriptOptions)
/// ([`with_code_mode`](crate::ScriptOptions::with_code_mode)).
///
/// Nothing is allowed until the host says so. The script finds the tools
/// it may call as the global `tools`, one async function per tool, named
/// as the tool is (`tools.read_file(args)`, `tools["read-file"](args)`);
/// [`declarations`](CodeMode::declarations) renders them as TypeScript for
/// the model's prompt.
///
/// | a call of `tools.x(args)` | the script gets |
/// |---|---|
/// | succeeds | its details, whole, or its text, whole, when it has none (what the session keeps of it is the host's [`KeepDetails`](rho_turn::KeepDetails) and output cap, as for any call) |
/// | fails, crashes, times out, is denied, refused, aborted | a thrown `Error` whose message is the result's text, as the model would read it |
/// | names a tool the script may not call | a thrown `Error`, at once |
/// | passes a limit of [`CodeLimits`] | a thrown `Error` saying which, at once |
///
/// Each call is a rho call of its own, with the id `<script call's
/// id>.<n>`: its gate, its timeout, its accounting, its events (naming the
/// script's call as `parent_call_id`), its entry inside the script's
/// ([`SessionEntry::nested`](rho_turn::SessionEntry::nested)). A wait at its gate does not run the
/// script's clock; everything else does. When the script's call ends (its
/// answer, its timeout, an abort), its calls still in flight are aborted.
///
/// It holds the runner weakly: a tool of the runner's own registry that
/// holds it keeps nothing alive.
///
/// A script that calls script tools holds its pool thread while they run
/// on others: allow those with care (a pool's threads bound how deep such
/// calls can go; past that they wait in its queue until their timeouts).
#[derive(Clone)]
pub struct CodeMode {
    tools: Arc<dyn Tools>,
    sources: BTreeSet<String>,
    names: BTreeSet<String>,
    limits: CodeLimits,
}

impl CodeMode {
    /// Code mode through `turns`, with nothing allowed yet and the default
    /// [`CodeLimits`].
    pub fn new<E: Executor>(turns: &rho_turn::TurnRunner<E>) -> Self {
        Self {
            tools: Arc::new(TurnTools {
                turns: turns.downgrade(),
            }),
            sources: BTreeSet::new(),
            names: BTreeSet::new(),
            limits: CodeLimits::default(),
        }
    }

    /// Allows every tool of the source `source`.
    #[must_use]
    pub fn allow_source(mut self, source: impl Into<String>) -> Self {
        self.sources.insert(source.into());
        self
    }

    /// Allows the tool `name`.
    #[must_use]
    pub fn allow_tool(mut self, name: impl Into<String>) -> Self {
        self.names.insert(name.into());
        self
    }

    /// Sets the limits of each script run.
    #[must_use]
    pub fn with_limits(mut self, limits: CodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits of each script run.
    pub fn limits(&self) -> &CodeLimits {
        &self.limits
    }

    fn allows(&self, info: &ToolInfo) -> bool {
        self.names.contains(&info.name) || self.sources.contains(&info.source)
    }

    /// The tools a script may call now, in name order.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let mut tools: Vec<ToolInfo> = self
            .tools
            .list()
            .unwrap_or_default()
            .into_iter()
            .filter(|info| self.allows(info))
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    /// The names of the tools a script may call now, for its `tools`.
    pub(crate) fn names(&self) -> Arc<[Arc<str>]> {
        self.tools()
            .into_iter()
            .map(|info| Arc::from(info.name))
            .collect()
    }

    /// The tools a script may call now as TypeScript declarations, for
    /// the model's prompt: `declare const tools: { ... }`, one method per
    /// tool, its arguments' type made from its JSON Schema, its
    /// description as a doc comment, its answer's type from its output
    /// schema (`unknown` without one).
    pub fn declarations(&self) -> String {
        let tools = self.tools();
        declare::tools(tools.iter().map(declare::Declared::from))
    }

    /// Starts the script's call of `tool`, its `n`th, within `parent`:
    /// the call's entry, or why it cannot run.
    pub(crate) fn call(
        &self,
        parent: &ToolContext,
        n: usize,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<EntryFuture, String> {
        // One look-up, not a list of every tool: this is on every call.
        let Some(found) = self.tools.find(tool) else {
            return Err(format!(
                "tools.{tool}: the host's tools are gone (the session ended)"
            ));
        };
        if let Some(info) = found {
            if !self.allows(&info) {
                return Err(format!(
                    "tool `{tool}` is not one this script may call (see `Object.keys(tools)`)"
                ));
            }
        }
        // A name that is not there now (or is disabled) goes to the turn
        // all the same: it answers as it would the model.
        let id = format!("{}.{n}", parent.call_id());
        Ok(self.tools.call(parent, ToolCall::new(id, tool, arguments)))
    }
}

/// What a script's call of a tool resolves to, from its whole end: its
/// details or its text, or its text as the error.
fn answer_of(tool: &str, end: Option<CallEnd>) -> Result<serde_json::Value, String> {
    let Some(end) = end else {
        return Err(format!(
            "tools.{tool}: the call ended without an answer (the host's tools are gone)"
        ));
    };
    if end.outcome != Outcome::Succeeded {
        return Err(end.result.text());
    }
    match end.result.details {
        Some(details) => Ok(plain_to_wire(&details)),
        None => Ok(serde_json::Value::String(end.result.text())),
    }
}

/// One script run's calls of tools (`tools.<name>`), under its
/// [`CodeLimits`]: the code-mode half of what runs a job's host calls.
pub(crate) struct CodeCalls {
    mode: CodeMode,
    /// Calls made so far (each is numbered by it).
    made: usize,
    bytes_back: usize,
    in_flight: Vec<(u64, Arc<str>, EntryFuture)>,
}

impl CodeCalls {
    /// No calls made yet, under `mode`.
    pub(crate) fn new(mode: CodeMode) -> Self {
        Self {
            mode,
            made: 0,
            bytes_back: 0,
            in_flight: Vec::new(),
        }
    }

    /// Starts the script's call `ask` of a tool within `context`, or says
    /// why it cannot run.
    pub(crate) fn start(&mut self, ask: HostAsk, context: &ToolContext) -> Result<(), String> {
        let limits = self.mode.limits();
        if self.made >= limits.max_calls {
            return Err(format!(
                "tools.{}: this script run has made its {} calls of tools; it may make no more",
                ask.name, limits.max_calls
            ));
        }
        if self.in_flight.len() >= limits.max_in_flight {
            return Err(format!(
                "tools.{}: {} calls of tools are in flight from this script already; await some of them first",
                ask.name, limits.max_in_flight
            ));
        }
        let argument = plain_to_wire(&ask.argument);
        self.made += 1;
        let entry = self.mode.call(context, self.made, &ask.name, argument)?;
        self.in_flight.push((ask.id, ask.name, entry));
        Ok(())
    }

    /// Polls the calls in flight; pushes the ended ones' answers, under
    /// the bound on bytes passed back.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, ended: &mut Vec<HostAnswer>) {
        let most = self.mode.limits().max_bytes_back;
        let mut index = 0;
        while index < self.in_flight.len() {
            let Poll::Ready(entry) = self.in_flight[index].2.as_mut().poll(cx) else {
                index += 1;
                continue;
            };
            let (id, name, _) = self.in_flight.swap_remove(index);
            let mut result = answer_of(&name, entry);
            if let Ok(value) = &result {
                // Measured as the JSON it crosses as.
                self.bytes_back = self
                    .bytes_back
                    .saturating_add(serde_json::to_string(value).map_or(0, |json| json.len()));
                if self.bytes_back > most {
                    result = Err(format!(
                        "tools.{name}: this script run has been passed back more than its {most} bytes of results; this one is withheld"
                    ));
                }
            }
            ended.push(HostAnswer { id, result });
        }
    }
}

impl fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeMode")
            .field("sources", &self.sources)
            .field("names", &self.names)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
