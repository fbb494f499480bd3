//! Kills, at the deadline and otherwise: timeouts, host aborts and dropped
//! handles end the call without waiting for the task; the tool's future is
//! dropped; a future whose `Drop` panics does not take the process down; a
//! tool that never yields still ends at its deadline on a multi-threaded
//! executor.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rho_tool_core::untrusted::{Exit, exit_text, timeout_text};
use rho_tool_core::{Executor, Outcome, ToolOutput, ToolResult};

use super::panics::check_payload;
use super::{Rig, call, end_of, events_of, weaker};
use crate::Harness;
use crate::support::{
    Code, HANG, InLoop, Latch, RaiseOnDrop, Reason, ReasonKind, Recorder, SOON, SetOnDrop,
    TestTool, block_on_within, flag, poll_once, wait_until,
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
pub(super) fn grumpy<E: Executor>(
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

/// Tool futures whose `Drop` panics (with a `&str`, a `String`, a custom
/// payload, a payload whose own `Drop` panics), killed at their timeout:
/// `TimedOut` with the timeout text, the futures dropped in their tasks
/// (never on the loop's thread, on a multi-threaded executor), the
/// payloads disposed of there, and the process and the executor fine
/// (another call succeeds).
pub fn a_tool_future_whose_drop_panics_killed_at_its_timeout_leaves_the_process_running<
    H: Harness,
>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let mut checked = Vec::new();
    rig.run(async {
        for kind in [
            ReasonKind::StaticStr,
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
            checked.push((reason, guard));
        }
        let echo = TestTool::answering("echo", "ok").into_arc();
        let end = end_of(&executor, runner.start(call("c2", "echo"), echo)).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    });
    for (reason, guard) in &checked {
        rig.assert_off_the_loop_thread(guard, "the future's Drop");
        rig.assert_off_the_loop_thread(reason.first(), "the payload");
    }
    rig.finish();
}

/// A running tool whose future's `Drop` panics (with a `&str`, then with
/// a custom payload), aborted by the host: once with `CallHandle::abort`
/// after the loop saw it running, once with an `AbortHandle` from another
/// thread while the loop awaits it. `Aborted` with the abort text, `ran`
/// known, not counted against the tool, the loop did not wait for the
/// tool, the future dropped in its task, the payload disposed of there,
/// and the process and the executor fine (another call succeeds).
pub fn a_tool_future_whose_drop_panics_aborted_by_the_host_leaves_the_process_running<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let mut checked = Vec::new();
    rig.run(async {
        for kind in [ReasonKind::StaticStr, ReasonKind::Custom(None)] {
            // CallHandle::abort once the loop saw Running and the tool
            // started.
            let reason = Reason::new(kind);
            let guard = Recorder::new();
            let started = flag();
            let tool = grumpy(&executor, "grumpy", &reason, &guard, &started);
            let mut handle = runner.start(call("c1", "grumpy"), tool.into_arc());
            match super::within(&executor, SOON, handle.next_event()).await {
                Some(Some(rho_tool_core::CallEvent::Running(_))) => {}
                other => panic!("expected Running first, got {other:?}"),
            }
            assert!(handle.is_running());
            assert!(wait_until(&executor, SOON, || started.load(Ordering::SeqCst)).await);
            handle.abort();
            let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
            assert_eq!(end.outcome, Outcome::Aborted, "{kind:?}: {end:?}");
            assert_eq!(
                end.result,
                ToolResult::error(exit_text("grumpy", Exit::Aborted))
            );
            assert!(end.ran.is_some());
            assert!(!end.outcome.counts_against_tool());
            settled(&executor, &reason, &guard).await;
            checked.push((reason, guard));

            // An AbortHandle from another thread, while the loop awaits.
            let reason = Reason::new(kind);
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
            let begin = Instant::now();
            let end = end_of(&executor, handle).await;
            assert!(begin.elapsed() < HANG / 2, "the loop waited for the tool");
            aborter.join().expect("the aborting thread");
            assert_eq!(end.outcome, Outcome::Aborted, "{kind:?}: {end:?}");
            assert_eq!(
                end.result,
                ToolResult::error(exit_text("grumpy", Exit::Aborted))
            );
            assert!(end.ran.is_some());
            assert!(!end.outcome.counts_against_tool());
            settled(&executor, &reason, &guard).await;
            checked.push((reason, guard));

            let echo = TestTool::answering("echo", "still here").into_arc();
            let end = end_of(&executor, runner.start(call("c3", "echo"), echo)).await;
            assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        }
    });
    for (reason, guard) in &checked {
        rig.assert_off_the_loop_thread(guard, "the future's Drop");
        rig.assert_off_the_loop_thread(reason.first(), "the payload");
    }
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

/// A tool whose timeout is `Duration::MAX` ("no limit") runs normally: the
/// loop's clock neither overflows nor panics when it starts at the notice,
/// and the call succeeds with the tool's answer.
pub fn a_tool_with_the_longest_possible_timeout_runs_normally<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let release = Latch::new();
    let tool = {
        let release = release.clone();
        TestTool::new("patient", move |_, _| {
            let release = release.clone();
            async move {
                release.wait().await;
                ToolOutput::text("done")
            }
        })
        .with_timeout(Duration::MAX)
    };
    let runner = rig.runner();
    rig.run(async {
        let mut handle = runner.start(call("c1", "patient"), tool.into_arc());
        assert_eq!(handle.timeout(), Duration::MAX);
        match super::within(&executor, SOON, handle.next_event()).await {
            Some(Some(rho_tool_core::CallEvent::Running(_))) => {}
            other => panic!("expected Running first, got {other:?}"),
        }
        assert!(handle.is_running());
        // The clock runs: give it a chance to misbehave.
        executor.sleep(Duration::from_millis(20)).await;
        release.open();
        let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result, ToolResult::success("done"));
    });
    rig.finish();
}

/// A loop on a plain thread (no runtime there at all, a standard-library
/// `block_on` that parks until woken) still gets its timeouts: the clock is
/// the executor's timer, not the loop's. The executor keeps running
/// meanwhile (its own `block_on` waits on the test's thread); the call
/// ends `TimedOut` with the timeout text and the tool's future is dropped.
pub fn a_loop_on_a_plain_thread_still_times_calls_out<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let dropped = flag();
    let tool = sleeper(&executor, "sleepy", &dropped).with_timeout(TIMEOUT);
    let handle = rig.runner().start(call("c1", "sleepy"), tool.into_arc());
    let ended = flag();
    let looping = {
        let ended = ended.clone();
        std::thread::spawn(move || {
            let end = block_on_within(HANG / 2, InLoop::new(handle));
            ended.store(true, Ordering::SeqCst);
            end
        })
    };
    // Keep the executor running (a single-threaded one runs only inside its
    // `block_on`) until the plain thread's loop has its end.
    let done = rig.run(wait_until(&executor, HANG / 2, || {
        ended.load(Ordering::SeqCst)
    }));
    let end = looping
        .join()
        .expect("no panic in the plain thread's loop")
        .expect("the call did not time out on a loop with no runtime");
    assert!(done);
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    let ran = end.ran.expect("the clock ran");
    assert!(ran >= TIMEOUT, "killed after {ran:?}, before the timeout");
    assert!(
        rig.run(wait_until(&executor, SOON, || dropped.load(Ordering::SeqCst))),
        "the tool's future was not dropped after the kill"
    );
    rig.finish();
}
