//! What the catalogue's tests share: a real tokio multi-thread runtime with
//! a registry whose source counts every call, a turn runner on a counting
//! executor, bounded waits, and the check that nothing was lost.

// A test binary uses only part of this module (dead_code), and its items
// are `pub` for that binary, not for any public API (unreachable_pub).
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rho_conformance::support::{Counting, TestTool, wait_until_blocking};
use rho_exec_tokio::TokioExecutor;
use rho_registry::{Accounting, QuarantineRule, Source, SourceHandle, ToolHealth, ToolRegistry};
use rho_tool_core::{AllowAll, Gate, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
use rho_turn::{EventBus, EventStream, SessionEntry, TurnEvent, TurnRunner};
use serde_json::{Map, Value};

/// How long anything that should happen soon may take on a loaded machine.
pub const BOUND: Duration = Duration::from_secs(60);

/// The executor every call runs on: tokio's, counting rho's live tasks.
pub type Exec = Counting<TokioExecutor>;

/// A runtime, a registry with one counted source, and the executor.
pub struct Bench {
    pub runtime: tokio::runtime::Runtime,
    pub registry: ToolRegistry,
    pub source: SourceHandle,
    pub accounts: Arc<Accounting>,
    pub executor: Exec,
}

impl Bench {
    pub fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let registry = ToolRegistry::new();
        let accounts = Arc::new(Accounting::new(QuarantineRule::never()));
        let source = registry
            .add_source(Source::trusted("builtin").with_policy(accounts.clone()))
            .expect("a new source");
        let executor = Counting::new(
            TokioExecutor::new(runtime.handle().clone()).expect("a runtime with a timer"),
        );
        Self {
            runtime,
            registry,
            source,
            accounts,
            executor,
        }
    }

    pub fn with(self, tool: impl Tool + 'static) -> Self {
        self.source.add(Arc::new(tool)).expect("a new tool");
        self
    }

    /// Turns with the default gate.
    pub fn turns(&self) -> TurnRunner<Exec> {
        self.turns_with(Arc::new(AllowAll))
    }

    /// Turns with `gate`, the registry as the runner's watch.
    pub fn turns_with(&self, gate: Arc<dyn Gate>) -> TurnRunner<Exec> {
        TurnRunner::new(self.executor.clone(), self.registry.clone()).with_gate(gate)
    }

    /// Runs `future` on the runtime, failing the test if it takes longer
    /// than [`BOUND`].
    pub fn within<F: Future>(&self, future: F) -> F::Output {
        self.runtime
            .block_on(async { tokio::time::timeout(BOUND, future).await })
            .expect("finished within the bound (nothing stuck)")
    }

    /// Runs one turn of `calls` with a stream subscriber, and checks that
    /// nothing was lost: one entry per call in order, one start and one end
    /// event per call.
    pub fn run(&self, turns: &TurnRunner<Exec>, calls: Vec<ToolCall>) -> Run {
        let ids: Vec<String> = calls.iter().map(|call| call.id.clone()).collect();
        let mut stream = turns.events().stream();
        let entries = self.within(turns.turn(calls));
        let events = drain(&mut stream);
        assert_complete(&ids, &entries, &events);
        Run { entries, events }
    }

    /// Waits (bounded) until no rho task is left and the registry counts no
    /// call in flight.
    pub fn assert_nothing_left(&self) {
        wait_until_blocking(BOUND, || self.executor.live() == 0);
        assert_eq!(self.executor.live(), 0, "rho tasks left on the executor");
        assert_eq!(self.registry.in_flight(), 0, "calls left in flight");
    }

    /// The counts of `tool` (all zero if it was never called).
    pub fn health(&self, tool: &str) -> ToolHealth {
        self.accounts.tool_health(tool).unwrap_or_default()
    }
}

/// A turn's session entries and the events a stream subscriber got.
pub struct Run {
    pub entries: Vec<SessionEntry>,
    pub events: Vec<Arc<TurnEvent>>,
}

impl Run {
    /// The end event of the call at `index`.
    pub fn end(&self, index: usize) -> &rho_turn::ExecutionEnd {
        self.events
            .iter()
            .find_map(|event| match event.as_ref() {
                TurnEvent::ToolExecutionEnd(end) if end.index == index => Some(end),
                _ => None,
            })
            .expect("an end event for every call")
    }

    /// The names of the events of the call at `index`, in order.
    pub fn names(&self, index: usize) -> Vec<&'static str> {
        self.events
            .iter()
            .filter(|event| event.index() == index)
            .map(|event| event.name())
            .collect()
    }
}

/// Everything buffered for `stream`.
pub fn drain(stream: &mut EventStream) -> Vec<Arc<TurnEvent>> {
    std::iter::from_fn(|| stream.try_recv()).collect()
}

/// One entry per call, in order, with its id; one start and one end event
/// per call.
pub fn assert_complete(ids: &[String], entries: &[SessionEntry], events: &[Arc<TurnEvent>]) {
    assert_eq!(entries.len(), ids.len(), "one session entry per call");
    for (index, (entry, id)) in entries.iter().zip(ids).enumerate() {
        assert_eq!(&entry.call_id, id, "entry {index} is its call's");
        let count = |name: &str| {
            events
                .iter()
                .filter(|event| event.index() == index && event.name() == name)
                .count()
        };
        assert_eq!(count("tool_execution_start"), 1, "call {index}: starts");
        assert_eq!(count("tool_execution_end"), 1, "call {index}: ends");
    }
}

/// A tool made of a closure with a schema of its own.
pub struct SchemaTool {
    inner: TestTool,
    schema: Value,
}

impl SchemaTool {
    pub fn new(inner: TestTool, schema: Value) -> Self {
        Self { inner, schema }
    }
}

#[async_trait]
impl Tool for SchemaTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        "a tool of the catalogue, with a schema"
    }
    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    fn timeout(&self) -> Duration {
        self.inner.timeout()
    }
    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        self.inner.run(arguments, context).await
    }
}

/// A tool `name` that answers "ran" at once (and counts its runs).
pub fn answering(name: &str) -> TestTool {
    TestTool::answering(name, "ran")
}

/// `{"a": {"a": ... {} ...}}`, `depth` objects deep, built without
/// recursion.
pub fn nested_objects(depth: usize) -> Value {
    let mut value = Value::Object(Map::new());
    for _ in 0..depth {
        let mut map = Map::new();
        map.insert("a".to_owned(), value);
        value = Value::Object(map);
    }
    value
}

/// Drops `value` without recursion: `serde_json::Value`'s own drop is
/// recursive (serde-rs/json#440) and overflows the stack on deep values.
pub fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, value)| value)),
            _ => {}
        }
    }
}

/// A bus whose subscribers keep `updates` updates each.
pub fn bus(updates: usize) -> EventBus {
    EventBus::with_buffer(updates)
}
