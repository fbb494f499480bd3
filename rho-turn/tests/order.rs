//! Results in call order, events as things happen, one id per call, the
//! concurrency bound, and the events' JSON.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rho_tool_core::{
    AllowAll, Executor, Gate, Outcome, Tool, ToolCall, ToolContext, ToolOutput, Verdict,
    async_trait,
};
use rho_turn::TurnEvent;
use serde_json::json;
use support::{Recorder, Tools, call, echo, executor, runtime, tool};

#[test]
fn results_come_back_in_call_order_while_ends_come_in_completion_order() {
    let runtime = runtime();
    // The tool of rank r returns only once the subscriber has seen r ends:
    // the ends cannot arrive in any other order than by rank.
    let ends_seen = Arc::new(AtomicUsize::new(0));
    let seen = ends_seen.clone();
    let ranked = tool("ranked", move |args, cx: ToolContext| {
        let seen = seen.clone();
        async move {
            let rank = args["rank"].as_u64().expect("a rank") as usize;
            while seen.load(Ordering::SeqCst) < rank {
                cx.sleep(Duration::from_millis(1)).await;
            }
            ToolOutput::text(format!("rank {rank}"))
        }
    });
    let tools = Tools::new().add(ranked);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let counter = ends_seen.clone();
    let recorder = Recorder::default();
    let recorded = recorder.events.clone();
    turns
        .events()
        .subscribe(move |event: &TurnEvent| {
            recorded.lock().expect("not poisoned").push(event.clone());
            if let TurnEvent::ToolExecutionEnd(_) = event {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        })
        .expect("a subscriber");

    let ranks = [3, 0, 4, 1, 2];
    let calls: Vec<ToolCall> = ranks
        .iter()
        .enumerate()
        .map(|(i, rank)| call(format!("call-{i}"), "ranked", json!({ "rank": rank })))
        .collect();
    let entries = runtime.block_on(turns.turn(calls));

    let ids: Vec<&str> = entries.iter().map(|e| e.call_id.as_str()).collect();
    assert_eq!(ids, ["call-0", "call-1", "call-2", "call-3", "call-4"]);
    for (entry, rank) in entries.iter().zip(ranks) {
        assert_eq!(entry.outcome, Outcome::Succeeded);
        assert_eq!(entry.text(), format!("rank {rank}"));
    }
    support::wait_until("five ends", || recorder.ends().len() == 5);
    let end_order: Vec<String> = recorder
        .ends()
        .iter()
        .map(|e| e.call_id().to_owned())
        .collect();
    assert_eq!(
        end_order,
        ["call-1", "call-3", "call-4", "call-0", "call-2"]
    );
    for index in 0..5 {
        assert_eq!(
            recorder.names_of(index),
            [
                "tool_execution_start",
                "tool_execution_running",
                "tool_execution_end"
            ],
            "call {index}"
        );
    }
}

#[test]
fn a_repeated_call_id_gets_its_own_error_result() {
    let runtime = runtime();
    let tools = Tools::new().add(echo());
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);

    let entries = runtime.block_on(turns.turn([
        call("same", "echo", json!({ "text": "first" })),
        call("other", "echo", json!({ "text": "second" })),
        call("same", "echo", json!({ "text": "third" })),
    ]));

    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].text(), "first");
    assert_eq!(entries[1].text(), "second");
    assert_eq!(entries[2].call_id, "same");
    assert_eq!(entries[2].outcome, Outcome::Refused);
    let text = entries[2].text();
    assert!(
        text.contains("`same` is the id of an earlier call"),
        "{text}"
    );
    assert!(subscription.wait_idle(Duration::from_secs(10)));
    assert_eq!(
        recorder.names_of(2),
        ["tool_execution_start", "tool_execution_end"]
    );
}

#[test]
fn the_bound_keeps_calls_waiting_until_others_end() {
    let runtime = runtime();
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (n, m) = (now.clone(), most.clone());
    let busy = tool("busy", move |_args, cx: ToolContext| {
        let (now, most) = (n.clone(), m.clone());
        async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(running, Ordering::SeqCst);
            cx.sleep(Duration::from_millis(20)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            ToolOutput::text("done")
        }
    });
    let tools = Tools::new().add(busy);
    let turns = tools
        .turns(executor(&runtime), Arc::new(AllowAll))
        .with_max_concurrent(2);
    let calls = (0..8).map(|i| call(format!("c{i}"), "busy", json!({})));
    let entries = runtime.block_on(turns.turn(calls));
    assert!(entries.iter().all(|e| e.outcome == Outcome::Succeeded));
    assert!(
        most.load(Ordering::SeqCst) <= 2,
        "{}",
        most.load(Ordering::SeqCst)
    );
}

