//! Servers that misbehave, played by `tests/peers/node/fault-server.mjs`:
//! killed mid-call, dying with words on stderr, hung, writing garbage, a
//! huge line or answers to requests nobody sent, closing their stdout, and
//! dying again and again. Each ends its calls with a clear error at once,
//! in bounded memory, and leaves other servers alone.

#[macro_use]
mod import_support;

use std::time::{Duration, Instant};

use import_support::{
    Host, Smol, Tokio, alive, call, call_with_updates, check_progress_read_with_the_answer,
    eventually, fault_source, kill_9,
};
use rho_mcp::import::{Backoff, ImportError};
use rho_registry::{QuarantineRule, ToolRegistry};
use rho_tool_core::{Outcome, ToolCall};
use serde_json::json;

/// A server killed with SIGKILL mid-call: every call in flight ends as
/// crashed within 100 ms, and the next call restarts the server.
fn killed_mid_call_crashes_every_call_in_flight_at_once(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    let pid = source.server_pid().expect("running");
    host.block_on(async {
        let calls: Vec<_> = (0..3)
            .map(|n| {
                let call = ToolCall::new(format!("sleep-{n}"), "sleep", json!({ "ms": 30_000 }));
                let start = registry.start_for(&call.name);
                runner.start(call, start)
            })
            .collect();
        // Let the requests reach the server.
        std::thread::sleep(Duration::from_millis(300));
        let killed = Instant::now();
        kill_9(pid);
        for handle in calls {
            let end = handle.await;
            let after = killed.elapsed();
            assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
            assert!(
                after < Duration::from_millis(100),
                "ended {after:?} after the kill"
            );
            let text = end.result.text();
            assert!(
                text.contains("MCP server `faulty` was killed by signal SIGKILL (9)"),
                "{text}"
            );
        }
        let again = call(&registry, &runner, "echo", json!({ "text": "back" })).await;
        assert_eq!(again.result.text(), "back");
    });
    assert_ne!(source.server_pid(), Some(pid), "a new server");
    let health = source.accounting().tool_health("sleep").expect("counted");
    assert_eq!(health.crashed, 3, "each crash counted against its tool");
}

fn a_server_that_exits_mid_call_is_quoted_with_its_stderr(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let end = call(
            &registry,
            &runner,
            "die",
            json!({ "code": 3, "ms": 100, "stderr": "fatal: out of cheese\n" }),
        )
        .await;
        assert_eq!(end.outcome, Outcome::Crashed);
        let text = end.result.text();
        assert!(text.contains("exited with code 3"), "{text}");
        assert!(text.contains("fatal: out of cheese"), "{text}");
    });
}

fn a_hung_call_ends_at_rhos_timeout_and_is_cancelled(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            fault_source("faulty")
                .timeout(Duration::from_millis(300))
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let started = Instant::now();
        let hung = call(&registry, &runner, "hang", json!({})).await;
        assert_eq!(hung.outcome, Outcome::TimedOut, "{}", hung.result.text());
        assert!(started.elapsed() < Duration::from_secs(2));
        // An abort, too.
        let handle = {
            let call = ToolCall::new("abort", "hang", json!({}));
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        let abort = handle.abort_handle();
        std::thread::sleep(Duration::from_millis(100));
        abort.abort();
        assert_eq!(handle.await.outcome, Outcome::Aborted);
        // The server was told of both, and goes on serving.
        std::thread::sleep(Duration::from_millis(100));
        let told = call(&registry, &runner, "cancelled", json!({})).await;
        let ids: Vec<serde_json::Value> =
            serde_json::from_str(&told.result.text()).expect("a list of ids");
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert_ne!(ids[0], ids[1], "one for each call: {ids:?}");
    });
    assert!(source.stderr_tail().contains("fault-server: cancelled"));
}

/// A tool the server runs only as a task (MCP 2025-11-25's
/// `execution.taskSupport: "required"`) runs as one, whether its listing
/// says so (`task_only`) or only its refusal of a plain call with -32601
/// does (`task_only_quiet`, as over HTTP, where rho does not read the
/// listing's lines), its progress reaching the call; a call of one given
/// up at rho's timeout ends then and cancels its task (`tasks/cancel`),
/// and the server serves on.
fn a_task_only_tool_runs_as_a_task_and_a_given_up_one_is_cancelled(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            fault_source("faulty")
                .timeout(Duration::from_millis(500))
                .connect(&registry),
        )
        .expect("imports");
    let pid = source.server_pid();
    let runner = host.runner();
    host.block_on(async {
        for tool in ["task_only", "task_only_quiet"] {
            let (done, updates) =
                call_with_updates(&registry, &runner, tool, json!({ "ms": 40 })).await;
            assert_eq!(
                done.outcome,
                Outcome::Succeeded,
                "{tool}: {}",
                done.result.text()
            );
            assert_eq!(done.result.text(), "done after 40 ms", "{tool}");
            // What the task reported on the way reached the call.
            assert_eq!(
                updates,
                vec![json!({ "progress": 1, "total": 2 })],
                "{tool}"
            );
        }
        let started = Instant::now();
        let long = call(&registry, &runner, "task_only", json!({ "ms": 30000 })).await;
        assert_eq!(long.outcome, Outcome::TimedOut, "{}", long.result.text());
        assert!(started.elapsed() < Duration::from_secs(3));
        // The cancel is sent as the call is given up: give it a moment.
        let mut told: Vec<String> = Vec::new();
        for _ in 0..50 {
            let end = call(&registry, &runner, "cancelled_tasks", json!({})).await;
            told = serde_json::from_str(&end.result.text()).expect("a list of task ids");
            if !told.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            told,
            vec!["task-3".to_owned()],
            "the given-up call's task, alone"
        );
    });
    assert_eq!(source.server_pid(), pid, "the same server, not a restart");
}

