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
//! object a line; `-- --runtime smol` runs the same tools and gate on smol
//! instead of tokio.

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
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{CallEnd, Executor, Gate, Runner, Tool, ToolCall, Verdict, async_trait};
use serde_json::json;

use crate::print::{DemoEvent, Printer};

/// The demo's gate: a person approves deploys (it takes them about a
/// second), nobody may delete directories, everything else is allowed.
/// Written once for any executor: it waits on the executor's own timer.
struct DemoGate<E> {
    executor: E,
}

#[async_trait]
impl<E: Executor> Gate for DemoGate<E> {
    async fn check(&self, _call: &ToolCall, tool: &dyn Tool) -> Verdict {
        match tool.name() {
            "deploy" => {
                self.executor.sleep(Duration::from_millis(1000)).await;
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

/// Runs the scripted turn on `executor` and prints its events as they come.
fn run_turn<E: Executor>(executor: E, printer: &mut Printer) {
    let (events, received) = mpsc::channel();
    let gate = DemoGate {
        executor: executor.clone(),
    };
    let runner = Runner::new(executor.clone()).with_gate(Arc::new(gate));

    let calls = script();
    let total = calls.len();
    // The loop side of each call runs as its own task beside the others, so
    // the printer sees events in the order they happen. The handles are kept:
    // on smol, dropping a task's handle would cancel it.
    let mut loop_tasks = Vec::with_capacity(total);
    for (call, tool) in calls {
        printer.print(&DemoEvent::Start {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let mut handle = runner.start(call, tool);
        let events = events.clone();
        loop_tasks.push(executor.spawn(async move {
            while let Some(event) = handle.next_event().await {
                let _ = events.send(DemoEvent::from(event));
            }
        }));
    }
    drop(runner);
    drop(events);

    let mut ends: Vec<CallEnd> = Vec::with_capacity(total);
    while ends.len() < total {
        let Ok(event) = received.recv() else {
            break;
        };
        printer.print(&event);
        if let DemoEvent::Other = event {
            continue;
        }
        if let DemoEvent::End(end) = event {
            ends.push(end);
        }
    }
    printer.summary(&ends);
}

fn main() {
    let mut json = false;
    let mut runtime = "tokio".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--runtime" => runtime = args.next().unwrap_or_default(),
            other => fail(&format!(
                "unknown argument `{other}` (use --json, --runtime tokio|smol)"
            )),
        }
    }
    // The panic of `flaky_lint` is reported in its end line, with where it
    // was raised; the quiet hook keeps it from being printed over the demo.
    rho_untrusted::install_quiet_panic_hook();
    let mut printer = Printer::new(json, &runtime, Instant::now());

    match runtime.as_str() {
        "tokio" => {
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|error| fail(&format!("cannot start tokio: {error}")));
            let executor = TokioExecutor::new(tokio.handle().clone())
                .unwrap_or_else(|error| fail(&error.to_string()));
            run_turn(executor, &mut printer);
        }
        "smol" => {
            let smol = Arc::new(smol::Executor::new());
            for _ in 0..2 {
                let smol = smol.clone();
                // Detached worker threads; they end with the process.
                std::thread::spawn(move || {
                    smol::block_on(smol.run(smol::future::pending::<()>()));
                });
            }
            run_turn(SmolExecutor::new(smol.clone()), &mut printer);
        }
        other => fail(&format!("unknown runtime `{other}` (use tokio or smol)")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("rho-demo: {message}");
    std::process::exit(2);
}
