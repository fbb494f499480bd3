//! The watch (a registry's sources): told each call's task before its tool
//! runs and how it ended, exactly once each, whatever the end; a watch that
//! panics changes nothing.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_tool_core::untrusted::timeout_text;
use rho_tool_core::{
    CallEnd, Executor, Outcome, Runner, Start, TaskId, Tool, ToolCall, ToolOutput, ToolResult,
    Verdict, Watch,
};

use super::{Rig, call, end_of};
use crate::Harness;
use crate::support::{
    HANG, PanickingWatch, RecordingWatch, SOON, TestGate, TestTool, flag, wait_until,
};

const HANGS_TIMEOUT: Duration = Duration::from_millis(100);

/// The outcome every tool of [`watched_calls`] must end with.
fn expected(tool: &str) -> Outcome {
    match tool {
        "ok" => Outcome::Succeeded,
        "fails" => Outcome::Failed,
        "denied" => Outcome::Denied,
        "crashes" => Outcome::Crashed,
        "hangs" => Outcome::TimedOut,
        "aborted" | "dropped" => Outcome::Aborted,
        other => unreachable!("no tool {other}"),
    }
}

fn deny_on_request() -> Arc<TestGate> {
    TestGate::new(|call: ToolCall| async move {
        if call.arguments["deny"] == serde_json::json!(true) {
            Verdict::deny("denied by the test")
        } else {
            Verdict::Allow
        }
    })
}

/// Runs one call of each kind of end on `runner` (in the loop) and returns
/// the ends and the task of a handle dropped unfinished (it has no end;
/// only the watch hears of it). With `told_first`, the `ok` tool checks
/// that the watch was told its task before it ran.
async fn watched_calls<E: Executor>(
    runner: &Runner<E>,
    told_first: Option<Arc<RecordingWatch>>,
) -> (Vec<CallEnd>, TaskId) {
    let executor = runner.executor().clone();
    let told_before_run = flag();
    let checks_watch = told_first.is_some();
    let ok: Arc<dyn Tool> = {
        let told_before_run = told_before_run.clone();
        TestTool::new("ok", move |_, cx| {
            if let Some(watch) = &told_first {
                let told = watch.started_for(cx.task()) == vec!["ok-1".to_owned()];
                told_before_run.store(told, Ordering::SeqCst);
            }
            async { ToolOutput::text("fine") }
        })
        .into_arc()
    };
    let sleeping = |name: &str| {
        let executor = executor.clone();
        TestTool::new(name, move |_, _| {
            let wait = executor.sleep(HANG);
            async move {
                wait.await;
                ToolOutput::text("never")
            }
        })
    };
    let fails = TestTool::new("fails", |_, _| async { ToolOutput::error("no such file") });
    let denied = TestTool::answering("denied", "never");
    let crashes = TestTool::new("crashes", |_, _| async { panic!("boom") });
    let hangs = sleeping("hangs").with_timeout(HANGS_TIMEOUT);

    let mut ends = vec![end_of(&executor, runner.start(call("ok-1", "ok"), ok)).await];
    ends.push(
        end_of(
            &executor,
            runner.start(call("fails-1", "fails"), fails.into_arc()),
        )
        .await,
    );
    let deny = ToolCall::new("denied-1", "denied", serde_json::json!({ "deny": true }));
    ends.push(end_of(&executor, runner.start(deny, denied.into_arc())).await);
    ends.push(
        end_of(
            &executor,
            runner.start(call("crashes-1", "crashes"), crashes.into_arc()),
        )
        .await,
    );
    ends.push(
        end_of(
            &executor,
            runner.start(call("hangs-1", "hangs"), hangs.into_arc()),
        )
        .await,
    );
    let aborted = runner.start(call("aborted-1", "aborted"), sleeping("aborted").into_arc());
    aborted.abort();
    ends.push(end_of(&executor, aborted).await);
    let dropped = runner.start(call("dropped-1", "dropped"), sleeping("dropped").into_arc());
    let dropped_task = dropped.task();
    drop(dropped);
    if checks_watch {
        assert!(
            told_before_run.load(Ordering::SeqCst),
            "the watch was not told the task before the tool ran"
        );
    }
    (ends, dropped_task)
}

