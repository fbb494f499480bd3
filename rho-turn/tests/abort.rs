//! The host aborts a turn, or one call of it.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::{Outcome, ToolContext, ToolOutput};
use rho_turn::TurnEvent;
use serde_json::json;
use support::{HoldGate, Recorder, Tools, call, echo, executor, hang, runtime, tool};

/// A tool whose gate never answers (a person who is away).
fn deploy() -> impl rho_tool_core::Tool {
    tool("deploy", |_args, _cx: ToolContext| async move {
        ToolOutput::text("deployed")
    })
}

#[test]
fn aborting_a_turn_ends_every_call_aborted_at_once_and_counts_no_failure() {
    let runtime = runtime();
    let tools = Tools::new().add(deploy()).add(echo()).add_untrusted(hang());
    let executor = executor(&runtime);
    let gate = Arc::new(HoldGate {
        executor: executor.clone(),
        held: &["deploy"],
    });
    // Four slots: two gates waiting, two tools running, two calls queued.
    let turns = tools.turns(executor, gate).with_max_concurrent(4);
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let turn = turns.turn([
        call("d1", "deploy", json!({})),
        call("h1", "hang", json!({})),
        call("d2", "deploy", json!({})),
        call("h2", "hang", json!({})),
        call("e1", "echo", json!({ "text": "queued" })),
        call("h3", "hang", json!({})),
    ]);
    let abort = turn.abort_handle();
    let task = runtime.spawn(turn);

    support::wait_until("two gates waiting and two tools running", || {
        recorder.count("tool_execution_awaiting_approval") == 2
            && recorder.count("tool_execution_running") == 2
    });
    // The person presses Esc, from another thread.
    let pressed = Instant::now();
    let aborter = std::thread::spawn(move || abort.abort());
    let entries = runtime.block_on(task).expect("the turn's task");
    let took = pressed.elapsed();
    aborter.join().expect("the aborting thread");
    eprintln!("abort to the turn's end: {took:?}");
    assert!(took < Duration::from_millis(500), "{took:?}");

    assert_eq!(entries.len(), 6);
    for entry in &entries {
        assert_eq!(entry.outcome, Outcome::Aborted, "{}", entry.call_id);
        assert!(entry.is_error());
        assert!(entry.text().contains("aborted"), "{}", entry.text());
        assert!(entry.ran.is_none() || entry.tool == "hang");
    }
    // Every call, started or not, has its start and end.
    assert!(subscription.wait_idle(Duration::from_secs(10)));
    for index in 0..6 {
        let names = recorder.names_of(index);
        assert_eq!(names.first(), Some(&"tool_execution_start"), "{index}");
        assert_eq!(names.last(), Some(&"tool_execution_end"), "{index}");
    }
    // No source counted a failure.
    for health in tools
        .builtin
        .health()
        .into_iter()
        .chain(tools.agent.health())
    {
        assert_eq!(
            (
                health.failed,
                health.crashed,
                health.timed_out,
                health.strikes
            ),
            (0, 0, 0, 0),
            "{health:?}"
        );
        assert!(!health.is_quarantined());
    }
    let hang = tools.agent.tool_health("hang").expect("hang ran");
    assert_eq!((hang.calls, hang.aborted), (2, 2));
    let deploy = tools.builtin.tool_health("deploy").expect("deploy started");
    assert_eq!((deploy.calls, deploy.aborted), (2, 2));
    assert_eq!(tools.registry.in_flight(), 0);
}

#[test]
fn aborting_one_call_leaves_the_others_running() {
    let runtime = runtime();
    let slow = tool("slow", |_args, cx: ToolContext| async move {
        cx.sleep(Duration::from_millis(50)).await;
        ToolOutput::text("finished")
    });
    let tools = Tools::new().add(slow).add(hang());
    let turns = tools.turns(executor(&runtime), Arc::new(rho_tool_core::AllowAll));
    let recorder = Recorder::default();
    recorder.subscribe(&turns);
    let turn = turns.turn([
        call("a", "slow", json!({})),
        call("b", "hang", json!({})),
        call("c", "slow", json!({})),
    ]);
    let abort = turn.abort_handle();
    let task = runtime.spawn(turn);
    support::wait_until("the hanging tool running", || {
        recorder.all().iter().any(
            |event| matches!(event, TurnEvent::ToolExecutionRunning(r) if r.record().call_id == "b"),
        )
    });
    assert!(abort.abort_call("b"));
    assert!(!abort.abort_call("nope"));
    let entries = runtime.block_on(task).expect("the turn's task");
    let outcomes: Vec<Outcome> = entries.iter().map(|e| e.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Succeeded, Outcome::Aborted, Outcome::Succeeded]
    );
    assert!(!abort.is_aborted());
    // Once ended, a call cannot be aborted.
    assert!(!abort.abort_index(0));
    let hang = tools.builtin.tool_health("hang").expect("hang ran");
    assert_eq!((hang.aborted, hang.crashed, hang.timed_out), (1, 0, 0));
}

#[test]
fn an_abort_before_the_first_poll_runs_nothing() {
    let runtime = runtime();
    let tools = Tools::new().add(echo());
    let turns = tools.turns(executor(&runtime), Arc::new(rho_tool_core::AllowAll));
    let turn = turns.turn([call("a", "echo", json!({})), call("b", "echo", json!({}))]);
    turn.abort_handle().abort();
    let entries = runtime.block_on(turn);
    assert!(
        entries
            .iter()
            .all(|e| e.outcome == Outcome::Aborted && e.ran.is_none())
    );
    assert!(
        tools.builtin.tool_health("echo").is_none(),
        "no call started"
    );
}

#[test]
fn dropping_a_turn_aborts_its_calls_and_reports_their_ends() {
    let runtime = runtime();
    let tools = Tools::new().add(hang());
    let turns = tools.turns(executor(&runtime), Arc::new(rho_tool_core::AllowAll));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let mut turn = Box::pin(turns.turn([call("a", "hang", json!({}))]));
    runtime.block_on(async {
        // Poll the turn until its call runs, then drop it.
        std::future::poll_fn(|cx| {
            let _ = turn.as_mut().poll(cx);
            if recorder.count("tool_execution_running") == 1 {
                std::task::Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
    });
    drop(turn);
    assert!(subscription.wait_idle(Duration::from_secs(10)));
    let ends = recorder.ends();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].outcome(), Outcome::Aborted);
    let hang = tools.builtin.tool_health("hang").expect("hang ran");
    assert_eq!((hang.calls, hang.aborted), (1, 1));
}
