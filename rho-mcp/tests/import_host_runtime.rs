//! A source run on the host's tokio runtime (`on_tokio_runtime`) instead
//! of a thread of its own: its calls, a death mid-call and a restart work
//! as on its own thread (progress included), and closing it leaves no task of it behind on
//! the host's runtime (nothing else would end them there). A runtime
//! without a timer fails the import, saying what it lacks.

mod import_support;

use std::time::{Duration, Instant};

use import_support::{
    call, check_progress_read_with_the_answer, eventually, everything_source, fault_source, kill_9,
    node, processes_with,
};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Backoff, ImportError, McpSource};
use rho_registry::ToolRegistry;
use rho_tool_core::Runner;
use rho_tool_core::{Outcome, ToolCall};
use serde_json::json;

fn host() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// On the host's multi-threaded runtime, rmcp's task for a progress
/// notification may run on the other worker than the call's: progress
/// read together with the answer still reaches the call before its end.
#[test]
fn progress_read_with_the_answer_reaches_the_call_first_on_two_workers() {
    let runtime = host();
    let registry = ToolRegistry::new();
    let _source = runtime
        .block_on(
            fault_source("faulty")
                .on_tokio_runtime(runtime.handle().clone())
                .connect(&registry),
        )
        .expect("imports");
    let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    runtime.block_on(async {
        check_progress_read_with_the_answer(&registry, &runner, 50).await;
    });
}

#[test]
fn calls_deaths_and_restarts_work_on_the_hosts_runtime() {
    let runtime = host();
    let registry = ToolRegistry::new();
    let source = runtime
        .block_on(
            fault_source("faulty")
                .on_tokio_runtime(runtime.handle().clone())
                .connect(&registry),
        )
        .expect("imports");
    let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    let pid = source.server_pid().expect("running");
    runtime.block_on(async {
        let echo = call(&registry, &runner, "echo", json!({ "text": "on the host" })).await;
        assert_eq!(echo.result.text(), "on the host");
        let handle = {
            let call = ToolCall::new("sleep", "sleep", json!({ "ms": 30_000 }));
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let killed = Instant::now();
        kill_9(pid);
        let end = handle.await;
        assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
        assert!(
            killed.elapsed() < Duration::from_millis(100),
            "{:?}",
            killed.elapsed()
        );
        let again = call(&registry, &runner, "echo", json!({ "text": "restarted" })).await;
        assert_eq!(again.result.text(), "restarted");
    });
    assert_ne!(source.server_pid(), Some(pid));
}

#[test]
fn closing_the_source_leaves_no_task_on_the_hosts_runtime() {
    let runtime = host();
    let metrics = runtime.handle().metrics();
    let before = metrics.num_alive_tasks();
    let registry = ToolRegistry::new();
    let source = runtime
        .block_on(
            everything_source("everything")
                .on_tokio_runtime(runtime.handle().clone())
                .connect(&registry),
        )
        .expect("imports");
    let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    runtime.block_on(async {
        let echo = call(&registry, &runner, "echo", json!({ "message": "hi" })).await;
        assert_eq!(echo.result.text(), "Echo: hi");
    });
    assert!(
        metrics.num_alive_tasks() > before,
        "the source's tasks run on the host's runtime"
    );
    let pid = source.server_pid().expect("running");
    drop(source);
    assert!(
        eventually(Duration::from_secs(3), || metrics.num_alive_tasks()
            == before),
        "{} tasks left of the source's, {before} before it",
        metrics.num_alive_tasks()
    );
    assert!(
        eventually(Duration::from_secs(3), || !import_support::alive(pid)),
        "the server is gone"
    );
}

#[test]
fn a_runtime_without_a_timer_fails_the_import_saying_so() {
    let no_timer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_io()
        .build()
        .expect("a runtime");
    let registry = ToolRegistry::new();
    let refused = host()
        .block_on(
            McpSource::stdio("faulty", "true")
                .on_tokio_runtime(no_timer.handle().clone())
                .connect(&registry),
        )
        .expect_err("no timer");
    assert!(matches!(refused, ImportError::Server(_)), "{refused}");
    assert!(refused.to_string().contains("`enable_all`"), "{refused}");
    assert!(registry.tools().is_empty());
}

/// A call waiting out the backoff before a restart when the source
/// closes: it ends saying the source was closed, and no server is
/// started for a source that is gone (on the host's runtime, nothing
/// else would stop that start).
#[test]
fn closing_a_source_while_it_waits_to_restart_starts_no_server() {
    let runtime = host();
    let marker = format!("host-close-{}", std::process::id());
    let fault =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/node/fault-server.mjs");
    let registry = ToolRegistry::new();
    let source = runtime
        .block_on(
            McpSource::stdio("faulty", node())
                .arg(&fault)
                .arg(&marker)
                .backoff(Backoff {
                    initial: Duration::from_secs(1),
                    max: Duration::from_secs(1),
                })
                .on_tokio_runtime(runtime.handle().clone())
                .connect(&registry),
        )
        .expect("imports");
    let runner = Runner::new(TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    let pid = source.server_pid().expect("running");
    kill_9(pid);
    assert!(eventually(Duration::from_secs(3), || source
        .server_pid()
        .is_none()));
    let end = runtime.block_on(async {
        let handle = {
            let call = ToolCall::new("echo", "echo", json!({ "text": "x" }));
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        // The call now waits out the backoff before the restart.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let closed = Instant::now();
        drop(source);
        let end = handle.await;
        (end, closed.elapsed())
    });
    let (end, after) = end;
    assert!(
        end.result.text().contains("was closed"),
        "{}",
        end.result.text()
    );
    assert!(
        after < Duration::from_millis(500),
        "ended {after:?} after the close"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        processes_with(&marker).is_empty(),
        "a server was started after the close: {:?}",
        processes_with(&marker)
    );
}
