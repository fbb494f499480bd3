//! The executor going away (DESIGN.md step 7, "the executor going away"):
//! calls in flight and calls started afterwards each end with exactly one
//! result, `ExecutorGone` with `exit_text`, and nothing panics in the loop,
//! which then runs with no runtime at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rho_tool_core::untrusted::{Exit, exit_text};
use rho_tool_core::{
    CallEvent, CallHandle, Executor, Joined, Outcome, Runner, ToolCall, ToolOutput, ToolResult,
    Verdict, Watch,
};

use super::{Rig, call};
use crate::Harness;
use crate::support::{
    CountOnDrop, Counting, HANG, InLoop, RecordingWatch, SOON, TestGate, TestTool, block_on_within,
    flag, poll_once, wait_until, within,
};

/// Calls left in flight by [`in_flight`].
pub(crate) struct InFlight<E: Executor> {
    /// Each handle, with whether the loop already took its `Running`, and
    /// whether its tool started.
    pub(crate) calls: Vec<(CallHandle<E>, bool, bool)>,
    /// Drops of the held gates' futures.
    pub(crate) gates_dropped: Arc<AtomicUsize>,
    /// Drops of the running tools' futures.
    pub(crate) tools_dropped: Arc<AtomicUsize>,
    pub(crate) watch: Arc<RecordingWatch>,
}

/// Gates held in flight.
pub(crate) const AT_GATE: usize = 2;
/// Tools running in flight (the loop took `Running` for all but one).
pub(crate) const RUNNING: usize = 3;

