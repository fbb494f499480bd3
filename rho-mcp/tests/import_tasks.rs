//! Tasks a server on MCP 2026-07-28 makes of imported calls (the tasks
//! extension, SEP-2663), followed by rho's import: the server is rho's own
//! with tasks on (`support::tasks`), reached with `Handshake::Discover`.
//! A call the server serves only as a task runs (a client that takes no
//! tasks is refused it), a long call that became a task ends with its
//! result, a task's questions are answered by the host through
//! `tasks/update` with the call's clock held, and a call the host gives up
//! cancels its task: the server's tool stops.

mod import_support;
mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use import_support::{Host, Tokio, call};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Answerer, Handshake, McpSource, McpSourceBuilder};
use rho_mcp::rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction};
use rho_mcp::{Answer, Answers, Questions};
use rho_registry::ToolRegistry;
use rho_tool_core::{Outcome, Runner, ToolContext, async_trait};
use serde_json::json;
use support::stateless::{Seen, StatelessClient};
use support::tasks::serve;

/// Runs `check` with rho's task server on loopback and a source of it
/// (`with` sets the source up), connected to a registry of its own.
fn with_tasks(
    with: impl FnOnce(
        McpSourceBuilder<rho_mcp::import::Http>,
    ) -> McpSourceBuilder<rho_mcp::import::Http>,
    check: impl AsyncFnOnce(&ToolRegistry, &Runner<TokioExecutor>, &Arc<Seen>, &str),
) {
    let host = Tokio::new();
    host.block_on(async {
        let seen = Arc::new(Seen::default());
        let server = serve(&seen).await;
        let registry = ToolRegistry::new();
        let source = with(McpSource::http("tasks", server.url()).handshake(Handshake::Discover))
            .connect(&registry)
            .await
            .expect("discovers");
        let runner = Runner::new(TokioExecutor::current().expect("a runtime"));
        check(&registry, &runner, &seen, &server.url()).await;
        source.close();
        server.shutdown().await.expect("stops");
    });
}

/// A tool served only as a task runs through the import (a client that
/// takes no tasks is refused it with -32021), and so does a long call the
/// server made a task of: each ends with the tool's own result.
#[test]
fn an_imported_call_that_becomes_a_task_ends_with_the_tasks_result() {
    with_tasks(
        |source| source,
        async |registry, runner, seen, url| {
            let plain = StatelessClient::new(url.to_owned()).declaring(json!({}));
            let refused = plain.call("only_task", json!({}), json!({})).await;
            assert_eq!(refused["error"]["code"], json!(-32021), "{refused}");

            let only = call(registry, runner, "only_task", json!({})).await;
            assert_eq!(only.outcome, Outcome::Succeeded, "{}", only.result.text());
            assert_eq!(only.result.text(), "ran as a task");

            let long = call(registry, runner, "work", json!({ "ms": 400 })).await;
            assert_eq!(long.outcome, Outcome::Succeeded, "{}", long.result.text());
            assert_eq!(long.result.text(), "worked 400 ms");
            assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
        },
    );
}

/// Names the user Ada and her colour blue, after `after`.
struct Ada {
    after: Duration,
}

#[async_trait]
impl Answerer for Ada {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::builder().enable_elicitation().build()
    }

    async fn answer(
        &self,
        questions: Questions,
        _call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        tokio::time::sleep(self.after).await;
        let mut answers = Answers::default();
        for (key, _) in questions.requests() {
            let said = if key == "name" { "Ada" } else { "blue" };
            let accepted =
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({ key: said }));
            answers.insert(key, Answer::Elicit(accepted));
        }
        Ok(answers)
    }
}

/// A task that asks (`asking`: 200 ms of work, then two questions, a
/// 300 ms timeout) is answered by the host through `tasks/update`; the
/// host took 600 ms, which the call's clock did not count.
#[test]
fn a_tasks_questions_are_answered_by_the_host_with_the_clock_held() {
    with_tasks(
        |source| {
            source.answerer(Ada {
                after: Duration::from_millis(600),
            })
        },
        async |registry, runner, seen, _url| {
            let end = call(registry, runner, "asking", json!({})).await;
            assert_eq!(end.outcome, Outcome::Succeeded, "{}", end.result.text());
            assert_eq!(end.result.text(), "Ada likes blue");
            assert_eq!(seen.runs.load(Ordering::SeqCst), 1);
        },
    );
}

/// A call the host gives up (here its 300 ms timeout) cancels the task the
/// server made of it, and the server's tool itself stops: it ticks no
/// more and its future is dropped.
#[test]
fn giving_up_an_imported_task_cancels_it_and_stops_the_tool() {
    with_tasks(
        |source| source.timeout(Duration::from_millis(300)),
        async |registry, runner, seen, _url| {
            let end = call(registry, runner, "ticking", json!({})).await;
            assert_eq!(end.outcome, Outcome::TimedOut, "{}", end.result.text());
            let began = Instant::now();
            while !seen.dropped.load(Ordering::SeqCst) {
                assert!(
                    began.elapsed() < Duration::from_secs(5),
                    "the server's tool still runs"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let stopped_at = seen.ticks.load(Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(seen.ticks.load(Ordering::SeqCst), stopped_at);
        },
    );
}
