//! A gate made of a closure.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rho_tool_core::{Gate, Tool, ToolCall, Verdict, async_trait};

use super::tools::BoxFuture;

type CheckFn = dyn Fn(ToolCall) -> BoxFuture<Verdict> + Send + Sync;

/// A gate made of a closure; it gets a copy of the call. Gates that wait
/// use the executor's timer or a [`Latch`](super::Latch).
pub struct TestGate {
    check: Box<CheckFn>,
}

impl TestGate {
    /// A gate that runs `check`.
    pub fn new<F, Fut>(check: F) -> Arc<Self>
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        Arc::new(Self {
            check: Box::new(move |call| Box::pin(check(call))),
        })
    }
}

impl fmt::Debug for TestGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestGate").finish_non_exhaustive()
    }
}

#[async_trait]
impl Gate for TestGate {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        (self.check)(call.clone()).await
    }
}
