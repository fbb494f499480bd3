//! rho runs the tool calls of LLM agents safely, on tokio or smol.
//!
//! An agent host lets a model call tools: read files, run commands, call
//! APIs, tools served by MCP servers, tools the agent wrote itself. rho runs
//! each call in a task of its own, apart from the host's loop:
//!
//! - the **gate** (approval) runs inside the call's task, so a person
//!   approving on a phone blocks no other call;
//! - the tool's **clock** starts only once the gate allows, so the time a
//!   person took is never counted against the tool;
//! - at its deadline a call is **killed** without waiting for the tool to
//!   agree, and a host can abort any call or a whole turn;
//! - a **panic** of any payload type, a hang or a lost executor becomes an
//!   error result that names the tool; the loop never unwinds;
//! - an untrusted tool's answer is made **plain data** inside its task, so
//!   nothing it hands back can run its code in the loop;
//! - each tool's **source** hears how its calls ended, counts them, and
//!   quarantines a tool that keeps crashing or hanging.
//!
//! This crate is the one a host depends on. It holds no logic of its own:
//! it gathers rho's crates under one vocabulary, with a feature for each
//! runtime and each capability.
//!
//! # The words
//!
//! | concept | name | what it is |
//! |---|---|---|
//! | tool | [`Tool`] | something the model can call: name, description, schema, `run` |
//! | typed tool | [`TypedTool`] | a tool whose arguments are a Rust type (schema derived) |
//! | call | [`ToolCall`] | one call the model asked for: id, tool name, arguments |
//! | answer | [`ToolOutput`] | what a tool's `run` returns |
//! | result | [`ToolResult`] | what the model reads: [`Content`] parts, an error flag, details |
//! | verdict | [`Verdict`] | allow, ask or deny: what a gate, an approver and a rule answer |
//! | gate | [`Gate`] | the check before a tool runs; it answers a [`Verdict`] |
//! | approver | [`Approver`] | who decides a call the gate asks about (a person, usually); the runner's |
//! | annotation gate | [`AnnotationGate`] | a ready gate: rules on names and annotations |
//! | allowance | [`Allowance`], [`Allowances`] | an approval remembered for the session (a tool, its arguments, a command prefix); the runner's store, checked before anyone is asked |
//! | runner | [`Runner`] | starts one call on an executor: `runner.start(call, what)`, the one way |
//! | start | [`call::Start`] | what a call starts with: a tool, a registry's look-up, or a refusal |
//! | call handle | [`CallHandle`] | a call in flight: events, abort, and its end |
//! | end | [`CallEnd`] | how a call ended: [`Outcome`], result, time waited and run; the one record, of which the turn's and the server's are views |
//! | watch | [`call::Watch`] | told of each call as it starts and ends, in the loop (see "Hearing of a call's end") |
//! | registry | [`ToolRegistry`] | the tools of all sources, by name |
//! | source | [`Source`] | where tools come from; its policy is a watch of its tools' calls |
//! | accounting | [`Accounting`] | a source's counts and quarantine ([`QuarantineRule`]) |
//! | refusal | [`Refusal`] | why a call got no tool: an unknown name, a disabled tool |
//! | turn | [`Turn`] | the calls of one model message, side by side |
//! | turn runner | [`TurnRunner`] | makes turns: registry, gate, runner, event bus, policies |
//! | event | [`TurnEvent`] | what a turn tells its subscribers as it happens |
//! | subscriber | [`Subscriber`] | a host's screen or log: gets every event, never blocks a turn |
//! | session entry | [`SessionEntry`] | what the session keeps of one call: its end under the host's policies |
//! | plain data | [`Plain`] | values made only of library-owned types |
//! | executor | [`Executor`] | spawn, kill and sleep on a runtime (`tokio`, `smol`) |
//! | confinement | `process::confine::Confinement` | what a process rho starts may read, write and reach, and its limits, enforced by the kernel (feature `process`) |
//! | grant | `process::confine::Grant` | more access for one call, approved through the gate |
//! | allowed host | `process::confine::AllowedHost` | a host a confined process may reach by name, through a proxy outside its box (`Network::Hosts`) |
//! | features | `mcp::McpFeatures` | a host's MCP resources, prompts and completions, served beside its tools (feature `mcp`) |
//! | notifier | `mcp::Notifier` | where a host's features announce to its clients: lists changed, a resource updated, log messages (feature `mcp`) |
//! | extension | `call::Start::with_extension`, [`ToolContext::extension`] | a value the starter of a call hands its tool, found by its type |
//! | MCP client | `mcp::McpClient` | the client a served call came from, handed to its tool: log to it, ask its model or its user, read its roots (feature `mcp`) |
//! | questions | `mcp::Questions`, `mcp::Answers` | what a served tool asks its client at once, each under its own key, and the answers by key (feature `mcp`) |
//! | task | `mcp::McpTasks` | a long served call the client polls instead of waiting for (MCP's tasks extension); which tools run as tasks (feature `mcp`) |
//! | authorization | `mcp::import::OAuth`, `mcp::import::Authorize` | how an import reaches a server behind OAuth 2.1, and the host's part: its user's approval (feature `mcp-oauth`) |
//! | input deadline | `mcp::McpServer::with_input_deadline` | how long a call that asked a client on MCP 2026-07-28 waits on the server for the client's answers (feature `mcp`) |
//!
//! [`prelude`] holds the same names for a glob import, without the modules
//! and the executor-generic types. The rest sits one module down, by
//! concept: [`tool`], [`call`], [`gate`], [`registry`], [`turn`],
//! [`untrusted`], [`executor`]; and one module per runtime and capability,
//! behind its feature.
//!
//! # Features
//!
//! | feature | gives |
//! |---|---|
//! | `tokio` (default) | `tokio`: the executor on tokio, and the types a tokio host names |
//! | `smol` | `smol`: the executor on smol (both runtimes may be on at once) |
//! | `script` | `script`: tools the model writes in JavaScript, and code mode |
//! | `mcp` | `mcp`: serve a registry over MCP, import MCP servers, the proxy |
//! | `mcp-https` | `mcp`, with imports from `https://` endpoints |
//! | `mcp-oauth` | `mcp`, with imports from servers behind OAuth 2.1 (`mcp::import::OAuth`) |
//! | `process` | `process`: a tool that is a child process, killed whole, confined by the kernel (`process::confine`) |
//! | `model` | `model`: tool lists, calls and results in the shapes of the model APIs (OpenAI Chat Completions first) |
//! | `full` | all of the above but `mcp-https` (which brings a TLS stack) |
//! | `conformance` | `conformance`: the executor conformance suite, for executor authors (not in `full`) |
//!
//! # A host in a few lines
//!
//! One tool, a registry whose source counts its calls, a gate that lets
//! read-only tools run and asks for the rest, and a subscriber that prints
//! every event:
//!
//! ```
//! use std::sync::Arc;
//! use rho::tokio::{TokioExecutor, TurnRunner};
//! use rho::{Accounting, AnnotationGate, ApprovalRequest, Outcome, Source, Tool, ToolAnnotations};
//! use rho::{ToolCall, ToolContext, ToolOutput, ToolRegistry, TurnEvent, Verdict, async_trait};
//!
//! struct Clock;
//!
//! #[async_trait]
//! impl Tool for Clock {
//!     fn name(&self) -> &str { "clock" }
//!     fn description(&self) -> &str { "Says what time it is." }
//!     fn annotations(&self) -> ToolAnnotations { ToolAnnotations::new().read_only() }
//!     async fn run(&self, _args: serde_json::Value, _cx: ToolContext) -> ToolOutput {
//!         ToolOutput::text("noon")
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = ToolRegistry::new();
//!     let accounting = Arc::new(Accounting::default()); // quarantine after 3 crashes
//!     registry.add_source(Source::trusted("builtin").with_policy(accounting.clone()))?
//!         .add(Clock)?;
//!     // Read-only tools run at once; a person is asked about the rest.
//!     let turns = TurnRunner::new(TokioExecutor::current()?, registry)
//!         .with_gate(AnnotationGate::new())
//!         .with_approver(|_: ApprovalRequest| async { Verdict::deny("nobody is here") });
//!     let _screen = turns.events().subscribe(|event: &TurnEvent| println!("{}", event.name()))?;
//!
//!     let session = turns.turn([ToolCall::new("1", "clock", serde_json::json!({}))]).await;
//!     assert_eq!((session[0].outcome, session[0].text().as_str()), (Outcome::Succeeded, "noon"));
//!     println!("{}", accounting.health_table());
//!     Ok(())
//! }
//! ```
//!
//! # Hearing of a call's end
//!
//! Every call ends in one record, [`CallEnd`]; who hears of it depends on
//! where the listener sits, and each place has one hook:
//!
//! | hook | runs | hears | for |
//! |---|---|---|---|
//! | [`Watch`](call::Watch) | in the loop, as the call starts and ends (must be quick) | the call, then its [`CallEnd`] | the runner's own record; a registry's sources |
//! | [`SourcePolicy`](registry::SourcePolicy) | as a `Watch` (it is one), for its source's tools only | the same, plus "is this tool disabled?" | counts, quarantine ([`Accounting`]) |
//! | [`Subscriber`] | on a thread of its own, never blocking a turn | every [`TurnEvent`]: start, approval, running, updates, end | a host's screen or log |
//! | `mcp::CallObserver` | in the MCP server, per served call | the [`CallEnd`] and the MCP result the client got (after the output cap) | an audit log of a server or proxy |
//!
//! A host's loop needs none of them: awaiting a call's [`CallHandle`] gives
//! its [`CallEnd`].
//!
//! # Which boundary each kind of tool gets
//!
//! An async task can only be stopped at an `.await`: rho ends the *call* at
//! its deadline whatever the tool does, and the task is dropped the next
//! time it yields. Code that must really stop needs a stronger boundary:
//! a JavaScript tool (`script`) is stopped by the engine's interrupt, and a
//! child process (`process`, MCP servers over stdio) is killed with its
//! whole process group, or, confined (`process::confine`), with its whole
//! PID namespace, and can reach only what its confinement allows.

