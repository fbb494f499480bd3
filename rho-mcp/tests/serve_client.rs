//! A served tool's way back to its client (`rho_mcp::McpClient`), driven by
//! rmcp's own client over an in-process pipe at 2025-11-25: a question to
//! the client's user holds the call's clock, a request the client did not
//! offer is an error result naming it (and so is a requirement it did not
//! declare), log messages below the level the
//! client set are not sent, and a call not served over MCP finds no client.

#![allow(deprecated)] // logging and sampling: SEP-2577; see rho_mcp::McpClient

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::McpClient;
use rho_mcp::McpServer;
use rho_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, Implementation, LoggingLevel, LoggingMessageNotificationParam,
    ProtocolVersion, SamplingMessage, SetLevelRequestParams,
};
use rho_mcp::rmcp::service::{NotificationContext, RequestContext, RunningService};
use rho_mcp::rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Runner, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// How long the client's user takes to answer: longer than the tool's
/// timeout, so the call succeeds only if the clock waited.
const USER_TAKES: Duration = Duration::from_millis(600);
const TIMEOUT: Duration = Duration::from_millis(200);

/// What the tests' tool does with its client, by its name.
struct Asks(&'static str);

#[async_trait]
impl Tool for Asks {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "Reaches back to its client."
    }

    fn timeout(&self) -> Duration {
        TIMEOUT
    }

    async fn run(&self, _arguments: Value, context: ToolContext) -> ToolOutput {
        let Some(client) = McpClient::of(&context) else {
            return ToolOutput::error("no client");
        };
        match self.0 {
            "ask_user" => {
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "Your name?".into(),
                    requested_schema: ElicitationSchema::builder()
                        .required_string("name")
                        .build()
                        .expect("a form"),
                };
                match client.elicit(params).await {
                    Ok(answer) => ToolOutput::text(
                        answer
                            .content
                            .and_then(|content| content.get("name").cloned())
                            .unwrap_or_default()
                            .to_string(),
                    ),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            "require" => {
                let sampling = ClientCapabilities::builder().enable_sampling().build();
                match client.require(sampling).await {
                    Ok(()) => ToolOutput::text("the client samples"),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            "sample" => {
                let params =
                    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
                match client.create_message(params).await {
                    Ok(_) => ToolOutput::text("sampled"),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            _ => {
                for (level, text) in [
                    (LoggingLevel::Debug, "debug"),
                    (LoggingLevel::Info, "info"),
                    (LoggingLevel::Error, "error"),
                    (LoggingLevel::Emergency, "emergency"),
                ] {
                    if let Err(error) = client.log(level, Some("log"), json!(text)).await {
                        return ToolOutput::error(error.to_string());
                    }
                }
                ToolOutput::text("logged")
            }
        }
    }
}

/// rmcp's client at 2025-11-25, offering elicitation (answered after
/// [`USER_TAKES`]) but not sampling; it keeps the log messages it gets.
#[derive(Clone, Default)]
struct Person {
    logs: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("person", "1.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        tokio::time::sleep(USER_TAKES).await;
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({ "name": "Ada" }));
        Ok(answer)
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(params.data);
    }
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("asks"))
        .expect("a new source");
    for name in ["ask_user", "sample", "require", "log"] {
        source.add(Arc::new(Asks(name))).expect("a new name");
    }
    registry
}

/// Serves the registry on one end of a pipe; `person` is the client on
/// the other.
async fn connect(person: Person) -> RunningService<RoleClient, Person> {
    let (client_end, server_end) = tokio::io::duplex(64 << 10);
    let (from_client, to_client) = tokio::io::split(server_end);
    let server = McpServer::new(
        TokioExecutor::current().expect("a tokio runtime"),
        registry(),
    );
    tokio::spawn(async move {
        let _ = server.serve_io(from_client, to_client).await;
    });
    person
        .serve(tokio::io::split(client_end))
        .await
        .expect("the MCP handshake succeeds")
}

async fn call(client: &RunningService<RoleClient, Person>, tool: &'static str) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool))
        .await
        .expect("the call is answered")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|part| part.as_text())
        .map(|part| part.text.clone())
        .collect()
}

/// The user answers after three times the tool's timeout, and the call
/// still succeeds with the answer: the clock waited for the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_to_the_clients_user_holds_the_calls_clock() {
    let client = connect(Person::default()).await;
    let result = call(&client, "ask_user").await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "\"Ada\"");
}

/// The client offered no sampling: the tool's request ends with an error
/// result that names what and why, and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_client_did_not_offer_is_an_error_naming_it() {
    let client = connect(Person::default()).await;
    let result = call(&client, "sample").await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the client cannot be asked for sampling: the client did not offer it when it initialized"
    );
}

/// Before 2026-07-28 a requirement the client did not declare is only the
/// tool's to handle: `require` says what is missing, the request goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requirement_the_client_did_not_declare_is_an_error_naming_it() {
    let client = connect(Person::default()).await;
    let result = call(&client, "require").await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the client cannot be asked for what the call needs: it did not declare \
         {\"sampling\":{}}"
    );
}

/// Before the client sets a level every message reaches it; after it asks
/// for `error`, only `error` and more severe ones do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_below_the_clients_level_are_not_sent() {
    let person = Person::default();
    let logs = Arc::clone(&person.logs);
    let client = connect(person).await;
    // Sorted: rho sends them in order, but rmcp's client hands each
    // notification to its handler in a task of its own, so they may be
    // handled in any order.
    let taken = || {
        let mut taken = std::mem::take(&mut *logs.lock().unwrap_or_else(PoisonError::into_inner));
        taken.sort_by_key(Value::to_string);
        taken
    };
    // Notifications travel beside the answer: wait for `count` to arrive
    // (up to five seconds), then a little longer for any that should not.
    let settled = |count: usize| {
        let logs = Arc::clone(&logs);
        async move {
            for _ in 0..500 {
                if logs.lock().unwrap_or_else(PoisonError::into_inner).len() >= count {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };

    assert_eq!(text(&call(&client, "log").await), "logged");
    settled(4).await;
    assert_eq!(
        taken(),
        [
            json!("debug"),
            json!("emergency"),
            json!("error"),
            json!("info")
        ]
    );

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .expect("the level is set");
    assert_eq!(text(&call(&client, "log").await), "logged");
    settled(2).await;
    assert_eq!(taken(), [json!("emergency"), json!("error")]);
}

/// Started by a host's own runner, the same tool finds no client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_not_served_over_mcp_finds_no_client() {
    let runner = Runner::new(TokioExecutor::current().expect("a tokio runtime"));
    let end = runner
        .start(ToolCall::new("1", "log", json!({})), Arc::new(Asks("log")))
        .await;
    assert_eq!(end.result.text(), "no client");
}
