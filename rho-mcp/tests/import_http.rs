//! MCP servers imported over streamable HTTP: the reference server
//! (`@modelcontextprotocol/server-everything`, pinned, in its HTTP mode)
//! and rho's own HTTP server as peers. Answers mapped as over stdio, rho's
//! deadline, a server killed mid-call, an endpoint that stays down, a
//! bearer token, answers past the size cap, and endpoints refused before
//! anything is sent. Each runs in a tokio host and in a smol host.

#[macro_use]
mod import_support;

use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use import_support::{
    EverythingHttp, Host, Smol, Tokio, call, check_reference_answers, check_reference_progress,
    check_reference_tools_added_after_the_handshake, eventually, kill_9,
};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Backoff, ImportError, McpSource};
use rho_mcp::{HttpOptions, HttpServer, McpServer};
use rho_registry::{QuarantineRule, Source, ToolRegistry};
use rho_tool_core::async_trait;
use rho_tool_core::{Outcome, Tool, ToolCall, ToolContext, ToolOutput};
use serde_json::{Value, json};

/// A rho registry served over HTTP on a runtime of its own: the peer for
/// what the reference server cannot be made to do (panic, answer big,
/// require a token, go away and come back).
struct RhoPeer {
    runtime: tokio::runtime::Runtime,
    http: Option<HttpServer>,
    /// Whether a `slow` call was dropped (its call cancelled).
    slow_dropped: Arc<AtomicBool>,
}

impl RhoPeer {
    fn start(options: HttpOptions) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let slow_dropped = Arc::new(AtomicBool::new(false));
        let http = runtime.block_on(async {
            let registry = ToolRegistry::new();
            registry
                .add_source(Source::trusted("peer"))
                .expect("new")
                .add_all([
                    Arc::new(Peer::Echo) as Arc<dyn Tool>,
                    Arc::new(Peer::Big),
                    Arc::new(Peer::Panics),
                    Arc::new(Peer::Slow(Arc::clone(&slow_dropped))),
                ])
                .expect("new names");
            McpServer::new(TokioExecutor::current().expect("a runtime"), registry)
                .serve_http(options)
                .await
                .expect("serves")
        });
        Self {
            runtime,
            http: Some(http),
            slow_dropped,
        }
    }

    fn url(&self) -> String {
        self.http.as_ref().expect("serving").url()
    }

    /// Stops serving: every session ends, nothing listens at the URL.
    fn stop(&mut self) {
        if let Some(http) = self.http.take() {
            self.runtime.block_on(http.shutdown()).expect("stops");
        }
    }
}

enum Peer {
    Echo,
    /// Answers `bytes` bytes of text.
    Big,
    Panics,
    /// Sleeps for a minute, and says when its call was dropped.
    Slow(Arc<AtomicBool>),
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Tool for Peer {
    fn name(&self) -> &str {
        match self {
            Peer::Echo => "echo",
            Peer::Big => "big",
            Peer::Panics => "panics",
            Peer::Slow(_) => "slow",
        }
    }
    fn description(&self) -> &str {
        "A tool of the test peer."
    }
    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        match self {
            Peer::Echo => ToolOutput::text(arguments["text"].as_str().unwrap_or_default()),
            Peer::Big => {
                let bytes = arguments["bytes"].as_u64().unwrap_or(0) as usize;
                ToolOutput::text("x".repeat(bytes))
            }
            Peer::Panics => panic!("the peer's tool broke"),
            Peer::Slow(dropped) => {
                let _flag = SetOnDrop(Arc::clone(dropped));
                context.sleep(Duration::from_secs(60)).await;
                ToolOutput::text("woke")
            }
        }
    }
}

fn the_reference_server_over_http_answers_as_over_stdio(host: impl Host) {
    let server = EverythingHttp::start();
    let registry = ToolRegistry::new();
    let source = host
        .block_on(McpSource::http("everything", server.url()).connect(&registry))
        .expect("the reference server imports over HTTP");
    assert_eq!(source.server_pid(), None, "not a process of the host's");
    let echo_info = registry
        .tools()
        .into_iter()
        .find(|tool| tool.name == "echo")
        .expect("echo listed");
    assert!(echo_info.untrusted);
    assert_eq!(
        echo_info.parameters["properties"]["message"]["type"],
        "string"
    );
    let runner = host.runner();
    host.block_on(async {
        check_reference_answers(&registry, &runner).await;
        // Over HTTP the progress comes on the answer's event stream.
        check_reference_progress(&registry, &runner, 3).await;
    });
}

/// The reference server adds tools once a client is initialized and says
/// so with `notifications/tools/list_changed` (over HTTP, on the
/// session's own event stream): the source ends up listing them, whether
/// its first listing came before or after.
fn the_tools_it_adds_after_the_handshake_are_listed_over_http(host: impl Host) {
    let server = EverythingHttp::start();
    let registry = ToolRegistry::new();
    let source = host
        .block_on(McpSource::http("everything", server.url()).connect(&registry))
        .expect("imports");
    check_reference_tools_added_after_the_handshake(&source);
}

