//! One `tools/call`, from the host's executor to the source's runtime and
//! back.
//!
//! The tool's future (in the host, on tokio, smol or any executor) spawns
//! the call on the source's runtime and then only waits on channels: the
//! answer, and partial results to pass to [`ToolContext::update`]. It also
//! holds the sending half of a "still wanted" channel; when rho drops the
//! future (the tool's timeout, a host abort), that half is dropped, the
//! call on the runtime sees it at once, stops waiting and sends
//! `notifications/cancelled` for its request. The call on the runtime also
//! waits for the connection's death, so a server that dies ends every call
//! in flight on it at that moment, as crashed.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::Poll;

use rho_tool_core::{ToolContext, ToolOutput};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelTaskParams, CancelTaskRequest,
    CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientNotification,
    ClientRequest, ErrorCode, InputRequiredResult, JsonObject, ProgressToken, RequestId,
    RequestMetaObject, ServerResult, TASKS_EXTENSION_ID,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{ErrorData, Peer, RoleClient};
use serde::Deserialize as _;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::answer::{error_text, to_output};
use super::connection::{Connection, Death, error_chain, wait_for_death};
use super::http::is_connection_failure;
use super::progress::ProgressRoutes;
use super::server::{Server, Unavailable};
use crate::serve::QUESTION_ROUNDS;

mod older_task;
mod task;

/// How many partial results may wait for the tool's future; more are
/// dropped (each progress notification says where the call is, the next
/// one says more).
const PROGRESS_BUFFER: usize = 64;

/// At most how many times a call through rmcp gives way after its answer,
/// for the progress sent before it to be routed (see
/// `Request::run_through_rmcp`).
const NOTIFICATION_YIELDS: usize = 3;

/// Calls tool `remote` of `server` (listed as `shown`) with `arguments`.
pub(crate) async fn call(
    server: &Arc<Server>,
    remote: &str,
    shown: &str,
    arguments: Value,
    context: ToolContext,
) -> ToolOutput {
    if server.is_closed() {
        return closed(server);
    }
    let arguments = match arguments {
        Value::Object(arguments) => Some(arguments),
        Value::Null => None,
        other => {
            return ToolOutput::error(format!(
                "tool `{shown}` takes a JSON object of arguments, not {other}"
            ));
        }
    };
    // A bounded server's turn, waited for with the clock held: the queue
    // is the server's limit, not the tool's time. Held by the call on the
    // runtime until it ends (or is given up, when this future is dropped).
    let turn = {
        let _held = context.pause_clock();
        match server.turn().await {
            Ok(turn) => turn,
            Err(_) => return closed(server),
        }
    };
    let (answer_tx, mut answer_rx) = oneshot::channel();
    let (progress_tx, mut progress_rx) = mpsc::channel(PROGRESS_BUFFER);
    // Dropped with this future: the call on the runtime then cancels.
    let (_wanted, unwanted) = oneshot::channel::<Infallible>();
    let request = Request {
        server: Arc::clone(server),
        remote: remote.to_owned(),
        shown: shown.to_owned(),
        arguments,
        context: context.clone(),
    };
    // Boxed: a call's future is large (about 8 KiB, most of it rmcp's),
    // and tokio moves a task's future whole into its cell and its state
    // whole at each stage: boxed, it is written once.
    let run = Box::pin(request.run(progress_tx));
    drop(server.runtime.handle().spawn(async move {
        let _turn = turn;
        tokio::select! {
            output = run => {
                let _ = answer_tx.send(output);
            }
            // Only an error: nothing is ever sent on it.
            _ = unwanted => {}
        }
    }));
    let mut progress_open = true;
    loop {
        // Progress first: what the server reported before its answer
        // reaches the host before the answer.
        let next = poll_fn(|cx| {
            if progress_open {
                match progress_rx.poll_recv(cx) {
                    Poll::Ready(Some(partial)) => return Poll::Ready(Next::Progress(partial)),
                    Poll::Ready(None) => progress_open = false,
                    Poll::Pending => {}
                }
            }
            if let Poll::Ready(answer) = Pin::new(&mut answer_rx).poll(cx) {
                return Poll::Ready(Next::Answer(answer.ok()));
            }
            Poll::Pending
        })
        .await;
        match next {
            Next::Progress(partial) => {
                // A partial result rho cannot hold is dropped; the answer
                // still comes.
                let _ = context.update(&partial);
            }
            Next::Answer(Some(output)) => return output,
            // The runtime dropped the call: the source was closed.
            Next::Answer(None) => return closed(server),
        }
    }
}

enum Next {
    Progress(Value),
    Answer(Option<ToolOutput>),
}

