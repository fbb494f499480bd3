//! Details nested a million levels deep, answered by a tool on a real
//! runtime: the call ends with one error result, and the process lives.
//!
//! `serde_json::Value` and `Plain` drop themselves recursively, one stack
//! frame per level. rho refuses such details under its depth limit, and
//! must then dispose of them without recursion: a recursive drop on a
//! worker thread's stack (2 MiB by default) would overflow it, and a stack
//! overflow ends the process. So the calls here run on worker threads with
//! exactly that stack, on tokio and on smol.

use std::sync::Arc;
use std::thread;

use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::untrusted::Plain;
use rho_tool_core::{
    CallEnd, Outcome, Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait,
};
use serde_json::Value;

/// How deep the details nest.
const LEVELS: usize = 1_000_000;

/// The stack of the threads that run the calls: what a spawned thread gets
/// by default, tokio's workers included.
const WORKER_STACK: usize = 2 << 20;

/// A JSON value `LEVELS` arrays deep, built without recursion.
fn deep_json() -> Value {
    let mut value = Value::Null;
    for _ in 0..LEVELS {
        value = Value::Array(vec![value]);
    }
    value
}

/// Plain data `LEVELS` lists deep, built without recursion.
fn deep_plain() -> Plain {
    let mut value = Plain::Null;
    for _ in 0..LEVELS {
        value = Plain::List(vec![value]);
    }
    value
}

/// A tool whose answer's details nest `LEVELS` deep; the value is built in
/// the call's task, on a worker thread.
struct Deep {
    name: &'static str,
    details: fn() -> ToolOutput,
}

#[async_trait]
impl Tool for Deep {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "Answers with details nested a million levels deep."
    }

    async fn run(&self, _arguments: Value, _cx: ToolContext) -> ToolOutput {
        (self.details)()
    }
}

/// The two tools: details that are a `serde_json::Value`, and details that
/// are `Plain` data handed over as a foreign value.
fn tools() -> [Arc<Deep>; 2] {
    [
        Arc::new(Deep {
            name: "deep_json",
            details: || ToolOutput::text("here").with_details(deep_json()),
        }),
        Arc::new(Deep {
            name: "deep_plain",
            details: || ToolOutput::text("here").with_details(deep_plain()),
        }),
    ]
}

fn call(name: &str) -> ToolCall {
    ToolCall::new("deep-1", name, serde_json::json!({}))
}

/// One error result that names the tool and the depth limit.
fn assert_refused(end: &CallEnd) {
    let text = end.result.text();
    assert_eq!(end.outcome, Outcome::Failed, "{}: {text}", end.tool);
    assert!(end.result.is_error, "{}: {text}", end.tool);
    assert!(end.result.details.is_none(), "{}: {text}", end.tool);
    assert!(
        text.contains(&format!("tool `{}` gave an unusable answer", end.tool))
            && text.contains("nesting depth exceeds the limit"),
        "{}: {text}",
        end.tool
    );
}

#[test]
fn details_nested_a_million_levels_end_in_one_error_on_tokio() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(WORKER_STACK)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    for tool in tools() {
        // The loop is this thread; the call's task runs on a worker.
        let end = runtime.block_on(runner.start(call(tool.name), tool));
        assert_refused(&end);
    }
}

#[test]
fn details_nested_a_million_levels_end_in_one_error_on_smol() {
    let executor = Arc::new(smol::Executor::new());
    let (stop, stopped) = smol::channel::unbounded::<()>();
    let worker = {
        let executor = executor.clone();
        thread::Builder::new()
            .name("smol-worker".to_owned())
            .stack_size(WORKER_STACK)
            .spawn(move || smol::block_on(executor.run(stopped.recv())))
            .expect("a worker thread")
    };
    let runner = Runner::new(SmolExecutor::new(executor.clone()));
    for tool in tools() {
        // The loop is this thread; the call's task runs on the worker.
        let end = smol::block_on(runner.start(call(tool.name), tool));
        assert_refused(&end);
    }
    drop(stop);
    let _ = worker.join();
}
