//! The proxy is transparent: what a client sees of an MCP server through
//! `rho-mcp proxy` is what it sees of the server directly, item by item,
//! except where the proxy's README says otherwise and why.
//!
//! The servers are software nobody here wrote or a server written the way
//! the Python SDK's documentation writes one: the official Python SDK's
//! own example servers (from the SDK's source distribution, pinned by
//! hash in `tests/peers/install-python.sh`) and `highlevel_server.py`
//! (the SDK's high-level `MCPServer`: tools with titles, annotations,
//! icons, `_meta` and structured output; resources, templates, prompts
//! and completions). The client is the SDK's own (`compare_client.py`),
//! on 2025-11-25 and on 2026-07-28, recording every list, call, read,
//! prompt and completion; the two records are compared field by field.

mod import_support;
mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

/// A server to compare: how to start it, and what to ask of it beyond
/// its lists and listed resources.
struct Peer {
    name: &'static str,
    command: Vec<String>,
    script: Value,
}

fn examples() -> PathBuf {
    support::python()
        .parent()
        .and_then(|bin| bin.parent())
        .expect("the venv's python is in its bin")
        .join("examples")
}

/// One of the SDK's example servers, run as its module.
fn example(name: &'static str, module: &str, script: Value) -> Peer {
    let dir = examples().join(name);
    assert!(
        dir.is_dir(),
        "the Python SDK's example server {} is missing: run tests/peers/install-python.sh",
        dir.display()
    );
    Peer {
        name,
        command: vec![
            "env".to_owned(),
            format!("PYTHONPATH={}", dir.display()),
            support::python().display().to_string(),
            "-m".to_owned(),
            module.to_owned(),
        ],
        script,
    }
}

fn highlevel() -> Peer {
    Peer {
        name: "highlevel_server.py",
        command: vec![
            support::python().display().to_string(),
            support::peers_dir()
                .join("highlevel_server.py")
                .display()
                .to_string(),
            "stdio".to_owned(),
        ],
        script: json!({
            "calls": [
                { "name": "add", "arguments": { "a": 1, "b": 2 } },
                { "name": "forecast", "arguments": { "city": "Oslo", "days": 2 } },
                { "name": "fail", "arguments": { "reason": "on purpose" } },
                // Asks the client its name: the calls' fourth, see
                // `WHOAMI`.
                { "name": "whoami" },
                // Kept in the client's session, read back after the
                // calls: a session's state is its client's.
                { "name": "remember", "arguments": { "note": "kept" } },
            ],
            "prompts": [
                { "name": "review", "arguments": { "code": "fn main() {}" } },
                { "name": "greet", "arguments": { "name": "Ann" } },
                { "name": "nowhere" },
            ],
            "reads": ["notes://proxies/summary", "notes://nothing-here"],
            "reads_after": ["session://note"],
            "completions": [
                { "ref": { "type": "ref/prompt", "name": "review" },
                  "argument": { "name": "language", "value": "r" } },
                { "ref": { "type": "ref/resource", "uri": "notes://{topic}/summary" },
                  "argument": { "name": "topic", "value": "pro" } },
            ],
        }),
    }
}

fn peers() -> Vec<Peer> {
    vec![
        highlevel(),
        example("simple-tool", "mcp_simple_tool", json!({})),
        example(
            "simple-prompt",
            "mcp_simple_prompt",
            json!({ "prompts": [
                { "name": "simple", "arguments": { "context": "a proxy", "topic": "MCP" } },
            ] }),
        ),
        example("simple-resource", "mcp_simple_resource", json!({})),
        example(
            "simple-pagination",
            "mcp_simple_pagination",
            json!({ "calls": [{ "name": "tool_3", "arguments": { "input": "x" } }] }),
        ),
        // Its one tool answers made-up weather, different at each call:
        // listed, not called.
        example(
            "structured-output-lowlevel",
            "mcp_structured_output_lowlevel",
            json!({}),
        ),
    ]
}

/// What the SDK's client records of `command` at `mode`, over stdio.
fn record(mode: &str, script: &Value, command: &[String]) -> Value {
    let mut target = vec!["stdio".to_owned()];
    target.extend(command.iter().cloned());
    record_at(mode, script, &target)
}

/// What the SDK's client records at `mode` of the server `target` names
/// (`stdio COMMAND...` or `http URL`).
fn record_at(mode: &str, script: &Value, target: &[String]) -> Value {
    let output = Command::new(support::python())
        .arg(support::peers_dir().join("compare_client.py"))
        .arg(mode)
        .arg(script.to_string())
        .args(target)
        .output()
        .expect("the venv's python runs");
    support::client_json(&output)
}

