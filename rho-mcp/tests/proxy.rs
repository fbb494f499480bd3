//! `rho-mcp proxy` as a desktop agent runs it: a real process, its client
//! the official MCP Python SDK over stdio, in front of the MCP reference
//! server (`@modelcontextprotocol/server-everything`) and of the fault
//! server. Tools listed through it, calls allowed, denied by the policy
//! and asked about through elicitation, a hung tool cut at the proxy's
//! timeout, the audit log, the output cap, a dying server restarted then
//! quarantined, the server gone with the proxy however the proxy ends, and
//! the server's resources, prompts and completions passed through as the
//! server answers them.

mod import_support;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use import_support::{eventually, everything, node, processes_with};
use serde_json::{Value, json};
use support::{client_json, log_path, peers_dir, printed_url, python, scenario, text};

const PROXY: &str = env!("CARGO_BIN_EXE_rho-mcp");

/// The policy of the reference-server run: a rule by name that denies,
/// one that allows, one by annotation that asks, and a default.
const POLICY: &str = r#"
default = "deny"
believe_hints = true

[[rule]]
tool = "get-sum"
action = "deny"
reason = "sums are off today"

[[rule]]
tool = ["echo", "trigger-long-*"]
action = "allow"

[[rule]]
annotation = "read_only"
action = "ask"
"#;

/// Runs `tests/peers/proxy_client.py KIND <proxy command>`; the JSON it
/// printed, and its stderr (where the SDK puts the proxy's).
fn run_client(kind: &str, proxy_args: &[&str]) -> (Value, String) {
    let output = proxy_client(kind, &[&[PROXY, "proxy"], proxy_args].concat());
    let seen = client_json(&output);
    (seen, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Runs `tests/peers/proxy_client.py KIND ARGS...` (the proxy's command
/// line, a server's own, or `http URL`): its output.
fn proxy_client(kind: &str, args: &[&str]) -> std::process::Output {
    Command::new(python())
        .arg(peers_dir().join("proxy_client.py"))
        .arg(kind)
        .args(args)
        .output()
        .expect("the venv's python runs")
}

fn write_file(name: &str, text: &str) -> PathBuf {
    let path = log_path(name);
    std::fs::write(&path, text).expect("the target's tmp dir is writable");
    path
}

/// The audit log's lines, each parsed.
fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

struct Run {
    seen: Value,
    audit: Vec<Value>,
}

fn everything_run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let policy = write_file("proxy-policy.toml", POLICY);
        let audit = log_path("proxy-audit");
        let server = everything().to_str().expect("a UTF-8 path");
        let (seen, _) = run_client(
            "everything",
            &[
                "--policy",
                policy.to_str().expect("UTF-8"),
                "--audit",
                audit.to_str().expect("UTF-8"),
                "--timeout",
                "1000",
                "--",
                node(),
                server,
                "stdio",
            ],
        );
        Run {
            audit: audit_lines(&audit),
            seen,
        }
    })
}

fn calls() -> &'static Value {
    scenario(&everything_run().seen, "calls")
}

