//! What an imported server asks its client while a call runs, answered by
//! the host's [`Answerer`]: the server is rho's own (a tool that asks its
//! user for a name through [`McpClient::elicit`]), reached at 2025-11-25
//! (the question comes as a request of the server's) and at 2026-07-28
//! (as an input-required result; the call is sent again with the answer).
//! The host takes longer to answer than the imported tool's timeout: the
//! call's clock is held meanwhile. Without an answerer the server is
//! offered nothing to ask with, and a call that asks ends saying so.

mod import_support;

use std::sync::Arc;
use std::time::Duration;

use import_support::{Host, Tokio, call};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Answerer, Handshake, McpSource};
use rho_mcp::rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction, InputRequest};
use rho_mcp::{Answer, Answers, HttpOptions, McpClient, McpServer, Questions};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{Outcome, Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// Asks its client's user for a name and greets it.
struct Greet;

#[async_trait]
impl Tool for Greet {
    fn name(&self) -> &str {
        "greet"
    }
    fn description(&self) -> &str {
        "Greets the user by the name they give."
    }
    async fn run(&self, _arguments: Value, context: ToolContext) -> ToolOutput {
        let Some(client) = McpClient::of(&context) else {
            return ToolOutput::error("not served over MCP");
        };
        let form = serde_json::from_value(json!({
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"],
            },
        }))
        .expect("a form");
        match client.elicit(form).await {
            Ok(answer) => match answer.content {
                Some(content) => ToolOutput::text(format!("hello {}", content["name"])),
                None => ToolOutput::text(format!("no name ({:?})", answer.action)),
            },
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

/// Answers every question with the name "Ada", after `after`.
struct Slowly {
    after: Duration,
}

#[async_trait]
impl Answerer for Slowly {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::builder().enable_elicitation().build()
    }

    async fn answer(
        &self,
        questions: Questions,
        call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        assert!(call.is_some(), "the question came in a call");
        tokio::time::sleep(self.after).await;
        let mut answers = Answers::default();
        for (key, request) in questions.requests() {
            assert!(
                matches!(request, InputRequest::Elicitation(_)),
                "{request:?}"
            );
            let named =
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"}));
            answers.insert(key, Answer::Elicit(named));
        }
        Ok(answers)
    }
}

/// Runs `check` against rho's server serving [`Greet`] over HTTP.
fn with_server(check: impl AsyncFnOnce(String)) {
    let host = Tokio::new();
    host.block_on(async {
        let served = ToolRegistry::new();
        served
            .add_source(Source::trusted("peer"))
            .expect("new")
            .add(Arc::new(Greet) as Arc<dyn Tool>)
            .expect("new");
        let http = McpServer::new(TokioExecutor::current().expect("a runtime"), served)
            .serve_http(HttpOptions::new())
            .await
            .expect("serves");
        check(http.url()).await;
        http.shutdown().await.expect("stops");
    });
}

/// At either revision the host's answer reaches the tool, though the host
/// took three times the imported tool's timeout to give it.
#[test]
fn the_hosts_answer_reaches_the_server_with_the_clock_held_meanwhile() {
    for handshake in [Handshake::Initialize, Handshake::Discover] {
        with_server(async |url| {
            let registry = ToolRegistry::new();
            let _source = McpSource::http("peer", url)
                .handshake(handshake)
                .timeout(Duration::from_millis(200))
                .answerer(Slowly {
                    after: Duration::from_millis(600),
                })
                .connect(&registry)
                .await
                .unwrap_or_else(|error| panic!("{handshake:?}: {error}"));
            let runner = rho_tool_core::Runner::new(TokioExecutor::current().expect("a runtime"));
            let end = call(&registry, &runner, "greet", json!({})).await;
            assert_eq!(
                end.outcome,
                Outcome::Succeeded,
                "{handshake:?}: {}",
                end.result.text()
            );
            assert_eq!(end.result.text(), "hello \"Ada\"", "{handshake:?}");
        });
    }
}

/// Without an answerer rho offers the server no elicitation: the tool
/// hears that it cannot ask (rho's server refuses a question its client
/// did not declare), and the call ends with that, not with a hang.
#[test]
fn without_an_answerer_the_server_is_told_it_cannot_ask() {
    for handshake in [Handshake::Initialize, Handshake::Discover] {
        with_server(async |url| {
            let registry = ToolRegistry::new();
            let _source = McpSource::http("peer", url)
                .handshake(handshake)
                .connect(&registry)
                .await
                .unwrap_or_else(|error| panic!("{handshake:?}: {error}"));
            let runner = rho_tool_core::Runner::new(TokioExecutor::current().expect("a runtime"));
            let end = call(&registry, &runner, "greet", json!({})).await;
            assert!(end.result.is_error, "{handshake:?}: {}", end.result.text());
            assert!(
                end.result.text().contains("elicitation"),
                "{handshake:?}: {}",
                end.result.text()
            );
        });
    }
}