fn closed(server: &Server) -> ToolOutput {
    ToolOutput::error(format!(
        "the MCP source `{}` was closed; its tools are gone",
        server.name
    ))
}

/// A call as the runtime runs it.
struct Request {
    server: Arc<Server>,
    remote: String,
    shown: String,
    arguments: Option<JsonObject>,
    /// The call's context, for the host's answers to the server's
    /// questions.
    context: ToolContext,
}

/// How one `tools/call` request ended.
enum Round {
    /// With the tool's output.
    Ended(ToolOutput),
    /// With questions for the client (an input-required result): the
    /// call goes on once they are answered.
    Asked(Box<InputRequiredResult>),
}

impl Request {
    async fn run(self, progress: mpsc::Sender<Value>) -> ToolOutput {
        let connection = match self.server.connection_for(&self.context).await {
            Ok(connection) => connection,
            Err(why) => return self.unavailable(why),
        };
        let _registered = connection.in_flight().register(self.context.clone());
        if !connection.speaks_2026() && connection.runs_only_as_task(&self.remote) {
            let mut died = connection.death_watch();
            return self.run_as_task(&connection, progress, &mut died).await;
        }
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = self.arguments.clone();
        for _ in 0..QUESTION_ROUNDS {
            let asked = match self
                .run_through_rmcp(&connection, params.clone(), progress.clone())
                .await
            {
                Round::Ended(output) => return output,
                Round::Asked(asked) => asked,
            };
            // The same call again, with the host's answers and the
            // server's state as it sent it (a new request, with an id of
            // its own).
            let questions = asked.input_requests.unwrap_or_default().into();
            match self
                .server
                .settings
                .limits
                .answering
                .answer(questions, Some(self.context.clone()))
                .await
            {
                Ok(answers) => params.input_responses = Some(answers.to_responses()),
                Err(why) => {
                    return ToolOutput::error(format!(
                        "tool `{}` of MCP server `{}` asked its client a question (an \
                         input-required result) that was not answered: {why}",
                        self.shown, self.server.name
                    ));
                }
            }
            params.request_state = asked.request_state;
        }
        ToolOutput::error(format!(
            "tool `{}` of MCP server `{}` asked its client {QUESTION_ROUNDS} rounds of questions \
             without an answer of its own; rho gave up on it",
            self.shown, self.server.name
        ))
    }

    /// How the call's request goes: to a server on 2026-07-28, with
    /// [`meta`](Self::meta).
    fn options(&self, connection: &Connection) -> PeerRequestOptions {
        let mut options = PeerRequestOptions::no_options();
        options.meta = self.meta(connection);
        options
    }

    /// What each request of the call says to a server on 2026-07-28: what
    /// the client of this call takes, that rho follows tasks, and the log
    /// level asked for (rmcp says the rest of the client's context).
    /// `None` to older servers, which were told at the handshake.
    fn meta(&self, connection: &Connection) -> Option<RequestMetaObject> {
        if !connection.speaks_2026() {
            return None;
        }
        let mut meta = RequestMetaObject::new();
        let answering = &self.server.settings.limits.answering;
        let mut capabilities = answering.capabilities_for(&self.context);
        // rho follows a task the server makes of a call (see `task`).
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        meta.set_client_capabilities(capabilities);
        let level = *self
            .server
            .heard
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(level) = level {
            meta.set_log_level(level);
        }
        Some(meta)
    }

    /// The call sent through rmcp's service (an HTTP server's).
    async fn run_through_rmcp(
        &self,
        connection: &Connection,
        params: CallToolRequestParams,
        progress: mpsc::Sender<Value>,
    ) -> Round {
        let mut died = connection.death_watch();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = self.options(connection);
        let sent = tokio::select! {
            sent = connection.peer().send_request_with_option(request, options) => sent,
            death = wait_for_death(&mut died) => return Round::Ended(self.crashed(&death)),
        };
        let mut handle = match sent {
            Ok(handle) => handle,
            Err(error) => {
                return Round::Ended(self.lost(connection, self.service_error(&error)).await);
            }
        };
        let _route = Route::new(
            connection.routes(),
            handle.progress_token.clone(),
            progress.clone(),
        );
        let mut cancel = CancelOnDrop::request(&self.server, connection.peer(), handle.id.clone());
        let response = tokio::select! {
            response = &mut handle.rx => response,
            death = wait_for_death(&mut died) => {
                cancel.disarm();
                return Round::Ended(self.crashed(&death));
            }
        };
        cancel.disarm();
        // Progress the transport passed to rmcp's handler (a task of its
        // own each) may still be on its way to the route: let those tasks
        // run before the route goes (see `progress`).
        for _ in 0..NOTIFICATION_YIELDS {
            if connection.progress_settled() {
                break;
            }
            tokio::task::yield_now().await;
        }
        match response {
            Ok(Ok(ServerResult::InputRequiredResult(asked)))
                if self.server.settings.limits.answering.is_set() =>
            {
                Round::Asked(Box::new(asked))
            }
            // The server made a task of the call: followed to its end,
            // with the call's progress route still in place.
            Ok(Ok(ServerResult::CreateTaskResult(created))) => {
                Round::Ended(self.follow_task(connection, created.task, &mut died).await)
            }
            // A server on 2025-11-25 refuses so a plain call of a tool it
            // runs only as a task: run as one (see `older_task`).
            Ok(Err(ServiceError::McpError(error)))
                if error.code == ErrorCode::METHOD_NOT_FOUND && !connection.speaks_2026() =>
            {
                Round::Ended(self.run_as_task(connection, progress, &mut died).await)
            }
            response => Round::Ended(
                self.answered(connection, response.map_err(|_| AnswerLost))
                    .await,
            ),
        }
    }

