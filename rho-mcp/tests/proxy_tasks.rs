//! Long calls through the proxy as MCP tasks (`ProxyOptions::tasks`,
//! `rho-mcp proxy --tasks-after`): the proxy's client on 2026-07-28 that
//! takes tasks gets a task for a call that runs long, polls it to the
//! server's own result, and its `tasks/cancel` stops the server's tool,
//! not only the proxy's call. The server behind the proxy is rho's own
//! with tasks on (`support::tasks`), so the proxy follows the server's
//! tasks while its client follows the proxy's; raw HTTP on both sides of
//! the test, so every byte the client sees is checked.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_mcp::proxy::{ProxyHttp, ProxyOptions};
use rho_mcp::{HttpServer, McpTasks};
use rho_tool_core::annotation_gate::Match;
use serde_json::json;
use support::proxy_over_http;
use support::stateless::{Seen, StatelessClient};
use support::tasks::{check_a_long_call_becomes_a_task, serve, task_id, task_when, tasking};

/// rho's task server on loopback, and a proxy over HTTP in front of it
/// that makes a task of any call once it has run 100 ms.
async fn proxied(seen: &Arc<Seen>) -> (HttpServer, ProxyHttp) {
    let server = serve(seen).await;
    let tasks = McpTasks::new()
        .optional(Match::Always)
        .after(Duration::from_millis(100));
    let proxy = proxy_over_http(ProxyOptions::http(server.url()).tasks(tasks)).await;
    (server, proxy)
}

/// A call that ends soon is answered as usual; one that outlasts the
/// proxy's `after` becomes the proxy's task, working, then completed with
/// the server's result; a client that takes no tasks waits for its plain
/// answer. The tool ran once a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_through_the_proxy_becomes_a_task_with_the_servers_result() {
    let seen = Arc::new(Seen::default());
    let (server, proxy) = proxied(&seen).await;
    let client = tasking(proxy.url());

    check_a_long_call_becomes_a_task(&client, 800).await;

    let plain = StatelessClient::new(proxy.url()).declaring(json!({}));
    let waited = plain.call("work", json!({ "ms": 300 }), json!({})).await;
    assert_eq!(waited["content"][0]["text"], "worked 300 ms", "{waited}");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 3);

    proxy.shutdown().await.expect("the proxy stops");
    server.shutdown().await.expect("the server stops");
}

/// `tasks/cancel` of the proxy's task aborts the proxy's call, and the
/// proxy cancels the call on the server: the server's tool is dropped and
/// ticks no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_of_the_proxy_stops_the_servers_tool() {
    let seen = Arc::new(Seen::default());
    let (server, proxy) = proxied(&seen).await;
    let client = tasking(proxy.url());
    let id = task_id(&client.call("ticking", json!({}), json!({})).await);
    assert!(seen.ticks.load(Ordering::SeqCst) > 0, "the tool never ran");

    let ack = client
        .request("tasks/cancel", json!({ "taskId": id }))
        .await;
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = task_when(&client, &id, "cancelled").await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    // The server hears of it over the network, a moment later.
    let began = Instant::now();
    while !seen.dropped.load(Ordering::SeqCst) {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the server's tool still runs 10 s after the cancel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ticks = seen.ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        seen.ticks.load(Ordering::SeqCst),
        ticks,
        "the server's tool ticks on"
    );

    proxy.shutdown().await.expect("the proxy stops");
    server.shutdown().await.expect("the server stops");
}
