//! Panics of tools and gates, of every payload type, end as error results;
//! no code of a foreign payload runs in the loop (DESIGN.md step 7).
//!
//! The loop's polls and drops of each call's handle are marked with the
//! thread-local of `support::InLoop`; the custom payloads record every run
//! of their `Drop`, `Display` and `Debug`, and whether it was inside such a
//! mark.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_tool_core::untrusted::{Phase, panic_text};
use rho_tool_core::{
    CallEnd, Outcome, Runner, Tool, ToolContext, ToolOutput, ToolResult, Verdict, async_trait,
};
use support::{Bomb, InLoop, RAN_IN_LOOP, Record, Tattle, TestGate, TestTool, call, executor};

/// Starts `tool` on `runner` and awaits its end with the loop marked.
async fn run_in_loop(runner: &Runner<TokioExecutor>, tool: Arc<dyn Tool>) -> CallEnd {
    let name = tool.name().to_owned();
    InLoop::new(runner.start(call("c1", &name), tool)).await
}

/// A tool that panics with `payload` (made fresh for each run).
fn panicking_tool<P, F>(name: &str, payload: F) -> TestTool
where
    P: std::any::Any + Send + 'static,
    F: Fn() -> P + Send + Sync + 'static,
{
    let payload = Arc::new(payload);
    TestTool::new(name, move |_, _| {
        let payload = payload.clone();
        async move {
            tokio::task::yield_now().await;
            std::panic::panic_any(payload())
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_panicking_with_a_str_ends_crashed_with_its_message() {
    let runner = Runner::new(executor());
    let end = run_in_loop(
        &runner,
        panicking_tool("grep", || "index out of bounds").into_arc(),
    )
    .await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert!(end.result.is_error);
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("grep", Phase::Tool, Some("index out of bounds")))
    );
    assert!(end.result.text().contains("`grep`"));
    assert!(end.result.text().contains("index out of bounds"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_panicking_with_a_string_ends_crashed_with_its_message() {
    let runner = Runner::new(executor());
    let end = run_in_loop(
        &runner,
        panicking_tool("grep", || format!("bad regex at {}", 7)).into_arc(),
    )
    .await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("grep", Phase::Tool, Some("bad regex at 7")))
    );
    assert!(end.result.text().contains("`grep`"));
    assert!(end.result.text().contains("bad regex at 7"));
}

/// A custom payload ends the call with the neutral text; its `Drop` ran
/// exactly once, in the task, and its `Display`/`Debug` never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_panicking_with_a_custom_payload_ends_crashed_and_no_payload_code_runs_in_the_loop()
{
    let record = Record::new();
    let runner = Runner::new(executor());
    let tool = {
        let record = record.clone();
        panicking_tool("lint", move || Tattle::new(&record))
    };
    let end = run_in_loop(&runner, tool.into_arc()).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("lint", Phase::Tool, None))
    );
    assert!(end.result.text().contains("`lint`"));
    assert!(!end.result.text().contains("tattle"));
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0, "the payload was formatted");
    assert_eq!(record.drops(), 1, "the payload is disposed of in the task");
    assert_eq!(RAN_IN_LOOP.load(Ordering::SeqCst), 0);
}

/// A payload whose `Drop` panics with a second custom payload: the process
/// survives, the call is crashed, the first payload's `Drop` ran once (not in
/// the loop) and the second payload's `Drop` never ran at all (it is
/// forgotten).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_whose_drop_panics_is_contained_and_its_second_payload_never_dropped() {
    let first = Record::new();
    let second = Record::new();
    let runner = Runner::new(executor());
    let tool = {
        let (first, second) = (first.clone(), second.clone());
        panicking_tool("bomb", move || Bomb {
            record: first.clone(),
            second: second.clone(),
        })
    };
    let end = run_in_loop(&runner, tool.into_arc()).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("bomb", Phase::Tool, None))
    );
    assert_eq!(first.drops(), 1);
    assert_eq!(first.in_loop(), 0);

    // Let anything late show up, then check the second payload never ran.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(second.anywhere(), 0, "the second payload's code ran");
    assert_eq!(RAN_IN_LOOP.load(Ordering::SeqCst), 0);

    // The process and the runtime are fine: another call runs.
    let end = run_in_loop(
        &runner,
        TestTool::answering("echo", "still here").into_arc(),
    )
    .await;
    assert_eq!(end.outcome, Outcome::Succeeded);
}

