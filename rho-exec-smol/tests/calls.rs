//! Calls that end normally on smol (DESIGN.md "One call, step by step"):
//! on a multi-threaded executor, on smol's global executor, and with the
//! loop and the tools sharing one thread; a slow gate runs no clock.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_tool_core::{CallEvent, Outcome, Runner, ToolOutput, ToolResult, Verdict};
use support::{InLoop, Pool, TestGate, TestTool, call};

#[test]
fn a_call_succeeds_on_a_multi_threaded_executor() {
    let pool = Pool::new(2);
    let runner = Runner::new(pool.executor());
    let tool = TestTool::answering("echo", "hello");
    let runs = tool.runs();
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "echo"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result, ToolResult::success("hello"));
    assert_eq!(end.call_id, "c1");
    assert_eq!(end.tool, "echo");
    assert!(end.ran.is_some());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_call_succeeds_on_the_global_executor() {
    let executor = SmolExecutor::global();
    assert!(executor.is_global());
    assert!(!executor.is_gone());
    let runner = Runner::new(executor);
    let tool = TestTool::new("add", || async {
        smol::Timer::after(Duration::from_millis(10)).await;
        ToolOutput::text("5")
    });
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "add"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "5");
}

/// The loop drives the executor itself (`ex.run` around the call), one
/// thread for everything: fine for tools that yield.
#[test]
fn a_call_succeeds_with_the_loop_and_the_tools_on_one_thread() {
    let ex = Arc::new(smol::Executor::new());
    let runner = Runner::new(SmolExecutor::new(ex.clone()));
    let tool = TestTool::new("nap", || async {
        smol::Timer::after(Duration::from_millis(20)).await;
        ToolOutput::text("rested")
    });
    let end = smol::block_on(ex.run(InLoop::new(
        runner.start(call("c1", "nap"), tool.into_arc()),
    )));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "rested");
}

/// A gate that waits far longer than the tool's timeout, then allows: the
/// clock only starts at the running notice, so the call succeeds; the wait
/// is reported as `waited`, not as run time.
#[test]
fn a_gate_that_waits_longer_than_the_timeout_then_allows_succeeds() {
    const TIMEOUT: Duration = Duration::from_millis(100);
    const GATE_WAIT: Duration = Duration::from_millis(500);
    let pool = Pool::new(2);
    let gate = TestGate::new(|| async {
        smol::Timer::after(GATE_WAIT).await;
        Verdict::Allow
    });
    let tool = TestTool::answering("deploy", "deployed").with_timeout(TIMEOUT);
    let runs = tool.runs();
    let runner = Runner::new(pool.executor()).with_gate(gate);
    let begin = Instant::now();
    let mut handle = InLoop::new(runner.start(call("c1", "deploy"), tool.into_arc()));
    assert!(!handle.get_mut().is_running());
    let first = smol::block_on(handle.get_mut().next_event());
    assert_eq!(
        first,
        Some(CallEvent::AwaitingGate("c1".to_owned())),
        "the first event says the gate is waiting"
    );
    let second = smol::block_on(handle.get_mut().next_event());
    let Some(CallEvent::Running(running)) = second else {
        panic!("the second event is the running notice: {second:?}");
    };
    assert!(running.waited >= GATE_WAIT, "{running:?}");
    assert!(begin.elapsed() >= GATE_WAIT);
    let end = smol::block_on(handle);
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "deployed");
    assert!(end.waited >= GATE_WAIT);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A gate that denies: `Denied` naming the reason; the tool never ran and
/// no clock ran.
#[test]
fn a_gate_that_denies_ends_denied_and_the_tool_never_runs() {
    let pool = Pool::new(2);
    let gate = TestGate::new(|| async { Verdict::deny("deploys are frozen") });
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = Runner::new(pool.executor()).with_gate(gate);
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "deploy"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Denied, "{end:?}");
    assert!(end.result.text().contains("deploys are frozen"));
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// Many calls in flight at once on one executor all end with their own
/// answers.
#[test]
fn many_calls_in_flight_each_end_with_their_own_answer() {
    let pool = Pool::new(2);
    let runner = Runner::new(pool.executor());
    let handles: Vec<_> = (0..32)
        .map(|n| {
            let tool = TestTool::new("count", move || async move {
                smol::Timer::after(Duration::from_millis(5)).await;
                ToolOutput::text(n.to_string())
            });
            InLoop::new(runner.start(call(format!("c{n}"), "count"), tool.into_arc()))
        })
        .collect();
    let ends = smol::block_on(async {
        let mut ends = Vec::new();
        for handle in handles {
            ends.push(handle.await);
        }
        ends
    });
    for (n, end) in ends.iter().enumerate() {
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.call_id, format!("c{n}"));
        assert_eq!(end.result.text(), n.to_string());
    }
}