#[test]
fn tools_and_instructions_come_through_the_proxy() {
    let list = scenario(&everything_run().seen, "list");
    let names: Vec<&str> = list["names"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}

#[test]
fn an_allowed_call_runs() {
    let allowed = &calls()["allowed"];
    assert_eq!(allowed["is_error"], false, "{allowed}");
    assert_eq!(text(allowed), "Echo: through the proxy");
}

#[test]
fn a_call_denied_by_the_policy_names_the_rule() {
    let denied = &calls()["denied"];
    assert_eq!(denied["is_error"], true);
    let said = text(denied);
    assert!(
        said.contains(r#"the proxy's policy denies calls of `get-sum` (rule 1 (tool "get-sum")): sums are off today"#),
        "{said}"
    );
    let by_default = &calls()["by_default"];
    assert_eq!(by_default["is_error"], true);
    assert!(text(by_default).contains("(the default)"), "{by_default}");
}

#[test]
fn ask_is_put_to_the_user_through_elicitation() {
    let questions = everything_run().seen["questions"]
        .as_array()
        .expect("questions");
    assert_eq!(questions.len(), 2, "asked once a call: {questions:?}");
    let message = questions[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("Run the tool `get-tiny-image`"),
        "{message}"
    );
    assert!(
        message.contains("rule 3 (annotation read_only)"),
        "{message}"
    );

    let accepted = &calls()["asked_accepted"];
    assert_eq!(accepted["is_error"], false, "{accepted}");
    assert!(
        accepted["kinds"]
            .as_array()
            .expect("kinds")
            .contains(&json!("image")),
        "{accepted}"
    );
    let declined = &calls()["asked_declined"];
    assert_eq!(declined["is_error"], true);
    assert!(
        text(declined).contains("the user declined the call of `get-tiny-image`"),
        "{declined}"
    );
}

#[test]
fn a_client_that_cannot_be_asked_is_denied_saying_so() {
    let unasked = scenario(&everything_run().seen, "unasked");
    assert_eq!(unasked["is_error"], true);
    assert!(
        text(unasked).contains("this MCP client cannot ask its user"),
        "{unasked}"
    );
}

#[test]
fn a_hung_tool_is_cut_at_the_proxys_timeout() {
    let hung = &calls()["hung"];
    assert_eq!(hung["is_error"], true);
    assert!(
        text(hung).contains("tool `trigger-long-running-operation` timed out after 1s"),
        "{hung}"
    );
    let seconds = hung["seconds"].as_f64().expect("timed");
    assert!((0.99..3.0).contains(&seconds), "answered after {seconds} s");
    let after = &calls()["after"];
    assert_eq!(
        text(after),
        "Echo: still serving",
        "the server kept serving"
    );
}

#[test]
fn the_audit_log_has_one_line_per_call_end() {
    let audit = &everything_run().audit;
    let seen: Vec<(&str, &str, Value, bool, Value)> = audit
        .iter()
        .map(|line| {
            (
                line["tool"].as_str().expect("tool"),
                line["outcome"].as_str().expect("outcome"),
                line["rule"].clone(),
                line["asked"].as_bool().expect("asked"),
                line["approved"].clone(),
            )
        })
        .collect();
    let long = "trigger-long-running-operation";
    assert_eq!(
        seen,
        [
            ("echo", "succeeded", json!(2), false, json!(true)),
            ("get-sum", "denied", json!(1), false, json!(false)),
            (
                "toggle-simulated-logging",
                "denied",
                Value::Null,
                false,
                json!(false)
            ),
            ("get-tiny-image", "succeeded", json!(3), true, json!(true)),
            ("get-tiny-image", "denied", json!(3), true, json!(false)),
            (long, "timed_out", json!(2), false, json!(true)),
            ("echo", "succeeded", json!(2), false, json!(true)),
            // The second client cannot be asked.
            ("get-tiny-image", "denied", json!(3), false, json!(false)),
        ]
    );
    for line in audit {
        assert!(
            line["time"].as_str().expect("time").ends_with('Z'),
            "{line}"
        );
        assert!(
            line["call_id"].as_str().expect("id").starts_with("mcp-"),
            "{line}"
        );
        assert!(
            line.get("arguments").is_none(),
            "no arguments by default: {line}"
        );
        assert!(line["argument_bytes"].as_u64().is_some(), "{line}");
        assert!(line["waited_ms"].as_f64().is_some(), "{line}");
    }
    assert_eq!(audit[0]["bytes"], "Echo: through the proxy".len());
    assert_eq!(
        audit[0]["argument_bytes"],
        json!({"message": "through the proxy"}).to_string().len()
    );
    assert!(
        audit[5]["ran_ms"].as_f64().expect("ran") >= 1000.0,
        "{}",
        audit[5]
    );
    assert_eq!(audit[1]["ran_ms"], Value::Null, "a denied call never ran");
    assert!(
        audit[1]["denial"]
            .as_str()
            .expect("denial")
            .contains("sums are off today"),
        "{}",
        audit[1]
    );
}

/// The processes whose command line holds `marker`, zombies left out.
/// What the Python SDK client sees of the reference server's resources,
/// prompts and completions through the proxy is what it sees of the server
/// itself, scenario for scenario: rho governs tools and carries the rest.
#[test]
fn resources_prompts_and_completions_pass_through_unchanged() {
    let server = everything().to_str().expect("a UTF-8 path");
    let features = |command: &[&str]| client_json(&proxy_client("features", command));
    let direct = features(&[node(), server, "stdio"]);
    let proxied = features(&[PROXY, "proxy", "--", node(), server, "stdio"]);
    for name in [
        "capabilities",
        "resources",
        "prompts",
        "completions",
        "unknown",
    ] {
        assert_eq!(
            scenario(&proxied, name),
            scenario(&direct, name),
            "{name}: through the proxy, then from the server itself"
        );
    }
    // The comparison means something: the server has each feature.
    assert_eq!(
        direct["capabilities"],
        json!({"resources": true, "prompts": true, "completions": true})
    );
    assert!(
        !direct["resources"]["uris"]
            .as_array()
            .expect("uris")
            .is_empty()
    );
    assert_eq!(direct["unknown"]["refused"], "MCPError", "{direct}");
}

/// A call's texts, each read as its words before any JSON in it and that
/// JSON as a value: an object's keys may come in another order once it
/// crossed rho (serde's maps are sorted), and JSON does not order them.
fn read_texts(summary: &Value) -> Vec<(String, Value)> {
    summary["texts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|text| match text.find('{') {
            Some(at) => (
                text[..at].to_owned(),
                serde_json::from_str(&text[at..]).unwrap_or_else(|_| json!(text[at..])),
            ),
            None => (text.to_owned(), Value::Null),
        })
        .collect()
}

/// What the reference server asks its client during a call (the user,
/// through elicitation; the model, through sampling) reaches the Python
/// SDK client through the proxy as it does without it, and the server
/// makes the same of the answers: the proxy declares what it relays, puts
/// each question to its client in the call it came in, and hands back the
/// answer.
#[test]
fn a_servers_questions_reach_the_client_through_the_proxy() {
    let server = everything().to_str().expect("a UTF-8 path");
    let relay = |command: &[&str]| client_json(&proxy_client("relay", command));
    let direct = relay(&[node(), server, "stdio"]);
    let proxied = relay(&[PROXY, "proxy", "--", node(), server, "stdio"]);
    assert_eq!(
        proxied["asked"], direct["asked"],
        "the questions the client was asked"
    );
    for call in ["elicited", "sampled"] {
        let (through, without) = (scenario(&proxied, call), scenario(&direct, call));
        assert_eq!(through["is_error"], false, "{call}: {through}");
        assert_eq!(
            read_texts(through),
            read_texts(without),
            "{call}: what the server made of the answer"
        );
    }
    // The comparison means something: the server asked, and heard.
    assert_eq!(
        direct["asked"].as_array().map(Vec::len),
        Some(2),
        "{direct}"
    );
    assert!(
        text(scenario(&direct, "elicited")).contains("Ada"),
        "{direct}"
    );
}

/// What the reference server announces to a client that set its log
/// level and subscribed to a resource (the log message its subscribe
/// request made, the resource's first update) reaches the Python SDK
/// client through the proxy as it does from the server itself.
#[test]
fn a_servers_announcements_reach_the_client_that_asked_for_them() {
    let server = everything().to_str().expect("a UTF-8 path");
    let notified = |command: &[&str]| client_json(&proxy_client("notified", command));
    let direct = notified(&[node(), server, "stdio"]);
    let proxied = notified(&[PROXY, "proxy", "--", node(), server, "stdio"]);
    assert_announced(&direct, &proxied);
}

/// `proxied` heard what `direct` did, and that is a log message and an
/// update of the subscribed resource.
fn assert_announced(direct: &Value, proxied: &Value) {
    assert_eq!(
        scenario(proxied, "subscribed"),
        scenario(direct, "subscribed"),
        "the subscription's calls"
    );
    assert_eq!(proxied["heard"], direct["heard"], "what the client heard");
    // The comparison means something: the server announced both.
    let uri = &direct["subscribed"]["uri"];
    let heard = direct["heard"].as_array().expect("heard");
    assert!(heard.iter().any(|entry| entry["log"] == "info"), "{direct}");
    assert!(
        heard.iter().any(|entry| &entry["updated"] == uri),
        "{direct}"
    );
}

/// `rho-mcp proxy --http` serves its clients over streamable HTTP: the
/// Python SDK, connecting to the URL it prints, gets the reference
/// server's resources, prompts and completions and is asked its questions
/// as it is by the server itself over stdio, and hears what it asked to;
/// SIGTERM ends the proxy well,
/// its server with it.
#[test]
fn over_http_the_proxy_passes_the_same_through() {
    let server = everything().to_str().expect("a UTF-8 path");
    let mut proxy = Command::new(PROXY)
        .args(["proxy", "--http", "--", node(), server, "stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let url = printed_url(&mut proxy);
    let run = |kind: &str, target: &[&str]| client_json(&proxy_client(kind, target));
    let (direct, proxied) = (
        run("features", &[node(), server, "stdio"]),
        run("features", &["http", &url]),
    );
    for name in [
        "capabilities",
        "resources",
        "prompts",
        "completions",
        "unknown",
    ] {
        assert_eq!(scenario(&proxied, name), scenario(&direct, name), "{name}");
    }
    let (direct, proxied) = (
        run("relay", &[node(), server, "stdio"]),
        run("relay", &["http", &url]),
    );
    assert_eq!(proxied["asked"], direct["asked"], "the questions asked");
    for call in ["elicited", "sampled"] {
        assert_eq!(
            read_texts(scenario(&proxied, call)),
            read_texts(scenario(&direct, call)),
            "{call}"
        );
    }
    let (direct, proxied) = (
        run("notified", &[node(), server, "stdio"]),
        run("notified", &["http", &url]),
    );
    assert_announced(&direct, &proxied);
    // The proxy's own server: the reference server's process whose
    // parent is the proxy (other tests run theirs meanwhile).
    let servers: Vec<u32> = processes_with(server)
        .into_iter()
        .filter(|&pid| parent_of(pid) == Some(proxy.id()))
        .collect();
    assert_eq!(servers.len(), 1, "the proxy runs its server: {servers:?}");
    let killed = Command::new("kill")
        .args(["-TERM", &proxy.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = proxy.wait().expect("the proxy ends");
    assert!(status.success(), "{status}");
    for pid in servers {
        assert!(
            eventually(Duration::from_secs(3), || !import_support::alive(pid)),
            "the server ({pid}) outlived the proxy"
        );
    }
}

/// The parent of process `pid`, from `/proc`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (name) state ppid ...`: the name may hold spaces and parentheses.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn fault_server() -> PathBuf {
    peers_dir().join("node").join("fault-server.mjs")
}

#[test]
fn a_dying_server_is_an_error_then_restarted_then_quarantined() {
    let marker = format!("proxy-deaths-{}", std::process::id());
    let server = fault_server();
    let (seen, stderr) = run_client(
        "fault",
        &[
            "--quarantine-after",
            "2",
            "--output-cap",
            "100",
            "--",
            node(),
            server.to_str().expect("UTF-8"),
            &marker,
        ],
    );
    let deaths = scenario(&seen, "deaths");
    assert_eq!(text(&deaths["first"]), "before");
    let capped = text(&deaths["capped"]);
    assert!(
        capped.starts_with(&"a".repeat(50)) && capped.ends_with(&"b".repeat(50)),
        "{capped}"
    );
    assert!(capped.contains("[… 900 of 1000 bytes cut …]"), "{capped}");
    let died = &deaths["died"];
    assert_eq!(died["is_error"], true);
    assert!(text(died).contains("exited with code 3"), "{died}");
    assert!(text(died).contains("out of cheese"), "its stderr: {died}");
    assert!(
        stderr.contains("fault-server: out of cheese"),
        "the server's stderr reaches the proxy's: {stderr}"
    );
    assert_eq!(text(&deaths["restarted"]), "after a restart");
    assert_eq!(deaths["died_again"]["is_error"], true);
    let quarantined = &deaths["quarantined"];
    assert_eq!(quarantined["is_error"], true);
    assert!(text(quarantined).contains("kept dying"), "{quarantined}");
    assert_eq!(deaths["names_after"], json!([]), "its tools left the list");
    assert!(
        eventually(Duration::from_secs(3), || processes_with(&marker)
            .is_empty()),
        "no server left: {:?}",
        processes_with(&marker)
    );
}

/// A proxy in front of the fault server, past its handshake, and the
/// server's pid.
fn started_proxy(marker: &str) -> (Child, u32) {
    let server = fault_server();
    let mut proxy = Command::new(PROXY)
        .args(["proxy", "--", node()])
        .arg(&server)
        .arg(marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let mut stdin = proxy.stdin.take().expect("piped");
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "test", "version": "1" } } });
    writeln!(stdin, "{initialize}").expect("the proxy reads");
    let mut lines = BufReader::new(proxy.stdout.take().expect("piped")).lines();
    let answer = lines.next().expect("an answer").expect("a line");
    // The handshake went through, naming the server behind the proxy.
    assert!(answer.contains("fault-server"), "{answer}");
    proxy.stdin = Some(stdin);
    let pids = processes_with(marker);
    let server = pids
        .into_iter()
        .find(|&pid| pid != proxy.id())
        .expect("the server runs");
    (proxy, server)
}

#[test]
fn the_server_dies_with_the_proxy_when_its_stdin_closes() {
    let marker = format!("proxy-stdin-{}", std::process::id());
    let (mut proxy, server) = started_proxy(&marker);
    drop(proxy.stdin.take());
    ends_well_taking_its_server(proxy, server);
}

#[test]
fn the_server_dies_with_the_proxy_on_sigterm() {
    let marker = format!("proxy-sigterm-{}", std::process::id());
    let (proxy, server) = started_proxy(&marker);
    let status = Command::new("kill")
        .args(["-TERM", &proxy.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    ends_well_taking_its_server(proxy, server);
}

/// Waits for `proxy` to end, which it must do with success, and checks
/// that `server` did not outlive it.
fn ends_well_taking_its_server(mut proxy: Child, server: u32) {
    let status = proxy.wait().expect("the proxy ends");
    assert!(status.success(), "{status}");
    assert!(
        eventually(Duration::from_secs(3), || !import_support::alive(server)),
        "the server outlived the proxy"
    );
}

#[test]
fn a_bad_policy_file_is_a_clear_error_and_exit_code_2() {
    let policy = write_file(
        "proxy-bad-policy.toml",
        "[[rule]]\ntool = \"x\"\naction = \"perhaps\"\n",
    );
    let output = Command::new(PROXY)
        .args(["proxy", "--policy"])
        .arg(&policy)
        .args(["--", "/bin/true"])
        .stdin(Stdio::null())
        .output()
        .expect("the proxy runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Where the mistake is, that line quoted, and what is wrong with it.
    assert!(
        stderr.contains("TOML parse error at line 3, column 10\n"),
        "{stderr}"
    );
    assert!(stderr.contains("3 | action = \"perhaps\"\n"), "{stderr}");
    assert!(
        stderr.contains("unknown variant `perhaps`, expected one of `allow`, `ask`, `deny`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&policy.display().to_string()),
        "names the file: {stderr}"
    );

    let output = Command::new(PROXY)
        .args(["proxy", "--timeout", "soon", "--", "/bin/true"])
        .stdin(Stdio::null())
        .output()
        .expect("the proxy runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("invalid value 'soon' for '--timeout <MS>'"),
        "{stderr}"
    );
}