/// `command` behind the proxy, believing the server's hints (the
/// default, not believing them, leaves them out: a difference the README
/// names).
fn proxied(command: &[String]) -> Vec<String> {
    let mut proxied = proxy_options();
    proxied.push("--".to_owned());
    proxied.extend(command.iter().cloned());
    proxied
}

/// `rho-mcp proxy` with the policy that believes the server's hints.
fn proxy_options() -> Vec<String> {
    let policy = support::log_path("transparent-policy.toml");
    std::fs::write(&policy, "default = \"allow\"\nbelieve_hints = true\n").expect("written");
    vec![
        env!("CARGO_BIN_EXE_rho-mcp").to_owned(),
        "proxy".to_owned(),
        "--policy".to_owned(),
        policy.display().to_string(),
    ]
}

/// The proxy serving streamable HTTP (`--http`), in front of the server
/// `upstream` names (`-- COMMAND...` or `--url URL`): the process and
/// the URL it serves at.
fn http_proxy(upstream: &[String]) -> (support::Running, String) {
    let options = proxy_options();
    let mut child = Command::new(&options[0])
        .args(&options[1..])
        .arg("--http")
        .args(upstream)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let url = support::printed_url(&mut child);
    (support::Running(child), url)
}

/// The difference the proxy's README names, taken out of a record: the
/// proxy declares its tool list may change (its quarantine changes it).
/// The tools' order is compared: the proxy lists them in the server's.
fn without_named_differences(mut record: Value) -> Value {
    if let Some(tools) = record.pointer_mut("/capabilities/tools")
        && let Some(fields) = tools.as_object_mut()
    {
        fields.remove("listChanged");
    }
    record
}

