//! The registry's state as immutable snapshots: readers clone an `Arc`,
//! writers build the next snapshot and swap it in.
//!
//! A look-up holds the read lock only for the time of one `Arc` clone, and
//! never while a writer builds the next snapshot (writers queue on their
//! own mutex and take the write lock only to swap the pointer). So a
//! reader sees a whole snapshot, before or after a change, never part of
//! one: a batch of tools appears and disappears at once, and a tool is
//! never visible before all of its metadata is.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rho_tool_core::untrusted::drop_contained;

use crate::changes::Listeners;
use crate::entry::Entry;
use crate::source::{InFlight, Source};

/// One version of the registry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Every tool by name; a `BTreeMap`, so listings come sorted by name.
    pub(crate) tools: BTreeMap<String, Arc<Entry>>,
    /// Every source by name.
    pub(crate) sources: BTreeMap<String, Arc<Source>>,
}

impl Snapshot {
    /// Whether `source` (this very source, not another of the same name) is
    /// registered.
    pub(crate) fn has_source(&self, source: &Arc<Source>) -> bool {
        self.sources
            .get(source.name())
            .is_some_and(|known| Arc::ptr_eq(known, source))
    }

    /// Whether `other` holds the very same tools and sources (compared by
    /// registration, not by value).
    fn same_as(&self, other: &Snapshot) -> bool {
        fn same<T>(a: &BTreeMap<String, Arc<T>>, b: &BTreeMap<String, Arc<T>>) -> bool {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && Arc::ptr_eq(va, vb))
        }
        same(&self.tools, &other.tools) && same(&self.sources, &other.sources)
    }
}

/// What every clone of a registry and every source handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    current: RwLock<Arc<Snapshot>>,
    writer: Mutex<()>,
    /// The calls in flight of the sources that listen.
    pub(crate) in_flight: Arc<InFlight>,
    /// Who is told when the tool list changes.
    pub(crate) listeners: Arc<Listeners>,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Self {
            current: RwLock::new(Arc::new(Snapshot::default())),
            writer: Mutex::new(()),
            in_flight: Arc::default(),
            listeners: Arc::default(),
        }
    }

    /// The current snapshot.
    pub(crate) fn load(&self) -> Arc<Snapshot> {
        // No code that can panic runs under this lock.
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Applies `change` to a copy of the current snapshot and makes the copy
    /// current, unless `change` fails (then nothing changes). When the copy
    /// differs from the snapshot before, the listeners are told, after the
    /// writers' lock is released (a listener may change the registry).
    pub(crate) fn update<R, E>(
        &self,
        change: impl FnOnce(&mut Snapshot) -> Result<R, E>,
    ) -> Result<R, E> {
        let (answer, previous, changed) = {
            let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let mut next = Snapshot::clone(&self.load());
            let answer = change(&mut next)?;
            let changed = !next.same_as(&self.load());
            let previous = std::mem::replace(
                &mut *self.current.write().unwrap_or_else(PoisonError::into_inner),
                Arc::new(next),
            );
            (answer, previous, changed)
        };
        // The old snapshot (and with it, perhaps, the last `Arc` of a removed
        // tool, whose `Drop` is the source's code) is dropped here, outside
        // the lock and contained.
        let _ = drop_contained(previous);
        if changed {
            self.listeners.announce();
        }
        Ok(answer)
    }
}