/// The reference server killed with SIGKILL mid-call: the call crashes
/// at once (within the stream's brief retries), and once the server is
/// back at its address the next call reaches it again.
fn a_server_killed_mid_call_crashes_its_call_and_is_reached_again(host: impl Host) {
    let server = EverythingHttp::start();
    let port = server.port();
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            McpSource::http("everything", server.url())
                .backoff(Backoff {
                    initial: Duration::from_millis(50),
                    max: Duration::from_millis(50),
                })
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    let pid = server.pid();
    let end = host.block_on(async {
        let handle = {
            let call = ToolCall::new(
                "long",
                "trigger-long-running-operation",
                json!({ "duration": 30, "steps": 3 }),
            );
            let start = registry.start_for(&call.name);
            runner.start(call, start)
        };
        std::thread::sleep(Duration::from_millis(500));
        let killed = Instant::now();
        kill_9(pid);
        let end = handle.await;
        (end, killed.elapsed())
    });
    let (end, after) = end;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        after < Duration::from_secs(1),
        "ended {after:?} after the kill"
    );
    let text = end.result.text();
    assert!(
        text.contains(
            "tool `trigger-long-running-operation` did not answer: MCP server `everything`"
        ),
        "{text}"
    );
    drop(server);
    let _back = EverythingHttp::on(port);
    host.block_on(async {
        let echo = call(&registry, &runner, "echo", json!({ "message": "back" })).await;
        assert_eq!(echo.result.text(), "Echo: back", "{:?}", echo.outcome);
    });
    let (deaths, _) = source.deaths();
    assert_eq!(deaths, 1, "{:?}", source.deaths());
    let health = source
        .accounting()
        .tool_health("trigger-long-running-operation")
        .expect("counted");
    assert_eq!(health.crashed, 1);
}

/// An endpoint that goes away and stays away: calls crash or cannot
/// reach it, and after the rule's count of deaths the server is
/// quarantined as a whole and its tools leave the model's list.
fn an_endpoint_that_stays_down_is_quarantined_as_a_whole(host: impl Host) {
    let mut peer = RhoPeer::start(HttpOptions::new());
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            McpSource::http("peer", peer.url())
                .quarantine(QuarantineRule::after(3).within(Duration::from_secs(60)))
                .backoff(Backoff {
                    initial: Duration::from_millis(10),
                    max: Duration::from_millis(20),
                })
                .connect(&registry),
        )
        .expect("imports");
    assert_eq!(source.tools(), ["big", "echo", "panics", "slow"]);
    peer.stop();
    let runner = host.runner();
    host.block_on(async {
        let first = call(&registry, &runner, "echo", json!({ "text": "hi" })).await;
        assert_eq!(first.outcome, Outcome::Crashed, "{}", first.result.text());
        let text = first.result.text();
        assert!(
            text.contains("failed over HTTP at http://127.0.0.1:"),
            "{text}"
        );
        assert!(
            text.contains("Connection refused"),
            "the root cause: {text}"
        );
        for _ in 0..3 {
            let again = call(&registry, &runner, "echo", json!({ "text": "hi" })).await;
            assert!(again.result.is_error, "{}", again.result.text());
        }
    });
    let quarantine = source.quarantine().expect("quarantined as a whole");
    assert!(quarantine.to_string().contains("peer"), "{quarantine}");
    assert!(source.tools().is_empty(), "{:?}", source.tools());
}

/// rho's deadline holds over HTTP: the call ends at it, the server is
/// told (its handler is dropped), and the connection goes on serving.
fn a_hung_call_ends_at_rhos_timeout_and_the_server_is_told(host: impl Host) {
    let peer = RhoPeer::start(HttpOptions::new());
    let registry = ToolRegistry::new();
    let _source = host
        .block_on(
            McpSource::http("peer", peer.url())
                .timeout(Duration::from_millis(300))
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let started = Instant::now();
        let slow = call(&registry, &runner, "slow", json!({})).await;
        assert_eq!(slow.outcome, Outcome::TimedOut, "{}", slow.result.text());
        assert!(started.elapsed() < Duration::from_secs(2));
        let echo = call(&registry, &runner, "echo", json!({ "text": "still" })).await;
        assert_eq!(echo.result.text(), "still");
    });
    assert!(
        eventually(Duration::from_secs(2), || peer
            .slow_dropped
            .load(Ordering::SeqCst)),
        "the server's handler was dropped: it was sent `notifications/cancelled`"
    );
}

