//! The contract points, one `pub fn name<H: Harness>()` each, grouped by
//! concept and re-exported here by name (the names of [`POINTS`]).
//!
//! Each point makes a fresh [`Harness`], runs its whole loop side inside
//! [`InLoop`] (so foreign code that runs in the loop is caught), panics with
//! a message naming what broke, and ends by checking that no task of rho's
//! is left ([`Counting`]) before it shuts the executor down.
//!
//! [`POINTS`]: crate::POINTS

mod answers;
mod executor;
mod gate;
mod kill;
mod leaks;
mod panics;
mod properties;
mod running;
mod shutdown;
mod untrusted;
mod updates;
mod watch;

pub use answers::*;
pub use executor::*;
pub use gate::*;
pub use kill::*;
pub use leaks::*;
pub use panics::*;
pub use properties::*;
pub use running::*;
pub use shutdown::*;
pub use untrusted::*;
pub use updates::*;
pub use watch::*;

use std::future::Future;

use rho_tool_core::untrusted::{Phase, panic_text, panic_text_at};
use rho_tool_core::{
    CallEnd, CallEvent, CallHandle, Executor, Runner, Running, ToolCall, ToolResult,
};

use crate::Harness;
use crate::support::{Counting, InLoop, SOON, wait_until, within};

/// One point's executor: the harness, the counting executor over it.
pub(crate) struct Rig<H: Harness> {
    harness: Option<H>,
    executor: Counting<H::Executor>,
}

impl<H: Harness> Rig<H> {
    pub(crate) fn new() -> Self {
        let harness = H::new();
        let executor = Counting::new(harness.executor());
        Self {
            harness: Some(harness),
            executor,
        }
    }

    fn harness(&self) -> &H {
        self.harness
            .as_ref()
            .expect("the harness lives until the rig finishes")
    }

    pub(crate) fn executor(&self) -> Counting<H::Executor> {
        self.executor.clone()
    }

    pub(crate) fn runner(&self) -> Runner<Counting<H::Executor>> {
        Runner::new(self.executor())
    }

    /// Runs the loop side `future`, marked as the loop.
    pub(crate) fn run<F: Future>(&self, future: F) -> F::Output {
        self.harness().block_on(InLoop::new(future))
    }

    /// Checks that no task of rho's is left, then shuts the executor down.
    pub(crate) fn finish(mut self) {
        let executor = self.executor();
        let clean = self.run(wait_until(&executor, SOON, || executor.live() == 0));
        assert!(
            clean,
            "task leak: {} of the {} tasks spawned by this point are still alive {SOON:?} \
             after every call ended (a killed or finished task's future must be dropped)",
            executor.live(),
            executor.spawned(),
        );
        if let Some(harness) = self.harness.take() {
            harness.shut_down();
        }
    }

    /// Shuts the executor down now, calls in flight or not; returns the
    /// counting executor (its clones may still be used).
    pub(crate) fn shut_down(mut self) -> Counting<H::Executor> {
        if let Some(harness) = self.harness.take() {
            harness.shut_down();
        }
        self.executor()
    }
}

/// A call of `name` with id `id` and no arguments.
pub(crate) fn call(id: impl Into<String>, name: &str) -> ToolCall {
    ToolCall::new(id, name, serde_json::json!({}))
}

/// Whether the points about the executor going away apply to `H`; if not,
/// prints that `point` is skipped, and why.
pub(crate) fn shuts_down<H: Harness>(point: &str) -> bool {
    if !H::SHUTS_DOWN {
        println!(
            "rho-conformance: {point}: skipped: this executor cannot go away \
             (it lives as long as the process, `Harness::SHUTS_DOWN == false`)"
        );
    }
    H::SHUTS_DOWN
}

/// Prints that `point` checks a weaker behaviour on this harness, and why.
pub(crate) fn weaker(point: &str, why: &str) {
    println!("rho-conformance: {point}: weaker on this executor: {why}");
}

