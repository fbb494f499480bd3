//! What the soak found in other crates, kept as regression tests (the
//! catalogue's `arguments_nested_a_million_levels_end_with_a_clear_error`
//! is the other).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rho_conformance::support::TestTool;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{Outcome, Runner, ToolCall, ToolOutput};

/// How long the tool spins if nobody releases it.
const SPIN_BOUND: Duration = Duration::from_secs(3);

/// `rho-exec-tokio` says that on the multi-thread runtime with two or more
/// workers a call ends at its deadline even when its tool never yields.
/// That holds when the loop runs outside the runtime's workers (a
/// `block_on` thread), not when the loop is itself a task of the same
/// runtime, as many hosts have it:
///
/// 1. the call's task allows the call and tells the loop "running"
///    (`Notice::set_running`), which wakes the loop's task from inside the
///    call's task, on the worker that is about to poll the tool;
/// 2. tokio puts a task woken from a worker in that worker's LIFO slot,
///    which the other workers never steal;
/// 3. the tool then spins on that worker, so the loop is not polled, never
///    starts the clock, and when the tool finally answers the call ends
///    *succeeded*, long after its deadline.
///
/// The soak met it as "expected timed_out, got succeeded" for a tool that
/// never yields. The call's task now yields once after its notice, so the
/// loop takes the notice (and starts the clock) before the tool runs.
#[test]
fn a_tool_that_never_yields_ends_at_its_deadline_when_the_loop_is_a_task_of_the_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let release = Arc::new(AtomicBool::new(false));
    let released = release.clone();
    let spinner = TestTool::new("spinner", move |_arguments, _cx| {
        let released = released.clone();
        async move {
            let start = Instant::now();
            while !released.load(Ordering::SeqCst) && start.elapsed() < SPIN_BOUND {
                std::hint::spin_loop();
            }
            ToolOutput::text("stopped spinning")
        }
    })
    .with_timeout(Duration::from_millis(100));
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a runtime with a timer");
    let runner = Runner::new(executor);
    let call = ToolCall::new("c1", "spinner", serde_json::json!({}));
    // The loop: a task of the same runtime.
    let host_loop = runtime.spawn(async move {
        let started = Instant::now();
        let end = runner.start(call, spinner.into_arc()).await;
        (end.outcome, started.elapsed(), end.result.text())
    });
    let (outcome, took, text) = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), host_loop).await })
        .expect("the call ended")
        .expect("the loop's task");
    release.store(true, Ordering::SeqCst);
    assert!(
        outcome == Outcome::TimedOut && took < SPIN_BOUND,
        "a tool with a 100 ms timeout that never yields ended {outcome} after {took:?} ({text}); \
         the loop, a task of the same tokio runtime, was stuck in the spinning worker's LIFO slot"
    );
}