// The root is the prelude plus the four types generic over the executor:
// one list, so the two cannot drift apart.
#[doc(inline)]
pub use prelude::*;
pub use rho_tool_core::{CallHandle, Runner};
pub use rho_turn::{Turn, TurnRunner};

/// The names of a normal day, for `use rho::prelude::*`.
///
/// The root's names without its modules and without the four types generic
/// over the executor (`Runner`, `CallHandle`, `TurnRunner`, `Turn`): a glob
/// of the root would bring the `tokio` and `smol` modules into scope, where
/// they clash with the crates of those names (`#[tokio::main]`), and a host
/// names its runtime's types from `rho::tokio` or `rho::smol`, which then
/// never meet a second glob's names. Code generic over the executor names
/// `rho::Runner<E>`.
///
/// ```
/// use rho::prelude::*;
/// use rho::tokio::{TokioExecutor, TurnRunner};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let turns = TurnRunner::new(TokioExecutor::current()?, ToolRegistry::new());
///     let entries = turns.turn([ToolCall::new("1", "nope", serde_json::json!({}))]).await;
///     assert_eq!(entries[0].outcome, Outcome::Refused);
///     Ok(())
/// }
/// ```
pub mod prelude {
    pub use rho_registry::{Accounting, QuarantineRule, Refusal, Source, ToolRegistry};
    pub use rho_tool_core::{
        Allowance, Allowances, AnnotationGate, ApprovalRequest, Approver, CallEnd, Concurrency,
        Content, Executor, Gate, Image, Outcome, Tool, ToolAnnotations, ToolCall, ToolContext,
        ToolOutput, ToolResult, Verdict, async_trait,
    };
    pub use rho_turn::{
        KeepDetails, OutputCap, SessionEntry, Subscriber, TurnEvent, Typed, TypedTool,
    };
    pub use rho_untrusted::Plain;
}

