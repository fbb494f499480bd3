//! A call of a tool that a server on 2025-11-25 runs only as a task (its
//! `execution.taskSupport` is `required`: MCP 2025-11-25's tasks, the
//! revision before the tasks extension `task` follows).
//!
//! rmcp reads neither a tool's `execution` nor that revision's task
//! requests. Over stdio, rho reads the listing's lines itself (see
//! `task_support`) and calls such a tool as a task at once; otherwise the
//! server tells it: it refuses a plain call of one with JSON-RPC's
//! "Method not found", as the revision says it must, before the tool runs.
//! The call is then sent again as a task (`tools/call` with `task`), and
//! its result asked for with `tasks/result`, which the server answers once
//! the task has ended; the questions the task asks meanwhile come as the
//! server's own requests, which the host's answerer answers as for any
//! call. Given up (its timeout, the host's abort, the source closing), the
//! call cancels the task (`tasks/cancel`), so the server stops the work
//! instead of finishing it for nobody. To the host, and to a proxy's
//! client, it is one call like any other.

use rho_tool_core::ToolOutput;
use rmcp::model::{CallToolResult, ClientRequest, CustomRequest, ServerResult};
use rmcp::service::ServiceError;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::super::connection::{Connection, DeathReceiver, wait_for_death};
use super::{AnswerLost, CancelOnDrop, Request, Route};

impl Request {
    /// Runs the call as a task of MCP 2025-11-25, to its end.
    pub(super) async fn run_as_task(
        &self,
        connection: &Connection,
        progress: mpsc::Sender<Value>,
        died: &mut DeathReceiver,
    ) -> ToolOutput {
        let mut call = Map::new();
        call.insert("name".to_owned(), self.remote.clone().into());
        if let Some(arguments) = &self.arguments {
            call.insert("arguments".to_owned(), Value::Object(arguments.clone()));
        }
        // The server keeps the task as long as it likes.
        call.insert("task".to_owned(), json!({}));
        let request = custom("tools/call", Value::Object(call));
        let sent = tokio::select! {
            sent = connection.peer().send_request_with_option(request, self.options(connection)) => sent,
            death = wait_for_death(died) => return self.crashed(&death),
        };
        let mut handle = match sent {
            Ok(handle) => handle,
            Err(error) => return self.lost(connection, self.service_error(&error)).await,
        };
        // The task reports its progress with the token rmcp gave the
        // request, for as long as it runs.
        let _route = Route::new(connection.routes(), handle.progress_token.clone(), progress);
        let mut cancel = CancelOnDrop::request(&self.server, connection.peer(), handle.id.clone());
        let created = tokio::select! {
            created = &mut handle.rx => created,
            death = wait_for_death(died) => {
                cancel.disarm();
                return self.crashed(&death);
            }
        };
        cancel.disarm();
        let id = match created {
            Ok(Ok(result)) => match created_task(&result) {
                Some(id) => id,
                // A server that ran the call at once after all.
                None => return self.answered(connection, Ok(Ok(result))).await,
            },
            answer => {
                return self
                    .answered(connection, answer.map_err(|_| AnswerLost))
                    .await;
            }
        };
        let mut cancel = CancelOnDrop::task(
            &self.server,
            connection.peer(),
            id.clone(),
            self.options(connection),
        );
        let request = custom("tasks/result", json!({ "taskId": id }));
        let ended = tokio::select! {
            ended = self.ask_server(connection, request) => ended,
            death = wait_for_death(died) => {
                cancel.disarm();
                return self.crashed(&death);
            }
        };
        cancel.disarm();
        match ended {
            Ok(result) => self.answered(connection, Ok(as_call_result(result))).await,
            Err(ServiceError::McpError(error)) => ToolOutput::error(format!(
                "tool `{}` of MCP server `{}` ran as task `{id}`, which ended without a result: {}",
                self.shown,
                self.server.name,
                self.refusal(&error)
            )),
            Err(error) => {
                self.answered(connection, Ok::<_, AnswerLost>(Err(error)))
                    .await
            }
        }
    }
}

/// A request rmcp has no type for, as its method and parameters say.
fn custom(method: &str, params: Value) -> ClientRequest {
    ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)))
}

/// The id of the task a 2025-11-25 server made of a call (its
/// `CreateTaskResult`: `{"task": {"taskId": ...}}`), read from what rmcp
/// made of the answer; `None` for an answer that is not one.
fn created_task(result: &ServerResult) -> Option<String> {
    let ServerResult::CustomResult(custom) = result else {
        return None;
    };
    custom
        .0
        .get("task")?
        .get("taskId")?
        .as_str()
        .map(str::to_owned)
}

/// A task's result as the tool's: rmcp reads a result of `tasks/result`
/// as a call's where it can, and keeps it whole where it cannot.
fn as_call_result(result: ServerResult) -> Result<ServerResult, ServiceError> {
    match result {
        ServerResult::CustomResult(custom) => serde_json::from_value::<CallToolResult>(custom.0)
            .map(ServerResult::CallToolResult)
            .map_err(|_| ServiceError::UnexpectedResponse),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerJsonRpcMessage;

    use super::*;

    /// What rmcp makes of a server's answer to a request rho sent.
    fn read(result: Value) -> ServerResult {
        let message = json!({ "jsonrpc": "2.0", "id": 1, "result": result });
        match serde_json::from_value::<ServerJsonRpcMessage>(message) {
            Ok(ServerJsonRpcMessage::Response(response)) => response.result,
            other => panic!("not read as a response: {other:?}"),
        }
    }

    /// A 2025-11-25 `CreateTaskResult` reaches rho whole (as rmcp's
    /// catch-all), so the task's id is read: the upgrade of rmcp that
    /// reads it as another result would lose the task, and this fails.
    #[test]
    fn a_created_task_of_2025_11_25_is_read_whole() {
        let created = json!({ "task": {
            "taskId": "t-1", "status": "working", "statusMessage": "Gathering sources...",
            "createdAt": "2026-12-07T14:00:00Z", "lastUpdatedAt": "2026-12-07T14:00:00Z",
            "ttl": 60000, "pollInterval": 1000,
        }});
        assert_eq!(created_task(&read(created)).as_deref(), Some("t-1"));
        let with_meta = json!({ "task": { "taskId": "t-2", "status": "working",
            "createdAt": "x", "lastUpdatedAt": "x", "ttl": null }, "_meta": { "k": 1 } });
        assert_eq!(created_task(&read(with_meta)).as_deref(), Some("t-2"));
    }

    /// A call's result is no task, whatever rmcp reads it as.
    #[test]
    fn a_result_is_no_created_task() {
        let result = json!({ "content": [{ "type": "text", "text": "done" }] });
        assert_eq!(created_task(&read(result)), None);
        assert_eq!(created_task(&read(json!({}))), None);
    }

    /// `tasks/result` answers with the call's result and the task named
    /// in its `_meta`: the tool's result, its content kept.
    #[test]
    fn a_tasks_result_is_the_calls_result() {
        let ended = json!({
            "content": [{ "type": "text", "text": "# Research Report" }],
            "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "t-1" } },
        });
        match as_call_result(read(ended)) {
            Ok(ServerResult::CallToolResult(result)) => {
                assert_eq!(result.content.len(), 1);
            }
            other => panic!("not a call's result: {other:?}"),
        }
    }
}
