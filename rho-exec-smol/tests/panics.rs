//! Panics on smol (DESIGN.md step 7): a panic of the tool or the gate, with
//! any payload type, ends the call as crashed; none of a foreign payload's
//! code (`Drop`, `Display`, `Debug`) runs while the loop polls the call.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_exec_smol::SmolExecutor;
use rho_tool_core::untrusted::{Phase, panic_text};
use rho_tool_core::{Outcome, Runner, ToolOutput, ToolResult};
use support::{Bomb, InLoop, Pool, Record, Tattle, TestGate, TestTool, call};

/// A tool whose future yields once, then panics with what `payload` makes.
fn panicking_tool<P, F>(name: &str, payload: F) -> TestTool
where
    P: std::any::Any + Send + 'static,
    F: Fn() -> P + Send + Sync + 'static,
{
    let payload = Arc::new(payload);
    TestTool::new(name, move || {
        let payload = payload.clone();
        async move {
            smol::Timer::after(Duration::from_millis(5)).await;
            std::panic::panic_any(payload())
        }
    })
}

#[test]
fn a_tool_panicking_with_a_string_ends_crashed_with_its_message() {
    let pool = Pool::new(2);
    let runner = Runner::new(pool.executor());
    let tool = panicking_tool("grep", || format!("bad regex at {}", 7));
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "grep"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("grep", Phase::Tool, Some("bad regex at 7")))
    );
}

/// A custom payload whose `Drop`, `Display` and `Debug` record whether they
/// ran while the loop polled the call: crashed with the neutral text, the
/// payload disposed of once, in the task, never formatted, and nothing of
/// it ran in the loop.
#[test]
fn a_tool_panicking_with_a_custom_payload_ends_crashed_and_no_payload_code_runs_in_the_loop() {
    let pool = Pool::new(2);
    let record = Record::new();
    let tool = {
        let record = record.clone();
        panicking_tool("lint", move || Tattle(record.clone()))
    };
    let runner = Runner::new(pool.executor());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "lint"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("lint", Phase::Tool, None))
    );
    assert!(!end.result.text().contains("tattle"));
    assert_eq!(record.in_loop(), 0, "the payload's code ran in the loop");
    assert_eq!(record.formats(), 0, "the payload was formatted");
    assert_eq!(record.drops(), 1, "the payload is disposed of in the task");
    assert!(!record.ran_on(std::thread::current().id()));
}

/// The same on smol's global executor.
#[test]
fn a_tool_panicking_with_a_custom_payload_on_the_global_executor_ends_crashed() {
    let record = Record::new();
    let tool = {
        let record = record.clone();
        panicking_tool("lint", move || Tattle(record.clone()))
    };
    let runner = Runner::new(SmolExecutor::global());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "lint"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0);
    assert_eq!(record.drops(), 1);
}

/// A payload whose `Drop` panics with a second custom payload: the process
/// survives, the call is crashed, the first payload's `Drop` ran once, not
/// in the loop, and the second payload's code never ran (it is forgotten).
#[test]
fn a_payload_whose_drop_panics_is_contained_and_its_second_payload_never_runs() {
    let pool = Pool::new(2);
    let first = Record::new();
    let second = Record::new();
    let tool = {
        let (first, second) = (first.clone(), second.clone());
        panicking_tool("bomb", move || Bomb {
            first: first.clone(),
            second: second.clone(),
        })
    };
    let runner = Runner::new(pool.executor());
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "bomb"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(first.drops(), 1);
    assert_eq!(first.in_loop(), 0);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(second.drops(), 0, "the second payload was dropped");
    assert_eq!(second.formats(), 0);

    let end = smol::block_on(InLoop::new(runner.start(
        call("c2", "echo"),
        TestTool::answering("echo", "still here").into_arc(),
    )));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
}

/// A gate panicking with a custom payload: crashed, naming the gate; the
/// tool never ran; nothing of the payload ran in the loop.
#[test]
fn a_gate_panicking_with_a_custom_payload_ends_crashed_and_no_payload_code_runs_in_the_loop() {
    let pool = Pool::new(2);
    let record = Record::new();
    let gate = {
        let record = record.clone();
        TestGate::new(move || {
            let record = record.clone();
            async move {
                smol::future::yield_now().await;
                std::panic::panic_any(Tattle(record))
            }
        })
    };
    let tool = TestTool::new("deploy", || async { ToolOutput::text("deployed") });
    let runs = tool.runs();
    let runner = Runner::new(pool.executor()).with_gate(gate);
    let end = smol::block_on(InLoop::new(
        runner.start(call("c1", "deploy"), tool.into_arc()),
    ));
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("deploy", Phase::Gate, None))
    );
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0);
    assert_eq!(record.drops(), 1);
}