/// Tools and their answers: the trait, its context, what it returns and
/// what the model reads.
pub mod tool {
    pub use rho_tool_core::{
        AnswerError, Audio, ClockPause, Concurrency, Content, EmbeddedResource, Image,
        ResourceContents, ResourceLink, Tool, ToolAnnotations, ToolContext, ToolOutput, ToolResult,
        async_trait,
    };
    pub use rho_turn::{Typed, TypedTool, schemars};
}

/// One call: what the model asked, starting it, following it, and how it
/// ended.
pub mod call {
    pub use rho_tool_core::{
        AbortHandle, AwaitingApproval, CallEnd, CallEvent, CallHandle, Outcome, Queued, Runner,
        Running, Start, TaskId, ToolCall, Update, Wait, WaitingFor, Watch,
    };
}

/// Gates: the check before a tool runs, the ready gate that decides by
/// tool annotations, and the approvals a runner remembers.
pub mod gate {
    pub use rho_tool_core::annotation_gate::{
        DecidedBy, GateConfig, GlobError, Match, Rule, Ruling, ToolGlob,
    };
    pub use rho_tool_core::{
        AllowAll, Allowance, AllowanceId, AllowanceScope, Allowances, AnnotationGate,
        ApprovalRequest, Approver, DestructiveTools, Gate, Verdict,
    };
}