/// The watch is told each call exactly once when it starts (before its
/// tool runs) and exactly once when it ends, with the right outcome, for
/// every kind of end, including a handle dropped unfinished (`Aborted`).
pub fn a_watch_sees_each_call_start_and_end_exactly_once<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let watch = RecordingWatch::new();
    let runner = rig
        .runner()
        .with_gate(deny_on_request())
        .with_watch(watch.clone() as Arc<dyn Watch>);
    let (ends, dropped_task) = rig.run(async {
        let calls = watched_calls(&runner, Some(watch.clone())).await;
        // Give a stray second `ended` a chance to show up.
        executor.sleep(Duration::from_millis(200)).await;
        calls
    });
    for end in &ends {
        assert_eq!(end.outcome, expected(&end.tool), "{end:?}");
        assert_eq!(watch.started_for(end.task), vec![end.call_id.clone()]);
        assert_eq!(
            watch.ended_for(end.task),
            vec![(end.tool.clone(), end.outcome)],
            "{end:?}"
        );
    }
    assert_eq!(
        watch.started_for(dropped_task),
        vec!["dropped-1".to_owned()]
    );
    assert_eq!(
        watch.ended_for(dropped_task),
        vec![("dropped".to_owned(), Outcome::Aborted)]
    );
    assert_eq!(watch.started_count(), ends.len() + 1);
    assert_eq!(watch.ended_count(), ends.len() + 1);
    assert!(watch.ended_per_task().values().all(|count| *count == 1));
    let counted: Vec<_> = ends
        .iter()
        .filter(|end| end.outcome.counts_against_tool())
        .map(|end| end.tool.as_str())
        .collect();
    assert_eq!(counted, ["crashes", "hangs"]);
    rig.finish();
}

/// A watch that panics in `started` and `ended` changes nothing about any
/// call's end: the same calls end exactly as they do with no watch.
pub fn a_panicking_watch_changes_nothing_about_the_results<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let plain = rig.runner().with_gate(deny_on_request());
    let watched = plain.clone().with_watch(Arc::new(PanickingWatch));
    let (without, with) = rig.run(async {
        let (without, _) = watched_calls(&plain, None).await;
        let (with, _) = watched_calls(&watched, None).await;
        // The dropped handles' tasks are killed in the background.
        assert!(wait_until(&executor, SOON, || executor.live() == 0).await);
        (without, with)
    });
    assert_eq!(without.len(), with.len());
    for (a, b) in without.iter().zip(&with) {
        assert_eq!(a.tool, b.tool);
        assert_eq!(a.call_id, b.call_id);
        assert_eq!(a.outcome, expected(&a.tool));
        assert_eq!(a.outcome, b.outcome, "{a:?} vs {b:?}");
        assert_eq!(a.result, b.result, "{a:?} vs {b:?}");
    }
    let hangs = with
        .iter()
        .find(|end| end.tool == "hangs")
        .expect("hangs ran");
    assert_eq!(
        hangs.result,
        ToolResult::error(timeout_text("hangs", HANGS_TIMEOUT))
    );
    rig.finish();
}

/// A call's own watch ([`Start::watched_by`], for a tool or a refusal)
/// hears of that call alone, exactly once at its start and once at its
/// end, beside the runner's watch, which hears every call. A refused call
/// is told to both, as `Refused`, and no gate is asked about it.
pub fn a_calls_own_watch_hears_that_call_once_beside_the_runners<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let gate_asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gate = {
        let gate_asked = gate_asked.clone();
        TestGate::new(move |_call: ToolCall| {
            gate_asked.fetch_add(1, Ordering::SeqCst);
            async { Verdict::Allow }
        })
    };
    let runners = RecordingWatch::new();
    let own = RecordingWatch::new();
    let runner = rig
        .runner()
        .with_gate(gate)
        .with_watch(runners.clone() as Arc<dyn Watch>);
    let tool = TestTool::answering("ok", "fine").into_arc();
    let (watched, refused, plain) = rig.run(async {
        let own_watch = own.clone() as Arc<dyn Watch>;
        let start = Start::tool(tool.clone()).watched_by(own_watch.clone());
        let watched = runner.start(call("own-1", "ok"), start);
        let watched = end_of(&executor, watched).await;
        let refusal = Start::refused(ToolResult::error("its arguments do not fit"));
        let refused = runner.start(call("own-2", "ok"), refusal.watched_by(own_watch));
        let refused = end_of(&executor, refused).await;
        let plain = end_of(&executor, runner.start(call("plain-1", "ok"), tool)).await;
        (watched, refused, plain)
    });
    assert_eq!(watched.outcome, Outcome::Succeeded);
    assert_eq!(refused.outcome, Outcome::Refused);
    assert_eq!(refused.result.text(), "its arguments do not fit");
    assert!(!refused.outcome.counts_against_tool());
    assert_eq!(plain.outcome, Outcome::Succeeded);
    assert_eq!(
        gate_asked.load(Ordering::SeqCst),
        2,
        "no gate for a refusal"
    );

    for end in [&watched, &refused] {
        assert_eq!(own.started_for(end.task), vec![end.call_id.clone()]);
        assert_eq!(
            own.ended_for(end.task),
            vec![("ok".to_owned(), end.outcome)]
        );
    }
    assert!(
        own.started_for(plain.task).is_empty(),
        "another call's watch"
    );
    assert_eq!((own.started_count(), own.ended_count()), (2, 2));
    for end in [&watched, &refused, &plain] {
        assert_eq!(runners.started_for(end.task), vec![end.call_id.clone()]);
        assert_eq!(
            runners.ended_for(end.task),
            vec![("ok".to_owned(), end.outcome)]
        );
    }
    assert_eq!((runners.started_count(), runners.ended_count()), (3, 3));
    rig.finish();
}