    /// The server refused the call because its client lacks capabilities
    /// (named in the error's `requiredCapabilities`, MCP 2026-07-28): the
    /// host hears which, so a proxy can refuse its own client the same way.
    async fn missing_capabilities(&self, data: Option<&Value>) {
        let Some(missing) = data
            .and_then(|data| data.get("requiredCapabilities"))
            .and_then(|missing| ClientCapabilities::deserialize(missing).ok())
        else {
            return;
        };
        self.server
            .settings
            .limits
            .answering
            .missing_capabilities(missing, self.context.clone())
            .await;
    }

    /// The tool's output for the server's answer.
    async fn answered(
        &self,
        connection: &Connection,
        response: Result<Result<ServerResult, ServiceError>, AnswerLost>,
    ) -> ToolOutput {
        match response {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                self.server.health.answered();
                to_output(&self.server.name, &self.shown, result)
            }
            // An answer with no content at all reads as an empty result.
            Ok(Ok(ServerResult::EmptyResult(_))) => {
                self.server.health.answered();
                to_output(&self.server.name, &self.shown, CallToolResult::default())
            }
            // MCP 2026-07-28: the server wants its client to answer first,
            // and the host set no answerer: rho offered the server nothing
            // to ask with, so it asked what it may not; the call cannot go
            // on.
            Ok(Ok(ServerResult::InputRequiredResult(_))) => ToolOutput::error(format!(
                "tool `{}` of MCP server `{}` asked its client a question (an input-required \
                 result), and rho's import answers none: the server was offered no elicitation, \
                 sampling or roots",
                self.shown, self.server.name
            )),
            Ok(Ok(_)) => ToolOutput::error(format!(
                "tool `{}` of MCP server `{}` answered with something that is not a tool's result",
                self.shown, self.server.name
            )),
            Ok(Err(ServiceError::McpError(error))) => {
                if error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
                    self.missing_capabilities(error.data.as_ref()).await;
                }
                ToolOutput::error(self.refusal(&error))
            }
            Ok(Err(error)) => self.lost(connection, self.service_error(&error)).await,
            Err(AnswerLost) => {
                let closed = Lost {
                    what: "the connection closed".to_owned(),
                    connection_failed: true,
                };
                self.lost(connection, closed).await
            }
        }
    }

    /// The server's JSON-RPC error in answer to a request of the call,
    /// as the call's error text.
    fn refusal(&self, error: &ErrorData) -> String {
        error_text(
            &self.server.name,
            &self.shown,
            error.code.0,
            &error.message,
            error.data.as_ref(),
        )
    }

    /// What rmcp's error says of a request lost in the transport, and
    /// whether the connection itself failed.
    fn service_error(&self, error: &ServiceError) -> Lost {
        match error {
            ServiceError::TransportSend(error) => Lost {
                what: error_chain(error.error.as_ref()),
                connection_failed: is_connection_failure(error.error.as_ref()),
            },
            // Over HTTP: the answer's stream broke (past rmcp's brief
            // retries), or sent an event past the cap, which rmcp does not
            // tell apart. A server that went away and came back may leave
            // rmcp's session unable to recover (the next call hung until
            // its deadline), so this is the connection's end either way.
            ServiceError::TransportClosed => Lost {
                what: format!(
                    "the stream of its answer closed before the answer came: the server went \
                     away, or sent a message past the limit of {} bytes",
                    self.server.settings.limits.max_message
                ),
                connection_failed: true,
            },
            other => Lost {
                what: other.to_string(),
                connection_failed: false,
            },
        }
    }

    fn unavailable(&self, why: Unavailable) -> ToolOutput {
        match why {
            Unavailable::Closed => closed(&self.server),
            Unavailable::Quarantined(quarantine) => {
                ToolOutput::error(format!("tool `{}` cannot run: {quarantine}", self.shown))
            }
            Unavailable::StartFailed(why) => ToolOutput::error(format!(
                "tool `{}` cannot run: MCP server `{}` {why}",
                self.shown, self.server.name
            )),
        }
    }

    fn crashed(&self, death: &Death) -> ToolOutput {
        if death.deliberate || self.server.is_closed() {
            return closed(&self.server);
        }
        ToolOutput::crashed(format!(
            "tool `{}` did not answer: {}",
            self.shown,
            death.describe(&self.server.name)
        ))
    }

    /// The request failed in the transport.
    ///
    /// From a child process that is almost always its death, which its
    /// watcher publishes a moment later and which says more. Over HTTP
    /// there is no process to watch: a failed connection (nothing
    /// listens, the connection broke) is the connection's death; any other
    /// failure (an HTTP error status, an answer past the cap) is this
    /// call's crash alone.
    async fn lost(&self, connection: &Connection, lost: Lost) -> ToolOutput {
        let Lost {
            what,
            connection_failed,
        } = lost;
        if connection.is_http() {
            if !connection_failed {
                return ToolOutput::crashed(format!(
                    "tool `{}` did not answer: MCP server `{}` failed the call over HTTP ({what})",
                    self.shown, self.server.name
                ));
            }
            connection.transport_failed(&what);
        }
        let mut died = connection.death_watch();
        let settled = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            wait_for_death(&mut died),
        )
        .await;
        match settled {
            Ok(death) => self.crashed(&death),
            Err(_) => ToolOutput::crashed(format!(
                "tool `{}` did not answer: the connection to MCP server `{}` failed ({what})",
                self.shown, self.server.name
            )),
        }
    }
}