/// Asks a person about `deploy` (who answers after 30 ms).
struct SlowApproval<E>(E);

#[async_trait]
impl<E: Executor> Gate for SlowApproval<E> {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        if tool.name() == "deploy" {
            self.0.sleep(Duration::from_millis(30)).await;
        }
        Verdict::Allow
    }
}

#[test]
fn events_serialise_with_the_host_names() {
    let runtime = runtime();
    let deploy = tool("deploy", |_args, cx: ToolContext| async move {
        cx.update(&json!({ "step": 1 })).expect("plain");
        cx.sleep(Duration::from_millis(10)).await;
        ToolOutput::text("deployed").with_details(json!({ "version": 7 }))
    });
    let tools = Tools::new().add(deploy);
    let executor = executor(&runtime);
    let turns = tools.turns(executor.clone(), Arc::new(SlowApproval(executor)));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let turn = turns.turn([call("d1", "deploy", json!({ "env": "prod" }))]);
    let turn_id = turn.id();
    let entries = runtime.block_on(turn);
    assert_eq!(entries[0].text(), "deployed");
    assert!(subscription.wait_idle(Duration::from_secs(10)));

    let json: Vec<serde_json::Value> = recorder
        .all()
        .iter()
        .map(|event| serde_json::to_value(event).expect("JSON"))
        .collect();
    let types: Vec<&str> = json
        .iter()
        .map(|e| e["type"].as_str().expect("a type"))
        .collect();
    assert_eq!(
        types,
        [
            "tool_execution_start",
            "tool_execution_awaiting_approval",
            "tool_execution_running",
            "tool_execution_update",
            "tool_execution_end"
        ]
    );
    for event in &json {
        assert_eq!(event["call_id"], "d1");
        assert_eq!(event["tool"], "deploy");
        assert_eq!(event["index"], 0);
        assert_eq!(event["turn"], turn_id.as_u64());
    }
    assert_eq!(json[0]["arguments"], json!({ "env": "prod" }));
    assert!(
        json[2]["waited_ms"].as_f64().expect("ms") >= 25.0,
        "{}",
        json[2]
    );
    assert_eq!(json[3]["partial"], json!({ "step": 1 }));
    let end = &json[4];
    assert_eq!(end["outcome"], "succeeded");
    assert_eq!(end["result"]["details"], json!({ "version": 7 }));
    assert_eq!(end["result"]["content"][0]["text"], "deployed");
    assert!(end["ran_ms"].as_f64().expect("ms") >= 5.0);
    let entry = serde_json::to_value(&entries[0]).expect("JSON");
    assert_eq!(entry["outcome"], "succeeded");
    assert_eq!(entry["cut_bytes"], 0);

    // Every event after the start is the core's record placed in the turn:
    // each of the record's fields is in the event's JSON, at its top level,
    // with the record's value (so one the core adds reaches the turn's
    // event with no edit here), the task that ran the call among them.
    let task = &json[4]["task"];
    assert!(task.is_u64(), "{}", json[4]);
    for (event, event_json) in recorder.all().iter().zip(&json).skip(1) {
        let record = match event {
            TurnEvent::ToolExecutionAwaitingApproval(e) => serde_json::to_value(e.record()),
            TurnEvent::ToolExecutionQueued(e) => serde_json::to_value(e.record()),
            TurnEvent::ToolExecutionRunning(e) => serde_json::to_value(e.record()),
            TurnEvent::ToolExecutionUpdate(e) => serde_json::to_value(e.record()),
            TurnEvent::ToolExecutionEnd(e) => serde_json::to_value(e.record()),
            TurnEvent::ToolExecutionStart(_) => unreachable!("only the first event is a start"),
        }
        .expect("JSON");
        let fields = record.as_object().expect("a record is an object");
        assert!(fields.len() >= 3, "{record}");
        for (field, value) in fields {
            assert_eq!(&event_json[field], value, "{field} of {event_json}");
        }
        assert_eq!(&event_json["task"], task, "{event_json}");
    }
}

#[test]
fn an_empty_turn_ends_at_once() {
    let runtime = runtime();
    let tools = Tools::new().add(echo());
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let turn = turns.turn(Vec::new());
    assert!(turn.is_empty());
    assert!(runtime.block_on(turn).is_empty());
}

