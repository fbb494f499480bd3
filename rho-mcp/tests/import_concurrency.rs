//! A server that cannot take parallel calls, imported with a bound on its
//! calls in flight, set by the host (`McpSourceBuilder::max_concurrent_calls`)
//! or declared by the server (`rho_mcp::CONCURRENCY_CAPABILITY`, as
//! `rho-mcp proxy --max-concurrent-calls` declares it): a turn's calls to
//! it run one at a time without the host arranging it, and no call's
//! clock runs while it waits its turn. The server is the fault server's
//! `serial` tool, which fails any call that overlaps another. Each runs in
//! a tokio host and in a smol host.

#[macro_use]
mod import_support;

use std::time::{Duration, Instant};

use import_support::{Host, Smol, Tokio, fault_server, fault_source, node};
use rho_mcp::HttpOptions;
use rho_mcp::import::McpSource;
use rho_mcp::proxy::ProxyOptions;
use rho_registry::ToolRegistry;
use rho_tool_core::{CallEnd, Outcome, ToolCall};
use serde_json::json;

/// How many calls a turn makes.
const CALLS: usize = 8;
/// How long the server takes for each.
const EACH: Duration = Duration::from_millis(150);
/// Each call's timeout: far less than the eight take one after another.
const TIMEOUT: Duration = Duration::from_millis(600);

/// Starts the turn's calls at once and waits for them all: their ends, in
/// the order they were started, and how long the turn took.
fn turn(host: &impl Host, registry: &ToolRegistry) -> (Vec<CallEnd>, Duration) {
    let runner = host.runner();
    host.block_on(async {
        let started = Instant::now();
        let calls: Vec<_> = (0..CALLS)
            .map(|n| {
                let call = ToolCall::new(
                    format!("serial-{n}"),
                    "serial",
                    json!({ "ms": EACH.as_millis() as u64, "n": n }),
                );
                let start = registry.start_for(&call.name);
                runner.start(call, start)
            })
            .collect();
        let mut ends = Vec::with_capacity(CALLS);
        for call in calls {
            ends.push(call.await);
        }
        (ends, started.elapsed())
    })
}

/// The place in the server's order of call `n`, from its answer
/// ("call N served K").
fn served_as(end: &CallEnd, n: usize) -> usize {
    let text = end.result.text();
    text.strip_prefix(&format!("call {n} served "))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("call {n} answered: {text}"))
}

/// With a bound of one, all eight calls succeed, served one after another,
/// though together they take twice a call's
/// timeout: the wait for a turn is not charged to the call.
fn eight_calls_to_a_serial_server_run_one_at_a_time_when_bounded(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(
            fault_source("serial")
                .timeout(TIMEOUT)
                .max_concurrent_calls(1)
                .connect(&registry),
        )
        .expect("imports");
    let (ends, took) = turn(&host, &registry);
    check_served_one_at_a_time(&ends, took);
}

/// Checks that each of a turn's `ends` succeeded, the server serving
/// them one after another.
fn check_served_one_at_a_time(ends: &[CallEnd], took: Duration) {
    let mut served = Vec::with_capacity(CALLS);
    for (n, end) in ends.iter().enumerate() {
        assert_eq!(
            end.outcome,
            Outcome::Succeeded,
            "call {n}: {}",
            end.result.text()
        );
        served.push(served_as(end, n));
    }
    // Each served once, none beside another (the calls' tasks may reach
    // their turns in any order: they start on the host's threads).
    served.sort_unstable();
    assert_eq!(served, (1..=CALLS).collect::<Vec<_>>());
    assert!(
        took >= EACH * CALLS as u32,
        "the eight calls overlapped: the turn took {took:?}"
    );
}

/// Property: a source whose host set no bound takes the one its server
/// declares. Behind `rho-mcp proxy` with a bound of one (which it
/// declares), the eight calls all succeed: they wait their turns on the
/// importing host, their clocks held, rather than in the proxy's queue
/// while their clocks run (four of them would time out there).
fn the_bound_a_server_declares_holds_when_the_host_sets_none(host: impl Host) {
    let proxying = tokio::runtime::Runtime::new().expect("a runtime for the proxy");
    let proxy = proxying.block_on(async {
        ProxyOptions::new(node())
            .args([fault_server()])
            .max_concurrent_calls(1)
            .start()
            .await
            .expect("the proxy starts the fault server")
            .serve_http(HttpOptions::new())
            .await
            .expect("the proxy serves")
    });
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            McpSource::http("serial", proxy.url())
                .timeout(TIMEOUT)
                .connect(&registry),
        )
        .expect("imports through the proxy");
    let (ends, took) = turn(&host, &registry);
    check_served_one_at_a_time(&ends, took);
    drop(source);
    proxying
        .block_on(proxy.shutdown())
        .expect("the proxy stops");
}

/// Without a bound the same turn overlaps on the server, which refuses
/// the calls that came while another ran: what the bound prevents.
fn without_a_bound_the_serial_server_sees_overlapping_calls(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(fault_source("serial").timeout(TIMEOUT).connect(&registry))
        .expect("imports");
    let (ends, _) = turn(&host, &registry);
    let overlapped = ends
        .iter()
        .filter(|end| end.result.is_error && end.result.text().contains("overlapped"))
        .count();
    assert!(
        overlapped > 0,
        "no call overlapped: {:?}",
        ends.iter().map(|end| end.result.text()).collect::<Vec<_>>()
    );
}

/// A call given up while it waits for its turn (its host aborts it)
/// leaves the queue: the calls behind it still run, and the server never
/// sees it.
fn a_call_given_up_in_the_queue_leaves_it(host: impl Host) {
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(
            fault_source("serial")
                .timeout(Duration::from_secs(10))
                .max_concurrent_calls(1)
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let start = |n: usize| {
            let call = ToolCall::new(
                format!("serial-{n}"),
                "serial",
                json!({ "ms": 200, "n": n }),
            );
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        // The first takes the turn; the two others then wait behind it.
        let first = start(0);
        std::thread::sleep(Duration::from_millis(50));
        let second = start(1);
        let third = start(2);
        std::thread::sleep(Duration::from_millis(50));
        // Abort the second in the queue: its handle, awaited first, kills
        // its task.
        second.abort();
        let second = second.await;
        let first = first.await;
        let third = third.await;
        assert_eq!(second.outcome, Outcome::Aborted, "{}", second.result.text());
        // The server served the two others, one after the other: the
        // aborted one never reached it.
        let mut served = vec![served_as(&first, 0), served_as(&third, 2)];
        served.sort_unstable();
        assert_eq!(served, [1, 2]);
    });
}

on_both_hosts!(
    eight_calls_to_a_serial_server_run_one_at_a_time_when_bounded,
    the_bound_a_server_declares_holds_when_the_host_sets_none,
    without_a_bound_the_serial_server_sees_overlapping_calls,
    a_call_given_up_in_the_queue_leaves_it,
);