fn garbage_on_stdout_is_a_clear_error(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let end = call(&registry, &runner, "garbage", json!({})).await;
        assert_eq!(end.outcome, Outcome::Crashed);
        let text = end.result.text();
        assert!(text.contains("not an MCP message"), "{text}");
        assert!(text.contains("this is not json {"), "{text}");
        // Restarted for the next call.
        let echo = call(&registry, &runner, "echo", json!({ "text": "ok" })).await;
        assert_eq!(echo.result.text(), "ok");
    });
}

fn a_huge_line_is_refused_in_bounded_memory(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(
            fault_source("faulty")
                .max_message(1 << 20)
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let end = call(&registry, &runner, "huge", json!({ "mb": 100 })).await;
        assert_eq!(end.outcome, Outcome::Crashed);
        let text = end.result.text();
        assert!(
            text.contains("longer than the limit of 1048576 bytes"),
            "{text}"
        );
    });
    // Not 100 MB kept anywhere: the process's resident memory stays low.
    let status = std::fs::read_to_string("/proc/self/status").expect("linux");
    let rss_kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches(" kB").trim().parse().ok())
        .expect("VmRSS");
    assert!(rss_kb < 80 << 10, "resident {rss_kb} kB");
}

fn an_answer_to_an_unknown_request_is_a_clear_error(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let end = call(&registry, &runner, "unknown_id", json!({})).await;
        assert_eq!(end.outcome, Outcome::Crashed);
        assert!(
            end.result
                .text()
                .contains("answered request id 987654, which it was never sent"),
            "{}",
            end.result.text()
        );
    });
}

fn a_server_that_closes_its_stdout_is_dead(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    let pid = source.server_pid().expect("running");
    host.block_on(async {
        let end = call(&registry, &runner, "close_stdout", json!({})).await;
        assert_eq!(end.outcome, Outcome::Crashed);
        assert!(
            end.result.text().contains("closed its stdout"),
            "{}",
            end.result.text()
        );
    });
    assert!(eventually(Duration::from_secs(2), || !alive(pid)), "killed");
}

fn a_server_that_keeps_dying_is_quarantined_whole(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            fault_source("faulty")
                .quarantine(QuarantineRule::after(3))
                .backoff(Backoff {
                    initial: Duration::from_millis(10),
                    max: Duration::from_millis(40),
                })
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        for _ in 0..3 {
            let end = call(&registry, &runner, "die", json!({ "code": 1 })).await;
            assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
        }
        // The deaths are counted by the watcher, a moment after the calls.
        assert!(eventually(Duration::from_secs(2), || source
            .quarantine()
            .is_some()));
        assert!(source.tools().is_empty(), "{:?}", source.tools());
        let refused = call(&registry, &runner, "echo", json!({ "text": "x" })).await;
        assert!(refused.result.is_error);
        assert!(
            refused.result.text().contains("kept dying"),
            "{}",
            refused.result.text()
        );
        assert!(source.reenable());
        let echo = call(&registry, &runner, "echo", json!({ "text": "x" })).await;
        assert_eq!(echo.result.text(), "x");
    });
}

fn list_changed_refreshes_the_tools(host: impl Host) {
    let registry = ToolRegistry::new();
    let source = host
        .block_on(fault_source("faulty").prefix("f_").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    assert!(!source.tools().contains(&"f_added".to_owned()));
    host.block_on(async {
        call(&registry, &runner, "f_add_tool", json!({})).await;
    });
    assert!(
        eventually(Duration::from_secs(5), || source
            .tools()
            .contains(&"f_added".to_owned())),
        "{:?}",
        source.tools()
    );
    host.block_on(async {
        let added = call(&registry, &runner, "f_added", json!({})).await;
        assert_eq!(added.result.text(), "I was added");
    });
}

fn answers_map_images_errors_and_details(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let picture = call(&registry, &runner, "picture", json!({})).await;
        assert_eq!(
            picture.outcome,
            Outcome::Succeeded,
            "{}",
            picture.result.text()
        );
        assert_eq!(picture.result.text(), "a picture");
        assert_eq!(
            picture.result.details.as_ref().expect("details").to_json(),
            json!({ "width": 1 })
        );
        let fails = call(&registry, &runner, "fails", json!({})).await;
        assert_eq!(fails.outcome, Outcome::Failed);
        assert_eq!(fails.result.text(), "it went wrong");
    });
}

