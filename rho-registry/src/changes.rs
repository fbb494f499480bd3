//! Telling whoever lists the registry's tools that the list changed.
//!
//! A listing is a copy: a host that showed the model (or an MCP client)
//! the tools must hear when that copy goes stale, so it can list them
//! again. The list changes when a source or a tool is added, removed or
//! swapped (the registry sees that itself), and when a source's policy
//! disables a tool or puts it back (only the policy sees that: it is told
//! a [`ToolListNotifier`] when its source is registered, through
//! [`SourcePolicy::attach`](crate::SourcePolicy::attach)).
//!
//! Listeners are plain callbacks, so the registry needs no runtime: a
//! listener that has async work to do wakes its task (a channel send, a
//! `Notify`) and returns.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use rho_tool_core::untrusted::call_contained;

type Listener = Arc<dyn Fn() + Send + Sync>;

/// A registry's listeners and its count of changes.
#[derive(Default)]
pub(crate) struct Listeners {
    /// How many changes were announced; starts at 0.
    generation: AtomicU64,
    next_id: AtomicU64,
    /// Copied out before the listeners run, so a listener may subscribe or
    /// unsubscribe without a deadlock.
    list: RwLock<Arc<Vec<(u64, Listener)>>>,
}

impl Listeners {
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Counts a change and runs every listener, each with its panics
    /// contained (a panicking listener changes nothing for the others).
    pub(crate) fn announce(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let list = self
            .list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (_, listener) in list.iter() {
            let _ = call_contained(|| listener());
        }
    }

    pub(crate) fn subscribe(self: &Arc<Self>, listener: Listener) -> ChangeSubscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut list = self.list.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = Vec::clone(&list);
        next.push((id, listener));
        *list = Arc::new(next);
        ChangeSubscription {
            listeners: Arc::downgrade(self),
            id,
        }
    }

    fn unsubscribe(&self, id: u64) {
        let mut list = self.list.write().unwrap_or_else(PoisonError::into_inner);
        let next: Vec<(u64, Listener)> = list
            .iter()
            .filter(|(held, _)| *held != id)
            .cloned()
            .collect();
        *list = Arc::new(next);
    }

    pub(crate) fn len(&self) -> usize {
        self.list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listeners")
            .field("generation", &self.generation())
            .field("listeners", &self.len())
            .finish()
    }
}

/// A listener of [`ToolRegistry::on_tools_changed`](crate::ToolRegistry::on_tools_changed);
/// dropping it removes the listener.
#[must_use = "dropping the subscription removes the listener at once"]
pub struct ChangeSubscription {
    listeners: Weak<Listeners>,
    id: u64,
}

impl Drop for ChangeSubscription {
    fn drop(&mut self) {
        if let Some(listeners) = self.listeners.upgrade() {
            listeners.unsubscribe(self.id);
        }
    }
}

impl fmt::Debug for ChangeSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeSubscription")
            .field("id", &self.id)
            .finish()
    }
}

/// Tells a registry's listeners that its tool list changed, for changes
/// the registry cannot see itself: a policy that disables a tool or puts
/// it back ([`SourcePolicy::attach`](crate::SourcePolicy::attach)).
///
/// Cheap to clone. It does not keep the registry alive: once the registry
/// is gone, [`notify`](ToolListNotifier::notify) does nothing.
#[derive(Clone)]
pub struct ToolListNotifier {
    listeners: Weak<Listeners>,
}

impl ToolListNotifier {
    pub(crate) fn new(listeners: &Arc<Listeners>) -> Self {
        Self {
            listeners: Arc::downgrade(listeners),
        }
    }

    /// Tells the registry's listeners, on this thread, that the tool list
    /// changed.
    pub fn notify(&self) {
        if let Some(listeners) = self.listeners.upgrade() {
            listeners.announce();
        }
    }
}

impl fmt::Debug for ToolListNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolListNotifier")
            .field("registry_alive", &(self.listeners.strong_count() > 0))
            .finish()
    }
}
