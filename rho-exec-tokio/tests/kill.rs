//! Kills (DESIGN.md step 8 and "Kill semantics, honestly"): timeouts, host
//! aborts, dropped handles, tool futures whose `Drop` panics, and the
//! executor going away under a call.

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_tool_core::untrusted::{Exit, exit_text, timeout_text};
use rho_tool_core::{CallEvent, Executor, Outcome, Runner, ToolOutput, ToolResult, Verdict};
use support::{
    InLoop, PanicOnDrop, PanicOnDropWith, Record, SetOnDrop, TestGate, TestTool, block_on, call,
    executor, flag, poll_once, wait_for, wait_for_blocking,
};

/// Generous bound for things that happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(10);
/// How long the hanging tools of these tests would sleep if not killed.
const HANG: Duration = Duration::from_secs(60);

/// A tool that sleeps `HANG` holding a guard that sets `dropped`.
fn sleeper(name: &str, dropped: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> TestTool {
    let dropped = dropped.clone();
    TestTool::new(name, move |_, _| {
        let guard = SetOnDrop(dropped.clone());
        async move {
            let _guard = guard;
            tokio::time::sleep(HANG).await;
            ToolOutput::text("woke up")
        }
    })
}

fn runtime_with_one_worker() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the tools")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_sleeping_past_its_timeout_ends_timed_out_and_its_future_is_dropped() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let tool = sleeper("sleepy", &dropped).with_timeout(TIMEOUT);
    let runner = Runner::new(executor());
    let begin = Instant::now();
    let end = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc())).await;
    assert!(begin.elapsed() < HANG / 2, "the loop waited for the tool");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(end.outcome.counts_against_tool());
    let ran = end.ran.expect("the clock ran");
    assert!(ran >= TIMEOUT, "killed after {ran:?}, before the timeout");
    assert!(
        wait_for(&dropped, SOON).await,
        "the tool's future was not dropped after the kill"
    );
}

/// A tool that never yields (a busy loop) still ends at its deadline on the
/// multi-thread runtime: the loop does not wait for the task to agree. The
/// call's end arrives while the tool is still spinning; the test then lets
/// it stop, so its worker is freed.
///
/// A current-thread runtime cannot do this: it has one thread, and a tool
/// that never yields holds it, so neither the loop nor the timer runs until
/// the tool yields. There a call ends at its deadline only if its tool
/// yields; tools that may not yield need the multi-thread runtime (which
/// still loses the spinning worker until the tool yields) or a process
/// boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_yields_still_ends_at_its_deadline_on_the_multi_thread_runtime() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let spinning = flag();
    let stop = flag();
    let exited = flag();
    let tool = {
        let (spinning, stop, exited) = (spinning.clone(), stop.clone(), exited.clone());
        TestTool::new("spin", move |_, _| {
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
    // Should the loop never end the call, free the worker anyway so the test
    // fails instead of hanging.
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let begin = Instant::now();
            while !stop.load(Ordering::SeqCst) && begin.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::SeqCst);
        })
    };

    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "spin"), tool.into_arc())).await;
    let still_spinning = !exited.load(Ordering::SeqCst);
    let stopped_by_watchdog = stop.swap(true, Ordering::SeqCst);
    watchdog.join().expect("the watchdog thread");

    assert!(
        !stopped_by_watchdog,
        "the loop did not end the call at its deadline"
    );
    assert!(still_spinning, "the call ended only once the tool stopped");
    assert!(wait_for(&spinning, SOON).await, "the tool never ran");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(end.result, ToolResult::error(timeout_text("spin", TIMEOUT)));
    assert!(wait_for(&exited, SOON).await, "the tool never stopped");
}

/// A tool future whose `Drop` panics (with a `String`), killed at its
/// timeout: the process survives, the result is the timeout text, and the
/// runtime still runs calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_future_whose_drop_panics_killed_at_its_timeout_ends_timed_out() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let tool = {
        let dropped = dropped.clone();
        TestTool::new("grumpy", move |_, _| {
            let guard = PanicOnDrop(dropped.clone());
            async move {
                let _guard = guard;
                tokio::time::sleep(HANG).await;
                ToolOutput::text("woke up")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "grumpy"), tool.into_arc())).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("grumpy", TIMEOUT))
    );
    assert!(wait_for(&dropped, SOON).await, "the future was not dropped");

    tokio::time::sleep(Duration::from_millis(50)).await;
    let end = InLoop::new(runner.start(
        call("c2", "echo"),
        TestTool::answering("echo", "ok").into_arc(),
    ))
    .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
}

