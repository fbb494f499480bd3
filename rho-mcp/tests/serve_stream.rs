//! rho's server over a byte stream (rmcp's transport and service, with
//! rho's thin wrapper), driven with raw JSON-RPC lines.
//!
//! - Progress reaches the client before its call's answer, never after.
//! - A call the client cancels is aborted and gets no answer; a second
//!   request under the id of one in flight is neither run nor answered;
//!   the session serves on.
//! - A call sent before the handshake is done is still answered.
//! - A client that leaves has its calls aborted and answered; one that
//!   also stopped reading still has its session end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::rmcp::model::{ListPromptsResult, PaginatedRequestParams, ServerCapabilities};
use rho_mcp::rmcp::service::RequestContext;
use rho_mcp::rmcp::{ErrorData, RoleServer};
use rho_mcp::serve::McpFeatures;
use rho_mcp::{CallObserver, McpServer, ServeError, ServedCall};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Outcome, Runner, Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};
use tokio::io::{DuplexStream, duplex, split};
use tokio::task::JoinHandle;

/// Reports `steps` partial results, then answers "done".
struct Steps;

#[async_trait]
impl Tool for Steps {
    fn name(&self) -> &str {
        "steps"
    }
    fn description(&self) -> &str {
        "Reports `steps` partial results, then answers."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object", "properties": { "steps": { "type": "integer" } } })
    }
    async fn run(&self, args: Value, cx: ToolContext) -> ToolOutput {
        let steps = args["steps"].as_u64().unwrap_or(1);
        for step in 1..=steps {
            let _ = cx.update(&json!({ "progress": step, "total": steps }));
        }
        ToolOutput::text("done")
    }
}

/// Never answers; counts its runs started and dropped.
#[derive(Default)]
struct Hang {
    started: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

/// Counts a drop of the run it lives in.
struct CountsDrop(Arc<AtomicUsize>);

impl Drop for CountsDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Tool for Hang {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> &str {
        "Never answers."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object" })
    }
    async fn run(&self, _args: Value, _cx: ToolContext) -> ToolOutput {
        let _dropped = CountsDrop(Arc::clone(&self.dropped));
        self.started.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        ToolOutput::text("never")
    }
}

/// Waits (at most 5 s) until `done` says yes.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 5 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The client's ends of a served session.
struct Client {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    /// The `hang` tool served, to count its runs.
    hang: Arc<Hang>,
    /// The server's session, until it ends.
    serving: JoinHandle<Result<(), ServeError>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("writes");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .expect("reads")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    /// Reads lines up to the answer to `id`, and gives them all.
    async fn until_answer(&mut self, id: u64) -> Vec<Value> {
        let mut read = Vec::new();
        loop {
            let message = self.next().await;
            let done = message["id"] == id && message.get("method").is_none();
            read.push(message);
            if done {
                return read;
            }
        }
    }

    async fn initialize(&mut self) {
        self.send(
            json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" } } }),
        )
        .await;
        self.until_answer(0).await;
    }

    async fn initialized(&mut self) {
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }

    async fn call(&mut self, id: u64, name: &str, arguments: Value, progress: Option<&str>) {
        let mut params = json!({ "name": name, "arguments": arguments });
        if let Some(token) = progress {
            params["_meta"] = json!({ "progressToken": token });
        }
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }))
            .await;
    }
}

/// Hears how each call ended.
struct Ends(Arc<Mutex<Vec<Outcome>>>);

impl CallObserver for Ends {
    fn ended(&self, served: &ServedCall<'_>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(served.end.outcome);
    }
}

/// Serves `steps` and `hang` over an in-process pipe.
fn serve() -> Client {
    serve_observed(None)
}

/// Serves `steps` and `hang` over an in-process pipe, each call's end told
/// to `observer`.
fn serve_observed(observer: Option<Arc<Ends>>) -> Client {
    serve_with(observer, 64 << 10)
}

/// Serves `steps` and `hang` over an in-process pipe that holds `room`
/// bytes each way, each call's end told to `observer`.
fn serve_with(observer: Option<Arc<Ends>>, room: usize) -> Client {
    serve_full(observer, room, None)
}