/// A gate that panics with a `String`: crashed, the text says the gate of
/// that tool panicked and gives the message; the tool never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_panicking_with_a_string_ends_crashed_naming_the_gate_of_the_tool() {
    let gate = TestGate::new(|call: rho_tool_core::ToolCall| async move {
        tokio::task::yield_now().await;
        std::panic::panic_any(format!("policy file for {} is corrupt", call.name))
    });
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = Runner::new(executor()).with_gate(gate);
    let end = run_in_loop(&runner, tool.into_arc()).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text(
            "deploy",
            Phase::Gate,
            Some("policy file for deploy is corrupt")
        ))
    );
    assert!(
        end.result
            .text()
            .contains("the gate of tool `deploy` panicked")
    );
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A gate that panics with a custom payload: crashed with the neutral text,
/// none of the payload's code in the loop, the tool never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_panicking_with_a_custom_payload_ends_crashed_and_no_payload_code_runs_in_the_loop()
{
    let record = Record::new();
    let gate = {
        let record = record.clone();
        TestGate::new(move |_| {
            let record = record.clone();
            async move { std::panic::panic_any(Tattle::new(&record)) }
        })
    };
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = Runner::new(executor()).with_gate(gate);
    let end = run_in_loop(&runner, tool.into_arc()).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text("deploy", Phase::Gate, None))
    );
    assert!(
        end.result
            .text()
            .contains("the gate of tool `deploy` panicked")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0);
    assert_eq!(record.drops(), 1);
    assert_eq!(RAN_IN_LOOP.load(Ordering::SeqCst), 0);
}

/// A gate that denies: `Denied`, an error result naming the tool and the
/// reason, no clock (`ran == None`), and the tool never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_denies_ends_denied_with_the_reason_and_the_tool_never_runs() {
    let gate = TestGate::new(|_| async { Verdict::deny("deploys are frozen until Monday") });
    let tool = TestTool::answering("deploy", "deployed");
    let runs = tool.runs();
    let runner = Runner::new(executor()).with_gate(gate);
    let end = run_in_loop(&runner, tool.into_arc()).await;
    assert_eq!(end.outcome, Outcome::Denied, "{end:?}");
    assert!(end.result.is_error);
    assert!(
        end.result
            .text()
            .contains("deploys are frozen until Monday")
    );
    assert!(end.result.text().contains("`deploy`"));
    assert_eq!(end.result.details, None);
    assert_eq!(end.ran, None);
    assert!(!end.outcome.counts_against_tool());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A hand-written `run` that panics before it returns its future (possible
/// without `async fn`): crashed, with the message.
struct PanicsBeforeItsFuture;

#[async_trait]
impl Tool for PanicsBeforeItsFuture {
    fn name(&self) -> &str {
        "eager"
    }
    fn description(&self) -> &str {
        "panics in `run` itself"
    }
    fn run<'life0, 'async_trait>(
        &'life0 self,
        _arguments: serde_json::Value,
        _context: ToolContext,
    ) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        panic!("run panicked before returning its future")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_panics_before_returning_its_future_ends_crashed() {
    let runner = Runner::new(executor());
    let end = run_in_loop(&runner, Arc::new(PanicsBeforeItsFuture)).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text(
            "eager",
            Phase::Tool,
            Some("run panicked before returning its future")
        ))
    );
}

/// A tool whose metadata (`timeout`) panics when the loop reads it: the
/// call ends crashed, named by the call's tool name, without running.
struct BadTimeout(Arc<std::sync::atomic::AtomicUsize>);

#[async_trait]
impl Tool for BadTimeout {
    fn name(&self) -> &str {
        "bad_timeout"
    }
    fn description(&self) -> &str {
        "panics in `timeout`"
    }
    fn timeout(&self) -> Duration {
        panic!("no timeout configured")
    }
    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("ran")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_whose_metadata_panics_ends_crashed_without_running() {
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runner = Runner::new(executor());
    let end = InLoop::new(runner.start(
        call("c1", "bad_timeout"),
        Arc::new(BadTimeout(runs.clone())),
    ))
    .await;
    assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(panic_text(
            "bad_timeout",
            Phase::Tool,
            Some("no timeout configured")
        ))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
