//! The official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! judging rho's import, the client side of rho-mcp, at each revision rho
//! speaks: 2025-11-25 (`initialize`, sessions) and 2026-07-28 (no
//! handshake, each request carries its revision and capabilities).
//!
//! The suite judges a client by running it as a program against a test
//! server of its own, once per scenario. This test binary is that program
//! too (it has no libtest harness): run by `cargo test`, it runs the suite
//! with itself as the client; run by the suite (which sets
//! `MCP_CONFORMANCE_SCENARIO` and passes the server's URL), it imports the
//! server as a rho source and does what a host would in that scenario:
//! call its tools through the registry. A scenario that fails must be
//! listed, with its reason, in `conformance/baseline-client-<revision>.yml`;
//! the suite fails the run both for a failure not listed and for a listed
//! scenario that passes.

mod import_support;
#[path = "conformance/judge.rs"]
mod judge;

use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Answerer, Authorize, Handshake, McpSource, OAuth};
use rho_mcp::rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction, InputRequest};
use rho_mcp::{Answer, Answers, Questions};
use rho_registry::ToolRegistry;
use rho_tool_core::{Runner, ToolContext, async_trait};
use serde_json::{Value, json};

/// The one test this binary holds, named as libtest would list it.
const TEST: &str = "the_suite_passes_rho_s_import_but_for_its_baseline";

fn main() {
    if let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") {
        std::process::exit(act(&scenario));
    }
    // Run by cargo: behave as libtest does towards `--list` and a filter.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--list") {
        println!("{TEST}: test");
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|arg| !arg.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|filter| TEST.contains(filter.as_str())) {
        return;
    }
    judge_client();
}

/// The revisions the client is judged at, each with its own baseline.
const REVISIONS: &[&str] = &["2025-11-25", "2026-07-28"];

/// Runs every client scenario of the suite at each revision (only the one
/// in `RHO_CONFORMANCE_REVISION` when that is set), with this program as
/// the client, and fails naming every check that failed outside the
/// revision's baseline.
fn judge_client() {
    let client = std::env::current_exe().expect("the test knows its own path");
    let client = client.to_str().expect("a target path in UTF-8");
    assert!(
        !client.contains(' '),
        "the suite splits its client command at spaces, and this test's path has one: {client}"
    );
    let only: Option<String> = std::env::var("RHO_CONFORMANCE_REVISION").ok();
    for revision in REVISIONS
        .iter()
        .filter(|r| only.as_deref().is_none_or(|o| o == **r))
    {
        let judged = judge::Judged::new("client", revision);
        let disagreed: Vec<String> = judged
            .run(&[
                "client",
                "--command",
                client,
                "--suite",
                "all",
                "--spec-version",
                revision,
            ])
            .into_iter()
            .collect();
        judged.conclude(&format!("rho's import at {revision}"), &disagreed);
        println!("the conformance suite agrees with rho's import at {revision}");
    }
}

/// Acts as the client of `scenario` against the server whose URL is the
/// last argument: the exit code the suite reads.
fn act(scenario: &str) -> i32 {
    let Some(url) = std::env::args().next_back() else {
        eprintln!("no server URL");
        return 2;
    };
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let handshake = match revision.as_str() {
        "2026-07-28" => Handshake::Discover,
        _ => Handshake::Initialize,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let registry = ToolRegistry::new();
        let source = match McpSource::http("server", url)
            .handshake(handshake)
            .oauth(oauth())
            .answerer(Approving)
            .timeout(Duration::from_secs(10))
            .connect(&registry)
            .await
        {
            Ok(source) => source,
            Err(error) => {
                eprintln!("import failed: {error}");
                return 1;
            }
        };
        let runner = Runner::new(TokioExecutor::current().expect("a runtime"));
        let calls = calls(scenario, &registry);
        let mut failed = 0;
        for (tool, arguments) in calls {
            let end = import_support::call(&registry, &runner, &tool, arguments).await;
            eprintln!("{tool}: {:?}: {}", end.outcome, end.result.text());
            if end.result.is_error {
                failed += 1;
            }
        }
        source.close();
        i32::from(failed > 0)
    })
}

