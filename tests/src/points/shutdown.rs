//! The executor going away (an abnormal end that is neither a panic nor a
//! kill): calls in flight and calls started afterwards each end with
//! exactly one result, `ExecutorGone` with `exit_text`, and nothing panics
//! in the loop, which then runs with no runtime at all.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;

use rho_tool_core::untrusted::{Exit, exit_text};
use rho_tool_core::{
    CallEvent, CallHandle, Executor, Joined, Outcome, Runner, ToolCall, ToolOutput, ToolResult,
    Verdict, Watch,
};

use super::panics::check_payload;
use super::{Rig, call};
use crate::Harness;
use crate::support::{
    Code, CountOnDrop, Counting, HANG, InLoop, Reason, ReasonKind, Recorder, RecordingWatch, SOON,
    SetOnDrop, TestGate, TestTool, block_on_within, flag, poll_once, wait_until,
    wait_until_blocking, within,
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
                matches!(events.first(), Some(CallEvent::AwaitingApproval(_))),
                "a call held at its gate did not report AwaitingApproval: {events:?}"
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

/// Takes every event of `handle` until `None`; sets `saw_running` when
/// `Running` arrives.
async fn every_event<E: Executor>(
    mut handle: CallHandle<E>,
    saw_running: Arc<AtomicBool>,
) -> Vec<CallEvent> {
    let mut events = Vec::new();
    while let Some(event) = handle.next_event().await {
        if matches!(event, CallEvent::Running(_)) {
            saw_running.store(true, Ordering::SeqCst);
        }
        events.push(event);
    }
    events
}

/// A loop on a plain thread (no runtime there, a standard-library
/// `block_on` that parks until woken) is already waiting on a call held at
/// its gate, a call whose tool runs (the loop saw its `Running`) and a raw
/// task, when the executor shuts down: the shutdown alone wakes it, and
/// each ends once: the held call `ExecutorGone` with `exit_text`, no clock,
/// its tool never ran; the running call `ExecutorGone`, `ran` known, not
/// counted against the tool; the raw task `Lost`. Every future is dropped.
pub fn calls_awaited_on_a_plain_thread_end_executor_gone_when_the_executor_shuts_down<
    H: Harness,
>() {
    if !super::shuts_down::<H>(
        "calls_awaited_on_a_plain_thread_end_executor_gone_when_the_executor_shuts_down",
    ) {
        return;
    }
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let entered = flag();
    let gate_dropped = flag();
    let gate = {
        let (entered, gate_dropped) = (entered.clone(), gate_dropped.clone());
        TestGate::new(move |call: ToolCall| {
            let entered = entered.clone();
            let hold = call.arguments["hold"] == serde_json::json!(true);
            let guard = hold.then(|| SetOnDrop(gate_dropped.clone()));
            async move {
                if hold {
                    let _guard = guard;
                    entered.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                Verdict::Allow
            }
        })
    };
    let held_tool = TestTool::answering("deploy", "deployed");
    let held_runs = held_tool.runs();
    let started = flag();
    let tool_dropped = flag();
    let sleepy = {
        let (executor, started, tool_dropped) =
            (executor.clone(), started.clone(), tool_dropped.clone());
        TestTool::new("sleepy", move |_, _| {
            let wait = executor.sleep(HANG);
            let started = started.clone();
            let guard = SetOnDrop(tool_dropped.clone());
            async move {
                let _guard = guard;
                started.store(true, Ordering::SeqCst);
                wait.await;
                ToolOutput::text("woke up")
            }
        })
    };
    let raw_dropped = flag();
    let runner = rig.runner().with_gate(gate);
    let held = runner.start(
        ToolCall::new("held", "deploy", serde_json::json!({ "hold": true })),
        held_tool.into_arc(),
    );
    let running = runner.start(call("running", "sleepy"), sleepy.into_arc());
    let raw = {
        let guard = SetOnDrop(raw_dropped.clone());
        executor.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        })
    };
    let saw_running = flag();
    let waiting = flag();
    let looping = {
        let (saw_running, waiting) = (saw_running.clone(), waiting.clone());
        std::thread::spawn(move || {
            let mut held = Box::pin(every_event(held, flag()));
            let mut running = Box::pin(every_event(running, saw_running));
            let mut raw = raw;
            let (mut held_end, mut running_end, mut raw_end) = (None, None, None);
            let all = std::future::poll_fn(move |cx| {
                if held_end.is_none() {
                    if let Poll::Ready(events) = held.as_mut().poll(cx) {
                        held_end = Some(events);
                    }
                }
                if running_end.is_none() {
                    if let Poll::Ready(events) = running.as_mut().poll(cx) {
                        running_end = Some(events);
                    }
                }
                if raw_end.is_none() {
                    if let Poll::Ready(joined) = Pin::new(&mut raw).poll(cx) {
                        raw_end = Some(joined);
                    }
                }
                waiting.store(true, Ordering::SeqCst);
                if held_end.is_some() && running_end.is_some() && raw_end.is_some() {
                    Poll::Ready((held_end.take(), running_end.take(), raw_end.take()))
                } else {
                    Poll::Pending
                }
            });
            block_on_within(SOON, InLoop::new(all))
        })
    };
    // Keep the executor running (a single-threaded one runs only inside its
    // `block_on`) until the calls are in flight and the plain thread's loop
    // waits on them, having seen the running call's `Running`.
    let settled = rig.run(wait_until(&executor, SOON, || {
        entered.load(Ordering::SeqCst)
            && started.load(Ordering::SeqCst)
            && saw_running.load(Ordering::SeqCst)
            && waiting.load(Ordering::SeqCst)
    }));
    assert!(settled, "the calls never reached their gate and tool");
    let executor = rig.shut_down();
    let (held, running, raw) = looping
        .join()
        .expect("no panic in the plain thread's loop")
        .unwrap_or_else(|| {
            panic!("the plain thread's loop was not woken within {SOON:?} by the shutdown")
        });
    let (Some(held), Some(running), Some(raw)) = (held, running, raw) else {
        unreachable!("the loop returns once all three ended");
    };
    let end = match held.as_slice() {
        [CallEvent::AwaitingApproval(_), CallEvent::Ended(end)] => end,
        other => panic!("unexpected events of the held call: {other:?}"),
    };
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("deploy", Exit::ExecutorGone))
    );
    assert_eq!(end.ran, None, "no clock ran: {end:?}");
    assert_eq!(held_runs.load(Ordering::SeqCst), 0);
    let end = match running.as_slice() {
        [CallEvent::Running(_), CallEvent::Ended(end)] => end,
        other => panic!("unexpected events of the running call: {other:?}"),
    };
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("sleepy", Exit::ExecutorGone))
    );
    assert!(end.ran.is_some(), "{end:?}");
    assert!(!end.outcome.counts_against_tool());
    assert_eq!(raw, Joined::Lost);
    let dropped = wait_until_blocking(SOON, || {
        gate_dropped.load(Ordering::SeqCst)
            && tool_dropped.load(Ordering::SeqCst)
            && raw_dropped.load(Ordering::SeqCst)
            && executor.live() == 0
    });
    assert!(
        dropped,
        "after the executor shut down, futures are still alive (gate dropped: {}, tool \
         dropped: {}, raw task dropped: {}, {} tasks alive)",
        gate_dropped.load(Ordering::SeqCst),
        tool_dropped.load(Ordering::SeqCst),
        raw_dropped.load(Ordering::SeqCst),
        executor.live(),
    );
}

