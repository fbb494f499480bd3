//! How an import greets its server ([`Handshake`]): 2025-11-25's
//! `initialize`, 2026-07-28's `server/discover`, or discovery with a
//! fallback, against rho's own server (which speaks both) and the
//! reference server of the official TypeScript SDK (which speaks only the
//! older revisions).

mod import_support;

use std::sync::Arc;
use std::time::Duration;

use import_support::{Host, Tokio, call, everything_source};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Handshake, ImportError, McpSource};
use rho_mcp::{HttpOptions, HttpServer, McpServer};
use rho_registry::{Source, SourceHandle, ToolRegistry};
use rho_tool_core::{Outcome, Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// Answers with the text it was given.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Answers with `text`."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn run(&self, arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(arguments["text"].as_str().unwrap_or_default())
    }
}

/// rho's own server over HTTP, serving `echo` from the source it returns.
async fn echo_served() -> (SourceHandle, HttpServer) {
    let served = ToolRegistry::new();
    let tools = served.add_source(Source::trusted("peer")).expect("new");
    tools.add(Arc::new(Echo) as Arc<dyn Tool>).expect("new");
    let http = McpServer::new(TokioExecutor::current().expect("a runtime"), served)
        .serve_http(HttpOptions::new())
        .await
        .expect("serves");
    (tools, http)
}

/// Every handshake reaches rho's own server over HTTP, and the call made
/// after it is answered.
#[test]
fn every_handshake_reaches_rho_s_server_and_its_calls_are_answered() {
    let host = Tokio::new();
    for handshake in [
        Handshake::Initialize,
        Handshake::Discover,
        Handshake::Either,
    ] {
        host.block_on(async {
            let (_tools, http) = echo_served().await;
            let registry = ToolRegistry::new();
            let source = McpSource::http("peer", http.url())
                .handshake(handshake)
                .connect(&registry)
                .await
                .unwrap_or_else(|error| panic!("{handshake:?}: {error}"));
            let end = call(&registry, &host.runner(), "echo", json!({"text": "hi"})).await;
            assert_eq!(
                end.outcome,
                Outcome::Succeeded,
                "{handshake:?}: {}",
                end.result.text()
            );
            assert_eq!(end.result.text(), "hi", "{handshake:?}");
            source.close();
            http.shutdown().await.expect("stops");
        });
    }
}

/// The reference server does not know `server/discover`: `Either` greets
/// it again with `initialize` and its tools are imported; `Discover` fails
/// `connect` with a text that names what went unanswered.
#[test]
fn either_falls_back_to_initialize_and_discover_alone_is_refused_by_an_older_server() {
    let host = Tokio::new();
    host.block_on(async {
        let registry = ToolRegistry::new();
        let source = everything_source("either")
            .handshake(Handshake::Either)
            .connect(&registry)
            .await
            .expect("falls back to initialize");
        let end = call(&registry, &host.runner(), "echo", json!({"message": "hi"})).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
        source.close();

        let registry = ToolRegistry::new();
        let refused = everything_source("discover")
            .handshake(Handshake::Discover)
            .startup_timeout(Duration::from_secs(5))
            .connect(&registry)
            .await;
        match refused {
            Err(ImportError::Server(text)) => {
                assert!(text.contains("`server/discover`: "), "{text}");
            }
            other => panic!("{:?}", other.map(|_| "connected")),
        }
    });
}

/// Property: a server on 2026-07-28 announces only on a
/// `subscriptions/listen` stream, so a source that greeted it with
/// `Discover` asks for one: a tool the server adds after the handshake,
/// and one it removes, reach the importing registry.
#[test]
fn a_source_on_2026_hears_the_servers_tool_changes_on_its_listen_stream() {
    let host = Tokio::new();
    host.block_on(async {
        let (tools, http) = echo_served().await;
        let registry = ToolRegistry::new();
        let source = McpSource::http("peer", http.url())
            .handshake(Handshake::Discover)
            .connect(&registry)
            .await
            .expect("discovers");
        let names = || -> Vec<String> {
            let mut names: Vec<String> = registry
                .tools()
                .into_iter()
                .map(|tool| tool.name.to_string())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(), ["echo"]);
        let until = |expected: &'static [&'static str]| {
            let names = &names;
            async move {
                for _ in 0..200 {
                    if names() == expected {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                panic!("the source still lists {:?}, not {expected:?}", names());
            }
        };
        tools.add(Arc::new(Second) as Arc<dyn Tool>).expect("new");
        until(&["echo", "second"]).await;
        assert!(tools.remove("echo"));
        until(&["second"]).await;
        source.close();
        http.shutdown().await.expect("stops");
    });
}

/// A second tool, added while a source is connected.
struct Second;

#[async_trait]
impl Tool for Second {
    fn name(&self) -> &str {
        "second"
    }
    fn description(&self) -> &str {
        "Answers `second`."
    }
    async fn run(&self, _arguments: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("second")
    }
}
