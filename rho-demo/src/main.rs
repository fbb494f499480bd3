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
use rho_registry::{Accounting, QuarantineRule, Source, ToolRegistry};
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

/// The tools, from two sources: the host's own, and the tools the agent
/// wrote itself, whose source quarantines a tool after two crashes or
/// timeouts.
fn registry() -> (ToolRegistry, Arc<Accounting>) {
    let registry = ToolRegistry::new();
    let builtin: [Arc<dyn Tool>; 6] = [
        Arc::new(tools::Deploy),
        Arc::new(tools::ReadFile),
        Arc::new(tools::SlowBuild),
        Arc::new(tools::Screenshot),
        Arc::new(tools::Grep),
        Arc::new(tools::RemoveAll),
    ];
    let agent: [Arc<dyn Tool>; 2] = [Arc::new(tools::Flaky), Arc::new(tools::AgentScript)];
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    let added = registry
        .add_source(Source::trusted("builtin"))
        .and_then(|source| source.add_all(builtin))
        .and_then(|()| {
            registry.add_source(Source::untrusted("agent").with_policy(accounting.clone()))
        })
        .and_then(|source| source.add_all(agent));
    if let Err(error) = added {
        fail(&format!("cannot register the demo's tools: {error}"));
    }
    (registry, accounting)
}

/// The model's first message: one call of each kind.
fn first_turn() -> Vec<ToolCall> {
    vec![
        ToolCall::new("call-1", "deploy", json!({ "env": "staging" })),
        ToolCall::new("call-2", "read_file", json!({ "path": "src/main.rs" })),
        ToolCall::new("call-3", "cargo_build", json!({})),
        ToolCall::new("call-4", "flaky_lint", json!({ "path": "src/lib.rs" })),
        ToolCall::new("call-5", "screenshot", json!({})),
        ToolCall::new("call-6", "grep", json!({ "pattern": "TODO" })),
        ToolCall::new("call-7", "count_todos", json!({})),
        ToolCall::new("call-8", "rm_rf", json!({ "path": "/" })),
    ]
}

/// The model's second message: it retries the crashed lint (its second
/// crash quarantines the agent's tool) and misspells a tool name.
fn second_turn() -> Vec<ToolCall> {
    vec![
        ToolCall::new("call-9", "flaky_lint", json!({ "path": "src/main.rs" })),
        ToolCall::new("call-10", "grpe", json!({ "pattern": "FIXME" })),
    ]
}

/// The model's third message: the lint once more, now refused.
fn third_turn() -> Vec<ToolCall> {
    vec![ToolCall::new(
        "call-11",
        "flaky_lint",
        json!({ "path": "src/print.rs" }),
    )]
}

/// Runs one model message's calls side by side on `executor` and prints
/// their events as they come.
fn run_turn<E: Executor>(
    executor: &E,
    registry: &ToolRegistry,
    runner: &Runner<E>,
    calls: Vec<ToolCall>,
    printer: &mut Printer,
) -> Vec<CallEnd> {
    let (events, received) = mpsc::channel();
    let total = calls.len();
    // The loop side of each call runs as its own task beside the others, so
    // the printer sees events in the order they happen. The handles are kept:
    // on smol, dropping a task's handle would cancel it.
    let mut loop_tasks = Vec::with_capacity(total);
    for call in calls {
        printer.print(&DemoEvent::Start {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let mut handle = registry.start(runner, call);
        let events = events.clone();
        loop_tasks.push(executor.spawn(async move {
            while let Some(event) = handle.next_event().await {
                let _ = events.send(DemoEvent::from(event));
            }
        }));
    }
    drop(events);

    let mut ends: Vec<CallEnd> = Vec::with_capacity(total);
    while ends.len() < total {
        let Ok(event) = received.recv() else {
            break;
        };
        if let DemoEvent::Other = event {
            continue;
        }
        printer.print(&event);
        if let DemoEvent::End(end) = event {
            ends.push(end);
        }
    }
    ends
}

/// The whole scripted session on `executor`: two turns, then the health of
/// the agent's tools.
fn run_session<E: Executor>(executor: E, printer: &mut Printer) {
    let (registry, accounting) = registry();
    let gate = DemoGate {
        executor: executor.clone(),
    };
    let runner = Runner::new(executor.clone())
        .with_gate(Arc::new(gate))
        .with_watch(registry.watch());

    printer.heading("turn 1: the model calls eight tools at once");
    let ends = run_turn(&executor, &registry, &runner, first_turn(), printer);
    printer.summary(&ends);
    printer.heading("turn 2: the model retries the lint and misspells a tool");
    let ends = run_turn(&executor, &registry, &runner, second_turn(), printer);
    printer.summary(&ends);
    printer.heading("turn 3: the model tries the quarantined lint once more");
    let ends = run_turn(&executor, &registry, &runner, third_turn(), printer);
    printer.summary(&ends);
    printer.health(&accounting.health_table().to_string());
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
            run_session(executor, &mut printer);
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
            run_session(SmolExecutor::new(smol.clone()), &mut printer);
        }
        other => fail(&format!("unknown runtime `{other}` (use tokio or smol)")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("rho-demo: {message}");
    std::process::exit(2);
}
