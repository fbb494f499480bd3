//! rho's demo: one scripted turn of tool calls on tokio, printed live.
//!
//! The turn has one call of each kind a host meets: a call whose gate waits
//! about a second for a person's approval (its tool's timeout is shorter
//! than that, and it still succeeds: the clock starts at approval), quick
//! calls that finish meanwhile, a tool that hangs past its timeout, a tool
//! that panics with a custom payload, an image answer, an answer with
//! details, an agent-written tool whose answer is a struct of its own, and a
//! call the gate denies.
//!
//! `cargo run -p rho-demo` prints readable lines; `-- --json` prints one JSON
//! object a line.

#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

mod print;
mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{CallEnd, Gate, Runner, Tool, ToolCall, Verdict, async_trait};
use serde_json::json;
use tokio::sync::mpsc;

use crate::print::{DemoEvent, Printer};

/// The demo's gate: a person approves deploys (it takes them about a
/// second), nobody may delete directories, everything else is allowed.
struct DemoGate {
    events: mpsc::UnboundedSender<DemoEvent>,
}

#[async_trait]
impl Gate for DemoGate {
    async fn check(&self, call: &ToolCall, tool: &dyn Tool) -> Verdict {
        match tool.name() {
            "deploy" => {
                let _ = self.events.send(DemoEvent::AwaitingApproval {
                    call_id: call.id.clone(),
                    tool: tool.name().to_owned(),
                });
                tokio::time::sleep(Duration::from_millis(1000)).await;
                Verdict::Allow
            }
            "rm_rf" => Verdict::deny("deleting directory trees needs a person at the keyboard"),
            _ => Verdict::Allow,
        }
    }
}

fn script() -> Vec<(ToolCall, Arc<dyn Tool>)> {
    let call = |id: &str, name: &str, args| ToolCall::new(id, name, args);
    vec![
        (
            call("call-1", "deploy", json!({ "env": "staging" })),
            Arc::new(tools::Deploy),
        ),
        (
            call("call-2", "read_file", json!({ "path": "src/main.rs" })),
            Arc::new(tools::ReadFile),
        ),
        (
            call("call-3", "cargo_build", json!({})),
            Arc::new(tools::SlowBuild),
        ),
        (
            call("call-4", "flaky_lint", json!({ "path": "src/lib.rs" })),
            Arc::new(tools::Flaky),
        ),
        (
            call("call-5", "screenshot", json!({})),
            Arc::new(tools::Screenshot),
        ),
        (
            call("call-6", "grep", json!({ "pattern": "TODO" })),
            Arc::new(tools::Grep),
        ),
        (
            call("call-7", "count_todos", json!({})),
            Arc::new(tools::AgentScript),
        ),
        (
            call("call-8", "rm_rf", json!({ "path": "/" })),
            Arc::new(tools::RemoveAll),
        ),
    ]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let json = std::env::args().skip(1).any(|arg| arg == "--json");
    // The panic of `flaky_lint` is reported in its end line, with where it
    // was raised; the quiet hook keeps it from being printed over the demo.
    rho_untrusted::install_quiet_panic_hook();

    let executor = match TokioExecutor::current() {
        Ok(executor) => executor,
        Err(error) => {
            eprintln!("rho-demo: {error}");
            std::process::exit(1);
        }
    };
    let (events, mut received) = mpsc::unbounded_channel();
    let runner = Runner::new(executor).with_gate(Arc::new(DemoGate {
        events: events.clone(),
    }));
    let mut printer = Printer::new(json, Instant::now());

    let calls = script();
    let total = calls.len();
    for (call, tool) in calls {
        printer.print(&DemoEvent::Start {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let mut handle = runner.start(call, tool);
        let events = events.clone();
        // The loop side of each call runs beside the others, so the printer
        // sees events in the order they happen.
        tokio::spawn(async move {
            while let Some(event) = handle.next_event().await {
                let _ = events.send(DemoEvent::from(event));
            }
        });
    }
    drop(runner);
    drop(events);

    let mut ends: Vec<CallEnd> = Vec::with_capacity(total);
    while ends.len() < total {
        let Some(event) = received.recv().await else {
            break;
        };
        printer.print(&event);
        if let DemoEvent::End(end) = event {
            ends.push(end);
        }
    }
    printer.summary(&ends);
}