/// A tool that panics behind the server is an error result naming it;
/// an answer past the message cap is refused, in bounded memory, and the
/// next call is served.
fn panics_and_oversized_answers_are_clear_errors(host: impl Host) {
    let peer = RhoPeer::start(HttpOptions::new());
    let registry = ToolRegistry::new();
    let source = host
        .block_on(
            McpSource::http("peer", peer.url())
                .max_message(64 << 10)
                .backoff(Backoff {
                    initial: Duration::from_millis(10),
                    max: Duration::from_millis(10),
                })
                .connect(&registry),
        )
        .expect("imports");
    let runner = host.runner();
    host.block_on(async {
        let panicked = call(&registry, &runner, "panics", json!({})).await;
        assert_eq!(
            panicked.outcome,
            Outcome::Failed,
            "{}",
            panicked.result.text()
        );
        assert!(
            panicked.result.text().contains("the peer's tool broke"),
            "{}",
            panicked.result.text()
        );
        let fits = call(&registry, &runner, "big", json!({ "bytes": 1000 })).await;
        assert_eq!(fits.result.text().len(), 1000);
        let big = call(&registry, &runner, "big", json!({ "bytes": 1 << 20 })).await;
        assert!(big.result.is_error, "an answer of a MiB past a 64 KiB cap");
        assert_eq!(big.outcome, Outcome::Crashed);
        assert!(
            big.result.text().contains("past the limit of 65536 bytes"),
            "{}",
            big.result.text()
        );
        assert!(big.result.text().len() < 4096, "{}", big.result.text());
        let echo = call(&registry, &runner, "echo", json!({ "text": "next" })).await;
        assert_eq!(echo.result.text(), "next");
    });
    // rho's server answers over SSE: an event past the cap reads as a
    // broken stream, which ends the connection (the next call made a new
    // one); the panic did not.
    assert_eq!(source.deaths().0, 1, "{:?}", source.deaths());
}

/// A server that asks for a bearer token: without one the import fails
/// with the server's refusal, with it the tools work.
fn a_bearer_token_is_sent_when_given(host: impl Host) {
    let peer = RhoPeer::start(HttpOptions::new().with_bearer_token("s3cret"));
    let registry = ToolRegistry::new();
    let refused = host
        .block_on(McpSource::http("peer", peer.url()).connect(&registry))
        .expect_err("no token");
    assert!(matches!(refused, ImportError::Server(_)), "{refused}");
    assert!(refused.to_string().contains("Auth required"), "{refused}");
    assert!(registry.tools().is_empty(), "nothing left behind");
    let _source = host
        .block_on(
            McpSource::http("peer", peer.url())
                .bearer_token("s3cret")
                .header("x-client", "rho-tests")
                .connect(&registry),
        )
        .expect("imports with the token");
    let runner = host.runner();
    host.block_on(async {
        let echo = call(&registry, &runner, "echo", json!({ "text": "in" })).await;
        assert_eq!(echo.result.text(), "in");
    });
}

/// Endpoints that cannot be used are refused before anything is sent,
/// and one where nothing listens fails at once; nothing is left behind.
fn unusable_and_unreachable_endpoints_are_clear_errors(host: impl Host) {
    let registry = ToolRegistry::new();
    let refused = |builder: rho_mcp::import::McpSourceBuilder<rho_mcp::import::Http>| {
        host.block_on(builder.connect(&registry))
            .expect_err("refused")
    };
    for (url, says) in [
        (
            "ftp://127.0.0.1/mcp",
            "is not an `http://` or `https://` URL",
        ),
        ("not a url at all", "is not a URL"),
        ("http:///mcp", "is not a URL"),
    ] {
        let error = refused(McpSource::http("bad", url));
        assert!(matches!(error, ImportError::Endpoint(_)), "{url}: {error}");
        assert!(error.to_string().contains(says), "{url}: {error}");
    }
    let header = refused(McpSource::http("bad", "http://127.0.0.1:1/mcp").header("bad name", "x"));
    assert!(
        header.to_string().contains("is not an HTTP header name"),
        "{header}"
    );
    if !cfg!(feature = "https") {
        let tls = refused(McpSource::http("bad", "https://example.com/mcp"));
        assert!(tls.to_string().contains("`https` feature"), "{tls}");
    }
    let port = import_support::free_port();
    let started = Instant::now();
    let down = refused(McpSource::http(
        "down",
        format!("http://127.0.0.1:{port}/mcp"),
    ));
    assert!(matches!(down, ImportError::Server(_)), "{down}");
    assert!(down.to_string().contains("MCP server `down`"), "{down}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(registry.tools().is_empty());
    assert!(
        registry.add_source(Source::untrusted("down")).is_ok(),
        "the name is free again"
    );
}

on_both_hosts!(
    the_reference_server_over_http_answers_as_over_stdio,
    the_tools_it_adds_after_the_handshake_are_listed_over_http,
    a_server_killed_mid_call_crashes_its_call_and_is_reached_again,
    an_endpoint_that_stays_down_is_quarantined_as_a_whole,
    a_hung_call_ends_at_rhos_timeout_and_the_server_is_told,
    panics_and_oversized_answers_are_clear_errors,
    a_bearer_token_is_sent_when_given,
    unusable_and_unreachable_endpoints_are_clear_errors,
);
