//! Where foreign code ran: the loop marker, checked by every tool and gate
//! body and by every hostile value the soak makes.
//!
//! The loop side of the soak (each driver: starting turns, polling them,
//! aborting them, dropping them) runs inside
//! [`InLoop`](rho_conformance::support::InLoop), which sets a thread-local
//! mark while it polls or drops. Foreign code checks the mark when it runs:
//!
//! - tool and gate bodies call [`note_code`];
//! - hostile values (panic payloads, answers, guards) are the conformance
//!   suite's own, recording on a [`Recorder`] (which reads the same mark).
//!
//! A value's recorders are kept here as a [`Witness`] until no copy of them
//! is left anywhere but here (`Arc::strong_count == 1`): then none of the
//! value's code can run any more, its counts are final and are added up
//! ([`sweep`]). So the check is exact, not a guess about when a killed
//! task's future is dropped, and memory stays bounded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rho_conformance::support::{Reason, ReasonKind, Recorder, in_loop};

/// Foreign code that ran in the loop, noted by tool and gate bodies.
static BODIES_IN_LOOP: AtomicU64 = AtomicU64::new(0);
/// Foreign code of settled witnesses that ran in the loop.
static VALUES_IN_LOOP: AtomicU64 = AtomicU64::new(0);
/// Second payloads (of a payload whose `Drop` panicked) whose code ran:
/// must stay 0, rho forgets them.
static SECOND_RAN: AtomicU64 = AtomicU64::new(0);
/// Witnesses whose values are all gone.
static SETTLED: AtomicU64 = AtomicU64::new(0);
/// Second payloads rho forgot (leaked) by design: they never run.
static FORGOTTEN: AtomicU64 = AtomicU64::new(0);
/// Foreign values made, in all.
static MADE: AtomicU64 = AtomicU64::new(0);

/// Witnesses whose values may still be alive somewhere.
static PENDING: Mutex<Vec<Witness>> = Mutex::new(Vec::new());

/// A tool's or gate's body is running: counts it if the loop mark is set.
pub(crate) fn note_code() {
    if in_loop() {
        BODIES_IN_LOOP.fetch_add(1, Ordering::Relaxed);
    }
}

/// The recorders of the foreign values of one call: a [`Reason`] (its
/// payloads) and one more recorder for answers and guards.
#[derive(Clone)]
pub(crate) struct Witness {
    pub(crate) reason: Reason,
    pub(crate) extra: Arc<Recorder>,
}

/// A fresh witness whose reason raises payloads of kind number `kind` (an
/// index into [`ReasonKind::all`]); kept until its values are gone.
pub(crate) fn witness(kind: u8) -> Witness {
    let kinds = ReasonKind::all();
    let kind = kinds[usize::from(kind) % kinds.len()];
    let witness = Witness {
        reason: Reason::new(kind),
        extra: Recorder::new(),
    };
    MADE.fetch_add(1, Ordering::Relaxed);
    PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(witness.clone());
    witness
}

impl Witness {
    /// No value holds the recorders any more but this witness: their code
    /// cannot run again. A bomb's second payload is the exception: rho
    /// forgets it, so it holds its recorder for ever (and never runs).
    fn settled(&self) -> bool {
        Arc::strong_count(self.reason.raised()) == 1
            && Arc::strong_count(self.reason.first()) == 1
            && Arc::strong_count(&self.extra) == 1
    }

    fn in_loop(&self) -> u64 {
        let runs = self.reason.raised().in_loop()
            + self.reason.first().in_loop()
            + self.reason.second().in_loop()
            + self.extra.in_loop();
        runs as u64
    }
}

/// What [`sweep`] found so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sweep {
    /// Foreign values made.
    pub(crate) made: u64,
    /// Witnesses whose values are all gone.
    pub(crate) settled: u64,
    /// Witnesses whose values may still be alive.
    pub(crate) pending: usize,
    /// Second payloads rho forgot by design.
    pub(crate) forgotten: u64,
    /// Second payloads whose code ran (must be 0).
    pub(crate) second_ran: u64,
}

/// Adds up the witnesses whose values are gone, and forgets them.
pub(crate) fn sweep() -> Sweep {
    let taken = std::mem::take(&mut *PENDING.lock().unwrap_or_else(PoisonError::into_inner));
    let mut alive = Vec::new();
    for witness in taken {
        if !witness.settled() {
            alive.push(witness);
            continue;
        }
        VALUES_IN_LOOP.fetch_add(witness.in_loop(), Ordering::Relaxed);
        if witness.reason.second().runs() > 0 {
            SECOND_RAN.fetch_add(1, Ordering::Relaxed);
        }
        if Arc::strong_count(witness.reason.second()) > 1 {
            FORGOTTEN.fetch_add(1, Ordering::Relaxed);
        }
        SETTLED.fetch_add(1, Ordering::Relaxed);
    }
    let pending = {
        let mut list = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
        list.extend(alive);
        list.len()
    };
    Sweep {
        made: MADE.load(Ordering::Relaxed),
        settled: SETTLED.load(Ordering::Relaxed),
        pending,
        forgotten: FORGOTTEN.load(Ordering::Relaxed),
        second_ran: SECOND_RAN.load(Ordering::Relaxed),
    }
}

/// Foreign code that ran in the loop, so far (settled witnesses and
/// bodies).
pub(crate) fn foreign_in_loop() -> u64 {
    BODIES_IN_LOOP.load(Ordering::Relaxed) + VALUES_IN_LOOP.load(Ordering::Relaxed)
}

/// Adds the counts of the witnesses still pending (at the very end, so that
/// code of values that never went away is counted too).
pub(crate) fn count_pending_in_loop() -> u64 {
    PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(Witness::in_loop)
        .sum()
}