/// The answer's channel closed without an answer: the connection is gone.
struct AnswerLost;

/// How a request was lost in the transport.
struct Lost {
    /// What failed, in words.
    what: String,
    /// The connection itself failed, not only this request.
    connection_failed: bool,
}

/// A call's progress route, removed when the call ends.
struct Route<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl<'a> Route<'a> {
    fn new(routes: &'a ProgressRoutes, token: ProgressToken, to: mpsc::Sender<Value>) -> Self {
        routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), to);
        Self { routes, token }
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}

/// Gives up a request or a task unless disarmed: dropped while the call's
/// answer has not come, the call was given up (its timeout, the host's
/// abort), and the server is told so.
struct CancelOnDrop {
    server: Arc<Server>,
    /// The peer the request was sent on; `None` once disarmed.
    via: Option<Peer<RoleClient>>,
    what: Cancel,
}

/// What a given-up call cancels.
enum Cancel {
    /// A request not answered yet: `notifications/cancelled`.
    Request(RequestId),
    /// A task the server made of the call: `tasks/cancel`, with what the
    /// call's requests say of their client.
    Task(String, PeerRequestOptions),
}

impl CancelOnDrop {
    fn request(server: &Arc<Server>, via: &Peer<RoleClient>, id: RequestId) -> Self {
        Self {
            server: Arc::clone(server),
            via: Some(via.clone()),
            what: Cancel::Request(id),
        }
    }

    fn task(
        server: &Arc<Server>,
        via: &Peer<RoleClient>,
        id: String,
        options: PeerRequestOptions,
    ) -> Self {
        Self {
            server: Arc::clone(server),
            via: Some(via.clone()),
            what: Cancel::Task(id, options),
        }
    }

    fn disarm(&mut self) {
        self.via = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.via.take() else {
            return;
        };
        let what = std::mem::replace(
            &mut self.what,
            Cancel::Task(String::new(), PeerRequestOptions::no_options()),
        );
        let runtime = self.server.runtime.handle();
        // Spawned through the handle, which never panics, even while the
        // runtime shuts down (the message is then moot: the server is
        // being killed).
        drop(runtime.spawn(async move {
            match what {
                Cancel::Request(id) => {
                    let notification = ClientNotification::CancelledNotification(
                        CancelledNotification::new(CancelledNotificationParam::new(
                            Some(id),
                            Some(
                                "rho gave up the call (its timeout, or the host aborted it)"
                                    .to_owned(),
                            ),
                        )),
                    );
                    let _ = peer.send_notification(notification).await;
                }
                Cancel::Task(id, options) => {
                    let cancel = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
                        CancelTaskParams::new(id),
                    ));
                    if let Ok(sent) = peer.send_request_with_option(cancel, options).await {
                        let _ = sent.await_response().await;
                    }
                }
            }
        }));
    }
}
