//! The steps of one call (DESIGN.md, "One call, step by step") on tokio:
//! the gate before the clock, the loop never blocked by a gate, the events a
//! call reports, aborts while the gate waits, and the watch.

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_tool_core::untrusted::{Exit, exit_text, timeout_text};
use rho_tool_core::{
    CallEnd, CallEvent, Outcome, Runner, Tool, ToolCall, ToolOutput, ToolResult, Verdict, Watch,
};
use support::{
    PanickingWatch, RecordingWatch, SetOnDrop, TestGate, TestTool, call, executor, flag, poll_once,
    wait_for,
};
use tokio::sync::Notify;

/// Generous bound for things that happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(10);

/// The gate waits three times the tool's timeout, then allows: the call
/// succeeds, because the clock starts at the running notice, not when the
/// call started. The tool waits for the loop to have seen `Running`, so the
/// events are deterministic: one `AwaitingGate` (the gate did not answer at
/// once), exactly one `Running`, then `Ended`, then none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_waiting_longer_than_the_timeout_then_allowing_succeeds_with_one_running_event() {
    const GATE_WAIT: Duration = Duration::from_millis(1500);
    const TIMEOUT: Duration = Duration::from_millis(500);

    let release = Arc::new(Notify::new());
    let tool = {
        let release = release.clone();
        TestTool::new("deploy", move |_, _| {
            let release = release.clone();
            async move {
                release.notified().await;
                ToolOutput::text("deployed")
            }
        })
        .with_timeout(TIMEOUT)
    };
    let gate = TestGate::new(|_| async {
        tokio::time::sleep(GATE_WAIT).await;
        Verdict::Allow
    });
    let runner = Runner::new(executor()).with_gate(gate);
    let mut handle = runner.start(call("c1", "deploy"), tool.into_arc());
    let task = handle.task();
    assert_eq!(handle.timeout(), TIMEOUT);
    assert!(!handle.is_running());

    assert_eq!(
        handle.next_event().await,
        Some(CallEvent::AwaitingGate("c1".to_owned())),
        "the waiting gate is reported first"
    );
    let running = match handle.next_event().await {
        Some(CallEvent::Running(running)) => running,
        other => panic!("expected Running after AwaitingGate, got {other:?}"),
    };
    assert_eq!(running.call_id, "c1");
    assert_eq!(running.task, task);
    assert!(
        running.waited >= GATE_WAIT,
        "waited {:?} < gate wait",
        running.waited
    );
    assert!(handle.is_running());

    release.notify_one();
    let end = match handle.next_event().await {
        Some(CallEvent::Ended(end)) => end,
        other => panic!("expected Ended after Running, got {other:?}"),
    };
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result, ToolResult::success("deployed"));
    assert_eq!(end.call_id, "c1");
    assert_eq!(end.tool, "deploy");
    assert_eq!(end.task, task);
    assert!(end.waited >= GATE_WAIT, "waited {:?}", end.waited);
    assert_eq!(end.waited, running.waited);
    let ran = end.ran.expect("the tool ran, so `ran` is known");
    assert!(
        ran < GATE_WAIT,
        "ran {ran:?} is not small next to the gate's wait"
    );
    assert_eq!(handle.next_event().await, None);
    assert_eq!(handle.next_event().await, None);
}

