//! A registered tool as the watch of its own calls.
//!
//! A call started with what the registry resolves
//! ([`Resolved`](crate::Resolved), [`ToolRegistry::start_for`](crate::ToolRegistry::start_for),
//! a turn) is given
//! its tool's entry as the call's own [`Watch`]: the core tells that entry
//! when the call starts and how it ended, and the entry tells its source.
//! So a source hears of exactly the calls of its own tools, also after the
//! tool was removed or its name given to another source's tool, and
//! whether or not the host gave the runner a watch of its own: nothing
//! needs wiring, and nothing is attributed by name.
//!
//! The registry only counts the calls in flight of sources that listen
//! (those with a policy); a source without one is given no watch at all,
//! so its calls cost nothing here.

use std::sync::Arc;

use rho_tool_core::{CallEnd, TaskId, ToolCall, Watch};

use crate::entry::Entry;

impl Entry {
    /// The watch to give a call of this tool, if its source listens.
    pub(crate) fn call_watch(self: &Arc<Self>) -> Option<Arc<dyn Watch>> {
        if self.source.has_policy() {
            Some(self.clone())
        } else {
            None
        }
    }
}

impl Watch for Entry {
    fn started(&self, call: &ToolCall, task: TaskId) {
        self.source.started(call, task);
    }

    fn ended(&self, end: &CallEnd) {
        self.source.ended(end);
    }
}
