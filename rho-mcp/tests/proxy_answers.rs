//! `rho-mcp proxy` gives its client the answer the server sent. The MCP
//! reference server (`@modelcontextprotocol/server-everything`) is run
//! twice, once straight under an official SDK client (Python's, then
//! TypeScript's) and once behind the proxy (no policy: every tool
//! allowed), and each of its tools is called on both: the content (every
//! part, in order, with its bytes and annotations), the structured
//! content and the error flag must be the same.

mod import_support;
mod support;

use import_support::{everything, everything_calls, node, run_node_peer};
use serde_json::{Value, json};
use support::{client_json, peers_dir, python};

const PROXY: &str = env!("CARGO_BIN_EXE_rho-mcp");

/// What the client scripts are told: the server straight, the server
/// behind the proxy, and the calls to make on each.
fn spec() -> String {
    let server = everything().to_str().expect("a UTF-8 path");
    let calls: Vec<Value> = everything_calls()
        .into_iter()
        .map(|call| json!({ "tool": call.tool, "arguments": call.arguments, "tries": call.tries }))
        .collect();
    json!({
        "direct": [node(), server, "stdio"],
        "proxied": [PROXY, "proxy", "--", node(), server, "stdio"],
        "calls": calls,
    })
    .to_string()
}

/// The reference server's tools that it lists only to a client that
/// declares it answers their questions (elicitation, sampling, roots).
const ASK_THEIR_CLIENT: [&str; 3] = [
    "trigger-elicitation-request",
    "trigger-sampling-request",
    "get-roots-list",
];

/// What the test compares of an answer as the client read it.
fn compared(answer: &Value) -> Value {
    let result = &answer["result"];
    json!({
        "content": result["content"],
        "structuredContent": result.get("structuredContent").cloned().unwrap_or(Value::Null),
        "isError": result.get("isError").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// Checks a client's record (see `tests/peers/answers_client.py`): the
/// proxy lists what the server lists, every listed tool was called, and
/// each call's answer through the proxy is the direct one, on one of its
/// tries at least. `not_called` names the tools the client itself
/// refuses to call straight, each with the words of its refusal: those
/// have no direct answer to compare.
fn check(seen: &Value, not_called: &[(&str, &str)]) {
    // The proxy declares to the server what it relays to its own client
    // (elicitation, sampling, roots), and the server then lists the tools
    // that ask so; these clients declare none of it and see those tools
    // only through the proxy. `tests/proxy.rs` relays their questions.
    let proxied: Vec<&Value> = seen["proxied_tools"]
        .as_array()
        .expect("a list of tools")
        .iter()
        .filter(|tool| !ASK_THEIR_CLIENT.iter().any(|asks| *tool == asks))
        .collect();
    let direct: Vec<&Value> = seen["direct_tools"]
        .as_array()
        .expect("a list of tools")
        .iter()
        .collect();
    assert_eq!(
        proxied, direct,
        "the proxy lists every tool the server lists"
    );
    let calls = everything_calls();
    for tool in proxied {
        assert!(
            calls.iter().any(|call| call.tool == tool),
            "the reference server lists {tool}, which no call here compares"
        );
    }
    let records = seen["calls"].as_array().expect("the calls");
    assert_eq!(records.len(), calls.len());
    for record in records {
        let tries = record["tries"].as_array().expect("tries");
        if let Some((_, refusal)) = not_called.iter().find(|(tool, _)| record["tool"] == *tool) {
            for attempt in tries {
                let said = attempt["direct"]["error"].as_str().unwrap_or_default();
                assert!(
                    said.contains(refusal),
                    "the client was expected to refuse to call {} itself: {attempt}",
                    record["tool"]
                );
            }
            continue;
        }
        let mut last = None;
        for attempt in tries {
            let direct = &attempt["direct"];
            assert!(
                direct.get("result").is_some(),
                "the direct call of {} with {} failed in the client: {direct}",
                record["tool"],
                record["arguments"]
            );
            let (direct, proxied) = (compared(direct), compared(&attempt["proxied"]));
            if direct == proxied {
                last = None;
                break;
            }
            last = Some((direct, attempt["proxied"].clone()));
        }
        if let Some((direct, proxied)) = last {
            panic!(
                "{} with {}: through the proxy the client got\n{proxied}\nwhere the server \
                 answered it\n{direct}\n(in {} tries)",
                record["tool"],
                record["arguments"],
                tries.len()
            );
        }
    }
}

#[test]
fn the_python_sdk_gets_through_the_proxy_what_the_server_sent() {
    let output = std::process::Command::new(python())
        .arg(peers_dir().join("answers_client.py"))
        .arg(spec())
        .output()
        .expect("the venv's python runs");
    check(&client_json(&output), &[]);
}

#[test]
fn the_typescript_sdk_gets_through_the_proxy_what_the_server_sent() {
    let output = run_node_peer("answers.mjs", &[&spec()], &[]);
    // The server lists `simulate-research-query` as needing a
    // task-augmented call (`execution.taskSupport: "required"`), and this
    // client will not make a plain call of such a tool: there is no direct
    // answer. rho's listing does not carry `execution` (rho runs no MCP
    // tasks), so through the proxy the client does call it and reads the
    // server's own error result, as the Python client does both ways.
    let not_called = [("simulate-research-query", "requires task-based execution")];
    check(&client_json(&output), &not_called);
}
