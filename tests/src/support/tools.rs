//! Test tools: a tool made of a closure, a `run` that panics before it
//! returns its future, a tool whose metadata panics.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};

use super::hostile::Reason;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

type RunFn = dyn Fn(serde_json::Value, ToolContext) -> BoxFuture<ToolOutput> + Send + Sync;

/// A tool made of a closure; counts its runs.
///
/// The closure is called inside the call's task (rho calls `run` there);
/// the future it returns is the tool's future. Tools that wait use the
/// executor's timer ([`Executor::sleep`](rho_tool_core::Executor::sleep)),
/// never a runtime's directly, so they run on any executor.
pub struct TestTool {
    name: String,
    timeout: Duration,
    untrusted: bool,
    run: Box<RunFn>,
    runs: Arc<AtomicUsize>,
}

impl TestTool {
    /// A tool called `name` that runs `run`.
    pub fn new<F, Fut>(name: &str, run: F) -> Self
    where
        F: Fn(serde_json::Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        Self {
            name: name.to_owned(),
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
            untrusted: false,
            run: Box::new(move |arguments, context| Box::pin(run(arguments, context))),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A tool that answers `text` at once.
    pub fn answering(name: &str, text: &'static str) -> Self {
        Self::new(name, move |_, _| async move { ToolOutput::text(text) })
    }

    /// Sets the tool's timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Marks the tool as untrusted.
    pub fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    /// The counter of this tool's runs (shared, so it can be read after the
    /// tool moved into an `Arc<dyn Tool>`).
    pub fn runs(&self) -> Arc<AtomicUsize> {
        self.runs.clone()
    }

    /// The tool as rho holds it.
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl fmt::Debug for TestTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestTool")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .field("untrusted", &self.untrusted)
            .field("runs", &self.runs.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a tool of the conformance suite"
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        (self.run)(arguments, context).await
    }
}

/// A hand-written `run` (possible without `async fn`) that raises its
/// [`Reason`] before it returns its future.
pub struct RaisesInRun {
    name: String,
    reason: Reason,
    timeout: Duration,
}

impl RaisesInRun {
    /// A tool called `name` whose `run` raises `reason`.
    pub fn new(name: &str, reason: &Reason) -> Self {
        Self {
            name: name.to_owned(),
            reason: reason.clone(),
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
        }
    }

    /// Sets the tool's timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl fmt::Debug for RaisesInRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaisesInRun")
            .field("name", &self.name)
            .field("reason", &self.reason.kind())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for RaisesInRun {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "panics in `run` itself, before returning its future"
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn run<'life0, 'async_trait>(
        &'life0 self,
        _arguments: serde_json::Value,
        _context: ToolContext,
    ) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        self.reason.raise()
    }
}

/// A tool whose `timeout` panics when the loop reads it (with a `&str`);
/// counts its runs (there must be none).
#[derive(Debug, Default)]
pub struct MetadataPanics {
    runs: Arc<AtomicUsize>,
}

/// The message [`MetadataPanics`] panics with.
pub const METADATA_PANIC: &str = "no timeout configured";

impl MetadataPanics {
    /// The tool's name.
    pub const NAME: &'static str = "bad_timeout";

    /// The counter of this tool's runs.
    pub fn runs(&self) -> Arc<AtomicUsize> {
        self.runs.clone()
    }
}

#[async_trait]
impl Tool for MetadataPanics {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> &str {
        "panics in `timeout`"
    }

    fn timeout(&self) -> Duration {
        std::panic::panic_any(METADATA_PANIC)
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("ran")
    }
}