/// The other difference the README names, taken out of `through` where
/// it is exactly that: a call the server answered with a protocol error
/// (a JSON-RPC error, `direct`'s record) ends through the proxy as an
/// error result naming the tool, the server, the code and the server's
/// message, for every call through rho ends in one result.
fn with_protocol_errors_named(direct: &Value, through: &mut Value) {
    let Some(calls) = through["calls"].as_array_mut() else {
        return;
    };
    for (index, call) in calls.iter_mut().enumerate() {
        let Some(error) = direct["calls"][index].get("error") else {
            continue;
        };
        // The TypeScript SDK shows a JSON-RPC error's message after
        // "MCP error CODE: ".
        let message = error["message"].as_str().unwrap_or_default();
        let message = message
            .strip_prefix(&format!("MCP error {}: ", error["code"]))
            .unwrap_or(message);
        let said = format!(
            "failed with a protocol error ({}): {message}",
            error["code"]
        );
        let result = &call["ok"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == true && text.starts_with("tool `") && text.ends_with(&said) {
            *call = direct["calls"][index].clone();
        }
    }
}

/// Every path where `a` and `b` differ.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys().filter(|key| !a.contains_key(*key))) {
                let path = format!("{path}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(a), Some(b)) => differences(a, b, &path, out),
                    (Some(_), None) => out.push(format!("{path}: only direct")),
                    (None, _) => out.push(format!("{path}: only proxied")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (a, b)) in a.iter().zip(b).enumerate() {
                differences(a, b, &format!("{path}/{index}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {a} direct, {b} proxied")),
    }
}

/// Where the high-level server's `whoami` call, which asks the client's
/// name, sits among its record's calls.
const WHOAMI: usize = 3;

/// For the Python SDK's client, which answers an elicitation: the high-
/// level server asks the way most servers still do, a request to the
/// client while the call runs, and a client that opened with `initialize`
/// is asked, directly and through the proxy alike (through the proxy it
/// was not, when the proxy spoke 2026-07-28 to the server for every
/// client).
fn check_asked_its_name(mode: &str, name: &str, direct: &Value, through: &Value) {
    if mode != "legacy" || direct["server_info"]["name"] != "transparency-peer" {
        return;
    }
    for (record, way) in [(direct, "directly"), (through, "through the proxy")] {
        assert_eq!(
            record["calls"][WHOAMI]["ok"]["content"][0]["text"], "Hello, Ada.",
            "{name}: the server asked a 2025-11-25 client its name {way}: {}",
            record["calls"][WHOAMI]
        );
    }
}

/// The differences between `direct` and `through` (records of the
/// server `name` at `mode`) that the README does not name, each named by
/// `name`, into `unexplained`.
fn compare_records(
    mode: &str,
    name: &str,
    direct: Value,
    through: Value,
    unexplained: &mut Vec<String>,
) {
    let expected = if mode == "legacy" {
        "2025-11-25"
    } else {
        "2026-07-28"
    };
    assert_eq!(direct["protocol_version"], expected, "{name}");
    assert_eq!(through["protocol_version"], expected, "{name}");
    // The record is not empty: the comparison compares something.
    assert!(
        ["tools", "prompts", "resources"]
            .iter()
            .any(|list| direct[list]["ok"]
                .as_array()
                .is_some_and(|items| !items.is_empty())),
        "{name}: nothing listed directly: {direct}"
    );
    let mut through = through;
    with_protocol_errors_named(&direct, &mut through);
    let mut found = Vec::new();
    differences(
        &without_named_differences(direct),
        &without_named_differences(through),
        "",
        &mut found,
    );
    unexplained.extend(
        found
            .into_iter()
            .map(|difference| format!("{name}: {difference}")),
    );
}

fn compare(mode: &str) {
    let mut unexplained = Vec::new();
    for peer in peers() {
        let direct = record(mode, &peer.script, &peer.command);
        let through = record(mode, &peer.script, &proxied(&peer.command));
        check_asked_its_name(mode, peer.name, &direct, &through);
        compare_records(mode, peer.name, direct, through, &mut unexplained);
    }
    assert!(
        unexplained.is_empty(),
        "the proxy changed what a {mode} client sees:\n{}",
        unexplained.join("\n")
    );
}

/// Over HTTP: the proxy serving `--http` in front of the server over
/// stdio, compared with the server over stdio; the proxy in front of the
/// server's own streamable HTTP endpoint (`--url`), over stdio and over
/// HTTP, compared with the server's endpoint.
fn compare_over_http(mode: &str) {
    let peer = highlevel();
    let mut unexplained = Vec::new();
    let direct = record(mode, &peer.script, &peer.command);
    let mut upstream = vec!["--".to_owned()];
    upstream.extend(peer.command.iter().cloned());
    let (_proxy, url) = http_proxy(&upstream);
    let through = record_at(mode, &peer.script, &["http".to_owned(), url]);
    check_asked_its_name(mode, "--http, stdio server", &direct, &through);
    compare_records(
        mode,
        "--http, stdio server",
        direct,
        through,
        &mut unexplained,
    );

    let script = support::peers_dir().join("highlevel_server.py");
    let (_server, server_url) =
        support::python_http_peer(&[script.to_str().expect("UTF-8"), "http"]);
    let http = |url: &str| vec!["http".to_owned(), url.to_owned()];
    let direct = record_at(mode, &peer.script, &http(&server_url));
    let mut over_stdio = proxy_options();
    over_stdio.extend(["--url".to_owned(), server_url.clone()]);
    let through = record(mode, &peer.script, &over_stdio);
    check_asked_its_name(mode, "--url server", &direct, &through);
    compare_records(
        mode,
        "--url server",
        direct.clone(),
        through,
        &mut unexplained,
    );
    let (_proxy, url) = http_proxy(&["--url".to_owned(), server_url]);
    let through = record_at(mode, &peer.script, &http(&url));
    check_asked_its_name(mode, "--http, --url server", &direct, &through);
    compare_records(
        mode,
        "--http, --url server",
        direct,
        through,
        &mut unexplained,
    );
    assert!(
        unexplained.is_empty(),
        "the proxy changed what a {mode} client sees over HTTP:\n{}",
        unexplained.join("\n")
    );
}

/// At 2025-11-25: every list, call, read, prompt and completion of each
/// server the same through the proxy as directly.
#[test]
fn a_2025_client_sees_each_server_through_the_proxy_as_directly() {
    compare("legacy");
}

/// At 2026-07-28: the same.
#[test]
fn a_2026_client_sees_each_server_through_the_proxy_as_directly() {
    compare("modern");
}

/// What the comparison stands on: a tool's icons, its `_meta` and where
/// its title is reach the client through the proxy (they were dropped or
/// moved before), and a server with no tools can be proxied at all (it
/// could not: the proxy asked it for tools and stopped at the refusal).
#[test]
fn a_tools_own_fields_and_a_server_without_tools_pass_through() {
    let peer = highlevel();
    let through = record("legacy", &peer.script, &proxied(&peer.command));
    let tools = through["tools"]["ok"].as_array().expect("tools listed");
    let add = tools
        .iter()
        .find(|tool| tool["name"] == "add")
        .expect("add listed");
    assert_eq!(add["_meta"]["com.example/owner"], "arithmetic", "{add}");
    assert_eq!(add["icons"][0]["mimeType"], "image/png", "{add}");
    assert_eq!(add["title"], "Add two numbers", "{add}");
    assert!(add["annotations"].get("title").is_none(), "{add}");
    assert_eq!(
        through["server_info"]["name"], "transparency-peer",
        "{through}"
    );
    assert!(
        through["capabilities"].get("logging").is_none(),
        "{through}"
    );

    let prompts = example("simple-prompt", "mcp_simple_prompt", json!({}));
    let through = record("legacy", &prompts.script, &proxied(&prompts.command));
    assert!(through["capabilities"].get("tools").is_none(), "{through}");
    assert_eq!(through["prompts"]["ok"][0]["name"], "simple", "{through}");
}

/// The TypeScript SDK's client (2025-11-25) over streamable HTTP: the
/// server's own endpoint against the proxy's (`--http`) in front of it,
/// over stdio and over `--url`.
#[test]
fn the_typescript_sdk_over_http_sees_the_server_through_the_proxy_as_directly() {
    let peer = highlevel();
    let typescript = |url: &str| {
        let script = peer.script.to_string();
        support::client_json(&import_support::run_node_peer(
            "compare.mjs",
            &[&script, url],
            &[],
        ))
    };
    let script = support::peers_dir().join("highlevel_server.py");
    let (_server, server_url) =
        support::python_http_peer(&[script.to_str().expect("UTF-8"), "http"]);
    let direct = typescript(&server_url);
    let mut unexplained = Vec::new();
    let mut upstream = vec!["--".to_owned()];
    upstream.extend(peer.command.iter().cloned());
    for (name, upstream) in [
        ("--http, stdio server", upstream),
        (
            "--http, --url server",
            vec!["--url".to_owned(), server_url.clone()],
        ),
    ] {
        let (_proxy, url) = http_proxy(&upstream);
        let through = typescript(&url);
        compare_records("legacy", name, direct.clone(), through, &mut unexplained);
    }
    assert!(
        unexplained.is_empty(),
        "the proxy changed what the TypeScript SDK's client sees:\n{}",
        unexplained.join("\n")
    );
}

/// Each 2025-11-25 client of an HTTP proxy, in front of a stdio server
/// that speaks both revisions, has its calls go to a server process of
/// its own (opened with `initialize`, so the server asks that client its
/// questions), which ends with the client's session: two clients one
/// after another are each asked their name, and after each the proxy runs
/// its first server alone again.
#[test]
fn a_2025_clients_own_server_ends_with_its_session() {
    let marker = format!("lanes-{}", std::process::id());
    let mut upstream = vec!["--".to_owned()];
    upstream.extend(highlevel().command);
    // Ignored by the server: it tells this test's servers from others'.
    upstream.push(marker.clone());
    let (proxy, url) = http_proxy(&upstream);
    // The proxy's own command line names the marker too.
    let running = || -> Vec<u32> {
        import_support::processes_with(&marker)
            .into_iter()
            .filter(|&pid| pid != proxy.0.id())
            .collect()
    };
    let servers = || running().len();
    let script = json!({ "calls": [{ "name": "whoami" }] });
    for client in ["first", "second"] {
        let seen = record_at("legacy", &script, &["http".to_owned(), url.clone()]);
        assert_eq!(
            seen["calls"][0]["ok"]["content"][0]["text"], "Hello, Ada.",
            "the {client} client was asked its name: {}",
            seen["calls"][0]
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while servers() != 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(
            servers(),
            1,
            "after the {client} client's session, only the proxy's first server runs: {:?}",
            running()
        );
    }
}

/// What the SDK's two clients of `url` at once (`sessions_client.py`)
/// record: each client's note read back, and the log messages each was
/// sent.
fn two_sessions(url: &str) -> Value {
    let output = Command::new(support::python())
        .arg(support::peers_dir().join("sessions_client.py"))
        .arg(url)
        .output()
        .expect("the venv's python runs");
    support::client_json(&output)
}

/// Two 2025-11-25 clients of one HTTP proxy at once keep their sessions
/// apart, as they would at the server directly: what one keeps in its
/// session (a call of `remember`) is not what the other reads
/// (`session://note`), each reads its own back, and the log messages the
/// server sends in one client's session reach that client alone. Through
/// the proxy each client's calls, reads and announcements go on a
/// connection of its own, with the server over stdio and over `--url`,
/// and with a server the proxy speaks 2025-11-25 to (a read went on the
/// proxy's shared connection, where no call had left a note, and every
/// client heard every log message; at 2025-11-25 every request did).
#[test]
fn two_2025_clients_of_one_http_proxy_keep_their_sessions_apart() {
    let expected = json!({
        "second_before": ["(nothing yet)"],
        "first": ["alpha"],
        "second": ["beta"],
        "logs": { "first": ["remembered alpha"], "second": ["remembered beta"] },
    });
    let script = support::peers_dir().join("highlevel_server.py");
    let (_server, server_url) =
        support::python_http_peer(&[script.to_str().expect("UTF-8"), "http"]);
    assert_eq!(two_sessions(&server_url), expected, "directly");
    let mut stdio = vec!["--".to_owned()];
    stdio.extend(highlevel().command);
    // Spoken to at 2025-11-25 only, the server keeps a session for each
    // connection: one for all clients unless each has its own.
    let mut older = vec!["--handshake".to_owned(), "initialize".to_owned()];
    older.extend(stdio.iter().cloned());
    for (name, upstream) in [
        ("stdio server", stdio),
        ("--url server", vec!["--url".to_owned(), server_url.clone()]),
        ("stdio server at 2025-11-25", older),
    ] {
        let (_proxy, url) = http_proxy(&upstream);
        assert_eq!(two_sessions(&url), expected, "through the proxy, {name}");
    }
}

/// At 2025-11-25, over HTTP on either side of the proxy: the same.
#[test]
fn a_2025_client_over_http_sees_the_server_through_the_proxy_as_directly() {
    compare_over_http("legacy");
}

/// At 2026-07-28, over HTTP on either side of the proxy: the same.
#[test]
fn a_2026_client_over_http_sees_the_server_through_the_proxy_as_directly() {
    compare_over_http("modern");
}

/// What `offers_client.py`'s two clients, one offering elicitation and
/// sampling and one offering nothing, record of `target` (a URL, or
/// `stdio` and a command).
fn offers(target: &[String]) -> Value {
    let output = Command::new(support::python())
        .arg(support::peers_dir().join("offers_client.py"))
        .args(target)
        .output()
        .expect("the venv's python runs");
    support::client_json(&output)
}

/// Each 2025-11-25 client is listed the tools the server lists to it,
/// as directly: a server that lists a tool only to a client that offers
/// what the tool asks for (`offers_server.py`, on the Python SDK's
/// low-level server) lists `ask_name` and `summarize` to the client that
/// offers elicitation and sampling and not to the one that offers
/// nothing, and a change of one session's tools (`hide_echo`) is told
/// to that session's client and changes its list alone. Through the
/// proxy over stdio (with the server spoken to at either revision) and
/// over `--http` (two clients of one proxy at once), with the server over
/// stdio and over `--url`. (Each client was listed what the proxy's first
/// connection was, which offered everything.)
#[test]
fn each_2025_client_is_listed_the_tools_the_server_lists_to_it() {
    let expected = json!({
        "offering": ["echo", "ask_name", "summarize", "hide_echo"],
        "offering_nothing": ["echo", "hide_echo"],
        "asked": ["accept: Ada"],
        "told": true,
        "offering_nothing_after": ["hide_echo"],
        "offering_after": ["echo", "ask_name", "summarize", "hide_echo"],
    });
    let script = support::peers_dir().join("offers_server.py");
    let script = script.to_str().expect("UTF-8");
    let python = support::python().display().to_string();
    let server = vec![python.clone(), script.to_owned(), "stdio".to_owned()];
    let mut direct = vec!["stdio".to_owned()];
    direct.extend(server.iter().cloned());
    assert_eq!(offers(&direct), expected, "directly over stdio");
    let (_http_server, server_url) = support::python_http_peer(&[script, "http"]);
    assert_eq!(
        offers(std::slice::from_ref(&server_url)),
        expected,
        "directly over HTTP"
    );

    let mut through_stdio = vec!["stdio".to_owned()];
    through_stdio.extend(proxied(&server));
    assert_eq!(
        offers(&through_stdio),
        expected,
        "through the proxy over stdio"
    );
    // Spoken to at 2025-11-25 only, the server is told what the proxy's
    // one client offered as that client initializes.
    let mut older = vec!["stdio".to_owned()];
    older.extend(proxy_options());
    older.extend([
        "--handshake".to_owned(),
        "initialize".to_owned(),
        "--".to_owned(),
    ]);
    older.extend(server.iter().cloned());
    assert_eq!(
        offers(&older),
        expected,
        "through the proxy over stdio, the server at 2025-11-25"
    );
    let mut stdio = vec!["--".to_owned()];
    stdio.extend(server);
    for (name, upstream) in [
        ("stdio server", stdio),
        ("--url server", vec!["--url".to_owned(), server_url]),
    ] {
        let (_proxy, url) = http_proxy(&upstream);
        assert_eq!(offers(&[url]), expected, "through the --http proxy, {name}");
    }
}
