//! The loop side: drivers, each running its turns one after another (a
//! runtime has several drivers, so several turns in flight), with the
//! host's aborts and the registry changes of the plan.

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use rho_tool_core::Executor;
use rho_tool_core::untrusted::panic_message;
use rho_turn::{SessionEntry, TurnId};

use crate::check::Findings;
use crate::lane::{Lane, Soak};
use crate::plan::{AbortTarget, CallPlan, Planner, TurnPlan};
use crate::tools::{self, DYN_SLOTS};

/// One driver: plans and runs turns until `quota` calls were made, checks
/// each turn's entries, and merges what it found when it is done.
///
/// The whole driver is the loop: it runs inside
/// [`InLoop`](rho_conformance::support::InLoop), so any foreign code that
/// runs while it is polled or dropped is caught.
pub(crate) async fn drive<E: Executor>(
    soak: Arc<Soak>,
    lane: Arc<Lane<E>>,
    mut planner: Planner,
    quota: u64,
) {
    let mut findings = Findings::default();
    let label = format!("{} driver {}", lane.name, planner.driver);
    let mut left = quota;
    while left > 0 {
        change_tools(&soak, &mut planner);
        let plan = planner.turn(left);
        left -= plan.calls.len() as u64;
        soak.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(label.clone(), plan.clone());
        let (turn, entries) = run_turn(&soak, &lane, &mut planner, &plan).await;
        soak.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&label);
        if let Some(ticket) = plan.spin_ticket {
            tools::release_spinners(lane.index, ticket);
        }
        let outcomes = soak
            .verdicts
            .check_turn(&label, &plan, &entries, &mut findings);
        soak.events
            .expect(turn, format!("{label} turn {}", plan.number), outcomes);
        soak.progress
            .fetch_add(plan.calls.len() as u64, Ordering::Relaxed);
    }
    soak.verdicts.merge(&findings);
    soak.drivers_done.fetch_add(1, Ordering::SeqCst);
}

/// Between turns, now and then, the driver adds one of its dynamic tools
/// or removes one, while the other drivers' turns run.
fn change_tools(soak: &Soak, planner: &mut Planner) {
    if planner.rng.u32(0..100) >= 10 {
        return;
    }
    let slot = planner.rng.usize(0..DYN_SLOTS);
    let name = planner.dyn_name(slot);
    if planner.dyn_present[slot] {
        if !soak.agent.remove(&name) {
            soak.verdicts
                .wrong(|| format!("the registry did not have `{name}` to remove"));
        }
        soak.tools_removed.fetch_add(1, Ordering::Relaxed);
        planner.dyn_present[slot] = false;
    } else {
        if let Err(error) = soak.agent.add(tools::dynamic(&name)) {
            soak.verdicts
                .wrong(|| format!("the registry refused to add `{name}`: {error}"));
        }
        soak.tools_added.fetch_add(1, Ordering::Relaxed);
        planner.dyn_present[slot] = true;
    }
}

/// Runs one turn: fires the host's aborts at their times and removes a
/// dynamic tool once every call started, if the plan says so.
async fn run_turn<E: Executor>(
    soak: &Soak,
    lane: &Lane<E>,
    planner: &mut Planner,
    plan: &TurnPlan,
) -> (TurnId, Vec<SessionEntry>) {
    let mut turn = lane.turns.turn(plan.calls.iter().map(CallPlan::to_call));
    let id = turn.id();
    let abort = turn.abort_handle();
    let started = Instant::now();
    let mut next_abort = 0;
    let mut timer: Option<Pin<Box<E::Sleep>>> = None;
    let mut first_poll = true;
    let entries = poll_fn(|cx| {
        if let Poll::Ready(entries) = Pin::new(&mut turn).poll(cx) {
            return Poll::Ready(entries);
        }
        if first_poll {
            first_poll = false;
            // Every call started at the first poll (no concurrency bound):
            // the calls of this tool finish with it.
            if let Some(slot) = plan.remove_mid_turn {
                let name = planner.dyn_name(slot);
                if !soak.agent.remove(&name) {
                    soak.verdicts
                        .wrong(|| format!("the registry did not have `{name}` to remove"));
                }
                soak.tools_removed.fetch_add(1, Ordering::Relaxed);
                soak.tools_removed_mid_turn.fetch_add(1, Ordering::Relaxed);
                planner.dyn_present[slot] = false;
            }
        }
        while let Some(&(at, target)) = plan.aborts.get(next_abort) {
            let sleep = timer.get_or_insert_with(|| {
                Box::pin(lane.executor.sleep(at.saturating_sub(started.elapsed())))
            });
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            timer = None;
            next_abort += 1;
            match target {
                AbortTarget::Turn => abort.abort(),
                AbortTarget::Call(index) => {
                    abort.abort_index(index);
                }
            }
        }
        Poll::Pending
    })
    .await;
    (id, entries)
}

/// A driver whose own code panics (a bug of the soak, or an `expect` that
/// failed) ends as a wrong thing and a finished driver, instead of taking
/// a worker thread down and leaving the soak waiting for it.
pub(crate) struct Caught<F> {
    inner: Pin<Box<F>>,
    soak: Arc<Soak>,
    label: String,
}

impl<F> Caught<F> {
    pub(crate) fn new(inner: F, soak: Arc<Soak>, label: String) -> Self {
        Self {
            inner: Box::pin(inner),
            soak,
            label,
        }
    }
}

impl<F: Future<Output = ()>> Future for Caught<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let inner = &mut this.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(polled) => polled,
            Err(payload) => {
                // The soak's own payload: a `String` or `&str`.
                let message = panic_message(payload.as_ref()).unwrap_or("?").to_owned();
                let label = &this.label;
                this.soak
                    .verdicts
                    .wrong(|| format!("{label} panicked (a bug of the soak): {message}"));
                this.soak.drivers_done.fetch_add(1, Ordering::SeqCst);
                Poll::Ready(())
            }
        }
    }
}
