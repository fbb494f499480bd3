//! `TurnRunner`: what every turn of a session shares.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rho_registry::{Bound, ToolRegistry};
use rho_tool_core::{
    Allowances, Approver, Concurrency, Executor, Gate, IntoShared, Runner, ToolCall, ToolContext,
    WaitingFor,
};

use crate::bus::EventBus;
use crate::cap::OutputCap;
use crate::keep::KeepDetails;
use crate::nested::{NestedEntries, Parent};
use crate::turn::Turn;
use crate::validate::SchemaCache;

/// Runs turns: the runner and registry calls go through, the subscribers,
/// and the host's policies. Cheap to clone; clones share the event bus and
/// the schema cache.
///
/// One step wires it: give it an executor (or a [`Runner`] you built) and
/// the registry. Every call of a turn is resolved in that registry and
/// started through it, so each source is told of its own tools' calls
/// (and can count them, and quarantine a tool) with nothing more to wire.
///
/// ```
/// # fn demo<E: rho::Executor>(executor: E, gate: std::sync::Arc<dyn rho::Gate>) {
/// use rho::{KeepDetails, OutputCap, ToolRegistry, TurnRunner};
///
/// let turns = TurnRunner::new(executor, ToolRegistry::new())
///     .with_gate(gate)
///     .with_max_concurrent(8)
///     .with_keep_details(KeepDetails::MaxBytes(4096))
///     .with_output_cap(OutputCap::bytes(30_000));
/// # let _ = turns;
/// # }
/// ```
pub struct TurnRunner<E: Executor> {
    config: Arc<Config<E>>,
}

#[derive(Clone)]
pub(crate) struct Config<E: Executor> {
    pub(crate) runner: Runner<E>,
    pub(crate) registry: ToolRegistry,
    pub(crate) events: EventBus,
    pub(crate) keep: KeepDetails,
    pub(crate) cap: Option<OutputCap>,
    pub(crate) tool_caps: HashMap<String, Option<OutputCap>>,
    pub(crate) max_concurrent: usize,
    pub(crate) schemas: SchemaCache,
    pub(crate) validate: bool,
    /// How calls of a tool overlap, where the host says so instead of the
    /// tool.
    pub(crate) concurrency: HashMap<String, Concurrency>,
    /// The host's bounds ([`Concurrency::Bounded`] overrides), shared by
    /// every turn of the runner and its clones.
    pub(crate) bounds: HashMap<String, Bound>,
    /// Whether turns keep the model's order (default: yes).
    pub(crate) ordered: bool,
    /// Whether a call that does not succeed stops the calls after it that
    /// have not run yet.
    pub(crate) stop_on_failure: bool,
    /// Entries of calls made within calls, shared by every turn.
    pub(crate) nested: Arc<NestedEntries>,
}

impl<E: Executor> Config<E> {
    /// The output cap for `tool`'s results: its own, else the turn's.
    pub(crate) fn cap_for(&self, tool: &str) -> Option<OutputCap> {
        match self.tool_caps.get(tool) {
            Some(cap) => *cap,
            None => self.cap,
        }
    }

    /// How calls of `tool` (whose own word is `declared`) overlap: the
    /// host's override, else the tool's.
    pub(crate) fn concurrency_of(&self, tool: &str, declared: Concurrency) -> Concurrency {
        self.concurrency.get(tool).copied().unwrap_or(declared)
    }
}

impl<E: Executor> TurnRunner<E> {
    /// Turns whose calls `runner` starts (an executor, or a [`Runner`] with
    /// the host's gate and limits) and `registry` resolves; a new
    /// [`EventBus`], every detail kept, no output cap, no bound on
    /// concurrent calls, arguments validated.
    pub fn new(runner: impl Into<Runner<E>>, registry: ToolRegistry) -> Self {
        Self {
            config: Arc::new(Config {
                runner: runner.into(),
                registry,
                events: EventBus::new(),
                keep: KeepDetails::All,
                cap: None,
                tool_caps: HashMap::new(),
                max_concurrent: usize::MAX,
                schemas: SchemaCache::new(),
                validate: true,
                concurrency: HashMap::new(),
                bounds: HashMap::new(),
                ordered: true,
                stop_on_failure: false,
                nested: Arc::default(),
            }),
        }
    }

    fn change(mut self, change: impl FnOnce(&mut Config<E>)) -> Self {
        change(Arc::make_mut(&mut self.config));
        self
    }

    /// Checks every call with `gate` before its tool runs (default: allow
    /// all); see [`Runner::with_gate`].
    pub fn with_gate(self, gate: impl IntoShared<dyn Gate>) -> Self {
        self.change(|config| config.runner = config.runner.clone().with_gate(gate))
    }