/// The same with a custom panic payload out of the `Drop`: none of the
/// payload's code runs in the loop, and it is disposed of in the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_future_whose_drop_panics_with_a_custom_payload_keeps_it_out_of_the_loop() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let payload = Record::new();
    let tool = {
        let (dropped, payload) = (dropped.clone(), payload.clone());
        TestTool::new("grumpy", move |_, _| {
            let guard = PanicOnDropWith {
                dropped: dropped.clone(),
                payload: payload.clone(),
            };
            async move {
                let _guard = guard;
                tokio::time::sleep(HANG).await;
                ToolOutput::text("woke up")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "grumpy"), tool.into_arc())).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("grumpy", TIMEOUT))
    );
    assert!(wait_for(&dropped, SOON).await, "the future was not dropped");
    let begin = Instant::now();
    while payload.drops() == 0 && begin.elapsed() < SOON {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(payload.drops(), 1, "the payload is disposed of once");
    assert_eq!(payload.formats(), 0);
    assert_eq!(payload.in_loop(), 0);
}

/// A running tool whose future's `Drop` panics, aborted by the host with
/// `CallHandle::abort` once the loop saw it running: `Aborted`, the abort
/// text, the future dropped, the process fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_handle_abort_of_a_tool_whose_drop_panics_ends_aborted() {
    let started = flag();
    let dropped = flag();
    let tool = {
        let (started, dropped) = (started.clone(), dropped.clone());
        TestTool::new("grumpy", move |_, _| {
            let guard = PanicOnDrop(dropped.clone());
            let started = started.clone();
            async move {
                let _guard = guard;
                started.store(true, Ordering::SeqCst);
                tokio::time::sleep(HANG).await;
                ToolOutput::text("woke up")
            }
        })
    };
    let runner = Runner::new(executor());
    let mut handle = InLoop::new(runner.start(call("c1", "grumpy"), tool.into_arc()));
    assert!(matches!(
        handle.get_mut().next_event().await,
        Some(CallEvent::Running(_))
    ));
    assert!(wait_for(&started, SOON).await);
    handle.get_mut().abort();
    let end = handle.await;
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("grumpy", Exit::Aborted))
    );
    assert!(end.ran.is_some());
    assert!(!end.outcome.counts_against_tool());
    assert!(wait_for(&dropped, SOON).await, "the future was not dropped");
}

/// The same through an `AbortHandle` used from another task while the loop
/// awaits the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_handle_abort_of_a_tool_whose_drop_panics_ends_aborted() {
    let started = flag();
    let dropped = flag();
    let tool = {
        let (started, dropped) = (started.clone(), dropped.clone());
        TestTool::new("grumpy", move |_, _| {
            let guard = PanicOnDrop(dropped.clone());
            let started = started.clone();
            async move {
                let _guard = guard;
                started.store(true, Ordering::SeqCst);
                tokio::time::sleep(HANG).await;
                ToolOutput::text("woke up")
            }
        })
    };
    let runner = Runner::new(executor());
    let handle = runner.start(call("c1", "grumpy"), tool.into_arc());
    let abort = handle.abort_handle();
    let aborter = {
        let started = started.clone();
        tokio::spawn(async move {
            assert!(wait_for(&started, SOON).await);
            abort.abort();
        })
    };
    let begin = Instant::now();
    let end = InLoop::new(handle).await;
    assert!(begin.elapsed() < HANG / 2);
    aborter.await.expect("the aborting task");
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("grumpy", Exit::Aborted))
    );
    assert!(wait_for(&dropped, SOON).await, "the future was not dropped");
}

/// Dropping an unfinished handle kills the task: the tool's future is
/// dropped long before its sleep would have ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_an_unfinished_call_handle_kills_its_task() {
    let dropped = flag();
    let tool = sleeper("sleepy", &dropped);
    let runs = tool.runs();
    let runner = Runner::new(executor());
    let mut handle = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc()));
    let begin = Instant::now();
    while runs.load(Ordering::SeqCst) == 0 && begin.elapsed() < SOON {
        assert!(poll_once(&mut handle).await.is_none());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    drop(handle);
    assert!(wait_for(&dropped, SOON).await, "the task was not killed");
}

/// A call whose tool is running when its runtime shuts down
/// (`shutdown_background`), awaited by a loop on another runtime: it ends
/// with `ExecutorGone` and `exit_text`'s text, and the tool's future is
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_whose_runtime_shuts_down_ends_executor_gone() {
    let tools = runtime_with_one_worker();
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    let dropped = flag();
    let tool = sleeper("sleepy", &dropped);
    let runs = tool.runs();
    let runner = Runner::new(executor);
    let mut handle = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc()));
    assert!(matches!(
        handle.get_mut().next_event().await,
        Some(CallEvent::Running(_))
    ));
    let begin = Instant::now();
    while runs.load(Ordering::SeqCst) == 0 && begin.elapsed() < SOON {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    tools.shutdown_background();
    let end = tokio::time::timeout(SOON, handle)
        .await
        .expect("the call did not end after its runtime shut down");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("sleepy", Exit::ExecutorGone))
    );
    assert!(end.ran.is_some());
    assert!(!end.outcome.counts_against_tool());
    assert!(
        wait_for(&dropped, SOON).await,
        "the tool's future was not dropped"
    );
}

