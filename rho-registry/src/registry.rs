//! `ToolRegistry`: the tools of all sources, by name.

use std::fmt;
use std::sync::Arc;

use rho_tool_core::Start;

use crate::changes::{ChangeSubscription, ToolListNotifier};
use crate::entry::{Entry, ToolInfo};
use crate::error::RegistryError;
use crate::handle::SourceHandle;
use crate::resolve::{DisabledTool, Refusal, Resolved};
use crate::snapshot::{Shared, Snapshot};
use crate::source::Source;
use crate::suggest;

/// The tools a host offers the model, gathered from sources.
///
/// Cheap to clone; clones share everything. Look-ups
/// ([`resolve`](ToolRegistry::resolve), [`start_for`](ToolRegistry::start_for)) and
/// listings ([`tools`](ToolRegistry::tools)) read an immutable snapshot and
/// never wait for a change in progress; sources change their tools through
/// their [`SourceHandle`] at any time.
///
/// Each source's [`SourcePolicy`](crate::SourcePolicy) is told of every
/// call of its tools started through the registry
/// ([`Runner::start`](rho_tool_core::Runner::start) with what the registry resolves, a turn), on any
/// runner: the registry gives each such call its tool's entry as the
/// call's own watch, so there is nothing to wire.
pub struct ToolRegistry {
    shared: Arc<Shared>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared::new()),
        }
    }

    /// Registers `source`; add its tools through the returned handle.
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateSource`] when a source of that name is
    /// registered.
    pub fn add_source(&self, source: Source) -> Result<SourceHandle, RegistryError> {
        let source = Arc::new(source.registered(self.shared.in_flight.clone()));
        self.shared.update(|snapshot| {
            if snapshot.sources.contains_key(source.name()) {
                return Err(RegistryError::DuplicateSource {
                    name: source.name().to_owned(),
                });
            }
            snapshot
                .sources
                .insert(source.name().to_owned(), source.clone());
            Ok(())
        })?;
        source.attach(self.notifier());
        Ok(SourceHandle::new(self.shared.clone(), source))
    }

    /// Removes the source `name` and all its tools, at once; returns whether
    /// there was one. Calls in flight finish (and their source is still
    /// told how they ended); the source's handles stop working.
    pub fn remove_source(&self, name: &str) -> bool {
        let removed: Result<bool, RegistryError> = self.shared.update(|snapshot| {
            let Some(source) = snapshot.sources.remove(name) else {
                return Ok(false);
            };
            snapshot
                .tools
                .retain(|_, entry| !Arc::ptr_eq(&entry.source, &source));
            Ok(true)
        });
        removed.unwrap_or(false)
    }

    /// The names of the registered sources, sorted.
    pub fn sources(&self) -> Vec<String> {
        self.shared.load().sources.keys().cloned().collect()
    }

    /// The tools for the model, sorted by name: every registered tool its
    /// source has not disabled.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let snapshot = self.shared.load();
        enabled(&snapshot)
            .map(|entry| ToolInfo::clone(&entry.info))
            .collect()
    }

    /// Looks up the tool `name`.
    ///
    /// # Errors
    ///
    /// [`Refusal::Unknown`] (with the nearest names) when no tool has that
    /// name; [`Refusal::Disabled`] when its source disabled it. Either gives
    /// the model's error result with [`Refusal::to_result`], or a finished
    /// call with `runner.start(call, refusal)`.
    pub fn resolve(&self, name: &str) -> Result<Resolved, Refusal> {
        let snapshot = self.shared.load();
        let Some(entry) = snapshot.tools.get(name) else {
            let names = enabled(&snapshot).map(Entry::name);
            return Err(Refusal::Unknown {
                name: name.to_owned(),
                nearest: suggest::nearest(name, names),
            });
        };
        match entry.source.disabled(name) {
            Some(disabled) => Err(Refusal::Disabled(DisabledTool::new(
                entry.clone(),
                disabled,
            ))),
            None => Ok(Resolved::new(entry.clone())),
        }
    }

    /// What a call of `name` starts with, for
    /// [`Runner::start`](rho_tool_core::Runner::start): its tool,
    /// with its source as the call's watch, if the registry has it
    /// ([`Resolved`]); otherwise a refusal that ends the call at once with
    /// the refusal's error result, told to a disabled tool's source
    /// ([`Refusal`]). Either way the host awaits one
    /// [`CallHandle`](rho_tool_core::CallHandle), as for any call:
    ///
    /// ```
    /// # async fn demo<E: rho::Executor>(registry: rho::ToolRegistry, runner: rho::Runner<E>) {
    /// let call = rho::ToolCall::new("1", "echo", serde_json::json!({}));
    /// let end = runner.start(call.clone(), registry.start_for(&call.name)).await;
    /// # }
    /// ```
    pub fn start_for(&self, name: &str) -> Start {
        match self.resolve(name) {
            Ok(resolved) => resolved.into(),
            Err(refusal) => refusal.into(),
        }
    }

    /// Calls `listener` each time the tool list ([`tools`](ToolRegistry::tools))
    /// may have changed, until the returned subscription is dropped.
    ///
    /// The registry calls it after a source or a tool was added, removed
    /// or swapped; a source's policy calls it when it disables a tool or
    /// puts it back ([`Accounting`](crate::Accounting) does, on a
    /// quarantine and on [`reenable`](crate::Accounting::reenable)); a
    /// policy of your own does through the [`ToolListNotifier`] it is
    /// given ([`SourcePolicy::attach`](crate::SourcePolicy::attach)), or
    /// you call [`notifier`](ToolRegistry::notifier)`().notify()`.
    ///
    /// The listener runs on the thread that made the change (for a
    /// quarantine, the loop that ended the call), so it must be quick and
    /// must not block: wake a task and return. Its panics are contained.
    /// Changes in a row may be told once each or, while a listener still
    /// runs, overlap: re-read the list when told, do not count on one call
    /// per change.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use rho::{Source, ToolRegistry};
    ///
    /// let registry = ToolRegistry::new();
    /// let told = Arc::new(AtomicUsize::new(0));
    /// let counter = told.clone();
    /// let subscription = registry.on_tools_changed(move || {
    ///     counter.fetch_add(1, Ordering::Relaxed);
    /// });
    /// registry.add_source(Source::trusted("builtin"))?;
    /// assert_eq!(told.load(Ordering::Relaxed), 1);
    /// drop(subscription);
    /// registry.remove_source("builtin");
    /// assert_eq!(told.load(Ordering::Relaxed), 1);
    /// # Ok::<(), rho::registry::RegistryError>(())
    /// ```
    pub fn on_tools_changed(
        &self,
        listener: impl Fn() + Send + Sync + 'static,
    ) -> ChangeSubscription {
        self.shared.listeners.subscribe(Arc::new(listener))
    }

    /// A notifier that tells this registry's listeners the tool list
    /// changed (see [`on_tools_changed`](ToolRegistry::on_tools_changed)).
    pub fn notifier(&self) -> ToolListNotifier {
        ToolListNotifier::new(&self.shared.listeners)
    }

    /// How many times the tool list was announced as changed since the
    /// registry was made: a listing taken at one count is stale once the
    /// count moved.
    pub fn generation(&self) -> u64 {
        self.shared.listeners.generation()
    }

    /// How many calls of tools whose source has a policy are in flight (told
    /// `started`, not yet `ended`).
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.get()
    }
}

fn enabled(snapshot: &Snapshot) -> impl Iterator<Item = &Entry> {
    snapshot
        .tools
        .values()
        .map(Arc::as_ref)
        .filter(|entry| entry.source.disabled(entry.name()).is_none())
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for ToolRegistry {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snapshot = self.shared.load();
        f.debug_struct("ToolRegistry")
            .field("sources", &snapshot.sources.keys().collect::<Vec<_>>())
            .field("tools", &snapshot.tools.keys().collect::<Vec<_>>())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}
