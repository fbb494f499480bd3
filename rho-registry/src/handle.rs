//! A source's handle: the way a registered source adds, replaces and
//! removes its tools, each change one new snapshot of the registry.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use rho_tool_core::{IntoShared, Tool};

use crate::entry::Entry;
use crate::error::RegistryError;
use crate::snapshot::{Shared, Snapshot};
use crate::source::Source;

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

    /// Adds `tool`: a value, or an `Arc` of one the host keeps.
    ///
    /// # Errors
    ///
    /// See [`add_all`](SourceHandle::add_all).
    pub fn add(&self, tool: impl IntoShared<dyn Tool>) -> Result<(), RegistryError> {
        self.add_all([tool.into_shared()])
    }

    /// Adds `tools`, all of them or (on an error) none. Tools of different
    /// types in one list are `Arc<dyn Tool>`s (one tool:
    /// [`add`](SourceHandle::add) takes it as a value).
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
    pub fn replace(&self, tool: impl IntoShared<dyn Tool>) -> Result<bool, RegistryError> {
        let entry = Arc::new(Entry::new(tool.into_shared(), &self.source)?);
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
