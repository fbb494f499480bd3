//! What the integration tests share: a tokio runtime, small tools and
//! gates, a registry with accounting, and a subscriber that records.

// Each test binary uses only part of this module (dead_code), and its
// items are `pub` for those binaries, not for any public API
// (unreachable_pub).
#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
use rho_tool_core::{
    Concurrency, Executor, Gate, Tool, ToolAnnotations, ToolCall, ToolContext, ToolOutput, Verdict,
    async_trait,
};
use rho_turn::{Subscription, TurnEvent, TurnRunner};
use serde_json::{Value, json};

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

pub fn executor(runtime: &tokio::runtime::Runtime) -> TokioExecutor {
    TokioExecutor::new(runtime.handle().clone()).expect("a runtime with a timer")
}

/// A registry with one trusted source (`builtin`) and one untrusted
/// (`agent`), each with its own accounting.
pub struct Tools {
    pub registry: ToolRegistry,
    pub builtin: Arc<Accounting>,
    pub agent: Arc<Accounting>,
    builtin_source: rho_registry::SourceHandle,
    agent_source: rho_registry::SourceHandle,
}

impl Tools {
    pub fn new() -> Self {
        let registry = ToolRegistry::new();
        let builtin = Arc::new(Accounting::new(QuarantineRule::after(3)));
        let agent = Arc::new(Accounting::new(QuarantineRule::after(3)));
        let builtin_source = registry
            .add_source(Source::trusted("builtin").with_policy(builtin.clone()))
            .expect("a new source");
        let agent_source = registry
            .add_source(Source::untrusted("agent").with_policy(agent.clone()))
            .expect("a new source");
        Self {
            registry,
            builtin,
            agent,
            builtin_source,
            agent_source,
        }
    }

    pub fn add(self, tool: impl Tool + 'static) -> Self {
        self.builtin_source.add(Arc::new(tool)).expect("a new tool");
        self
    }

    pub fn add_untrusted(self, tool: impl Tool + 'static) -> Self {
        self.agent_source.add(Arc::new(tool)).expect("a new tool");
        self
    }

    /// Turns on `executor` with `gate`, the registry as the runner's watch.
    pub fn turns<E: Executor>(&self, executor: E, gate: Arc<dyn Gate>) -> TurnRunner<E> {
        TurnRunner::new(executor, self.registry.clone()).with_gate(gate)
    }
}

/// A tool written in a line: `name`, schema "any object", and `run`.
pub struct FnTool<F> {
    pub name: &'static str,
    pub parameters: Value,
    pub timeout: Duration,
    /// Side by side unless a test says otherwise: most tests here are of
    /// calls that overlap; the order's own tests choose per tool.
    pub concurrency: Concurrency,
    /// None by default: destructive, as MCP reads absent hints.
    pub annotations: ToolAnnotations,
    pub run: F,
}

pub fn tool<F, Fut>(name: &'static str, run: F) -> FnTool<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolOutput> + Send + 'static,
{
    FnTool {
        name,
        parameters: json!({ "type": "object" }),
        timeout: Duration::from_secs(60),
        concurrency: Concurrency::Shared,
        annotations: ToolAnnotations::new(),
        run,
    }
}

impl<F> FnTool<F> {
    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

#[async_trait]
impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolOutput> + Send + 'static,
{
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "a test tool"
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn timeout(&self) -> Duration {
        self.timeout
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
    fn annotations(&self) -> ToolAnnotations {
        self.annotations.clone()
    }
    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        (self.run)(arguments, context).await
    }
}

/// Echoes its `text` argument at once.
pub fn echo() -> impl Tool {
    tool("echo", |args, _cx| async move {
        ToolOutput::text(args["text"].as_str().unwrap_or_default())
    })
}

/// Sleeps an hour on the executor's timer (until it is killed).
pub fn hang() -> impl Tool {
    tool("hang", |_args, cx: ToolContext| async move {
        cx.sleep(Duration::from_secs(3600)).await;
        ToolOutput::text("woke up")
    })
}

/// Allows everything, counting the calls it was asked about.
#[derive(Default)]
pub struct CountingGate {
    pub asked: AtomicUsize,
}

#[async_trait]
impl Gate for CountingGate {
    async fn check(&self, _call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Verdict::Allow
    }
}

/// Waits an hour (a person who never answers) for the tools named in
/// `held`; allows the others at once.
pub struct HoldGate<E> {
    pub executor: E,
    pub held: &'static [&'static str],
}

#[async_trait]
impl<E: Executor> Gate for HoldGate<E> {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        if self.held.contains(&tool.name()) {
            self.executor.sleep(Duration::from_secs(3600)).await;
        }
        Verdict::Allow
    }
}

/// A subscriber that keeps every event it gets.
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<TurnEvent>>>,
}

impl Recorder {
    pub fn subscribe(&self, turns: &TurnRunner<impl Executor>) -> Subscription {
        let events = self.events.clone();
        turns
            .events()
            .subscribe(move |event: &TurnEvent| {
                events.lock().expect("not poisoned").push(event.clone());
            })
            .expect("a subscriber thread")
    }

    pub fn all(&self) -> Vec<TurnEvent> {
        self.events.lock().expect("not poisoned").clone()
    }

    /// The names of the events of the call at `index`, in order.
    pub fn names_of(&self, index: usize) -> Vec<&'static str> {
        self.all()
            .iter()
            .filter(|event| event.index() == index)
            .map(TurnEvent::name)
            .collect()
    }

    pub fn ends(&self) -> Vec<rho_turn::ExecutionEnd> {
        self.all()
            .into_iter()
            .filter_map(|event| match event {
                TurnEvent::ToolExecutionEnd(end) => Some(end),
                _ => None,
            })
            .collect()
    }

    pub fn count(&self, name: &str) -> usize {
        self.all().iter().filter(|e| e.name() == name).count()
    }
}

/// Waits (polling, on this thread) until `done` holds, for at most 10 s.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn call(id: impl Into<String>, name: &str, arguments: Value) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

/// One test on each runtime from one list: each `name => body` makes
/// `on_tokio::name` and `on_smol::name`, calling `body(executor, block_on)`
/// with a tokio runtime's executor and `block_on`, and with smol's global
/// executor and `smol::block_on`.
#[macro_export]
macro_rules! on_tokio_and_smol {
    ($($name:ident => $body:ident;)*) => {
        mod on_tokio {
            $(
                #[test]
                fn $name() {
                    let runtime = $crate::support::runtime();
                    super::$body($crate::support::executor(&runtime), |turn| runtime.block_on(turn));
                }
            )*
        }
        mod on_smol {
            $(
                #[test]
                fn $name() {
                    super::$body(rho_exec_smol::SmolExecutor::global(), smol::block_on);
                }
            )*
        }
    };
}
