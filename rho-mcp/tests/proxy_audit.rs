//! The proxy's policy gate and audit log in process, without peers: a
//! registry served with `PolicyGate` and `AuditLog`, driven with raw
//! JSON-RPC lines. What the Python tests cannot see: the arguments logged
//! only when asked, the output cap's count, a refusal before the policy,
//! an `ask` the policy file's allowances answer.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::McpServer;
use rho_mcp::proxy::{AuditLog, PolicyGate, policy_from_toml};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Runner, Tool, ToolContext, ToolOutput, async_trait};
use rho_turn::OutputCap;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Answers `text` repeated `times` times.
struct Repeat;

#[async_trait]
impl Tool for Repeat {
    fn name(&self) -> &str {
        "repeat"
    }
    fn description(&self) -> &str {
        "Repeats `text`."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object", "required": ["text", "times"],
                "properties": { "text": { "type": "string" }, "times": { "type": "integer" } } })
    }
    async fn run(&self, args: Value, _cx: ToolContext) -> ToolOutput {
        let times = usize::try_from(args["times"].as_u64().unwrap_or(1)).unwrap_or(1);
        ToolOutput::text(args["text"].as_str().unwrap_or_default().repeat(times))
    }
}

/// A writer whose bytes the test reads afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serves `repeat` under `policy`, makes `calls` (name, arguments) one
/// after the other, and gives the answers and the audit log's lines.
async fn run(
    policy: &str,
    with_arguments: bool,
    calls: &[(&str, Value)],
) -> (Vec<Value>, Vec<Value>) {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("builtin"))
        .and_then(|source| source.add(Arc::new(Repeat)))
        .expect("one tool");
    let policy = policy_from_toml(policy).expect("a valid policy");
    let gate = PolicyGate::new(policy.gate).with_allowances(policy.allowances);
    let log = Shared::default();
    let audit = AuditLog::to_writer(log.clone())
        .with_arguments(with_arguments)
        .with_gate(&gate);
    let asks = gate.elicitation();
    // As the proxy wires it: the gate's approver asks the client, or
    // records that nobody could be asked.
    let approver = gate.approver();
    let runner = Runner::new(TokioExecutor::current().expect("tokio"))
        .with_gate(Arc::new(gate))
        .with_approver(approver);
    let server = McpServer::new(runner, registry)
        .with_elicitation(asks)
        .with_output_cap(OutputCap::bytes(10))
        .with_call_observer(Arc::new(audit));

    let (client, server_end) = tokio::io::duplex(64 << 10);
    let (from_client, to_client) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(from_client, to_client).await });
    let (reader, mut writer) = tokio::io::split(client);
    let mut lines = BufReader::new(reader).lines();
    let send = |message: Value| format!("{message}\n");
    writer
        .write_all(
            send(
                json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" } } }),
            )
            .as_bytes(),
        )
        .await
        .expect("writes");
    lines.next_line().await.expect("reads").expect("an answer");
    writer
        .write_all(
            send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).as_bytes(),
        )
        .await
        .expect("writes");
    let mut answers = Vec::new();
    for (id, (name, arguments)) in calls.iter().enumerate() {
        let call = json!({ "jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
                           "params": { "name": name, "arguments": arguments } });
        writer
            .write_all(send(call).as_bytes())
            .await
            .expect("writes");
        let line = lines.next_line().await.expect("reads").expect("an answer");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        answers.push(answer["result"].clone());
    }
    drop(writer);
    drop(lines);
    let _ = serving.await;
    let text = String::from_utf8(log.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
        .expect("UTF-8");
    let audit = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    (answers, audit)
}

