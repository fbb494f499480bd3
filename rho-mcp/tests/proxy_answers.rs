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
/// tries at least. `refused_directly` names the tools the server runs
/// only as tasks, which this client cannot make, each with the words of
/// the server's refusal of its plain call: directly it gets that refusal,
/// and through the proxy, which runs the call as a task on its behalf,
/// the tool's result.
fn check(seen: &Value, refused_directly: &[(&str, &str)]) {
    // The server is told what the client offered (nothing, here), as
    // directly, and lists no tool that asks its client more.
    let proxied: Vec<&Value> = seen["proxied_tools"]
        .as_array()
        .expect("a list of tools")
        .iter()
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
        if let Some((_, refusal)) = refused_directly
            .iter()
            .find(|(tool, _)| record["tool"] == *tool)
        {
            for attempt in tries {
                let (direct, proxied) =
                    (compared(&attempt["direct"]), compared(&attempt["proxied"]));
                assert!(
                    direct["isError"] == true && direct["content"].to_string().contains(refusal),
                    "the server was expected to refuse the plain call of {}: {attempt}",
                    record["tool"]
                );
                assert!(
                    proxied["isError"] == false && proxied["content"][0]["text"].is_string(),
                    "through the proxy {} was expected to run as a task: {attempt}",
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
    // This client makes no tasks: the server refuses it the tool it runs
    // only as a task, which the proxy runs as one.
    let refused = [("simulate-research-query", "requires task augmentation")];
    check(&client_json(&output), &refused);
}

#[test]
fn the_typescript_sdk_gets_through_the_proxy_what_the_server_sent() {
    let output = run_node_peer("answers.mjs", &[&spec()], &[]);
    // The server lists `simulate-research-query` as runnable only as a
    // task (`execution.taskSupport: "required"`), and this client calls
    // it directly as one. The proxy lists it without `execution` (rmcp
    // reads none) and runs the client's plain call as a task: the same
    // report both ways.
    check(&client_json(&output), &[]);
}

/// What `task_client.py` records of `target` (a URL, or `stdio` and a
/// command).
fn research(target: &[String]) -> Value {
    let output = std::process::Command::new(python())
        .arg(peers_dir().join("task_client.py"))
        .args(target)
        .output()
        .expect("the venv's python runs");
    client_json(&output)
}

/// A tool the server runs only as a task (2025-11-25's
/// `execution.taskSupport: "required"`) runs through the proxy for a
/// client that makes no tasks (the Python SDK's): the proxy runs its plain
/// call as a task, and the question the task asks on the way (an
/// ambiguous query, an elicitation queued with the task) reaches that
/// client, whose answer is in the report. Over stdio and over `--http`
/// (where the client has a connection of its own). Directly, the server
/// refuses the call (see the Python SDK's record above).
#[test]
fn a_tool_run_only_as_a_task_runs_as_one_and_its_question_reaches_the_client() {
    let server = [
        node().to_owned(),
        everything().to_str().expect("UTF-8").to_owned(),
        "stdio".to_owned(),
    ];
    let expected = json!({
        "asked": ["The research query \"rho\" could have multiple interpretations. Please clarify what you're looking for:"],
        "first_line": "# Research Report: rho (historical)",
        "is_error": false,
    });
    let mut stdio = vec![
        "stdio".to_owned(),
        PROXY.to_owned(),
        "proxy".to_owned(),
        "--".to_owned(),
    ];
    stdio.extend(server.iter().cloned());
    assert_eq!(research(&stdio), expected, "through the proxy over stdio");
    let mut proxy = std::process::Command::new(PROXY)
        .args(["proxy", "--http", "--"])
        .args(&server)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let url = support::printed_url(&mut proxy);
    let _proxy = support::Running(proxy);
    assert_eq!(research(&[url]), expected, "through the proxy over --http");
}