/// As [`serve_with`], with the host's `features` beside the tools.
fn serve_full(
    observer: Option<Arc<Ends>>,
    room: usize,
    features: Option<Arc<dyn McpFeatures>>,
) -> Client {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("builtin"))
        .expect("a source");
    source.add(Arc::new(Steps)).expect("steps");
    let hang = Arc::new(Hang::default());
    source
        .add(Arc::clone(&hang) as Arc<dyn Tool>)
        .expect("hang");
    let runner = Runner::new(TokioExecutor::current().expect("tokio"));
    let mut server = McpServer::new(runner, registry);
    if let Some(observer) = observer {
        server = server.with_call_observer(observer);
    }
    if let Some(features) = features {
        server = server.with_features(features);
    }
    let (client, server_end) = duplex(room);
    let (from_client, to_client) = split(server_end);
    let serving = tokio::spawn(async move { server.serve_io(from_client, to_client).await });
    let (reader, writer) = split(client);
    Client {
        lines: BufReader::new(reader).lines(),
        writer,
        hang,
        serving,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_progress_notification_comes_before_its_calls_answer() {
    let mut client = serve();
    client.initialize().await;
    client.initialized().await;
    for id in 1..=20 {
        client
            .call(id, "steps", json!({ "steps": 10 }), Some("p"))
            .await;
        let read = client.until_answer(id).await;
        let (answer, progress) = read.split_last().expect("the answer");
        assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
        // Shaped for the version negotiated (2025-06-18), as rmcp shapes it.
        assert!(answer["result"].get("resultType").is_none(), "{answer}");
        let steps: Vec<f64> = progress
            .iter()
            .map(|message| {
                assert_eq!(message["method"], "notifications/progress", "{message}");
                message["params"]["progress"].as_f64().expect("a number")
            })
            .collect();
        assert_eq!(steps, (1..=10).map(f64::from).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_aborted_and_answered_with_nothing() {
    let ends = Arc::new(Mutex::new(Vec::new()));
    let mut client = serve_observed(Some(Arc::new(Ends(Arc::clone(&ends)))));
    client.initialize().await;
    client.initialized().await;
    client.call(1, "hang", json!({}), None).await;
    eventually("the tool to start", || {
        client.hang.started.load(Ordering::SeqCst) == 1
    })
    .await;
    // The same id again while it is in flight: neither run nor answered.
    client.call(1, "hang", json!({}), None).await;
    client
        .send(
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": { "requestId": 1, "reason": "changed my mind" } }),
        )
        .await;
    let ended = || ends.lock().unwrap_or_else(PoisonError::into_inner).clone();
    eventually("the call to end", || !ended().is_empty()).await;
    eventually("the tool's run to be dropped", || {
        client.hang.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        ended(),
        [Outcome::Aborted],
        "aborted, not charged to the tool"
    );
    // Whatever it would have answered was written by now; the session
    // serves on, and nothing for call 1 came before this call's answer.
    client.call(3, "steps", json!({ "steps": 1 }), None).await;
    let read = client.until_answer(3).await;
    assert!(
        read.iter().all(|message| message["id"] != 1),
        "the cancelled call was answered: {read:?}"
    );
    assert_eq!(ended(), [Outcome::Aborted, Outcome::Succeeded]);
    assert_eq!(
        client.hang.started.load(Ordering::SeqCst),
        1,
        "the second call under the same id never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_before_the_handshake_is_done_is_still_answered() {
    let mut client = serve();
    client.initialize().await;
    client
        .call(1, "steps", json!({ "steps": 2 }), Some("early"))
        .await;
    let read = client.until_answer(1).await;
    let answer = read.last().expect("the answer");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
    client.initialized().await;
    client.call(2, "steps", json!({ "steps": 2 }), None).await;
    let read = client.until_answer(2).await;
    assert_eq!(read.len(), 1, "no progress asked for: {read:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_has_its_calls_aborted_answered_and_heard_of_before_the_session_ends()
{
    let ends = Arc::new(Mutex::new(Vec::new()));
    let mut client = serve_observed(Some(Arc::new(Ends(Arc::clone(&ends)))));
    client.initialize().await;
    client.initialized().await;
    client.call(1, "hang", json!({}), None).await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }))
        .await;
    client.until_answer(2).await;
    client.writer.shutdown().await.expect("closes");
    // The aborted call is still answered before the stream closes, as
    // rmcp answers its handlers' requests then.
    let mut read = Vec::new();
    while let Ok(Some(line)) = client.lines.next_line().await {
        read.push(serde_json::from_str::<Value>(&line).expect("JSON"));
    }
    let answer = read
        .iter()
        .find(|message| message["id"] == 1)
        .unwrap_or_else(|| panic!("no answer to the call: {read:?}"));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let Client { serving, .. } = client;
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the session ends within 10 s")
        .expect("joins")
        .expect("ends well");
    assert_eq!(
        *ends.lock().unwrap_or_else(PoisonError::into_inner),
        [Outcome::Aborted],
        "the call's end was heard before the session ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_more_than_a_progress_token_in_its_meta_is_answered() {
    let mut client = serve();
    client.initialize().await;
    client.initialized().await;
    client
        .send(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "steps", "arguments": { "steps": 1 },
            "_meta": { "progressToken": "t", "com.example/trace": "abc" } } }),
        )
        .await;
    let read = client.until_answer(1).await;
    let answer = read.last().expect("the answer");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_and_leaves_still_ends_its_session() {
    let mut client = serve_with(None, 4096);
    client.initialize().await;
    client.initialized().await;
    client.call(1, "hang", json!({}), None).await;
    eventually("the tool to start", || {
        client.hang.started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Answers nobody reads fill the pipe: the writers block on it.
    for id in 2..400 {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }))
            .await;
    }
    client.writer.shutdown().await.expect("closes");
    let Client { serving, lines, .. } = client;
    // Still not reading: the session must end all the same.
    let ended = tokio::time::timeout(Duration::from_secs(30), serving).await;
    drop(lines);
    ended
        .expect("the session ends within 30 s")
        .expect("joins")
        .expect("ends well");
}

/// Prompts whose listing panics the first time, with a payload that is
/// not a string the second.
#[derive(Default)]
struct BrokenPrompts {
    asked: AtomicUsize,
}

#[async_trait]
impl McpFeatures for BrokenPrompts {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder().enable_prompts().build()
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        match self.asked.fetch_add(1, Ordering::SeqCst) {
            0 => panic!("the host's prompts broke"),
            1 => std::panic::panic_any(42_u8),
            _ => Ok(ListPromptsResult::default()),
        }
    }
}

/// The host's resources and prompts are served beside the tools (and
/// declared at `initialize`); a panic in the host's code answers that
/// request with an internal error naming it, whatever its payload, and
/// the session serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_features_are_served_and_their_panics_are_answers() {
    let mut client = serve_full(None, 64 << 10, Some(Arc::new(BrokenPrompts::default())));
    client
        .send(
            json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" } } }),
        )
        .await;
    let read = client.until_answer(0).await;
    let capabilities = &read.last().expect("the answer")["result"]["capabilities"];
    assert!(capabilities["prompts"].is_object(), "{capabilities}");
    assert!(capabilities["tools"].is_object(), "{capabilities}");
    assert!(capabilities.get("resources").is_none(), "{capabilities}");
    client.initialized().await;
    for id in 1..=2 {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "prompts/list" }))
            .await;
        let answer = client.until_answer(id).await.pop().expect("the answer");
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(message.contains("prompts/list"), "{message}");
        if id == 1 {
            assert!(message.contains("the host's prompts broke"), "{message}");
        }
    }
    client
        .send(json!({ "jsonrpc": "2.0", "id": 3, "method": "prompts/list" }))
        .await;
    let answer = client.until_answer(3).await.pop().expect("the answer");
    assert_eq!(answer["result"]["prompts"], json!([]), "{answer}");
    // Not served: resources.
    client
        .send(json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/list" }))
        .await;
    let answer = client.until_answer(4).await.pop().expect("the answer");
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    client.call(5, "steps", json!({ "steps": 1 }), None).await;
    let answer = client.until_answer(5).await.pop().expect("the answer");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
}
