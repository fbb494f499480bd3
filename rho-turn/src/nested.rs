//! Calls made by a running call: the parent they report to, and the
//! session entries they leave for the parent's own entry.
//!
//! A turn made within a call (a script calling tools) is an ordinary turn
//! with a [`Parent`]: its events name the parent, a gate that waits does
//! not run the parent's clock (the turn holds a pause of it while any of
//! its calls awaits approval, as the parent's own gate would not count
//! either), and its session entries end up inside the parent's, when the
//! parent is a call of a turn of the same runner.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rho_tool_core::{TaskId, ToolContext};

use crate::entry::SessionEntry;

/// The running call a turn's calls were made by.
pub(crate) struct Parent {
    /// Its id, for the events.
    pub(crate) call_id: String,
    /// Its context: its clock to pause, its task to report to.
    pub(crate) context: ToolContext,
}

impl Parent {
    pub(crate) fn of(context: &ToolContext) -> Self {
        Self {
            call_id: context.call_id().to_owned(),
            context: context.clone(),
        }
    }
}

/// The most parents whose calls' entries are kept unclaimed (see
/// [`NestedEntries`]).
const MAX_UNCLAIMED: usize = 1024;

/// The session entries of calls made within calls, kept for the parent's
/// entry until its call ends.
///
/// The parent's turn claims its call's entries when it starts the call,
/// but the call's task may already have run calls within it by then (the
/// task runs as soon as it is spawned, on another thread): so entries are
/// kept whether or not they were claimed yet. Entries no turn claims (a
/// parent run on a bare runner, not in a turn) would stay for ever: at
/// most [`MAX_UNCLAIMED`] parents' are kept, the oldest dropped first.
#[derive(Debug, Default)]
pub(crate) struct NestedEntries {
    /// By the parent's task id (as a number: ids grow with time).
    by_parent: Mutex<BTreeMap<u64, Kept>>,
}

#[derive(Debug, Default)]
struct Kept {
    /// A turn started the parent's call, and takes these at its end.
    claimed: bool,
    entries: Vec<SessionEntry>,
}

impl NestedEntries {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Kept>> {
        self.by_parent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn started the call of `task`: it takes what calls made within
    /// it leave, at its end.
    pub(crate) fn expect(&self, task: TaskId) {
        if task != TaskId::NONE {
            self.lock().entry(task.as_u64()).or_default().claimed = true;
        }
    }

    /// Calls made within the call of `task` ended with `entries`.
    pub(crate) fn add(&self, task: TaskId, entries: &[SessionEntry]) {
        self.add_for(task.as_u64(), entries);
    }

    fn add_for(&self, task: u64, entries: &[SessionEntry]) {
        let mut by_parent = self.lock();
        by_parent
            .entry(task)
            .or_default()
            .entries
            .extend_from_slice(entries);
        if by_parent.len() > MAX_UNCLAIMED {
            let unclaimed: Vec<u64> = by_parent
                .iter()
                .filter(|(_, kept)| !kept.claimed)
                .map(|(task, _)| *task)
                .collect();
            // Task ids grow: the first are the oldest.
            let extra = unclaimed.len().saturating_sub(MAX_UNCLAIMED);
            for task in unclaimed.into_iter().take(extra) {
                by_parent.remove(&task);
            }
        }
    }

    /// The call of `task` ended: what was kept for it.
    pub(crate) fn take(&self, task: TaskId) -> Vec<SessionEntry> {
        self.take_for(task.as_u64())
    }

    fn take_for(&self, task: u64) -> Vec<SessionEntry> {
        self.lock()
            .remove(&task)
            .map(|kept| kept.entries)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_tool_core::{Outcome, ToolResult};
    use std::time::Duration;

    fn entry(id: &str) -> SessionEntry {
        SessionEntry {
            call_id: id.to_owned(),
            tool: "t".to_owned(),
            outcome: Outcome::Succeeded,
            result: ToolResult::success("ok"),
            cut_bytes: 0,
            waited: Duration::ZERO,
            queued: Duration::ZERO,
            ran: None,
            nested: Vec::new(),
        }
    }

    #[test]
    fn entries_left_before_the_claim_are_still_taken_by_it() {
        let nested = NestedEntries::default();
        nested.add_for(7, &[entry("early")]);
        nested.lock().entry(7).or_default().claimed = true;
        nested.add_for(7, &[entry("late")]);
        let taken: Vec<String> = nested.take_for(7).into_iter().map(|e| e.call_id).collect();
        assert_eq!(taken, ["early", "late"]);
        assert!(nested.take_for(7).is_empty());
    }

    #[test]
    fn unclaimed_entries_are_bounded_oldest_dropped_first() {
        let nested = NestedEntries::default();
        nested.lock().entry(1).or_default().claimed = true;
        nested.add_for(2, &[entry("first")]);
        for task in 3..(MAX_UNCLAIMED as u64 + 13) {
            nested.add_for(task, &[entry("more")]);
        }
        assert!(nested.lock().len() <= MAX_UNCLAIMED + 1);
        assert!(
            nested.take_for(2).is_empty(),
            "the oldest unclaimed went first"
        );
        nested.add_for(1, &[entry("kept")]);
        assert_eq!(
            nested.take_for(1).len(),
            1,
            "a claimed parent is never dropped"
        );
    }
}
