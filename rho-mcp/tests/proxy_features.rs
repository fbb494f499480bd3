//! A host's prompts and resources through the proxy, where the proxy does
//! more than carry them.
//!
//! A host's features may answer `prompts/get` or `resources/read` with
//! questions for its client (an input-required result, the 2026-07-28
//! way), which a client before 2026-07-28 cannot read: rho's server asks
//! that client on its session (`elicitation/create`) and asks the features
//! again with its answer and their state, so the client gets the prompt or
//! the resource in one answer, directly and through the proxy (on the
//! older client's own connection, where the server asks it so, or on a
//! 2026-07-28 connection, where the proxy's own server asks it). And a
//! request the client cancels is cancelled all the way: the proxy stops
//! waiting, tells the server, and the server's host stops working on it.
//!
//! The server is rho's own over HTTP serving a host's prompts and
//! resources (rmcp's types); the client is rmcp's, at 2025-11-25, reading
//! each answer once (`get_prompt_once`, `read_resource_once`: rmcp's own
//! retry would hide what the proxy sent).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::Handshake;
use rho_mcp::proxy::ProxyOptions;
use rho_mcp::rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InputRequest, InputRequiredResult, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities,
};
use rho_mcp::rmcp::service::{RequestContext, RunningService};
use rho_mcp::rmcp::transport::StreamableHttpClientTransport;
use rho_mcp::rmcp::{ClientHandler, ErrorData, RoleClient, RoleServer, ServiceExt};
use rho_mcp::{HttpOptions, HttpServer, McpFeatures, McpServer};
use rho_registry::ToolRegistry;
use rho_tool_core::async_trait;
use serde_json::{Value, json};

/// The state the server sends with its question and wants back.
const STATE: &str = "asked-for-a-name";

/// A host's prompt `greeting` and resource `note://mine`, each of which
/// asks its client for a name first, the 2026-07-28 way; and a prompt
/// `forever` that never comes, which sets `stopped` once its future is
/// dropped.
#[derive(Default)]
struct AsksForAName {
    stopped: Arc<AtomicBool>,
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl AsksForAName {
    /// The name the client gave, if this request carries the answer to
    /// the question and the state sent with it.
    fn answered(
        responses: Option<&rho_mcp::rmcp::model::InputResponses>,
        state: Option<&str>,
    ) -> Option<String> {
        let name = responses?
            .get("name")?
            .pointer("/content/name")?
            .as_str()?
            .to_owned();
        (state == Some(STATE)).then_some(name)
    }

    /// The question: an elicitation of one string field.
    fn question() -> InputRequiredResult {
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"],
            },
        }))
        .expect("a form");
        let mut asks = InputRequiredResult::from_input_requests(
            [(
                "name".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(form)),
            )]
            .into_iter()
            .collect(),
        );
        asks.request_state = Some(STATE.to_owned());
        asks
    }
}

#[async_trait]
impl McpFeatures for AsksForAName {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .build()
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == "forever" {
            let _stopped = SetOnDrop(self.stopped.clone());
            std::future::pending::<()>().await;
        }
        let answered = Self::answered(
            request.input_responses.as_ref(),
            request.request_state.as_deref(),
        );
        let Some(name) = answered else {
            return Ok(Self::question().into());
        };
        let result: GetPromptResult = serde_json::from_value(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Hello, {name}") } }]
        }))
        .expect("a prompt");
        Ok(result.into())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let answered = Self::answered(
            request.input_responses.as_ref(),
            request.request_state.as_deref(),
        );
        let Some(name) = answered else {
            return Ok(Self::question().into());
        };
        let result: ReadResourceResult = serde_json::from_value(json!({
            "contents": [{ "uri": request.uri, "mimeType": "text/plain", "text": format!("{name}'s note") }]
        }))
        .expect("a resource");
        Ok(result.into())
    }
}

/// rmcp's client at 2025-11-25; with `answers`, it offers elicitation and
/// answers "Ada", counting the questions.
#[derive(Clone)]
struct OlderClient {
    answers: bool,
    asked: Arc<AtomicUsize>,
}

impl ClientHandler for OlderClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.answers {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("older", "1.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({ "name": "Ada" }));
        Ok(answer)
    }
}

/// The host's server over HTTP.
async fn host_server(host: AsksForAName) -> HttpServer {
    McpServer::new(
        TokioExecutor::current().expect("a tokio runtime"),
        ToolRegistry::new(),
    )
    .with_features(Arc::new(host))
    .serve_http(HttpOptions::new())
    .await
    .expect("serves on loopback")
}

/// The host's server over HTTP, and `client` connected to a proxy in
/// front of it (over an in-process pipe).
async fn through_the_proxy(
    client: OlderClient,
    host: AsksForAName,
) -> (HttpServer, RunningService<RoleClient, OlderClient>) {
    through_a_proxy_speaking(client, host, Handshake::Either).await
}

/// [`through_the_proxy`], with the proxy greeting its server by
/// `handshake`.
async fn through_a_proxy_speaking(
    client: OlderClient,
    host: AsksForAName,
    handshake: Handshake,
) -> (HttpServer, RunningService<RoleClient, OlderClient>) {
    let server = host_server(host).await;
    let proxy = ProxyOptions::http(server.url())
        .handshake(handshake)
        .start()
        .await
        .expect("the proxy connects");
    let (client_end, proxy_end) = tokio::io::duplex(64 << 10);
    let (from_client, to_client) = tokio::io::split(proxy_end);
    tokio::spawn(async move {
        let _ = proxy.serve_io(from_client, to_client).await;
    });
    let running = client
        .serve(tokio::io::split(client_end))
        .await
        .expect("the MCP handshake succeeds");
    (server, running)
}