/// Starts calls on `rig` and leaves them in flight: [`AT_GATE`] waiting in
/// their gate, [`RUNNING`] running (sleeping on the executor's timer), the
/// loop having taken `Running` for all but the last.
pub(crate) fn in_flight<H: Harness>(rig: &Rig<H>) -> InFlight<Counting<H::Executor>> {
    let executor = rig.executor();
    let entered = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let gates_dropped = Arc::new(AtomicUsize::new(0));
    let tools_dropped = Arc::new(AtomicUsize::new(0));
    let gate = {
        let (entered, gates_dropped) = (entered.clone(), gates_dropped.clone());
        TestGate::new(move |call: ToolCall| {
            let entered = entered.clone();
            let hold = call.arguments["hold"] == serde_json::json!(true);
            let guard = hold.then(|| CountOnDrop(gates_dropped.clone()));
            async move {
                if hold {
                    let _guard = guard;
                    entered.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                Verdict::Allow
            }
        })
    };
    let tool = {
        let (executor, started, tools_dropped) =
            (executor.clone(), started.clone(), tools_dropped.clone());
        TestTool::new("sleepy", move |_, _| {
            let wait = executor.sleep(HANG);
            let started = started.clone();
            let guard = CountOnDrop(tools_dropped.clone());
            async move {
                let _guard = guard;
                started.fetch_add(1, Ordering::SeqCst);
                wait.await;
                ToolOutput::text("woke up")
            }
        })
        .into_arc()
    };
    let watch = RecordingWatch::new();
    let runner = rig
        .runner()
        .with_gate(gate)
        .with_watch(watch.clone() as Arc<dyn Watch>);
    let calls = rig.run(async {
        let mut calls = Vec::new();
        for n in 0..AT_GATE {
            let held = ToolCall::new(
                format!("held-{n}"),
                "sleepy",
                serde_json::json!({ "hold": true }),
            );
            calls.push((runner.start(held, tool.clone()), false, false));
        }
        for n in 0..RUNNING {
            let mut handle = runner.start(call(format!("running-{n}"), "sleepy"), tool.clone());
            let take_running = n + 1 < RUNNING;
            if take_running {
                match within(&executor, SOON, handle.next_event()).await {
                    Some(Some(CallEvent::Running(_))) => {}
                    other => panic!("expected Running first, got {other:?}"),
                }
            }
            calls.push((handle, take_running, true));
        }
        let settled = wait_until(&executor, SOON, || {
            entered.load(Ordering::SeqCst) == AT_GATE && started.load(Ordering::SeqCst) == RUNNING
        })
        .await;
        assert!(settled, "the calls never reached their gates and tools");
        calls
    });
    InFlight {
        calls,
        gates_dropped,
        tools_dropped,
        watch,
    }
}

/// The executor shuts down while calls are in flight (some waiting in
/// their gate, some running, one whose `Running` the loop has not taken
/// yet), and the loop goes on with no runtime at all: every call still ends
/// with exactly one result (its `Running` first if it ran and the loop had
/// not taken it), `ExecutorGone` with `exit_text(tool, ExecutorGone)`, `ran`
/// known only for those that ran, the watch told each end once, and
/// nothing panics in the loop.
pub fn calls_in_flight_when_the_executor_shuts_down_end_executor_gone<H: Harness>() {
    if !super::shuts_down::<H>("calls_in_flight_when_the_executor_shuts_down_end_executor_gone") {
        return;
    }
    let rig = Rig::<H>::new();
    let InFlight { calls, watch, .. } = in_flight(&rig);
    rig.shut_down();
    let ends = block_on_within(
        SOON,
        InLoop::new(async move {
            let mut ends = Vec::new();
            for (mut handle, took_running, ran) in calls {
                let mut events = Vec::new();
                while let Some(event) = handle.next_event().await {
                    events.push(event);
                }
                ends.push((handle.task(), took_running, ran, events));
            }
            ends
        }),
    )
    .unwrap_or_else(|| {
        panic!("calls in flight did not all end within {SOON:?} after the executor shut down")
    });
    for (task, took_running, ran, mut events) in ends {
        // A held gate was waiting: its call says so first.
        if !ran {
            assert!(
                matches!(events.first(), Some(CallEvent::AwaitingGate(_))),
                "a call held at its gate did not report AwaitingGate: {events:?}"
            );
            events.remove(0);
        }
        let end = match events.as_slice() {
            [CallEvent::Ended(end)] if took_running || !ran => end,
            [CallEvent::Running(_), CallEvent::Ended(end)] if !took_running && ran => end,
            other => {
                panic!("unexpected events (took Running: {took_running}, ran: {ran}): {other:?}")
            }
        };
        assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("sleepy", Exit::ExecutorGone))
        );
        assert_eq!(end.ran.is_some(), ran, "{end:?}");
        assert!(!end.outcome.counts_against_tool());
        assert_eq!(
            watch.ended_for(task),
            vec![("sleepy".to_owned(), Outcome::ExecutorGone)]
        );
    }
    assert_eq!(watch.ended_count(), AT_GATE + RUNNING);
}

/// A call started on an executor that already shut down (through a clone
/// the host still holds): starting it does not panic, it ends
/// `ExecutorGone` without running; a raw task spawned there resolves
/// `Lost` without running; the executor's timer does not panic.
pub fn a_call_started_after_the_executor_shut_down_ends_executor_gone<H: Harness>() {
    if !super::shuts_down::<H>("a_call_started_after_the_executor_shut_down_ends_executor_gone") {
        return;
    }
    let rig = Rig::<H>::new();
    let executor = rig.shut_down();
    let tool = TestTool::answering("echo", "hi");
    let runs = tool.runs();
    let ran = flag();
    let outcome = block_on_within(
        SOON,
        InLoop::new(async {
            let mut sleep = Box::pin(executor.sleep(std::time::Duration::ZERO));
            let _ = poll_once(&mut sleep).await;
            let handle = Runner::new(executor.clone()).start(call("c1", "echo"), tool.into_arc());
            let end = handle.await;
            let raw = {
                let ran = ran.clone();
                executor.spawn(async move { ran.store(true, Ordering::SeqCst) })
            };
            (end, raw.await)
        }),
    );
    let (end, joined) = outcome.unwrap_or_else(|| {
        panic!("a call started after the executor shut down did not end within {SOON:?}")
    });
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("echo", Exit::ExecutorGone))
    );
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(joined, Joined::Lost);
    assert!(
        !ran.load(Ordering::SeqCst),
        "a task spawned after the shutdown ran"
    );
}
