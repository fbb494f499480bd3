//! Sources: where a registry's tools come from, and the handle through which
//! a source adds and removes them.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{CallEnd, Tool};

use crate::bound::Bound;
use crate::changes::ToolListNotifier;
use crate::entry::Entry;
use crate::error::RegistryError;
use crate::flights::InFlight;
use crate::policy::{Disabled, SourcePolicy};
use crate::snapshot::{Shared, Snapshot};

/// A source of tools, as it is registered: its name, whether its tools'
/// code is untrusted, and its [`SourcePolicy`] (if it wants to be told of
/// its tools' calls).
///
/// ```
/// use std::sync::Arc;
/// use rho::{Accounting, Source};
///
/// let builtin = Source::trusted("builtin");
/// let agent = Source::untrusted("agent-written").with_policy(Arc::new(Accounting::default()));
/// assert!(agent.is_untrusted() && !builtin.is_untrusted());
/// ```
#[derive(Clone)]
pub struct Source {
    name: String,
    untrusted: bool,
    policy: Option<Arc<dyn SourcePolicy>>,
    /// The count of calls in flight of the registry it is registered in;
    /// set at registration.
    in_flight: Option<Arc<InFlight>>,
    /// The bound on its tools' calls at once, if it has one.
    bound: Option<Bound>,
}

impl Source {
    /// A source of tools the host wrote (built-in tools, vetted plugins).
    pub fn trusted(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            untrusted: false,
            policy: None,
            in_flight: None,
            bound: None,
        }
    }

    /// A source of tools whose code the host did not write (written by the
    /// agent, loaded at run time). Its tools report
    /// [`Tool::is_untrusted`] as `true`, whatever they say themselves.
    pub fn untrusted(name: impl Into<String>) -> Self {
        Self {
            untrusted: true,
            ..Self::trusted(name)
        }
    }

    /// Tells `policy` of every call of the source's tools, and asks it which
    /// are disabled.
    pub fn with_policy(mut self, policy: Arc<dyn SourcePolicy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Runs at most `calls` calls of the source's tools at once (at least
    /// one), across every turn and runner of its registry (a server that
    /// takes a few requests at a time, a rate limit). A call over the
    /// bound waits after its gate allowed it, off its clock, in the order
    /// calls asked, and says so (a queued event naming the source). A
    /// tool's own bound ([`Concurrency::Bounded`](rho_tool_core::Concurrency::Bounded))
    /// is waited for first.
    ///
    /// ```
    /// use rho::Source;
    ///
    /// let api = Source::trusted("search-api").with_max_concurrent_calls(4);
    /// assert_eq!(api.max_concurrent_calls(), Some(4));
    /// ```
    pub fn with_max_concurrent_calls(mut self, calls: usize) -> Self {
        let waiting_for = rho_tool_core::WaitingFor::Source {
            name: self.name.clone(),
            limit: calls.max(1),
        };
        self.bound = Some(Bound::new(calls, waiting_for));
        self
    }

    /// The bound on its tools' calls at once, if it has one
    /// ([`with_max_concurrent_calls`](Source::with_max_concurrent_calls)).
    pub fn max_concurrent_calls(&self) -> Option<usize> {
        self.bound.as_ref().map(Bound::limit)
    }

    pub(crate) fn bound(&self) -> Option<&Bound> {
        self.bound.as_ref()
    }

    /// The source's name, unique in its registry.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the source's tools are untrusted.
    pub fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    /// Whether the source has a policy.
    pub fn has_policy(&self) -> bool {
        self.policy.is_some()
    }

    pub(crate) fn disabled(&self, tool: &str) -> Option<Disabled> {
        let policy = self.policy.as_ref()?;
        call_contained(|| policy.disabled(tool)).ok().flatten()
    }

    /// The same source, counting its calls in flight in `in_flight`.
    pub(crate) fn registered(mut self, in_flight: Arc<InFlight>) -> Self {
        self.in_flight = Some(in_flight);
        self
    }

    /// Gives the policy, if any, the registry's notifier, its panics
    /// contained.
    pub(crate) fn attach(&self, notifier: ToolListNotifier) {
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.attach(notifier));
        }
    }

    pub(crate) fn in_flight(&self) -> Option<&InFlight> {
        self.in_flight.as_deref()
    }

    pub(crate) fn started(&self, call: &rho_tool_core::ToolCall, task: rho_tool_core::TaskId) {
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.started(call, task));
        }
    }

    pub(crate) fn ended(&self, end: &CallEnd) {
        if let Some(policy) = &self.policy {
            let _ = call_contained(|| policy.ended(end));
        }
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("untrusted", &self.untrusted)
            .field("policy", &self.policy.is_some())
            .field("bound", &self.bound)
            .finish()
    }
}

/// A registered source's way to change its tools, at any time, also while
/// calls of them are in flight. Cheap to clone.
///
/// Every change is atomic: a look-up or a listing sees the source's tools
/// all before or all after it. A call in flight finishes with the tool it
/// started with; calls after a removal get a "no such tool" result.
///
/// Tool names are unique across the registry: offering a name that another
/// source (or this one) already has fails with
/// [`RegistryError::DuplicateTool`], naming both sources, and changes
/// nothing. [`replace`](SourceHandle::replace) and
/// [`set_tools`](SourceHandle::set_tools) swap a source's own tools.
#[derive(Clone)]
pub struct SourceHandle {
    shared: Arc<Shared>,
    source: Arc<Source>,
}

impl SourceHandle {
    pub(crate) fn new(shared: Arc<Shared>, source: Arc<Source>) -> Self {
        Self { shared, source }
    }

