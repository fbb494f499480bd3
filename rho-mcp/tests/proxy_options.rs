//! `rho-mcp proxy` options, each checked through the real binary with raw
//! JSON-RPC on its stdin and stdout: the server's hints in the listing only
//! when the policy believes them, `SIGUSR1` lifting quarantines while the
//! client stays connected, a server at an HTTP endpoint (`--url`), a
//! server that cannot take parallel calls served one call at a time
//! (`--max-concurrent-calls`), and options that do not fit refused with
//! exit code 2.

mod import_support;
mod support;

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use import_support::{EverythingHttp, everything, node};
use serde_json::{Value, json};
use support::{log_path, peers_dir};

const PROXY: &str = env!("CARGO_BIN_EXE_rho-mcp");

/// A proxy process, past its handshake, spoken to in raw JSON-RPC lines.
struct RawProxy {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl RawProxy {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(PROXY)
            .arg("proxy")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the proxy starts");
        let stdin = child.stdin.take().expect("piped");
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut proxy = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let info = proxy.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "test", "version": "1" } }),
        );
        // The client sees the server's identity, not the proxy's.
        let name = info["serverInfo"]["name"].as_str().expect("a server name");
        assert_ne!(name, "rho-mcp-proxy", "{info}");
        proxy.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        proxy
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("the proxy reads");
    }

    /// Sends a request without waiting for its answer; its id.
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The next message the proxy writes.
    fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .next()
            .expect("the proxy answers")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    /// Sends a request and reads lines until its answer (notifications in
    /// between are skipped); the answer's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        loop {
            let message = self.next_message();
            if message["id"] == id {
                return result_of(&message);
            }
        }
    }

    /// Sends `calls` `tools/call` requests without waiting, then reads
    /// their answers' results, by request.
    fn call_all(&mut self, tool: &str, calls: &[Value]) -> Vec<Value> {
        let ids: Vec<u64> = calls
            .iter()
            .map(|arguments| {
                self.send_request(
                    "tools/call",
                    json!({ "name": tool, "arguments": arguments }),
                )
            })
            .collect();
        let mut results = vec![Value::Null; calls.len()];
        let mut answered = 0;
        while answered < calls.len() {
            let message = self.next_message();
            let Some(index) = ids.iter().position(|&id| message["id"] == id) else {
                continue;
            };
            results[index] = result_of(&message);
            answered += 1;
        }
        results
    }

    fn tools(&mut self) -> Vec<Value> {
        let listed = self.request("tools/list", json!({}));
        listed["tools"].as_array().expect("tools").clone()
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
    }
}