const POLICY: &str = r#"
default = "allow"
[[rule]]
tool = "rep*"
action = "deny"
reason = "not today"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_logged_only_when_asked_and_the_cap_is_counted() {
    let calls = [("repeat", json!({ "text": "ab", "times": 20 }))];
    let (answers, audit) = run("default = \"allow\"", false, &calls).await;
    let text = answers[0]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("[… 30 of 40 bytes cut …]"), "{text}");
    assert_eq!(audit.len(), 1);
    let line = &audit[0];
    assert_eq!(line["outcome"], "succeeded");
    assert_eq!(
        (line["bytes"].clone(), line["cut_bytes"].clone()),
        (json!(10), json!(30))
    );
    assert_eq!(
        line["argument_bytes"],
        json!({ "text": "ab", "times": 20 }).to_string().len()
    );
    assert!(line.get("arguments").is_none(), "{line}");
    assert_eq!(
        (line["rule"].clone(), line["action"].clone()),
        (Value::Null, json!("allow"))
    );

    let (_, audit) = run("default = \"allow\"", true, &calls).await;
    assert_eq!(audit[0]["arguments"], json!({ "text": "ab", "times": 20 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_names_its_rule_and_a_refusal_never_reaches_the_policy() {
    let calls = [
        ("repeat", json!({ "text": "x", "times": 1 })),
        ("repeet", json!({})),
        ("repeat", json!({ "text": 3 })),
    ];
    let (answers, audit) = run(POLICY, false, &calls).await;
    let denied = answers[0]["content"][0]["text"].as_str().expect("text");
    assert!(
        denied.contains(
            r#"the proxy's policy denies calls of `repeat` (rule 1 (tool "rep*")): not today"#
        ),
        "{denied}"
    );
    assert_eq!(answers[0]["isError"], true);
    let outcomes: Vec<(&str, Value)> = audit
        .iter()
        .map(|line| {
            (
                line["outcome"].as_str().expect("outcome"),
                line["rule"].clone(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("denied", json!(1)),
            ("refused", Value::Null),
            ("refused", Value::Null)
        ]
    );
    assert_eq!(
        audit[0]["denial"],
        json!(denied.trim_start_matches("tool `repeat` was not run: the gate denied it: "))
    );
    assert_eq!(
        audit[1]["approved"],
        Value::Null,
        "never reached the policy"
    );
}

/// The policy asks about every call, and the client cannot be asked; the
/// file's second allowance answers for `repeat` with `text = "ab"`, so
/// that call runs, the log naming the allowance, and the other is denied.
/// The tool has no hints, so it is destructive: `scoped` lets a narrow
/// allowance cover it, and the whole-tool one stays out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_the_policy_files_allowances_answer_runs_without_asking() {
    const ALLOWING: &str = r#"
default = "ask"

[allowances]
destructive_tools = "scoped"
allow = [
    { tool = "repeat", scope = "tool" },
    { tool = "repeat", scope = "fields", fields = { text = "ab" } },
]
"#;
    let calls = [
        ("repeat", json!({ "text": "ab", "times": 2 })),
        ("repeat", json!({ "text": "cd", "times": 2 })),
    ];
    let (answers, audit) = run(ALLOWING, false, &calls).await;
    assert_eq!(answers[0]["content"][0]["text"], "abab", "{}", answers[0]);
    assert_eq!(answers[1]["isError"], true, "{}", answers[1]);
    let fields = |line: &Value| {
        (
            line["outcome"].clone(),
            line["action"].clone(),
            line["asked"].clone(),
            line["approved"].clone(),
            line.get("allowance").cloned(),
        )
    };
    assert_eq!(
        fields(&audit[0]),
        (
            json!("succeeded"),
            json!("ask"),
            json!(false),
            json!(true),
            Some(json!(2))
        )
    );
    assert_eq!(
        fields(&audit[1]),
        // Nobody was asked: this client cannot be.
        (
            json!("denied"),
            json!("ask"),
            json!(false),
            json!(false),
            None
        )
    );
}

#[test]
fn a_mistake_in_the_allowances_table_is_named_where_it_is() {
    let error =
        policy_from_toml("[allowances]\nallow = [{ tool = \"x\", scope = \"everything\" }]\n")
            .expect_err("an unknown scope");
    let text = error.to_string();
    assert!(text.contains("line 2"), "{text}");
    assert!(text.contains("everything"), "{text}");
    let error =
        policy_from_toml("[allowances]\ndestructive = \"always\"\n").expect_err("an unknown key");
    assert!(error.to_string().contains("destructive"), "{error}");
}
