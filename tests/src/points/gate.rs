//! The gate, the check before a tool runs: it runs in the task, may wait
//! as long as it likes with no clock running, denies with a reason, and its
//! panics (any payload) end the call as crashed.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::{Exit, Phase, exit_text};
use rho_tool_core::{Executor, Outcome, ToolCall, ToolOutput, ToolResult, Verdict};

use super::panics::check_payload;
use super::{Rig, all_events_of, assert_panic_text, call, end_of, events_of};
use crate::Harness;
use crate::support::{
    CountOnDrop, Latch, Reason, ReasonKind, SOON, TestGate, TestTool, flag, poll_once, wait_until,
    yield_now,
};

/// A gate that waits three times the tool's timeout (on the executor's
/// timer), then allows: the call succeeds, because the clock starts at the
/// running notice, not when the call started. The events are exactly
/// `AwaitingApproval` (the gate did not answer at its first poll), one
/// `Running` with `waited` at least the gate's wait, then `Ended`; the
/// call ran for less than the gate waited (the wait is `waited`, not run
/// time) and the tool ran once.
pub fn a_gate_waiting_longer_than_the_timeout_then_allowing_succeeds<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    const GATE_WAIT: Duration = Duration::from_millis(600);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let release = Latch::new();
    let tool = {
        let release = release.clone();
        TestTool::new("deploy", move |_, _| {
            let release = release.clone();
            async move {
                release.wait().await;
                ToolOutput::text("deployed")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let runs = tool.runs();
    let gate = {
        let executor = executor.clone();
        TestGate::new(move |_| {
            let wait = executor.sleep(GATE_WAIT);
            async move {
                wait.await;
                Verdict::Allow
            }
        })
    };
    let runner = rig.runner().with_gate(gate);
    rig.run(async {
        let begin = Instant::now();
        let mut handle = runner.start(call("c1", "deploy"), tool.into_arc());
        assert_eq!(handle.timeout(), TIMEOUT);
        assert!(!handle.is_running());
        // The tool answers only once the loop saw `Running`: the events are
        // the same on every run.
        let events = all_events_of(&executor, &mut handle, |_| release.open()).await;
        assert!(
            events.awaiting_approval,
            "the waiting gate was not reported first"
        );
        let running = events.running.expect("the gate allowed: a Running event");
        assert!(
            running.waited >= GATE_WAIT,
            "waited {:?} < the gate's wait",
            running.waited
        );
        assert!(begin.elapsed() >= GATE_WAIT);
        let end = events.end;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result, ToolResult::success("deployed"));
        assert_eq!(end.tool, "deploy");
        assert!(end.waited >= GATE_WAIT, "waited {:?}", end.waited);
        let ran = end.ran.expect("the tool ran, so `ran` is known");
        assert!(
            ran < GATE_WAIT,
            "ran {ran:?} is not small next to the gate's wait (the clock ran in the gate)"
        );
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    rig.finish();
}

/// While one call's gate waits (until released by the test), 1,000 other
/// calls (each napping on the executor's timer, all in flight together)
/// start and finish, each with its own answer; the waiting call's tool has
/// not run and its clock has not started. Released, it succeeds. Every
/// call has its own task.
pub fn a_thousand_calls_finish_while_one_gate_waits<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let entered = flag();
    let release = Latch::new();
    let gate = {
        let (entered, release) = (entered.clone(), release.clone());
        TestGate::new(move |call: ToolCall| {
            let (entered, release) = (entered.clone(), release.clone());
            async move {
                if call.id == "held" {
                    entered.store(true, Ordering::SeqCst);
                    release.wait().await;
                }
                Verdict::Allow
            }
        })
    };
    let runner = rig.runner().with_gate(gate);
    let held_tool = TestTool::answering("approve_me", "approved");
    let held_runs = held_tool.runs();
    // Each echo yields on the executor's timer before it answers, so the
    // calls are in flight together.
    let echo = {
        let executor = executor.clone();
        TestTool::new("echo", move |arguments, _| {
            let wait = executor.sleep(Duration::from_millis(5));
            async move {
                wait.await;
                ToolOutput::text(arguments["n"].to_string())
            }
        })
    };
    let echo_runs = echo.runs();
    let echo = echo.into_arc();
    rig.run(async {
        let mut held = runner.start(call("held", "approve_me"), held_tool.into_arc());
        assert!(
            wait_until(&executor, SOON, || entered.load(Ordering::SeqCst)).await,
            "the held gate never ran"
        );
        let handles: Vec<_> = (0..1000)
            .map(|n| {
                runner.start(
                    ToolCall::new(format!("q{n}"), "echo", serde_json::json!({ "n": n })),
                    echo.clone(),
                )
            })
            .collect();
        assert!(poll_once(&mut held).await.is_none());
        let mut tasks = HashSet::from([held.task()]);
        for (n, handle) in handles.into_iter().enumerate() {
            let end = end_of(&executor, handle).await;
            assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
            assert_eq!(end.call_id, format!("q{n}"));
            assert_eq!(end.result, ToolResult::success(n.to_string()));
            assert!(tasks.insert(end.task), "task ids are unique");
        }
        assert_eq!(echo_runs.load(Ordering::SeqCst), 1000);

        // The held call is still at its gate: no tool run, no clock.
        assert!(poll_once(&mut held).await.is_none());
        assert!(!held.is_running());
        assert_eq!(held_runs.load(Ordering::SeqCst), 0);

        release.open();
        let end = end_of(&executor, held).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result, ToolResult::success("approved"));
        assert_eq!(held_runs.load(Ordering::SeqCst), 1);
    });
    assert_eq!(rig.executor().spawned(), 1001, "one task per call");
    rig.finish();
}

/// A gate that denies: `Denied`, an error result naming the tool and the
/// reason, no `Running`, no clock, and the tool never ran.
pub fn a_gate_that_denies_ends_denied_and_the_tool_never_runs<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let gate = TestGate::new(|_| async { Verdict::deny("deploys are frozen until Monday") });
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = rig.runner().with_gate(gate);
    rig.run(async {
        let mut handle = runner.start(call("c1", "deploy"), tool.into_arc());
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(running.is_none(), "a denied call reported Running");
        assert_eq!(end.outcome, Outcome::Denied, "{end:?}");
        assert!(end.result.is_error);
        let text = end.result.text();
        assert!(text.contains("deploys are frozen until Monday"), "{text}");
        assert!(text.contains("`deploy`"), "{text}");
        assert_eq!(end.result.details, None);
        assert!(!end.outcome.counts_against_tool());
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    rig.finish();
}

/// A gate that panics with `kind`, once at its first poll and once after
/// yielding: crashed, the text says the gate of that tool panicked (with
/// the message for text payloads), no `Running`, no clock, the tool never
/// ran, and none of the payload's code ran in the loop; a custom payload is
/// dropped exactly once, in the task, never formatted.
fn gate_panics<H: Harness>(kind: ReasonKind) {
    for yield_first in [false, true] {
        gate_panics_once::<H>(kind, yield_first);
    }
}

fn gate_panics_once<H: Harness>(kind: ReasonKind, yield_first: bool) {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let reason = Reason::new(kind);
    let gate = {
        let reason = reason.clone();
        TestGate::new(move |_| {
            let reason = reason.clone();
            async move {
                if yield_first {
                    yield_now().await;
                }
                reason.raise_as::<Verdict>()
            }
        })
    };
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = rig.runner().with_gate(gate);
    rig.run(async {
        let mut handle = runner.start(call("c1", "deploy"), tool.into_arc());
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(running.is_none(), "the gate never allowed, yet Running");
        assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
        assert_eq!(end.ran, None, "no clock ran: {end:?}");
        assert_panic_text(
            &end.result,
            "deploy",
            Phase::Gate,
            kind.message().as_deref(),
        );
        assert!(
            end.result
                .text()
                .starts_with("the gate of tool `deploy` panicked")
        );
        assert!(end.outcome.counts_against_tool());
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    check_payload(&reason);
    rig.assert_off_the_loop_thread(reason.first(), "the payload");
    rig.finish();
}

/// A gate that panics with a `&'static str`: crashed, the text says the
/// gate of that tool panicked, with the message; no `Running`, the tool
/// never ran.
pub fn a_gate_panicking_with_a_str_ends_crashed<H: Harness>() {
    gate_panics::<H>(ReasonKind::StaticStr);
}

/// A gate that panics with a `String`: crashed, the text says the gate of
/// that tool panicked, with the message; no `Running`, the tool never ran.
pub fn a_gate_panicking_with_a_string_ends_crashed<H: Harness>() {
    gate_panics::<H>(ReasonKind::String);
}

/// A gate that panics with a custom payload: crashed with the neutral
/// text; no `Running`, the tool never ran; the payload was dropped exactly
/// once, in the task, never formatted, and none of its code ran in the
/// loop.
pub fn a_gate_panicking_with_a_custom_payload_ends_crashed_and_the_payload_never_runs_in_the_loop<
    H: Harness,
>() {
    gate_panics::<H>(ReasonKind::Custom(None));
}

/// A gate that never decides, aborted by the host: once through an
/// `AbortHandle` used from another thread while the loop awaits the call,
/// once through `CallHandle::abort`. Each call ends `Aborted` with the
/// abort text, no `Running`, no clock (`ran == None`), the gate's future is
/// dropped and the tool never ran.
pub fn a_host_abort_while_the_gate_waits_ends_aborted_without_a_clock<H: Harness>() {
    const BEFORE_ABORT: Duration = Duration::from_millis(100);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let entered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gate_dropped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gate = {
        let (entered, gate_dropped) = (entered.clone(), gate_dropped.clone());
        TestGate::new(move |_| {
            let entered = entered.clone();
            let guard = CountOnDrop(gate_dropped.clone());
            async move {
                let _guard = guard;
                entered.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<Verdict>().await
            }
        })
    };
    let tool = TestTool::answering("rm_rf", "deleted");
    let runs = tool.runs();
    let tool = tool.into_arc();
    let runner = rig.runner().with_gate(gate);
    rig.run(async {
        // From another thread, while the loop awaits.
        let mut handle = runner.start(call("c1", "rm_rf"), tool.clone());
        let abort = handle.abort_handle();
        let aborter = std::thread::spawn(move || {
            std::thread::sleep(BEFORE_ABORT);
            abort.abort();
            abort.abort(); // idempotent
        });
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        aborter.join().expect("the aborting thread");
        assert_eq!(entered.load(Ordering::SeqCst), 1, "the gate never ran");
        assert!(running.is_none());
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("rm_rf", Exit::Aborted))
        );
        assert!(end.waited >= BEFORE_ABORT, "waited {:?}", end.waited);
        assert!(!end.outcome.counts_against_tool());

        // With `CallHandle::abort`, once the gate is surely waiting.
        let mut handle = runner.start(call("c2", "rm_rf"), tool.clone());
        assert!(
            wait_until(&executor, SOON, || entered.load(Ordering::SeqCst) == 2).await,
            "the second gate never ran"
        );
        handle.abort();
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(running.is_none());
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("rm_rf", Exit::Aborted))
        );
        assert!(
            wait_until(&executor, SOON, || gate_dropped.load(Ordering::SeqCst) == 2).await,
            "the gates' futures were not dropped after the aborts"
        );
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    rig.finish();
}