/// Progress written in the same write as the answer (the client reads
/// them together) still reaches the call, every step, before it ends:
/// rmcp routes each notification in a task of its own, so the call must
/// wait for those still on their way.
fn progress_read_with_the_answer_reaches_the_call_first(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("faulty").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        check_progress_read_with_the_answer(&registry, &runner, 20).await;
    });
}

on_both_hosts!(
    progress_read_with_the_answer_reaches_the_call_first,
    killed_mid_call_crashes_every_call_in_flight_at_once,
    a_server_that_exits_mid_call_is_quoted_with_its_stderr,
    a_hung_call_ends_at_rhos_timeout_and_is_cancelled,
    a_task_only_tool_runs_as_a_task_and_a_given_up_one_is_cancelled,
    garbage_on_stdout_is_a_clear_error,
    a_server_that_closes_its_stdout_is_dead,
    a_server_that_keeps_dying_is_quarantined_whole,
    answers_map_images_errors_and_details,
);

// Once is enough: these do not depend on the host's runtime.
#[test]
fn a_huge_line_is_refused_in_bounded_memory_tokio() {
    a_huge_line_is_refused_in_bounded_memory(Tokio::new());
}

#[test]
fn an_answer_to_an_unknown_request_is_a_clear_error_tokio() {
    an_answer_to_an_unknown_request_is_a_clear_error(Tokio::new());
}

#[test]
fn list_changed_refreshes_the_tools_tokio() {
    list_changed_refreshes_the_tools(Tokio::new());
}

#[test]
fn a_server_that_does_not_start_is_a_clear_error() {
    let host = Tokio::new();
    let registry = ToolRegistry::new();
    let exits = host.block_on(
        fault_source("faulty")
            .env("RHO_FAULT_START", "exit")
            .connect(&registry),
    );
    let text = exits.expect_err("it exits at once").to_string();
    assert!(text.contains("exited with code 7"), "{text}");
    assert!(text.contains("refusing to start"), "{text}");
    assert!(registry.sources().is_empty(), "nothing left behind");

    let garbage = host.block_on(
        fault_source("faulty")
            .env("RHO_FAULT_START", "garbage")
            .connect(&registry),
    );
    let text = garbage.expect_err("garbage first").to_string();
    assert!(text.contains("Welcome to the fault server!"), "{text}");

    let started = Instant::now();
    let hangs = host.block_on(
        fault_source("faulty")
            .env("RHO_FAULT_START", "hang")
            .startup_timeout(Duration::from_millis(500))
            .connect(&registry),
    );
    let text = hangs.expect_err("no answer").to_string();
    assert!(
        text.contains("did not answer `initialize` within 500 ms"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    let missing = host.block_on(
        rho_mcp::import::McpSource::stdio("missing", "/no/such/program").connect(&registry),
    );
    match missing {
        Err(ImportError::Server(text)) => assert!(text.contains("could not be started"), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_server_dies_with_its_source() {
    let host = Tokio::new();
    let registry = ToolRegistry::new();
    let source = host
        .block_on(fault_source("dropped").connect(&registry))
        .expect("imports");
    let pid = source.server_pid().expect("running");
    drop(source);
    assert!(
        eventually(Duration::from_secs(2), || !alive(pid)),
        "killed on drop"
    );
    assert!(registry.sources().is_empty());

    let source = host
        .block_on(fault_source("removed").connect(&registry))
        .expect("imports");
    let pid = source.server_pid().expect("running");
    assert!(registry.remove_source("removed"));
    assert!(
        eventually(Duration::from_secs(2), || !alive(pid)),
        "killed when the host removed the source"
    );
    let runner = host.runner();
    let end = host.block_on(call(&registry, &runner, "echo", json!({ "text": "x" })));
    assert!(end.result.is_error);
    // A new source of the same name outlives the old one's drop.
    let again = host
        .block_on(fault_source("removed").connect(&registry))
        .expect("the name is free again");
    drop(source);
    assert_eq!(registry.sources(), ["removed"]);
    assert!(again.server_pid().is_some_and(alive));
}

#[test]
fn one_servers_death_leaves_another_alone() {
    let host = Tokio::new();
    let registry = ToolRegistry::new();
    let one = host
        .block_on(fault_source("one").prefix("one_").connect(&registry))
        .expect("imports");
    let _two = host
        .block_on(fault_source("two").prefix("two_").connect(&registry))
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let slow = {
            let call = ToolCall::new("slow", "two_sleep", json!({ "ms": 500 }));
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        let garbage = call(&registry, &runner, "one_garbage", json!({})).await;
        assert_eq!(garbage.outcome, Outcome::Crashed);
        let back = call(&registry, &runner, "one_echo", json!({ "text": "back" })).await;
        assert_eq!(back.result.text(), "back");
        kill_9(one.server_pid().expect("one runs again"));
        assert_eq!(slow.await.result.text(), "slept 500 ms");
    });
}
