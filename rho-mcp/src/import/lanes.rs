//! The connections a source opens for one client each (lanes): where each
//! client's requests go once that is decided, bounded, and given up when
//! the client's session ends.
//!
//! A client's place is decided once, at its first request (its
//! `initialize`, when rho's server serves it): a lane of its own, or the
//! shared connection when [`MAX_LANES`] are taken. It keeps that place for
//! its session, so it never moves between servers with its subscriptions
//! and log level left behind. A lane that dies is replaced for the same
//! client by its next request. Each client's lane starts under a lock of
//! that client's own, so that no client waits for another's server to
//! start.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::connection::Connection;
use super::handler::Heard;

/// The most clients that have a lane at once (see `Server::conduit_for`);
/// past it, a client's requests go on the shared connection.
pub(crate) const MAX_LANES: usize = 64;

/// A connection to the server and what is heard on it: the shared
/// connection with the source's [`Heard`], or a client's lane with that
/// client's own.
#[derive(Clone)]
pub(crate) struct Conduit {
    pub(crate) connection: Arc<Connection>,
    pub(crate) heard: Heard,
}

/// Where one client's requests go.
enum Place {
    /// Its lane is starting (counted against [`MAX_LANES`]).
    Opening,
    /// Its lane: live, or dead until its next request replaces it.
    Lane(Conduit),
    /// The shared connection: every lane was taken when it came.
    Shared,
}

/// What [`Lanes::reserve`] found for a client.
pub(crate) enum Reserved {
    /// Its live lane.
    Live(Conduit),
    /// It shares the source's connection.
    Shared,
    /// It had no place: now it has a lane starting, for its caller to
    /// start ([`Lanes::settle`] or [`Lanes::release`]).
    New,
    /// Its lane died; its caller starts another, heard by the same.
    Replacing(Heard),
    /// It had no place and there is no room: it shares, from now on.
    Full,
}

/// The lanes of one source.
#[derive(Default)]
pub(crate) struct Lanes {
    places: Mutex<HashMap<u64, Place>>,
    /// Held while a client's lane starts, so that its requests open one.
    openers: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
    /// Whether every older client gets a lane, not only the clients of a
    /// server that speaks 2026-07-28 (a source served to many clients).
    for_all: AtomicBool,
}

impl Lanes {
    pub(crate) fn set_for_all(&self) {
        self.for_all.store(true, Ordering::Release);
    }

    pub(crate) fn for_all(&self) -> bool {
        self.for_all.load(Ordering::Acquire)
    }

    /// Client `number`'s live lane, or `Err(())` if it shares the source's
    /// connection; `None` when its place is yet to be decided (or its lane
    /// is dead or starting).
    pub(crate) fn settled(&self, number: u64) -> Option<Result<Conduit, ()>> {
        match self.places().get(&number)? {
            Place::Lane(conduit) if conduit.connection.death().is_none() => {
                Some(Ok(conduit.clone()))
            }
            Place::Shared => Some(Err(())),
            Place::Lane(_) | Place::Opening => None,
        }
    }

    /// What client `number`'s lane hears, live or dead; `None` when it has
    /// no lane.
    pub(crate) fn heard_by(&self, number: u64) -> Option<Heard> {
        match self.places().get(&number)? {
            Place::Lane(conduit) => Some(conduit.heard.clone()),
            Place::Opening | Place::Shared => None,
        }
    }

    /// The lock client `number`'s lane starts under.
    pub(crate) fn opener(&self, number: u64) -> Arc<tokio::sync::Mutex<()>> {
        let mut openers = self.openers.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(openers.entry(number).or_default())
    }

    /// Decides client `number`'s place if it has none, under its
    /// [`opener`](Lanes::opener): see [`Reserved`].
    pub(crate) fn reserve(&self, number: u64) -> Reserved {
        let mut places = self.places();
        match places.get(&number) {
            Some(Place::Lane(conduit)) if conduit.connection.death().is_none() => {
                Reserved::Live(conduit.clone())
            }
            Some(Place::Lane(dead)) => Reserved::Replacing(dead.heard.clone()),
            Some(Place::Shared) => Reserved::Shared,
            // Not seen under the client's opener: a start gives its place
            // back when it does not settle (`Reservation`).
            Some(Place::Opening) => Reserved::New,
            None => {
                let taken = places
                    .values()
                    .filter(|place| !matches!(place, Place::Shared))
                    .count();
                if taken >= MAX_LANES {
                    places.insert(number, Place::Shared);
                    Reserved::Full
                } else {
                    places.insert(number, Place::Opening);
                    Reserved::New
                }
            }
        }
    }

    /// Client `number`'s lane has started: its requests go there.
    pub(crate) fn settle(&self, number: u64, conduit: Conduit) {
        self.places().insert(number, Place::Lane(conduit));
    }

    /// Client `number`'s lane did not start: a new one gives its place
    /// back (the next request tries again), a replacement leaves the dead
    /// lane for the next request to replace.
    pub(crate) fn release(&self, number: u64) {
        let mut places = self.places();
        if let Some(Place::Opening) = places.get(&number) {
            places.remove(&number);
        }
    }

    /// Forgets client `number` (its session ended): its lane, if it had
    /// one, for the caller to close.
    pub(crate) fn close(&self, number: u64) -> Option<Conduit> {
        self.openers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
        match self.places().remove(&number)? {
            Place::Lane(conduit) => Some(conduit),
            Place::Opening | Place::Shared => None,
        }
    }

    /// Forgets every client: their lanes, for the caller to close.
    pub(crate) fn drain(&self) -> Vec<Conduit> {
        self.places()
            .drain()
            .filter_map(|(_, place)| match place {
                Place::Lane(conduit) => Some(conduit),
                Place::Opening | Place::Shared => None,
            })
            .collect()
    }

    fn places(&self) -> MutexGuard<'_, HashMap<u64, Place>> {
        self.places.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Gives back a new lane's place if its start is dropped before it
/// settles (its request was cancelled): the next request starts one.
pub(crate) struct Reservation<'a> {
    pub(crate) lanes: &'a Lanes,
    pub(crate) number: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.lanes.release(self.number);
    }
}