    /// The source's name.
    pub fn name(&self) -> &str {
        self.source.name()
    }

    /// The source as it was registered.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Whether the source is still registered.
    pub fn is_registered(&self) -> bool {
        self.shared.load().has_source(&self.source)
    }

    /// Adds `tool`.
    ///
    /// # Errors
    ///
    /// See [`add_all`](SourceHandle::add_all).
    pub fn add(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.add_all([tool])
    }

    /// Adds `tools`, all of them or (on an error) none.
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateTool`] when a name is taken (or appears
    /// twice in `tools`); [`RegistryError::BadTool`] when a tool's metadata
    /// cannot be read; [`RegistryError::SourceRemoved`] when the source is
    /// no longer registered.
    pub fn add_all(
        &self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<(), RegistryError> {
        let entries = self.entries(tools)?;
        self.change(|snapshot| insert(snapshot, entries, |_| false))
    }

    /// Adds `tool`, or swaps it for the source's own tool of the same name
    /// (calls in flight finish with the old one). Returns whether a tool was
    /// swapped.
    ///
    /// # Errors
    ///
    /// As [`add_all`](SourceHandle::add_all): another source's name is never
    /// taken over.
    pub fn replace(&self, tool: Arc<dyn Tool>) -> Result<bool, RegistryError> {
        let entry = Arc::new(Entry::new(tool, &self.source)?);
        self.change(|snapshot| {
            let swapped = self.owns(snapshot, entry.name());
            insert(snapshot, vec![entry], |held| {
                Arc::ptr_eq(&held.source, &self.source)
            })?;
            Ok(swapped)
        })
    }

    /// Makes `tools` the source's whole set of tools, in one change: tools
    /// of the source that are not in `tools` are removed, the others added
    /// or swapped.
    ///
    /// # Errors
    ///
    /// As [`add_all`](SourceHandle::add_all); on an error the old set stays.
    pub fn set_tools(
        &self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<(), RegistryError> {
        let entries = self.entries(tools)?;
        self.change(|snapshot| {
            snapshot
                .tools
                .retain(|_, entry| !Arc::ptr_eq(&entry.source, &self.source));
            insert(snapshot, entries, |_| false)
        })
    }

    /// Removes the source's tool `name`; returns whether it had one. Calls
    /// in flight finish with it; later calls get "no such tool".
    pub fn remove(&self, name: &str) -> bool {
        let removed: Result<bool, RegistryError> = self.shared.update(|snapshot| {
            if self.owns(snapshot, name) {
                snapshot.tools.remove(name);
                Ok(true)
            } else {
                Ok(false)
            }
        });
        removed.unwrap_or(false)
    }

    /// Removes all of the source's tools; returns how many there were. The
    /// source stays registered.
    pub fn clear(&self) -> usize {
        let removed: Result<usize, RegistryError> = self.shared.update(|snapshot| {
            let before = snapshot.tools.len();
            snapshot
                .tools
                .retain(|_, entry| !Arc::ptr_eq(&entry.source, &self.source));
            Ok(before - snapshot.tools.len())
        });
        removed.unwrap_or(0)
    }

    /// The names of the source's tools, sorted.
    pub fn tools(&self) -> Vec<String> {
        self.shared
            .load()
            .tools
            .values()
            .filter(|entry| Arc::ptr_eq(&entry.source, &self.source))
            .map(|entry| entry.name().to_owned())
            .collect()
    }

    fn owns(&self, snapshot: &Snapshot, name: &str) -> bool {
        snapshot
            .tools
            .get(name)
            .is_some_and(|entry| Arc::ptr_eq(&entry.source, &self.source))
    }

    /// Reads the tools' metadata before any lock is taken.
    fn entries(
        &self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<Vec<Arc<Entry>>, RegistryError> {
        tools
            .into_iter()
            .map(|tool| Entry::new(tool, &self.source).map(Arc::new))
            .collect()
    }

    /// Applies `change`, if the source is still registered.
    fn change<R>(
        &self,
        change: impl FnOnce(&mut Snapshot) -> Result<R, RegistryError>,
    ) -> Result<R, RegistryError> {
        self.shared.update(|snapshot| {
            if !snapshot.has_source(&self.source) {
                return Err(RegistryError::SourceRemoved {
                    name: self.source.name().to_owned(),
                });
            }
            change(snapshot)
        })
    }
}

/// Inserts `entries`, refusing a name that is taken unless `may_swap` says
/// the old entry may go, and a name offered twice.
fn insert(
    snapshot: &mut Snapshot,
    entries: Vec<Arc<Entry>>,
    may_swap: impl Fn(&Entry) -> bool,
) -> Result<(), RegistryError> {
    let mut offered = BTreeSet::new();
    for entry in &entries {
        let name = entry.name();
        let clash = match snapshot.tools.get(name) {
            Some(held) if !may_swap(held) => Some(held.source.name()),
            _ if !offered.insert(name) => Some(entry.source.name()),
            _ => None,
        };
        if let Some(held_by) = clash {
            return Err(RegistryError::DuplicateTool {
                tool: name.to_owned(),
                held_by: held_by.to_owned(),
                offered_by: entry.source.name().to_owned(),
            });
        }
    }
    for entry in entries {
        snapshot.tools.insert(entry.name().to_owned(), entry);
    }
    Ok(())
}

impl fmt::Debug for SourceHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceHandle")
            .field("source", &self.source)
            .field("registered", &self.is_registered())
            .finish_non_exhaustive()
    }
}