    /// Asks `approver` about every call the gate asks about (a person,
    /// usually); see [`Runner::with_approver`].
    pub fn with_approver(self, approver: impl IntoShared<dyn Approver>) -> Self {
        self.change(|config| config.runner = config.runner.clone().with_approver(approver))
    }

    /// Denies a call whose approver has not answered within `deadline`
    /// of being asked (default: no deadline); see
    /// [`Runner::with_approval_deadline`]. Fail-closed: the call ends
    /// [`Denied`](rho_tool_core::Outcome::Denied), never as a strike
    /// against its tool.
    pub fn with_approval_deadline(self, deadline: Duration) -> Self {
        self.change(|config| {
            config.runner = config.runner.clone().with_approval_deadline(deadline);
        })
    }

    /// Keeps the approvals approvers ask to be remembered in `allowances`
    /// and allows without asking the calls they cover (default: a store of
    /// this runner's own, shared by its clones); see
    /// [`Runner::with_allowances`]. Give two turn runners one store for
    /// one session across them.
    pub fn with_allowances(self, allowances: Allowances) -> Self {
        self.change(|config| config.runner = config.runner.clone().with_allowances(allowances))
    }

    /// The approvals remembered for this session: list them to show a
    /// person, revoke one, clear them all. Shared with every clone of
    /// this runner and with the [`Runner`] it starts calls on.
    pub fn allowances(&self) -> &Allowances {
        self.config.runner.allowances()
    }

    /// Runs calls of `tool` as `concurrency` says, whatever the tool says
    /// of itself ([`Tool::concurrency`](rho_tool_core::Tool::concurrency)).
    ///
    /// A [`Concurrency::Bounded`] override's bound holds across every turn
    /// of this runner and its clones (a runner made anew starts its own);
    /// a bound the tool declares itself is kept by the registry and holds
    /// either way.
    pub fn with_concurrency(self, tool: impl Into<String>, concurrency: Concurrency) -> Self {
        let tool = tool.into();
        self.change(|config| {
            match concurrency.bound() {
                Some(limit) => {
                    let waiting_for = WaitingFor::Tool {
                        name: tool.clone(),
                        limit: limit.get(),
                    };
                    config
                        .bounds
                        .insert(tool.clone(), Bound::new(limit.get(), waiting_for));
                }
                None => {
                    config.bounds.remove(&tool);
                }
            }
            config.concurrency.insert(tool, concurrency);
        })
    }

    /// Whether turns keep the model's order (default: yes). With `false`,
    /// every call of a turn runs as soon as its gate allows, as if every
    /// tool were [`Concurrency::Shared`]; bounds still hold.
    pub fn with_ordering(self, ordered: bool) -> Self {
        self.change(|config| config.ordered = ordered)
    }

    /// Whether a call that does not succeed stops the calls after it
    /// (default: no, the model reads every result). With `true`, each
    /// later call that has not started running when one fails ends
    /// [`Refused`](rho_tool_core::Outcome::Refused) with a text saying it
    /// was not run and which call failed; calls already running beside
    /// the failed one go on.
    pub fn with_stop_on_failure(self, stop: bool) -> Self {
        self.change(|config| config.stop_on_failure = stop)
    }

    /// How calls of `tool` overlap in this runner's turns: the host's
    /// override ([`with_concurrency`](Self::with_concurrency)), else what
    /// the registered tool says; `None` for a name the registry does not
    /// have. Without ordering
    /// ([`with_ordering(false)`](Self::with_ordering)) every tool is
    /// shared.
    pub fn concurrency(&self, tool: &str) -> Option<Concurrency> {
        let declared = self.config.registry.resolve(tool).ok()?.info().concurrency;
        let concurrency = self.config.concurrency_of(tool, declared);
        Some(match concurrency {
            Concurrency::Exclusive if !self.config.ordered => Concurrency::Shared,
            concurrency => concurrency,
        })
    }

    /// Whether calls of `tools` may all run side by side in this runner's
    /// turns: none is exclusive (a name the registry does not have is
    /// refused before it runs, so it holds nothing back).
    ///
    /// For the model APIs' switch on parallel tool calls
    /// (`parallel_tool_calls`, `disable_parallel_tool_use`): the turn
    /// keeps the model's order whatever the switch says, so leaving it on
    /// is always safe; a host that offers only exclusive tools may turn it
    /// off so the model reads each result before its next call.
    pub fn runs_side_by_side<S: AsRef<str>>(&self, tools: impl IntoIterator<Item = S>) -> bool {
        tools.into_iter().all(|tool| {
            self.concurrency(tool.as_ref())
                .is_none_or(Concurrency::is_shared)
        })
    }

    /// Publishes events on `events` (to share one bus between several
    /// runners, say).
    pub fn with_events(self, events: EventBus) -> Self {
        self.change(|config| config.events = events)
    }