/// While one call's gate waits (until released by the test), 1,000 other
/// calls start and finish; the waiting call's tool has not run and its
/// clock has not started. Released, it succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_start_and_finish_while_one_gate_waits() {
    let entered = flag();
    let release = Arc::new(Notify::new());
    let gate = {
        let entered = entered.clone();
        let release = release.clone();
        TestGate::new(move |call: ToolCall| {
            let entered = entered.clone();
            let release = release.clone();
            async move {
                if call.id == "held" {
                    entered.store(true, Ordering::SeqCst);
                    release.notified().await;
                }
                Verdict::Allow
            }
        })
    };
    let runner = Runner::new(executor()).with_gate(gate);

    let held_tool = TestTool::answering("approve_me", "approved");
    let held_runs = held_tool.runs();
    let mut held = runner.start(call("held", "approve_me"), held_tool.into_arc());
    assert!(wait_for(&entered, SOON).await, "the held gate never ran");

    let echo = TestTool::new("echo", |arguments, _| async move {
        ToolOutput::text(arguments["n"].to_string())
    });
    let echo_runs = echo.runs();
    let echo = echo.into_arc();
    let handles: Vec<_> = (0..1000)
        .map(|n| {
            runner.start(
                ToolCall::new(format!("q{n}"), "echo", serde_json::json!({ "n": n })),
                echo.clone(),
            )
        })
        .collect();
    assert!(poll_once(&mut held).await.is_none());

    let mut tasks = HashSet::from([held.task()]);
    for (n, handle) in handles.into_iter().enumerate() {
        let end = handle.await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.call_id, format!("q{n}"));
        assert_eq!(end.result, ToolResult::success(n.to_string()));
        assert!(tasks.insert(end.task), "task ids are unique");
    }
    assert_eq!(echo_runs.load(Ordering::SeqCst), 1000);

    // The held call is still at its gate: no tool run, no clock.
    assert!(poll_once(&mut held).await.is_none());
    assert!(!held.is_running());
    assert_eq!(held_runs.load(Ordering::SeqCst), 0);

    release.notify_one();
    let end = held.await;
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result, ToolResult::success("approved"));
    assert_eq!(held_runs.load(Ordering::SeqCst), 1);
}

/// A gate that never decides, aborted by the host through an
/// `AbortHandle` from another task: the call ends as aborted, the tool never
/// ran, no clock ran (`ran == None`), and the gate's future was dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_abort_while_the_gate_waits_ends_aborted_without_a_clock() {
    const BEFORE_ABORT: Duration = Duration::from_millis(200);
    let entered = flag();
    let gate_dropped = flag();
    let gate = {
        let entered = entered.clone();
        let gate_dropped = gate_dropped.clone();
        TestGate::new(move |_| {
            let entered = entered.clone();
            let guard = SetOnDrop(gate_dropped.clone());
            async move {
                let _guard = guard;
                entered.store(true, Ordering::SeqCst);
                std::future::pending::<Verdict>().await
            }
        })
    };
    let tool = TestTool::answering("rm_rf", "deleted");
    let runs = tool.runs();
    let runner = Runner::new(executor()).with_gate(gate);
    let handle = runner.start(call("c1", "rm_rf"), tool.into_arc());
    let abort = handle.abort_handle();
    tokio::spawn(async move {
        tokio::time::sleep(BEFORE_ABORT).await;
        abort.abort();
        abort.abort(); // idempotent
    });

    let end = handle.await;
    assert!(entered.load(Ordering::SeqCst));
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("rm_rf", Exit::Aborted))
    );
    assert_eq!(end.ran, None);
    assert!(end.waited >= BEFORE_ABORT, "waited {:?}", end.waited);
    assert!(
        wait_for(&gate_dropped, SOON).await,
        "the gate's future was not dropped"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// The same with `CallHandle::abort` before the loop awaits the handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_handle_abort_while_the_gate_waits_ends_aborted_without_a_clock() {
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
    let tool = TestTool::answering("rm_rf", "deleted");
    let runs = tool.runs();
    let runner = Runner::new(executor()).with_gate(gate);
    let handle = runner.start(call("c1", "rm_rf"), tool.into_arc());
    assert!(wait_for(&entered, SOON).await);
    handle.abort();
    let end = handle.await;
    assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("rm_rf", Exit::Aborted))
    );
    assert_eq!(end.ran, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A call whose task ran and finished before the loop first polled its
/// handle (a loop busy elsewhere, or simply a quick tool) still ran its
/// tool after the gate allowed it. The loop must report it as such: one
/// `Running` before `Ended` (the contract's event order), and `ran` known
/// (`CallEnd::ran` is documented as `None` only "if it never started").
///
/// Fails today: see the report (handle.rs, `poll_event` polls the task
/// before it looks at the running notice, and `finish` derives `ran` only
/// from the loop's own observation of the notice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_finished_before_the_loop_looked_still_reports_running_and_ran() {
    let tool = TestTool::answering("quick", "done");
    let runs = tool.runs();
    let runner = Runner::new(executor());
    let mut handle = runner.start(call("c1", "quick"), tool.into_arc());

    // The loop is busy elsewhere while the task runs to its end.
    let start = std::time::Instant::now();
    while runs.load(Ordering::SeqCst) == 0 && start.elapsed() < SOON {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool never ran");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let first = handle.next_event().await;
    let second = handle.next_event().await;
    let end = match (&first, &second) {
        (Some(CallEvent::Running(_)), Some(CallEvent::Ended(end))) => end.clone(),
        (Some(CallEvent::Ended(end)), None) => {
            assert_eq!(end.outcome, Outcome::Succeeded);
            panic!(
                "the call ran its tool but the loop reported no Running event \
                 (ran = {:?}, waited = {:?})",
                end.ran, end.waited
            );
        }
        other => panic!("unexpected events {other:?}"),
    };
    assert_eq!(end.outcome, Outcome::Succeeded);
    assert!(
        end.ran.is_some(),
        "the tool ran, but CallEnd::ran is None: {end:?}"
    );
}

/// The outcome every tool of [`watched_calls`] is expected to end with.
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

/// Runs one call of each kind of end on `runner` and returns the ends (the
/// dropped one is not awaited: it has no end, only the watch hears of it).
async fn watched_calls(
    runner: &Runner<rho_exec_tokio::TokioExecutor>,
    told_first: Option<Arc<RecordingWatch>>,
) -> (Vec<CallEnd>, rho_tool_core::TaskId) {
    let told_before_run = flag();
    let checks_watch = told_first.is_some();
    let ok: Arc<dyn Tool> = {
        let told_before_run = told_before_run.clone();
        TestTool::new("ok", move |_, cx| {
            // Step 2: the sources are told the task before the tool runs.
            if let Some(watch) = &told_first {
                let told = watch.started_for(cx.task()) == vec!["ok-1".to_owned()];
                told_before_run.store(told, Ordering::SeqCst);
            }
            async { ToolOutput::text("fine") }
        })
        .into_arc()
    };
    let fails = TestTool::new("fails", |_, _| async { ToolOutput::error("no such file") });
    let denied = TestTool::answering("denied", "never");
    let crashes = TestTool::new("crashes", |_, _| async { panic!("boom") });
    let hangs = TestTool::new("hangs", |_, _| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        ToolOutput::text("never")
    })
    .with_timeout(Duration::from_millis(100));
    let long = |name: &str| {
        TestTool::new(name, |_, _| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            ToolOutput::text("never")
        })
    };

    let mut ends = vec![runner.start(call("ok-1", "ok"), ok).await];
    ends.push(
        runner
            .start(call("fails-1", "fails"), fails.into_arc())
            .await,
    );
    ends.push(
        runner
            .start(
                ToolCall::new("denied-1", "denied", serde_json::json!({ "deny": true })),
                denied.into_arc(),
            )
            .await,
    );
    ends.push(
        runner
            .start(call("crashes-1", "crashes"), crashes.into_arc())
            .await,
    );
    ends.push(
        runner
            .start(call("hangs-1", "hangs"), hangs.into_arc())
            .await,
    );
    let aborted = runner.start(call("aborted-1", "aborted"), long("aborted").into_arc());
    aborted.abort();
    ends.push(aborted.await);
    let dropped = runner.start(call("dropped-1", "dropped"), long("dropped").into_arc());
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