impl Drop for RawProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer's `result`; panics on an error answer.
fn result_of(message: &Value) -> Value {
    message
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("an error answer: {message}"))
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The annotations the listing gives `tool`.
fn annotations_of(tools: &[Value], tool: &str) -> Value {
    tools
        .iter()
        .find(|listed| listed["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} listed"))
        .get("annotations")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn the_listing_gives_the_servers_hints_only_when_the_policy_believes_them() {
    let server = everything().to_str().expect("UTF-8");
    let mut doubting = RawProxy::start(&["--", node(), server, "stdio"]);
    let tools = doubting.tools();
    let doubted = annotations_of(&tools, "get-tiny-image");
    assert_eq!(doubted.get("readOnlyHint"), None, "{doubted}");
    // The title stays, where the server put it.
    let tool = tools
        .iter()
        .find(|listed| listed["name"] == "get-tiny-image")
        .expect("listed");
    assert_eq!(tool["title"], "Get Tiny Image Tool", "{tool}");

    let policy = log_path("proxy-believing.toml");
    std::fs::write(&policy, "default = \"allow\"\nbelieve_hints = true\n").expect("written");
    let mut believing = RawProxy::start(&[
        "--policy",
        policy.to_str().expect("UTF-8"),
        "--",
        node(),
        server,
        "stdio",
    ]);
    let believed = annotations_of(&believing.tools(), "get-tiny-image");
    assert_eq!(believed["readOnlyHint"], true, "{believed}");
}

#[test]
fn sigusr1_lifts_every_quarantine_while_the_client_stays() {
    let fault = peers_dir().join("node").join("fault-server.mjs");
    let mut proxy = RawProxy::start(&[
        "--quarantine-after",
        "1",
        "--",
        node(),
        fault.to_str().expect("UTF-8"),
    ]);
    let died = proxy.call("die", json!({ "code": 3 }));
    assert_eq!(died["isError"], true, "{died}");
    // The server's watcher counts the death a moment after the call ends.
    let mut names = Vec::new();
    for _ in 0..50 {
        names = proxy.tools();
        if names.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(names.is_empty(), "quarantined: {names:?}");
    let status = Command::new("kill")
        .args(["-USR1", &proxy.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut back = Vec::new();
    for _ in 0..50 {
        back = proxy.tools();
        if !back.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(back.iter().any(|tool| tool["name"] == "echo"), "{back:?}");
    let echo = proxy.call("echo", json!({ "text": "back again" }));
    assert_eq!(text(&echo), "back again", "{echo}");
}

#[test]
fn a_server_at_an_http_endpoint_is_proxied_with_url() {
    let server = EverythingHttp::start();
    let url = server.url();
    let mut proxy = RawProxy::start(&["--url", &url, "--header", "X-Client: rho-tests"]);
    assert!(
        proxy.tools().iter().any(|tool| tool["name"] == "echo"),
        "echo listed"
    );
    let echo = proxy.call("echo", json!({ "message": "over HTTP" }));
    assert_eq!(text(&echo), "Echo: over HTTP", "{echo}");
}

/// The fault server's `serial` tool fails a call that overlaps another.
/// Four calls sent at once through a proxy bounded to one call at a time
/// all succeed, served in turn; through an unbounded proxy, the server
/// sees them overlap and fails some (which shows the bound is what made
/// the difference).
#[test]
fn max_concurrent_calls_serves_a_server_one_call_at_a_time() {
    let fault = peers_dir().join("node").join("fault-server.mjs");
    let fault = fault.to_str().expect("UTF-8");
    let calls: Vec<Value> = (0..4).map(|n| json!({ "ms": 100, "n": n })).collect();
    let is_error = |result: &Value| result["isError"] == true;

    let mut bounded = RawProxy::start(&["--max-concurrent-calls", "1", "--", node(), fault]);
    let results = bounded.call_all("serial", &calls);
    for result in &results {
        assert!(!is_error(result), "a bounded call failed: {result}");
    }
    // The server's answer ends with the call's place in its order.
    let mut places: Vec<String> = results
        .iter()
        .map(|result| {
            text(result)
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    places.sort();
    assert_eq!(places, ["1", "2", "3", "4"], "one place each: {results:?}");

    let mut unbounded = RawProxy::start(&["--", node(), fault]);
    let results = unbounded.call_all("serial", &calls);
    assert!(
        results.iter().any(is_error),
        "without the bound the server should have seen calls overlap: {results:?}"
    );
}

#[test]
fn options_that_do_not_fit_are_refused_with_exit_code_2() {
    let refused = |args: &[&str], says: &str| {
        let output = Command::new(PROXY)
            .arg("proxy")
            .args(args)
            .stdin(Stdio::null())
            .env_remove("RHO_TEST_UNSET_TOKEN")
            .output()
            .expect("the proxy runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    };
    refused(
        &["--url", "http://127.0.0.1:1/mcp", "--", "/bin/true"],
        "the argument '--url <URL>' cannot be used with '[SERVER_COMMAND]...'",
    );
    refused(
        &["--header", "X-Key: 1", "--", "/bin/true"],
        "an HTTP header cannot be given for a stdio server",
    );
    refused(
        &[
            "--url",
            "http://127.0.0.1:1/mcp",
            "--bearer-token-env",
            "RHO_TEST_UNSET_TOKEN",
        ],
        "environment variable `RHO_TEST_UNSET_TOKEN` is not set",
    );
    refused(
        &["--url", "ftp://127.0.0.1/mcp"],
        "is not an `http://` or `https://` URL",
    );
    refused(
        &["--url", "http://127.0.0.1:1/mcp", "--header", "no colon"],
        "invalid value 'no colon' for '--header <NAME: VALUE>': a header is `NAME: VALUE`",
    );
}
