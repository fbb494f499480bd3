//! Kills on smol (DESIGN.md step 8 and "Kill semantics, honestly"):
//! timeouts, tools that never yield, tool futures whose `Drop` panics (the
//! abort hazard of async-task), host aborts, dropped handles, and the
//! executor going away under a call.

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_tool_core::untrusted::{Exit, exit_text, timeout_text};
use rho_tool_core::{CallEvent, Outcome, Runner, ToolOutput, ToolResult, Verdict};
use support::{
    HANG, InLoop, PanicOnDrop, Pool, Record, SOON, SetOnDrop, TestGate, TestTool, call, flag,
    on_loop_thread, plain_block_on, poll_once, wait_for,
};

#[test]
fn a_tool_sleeping_past_its_timeout_ends_timed_out_and_its_future_is_dropped() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let pool = Pool::new(2);
    let dropped = flag();
    let tool = TestTool::sleeping("sleepy", &dropped).with_timeout(TIMEOUT);
    let runner = Runner::new(pool.executor());
    let begin = Instant::now();
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "sleepy"), tool.into_arc()),
    ));
    assert!(begin.elapsed() < HANG / 2, "the loop waited for the tool");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(end.outcome.counts_against_tool());
    let ran = end.ran.expect("the clock ran");
    assert!(ran >= TIMEOUT, "killed after {ran:?}, before the timeout");
    assert!(wait_for(&dropped), "the tool's future was not dropped");
}

/// The same on smol's global executor.
#[test]
fn a_tool_sleeping_past_its_timeout_on_the_global_executor_ends_timed_out() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let tool = TestTool::sleeping("sleepy", &dropped).with_timeout(TIMEOUT);
    let runner = Runner::new(SmolExecutor::global());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "sleepy"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(wait_for(&dropped), "the tool's future was not dropped");
}

/// How the loop of a "never yields" test runs.
enum LoopOn {
    /// Its own thread (the test's), outside the executor.
    OwnThread,
    /// A task on the same two-thread executor as the spinning tool.
    SameExecutor,
}

/// A tool that spins on `stop` without ever yielding, with timeout
/// `timeout`, on a two-thread executor. Returns once the loop ended the
/// call; checks that it ended at the deadline while the tool still spun.
fn never_yielding_tool_ends_at_its_deadline(loop_on: LoopOn) {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let pool = Pool::new(2);
    let spinning = flag();
    let stop = flag();
    let exited = flag();
    let tool = {
        let (spinning, stop, exited) = (spinning.clone(), stop.clone(), exited.clone());
        TestTool::new("spin", move || {
            let guard = SetOnDrop(exited.clone());
            let (spinning, stop) = (spinning.clone(), stop.clone());
            async move {
                let _guard = guard;
                spinning.store(true, Ordering::SeqCst);
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                ToolOutput::text("stopped")
            }
        })
        .with_timeout(TIMEOUT)
    };
    // Should the loop never end the call, free the thread anyway so the test
    // fails instead of hanging.
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let begin = Instant::now();
            while !stop.load(Ordering::SeqCst) && begin.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::SeqCst);
        })
    };

    let runner = Runner::new(pool.executor());
    let handle = InLoop::new(runner.start(call("c1", "spin"), tool.into_arc()));
    let end = match loop_on {
        LoopOn::OwnThread => smol::block_on(handle),
        LoopOn::SameExecutor => smol::block_on(pool.ex().spawn(handle)),
    };
    let still_spinning = spinning.load(Ordering::SeqCst) && !exited.load(Ordering::SeqCst);
    let stopped_by_watchdog = stop.swap(true, Ordering::SeqCst);
    watchdog.join().expect("the watchdog thread");

    assert!(
        !stopped_by_watchdog,
        "the loop did not end the call at its deadline"
    );
    assert!(still_spinning, "the call ended only once the tool stopped");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(end.result, ToolResult::error(timeout_text("spin", TIMEOUT)));
    assert!(end.ran.expect("the clock ran") >= TIMEOUT);
    // Released, the tool returns and its (cancelled) future is dropped.
    assert!(wait_for(&exited), "the tool never stopped");
}

/// A tool that never yields, on a two-thread executor, with the loop on its
/// own thread: the loop returns the timeout at the deadline while the tool
/// still spins (the timer is async-io's, not the executor's).
#[test]
fn a_tool_that_never_yields_still_ends_at_its_deadline_on_a_two_thread_executor() {
    never_yielding_tool_ends_at_its_deadline(LoopOn::OwnThread);
}

/// The same with the loop itself a task on the two threads the tool spins
/// on: the other thread runs the loop.
#[test]
fn a_tool_that_never_yields_still_ends_at_its_deadline_with_the_loop_on_the_same_two_threads() {
    never_yielding_tool_ends_at_its_deadline(LoopOn::SameExecutor);
}

