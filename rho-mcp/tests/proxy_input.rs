//! The proxy's approvals asked of a client on MCP 2026-07-28 (an
//! input-required result, checked with raw HTTP requests as such a client
//! sends them) end at the input deadline the proxy's host sets
//! (`ProxyOptions::input_deadline`, `rho-mcp proxy --input-deadline`),
//! counted against no tool, in front of the MCP reference server
//! (`@modelcontextprotocol/server-everything`) over stdio.

mod import_support;
mod support;

use std::time::{Duration, Instant};

use import_support::{everything, node};
use rho_mcp::proxy::ProxyOptions;
use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{AnnotationGate, Verdict};
use serde_json::{Value, json};
use support::stateless::{StatelessClient, approval};
use support::{log_path, proxy_over_http};

/// The audit log's lines so far.
fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// Property: an approval the proxy's policy asks of a 2026-07-28 client
/// that never answers ends its call at the proxy's input deadline (not
/// the ten minutes of the default), aborted and never run; its request
/// state then resumes nothing, and the tool is not quarantined (the
/// proxy quarantines at the first counted failure here), so an approved
/// call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_nobody_gives_ends_at_the_proxys_input_deadline() {
    let audit = log_path("proxy-input-deadline-audit");
    let server = everything().to_str().expect("a UTF-8 path");
    let proxy = proxy_over_http(
        ProxyOptions::new(node())
            .args([server, "stdio"])
            .policy(
                AnnotationGate::new()
                    .ask(Match::tool("echo"))
                    .otherwise(Verdict::Allow),
            )
            .input_deadline(Duration::from_millis(300))
            .quarantine_after(1)
            .audit(&audit),
    )
    .await;
    let client = StatelessClient::new(proxy.url());
    let arguments = json!({ "message": "hi" });
    // The reference server asks its client for roots 350 ms after it was
    // initialized, which the proxy declared on its clients' behalf; a
    // question from the server while one call is in flight is put to that
    // call's client, so the question would land on whichever of the calls
    // below runs then (a known fault of the proxy: it should declare only
    // what its client offered). Let it come and go first: this test is
    // about the input deadline.
    tokio::time::sleep(Duration::from_millis(800)).await;

    let asked = client.call("echo", arguments.clone(), json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let began = Instant::now();
    let ended = loop {
        if let Some(line) = audit_lines(&audit).into_iter().next() {
            break line;
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the unanswered call was not ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ended["tool"], "echo", "{ended}");
    assert_eq!(ended["outcome"], "aborted", "{ended}");
    let late = client
        .call("echo", arguments.clone(), approval(&asked))
        .await;
    assert_eq!(late["error"]["code"], json!(-32602), "{late}");

    let asked = client.call("echo", arguments.clone(), json!({})).await;
    let done = client.call("echo", arguments, approval(&asked)).await;
    assert_eq!(done["content"][0]["text"], "Echo: hi", "{done}");
    proxy.shutdown().await.expect("the proxy stops");
}
