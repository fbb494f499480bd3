//! The streamable HTTP server's safety, checked with raw HTTP requests (a
//! browser's, an attacker's, a broken client's), on loopback.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, HttpServer, McpServer, ServeError};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Whether a `slow` call runs, and whether one was dropped.
#[derive(Default)]
struct Probe {
    running: AtomicBool,
    dropped: AtomicBool,
}

impl Probe {
    /// Whether a `slow` call runs, or does within `within`.
    async fn running_within(&self, within: Duration) -> bool {
        wait_until(|| self.running.load(Ordering::SeqCst), within).await
    }

    /// Whether a `slow` call was stopped (its future dropped), or is
    /// within `within`.
    async fn stopped_within(&self, within: Duration) -> bool {
        wait_until(|| self.dropped.load(Ordering::SeqCst), within).await
    }
}

/// Sleeps for a minute (unless stopped); `echo` answers at once.
struct Slow(Arc<Probe>);

struct Flag(Arc<Probe>);

impl Drop for Flag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a minute."
    }
    async fn run(&self, _args: Value, cx: ToolContext) -> ToolOutput {
        let _flag = Flag(self.0.clone());
        self.0.running.store(true, Ordering::SeqCst);
        cx.sleep(Duration::from_secs(60)).await;
        ToolOutput::text("done")
    }
}

struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Answers `ok`."
    }
    async fn run(&self, _args: Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

fn server(probe: &Arc<Probe>) -> McpServer<TokioExecutor> {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("test"))
        .expect("new")
        .add_all([
            Arc::new(Slow(probe.clone())) as Arc<dyn Tool>,
            Arc::new(Echo),
        ])
        .expect("new names");
    McpServer::new(TokioExecutor::current().expect("a runtime"), registry)
}

/// An HTTP response, read whole.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC message of the body: the body itself, or the last
    /// `data:` line of an event stream.
    fn message(&self) -> Value {
        if let Ok(json) = serde_json::from_str(&self.body) {
            return json;
        }
        self.body
            .lines()
            .rev()
            .filter_map(|line| line.strip_prefix("data: "))
            .find_map(|data| serde_json::from_str(data).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {self:?}"))
    }
}

