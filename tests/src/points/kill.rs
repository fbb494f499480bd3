//! Kills (DESIGN.md step 8 and "Kill semantics, honestly"): timeouts, host
//! aborts and dropped handles end the call without waiting for the task;
//! the tool's future is dropped; a future whose `Drop` panics does not take
//! the process down; a tool that never yields still ends at its deadline on
//! a multi-threaded executor.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::{Exit, exit_text, timeout_text};
use rho_tool_core::{Executor, Outcome, ToolOutput, ToolResult};

use super::panics::check_payload;
use super::{Rig, call, end_of, events_of, weaker};
use crate::Harness;
use crate::support::{
    Code, HANG, RaiseOnDrop, Reason, ReasonKind, Recorder, SOON, SetOnDrop, TestTool, flag,
    poll_once, wait_until,
};

/// A tool that sleeps [`HANG`] on the executor's timer, holding a guard
/// that sets `dropped`.
fn sleeper<E: Executor>(executor: &E, name: &str, dropped: &Arc<AtomicBool>) -> TestTool {
    let (executor, dropped) = (executor.clone(), dropped.clone());
    TestTool::new(name, move |_, _| {
        let guard = SetOnDrop(dropped.clone());
        let wait = executor.sleep(HANG);
        async move {
            let _guard = guard;
            wait.await;
            ToolOutput::text("woke up")
        }
    })
}

/// A tool that sleeps [`HANG`] holding a guard whose `Drop` raises
/// `reason` (recording on `guard`), and sets `started` first.
fn grumpy<E: Executor>(
    executor: &E,
    name: &str,
    reason: &Reason,
    guard: &Arc<Recorder>,
    started: &Arc<AtomicBool>,
) -> TestTool {
    let (executor, reason, guard, started) = (
        executor.clone(),
        reason.clone(),
        guard.clone(),
        started.clone(),
    );
    TestTool::new(name, move |_, _| {
        let raise = RaiseOnDrop::new(&reason, &guard);
        let wait = executor.sleep(HANG);
        let started = started.clone();
        async move {
            let _raise = raise;
            started.store(true, Ordering::SeqCst);
            wait.await;
            ToolOutput::text("woke up")
        }
    })
}

/// Waits until the killed future's guard raised its reason and the payload
/// was disposed of, then checks where everything ran.
async fn settled<E: Executor>(executor: &E, reason: &Reason, guard: &Arc<Recorder>) {
    let done = wait_until(executor, SOON, || {
        guard.count(Code::Drop) == 1
            && reason.raised().count(Code::Run) == 1
            && (!reason.kind().is_custom() || reason.first().count(Code::Drop) == 1)
    })
    .await;
    assert!(
        done,
        "the killed future was not dropped: {guard:?}, {reason:?}"
    );
    assert_eq!(guard.in_loop(), 0, "the future's Drop ran in the loop");
    assert_eq!(
        guard.outside_task(),
        0,
        "the future's Drop ran outside its task"
    );
    check_payload(reason);
}

/// A tool sleeping past its timeout: `TimedOut` with `timeout_text` (tool
/// and limit), counted against the tool, `ran` at least the timeout, the
/// loop did not wait for the tool, and the tool's future is dropped.
pub fn a_tool_sleeping_past_its_timeout_ends_timed_out_and_its_future_is_dropped<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let dropped = flag();
    let tool = sleeper(&executor, "sleepy", &dropped).with_timeout(TIMEOUT);
    let runner = rig.runner();
    rig.run(async {
        let begin = Instant::now();
        let mut handle = runner.start(call("c1", "sleepy"), tool.into_arc());
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(begin.elapsed() < HANG / 2, "the loop waited for the tool");
        assert!(running.is_some());
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(timeout_text("sleepy", TIMEOUT))
        );
        assert!(end.outcome.counts_against_tool());
        let ran = end.ran.expect("the clock ran");
        assert!(ran >= TIMEOUT, "killed after {ran:?}, before the timeout");
        assert!(
            wait_until(&executor, SOON, || dropped.load(Ordering::SeqCst)).await,
            "the tool's future was not dropped after the kill"
        );
    });
    rig.finish();
}

