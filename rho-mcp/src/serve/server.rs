//! `McpServer`: what every session of a served registry shares.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rho_registry::ToolRegistry;
use rho_tool_core::{Executor, Runner};
use rho_turn::{OutputCap, SchemaCache, TurnRunner};
use rmcp::model::{Implementation, ServerCapabilities};

use super::call::{DEFAULT_INPUT_DEADLINE, Parked};
use super::elicit::ElicitationApprover;
use super::features::McpFeatures;
use super::observe::CallObserver;
use super::session::Session;
use super::tasks::{McpTasks, Tasks};

/// A rho tool registry served over MCP.
///
/// Each MCP client connection is a [`Session`] of it; the sessions share
/// the registry, the runner (with the host's gate) and the compiled
/// schemas. Cheap to clone.
///
/// Every `tools/call` is a rho call: looked up in the registry, its
/// arguments checked before the gate, the gate, the clock from approval,
/// a kill at the deadline, and one result naming the tool however it
/// ended. See the [crate docs](crate) for what a client sees.
pub struct McpServer<E: Executor> {
    pub(crate) shared: Arc<Shared<E>>,
}

/// What the sessions share.
pub(crate) struct Shared<E: Executor> {
    pub(crate) registry: ToolRegistry,
    pub(crate) runner: Runner<E>,
    /// Compiled argument schemas (shared with the turns when built from a
    /// `TurnRunner`).
    pub(crate) arguments: SchemaCache,
    /// Compiled output schemas, to check answers' details against.
    pub(crate) outputs: SchemaCache,
    pub(crate) identity: Implementation,
    /// What the server a proxy stands in front of declared: the proxy
    /// then declares tools and logging only where it did (`None`: rho
    /// declares both, its tools logging through `McpClient::log`).
    pub(crate) fronted: Option<ServerCapabilities>,
    pub(crate) instructions: Option<String>,
    pub(crate) max_calls_per_session: usize,
    /// Told which client each call comes from, to ask its user.
    pub(crate) elicitation: Option<ElicitationApprover>,
    /// Numbers sessions, so call ids are unique across them.
    pub(crate) sessions: Arc<AtomicU64>,
    /// Cuts each text part of a result the client gets.
    pub(crate) output_cap: Option<OutputCap>,
    /// Told of every call's end.
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    /// List untrusted tools' behaviour hints as they state them.
    pub(crate) believe_untrusted_hints: bool,
    /// What the host serves beside its tools.
    pub(crate) features: Option<Arc<dyn McpFeatures>>,
    /// Calls waiting for their clients' answers (2026-07-28 and later).
    pub(crate) waiting: Parked<E>,
    /// How long a call waits for its client's answers.
    pub(crate) input_deadline: Duration,
    /// Which tools run as MCP tasks; `None`: the server offers no tasks.
    pub(crate) tasks: Option<McpTasks>,
    /// The tasks made so far, by id.
    pub(crate) task_list: Tasks,
    /// How many calls at once the server tells its clients it takes.
    pub(crate) advertised_max_calls: Option<usize>,
}

impl<E: Executor> Clone for Shared<E> {
    fn clone(&self) -> Self {
        Self {
            registry: self.registry.clone(),
            runner: self.runner.clone(),
            arguments: self.arguments.clone(),
            outputs: self.outputs.clone(),
            identity: self.identity.clone(),
            fronted: self.fronted.clone(),
            instructions: self.instructions.clone(),
            max_calls_per_session: self.max_calls_per_session,
            elicitation: self.elicitation.clone(),
            sessions: self.sessions.clone(),
            output_cap: self.output_cap,
            observer: self.observer.clone(),
            believe_untrusted_hints: self.believe_untrusted_hints,
            features: self.features.clone(),
            waiting: self.waiting.clone(),
            input_deadline: self.input_deadline,
            tasks: self.tasks.clone(),
            task_list: self.task_list.clone(),
            advertised_max_calls: self.advertised_max_calls,
        }
    }
}

impl<E: Executor> McpServer<E> {
    /// How many calls one session may have in flight by default.
    pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 64;

    /// Serves `registry`'s tools, each call started on `runner` (an
    /// executor, or a [`Runner`] with the host's gate and limits).
    ///
    /// The server names itself `rho-mcp` with this crate's version; see
    /// [`with_name`](McpServer::with_name).
    pub fn new(runner: impl Into<Runner<E>>, registry: ToolRegistry) -> Self {
        Self {
            shared: Arc::new(Shared {
                registry,
                runner: runner.into(),
                arguments: SchemaCache::new(),
                outputs: SchemaCache::new(),
                identity: Implementation::new("rho-mcp", env!("CARGO_PKG_VERSION")),
                fronted: None,
                instructions: None,
                max_calls_per_session: Self::DEFAULT_MAX_CALLS_PER_SESSION,
                elicitation: None,
                sessions: Arc::default(),
                output_cap: None,
                observer: None,
                believe_untrusted_hints: false,
                features: None,
                waiting: Parked::default(),
                input_deadline: DEFAULT_INPUT_DEADLINE,
                tasks: None,
                task_list: Tasks::default(),
                advertised_max_calls: None,
            }),
        }
    }

    /// Serves the registry of `turns` with its runner (and so its gate)
    /// and its compiled argument schemas.
    pub fn from_turns(turns: &TurnRunner<E>) -> Self {
        let server = Self::new(turns.runner().clone(), turns.registry().clone());
        server.change(|shared| shared.arguments = turns.schemas().clone())
    }

    fn change(mut self, change: impl FnOnce(&mut Shared<E>)) -> Self {
        change(Arc::make_mut(&mut self.shared));
        self
    }

    /// The name and version the server gives clients at `initialize`.
    pub fn with_name(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let identity = Implementation::new(name, version);
        self.change(|shared| shared.identity = identity)
    }