/// The calls a host makes in `scenario`, from the tools the registry
/// imported.
fn calls(scenario: &str, registry: &ToolRegistry) -> Vec<(String, Value)> {
    let tools = registry.tools();
    let named = |name: &str| tools.iter().find(|tool| tool.name == name);
    match scenario {
        // The handshake and the listing are the scenario.
        "initialize" | "json-schema-ref-no-deref" | "request-metadata" => Vec::new(),
        "tools_call" => vec![("add_numbers".into(), json!({"a": 2, "b": 3}))],
        "sse-retry" => vec![("test_reconnection".into(), json!({}))],
        // The schema as rho imported it goes back to the server, which
        // checks that nothing of JSON Schema 2020-12 was lost on the way.
        "json-schema-2020-12-preservation" => named("json_schema_2020_12_tool")
            .map(|tool| {
                vec![(
                    "json_schema_echo".into(),
                    json!({"schema": tool.parameters}),
                )]
            })
            .unwrap_or_default(),
        "http-standard-headers" => tools
            .iter()
            .map(|tool| (tool.name.clone(), json!({})))
            .collect(),
        // The suite names the calls and their arguments.
        "http-custom-headers" => context()["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|call| {
                (
                    call["name"].as_str().unwrap_or_default().to_owned(),
                    call["arguments"].clone(),
                )
            })
            .collect(),
        // Every tool rho imported is called: one whose schema names
        // headers HTTP cannot carry must not have been imported.
        "http-invalid-tool-headers" => tools
            .iter()
            .map(|tool| (tool.name.clone(), json!({"region": "us-west1"})))
            .collect(),
        "sep-2322-client-request-state" => [
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ]
        .iter()
        .map(|tool| ((*tool).to_owned(), json!({})))
        .collect(),
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults".into(), json!({}))]
        }
        // The authorization scenarios: a host calls the server's tools.
        _ => tools
            .iter()
            .map(|tool| (tool.name.clone(), json!({})))
            .collect(),
    }
}

/// The OAuth a host sets up for the suite's authorization servers: rho's
/// name, the client of the scenario's context when it names one, the
/// suite's client ID metadata document, and [`Headless`] for its user.
fn oauth() -> OAuth {
    let context = context();
    let mut oauth = OAuth::new("http://localhost:3000/callback", Headless)
        .client_metadata_url("https://conformance-test.local/client-metadata.json");
    if let Some(id) = context["client_id"].as_str() {
        let secret = context["client_secret"].as_str().map(str::to_owned);
        oauth = oauth.preregistered(id, secret);
    }
    oauth
}

/// A user who approves at once: the suite's authorization server redirects
/// straight back with a code, so following its page's first redirect is
/// the approval. (A desktop host opens the page in a browser instead and
/// listens on its redirect URI.)
struct Headless;

#[async_trait]
impl Authorize for Headless {
    async fn authorize(&self, url: String) -> Result<String, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| error.to_string())?;
        let page = client
            .get(&url)
            .send()
            .await
            .map_err(|error| error.to_string())?;
        page.headers()
            .get(reqwest::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "the authorization page answered {} with no redirect",
                    page.status()
                )
            })
    }
}

/// A host whose user accepts every form the server shows: each field
/// filled with its default, or a plain value of its type (`true` for a
/// yes-or-no). A real host shows the form; the suite checks what rho
/// carries: the questions out, the answers and the server's state back.
struct Approving;

#[async_trait]
impl Answerer for Approving {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::builder().enable_elicitation().build()
    }

    async fn answer(
        &self,
        questions: Questions,
        _call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        let mut answers = Answers::default();
        for (key, request) in questions.requests() {
            let InputRequest::Elicitation(elicit) = request else {
                return Err(format!("`{key}` is not a question for the user"));
            };
            let asked = serde_json::to_value(&elicit.params).map_err(|e| e.to_string())?;
            let mut form = serde_json::Map::new();
            let fields = asked["requestedSchema"]["properties"].as_object();
            for (name, field) in fields.into_iter().flatten() {
                let value =
                    field
                        .get("default")
                        .cloned()
                        .unwrap_or_else(|| match field["type"].as_str() {
                            Some("boolean") => json!(true),
                            Some("integer" | "number") => json!(0),
                            _ => json!(""),
                        });
                form.insert(name.clone(), value);
            }
            let accepted = ElicitResult::new(ElicitationAction::Accept).with_content(form.into());
            answers.insert(key, Answer::Elicit(accepted));
        }
        Ok(answers)
    }
}

/// The scenario's data (`MCP_CONFORMANCE_CONTEXT`), or null.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}