fn text_of(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("serialises")
}

/// The client's first answer is the prompt, and the resource: the proxy
/// asked it the server's question on its session, once each, and sent
/// the server its answer with the server's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_client_is_asked_the_servers_question_and_gets_the_prompt() {
    let asked = Arc::new(AtomicUsize::new(0));
    let (server, client) = through_the_proxy(
        OlderClient {
            answers: true,
            asked: asked.clone(),
        },
        AsksForAName::default(),
    )
    .await;

    gets_the_prompt_and_the_resource(&client, &asked, "through the proxy").await;

    client.cancel().await.expect("the client stops");
    server.shutdown().await.expect("the server stops");
}

/// The older client asked for the prompt and the resource, once each:
/// each is what the host gives for the name "Ada".
async fn gets_the_prompt_and_the_resource(
    client: &RunningService<RoleClient, OlderClient>,
    asked: &AtomicUsize,
    way: &str,
) {
    let prompt = client
        .get_prompt_once(GetPromptRequestParams::new("greeting"))
        .await
        .unwrap_or_else(|error| panic!("{way}: a prompt: {error}"));
    let GetPromptResponse::Complete(prompt) = prompt else {
        panic!("{way}: the client got the server's questions: {prompt:?}");
    };
    assert_eq!(
        text_of(&prompt)["messages"][0]["content"]["text"],
        "Hello, Ada",
        "{way}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1, "{way}");
    let resource = client
        .read_resource_once(ReadResourceRequestParams::new("note://mine"))
        .await
        .unwrap_or_else(|error| panic!("{way}: a resource: {error}"));
    let ReadResourceResponse::Complete(resource) = resource else {
        panic!("{way}: the client got the server's questions: {resource:?}");
    };
    assert_eq!(
        text_of(&resource)["contents"][0]["text"],
        "Ada's note",
        "{way}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2, "{way}");
}

/// rho's own server asks an older client the questions its host's
/// features answer with, the older way, by itself: the client connected
/// to it directly gets the prompt and the resource in one answer each (it
/// got an error saying such an answer needs 2026-07-28). A proxy that
/// speaks only 2026-07-28 to that server gets the questions as they are,
/// and its own server asks its older client the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rhos_server_asks_an_older_client_its_hosts_questions_directly_and_through_a_2026_proxy() {
    let asked = Arc::new(AtomicUsize::new(0));
    let server = host_server(AsksForAName::default()).await;
    let client = OlderClient {
        answers: true,
        asked: asked.clone(),
    }
    .serve(StreamableHttpClientTransport::from_uri(server.url()))
    .await
    .expect("the MCP handshake succeeds");
    gets_the_prompt_and_the_resource(&client, &asked, "directly").await;
    client.cancel().await.expect("the client stops");
    server.shutdown().await.expect("the server stops");

    let asked = Arc::new(AtomicUsize::new(0));
    let (server, client) = through_a_proxy_speaking(
        OlderClient {
            answers: true,
            asked: asked.clone(),
        },
        AsksForAName::default(),
        Handshake::Discover,
    )
    .await;
    gets_the_prompt_and_the_resource(&client, &asked, "through a 2026-07-28 proxy").await;
    client.cancel().await.expect("the client stops");
    server.shutdown().await.expect("the server stops");
}

/// An older client that offers no elicitation cannot be asked: its
/// request ends with an error saying the server's question went
/// unanswered, and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_client_that_cannot_answer_gets_an_error_saying_so() {
    let asked = Arc::new(AtomicUsize::new(0));
    let (server, client) = through_the_proxy(
        OlderClient {
            answers: false,
            asked: asked.clone(),
        },
        AsksForAName::default(),
    )
    .await;

    let refused = client
        .get_prompt_once(GetPromptRequestParams::new("greeting"))
        .await
        .expect_err("no prompt without a name");
    let said = refused.to_string();
    assert!(
        said.contains("asked the client a question that was not answered")
            && said.contains("elicitation"),
        "{said}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);

    client.cancel().await.expect("the client stops");
    server.shutdown().await.expect("the server stops");
}

/// A `prompts/get` the client gives up on (rmcp sends
/// `notifications/cancelled` when the request's future is dropped) is
/// cancelled on the server behind the proxy too: the host's future for it
/// is dropped, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_client_cancels_stops_the_servers_work_on_it() {
    let host = AsksForAName::default();
    let stopped = host.stopped.clone();
    let (server, client) = through_the_proxy(
        OlderClient {
            answers: true,
            asked: Arc::default(),
        },
        host,
    )
    .await;

    let given_up = tokio::time::timeout(
        Duration::from_millis(300),
        client.get_prompt_once(GetPromptRequestParams::new("forever")),
    )
    .await;
    assert!(given_up.is_err(), "the prompt never comes: {given_up:?}");
    let began = Instant::now();
    while !stopped.load(Ordering::SeqCst) {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the server still works on the cancelled request 10 s later"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let prompt = client
        .get_prompt_once(GetPromptRequestParams::new("greeting"))
        .await
        .expect("the session goes on");
    assert!(
        matches!(prompt, GetPromptResponse::Complete(_)),
        "{prompt:?}"
    );

    client.cancel().await.expect("the client stops");
    server.shutdown().await.expect("the server stops");
}