/// A tool that never yields (a busy loop until the test lets it go) still
/// ends at its deadline: the loop does not wait for the task to agree. The
/// end arrives while the tool is still spinning; the test then lets it
/// stop, and its future is dropped at its next `.await`.
///
/// Weaker on a single-threaded executor (`MULTI_THREADED == false`): the
/// spinning tool holds the only thread, so neither the loop nor the timer
/// runs until it yields. There the point checks that the call ends
/// `TimedOut` at the tool's first yield after its deadline (a watchdog
/// thread lets it stop spinning), and says so on stdout.
pub fn a_tool_that_never_yields_ends_at_its_deadline<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let spinning = flag();
    let stop = flag();
    let exited = flag();
    let tool = {
        let (executor, spinning, stop, exited) = (
            executor.clone(),
            spinning.clone(),
            stop.clone(),
            exited.clone(),
        );
        TestTool::new("spin", move |_, _| {
            let guard = SetOnDrop(exited.clone());
            let (spinning, stop) = (spinning.clone(), stop.clone());
            let wait = executor.sleep(HANG);
            async move {
                let _guard = guard;
                spinning.store(true, Ordering::SeqCst);
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                // The first yield after the spin.
                wait.await;
                ToolOutput::text("stopped")
            }
        })
        .with_timeout(TIMEOUT)
    };
    // Multi-threaded: a safety net, so a broken executor fails the point
    // instead of hanging it. Single-threaded: the way the tool stops.
    let release_after = if H::MULTI_THREADED {
        Duration::from_secs(30)
    } else {
        TIMEOUT * 3
    };
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let begin = Instant::now();
            while !stop.load(Ordering::SeqCst) && begin.elapsed() < release_after {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.swap(true, Ordering::SeqCst)
        })
    };
    let runner = rig.runner();
    let (end, still_spinning) = rig.run(async {
        let handle = runner.start(call("c1", "spin"), tool.into_arc());
        let end = end_of(&executor, handle).await;
        let still_spinning = !stop.load(Ordering::SeqCst);
        (end, still_spinning)
    });
    let stopped_by_us = !stop.swap(true, Ordering::SeqCst);
    let released_by_watchdog = !watchdog.join().expect("the watchdog thread");
    assert!(spinning.load(Ordering::SeqCst), "the tool never ran");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(end.result, ToolResult::error(timeout_text("spin", TIMEOUT)));
    let ran = end.ran.expect("the clock ran");
    assert!(ran >= TIMEOUT, "ended after {ran:?}, before the deadline");
    if H::MULTI_THREADED {
        assert!(
            still_spinning && stopped_by_us && !released_by_watchdog,
            "the loop did not end the call while its tool spun (it waited for the tool to yield)"
        );
    } else {
        weaker(
            "a_tool_that_never_yields_ends_at_its_deadline",
            "single-threaded: a tool that never yields holds the only thread, so the call \
             ends at the tool's first yield after its deadline, not at the deadline",
        );
        assert!(
            !still_spinning,
            "the call ended while its tool spun on a single-threaded executor"
        );
    }
    let executor_again = rig.executor();
    assert!(
        rig.run(wait_until(&executor_again, SOON, || exited.load(Ordering::SeqCst))),
        "the spinning tool's future was never dropped"
    );
    rig.finish();
}

/// Tool futures whose `Drop` panics (with a `String`, then with a custom
/// payload), killed at their timeout: `TimedOut` with the timeout text,
/// the futures dropped in their tasks, the payloads disposed of there, and
/// the process and the executor fine (another call succeeds).
pub fn a_tool_future_whose_drop_panics_killed_at_its_timeout_leaves_the_process_running<
    H: Harness,