fn deny_on_request() -> Arc<TestGate> {
    TestGate::new(|call: ToolCall| async move {
        if call.arguments["deny"] == serde_json::json!(true) {
            Verdict::deny("denied by the test")
        } else {
            Verdict::Allow
        }
    })
}

/// The watch is told each call exactly once when it starts (before its
/// tool runs) and exactly once when it ends, with the right outcome, for
/// every kind of end, including a handle dropped unfinished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_sees_each_call_start_and_end_exactly_once_with_its_outcome() {
    let watch = RecordingWatch::new();
    let runner = Runner::new(executor())
        .with_gate(deny_on_request())
        .with_watch(watch.clone() as Arc<dyn Watch>);
    let (ends, dropped_task) = watched_calls(&runner, Some(watch.clone())).await;

    // Give a stray second `ended` a chance to show up.
    tokio::time::sleep(Duration::from_millis(200)).await;
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
}

/// A watch that panics in `started` and `ended` changes nothing about any
/// call's end: the same calls end exactly as they do with no watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_watch_changes_nothing_about_the_results() {
    let plain = Runner::new(executor()).with_gate(deny_on_request());
    let watched = plain.clone().with_watch(Arc::new(PanickingWatch));
    let (without, _) = watched_calls(&plain, None).await;
    let (with, _) = watched_calls(&watched, None).await;
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
        ToolResult::error(timeout_text("hangs", Duration::from_millis(100)))
    );
}
