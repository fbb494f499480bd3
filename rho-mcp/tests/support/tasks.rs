//! The tools and the server of the tests of MCP tasks (the tasks
//! extension, SEP-2663): rho's server with tasks on, over HTTP, driven raw
//! (`serve_tasks.rs`) and through rho's import (`import_tasks.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, HttpServer, McpClient, McpServer, McpTasks, Questions};
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use super::stateless::{DropFlag, Seen, StatelessClient, form};

/// The tools of the server, by what they do.
pub enum Fixture {
    /// Works `ms` milliseconds, then answers.
    Work(Arc<Seen>),
    /// Ticks every 10 ms for a minute.
    Ticking(Arc<Seen>),
    /// Works 200 ms, then asks two questions at once; its timeout is
    /// 300 ms.
    Asking(Arc<Seen>),
    /// Works 200 ms, then panics.
    Crashing,
    /// Only as a task.
    OnlyTask,
}

#[async_trait]
impl Tool for Fixture {
    fn name(&self) -> &str {
        match self {
            Fixture::Work(_) => "work",
            Fixture::Ticking(_) => "ticking",
            Fixture::Asking(_) => "asking",
            Fixture::Crashing => "crashing",
            Fixture::OnlyTask => "only_task",
        }
    }
    fn description(&self) -> &str {
        "a test tool"
    }
    fn timeout(&self) -> Duration {
        match self {
            Fixture::Asking(_) => Duration::from_millis(300),
            _ => Duration::from_secs(120),
        }
    }
    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        match self {
            Fixture::Work(seen) => {
                seen.runs.fetch_add(1, Ordering::SeqCst);
                let ms = arguments["ms"].as_u64().unwrap_or(0);
                context.sleep(Duration::from_millis(ms)).await;
                ToolOutput::text(format!("worked {ms} ms"))
            }
            Fixture::Ticking(seen) => {
                let _flag = DropFlag(seen.clone());
                for _ in 0..6000 {
                    seen.ticks.fetch_add(1, Ordering::SeqCst);
                    context.sleep(Duration::from_millis(10)).await;
                }
                ToolOutput::text("ticked a minute")
            }
            Fixture::Asking(seen) => {
                seen.runs.fetch_add(1, Ordering::SeqCst);
                let _flag = DropFlag(seen.clone());
                let client = McpClient::of(&context).expect("served over MCP");
                context.sleep(Duration::from_millis(200)).await;
                let questions = Questions::new()
                    .elicit("name", form("Your name?", "name"))
                    .elicit("colour", form("Your colour?", "colour"));
                match client.ask(questions).await {
                    Ok(answers) => {
                        let said = |key: &str| {
                            answers
                                .elicit(key)
                                .and_then(|answer| answer.content.as_ref())
                                .and_then(|content| content.get(key))
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        ToolOutput::text(format!("{} likes {}", said("name"), said("colour")))
                    }
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Fixture::Crashing => {
                context.sleep(Duration::from_millis(200)).await;
                panic!("the fixture crashed")
            }
            Fixture::OnlyTask => ToolOutput::text("ran as a task"),
        }
    }
}

/// rho's server of every [`Fixture`] over HTTP on loopback: `only_task`
/// only as a task, every other call a task once it has run 50 ms.
pub async fn serve(seen: &Arc<Seen>) -> HttpServer {
    serve_with_input_deadline(seen, Duration::from_secs(600)).await
}

/// [`serve`], a call waiting for its client's answers for `deadline` at
/// most.
pub async fn serve_with_input_deadline(seen: &Arc<Seen>, deadline: Duration) -> HttpServer {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("test"))
        .expect("a source");
    for tool in [
        Fixture::Work(seen.clone()),
        Fixture::Ticking(seen.clone()),
        Fixture::Asking(seen.clone()),
        Fixture::Crashing,
        Fixture::OnlyTask,
    ] {
        source.add(Arc::new(tool)).expect("a name");
    }
    let tasks = McpTasks::new()
        .required(Match::tool("only_task"))
        .optional(Match::Always)
        .after(Duration::from_millis(50));
    McpServer::new(TokioExecutor::current().expect("a tokio runtime"), registry)
        .with_tasks(tasks)
        .with_input_deadline(deadline)
        .serve_http(HttpOptions::new())
        .await
        .expect("serves on loopback")
}

/// A client of the server at `url` that takes tasks (and elicitation).
pub fn tasking(url: String) -> StatelessClient {
    StatelessClient::new(url).declaring(json!({
        "elicitation": {},
        "extensions": { "io.modelcontextprotocol/tasks": {} },
    }))
}

/// The task `id` once its status is `status` (or a terminal one); panics
/// after 20 s.
pub async fn task_when(client: &StatelessClient, id: &str, status: &str) -> Value {
    let began = Instant::now();
    loop {
        let task = client.request("tasks/get", json!({ "taskId": id })).await;
        let now = task["status"].as_str().unwrap_or_default().to_owned();
        if now == status || ["completed", "failed", "cancelled"].contains(&now.as_str()) {
            return task;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "task {id} never came to {status}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The id of the task a call was answered with; panics on any other
/// answer.
pub fn task_id(created: &Value) -> String {
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a taskId").to_owned()
}

/// Checks, through `client`, that a `work` call of 0 ms is answered at
/// once without a task, and one of `long_ms` becomes a task: working,
/// then completed with the tool's answer.
pub async fn check_a_long_call_becomes_a_task(client: &StatelessClient, long_ms: u64) {
    let quick = client.call("work", json!({ "ms": 0 }), json!({})).await;
    assert_eq!(quick["content"][0]["text"], "worked 0 ms", "{quick}");
    assert!(quick.get("taskId").is_none(), "{quick}");

    let created = client
        .call("work", json!({ "ms": long_ms }), json!({}))
        .await;
    let id = task_id(&created);
    let working = client.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(working["status"], "working", "{working}");
    let done = task_when(client, &id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("worked {long_ms} ms"),
        "{done}"
    );
}
