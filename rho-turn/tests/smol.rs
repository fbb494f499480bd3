//! The same turn on smol: nothing in a turn needs tokio.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rho_exec_smol::SmolExecutor;
use rho_tool_core::{Executor, Outcome, ToolContext, ToolOutput};
use rho_turn::TurnEvent;
use serde_json::json;
use support::{HoldGate, Tools, call, echo, tool};

#[test]
fn a_turn_runs_on_smol() {
    let ex = Arc::new(smol::Executor::new());
    let executor = SmolExecutor::new(ex.clone());
    let napper = tool("nap", |_args, cx: ToolContext| async move {
        cx.update(&json!({ "napping": true })).expect("plain");
        cx.sleep(Duration::from_millis(20)).await;
        ToolOutput::text("rested")
    });
    let tools = Tools::new()
        .add(echo())
        .add(napper)
        .add(tool("deploy", |_args, _cx: ToolContext| async move {
            ToolOutput::text("deployed")
        }));
    let gate = Arc::new(HoldGate {
        executor: executor.clone(),
        held: &["deploy"],
    });
    let turns = tools.turns(executor.clone(), gate);
    let mut stream = turns.events().stream();
    let turn = turns.turn([
        call("1", "nap", json!({})),
        call("2", "echo", json!({ "text": "hi" })),
        call("3", "deploy", json!({})),
    ]);
    let abort = turn.abort_handle();

    let (entries, names) = smol::block_on(ex.run(async {
        let turn = ex.spawn(turn);
        // Abort once the deploy's gate waits and the others ended.
        let mut names = Vec::new();
        let mut ends = 0;
        while let Some(event) = stream.recv().await {
            names.push(event.name());
            ends += usize::from(matches!(*event, TurnEvent::ToolExecutionEnd(_)));
            let waiting = names.contains(&"tool_execution_awaiting_approval");
            if ends == 2 && waiting {
                abort.abort();
            }
            if ends == 3 {
                break;
            }
        }
        // The executor's timer also works from here.
        executor.sleep(Duration::from_millis(1)).await;
        (turn.await, names)
    }));
    assert_eq!(entries[0].text(), "rested");
    assert_eq!(entries[1].text(), "hi");
    assert_eq!(entries[2].outcome, Outcome::Aborted);
    assert!(names.contains(&"tool_execution_update"));
}