    /// What the session entries keep of details (default: all).
    pub fn with_keep_details(self, keep: KeepDetails) -> Self {
        self.change(|config| config.keep = keep)
    }

    /// Caps the text the model reads of every result (default: no cap).
    pub fn with_output_cap(self, cap: OutputCap) -> Self {
        self.change(|config| config.cap = Some(cap))
    }

    /// Caps the text the model reads of `tool`'s results, or (with `None`)
    /// exempts them from the turn's cap.
    pub fn with_tool_output_cap(self, tool: impl Into<String>, cap: Option<OutputCap>) -> Self {
        self.change(|config| {
            config.tool_caps.insert(tool.into(), cap);
        })
    }

    /// Runs at most `calls` calls of a turn at once (at least one); the
    /// others wait, in the model's order, and start as calls end. A call
    /// holds its place from its start to its end, gate included.
    pub fn with_max_concurrent(self, calls: usize) -> Self {
        self.change(|config| config.max_concurrent = calls.max(1))
    }

    /// Whether arguments are checked against the tool's schema before the
    /// gate (default: yes).
    pub fn with_validation(self, validate: bool) -> Self {
        self.change(|config| config.validate = validate)
    }

    /// The bus turns publish on: subscribe to it.
    pub fn events(&self) -> &EventBus {
        &self.config.events
    }

    /// The registry calls are resolved in.
    pub fn registry(&self) -> &ToolRegistry {
        &self.config.registry
    }

    /// The runner calls are started on.
    pub fn runner(&self) -> &Runner<E> {
        &self.config.runner
    }

    /// The compiled argument schemas.
    pub fn schemas(&self) -> &SchemaCache {
        &self.config.schemas
    }

    /// A turn of `calls`, in the order the model issued them. Nothing runs
    /// until the turn is first polled: await it for the session entries,
    /// and take its [`abort_handle`](Turn::abort_handle) before.
    pub fn turn(&self, calls: impl IntoIterator<Item = ToolCall>) -> Turn<E> {
        Turn::new(self.config.clone(), None, calls.into_iter().collect())
    }

    /// A turn of `calls` made by the running call whose context is
    /// `parent` (a script's calls of tools, a sub-agent's): the same as
    /// [`turn`](Self::turn), on the same bus, and
    ///
    /// - every event of its calls names the parent as its
    ///   `parent_call_id`, so screens can show them under it;
    /// - while one of its calls waits for its gate (a person asked), the
    ///   parent's clock is paused
    ///   ([`ToolContext::pause_clock`](rho_tool_core::ToolContext::pause_clock)):
    ///   an approval is not charged to the call that asked for it, as a
    ///   call's own gate is not;
    /// - its session entries are also kept for the parent's entry
    ///   ([`SessionEntry::nested`](crate::SessionEntry::nested)) when the
    ///   parent is a call of a turn of this runner.
    pub fn turn_within(
        &self,
        parent: &ToolContext,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Turn<E> {
        Turn::new(
            self.config.clone(),
            Some(Parent::of(parent)),
            calls.into_iter().collect(),
        )
    }

    /// A handle that does not keep the runner (its registry, its bus)
    /// alive: for what the registry itself holds, such as a tool that
    /// calls other tools, so that the two do not keep each other alive.
    pub fn downgrade(&self) -> WeakTurnRunner<E> {
        WeakTurnRunner {
            config: Arc::downgrade(&self.config),
        }
    }
}

/// A [`TurnRunner`] that does not keep it alive
/// ([`TurnRunner::downgrade`]).
pub struct WeakTurnRunner<E: Executor> {
    config: Weak<Config<E>>,
}

impl<E: Executor> WeakTurnRunner<E> {
    /// The runner, while a [`TurnRunner`] of it is alive.
    pub fn upgrade(&self) -> Option<TurnRunner<E>> {
        self.config.upgrade().map(|config| TurnRunner { config })
    }
}

impl<E: Executor> Clone for WeakTurnRunner<E> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
        }
    }
}

impl<E: Executor> fmt::Debug for WeakTurnRunner<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakTurnRunner")
            .field("alive", &(self.config.strong_count() > 0))
            .finish()
    }
}

impl<E: Executor> Clone for TurnRunner<E> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
        }
    }
}

impl<E: Executor + fmt::Debug> fmt::Debug for TurnRunner<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = &self.config;
        f.debug_struct("TurnRunner")
            .field("runner", &config.runner)
            .field("registry", &config.registry)
            .field("events", &config.events)
            .field("keep", &config.keep)
            .field("cap", &config.cap)
            .field("tool_caps", &config.tool_caps)
            .field("max_concurrent", &config.max_concurrent)
            .field("validate", &config.validate)
            .field("concurrency", &config.concurrency)
            .field("ordered", &config.ordered)
            .field("stop_on_failure", &config.stop_on_failure)
            .finish()
    }
}