/// The registry: tools from sources, look-up by name, what each source is
/// told, accounting and quarantine.
pub mod registry {
    pub use rho_registry::{
        Accounting, Bound, ChangeSubscription, Disabled, DisabledTool, Drain, HealthTable, OffLoop,
        Quarantine, QuarantineRule, Refusal, RegistryError, Resolved, Source, SourceHandle,
        SourcePolicy, ToolHealth, ToolInfo, ToolListNotifier, ToolRegistry, ToolState,
    };
}

/// Turns: the calls of one model message side by side, their events and
/// subscribers, and what the session keeps.
pub mod turn {
    pub use rho_turn::{
        ArgumentError, CallRef, EventBus, EventStream, ExecutionAwaitingApproval, ExecutionEnd,
        ExecutionQueued, ExecutionRunning, ExecutionStart, ExecutionUpdate, Failure, InTurn,
        KeepDetails, KeepFn, OutputCap, SchemaCache, SessionEntry, Subscriber, SubscriberId,
        Subscription, Turn, TurnAbort, TurnEvent, TurnId, TurnRunner, WeakTurnRunner, json_size,
    };
}

/// Plain data, panic and exit texts, contained disposal of foreign values.
pub mod untrusted {
    pub use rho_untrusted::*;
}

/// The executor conformance suite: every point of the call contract as a
/// named test, for an executor crate to run against itself (feature
/// `conformance`).
#[cfg(feature = "conformance")]
pub mod conformance {
    pub use rho_conformance::*;
}

/// The seam a runtime plugs into: for executor authors.
pub mod executor {
    pub use rho_tool_core::{Executor, Joined, TaskHandle};
}

/// rho on tokio: the executor, and the types a tokio host names without a
/// generic parameter (`rho::tokio::TurnRunner` is
/// [`TurnRunner`]`<TokioExecutor>`).
#[cfg(feature = "tokio")]
pub mod tokio {
    pub use rho_exec_tokio::{TokioExecutor, TokioExecutorError, TokioSleep, TokioTask};

    /// Starts single calls on tokio.
    pub type Runner = rho_tool_core::Runner<TokioExecutor>;
    /// A call in flight on tokio.
    pub type CallHandle = rho_tool_core::CallHandle<TokioExecutor>;
    /// Runs the turns of a session on tokio.
    pub type TurnRunner = rho_turn::TurnRunner<TokioExecutor>;
    /// The calls of one model message on tokio.
    pub type Turn = rho_turn::Turn<TokioExecutor>;
}

/// rho on smol: the executor, a pool with threads of its own, and the types
/// a smol host names without a generic parameter.
#[cfg(feature = "smol")]
pub mod smol {
    pub use rho_exec_smol::{SmolExecutor, SmolPool, SmolSleep, SmolTask};

    /// Starts single calls on smol.
    pub type Runner = rho_tool_core::Runner<SmolExecutor>;
    /// A call in flight on smol.
    pub type CallHandle = rho_tool_core::CallHandle<SmolExecutor>;
    /// Runs the turns of a session on smol.
    pub type TurnRunner = rho_turn::TurnRunner<SmolExecutor>;
    /// The calls of one model message on smol.
    pub type Turn = rho_turn::Turn<SmolExecutor>;
}

/// Tools the model writes in JavaScript (a fresh QuickJS sandbox per call,
/// stopped by the engine's interrupt), and code mode.
#[cfg(feature = "script")]
pub mod script {
    pub use rho_script::*;
}

/// MCP: a registry served over MCP, MCP servers imported as sources, and
/// the proxy.
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use rho_mcp::*;
}

/// A tool that is a child process: JSON in, JSON out, its whole process
/// group killed at the deadline or an abort, confined by the kernel if
/// given a [`Confinement`](process::confine::Confinement).
#[cfg(feature = "process")]
pub mod process {
    pub use rho_process::*;
}

/// The model's side of a turn: tool lists, calls and results in the
/// shapes the model APIs take, as JSON for any HTTP client.
#[cfg(feature = "model")]
pub mod model {
    pub use rho_model::*;
}

/// The workspace README's examples, compiled and run as doc tests so they
/// stay true; they use only `rho::` paths, so they run here. Only doc
/// tests read the file (it is not part of the published crate, and
/// `cfg(doctest)` keeps every other build from looking for it). The host
/// loop there speaks a model API, so they need the `model` feature (on in
/// the workspace's tests and in `--all-features`).
#[cfg(all(doctest, feature = "model"))]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadmeExamples;
