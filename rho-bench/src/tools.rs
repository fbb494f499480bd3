//! The tools and gates the figures run, each written once for rho (`Tool`,
//! `Gate`) and for the floor (`FloorTool`, `FloorGate`) with the same body.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rho_tool_core::{Gate, Tool, ToolCall, ToolContext, ToolOutput, Verdict};
use tokio::sync::Semaphore;

use crate::floor::{FloorGate, FloorTool};

/// A no-op tool: answers "ok" at once.
#[derive(Debug)]
pub(crate) struct NoOp;

#[async_trait]
impl Tool for NoOp {
    fn name(&self) -> &str {
        "noop"
    }

    fn description(&self) -> &str {
        "Does nothing."
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

#[async_trait]
impl FloorTool for NoOp {
    fn timeout(&self) -> Duration {
        <dyn Tool>::DEFAULT_TIMEOUT
    }

    async fn run(&self, _arguments: serde_json::Value) -> String {
        "ok".to_owned()
    }
}

/// Something tools or gates wait on until it is released: a closed-at-the-
/// end semaphore with no permits (its waiters live inside the waiting
/// futures, so waiting allocates nothing), and a count of the waiters.
#[derive(Debug)]
pub(crate) struct Hold {
    semaphore: Semaphore,
    waiting: AtomicUsize,
}

impl Hold {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            semaphore: Semaphore::new(0),
            waiting: AtomicUsize::new(0),
        })
    }

    /// Waits until released.
    async fn wait(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        // Err once closed: that is the release.
        let _ = self.semaphore.acquire().await;
    }

    /// How many have started waiting.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Releases every waiter, now and later.
    pub(crate) fn release(&self) {
        self.semaphore.close();
    }
}

/// A tool that waits (yields) until its hold is released.
#[derive(Debug)]
pub(crate) struct Waits {
    pub(crate) hold: Arc<Hold>,
    pub(crate) timeout: Duration,
}

#[async_trait]
impl Tool for Waits {
    fn name(&self) -> &str {
        "waits"
    }

    fn description(&self) -> &str {
        "Waits until released."
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        self.hold.wait().await;
        ToolOutput::text("released")
    }
}

#[async_trait]
impl FloorTool for Waits {
    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, _arguments: serde_json::Value) -> String {
        self.hold.wait().await;
        "released".to_owned()
    }
}

/// A tool that never yields: it spins until told to stop.
#[derive(Debug)]
pub(crate) struct Spins {
    pub(crate) timeout: Duration,
    stop: AtomicBool,
    exits: AtomicUsize,
}

impl Spins {
    pub(crate) fn new(timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            timeout,
            stop: AtomicBool::new(false),
            exits: AtomicUsize::new(0),
        })
    }

    fn spin(&self) {
        while !self.stop.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        self.exits.fetch_add(1, Ordering::Release);
    }

    /// Lets the next call spin.
    pub(crate) fn arm(&self) {
        self.stop.store(false, Ordering::Release);
    }

    /// Stops the spinning call and waits (on this thread) until it has
    /// returned, so its worker is free again; `exits` is how many calls
    /// will have returned then.
    pub(crate) fn stop_and_wait(&self, exits: usize) {
        self.stop.store(true, Ordering::Release);
        while self.exits.load(Ordering::Acquire) < exits {
            std::thread::yield_now();
        }
    }
}

#[async_trait]
impl Tool for Spins {
    fn name(&self) -> &str {
        "spins"
    }

    fn description(&self) -> &str {
        "Never yields until stopped."
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        self.spin();
        ToolOutput::text("stopped")
    }
}

#[async_trait]
impl FloorTool for Spins {
    fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, _arguments: serde_json::Value) -> String {
        self.spin();
        "stopped".to_owned()
    }
}

/// A gate that waits until its hold is released, then denies.
#[derive(Debug)]
pub(crate) struct HoldGate(pub(crate) Arc<Hold>);

#[async_trait]
impl Gate for HoldGate {
    async fn check(&self, _call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        self.0.wait().await;
        Verdict::deny("released")
    }
}

#[async_trait]
impl FloorGate for HoldGate {
    async fn check(&self, _call: &ToolCall) -> bool {
        self.0.wait().await;
        false
    }
}

/// `count` calls of `name`, with ids `call-0`, `call-1`, ... and `{}` as
/// arguments, made before a round so that both sides get the same input.
pub(crate) fn calls(name: &str, count: usize) -> Vec<ToolCall> {
    (0..count)
        .map(|index| {
            ToolCall::new(
                format!("call-{index}"),
                name,
                serde_json::Value::Object(serde_json::Map::new()),
            )
        })
        .collect()
}