/// A turn made within a running call names that call in every event of
/// its calls (and in their JSON), and its entries end up in the parent's
/// session entry; a plain turn's events name no parent.
#[test]
fn calls_made_within_a_call_name_it_and_land_in_its_entry() {
    let runtime = runtime();
    let weak = Arc::new(std::sync::OnceLock::<
        rho_turn::WeakTurnRunner<rho_exec_tokio::TokioExecutor>,
    >::new());
    let inner = weak.clone();
    let parent = tool("parent", move |_, cx: ToolContext| {
        let turns = inner.get().and_then(rho_turn::WeakTurnRunner::upgrade);
        async move {
            let Some(turns) = turns else {
                return ToolOutput::error("no runner");
            };
            let entries = turns
                .turn_within(&cx, [call("nested-1", "echo", json!({ "text": "hi" }))])
                .await;
            ToolOutput::text(format!("nested said {}", entries[0].text()))
        }
    });
    let tools = Tools::new().add(echo()).add(parent);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    weak.set(turns.downgrade()).expect("set once");
    let recorder = Recorder::default();
    let _subscription = recorder.subscribe(&turns);
    let entries = runtime.block_on(turns.turn([call("top-1", "parent", json!({}))]));
    assert_eq!(entries[0].outcome, Outcome::Succeeded, "{:?}", entries[0]);
    assert_eq!(entries[0].nested.len(), 1);
    assert_eq!(entries[0].nested[0].call_id, "nested-1");
    let json = serde_json::to_value(&entries[0]).expect("JSON");
    assert_eq!(json["nested"][0]["call_id"], "nested-1");
    support::wait_until("both ends", || recorder.count("tool_execution_end") == 2);
    for event in recorder.all() {
        let json = serde_json::to_value(&event).expect("JSON");
        match event.call_id() {
            "nested-1" => {
                assert_eq!(event.parent_call_id(), Some("top-1"), "{event:?}");
                assert_eq!(json["parent_call_id"], "top-1");
            }
            _ => {
                assert_eq!(event.parent_call_id(), None, "{event:?}");
                assert!(json.get("parent_call_id").is_none(), "{json}");
            }
        }
    }
}

/// A nested call that waits for a person at its gate does not run its
/// parent's clock: the parent, whose timeout is shorter than the wait,
/// still succeeds.
#[test]
fn a_nested_calls_gate_wait_is_not_charged_to_its_parent() {
    struct SlowForEcho;
    #[async_trait]
    impl Gate for SlowForEcho {
        async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
            if call.name == "echo" {
                tokio::time::sleep(Duration::from_millis(600)).await;
            }
            Verdict::Allow
        }
    }
    let runtime = runtime();
    let weak = Arc::new(std::sync::OnceLock::<
        rho_turn::WeakTurnRunner<rho_exec_tokio::TokioExecutor>,
    >::new());
    let inner = weak.clone();
    let parent = tool("parent", move |_, cx: ToolContext| {
        let turns = inner.get().and_then(rho_turn::WeakTurnRunner::upgrade);
        async move {
            let Some(turns) = turns else {
                return ToolOutput::error("no runner");
            };
            let entries = turns
                .turn_within(&cx, [call("nested-1", "echo", json!({ "text": "hi" }))])
                .await;
            ToolOutput::text(entries[0].text())
        }
    })
    .with_timeout(Duration::from_millis(300));
    let tools = Tools::new().add(echo()).add(parent);
    let turns = tools.turns(executor(&runtime), Arc::new(SlowForEcho));
    weak.set(turns.downgrade()).expect("set once");
    let entries = runtime.block_on(turns.turn([call("top-1", "parent", json!({}))]));
    assert_eq!(entries[0].outcome, Outcome::Succeeded, "{:?}", entries[0]);
    assert!(entries[0].ran.expect("ran") >= Duration::from_millis(600));
}

/// A weak handle does not keep the runner alive, and gives it back while
/// it lives.
#[test]
fn a_weak_turn_runner_gives_the_runner_back_only_while_it_lives() {
    let runtime = runtime();
    let turns = Tools::new()
        .add(echo())
        .turns(executor(&runtime), Arc::new(AllowAll));
    let weak = turns.downgrade();
    assert!(weak.upgrade().is_some());
    drop(turns);
    assert!(weak.upgrade().is_none());
}