    /// The whole identity the server gives clients at `initialize` (and,
    /// on 2026-07-28, with `server/discover`): its name and version, and
    /// its title, description, icons and website where given. A proxy
    /// gives its server's, so that its client sees the server it asked
    /// for.
    pub fn with_identity(self, identity: Implementation) -> Self {
        self.change(|shared| shared.identity = identity)
    }

    /// Declares tools and logging only where `upstream` did: a proxy's,
    /// whose only tools and logs are its server's.
    pub(crate) fn fronting(self, upstream: ServerCapabilities) -> Self {
        self.change(|shared| shared.fronted = Some(upstream))
    }

    /// Instructions for the client's model, given at `initialize`.
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.change(|shared| shared.instructions = Some(instructions))
    }

    /// How many calls one session may have in flight (at least one;
    /// default [`DEFAULT_MAX_CALLS_PER_SESSION`](McpServer::DEFAULT_MAX_CALLS_PER_SESSION)). A call beyond that is
    /// answered at once with an error result saying so, without running.
    pub fn with_max_calls_per_session(self, calls: usize) -> Self {
        self.change(|shared| shared.max_calls_per_session = calls.max(1))
    }

    /// Tells `approver` which client each call comes from, so that the
    /// gate's questions go to the person at that client (see
    /// [`ElicitationApprover`]). Give the same approver to the runner's
    /// gate.
    pub fn with_elicitation(self, approver: ElicitationApprover) -> Self {
        self.change(|shared| shared.elicitation = Some(approver))
    }

    /// How long a call whose tool (or gate) asked a client on MCP
    /// 2026-07-28 or later waits for the client's answers (default ten
    /// minutes). Such a client is asked through an input-required result
    /// and answers with a new request; the call waits for it on this
    /// server, its clock held, and is aborted when no answer has come by
    /// then. A task's questions (answered with `tasks/update`) get the
    /// same time, after which the task fails saying so. The time counts
    /// against no tool.
    pub fn with_input_deadline(self, deadline: Duration) -> Self {
        self.change(|shared| shared.input_deadline = deadline)
    }

    /// Tells clients that the server takes at most `calls` calls at once
    /// (`0` counts as `1`), in the experimental capability
    /// [`CONCURRENCY_CAPABILITY`](crate::CONCURRENCY_CAPABILITY): a rho
    /// host that imports this server then queues its calls on its side,
    /// their clocks held, instead of sending calls that would wait here
    /// while their clocks run. The server does not enforce it: the host
    /// bounds what runs its tools (the proxy, which declares its
    /// `max_concurrent_calls` so, bounds its source).
    pub fn advertise_max_concurrent_calls(self, calls: usize) -> Self {
        self.change(|shared| shared.advertised_max_calls = Some(calls.max(1)))
    }

    /// Offers the MCP tasks extension (`io.modelcontextprotocol/tasks`):
    /// the tools `tasks` picks run as tasks for clients that take them
    /// (see [`McpTasks`]), so a long call is polled rather than waited
    /// for, and `tasks/cancel` stops it. Default: no tasks. The server
    /// keeps at most 4,096 tasks at once (each for its TTL, with its
    /// result); a call that would become one more goes on as a plain
    /// request, answered when it ends.
    pub fn with_tasks(self, tasks: McpTasks) -> Self {
        self.change(|shared| shared.tasks = Some(tasks))
    }

    /// Cuts each text part of a result longer than `cap` to its head and
    /// tail around a marker saying how much was cut (see [`OutputCap`]),
    /// so a tool that floods cannot fill the client's context. Only
    /// tools' answers are cut (rho's own texts, such as a denial or a
    /// timeout, never are); images and details are not touched. Default:
    /// no cap.
    pub fn with_output_cap(self, cap: OutputCap) -> Self {
        self.change(|shared| shared.output_cap = Some(cap))
    }

    /// Tells `observer` of every call's end (see [`CallObserver`]): an
    /// audit log, say.
    pub fn with_call_observer(self, observer: Arc<dyn CallObserver>) -> Self {
        self.change(|shared| shared.observer = Some(observer))
    }

    /// Whether `tools/list` gives untrusted tools' behaviour hints
    /// (read-only, destructive, idempotent, open-world) as the tools state
    /// them. Default: no, they are left out, so that a client reads such a
    /// tool with MCP's cautious defaults and never takes a claim of code
    /// the host did not write for the host's word. Say yes only when the
    /// host vouches for those claims (a proxy whose user believes the
    /// server's hints, say).
    pub fn believe_untrusted_hints(self, believe: bool) -> Self {
        self.change(|shared| shared.believe_untrusted_hints = believe)
    }

    /// Serves `features` beside the tools: the host's resources, resource
    /// templates, prompts and completions (see [`McpFeatures`]), which rho
    /// passes through and adds nothing to. Default: tools only.
    pub fn with_features(self, features: Arc<dyn McpFeatures>) -> Self {
        self.change(|shared| shared.features = Some(features))
    }

    /// The registry served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.shared.registry
    }

    /// A new session: the MCP handler of one client connection, for a
    /// transport of your own (rmcp's `ServiceExt::serve`). The transports
    /// this crate offers make one per connection themselves.
    pub fn session(&self) -> Session<E> {
        let number = self.shared.sessions.fetch_add(1, Ordering::Relaxed);
        Session::new(self.shared.clone(), number)
    }
}

impl<E: Executor> Clone for McpServer<E> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<E: Executor> fmt::Debug for McpServer<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.identity.name)
            .field("registry", &self.shared.registry)
            .field("max_calls_per_session", &self.shared.max_calls_per_session)
            .finish_non_exhaustive()
    }
}
