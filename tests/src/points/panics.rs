//! Panics of the tool, of every payload type, in `run` itself or in its
//! future, and of the tool's metadata: each ends the call as crashed with a
//! text naming the tool, and no code of a foreign payload runs in the loop.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_tool_core::untrusted::Phase;
use rho_tool_core::{Executor, Outcome, Tool, ToolOutput, ToolResult};

use super::{Rig, assert_panic_text, call, events_of};
use crate::Harness;
use crate::support::{
    Code, METADATA_PANIC, MetadataPanics, RaisesInRun, Reason, ReasonKind, TestTool, yield_now,
};

/// A tool whose future raises `reason` after yielding once.
fn raising_tool(name: &str, reason: &Reason) -> TestTool {
    let reason = reason.clone();
    TestTool::new(name, move |_, _| {
        let reason = reason.clone();
        async move {
            yield_now().await;
            reason.raise_as::<ToolOutput>()
        }
    })
}

/// Runs `tool`, which raises `reason`, and checks the crash: one `Running`
/// (the gate allowed), `Crashed`, the panic text of the tool phase, and no
/// payload code in the loop; a custom payload is dropped once in the task
/// and never formatted.
fn tool_crashes<H: Harness>(tool: Arc<dyn Tool>, reason: &Reason) {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let name = tool.name().to_owned();
    rig.run(async {
        let mut handle = runner.start(call("c1", &name), tool);
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(running.is_some(), "the tool ran: one Running");
        assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
        assert_panic_text(
            &end.result,
            &name,
            Phase::Tool,
            reason.kind().message().as_deref(),
        );
        assert!(
            end.result
                .text()
                .starts_with(&format!("tool `{name}` panicked"))
        );
        assert!(end.outcome.counts_against_tool());
    });
    check_payload(reason);
    rig.assert_off_the_loop_thread(reason.first(), "the payload");
    rig.finish();
}

/// The payload of `reason` was raised once and never ran in the loop; a
/// custom one was dropped exactly once, in a task, and never formatted; a
/// bomb's second payload never ran at all.
pub(crate) fn check_payload(reason: &Reason) {
    assert_eq!(reason.raised().count(Code::Run), 1, "{reason:?}");
    let payload = reason.first();
    assert_eq!(
        payload.in_loop(),
        0,
        "the payload's code ran in the loop: {reason:?}"
    );
    assert_eq!(
        payload.formats(),
        0,
        "the payload was formatted: {reason:?}"
    );
    if reason.kind().is_custom() {
        assert_eq!(payload.count(Code::Drop), 1, "{reason:?}");
        assert_eq!(
            payload.outside_task(),
            0,
            "the payload ran outside its task: {reason:?}"
        );
    }
    assert_eq!(
        reason.second().runs(),
        0,
        "the second payload's code ran: {reason:?}"
    );
}

/// A tool panicking with a `&'static str`: crashed with its message.
pub fn a_tool_panicking_with_a_str_ends_crashed_with_its_message<H: Harness>() {
    let reason = Reason::new(ReasonKind::StaticStr);
    tool_crashes::<H>(raising_tool("grep", &reason).into_arc(), &reason);
}

/// A tool panicking with a `String`: crashed with its message.
pub fn a_tool_panicking_with_a_string_ends_crashed_with_its_message<H: Harness>() {
    let reason = Reason::new(ReasonKind::String);
    tool_crashes::<H>(raising_tool("grep", &reason).into_arc(), &reason);
}

/// A tool panicking with a custom payload: crashed with the neutral text;
/// the payload's `Drop` ran once in the task, its `Display`/`Debug` never.
pub fn a_tool_panicking_with_a_custom_payload_ends_crashed_and_the_payload_never_runs_in_the_loop<
    H: Harness,
>() {
    let reason = Reason::new(ReasonKind::Custom(None));
    tool_crashes::<H>(raising_tool("lint", &reason).into_arc(), &reason);
}

/// A payload whose `Drop` panics with a second custom payload: the process
/// survives, the call is crashed, the first payload's `Drop` ran once (in
/// the task) and the second payload never ran at all (it is forgotten).
/// The executor still runs calls afterwards (checked on one executor, the
/// second payload after a pause that lets anything late show up).
pub fn a_tool_panic_payload_whose_drop_panics_is_contained_and_its_second_payload_never_runs<
    H: Harness,
>() {
    let reason = Reason::new(ReasonKind::Bomb);
    tool_crashes::<H>(raising_tool("bomb", &reason).into_arc(), &reason);
    // The same on one executor, then another call on it.
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let reason = Reason::new(ReasonKind::Bomb);
    rig.run(async {
        let tool = raising_tool("bomb", &reason).into_arc();
        let end = super::end_of(&executor, runner.start(call("c1", "bomb"), tool)).await;
        assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
        assert_panic_text(&end.result, "bomb", Phase::Tool, None);
        // Let anything late show up before the second payload is checked.
        executor.sleep(Duration::from_millis(200)).await;
        assert_eq!(reason.second().runs(), 0, "the second payload's code ran");
        let echo = TestTool::answering("echo", "still here").into_arc();
        let end = super::end_of(&executor, runner.start(call("c2", "echo"), echo)).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result, ToolResult::success("still here"));
    });
    check_payload(&reason);
    rig.assert_off_the_loop_thread(reason.first(), "the payload");
    rig.finish();
}

/// A hand-written `run` that panics before it returns its future: crashed,
/// with the message, as a panic of the tool.
pub fn a_run_that_panics_before_returning_its_future_ends_crashed<H: Harness>() {
    let reason = Reason::new(ReasonKind::StaticStr);
    tool_crashes::<H>(Arc::new(RaisesInRun::new("eager", &reason)), &reason);
    let reason = Reason::new(ReasonKind::Custom(None));
    tool_crashes::<H>(Arc::new(RaisesInRun::new("eager", &reason)), &reason);
}

/// A tool whose metadata (`timeout`) panics when the loop reads it: the
/// call still ends through a task, crashed, named by the call's tool name,
/// without running the tool.
pub fn a_tool_whose_metadata_panics_ends_crashed_without_running<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let runner = rig.runner();
    let tool = MetadataPanics::default();
    let runs = tool.runs();
    rig.run(async {
        let mut handle = runner.start(call("c1", MetadataPanics::NAME), Arc::new(tool));
        let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
        assert!(running.is_none(), "the tool never ran, yet Running");
        assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
        assert_panic_text(
            &end.result,
            MetadataPanics::NAME,
            Phase::Tool,
            Some(METADATA_PANIC),
        );
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    rig.finish();
}