/// A tool future whose `Drop` panics (with a `String`), killed at its
/// timeout: async-task drops a cancelled future under an abort-on-panic
/// guard, so unguarded this would abort the test process. It survives: the
/// result is the timeout text, the future was dropped, and the executor
/// still runs calls.
#[test]
fn a_tool_future_whose_drop_panics_killed_at_its_timeout_ends_timed_out_and_the_process_survives() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let pool = Pool::new(2);
    let dropped = flag();
    let tool = {
        let dropped = dropped.clone();
        TestTool::new("grumpy", move || {
            let guard = PanicOnDrop::new(&dropped);
            async move {
                let _guard = guard;
                smol::Timer::after(HANG).await;
                ToolOutput::text("woke up")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let runner = Runner::new(pool.executor());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "grumpy"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("grumpy", TIMEOUT))
    );
    assert!(wait_for(&dropped), "the future was not dropped");

    std::thread::sleep(Duration::from_millis(50));
    let end = smol::block_on(InLoop::new(runner.start(
        call("c2", "echo"),
        TestTool::answering("echo", "still here").into_arc(),
    )));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
}

/// The same with a custom payload out of the `Drop`, on smol's global
/// executor: the payload is disposed of once, in the task, and none of its
/// code runs in the loop.
#[test]
fn a_tool_future_whose_drop_panics_with_a_custom_payload_on_the_global_executor_keeps_it_out_of_the_loop()
 {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let payload = Record::new();
    let tool = {
        let (dropped, payload) = (dropped.clone(), payload.clone());
        TestTool::new("grumpy", move || {
            let guard = PanicOnDrop::with_payload(&dropped, &payload);
            async move {
                let _guard = guard;
                smol::Timer::after(HANG).await;
                ToolOutput::text("woke up")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let runner = Runner::new(SmolExecutor::global());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "grumpy"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert!(wait_for(&dropped), "the future was not dropped");
    assert_eq!(
        payload.wait_for_drops(1),
        1,
        "the payload is disposed of once"
    );
    assert_eq!(payload.formats(), 0);
    assert_eq!(payload.in_loop(), 0);
    assert!(!payload.ran_on(std::thread::current().id()));
}

fn grumpy_tool_started(
    started: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    dropped: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> TestTool {
    let (started, dropped) = (started.clone(), dropped.clone());
    TestTool::new("grumpy", move || {
        let guard = PanicOnDrop::new(&dropped);
        let started = started.clone();
        async move {
            let _guard = guard;
            started.store(true, Ordering::SeqCst);
            smol::Timer::after(HANG).await;
            ToolOutput::text("woke up")
        }
    })
}

/// A running tool whose future's `Drop` panics, aborted by the host with
/// `CallHandle::abort`: `Aborted`, the abort text, the future dropped, the
/// process fine.
#[test]
fn call_handle_abort_of_a_tool_whose_drop_panics_ends_aborted_and_the_process_survives() {
    let pool = Pool::new(2);
    let started = flag();
    let dropped = flag();
    let tool = grumpy_tool_started(&started, &dropped);
    let runner = Runner::new(pool.executor());
    let mut handle = InLoop::new(runner.start(call("c1", "grumpy"), tool.into_arc()));
    let first = smol::block_on(handle.get_mut().next_event());
    assert!(matches!(first, Some(CallEvent::Running(_))), "{first:?}");
    assert!(wait_for(&started));
    handle.with(|handle| handle.abort());
    let end = smol::block_on(handle);
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("grumpy", Exit::Aborted))
    );
    assert!(end.ran.is_some());
    assert!(!end.outcome.counts_against_tool());
    assert!(wait_for(&dropped), "the future was not dropped");

    let end = smol::block_on(InLoop::new(runner.start(
        call("c2", "echo"),
        TestTool::answering("echo", "still here").into_arc(),
    )));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
}

/// The same through an `AbortHandle` used from another thread while the
/// loop awaits the call.
#[test]
fn abort_handle_abort_of_a_tool_whose_drop_panics_ends_aborted() {
    let pool = Pool::new(2);
    let started = flag();
    let dropped = flag();
    let tool = grumpy_tool_started(&started, &dropped);
    let runner = Runner::new(pool.executor());
    let handle = runner.start(call("c1", "grumpy"), tool.into_arc());
    let abort = handle.abort_handle();
    let aborter = {
        let started = started.clone();
        std::thread::spawn(move || {
            assert!(wait_for(&started));
            abort.abort();
        })
    };
    let end = smol::block_on(InLoop::new(handle));
    aborter.join().expect("the aborting thread");
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("grumpy", Exit::Aborted))
    );
    assert!(wait_for(&dropped), "the future was not dropped");
}

/// Dropping an unfinished call handle kills the task: the tool's future is
/// dropped long before its sleep would end.
#[test]
fn dropping_an_unfinished_call_handle_kills_its_task() {
    let pool = Pool::new(2);
    let dropped = flag();
    let tool = TestTool::sleeping("sleepy", &dropped);
    let runs = tool.runs();
    let runner = Runner::new(pool.executor());
    let mut handle = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc()));
    let begin = Instant::now();
    while runs.load(Ordering::SeqCst) == 0 && begin.elapsed() < SOON {
        assert!(handle.with(poll_once).is_none());
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    drop(handle);
    assert!(wait_for(&dropped), "the task was not killed");
}

/// The executor is dropped (its threads stopped, the host's last `Arc`
/// gone) while a tool runs, the loop awaiting the call on its own thread:
/// the call ends `ExecutorGone` with `exit_text`'s text, nothing panics in
/// the loop, and the tool's future is dropped (here, with the executor).
#[test]
fn the_executor_dropped_while_a_tool_runs_ends_executor_gone() {
    let mut pool = Pool::new(2);
    let dropped = flag();
    let tool = TestTool::sleeping("sleepy", &dropped);
    let runs = tool.runs();
    let executor = pool.executor();
    let runner = Runner::new(executor.clone());
    let handle = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc()));
    let begin = Instant::now();
    while runs.load(Ordering::SeqCst) == 0 && begin.elapsed() < SOON {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let looping = on_loop_thread(handle);

    assert!(!executor.is_gone());
    pool.drop_executor();
    assert!(executor.is_gone());
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropping the executor drops the task"
    );

    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("sleepy", Exit::ExecutorGone))
    );
    assert!(end.ran.is_some());
    assert!(!end.outcome.counts_against_tool());
}

