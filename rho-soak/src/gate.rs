//! The soak's gate: allows, waits, denies, panics or never answers, as each
//! call's arguments say ([`GatePlan`]).

use std::time::Duration;

use rho_tool_core::{Executor, Gate, Tool, ToolCall, Verdict, async_trait};
use serde::Deserialize;

use crate::plan::GatePlan;
use crate::witness::{self, note_code};

/// How long a gate that holds would wait if nobody aborted the call.
const HOUR: Duration = Duration::from_secs(3600);

/// The gate of one lane; it waits on the lane's executor's timer.
pub(crate) struct SoakGate<E> {
    executor: E,
}

impl<E> SoakGate<E> {
    pub(crate) fn new(executor: E) -> Self {
        Self { executor }
    }
}

#[async_trait]
impl<E: Executor> Gate for SoakGate<E> {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        note_code();
        // A call the soak did not plan for its gate (there is none) is allowed.
        let plan = GatePlan::deserialize(&call.arguments["gate"]).unwrap_or(GatePlan::Allow);
        let wait = |ms: u64| self.executor.sleep(Duration::from_millis(ms));
        match plan {
            GatePlan::Allow => Verdict::Allow,
            GatePlan::WaitAllow { ms } => {
                wait(ms).await;
                Verdict::Allow
            }
            GatePlan::Deny => Verdict::deny("the soak's gate denies this call"),
            GatePlan::WaitDeny { ms } => {
                wait(ms).await;
                Verdict::deny("the soak's gate thought about it, and denies this call")
            }
            GatePlan::Panic { reason } => witness::witness(reason).reason.raise(),
            GatePlan::WaitPanic { ms, reason } => {
                let witness = witness::witness(reason);
                wait(ms).await;
                witness.reason.raise()
            }
            GatePlan::Hold => {
                self.executor.sleep(HOUR).await;
                Verdict::Allow
            }
        }
    }
}