/// Awaits `handle` (bounded by [`SOON`]).
pub(crate) async fn end_of<E: Executor>(executor: &E, handle: CallHandle<E>) -> CallEnd {
    let id = handle.call_id().to_owned();
    within(executor, SOON, handle)
        .await
        .unwrap_or_else(|| panic!("call {id} did not end within {SOON:?}"))
}

/// Takes every event of `handle` until `None`, checking the order the
/// contract gives: at most one `AwaitingGate` (first), at most one
/// `Running` (for this call, with its task), any number of `Update`s
/// (after `Running`), then exactly one `Ended`, then `None` (twice); a call
/// whose `Running` the loop already took reports none again. Calls
/// `on_running` when `Running` arrives; returns it and the end.
pub(crate) async fn events_of<E: Executor>(
    executor: &E,
    handle: &mut CallHandle<E>,
    mut on_running: impl FnMut(&Running),
) -> (Option<Running>, CallEnd) {
    // The loop may have taken events itself before.
    let already_running = handle.is_running();
    let mut awaiting_gate = false;
    let mut updates = 0_usize;
    let mut seen: Option<Running> = None;
    let end = loop {
        let next = within(executor, SOON, handle.next_event()).await;
        match next {
            None => panic!(
                "call {} reported no next event within {SOON:?}",
                handle.call_id()
            ),
            Some(Some(CallEvent::AwaitingGate(id))) => {
                assert_eq!(id, handle.call_id());
                assert!(
                    !awaiting_gate && seen.is_none() && !already_running && updates == 0,
                    "AwaitingGate out of order (running: {seen:?}, updates: {updates})"
                );
                awaiting_gate = true;
            }
            Some(Some(CallEvent::Running(running))) => {
                assert!(
                    seen.is_none() && !already_running,
                    "a second Running event: {running:?} after {seen:?}"
                );
                assert_eq!(updates, 0, "Running after an Update");
                assert_eq!(running.call_id, handle.call_id());
                assert_eq!(running.tool, handle.tool());
                assert_eq!(running.task, handle.task());
                assert!(handle.is_running());
                on_running(&running);
                seen = Some(running);
            }
            Some(Some(CallEvent::Update(update))) => {
                assert!(
                    seen.is_some() || already_running,
                    "an Update before Running: {update:?}"
                );
                assert_eq!(update.call_id, handle.call_id());
                updates += 1;
            }
            Some(Some(CallEvent::Ended(end))) => break end,
            Some(Some(other)) => panic!("an event the suite does not know: {other:?}"),
            Some(None) => panic!("call {} ended without an Ended event", handle.call_id()),
        }
    };
    assert_eq!(end.call_id, handle.call_id());
    assert_eq!(end.task, handle.task());
    assert_eq!(handle.next_event().await, None, "an event after Ended");
    assert_eq!(handle.next_event().await, None, "an event after Ended");
    if let Some(running) = &seen {
        assert_eq!(end.waited, running.waited, "{end:?} vs {running:?}");
    }
    if seen.is_some() || already_running {
        assert!(end.ran.is_some(), "the call ran but `ran` is None: {end:?}");
    } else {
        assert_eq!(
            end.ran, None,
            "no Running event but `ran` is known: {end:?}"
        );
    }
    (seen, end)
}

/// Asserts that `result` is the error text of a panic in `phase` of
/// `tool` with `message`: `panic_text`, or `panic_text_at` with some
/// location (when the host installed the quiet, located panic hook).
pub(crate) fn assert_panic_text(
    result: &ToolResult,
    tool: &str,
    phase: Phase,
    message: Option<&str>,
) {
    assert!(result.is_error, "not an error result: {result:?}");
    assert_eq!(result.details, None, "{result:?}");
    let text = result.text();
    if text == panic_text(tool, phase, message) {
        return;
    }
    let template = panic_text_at(tool, phase, message, Some("\u{0}"));
    let (before, after) = template
        .split_once('\u{0}')
        .expect("the template has the marker");
    assert!(
        text.len() > before.len() + after.len()
            && text.starts_with(before)
            && text.ends_with(after),
        "expected {:?} (or its located form), got {text:?}",
        panic_text(tool, phase, message),
    );
}