/// The same with a tool future whose `Drop` panics: the executor drops it
/// under async-task's abort-on-panic guard, and the process survives.
#[test]
fn the_executor_dropped_under_a_tool_whose_drop_panics_ends_executor_gone_and_the_process_survives()
{
    let mut pool = Pool::new(2);
    let started = flag();
    let dropped = flag();
    let tool = grumpy_tool_started(&started, &dropped);
    let runner = Runner::new(pool.executor());
    let handle = InLoop::new(runner.start(call("c1", "grumpy"), tool.into_arc()));
    assert!(wait_for(&started));
    let looping = on_loop_thread(handle);
    pool.drop_executor();
    assert!(dropped.load(Ordering::SeqCst));
    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
}

/// A call whose gate waits when its executor is dropped, awaited by a loop
/// on a plain thread (no smol there, a standard-library `block_on`): it ends
/// `ExecutorGone`, no clock ran, the tool never ran.
#[test]
fn the_executor_dropped_while_the_gate_waits_ends_executor_gone_on_a_plain_thread_loop() {
    let mut pool = Pool::new(1);
    let entered = flag();
    let gate = {
        let entered = entered.clone();
        TestGate::new(move || {
            let entered = entered.clone();
            async move {
                entered.store(true, Ordering::SeqCst);
                std::future::pending::<Verdict>().await
            }
        })
    };
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let handle = Runner::new(pool.executor())
        .with_gate(gate)
        .start(call("c1", "deploy"), tool.into_arc());
    let looping = std::thread::spawn(move || plain_block_on(InLoop::new(handle)));
    assert!(wait_for(&entered), "the gate never ran");
    pool.drop_executor();
    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("deploy", Exit::ExecutorGone))
    );
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A call started on an executor that is already gone ends `ExecutorGone`
/// without running, and starting it does not panic.
#[test]
fn a_call_started_after_its_executor_was_dropped_ends_executor_gone() {
    let mut pool = Pool::new(1);
    let executor = pool.executor();
    pool.drop_executor();
    let tool = TestTool::answering("echo", "hi");
    let runs = tool.runs();
    let end = smol::block_on(InLoop::new(
        Runner::new(executor).start(call("c1", "echo"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("echo", Exit::ExecutorGone))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A loop on a plain thread (no smol `block_on` there) still gets its
/// timeouts: async-io's own thread drives the timer.
#[test]
fn a_loop_on_a_plain_thread_still_times_calls_out() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let pool = Pool::new(1);
    let dropped = flag();
    let tool = TestTool::sleeping("sleepy", &dropped).with_timeout(TIMEOUT);
    let handle = Runner::new(pool.executor()).start(call("c1", "sleepy"), tool.into_arc());
    let looping = std::thread::spawn(move || plain_block_on(InLoop::new(handle)));
    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(wait_for(&dropped));
}
