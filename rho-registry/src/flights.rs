//! Calls in flight: which registered tool (and so which source) each
//! running task belongs to.
//!
//! The core's watch names a call's task when it starts and again when it
//! ends. Between the two the tool may be removed, or its name given to a
//! tool of another source, so the registry records at the start which entry
//! the task runs and tells that entry's source at the end.
//!
//! Which entry a task runs is known exactly when the call was started
//! through the registry ([`Resolved::start`](crate::Resolved::start),
//! [`ToolRegistry::start`](crate::ToolRegistry::start)): the registry leaves
//! the entry in a thread-local slot around the runner's `start`, and the
//! watch's `started`, which the runner calls synchronously on that same
//! thread, takes it from there. A call started with a tool the host looked
//! up some other way is attributed by its name in the current snapshot.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rho_tool_core::TaskId;

use crate::entry::Entry;

/// One call in flight.
#[derive(Debug)]
pub(crate) struct Flight {
    pub(crate) entry: Entry,
    pub(crate) timeout: Duration,
}

/// Independent locks, so that thousands of calls starting and ending at once
/// rarely wait on each other.
const SHARDS: usize = 16;

/// The calls in flight, by task.
pub(crate) struct Flights {
    shards: [Mutex<HashMap<TaskId, Flight>>; SHARDS],
}

impl Default for Flights {
    fn default() -> Self {
        Self {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }
}

impl fmt::Debug for Flights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flights").field("len", &self.len()).finish()
    }
}

impl Flights {
    fn shard(&self, task: TaskId) -> MutexGuard<'_, HashMap<TaskId, Flight>> {
        // `as usize` keeps the low bits, which is all the modulo needs.
        let index = (task.as_u64() as usize) % SHARDS;
        // Only map operations run under these locks.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn insert(&self, task: TaskId, flight: Flight) {
        self.shard(task).insert(task, flight);
    }

    pub(crate) fn remove(&self, task: TaskId) -> Option<Flight> {
        self.shard(task).remove(&task)
    }

    pub(crate) fn len(&self) -> usize {
        (0..SHARDS)
            .map(|index| {
                self.shards[index]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .len()
            })
            .sum()
    }
}

struct Pending {
    registry: u64,
    entry: Entry,
}

thread_local! {
    /// The entry a registry is starting on this thread right now.
    static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
}

/// Runs `start` (a runner's `start`) with `entry` left for the `started`
/// hook of registry `registry` to take.
pub(crate) fn starting<R>(registry: u64, entry: Entry, start: impl FnOnce() -> R) -> R {
    struct Clear(Option<Pending>);
    impl Drop for Clear {
        fn drop(&mut self) {
            let previous = self.0.take();
            // `try_with`: this may run while the thread is being torn down.
            let _ = PENDING.try_with(|slot| {
                if let Ok(mut slot) = slot.try_borrow_mut() {
                    *slot = previous;
                }
            });
        }
    }
    let previous = PENDING.with(|slot| slot.replace(Some(Pending { registry, entry })));
    // Put back whatever was there before, even if `start` unwinds, and
    // whether or not a watch took the entry.
    let _clear = Clear(previous);
    start()
}

/// The entry registry `registry` is starting on this thread, if any.
pub(crate) fn take_pending(registry: u64) -> Option<Entry> {
    PENDING.with(|slot| {
        let mut slot = slot.try_borrow_mut().ok()?;
        if slot.as_ref()?.registry != registry {
            return None;
        }
        slot.take().map(|pending| pending.entry)
    })
}
