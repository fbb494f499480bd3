//! Partial results: plain data from untrusted tools, nothing after the end.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rho_tool_core::untrusted::Plain;
use rho_tool_core::{AllowAll, Outcome, ToolContext, ToolOutput};
use rho_turn::TurnEvent;
use serde_json::json;
use support::{Recorder, Tools, call, executor, runtime, tool};

#[test]
fn updates_after_the_end_are_dropped() {
    let runtime = runtime();
    let late_sent = Arc::new(AtomicBool::new(false));
    let sent = late_sent.clone();
    // Reports twice, returns, and leaves a thread behind that reports with
    // a clone of its context once the call has ended.
    let leaky = tool("leaky", move |_args, cx: ToolContext| {
        let sent = sent.clone();
        async move {
            cx.update(&json!({ "progress": 1 })).expect("plain");
            cx.update(&json!({ "progress": 2 })).expect("plain");
            let late = cx.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let _ = late.update(&json!({ "progress": "after the end" }));
                sent.store(true, Ordering::SeqCst);
            });
            ToolOutput::text("done")
        }
    });
    let tools = Tools::new().add(leaky);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let entries = runtime.block_on(turns.turn([call("l", "leaky", json!({}))]));
    assert_eq!(entries[0].text(), "done");
    support::wait_until("the late update", || late_sent.load(Ordering::SeqCst));
    // Give a wrongly delivered update every chance to arrive.
    std::thread::sleep(Duration::from_millis(50));
    assert!(subscription.wait_idle(Duration::from_secs(10)));

    assert_eq!(
        recorder.names_of(0),
        [
            "tool_execution_start",
            "tool_execution_running",
            "tool_execution_update",
            "tool_execution_update",
            "tool_execution_end"
        ]
    );
}

/// An agent-written tool's progress report: a type of its own, with a
/// number JSON cannot hold and one that is not a number.
#[derive(serde::Serialize)]
struct Progress {
    done: u128,
    rate: f64,
    stage: Stage,
}

#[derive(serde::Serialize)]
enum Stage {
    Copying { file: String },
}

#[test]
fn an_untrusted_tools_updates_reach_subscribers_as_plain_data() {
    let runtime = runtime();
    let agent_tool = tool("copy_all", |_args, cx: ToolContext| async move {
        cx.update(&Progress {
            done: u128::MAX,
            rate: f64::NAN,
            stage: Stage::Copying {
                file: "a.txt".into(),
            },
        })
        .expect("plain");
        ToolOutput::text("copied")
    });
    let tools = Tools::new().add_untrusted(agent_tool);
    let turns = tools.turns(executor(&runtime), Arc::new(AllowAll));
    let recorder = Recorder::default();
    let subscription = recorder.subscribe(&turns);
    let entries = runtime.block_on(turns.turn([call("u", "copy_all", json!({}))]));
    assert_eq!(entries[0].outcome, Outcome::Succeeded);
    assert!(subscription.wait_idle(Duration::from_secs(10)));

    let events = recorder.all();
    let TurnEvent::ToolExecutionStart(start) = &events[0] else {
        panic!("{:?}", events[0]);
    };
    assert!(start.untrusted);
    let update = events
        .iter()
        .find_map(|event| match event {
            TurnEvent::ToolExecutionUpdate(update) => Some(update),
            _ => None,
        })
        .expect("an update");
    // Library-owned plain data: the u128 and the NaN became text.
    assert_eq!(
        update.record().partial.get("done"),
        Some(&Plain::Text(u128::MAX.to_string()))
    );
    assert_eq!(
        update.record().partial.get("rate"),
        Some(&Plain::Text("NaN".into()))
    );
    assert_eq!(
        update.record().partial.to_json()["stage"],
        json!({ "Copying": { "file": "a.txt" } })
    );
    assert_eq!(update.record().dropped_before, 0);
}