>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    rig.run(async {
        for kind in [
            ReasonKind::String,
            ReasonKind::Custom(None),
            ReasonKind::Bomb,
        ] {
            let reason = Reason::new(kind);
            let guard = Recorder::new();
            let started = flag();
            let tool = grumpy(&executor, "grumpy", &reason, &guard, &started).with_timeout(TIMEOUT);
            let end = end_of(
                &executor,
                runner.start(call("c1", "grumpy"), tool.into_arc()),
            )
            .await;
            assert_eq!(end.outcome, Outcome::TimedOut, "{kind:?}: {end:?}");
            assert_eq!(
                end.result,
                ToolResult::error(timeout_text("grumpy", TIMEOUT))
            );
            settled(&executor, &reason, &guard).await;
        }
        let echo = TestTool::answering("echo", "ok").into_arc();
        let end = end_of(&executor, runner.start(call("c2", "echo"), echo)).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    });
    rig.finish();
}

/// A running tool whose future's `Drop` panics, aborted by the host: once
/// with `CallHandle::abort` after the loop saw it running, once with an
/// `AbortHandle` from another thread while the loop awaits it. `Aborted`
/// with the abort text, `ran` known, not counted against the tool, the
/// future dropped in its task, the process fine.
pub fn a_tool_future_whose_drop_panics_aborted_by_the_host_leaves_the_process_running<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    rig.run(async {
        // CallHandle::abort once the loop saw Running and the tool started.
        let reason = Reason::new(ReasonKind::Custom(None));
        let guard = Recorder::new();
        let started = flag();
        let tool = grumpy(&executor, "grumpy", &reason, &guard, &started);
        let mut handle = runner.start(call("c1", "grumpy"), tool.into_arc());
        match super::within(&executor, SOON, handle.next_event()).await {
            Some(Some(rho_tool_core::CallEvent::Running(_))) => {}
            other => panic!("expected Running first, got {other:?}"),
        }
        assert!(wait_until(&executor, SOON, || started.load(Ordering::SeqCst)).await);
        handle.abort();
        let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("grumpy", Exit::Aborted))
        );
        assert!(end.ran.is_some());
        assert!(!end.outcome.counts_against_tool());
        settled(&executor, &reason, &guard).await;

        // An AbortHandle from another thread, while the loop awaits.
        let reason = Reason::new(ReasonKind::StaticStr);
        let guard = Recorder::new();
        let started = flag();
        let tool = grumpy(&executor, "grumpy", &reason, &guard, &started);
        let handle = runner.start(call("c2", "grumpy"), tool.into_arc());
        let abort = handle.abort_handle();
        let aborter = {
            let started = started.clone();
            std::thread::spawn(move || {
                let begin = Instant::now();
                while !started.load(Ordering::SeqCst) && begin.elapsed() < SOON {
                    std::thread::sleep(Duration::from_millis(2));
                }
                abort.abort();
            })
        };
        let end = end_of(&executor, handle).await;
        aborter.join().expect("the aborting thread");
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        assert_eq!(
            end.result,
            ToolResult::error(exit_text("grumpy", Exit::Aborted))
        );
        settled(&executor, &reason, &guard).await;

        let echo = TestTool::answering("echo", "ok").into_arc();
        let end = end_of(&executor, runner.start(call("c3", "echo"), echo)).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    });
    rig.finish();
}

/// Dropping an unfinished call handle kills its task: the tool's future is
/// dropped long before its sleep would have ended.
pub fn dropping_an_unfinished_call_handle_kills_its_task<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let dropped = flag();
    let tool = sleeper(&executor, "sleepy", &dropped);
    let runs = tool.runs();
    let runner = rig.runner();
    rig.run(async {
        let mut handle = runner.start(call("c1", "sleepy"), tool.into_arc());
        let begin = Instant::now();
        while runs.load(Ordering::SeqCst) == 0 && begin.elapsed() < SOON {
            assert!(poll_once(&mut handle).await.is_none());
            executor.sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool never ran");
        drop(handle);
        assert!(
            wait_until(&executor, SOON, || dropped.load(Ordering::SeqCst)).await,
            "the task was not killed when its handle was dropped"
        );
    });
    rig.finish();
}