/// A request's head (`Connection: close`), with the headers a client
/// sends unless `headers` give their own.
fn request_head(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    let has = |name: &str| {
        headers
            .iter()
            .any(|(key, _)| key.eq_ignore_ascii_case(name))
    };
    if !has("host") {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    if !has("content-type") {
        head.push_str("Content-Type: application/json\r\n");
    }
    if !has("accept") {
        head.push_str("Accept: application/json, text/event-stream\r\n");
    }
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Sends one request (`Connection: close`) and reads the whole response.
async fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let mut stream = TcpStream::connect(addr).await.expect("the server listens");
    let head = request_head(addr, method, headers, body);
    stream.write_all(head.as_bytes()).await.expect("sent");
    stream.write_all(body.as_bytes()).await.expect("sent");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {raw:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        headers,
        body,
    }
}

/// The body of a chunked response.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Opens a session as a client would; returns its id.
async fn open_session(http: &HttpServer, extra: &[(&str, &str)]) -> String {
    let response = request(http.local_addr(), "POST", extra, INITIALIZE).await;
    assert_eq!(response.status, 200, "{response:?}");
    let id = response
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let mut headers = extra.to_vec();
    headers.push(("mcp-session-id", &id));
    headers.push(("mcp-protocol-version", "2025-06-18"));
    let initialized = request(
        http.local_addr(),
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(initialized.status, 202, "{initialized:?}");
    id
}

fn call(id: u64, tool: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": {} } })
    .to_string()
}

async fn wait_until(what: impl Fn() -> bool, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if what() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    what()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_binds_loopback_unless_told_otherwise() {
    let http = server(&Arc::default())
        .serve_http(HttpOptions::new())
        .await
        .expect("serves");
    assert!(http.local_addr().ip().is_loopback(), "{http:?}");
    assert!(http.url().starts_with("http://127.0.0.1:") && http.url().ends_with("/mcp"));
    http.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_it_needs_a_bearer_token() {
    let everywhere: SocketAddr = "0.0.0.0:0".parse().expect("an address");
    let refused = server(&Arc::default())
        .serve_http(HttpOptions::new().bind(everywhere))
        .await
        .expect_err("no token, not loopback");
    assert!(matches!(refused, ServeError::Unsafe(_)), "{refused}");
    assert!(
        refused.to_string().contains("bearer token is required"),
        "{refused}"
    );
    let empty = server(&Arc::default())
        .serve_http(HttpOptions::new().with_bearer_token(""))
        .await
        .expect_err("an empty token");
    assert!(matches!(empty, ServeError::Unsafe(_)), "{empty}");

    let http = server(&Arc::default())
        .serve_http(
            HttpOptions::new()
                .bind(everywhere)
                .with_bearer_token("s3cret"),
        )
        .await
        .expect("serves with a token");
    let port = http.local_addr().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("an address");
    let host = format!("127.0.0.1:{port}");
    for (headers, status) in [
        (vec![], 401),
        (vec![("Authorization", "Bearer wrong")], 401),
        (vec![("Authorization", "s3cret")], 401),
        (vec![("Authorization", "Bearer s3cret")], 200),
    ] {
        let mut headers = headers;
        headers.push(("Host", host.as_str()));
        let response = request(addr, "POST", &headers, INITIALIZE).await;
        assert_eq!(response.status, status, "{headers:?}: {response:?}");
        if status == 401 {
            assert_eq!(response.header("www-authenticate"), Some("Bearer"));
        }
    }
    http.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_and_origin_are_checked_against_dns_rebinding() {
    let http = server(&Arc::default())
        .serve_http(HttpOptions::new().allow_origin("https://app.example.com"))
        .await
        .expect("serves");
    let addr = http.local_addr();
    for (headers, status) in [
        (vec![("Host", "evil.example")], 403),
        (vec![("Host", "evil.example:80")], 403),
        (vec![("Origin", "http://evil.example")], 403),
        (vec![("Origin", "null")], 403),
        (vec![("Origin", "http://localhost:5173")], 200),
        (vec![("Origin", "https://app.example.com")], 200),
        (vec![("Host", "localhost")], 200),
        (vec![], 200),
    ] {
        let response = request(addr, "POST", &headers, INITIALIZE).await;
        assert_eq!(response.status, status, "{headers:?}: {response:?}");
    }
    http.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_are_bounded() {
    let http = server(&Arc::default())
        .serve_http(HttpOptions::new().with_max_body_bytes(1024))
        .await
        .expect("serves");
    let big = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "pad": "x".repeat(4096) } });
    let response = request(http.local_addr(), "POST", &[], &big.to_string()).await;
    assert_eq!(response.status, 413, "{response:?}");
    let fine = request(http.local_addr(), "POST", &[], INITIALIZE).await;
    assert_eq!(fine.status, 200, "{fine:?}");
    http.shutdown().await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_jsonrpc_gets_a_jsonrpc_error_and_the_server_goes_on() {
    let http = server(&Arc::default())
        .serve_http(HttpOptions::new())
        .await
        .expect("serves");
    let addr = http.local_addr();

    let garbage = request(addr, "POST", &[], "garbage{").await;
    assert_eq!(garbage.status, 400, "{garbage:?}");
    let error = garbage.message();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["jsonrpc"], "2.0");

    for (body, id) in [
        (r#"{"jsonrpc":"2.0","id":9}"#, json!(9)),
        (r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#, json!("a")),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
        ("42", Value::Null),
    ] {
        let response = request(addr, "POST", &[], body).await;
        assert_eq!(response.status, 400, "{body}: {response:?}");
        let error = response.message();
        assert_eq!(error["error"]["code"], -32600, "{body}: {error}");
        assert_eq!(error["id"], id, "{body}: {error}");
    }

    // A body that says it is not JSON is not a malformed message: rmcp's
    // own answer stands.
    let plain = request(addr, "POST", &[("Content-Type", "text/plain")], INITIALIZE).await;
    assert_eq!(plain.status, 415, "{plain:?}");

    // And it still serves: a session, a call.
    let session = open_session(&http, &[]).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let answer = request(addr, "POST", &headers, &call(2, "echo")).await;
    assert_eq!(
        answer.message()["result"]["content"][0]["text"],
        "ok",
        "{answer:?}"
    );
    http.shutdown().await.expect("stops");
}

/// Sends a request whose answer is an event stream and reads it up to its
/// first event id (rmcp's priming event, which a client resumes from);
/// the connection stays open for the caller to drop.
async fn open_stream(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).await.expect("the server listens");
    let head = request_head(addr, method, headers, body);
    stream.write_all(head.as_bytes()).await.expect("sent");
    stream.write_all(body.as_bytes()).await.expect("sent");
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&raw);
        // Whole lines only: the last one may still be arriving.
        let whole = text.rsplit_once('\n').map_or("", |(whole, _)| whole);
        let id = whole
            .lines()
            .find_map(|line| line.trim_end().strip_prefix("id: "));
        if let Some(id) = id {
            return (stream, id.to_owned());
        }
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("an event within 5 s")
            .expect("read");
        assert!(read > 0, "the stream ended before an event id: {text}");
        raw.extend_from_slice(&buffer[..read]);
    }
}

/// The session's headers, as `request` takes them.
fn session_headers(session: &str) -> Vec<(&'static str, String)> {
    vec![
        ("mcp-session-id", session.to_owned()),
        ("mcp-protocol-version", "2025-06-18".to_owned()),
    ]
}

fn borrowed<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A server whose calls wait `grace` for a resume, a session on it, and a
/// `slow` call running in that session, its answer stream open.
struct SlowOnAStream {
    probe: Arc<Probe>,
    http: HttpServer,
    headers: Vec<(&'static str, String)>,
    stream: TcpStream,
    /// The stream's first event id, which a resume names.
    event_id: String,
}

impl SlowOnAStream {
    async fn start(grace: Duration) -> Self {
        let probe = Arc::new(Probe::default());
        let http = server(&probe)
            .serve_http(HttpOptions::new().with_resume_grace(grace))
            .await
            .expect("serves");
        let session = open_session(&http, &[]).await;
        let headers = session_headers(&session);
        let (stream, event_id) = open_stream(
            http.local_addr(),
            "POST",
            &borrowed(&headers),
            &call(2, "slow"),
        )
        .await;
        assert!(
            probe.running_within(Duration::from_secs(5)).await,
            "the slow call runs"
        );
        Self {
            probe,
            http,
            headers,
            stream,
            event_id,
        }
    }
}

/// A client that vanishes mid-call (closes the connection its answer was
/// to come on, no `DELETE`, no cancellation) has the call cancelled once
/// the resume grace has passed, and the session goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_mid_call_has_the_call_cancelled_after_the_grace() {
    let grace = Duration::from_millis(400);
    let SlowOnAStream {
        probe,
        http,
        headers,
        stream,
        ..
    } = SlowOnAStream::start(grace).await;
    let vanished = Instant::now();
    drop(stream);
    assert!(
        probe.stopped_within(Duration::from_secs(5)).await,
        "the call of a client that vanished still runs"
    );
    let after = vanished.elapsed();
    assert!(
        after >= grace - Duration::from_millis(50),
        "cancelled after {after:?}, before the grace of {grace:?} to resume"
    );
    let echo = request(
        http.local_addr(),
        "POST",
        &borrowed(&headers),
        &call(3, "echo"),
    )
    .await;
    assert_eq!(
        echo.message()["result"]["content"][0]["text"],
        "ok",
        "{echo:?}"
    );
    http.shutdown().await.expect("stops");
}

/// When the client's resume reaches the server, against the old stream's
/// closing.
#[derive(Debug, Clone, Copy)]
enum Resumed {
    /// The usual order: the stream broke, the client reconnects.
    AfterTheOldStreamClosed,
    /// A quick reconnect: the server has not yet noticed the old
    /// connection close.
    BeforeTheOldStreamClosed,
}

/// A slow call's stream is resumed (`GET` with `Last-Event-ID`) in the
/// order `when` says, well within the grace: the call keeps running past
/// the grace, and stops once the resumed stream is dropped too.
async fn a_resumed_stream_keeps_its_call(when: Resumed) {
    let grace = Duration::from_millis(1500);
    let SlowOnAStream {
        probe,
        http,
        headers,
        stream,
        event_id,
    } = SlowOnAStream::start(grace).await;
    let mut resume = headers.clone();
    resume.push(("last-event-id", event_id));
    resume.push(("accept", "text/event-stream".to_owned()));
    let resume = borrowed(&resume);
    let addr = http.local_addr();
    let resumed = match when {
        Resumed::AfterTheOldStreamClosed => {
            drop(stream);
            open_stream(addr, "GET", &resume, "").await.0
        }
        Resumed::BeforeTheOldStreamClosed => {
            let resumed = open_stream(addr, "GET", &resume, "").await.0;
            drop(stream);
            resumed
        }
    };
    tokio::time::sleep(grace * 2).await;
    assert!(
        !probe.dropped.load(Ordering::SeqCst),
        "{when:?}: the call was cancelled though its client resumed the stream"
    );

    drop(resumed);
    assert!(
        probe.stopped_within(Duration::from_secs(5)).await,
        "{when:?}: the call still runs after its newest stream was dropped"
    );
    http.shutdown().await.expect("stops");
}

/// A client whose stream broke and that resumes it within the grace keeps
/// its call; the resumed stream is watched the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_resumes_its_stream_in_time_keeps_its_call() {
    a_resumed_stream_keeps_its_call(Resumed::AfterTheOldStreamClosed).await;
}

/// A resume may reach the server before it has noticed the old stream
/// close: the old stream's end then counts for nothing, and the resumed
/// stream is the one watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_before_the_old_stream_closes_keeps_the_call() {
    a_resumed_stream_keeps_its_call(Resumed::BeforeTheOldStreamClosed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_per_session_are_bounded_and_ending_the_session_aborts_them() {
    let probe = Arc::new(Probe::default());
    let http = server(&probe)
        .with_max_calls_per_session(1)
        .serve_http(HttpOptions::new())
        .await
        .expect("serves");
    let addr = http.local_addr();
    let session = open_session(&http, &[]).await;
    let headers = [
        ("mcp-session-id", session.clone()),
        ("mcp-protocol-version", "2025-06-18".to_owned()),
    ];
    let slow_headers = headers.clone();
    let slow = tokio::spawn(async move {
        let headers: Vec<(&str, &str)> =
            slow_headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(addr, "POST", &headers, &call(2, "slow")).await
    });
    assert!(
        probe.running_within(Duration::from_secs(5)).await,
        "the slow call runs"
    );

    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let second = request(addr, "POST", &headers, &call(3, "echo")).await;
    let refused = second.message();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("already has 1 calls in flight"), "{text}");

    // The client ends its session: the slow call is stopped at once.
    let ended = Instant::now();
    let deleted = request(addr, "DELETE", &headers, "").await;
    assert!(deleted.status < 300, "{deleted:?}");
    assert!(
        probe.stopped_within(Duration::from_secs(2)).await,
        "the slow call was not stopped when its session ended"
    );
    assert!(
        ended.elapsed() < Duration::from_secs(2),
        "{:?}",
        ended.elapsed()
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), slow).await;
    http.shutdown().await.expect("stops");
}
