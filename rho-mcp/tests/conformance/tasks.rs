//! The conformance suite's fixtures for the tasks extension (SEP-2663):
//! rho tools by the names, arguments and answers the suite's `tasks-*`
//! scenarios check, and the server's task rules for them ([`tasks`]).
//!
//! A call becomes a task once it has run the rules' `after` (100 ms here)
//! answering and asking nothing, so the fixtures the suite wants as tasks
//! from the start work a little first (`confirm_delete` looks at its file,
//! `multi_input` gets ready) and `test_tool_with_task` asks at once (its
//! question goes out before the task, as the suite's composition scenario
//! wants).

use std::time::Duration;

use crate::input::elicitation;
use rho_mcp::McpTasks;
use rho_mcp::{McpClient, Questions};
use rho_tool_core::annotation_gate::Match;
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The fixtures, one variant a tool.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tasked {
    Greet,
    SlowCompute,
    FailingJob,
    ProtocolErrorJob,
    ConfirmDelete,
    MultiInput,
    WithTask,
}

pub(crate) const ALL: &[Tasked] = &[
    Tasked::Greet,
    Tasked::SlowCompute,
    Tasked::FailingJob,
    Tasked::ProtocolErrorJob,
    Tasked::ConfirmDelete,
    Tasked::MultiInput,
    Tasked::WithTask,
];

/// Which fixtures run as tasks: `greet` never, `failing_job` and
/// `test_tool_with_task` only as tasks, the others for clients that take
/// them.
pub(crate) fn tasks() -> McpTasks {
    McpTasks::new()
        .required(Match::tool("failing_job"))
        .required(Match::tool("test_tool_with_task"))
        .optional(Match::tool("slow_compute"))
        .optional(Match::tool("protocol_error_job"))
        .optional(Match::tool("confirm_delete"))
        .optional(Match::tool("multi_input"))
        .after(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(100))
}

/// What a fixture does before its first question, so that it is a task
/// by then.
const WORK_FIRST: Duration = Duration::from_millis(500);

#[async_trait]
impl Tool for Tasked {
    fn name(&self) -> &str {
        match self {
            Tasked::Greet => "greet",
            Tasked::SlowCompute => "slow_compute",
            Tasked::FailingJob => "failing_job",
            Tasked::ProtocolErrorJob => "protocol_error_job",
            Tasked::ConfirmDelete => "confirm_delete",
            Tasked::MultiInput => "multi_input",
            Tasked::WithTask => "test_tool_with_task",
        }
    }

    fn description(&self) -> &str {
        match self {
            Tasked::Greet => "Greets someone at once",
            Tasked::SlowCompute => "Computes for `seconds` seconds",
            Tasked::FailingJob => "Fails after a second of work",
            Tasked::ProtocolErrorJob => "Crashes after a moment of work",
            Tasked::ConfirmDelete => "Deletes a file once the user confirms",
            Tasked::MultiInput => "Asks the user two things at once",
            Tasked::WithTask => "Asks the user's name, then works on it as a task",
        }
    }

    fn parameters(&self) -> Value {
        match self {
            Tasked::Greet => json!({
                "type": "object",
                "properties": { "name": { "type": "string" } },
            }),
            Tasked::SlowCompute => json!({
                "type": "object",
                "properties": {
                    "seconds": { "type": "number" },
                    "label": { "type": "string" },
                },
            }),
            Tasked::ConfirmDelete => json!({
                "type": "object",
                "properties": { "filename": { "type": "string" } },
            }),
            _ => json!({ "type": "object", "properties": {} }),
        }
    }

    fn timeout(&self) -> Duration {
        // The suite's longest task runs a minute (and is cancelled).
        Duration::from_secs(120)
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        match self {
            Tasked::Greet => ToolOutput::text(format!(
                "Hello, {}!",
                arguments["name"].as_str().unwrap_or("world")
            )),
            Tasked::SlowCompute => {
                let seconds = arguments["seconds"]
                    .as_f64()
                    .unwrap_or(0.0)
                    .clamp(0.0, 100.0);
                context.sleep(Duration::from_secs_f64(seconds)).await;
                let label = arguments["label"].as_str().unwrap_or_default();
                ToolOutput::text(format!("Computed `{label}` in {seconds} s"))
            }
            Tasked::FailingJob => {
                context.sleep(Duration::from_secs(1)).await;
                ToolOutput::error("the job failed, as it always does")
            }
            Tasked::ProtocolErrorJob => {
                context.sleep(WORK_FIRST).await;
                panic!("the job crashed, as it always does")
            }
            Tasked::ConfirmDelete => {
                let Some(client) = McpClient::of(&context) else {
                    return ToolOutput::error("this tool runs only when served over MCP");
                };
                context.sleep(WORK_FIRST).await;
                let filename = arguments["filename"].as_str().unwrap_or_default();
                let question = elicitation(&format!("Delete {filename}?"), "confirm", "boolean");
                match client
                    .ask(Questions::new().elicit("confirm", question))
                    .await
                {
                    Ok(answers) => {
                        let confirmed = answers
                            .elicit("confirm")
                            .and_then(|answer| answer.content.as_ref())
                            .and_then(|content| content.get("confirm"))
                            .and_then(Value::as_bool)
                            == Some(true);
                        ToolOutput::text(if confirmed {
                            format!("Deleted {filename}")
                        } else {
                            format!("Kept {filename}")
                        })
                    }
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Tasked::MultiInput => {
                let Some(client) = McpClient::of(&context) else {
                    return ToolOutput::error("this tool runs only when served over MCP");
                };
                context.sleep(WORK_FIRST).await;
                let questions = Questions::new()
                    .elicit("first", elicitation("Your name?", "name", "string"))
                    .elicit("second", elicitation("Go ahead?", "confirm", "boolean"));
                match client.ask(questions).await {
                    Ok(_) => ToolOutput::text("Both answered"),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            }
            Tasked::WithTask => {
                let Some(client) = McpClient::of(&context) else {
                    return ToolOutput::error("this tool runs only when served over MCP");
                };
                let question = elicitation("What is your name?", "name", "string");
                let name = match client
                    .ask(Questions::new().elicit("user_name", question))
                    .await
                {
                    Ok(answers) => answers
                        .elicit("user_name")
                        .and_then(|answer| answer.content.as_ref())
                        .and_then(|content| content.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    Err(error) => return ToolOutput::error(error.to_string()),
                };
                context.sleep(WORK_FIRST).await;
                ToolOutput::text(format!("Worked on it for {name}"))
            }
        }
    }
}
