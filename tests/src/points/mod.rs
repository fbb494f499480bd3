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
mod pause;
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
pub use pause::*;
pub use properties::*;
pub use running::*;
pub use shutdown::*;
pub use untrusted::*;
pub use updates::*;
pub use watch::*;

use std::future::Future;
use std::thread::ThreadId;

use rho_tool_core::untrusted::{Phase, panic_text, panic_text_at};
use rho_tool_core::{
    CallEnd, CallEvent, CallHandle, Executor, Runner, Running, ToolCall, ToolResult,
};

use crate::Harness;
use crate::support::{Counting, InLoop, Recorder, SOON, wait_until, within};

/// One point's executor: the harness, the counting executor over it.
pub(crate) struct Rig<H: Harness> {
    harness: Option<H>,
    executor: Counting<H::Executor>,
    /// The test's own thread, where [`run`](Rig::run) drives the loop.
    loop_thread: ThreadId,
}

impl<H: Harness> Rig<H> {
    pub(crate) fn new() -> Self {
        let harness = H::new();
        let executor = Counting::new(harness.executor());
        Self {
            harness: Some(harness),
            executor,
            loop_thread: std::thread::current().id(),
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

    /// On a multi-threaded harness, whose tasks run on threads of their own
    /// (never on the loop's), asserts that none of the code `recorder`
    /// counted ran on the loop's thread, inside or outside its polls. (On a
    /// single-threaded one the loop's thread runs the tasks too; the
    /// [`InLoop`] mark tells the two apart there.)
    pub(crate) fn assert_off_the_loop_thread(&self, recorder: &Recorder, what: &str) {
        if H::MULTI_THREADED {
            assert!(
                !recorder.ran_on(self.loop_thread),
                "{what} ran on the loop's thread: {recorder:?}"
            );
        }
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
/// contract gives: at most one `AwaitingApproval` (first), at most one
/// `Running` (for this call, with its task), any number of `Update`s
/// (after `Running`), then exactly one `Ended`, then `None` (twice); a call
/// whose `Running` the loop already took reports none again. Calls
/// `on_running` when `Running` arrives; returns it and the end.
pub(crate) async fn events_of<E: Executor>(
    executor: &E,
    handle: &mut CallHandle<E>,
    on_running: impl FnMut(&Running),
) -> (Option<Running>, CallEnd) {
    let events = all_events_of(executor, handle, on_running).await;
    (events.running, events.end)
}

/// What [`all_events_of`] saw of a call.
pub(crate) struct Events {
    /// Whether an `AwaitingApproval` came (first).
    pub(crate) awaiting_approval: bool,
    /// The `Running` event, if one came.
    pub(crate) running: Option<Running>,
    /// The end.
    pub(crate) end: CallEnd,
}

/// As [`events_of`], also telling whether `AwaitingApproval` came.
pub(crate) async fn all_events_of<E: Executor>(
    executor: &E,
    handle: &mut CallHandle<E>,
    mut on_running: impl FnMut(&Running),
) -> Events {
    // The loop may have taken events itself before.
    let already_running = handle.is_running();
    let mut awaiting_approval = false;
    let mut updates = 0_usize;
    let mut seen: Option<Running> = None;
    let end = loop {
        let next = within(executor, SOON, handle.next_event()).await;
        match next {
            None => panic!(
                "call {} reported no next event within {SOON:?}",
                handle.call_id()
            ),
            Some(Some(CallEvent::AwaitingApproval(waiting))) => {
                assert_eq!(waiting.call_id, handle.call_id());
                assert_eq!(waiting.task, handle.task());
                assert!(
                    !awaiting_approval && seen.is_none() && !already_running && updates == 0,
                    "AwaitingApproval out of order (running: {seen:?}, updates: {updates})"
                );
                awaiting_approval = true;
            }
            Some(Some(CallEvent::Queued(queued))) => {
                // A call that waits for a place (an order or a bound) is
                // told so, once per wait, before it runs.
                assert_eq!(queued.call_id, handle.call_id());
                assert_eq!(queued.task, handle.task());
                assert!(
                    seen.is_none() && !already_running && updates == 0,
                    "Queued out of order (running: {seen:?}, updates: {updates})"
                );
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
    Events {
        awaiting_approval,
        running: seen,
        end,
    }
}

/// Asserts that `result` is exactly the error result of a panic in
/// `phase` of `tool` with `message` (one text part, no image, no details):
/// `panic_text`, or `panic_text_at` with a `file:line:column` location
/// (only when the host installed the quiet, located panic hook, which
/// records where the panic was raised).
pub(crate) fn assert_panic_text(
    result: &ToolResult,
    tool: &str,
    phase: Phase,
    message: Option<&str>,
) {
    assert!(result.is_error, "not an error result: {result:?}");
    let text = result.text();
    assert_eq!(
        *result,
        ToolResult::error(text.clone()),
        "not one error text and nothing else"
    );
    if text == panic_text(tool, phase, message) {
        return;
    }
    let template = panic_text_at(tool, phase, message, Some("\u{0}"));
    let (before, after) = template
        .split_once('\u{0}')
        .expect("the template has the marker");
    let location = text
        .strip_prefix(before)
        .and_then(|rest| rest.strip_suffix(after));
    assert!(
        location.is_some_and(is_location),
        "expected {:?} (or its located form), got {text:?}",
        panic_text(tool, phase, message),
    );
}

/// Whether `text` reads `file:line:column`, as a panic's location does.
fn is_location(text: &str) -> bool {
    let mut parts = text.rsplitn(3, ':');
    let (Some(column), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let number = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    !file.is_empty() && number(line) && number(column)
}
