//! The source's policy: rho's per-tool accounting, and the whole server
//! disabled while it is quarantined.

use std::sync::Arc;

use rho_registry::{Accounting, Disabled, SourcePolicy, ToolListNotifier};
use rho_tool_core::{CallEnd, TaskId, ToolCall, Watch};

use super::health::Health;

/// Tells the host's [`Accounting`] of every call (crashes and timeouts
/// count against each tool), and answers "disabled" for every tool while
/// the server is quarantined as a whole.
pub(crate) struct ImportPolicy {
    pub(crate) accounting: Arc<Accounting>,
    pub(crate) health: Arc<Health>,
}

impl Watch for ImportPolicy {
    fn started(&self, call: &ToolCall, task: TaskId) {
        self.accounting.started(call, task);
    }

    fn ended(&self, end: &CallEnd) {
        self.accounting.ended(end);
    }
}

impl SourcePolicy for ImportPolicy {
    fn disabled(&self, tool: &str) -> Option<Disabled> {
        self.health
            .quarantine()
            .or_else(|| self.accounting.disabled(tool))
    }

    fn attach(&self, notifier: ToolListNotifier) {
        self.health.attach(notifier.clone());
        self.accounting.attach(notifier);
    }
}
