//! When a job stops: the engine's interrupt check, which says why it
//! fired, and how long a stopped script may take to give its thread back.
//!
//! The engine calls the check often while a script runs; the script's own
//! waits (for a host call, a sleep) ask it too. Whoever runs a job (a pool
//! thread, a worker's relay) gives up on it [`STUCK_AFTER`] past its stop.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The interrupt has not fired.
pub(super) const RUNNING: u8 = 0;
/// The call's future was dropped (a timeout or an abort in the loop).
pub(super) const DROPPED: u8 = 1;
/// The sandbox's own deadline passed.
pub(super) const PAST_DEADLINE: u8 = 2;

/// How long past a job's stop (its call's future dropped, or its own
/// deadline) its script may take to give the thread back before the pool
/// gives up on it: the thread is replaced (threads mode) or the worker
/// killed (worker processes). A script stops at the engine's next
/// interrupt check, microseconds away, unless it is inside one long native
/// operation; the rest is room for a busy machine's scheduling, under the
/// 50 ms within which the next call must find a thread.
pub(crate) const STUCK_AFTER: Duration = Duration::from_millis(20);

/// The interrupt's check: the call's future is gone or its deadline passed.
/// Sticky: once it says stop, every later check says so too.
pub(super) fn interrupted(stop: &AtomicBool, deadline: Instant, why: &AtomicU8) -> bool {
    if why.load(Ordering::Relaxed) != RUNNING {
        return true;
    }
    if stop.load(Ordering::Acquire) {
        why.store(DROPPED, Ordering::Release);
        return true;
    }
    if Instant::now() >= deadline {
        why.store(PAST_DEADLINE, Ordering::Release);
        return true;
    }
    false
}