/// Tools whose future's `Drop` panics (with a `&str`, with a custom
/// payload) are running when the executor shuts down: the process lives,
/// each call ends `ExecutorGone` (awaited with no runtime), each future is
/// dropped (in the background is fine) with its panic contained in its
/// task, and no code of a payload runs in the loop.
pub fn a_tool_future_whose_drop_panics_when_the_executor_shuts_down_leaves_the_process_running<
    H: Harness,
>() {
    if !super::shuts_down::<H>(
        "a_tool_future_whose_drop_panics_when_the_executor_shuts_down_leaves_the_process_running",
    ) {
        return;
    }
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let kinds = [ReasonKind::StaticStr, ReasonKind::Custom(None)];
    let reasons: Vec<_> = kinds
        .iter()
        .map(|kind| (Reason::new(*kind), Recorder::new(), flag()))
        .collect();
    let handles = rig.run(async {
        let mut handles = Vec::new();
        for (n, (reason, guard, started)) in reasons.iter().enumerate() {
            let tool = super::kill::grumpy(&executor, "grumpy", reason, guard, started);
            let mut handle = runner.start(call(format!("c{n}"), "grumpy"), tool.into_arc());
            match within(&executor, SOON, handle.next_event()).await {
                Some(Some(CallEvent::Running(_))) => {}
                other => panic!("expected Running first, got {other:?}"),
            }
            handles.push(handle);
        }
        let settled = wait_until(&executor, SOON, || {
            reasons
                .iter()
                .all(|(_, _, started)| started.load(Ordering::SeqCst))
        })
        .await;
        assert!(settled, "the tools never started");
        handles
    });
    let executor = rig.shut_down();
    let ends = block_on_within(
        SOON,
        InLoop::new(async move {
            let mut ends = Vec::new();
            for handle in handles {
                ends.push(handle.await);
            }
            ends
        }),
    )
    .unwrap_or_else(|| panic!("the calls did not end within {SOON:?} after the shutdown"));
    for end in &ends {
        assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("grumpy", Exit::ExecutorGone))
        );
        assert!(end.ran.is_some(), "{end:?}");
    }
    for (reason, guard, _) in &reasons {
        let settled = wait_until_blocking(SOON, || {
            guard.count(Code::Drop) == 1
                && reason.raised().count(Code::Run) == 1
                && (!reason.kind().is_custom() || reason.first().count(Code::Drop) == 1)
        });
        assert!(
            settled,
            "the future was not dropped after the shutdown: {guard:?}, {reason:?}"
        );
        assert_eq!(guard.in_loop(), 0, "the future's Drop ran in the loop");
        assert_eq!(
            guard.outside_task(),
            0,
            "the future's Drop ran outside its task"
        );
        check_payload(reason);
    }
    assert!(
        wait_until_blocking(SOON, || executor.live() == 0),
        "{} tasks still alive after the shutdown",
        executor.live()
    );
}
