//! Following a task a server on 2026-07-28 made of a call (the tasks
//! extension, SEP-2663).
//!
//! The import tells such a server, with each call, that it takes tasks, so
//! the server may answer a long call (or one it serves only as a task)
//! with a task instead of its result. The call then asks `tasks/get` at the
//! pace the server suggests, answers the task's questions through the
//! host's [`Answerer`](crate::import::Answerer) (`tasks/update`, the call's
//! clock held meanwhile), and ends with the task's result. Given up (its
//! timeout, the host's abort, the source closing), it cancels the task
//! (`tasks/cancel`), so the server stops the work instead of finishing it
//! for nobody. To the host it is one call like any other.

use std::collections::HashSet;
use std::time::Duration;

use rho_tool_core::ToolOutput;
use rmcp::model::{
    CallToolResult, ClientRequest, GetTaskParams, GetTaskRequest, InputRequests, ServerResult,
    Task, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::ServiceError;
use serde_json::Value;

use super::super::answer::{error_text, to_output};
use super::super::connection::{Connection, DeathReceiver, wait_for_death};
use super::{CancelOnDrop, Request};

/// How often to ask when the server suggests no pace.
const PACE: Duration = Duration::from_millis(500);
/// The pace asked at, whatever the server suggests: not so fast that a
/// careless server is flooded, not so slow that an answer waits long.
const FASTEST: Duration = Duration::from_millis(10);
const SLOWEST: Duration = Duration::from_secs(5);

/// The pace a task's `pollIntervalMs` suggests, within bounds.
fn pace(suggested: Option<u64>) -> Option<Duration> {
    suggested.map(|ms| Duration::from_millis(ms).clamp(FASTEST, SLOWEST))
}

impl Request {
    /// Follows `task`, which the server made of this call, to its end.
    pub(super) async fn follow_task(
        &self,
        connection: &Connection,
        task: Task,
        died: &mut DeathReceiver,
    ) -> ToolOutput {
        let peer = connection.peer();
        let id = task.task_id;
        let mut cancel =
            CancelOnDrop::task(&self.server, peer, id.clone(), self.options(connection));
        let mut every = pace(task.poll_interval_ms).unwrap_or(PACE);
        // Keys are unique over a task's life: one answered is not asked
        // again, though `tasks/get` may show it until the server takes it.
        let mut answered: HashSet<String> = HashSet::new();
        let mut first = true;
        loop {
            let wait = if std::mem::take(&mut first) {
                Duration::ZERO
            } else {
                every
            };
            let polled = tokio::select! {
                polled = async {
                    tokio::time::sleep(wait).await;
                    let asked = GetTaskRequest::new(GetTaskParams::new(id.clone()));
                    match self.ask_server(connection, ClientRequest::GetTaskRequest(asked)).await {
                        Ok(ServerResult::GetTaskResult(polled)) => Ok(polled),
                        Ok(_) => Err(ServiceError::UnexpectedResponse),
                        Err(error) => Err(error),
                    }
                } => polled,
                death = wait_for_death(died) => {
                    cancel.disarm();
                    return self.crashed(&death);
                }
            };
            let detailed = match polled {
                Ok(polled) => polled.task,
                Err(ServiceError::McpError(error)) => {
                    cancel.disarm();
                    return ToolOutput::error(format!(
                        "tool `{}` of MCP server `{}` became task `{id}`, which the server then \
                         would not tell: {}",
                        self.shown,
                        self.server.name,
                        self.refusal(&error)
                    ));
                }
                Err(error) => {
                    cancel.disarm();
                    return self.lost(connection, self.service_error(&error)).await;
                }
            };
            every = pace(detailed.task.poll_interval_ms).unwrap_or(every);
            match detailed.payload {
                TaskPayload::InputRequired { input_requests } => {
                    if let Err(why) = self
                        .answer_task(connection, &id, input_requests, &mut answered, died)
                        .await
                    {
                        // The task cannot go on: `cancel` stops it.
                        return why;
                    }
                }
                TaskPayload::Completed { result } => {
                    cancel.disarm();
                    return self.task_result(result);
                }
                TaskPayload::Failed { error } => {
                    cancel.disarm();
                    let field = |name: &str| error.get(name);
                    let code = field("code")
                        .and_then(Value::as_i64)
                        .and_then(|code| i32::try_from(code).ok())
                        .unwrap_or(0);
                    let message = field("message").and_then(Value::as_str).unwrap_or("");
                    return ToolOutput::error(error_text(
                        &self.server.name,
                        &self.shown,
                        code,
                        message,
                        field("data"),
                    ));
                }
                TaskPayload::Cancelled => {
                    cancel.disarm();
                    return ToolOutput::error(format!(
                        "tool `{}` of MCP server `{}` became task `{id}`, which the server \
                         cancelled",
                        self.shown, self.server.name
                    ));
                }
                // Working, or a status of a later revision: ask again.
                _ => {}
            }
        }
    }

    /// Puts the task's questions not answered yet to the host and hands
    /// the server its answers; `Err` is how the call ends when there are
    /// none.
    async fn answer_task(
        &self,
        connection: &Connection,
        id: &str,
        asked: InputRequests,
        answered: &mut HashSet<String>,
        died: &mut DeathReceiver,
    ) -> Result<(), ToolOutput> {
        let fresh: InputRequests = asked
            .into_iter()
            .filter(|(key, _)| !answered.contains(key))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = fresh.keys().cloned().collect();
        let answers = self
            .server
            .settings
            .limits
            .answering
            .answer(fresh.into(), Some(self.context.clone()))
            .await
            .map_err(|why| {
                ToolOutput::error(format!(
                    "tool `{}` of MCP server `{}` asked its client a question from its task \
                     `{id}` that was not answered: {why}",
                    self.shown, self.server.name
                ))
            })?;
        let update =
            UpdateTaskRequest::new(UpdateTaskParams::new(id.to_owned(), answers.to_responses()));
        let updated = tokio::select! {
            updated = self.ask_server(connection, ClientRequest::UpdateTaskRequest(update)) => updated,
            death = wait_for_death(died) => return Err(self.crashed(&death)),
        };
        match updated {
            Ok(ServerResult::TaskAckResult(_) | ServerResult::EmptyResult(_)) => {
                answered.extend(keys);
                Ok(())
            }
            other => Err(ToolOutput::error(format!(
                "tool `{}` of MCP server `{}` asked its client a question from its task `{id}`, \
                 and the server would not take the answer: {}",
                self.shown,
                self.server.name,
                match other {
                    Err(error) => error.to_string(),
                    Ok(_) => "it answered `tasks/update` with something else".to_owned(),
                }
            ))),
        }
    }

    /// Sends the server one request of the call's (saying what the call's
    /// requests say of their client, which rmcp's own `get_task` and
    /// `update_task` would not) and waits for its answer.
    pub(super) async fn ask_server(
        &self,
        connection: &Connection,
        request: ClientRequest,
    ) -> Result<ServerResult, ServiceError> {
        connection
            .peer()
            .send_request_with_option(request, self.options(connection))
            .await?
            .await_response()
            .await
    }

    /// The tool's output for a completed task's result.
    fn task_result(&self, result: serde_json::Map<String, Value>) -> ToolOutput {
        match serde_json::from_value::<CallToolResult>(Value::Object(result)) {
            Ok(result) => {
                self.server.health.answered();
                to_output(&self.server.name, &self.shown, result)
            }
            Err(error) => ToolOutput::error(format!(
                "tool `{}` of MCP server `{}` completed its task with something that is not a \
                 tool's result: {error}",
                self.shown, self.server.name
            )),
        }
    }
}