/// A call whose gate is waiting when its runtime shuts down, awaited by a
/// loop on a plain thread (no runtime there, a minimal `block_on`): it ends
/// with `ExecutorGone`, no clock ran, the tool never ran.
#[test]
fn a_call_at_its_gate_whose_runtime_shuts_down_ends_executor_gone_on_a_plain_thread_loop() {
    let tools = runtime_with_one_worker();
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    let entered = flag();
    let gate = {
        let entered = entered.clone();
        TestGate::new(move |_| {
            let entered = entered.clone();
            async move {
                entered.store(true, Ordering::SeqCst);
                std::future::pending::<Verdict>().await
            }
        })
    };
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let handle = Runner::new(executor)
        .with_gate(gate)
        .start(call("c1", "deploy"), tool.into_arc());
    let (sender, receiver) = std::sync::mpsc::channel();
    let looping = std::thread::spawn(move || {
        let end = block_on(InLoop::new(handle));
        let _ = sender.send(end);
    });
    assert!(wait_for_blocking(&entered, SOON), "the gate never ran");
    tools.shutdown_background();
    let end = receiver
        .recv_timeout(SOON)
        .expect("the call did not end after its runtime shut down");
    looping.join().expect("the loop thread");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("deploy", Exit::ExecutorGone))
    );
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A loop on a plain thread (no runtime there) still gets its timeouts: the
/// clock is the executor's timer, not the loop's.
#[test]
fn a_loop_on_a_plain_thread_still_times_calls_out() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let tools = runtime_with_one_worker();
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    let dropped = flag();
    let tool = sleeper("sleepy", &dropped).with_timeout(TIMEOUT);
    let handle = Runner::new(executor).start(call("c1", "sleepy"), tool.into_arc());
    let (sender, receiver) = std::sync::mpsc::channel();
    let looping = std::thread::spawn(move || {
        let end = block_on(InLoop::new(handle));
        let _ = sender.send(end);
    });
    let end = receiver
        .recv_timeout(HANG / 2)
        .expect("the call did not time out");
    looping.join().expect("the loop thread");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(wait_for_blocking(&dropped, SOON));
}

/// A call started on an executor whose runtime already shut down: starting
/// it does not panic, and it ends with `ExecutorGone` without running. The
/// executor's timer after the shutdown neither panics nor fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_started_after_its_runtime_shut_down_ends_executor_gone() {
    let tools = runtime_with_one_worker();
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    tools.shutdown_background();

    let tool = TestTool::answering("echo", "hi");
    let runs = tool.runs();
    let handle = Runner::new(executor.clone()).start(call("c1", "echo"), tool.into_arc());
    let end = tokio::time::timeout(SOON, InLoop::new(handle))
        .await
        .expect("the call did not end");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("echo", Exit::ExecutorGone))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let mut sleep = executor.sleep(Duration::ZERO);
    assert!(poll_once(&mut sleep).await.is_none());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(poll_once(&mut sleep).await.is_none());
}

/// On the current-thread runtime a tool that yields (here: sleeps) is still
/// killed at its deadline; only a tool that never yields cannot be (see
/// `a_tool_that_never_yields_still_ends_at_its_deadline_on_the_multi_thread_runtime`).
#[tokio::test(flavor = "current_thread")]
async fn a_yielding_tool_times_out_on_the_current_thread_runtime_too() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    let dropped = flag();
    let tool = sleeper("sleepy", &dropped).with_timeout(TIMEOUT);
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(call("c1", "sleepy"), tool.into_arc())).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(timeout_text("sleepy", TIMEOUT))
    );
    assert!(wait_for(&dropped, SOON).await);
}

/// A tool whose timeout is `Duration::MAX` ("no limit") runs normally: the
/// loop's clock does not overflow or panic when it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_the_longest_possible_timeout_runs_normally() {
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let tool = {
        let release = release.clone();
        TestTool::new("patient", move |_, _| {
            let release = release.clone();
            async move {
                release.notified().await;
                ToolOutput::text("done")
            }
        })
        .with_timeout(Duration::MAX)
    };
    let runner = Runner::new(executor());
    let mut handle = InLoop::new(runner.start(call("c1", "patient"), tool.into_arc()));
    assert!(matches!(
        handle.get_mut().next_event().await,
        Some(CallEvent::Running(_))
    ));
    assert!(handle.get_mut().is_running());
    release.notify_one();
    let end = handle.await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result, ToolResult::success("done"));
}
