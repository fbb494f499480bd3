//! `tools/call` as a rho call.
//!
//! Each call goes the way a turn's call goes: looked up in the registry (an
//! unknown name gets the nearest names, a quarantined tool its reason), its
//! arguments checked against the tool's schema before the gate (every
//! failing path listed), then started on the runner, so the gate runs in
//! the call's task, the clock starts at approval and the deadline is a real
//! kill. The call's end is mapped to the MCP result (`result`).
//!
//! The client can stop a call at any time: `notifications/cancelled` for
//! its request, or the connection closing. Either aborts the rho call at
//! once (its task is killed; an abort is never counted against the tool).
//!
//! On a client on 2026-07-28 or later a tool's questions to the client
//! (through [`McpClient`]) end the request that follows the call with an
//! input-required result; the call waits, parked on the server, for the
//! retry that answers them, which then follows it on (see `input`). A
//! call of a tool the host runs as a task, from a client that takes
//! tasks, becomes one once it has run a while (see `tasks`).

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{CallEnd, CallHandle, Executor, Outcome, Start, ToolCall};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ErrorData,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::client::{ClientSession, LogThreshold, McpClient, McpClientError};
use super::closing::ConnectionClosed;
use super::follow::{Following, Step, stop_call};
use super::input::{self, Pending, Taken, Waiting};
use super::observe::ServedCall;
use super::progress::{Progress, ProgressSink};
use super::result;
use super::server::Shared;
use super::tasks::{self, TaskSupport};

/// The calls parked on a server.
pub(crate) type Parked<E> = Waiting<Box<Following<E>>>;

/// How long a parked call waits for its client's retry by default.
pub(crate) const DEFAULT_INPUT_DEADLINE: Duration = Duration::from_secs(600);

/// Runs one `tools/call` to its MCP result: the tool's result, an
/// input-required result, or a protocol error (a `requestState` that
/// resumes nothing, a question the client did not declare it can take).
///
/// `session` is the session's token, cancelled when the host closes it;
/// the connection's own (cancelled when the client has gone) comes with
/// the request. Partial results go to `progress` when the client asked
/// for them; the result is given only once they are sent (or, when the
/// call was stopped, once they are dropped).
pub(crate) async fn run<E: Executor>(
    shared: &Arc<Shared<E>>,
    session_number: u64,
    params: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    session: &CancellationToken,
    progress: ProgressSink,
    log_threshold: &LogThreshold,
) -> Result<CallToolResponse, ErrorData> {
    let connection = context
        .extensions
        .get::<ConnectionClosed>()
        .map_or_else(CancellationToken::new, |closed| closed.0.clone());
    let arguments = params
        .arguments
        .map_or_else(|| Value::Object(Default::default()), Value::Object);
    let mut responses = params.input_responses.unwrap_or_default();
    // Only a client on 2026-07-28 or later is asked the way that needs
    // them; an older one's calls skip the copy.
    let modern = is_modern(context);
    let declared = modern.then(|| context.client_capabilities()).flatten();
    let mut following = match params.request_state {
        Some(token) => resume(&shared.waiting, &token, &params.name, &arguments)?,
        None => {
            // Unique across sessions (each client numbers its own
            // requests), so a call's id names one call of one client.
            let call_id = format!("mcp-{session_number}-{}", context.id);
            let call = ToolCall::new(call_id, params.name.into_owned(), arguments);
            let asks = modern.then(|| declared.clone());
            let session = ClientSession {
                number: session_number,
                closed: session.clone(),
            };
            begin(shared, call, context, log_threshold, asks, session)?
        }
    };
    let mut progress = context
        .meta
        .get_progress_token()
        .map(|token| Progress::start(progress, token));
    let stop = || async {
        tokio::select! {
            () = context.ct.cancelled() => {}
            () = session.cancelled() => {}
            () = connection.cancelled() => {}
        }
    };
    let end = loop {
        match following
            .follow(&mut responses, declared.as_ref(), progress.as_mut(), stop())
            .await
        {
            Step::Ended(end) => break end,
            Step::Missing(capabilities) => {
                // MCP's answer to a request that needs what the client did
                // not declare; the call ends (an abort, never the tool's
                // fault).
                if let Some(end) = stop_call(&mut following.handle).await {
                    observe(shared, &end, None, following.observed_arguments, 0);
                }
                return Err(ErrorData::missing_required_client_capability(capabilities));
            }
            Step::Asks => match park(shared, following) {
                Ok(asks) => return Ok(CallToolResponse::InputRequired(asks)),
                Err(back) => following = back,
            },
            Step::BecomesTask => match tasks::start(shared, following) {
                Ok(task) => return Ok(CallToolResponse::Task(task)),
                // No room for another task: the client's request waits
                // for the answer instead.
                Err(back) => following = back,
            },
        }
    };
    if let Some(progress) = progress {
        // The answer waits for the progress before it, unless nobody
        // wants either any more (the client cancelled or left, the
        // session closed): then what is still queued is dropped.
        tokio::select! {
            biased;
            () = stop() => {}
            () = progress.finish() => {}
        }
    }
    let Some(end) = end else {
        // A handle reports its end exactly once; this is a guard only.
        return Ok(result::error_text("the call ended without a result".to_owned()).into());
    };
    let Following {
        output_schema,
        observed_arguments,
        ..
    } = *following;
    Ok(finish(shared, &end, output_schema.as_deref(), observed_arguments).into())
}

/// Whether `context`'s request is on 2026-07-28 or later, where a server
/// asks its client through input-required results.
pub(crate) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Starts the call of a request without `requestState`; `modern` holds
/// what a client on 2026-07-28 or later declared with it.
fn begin<E: Executor>(
    shared: &Shared<E>,
    call: ToolCall,
    context: &RequestContext<RoleServer>,
    log_threshold: &LogThreshold,
    modern: Option<Option<ClientCapabilities>>,
    session: ClientSession,
) -> Result<Box<Following<E>>, ErrorData> {
    let takes_tasks = modern
        .as_ref()
        .and_then(Option::as_ref)
        .is_some_and(ClientCapabilities::supports_tasks);
    // The tool may log to the client, or ask it, through this.
    let (client, questions, asked_as) = if let Some(declared) = modern.clone() {
        let (asker, questions) = mpsc::unbounded_channel();
        // Logging is the request's to ask for, not the session's.
        let threshold = LogThreshold::of_request(context.meta.log_level());
        let client = McpClient::modern(context.peer.clone(), threshold, declared, asker);
        let asked_as = (call.name.clone(), call.arguments.clone());
        (client, Some(questions), Some(asked_as))
    } else {
        let client =
            McpClient::new(context.peer.clone(), log_threshold.clone()).in_session(session);
        (client, None, None)
    };
    let asks_this_client = shared
        .elicitation
        .as_ref()
        .map(|asks| asks.enter(&call.id, client.clone()));
    // Without an observer the arguments move into the call.
    let observed_arguments = shared.observer.as_ref().map(|_| call.arguments.clone());
    let started = start(shared, call, client, takes_tasks)?;
    Ok(Box::new(Following {
        handle: started.handle,
        questions,
        pending: None,
        declared: modern.flatten(),
        asked_as,
        task_after: started.task_after,
        running: false,
        output_schema: started.output_schema,
        observed_arguments,
        _asks_this_client: asks_this_client,
    }))
}

/// The call parked under `token`, for a retry of `tool` with `arguments`.
fn resume<E: Executor>(
    waiting: &Parked<E>,
    token: &str,
    tool: &str,
    arguments: &Value,
) -> Result<Box<Following<E>>, ErrorData> {
    let its_own = |parked: &Following<E>| {
        parked
            .asked_as
            .as_ref()
            .is_some_and(|(name, asked)| name == tool && asked == arguments)
    };
    match waiting.take(token, |parked| its_own(parked)) {
        Taken::Call(following) => Ok(following),
        Taken::NotItsOwn => Err(ErrorData::invalid_params(
            "requestState belongs to a call of another tool or with other arguments",
            None,
        )),
        Taken::Nothing => Err(ErrorData::invalid_params(
            "no call waits for this requestState on this server: it was altered, \
             was used already, its call ended (at its input deadline, say), \
             or the call waits on another server",
            None,
        )),
    }
}

/// Parks `following` until its client answers, giving the input-required
/// result to send; gives the call back when it cannot wait (as many calls
/// wait as may), its question failed.
fn park<E: Executor>(
    shared: &Arc<Shared<E>>,
    mut following: Box<Following<E>>,
) -> Result<rmcp::model::InputRequiredResult, Box<Following<E>>> {
    let unanswered = following
        .pending
        .as_ref()
        .map(Pending::unanswered)
        .unwrap_or_default();
    match shared.waiting.park(following) {
        Ok(token) => {
            expire(shared.clone(), token.clone());
            Ok(input::input_required(unanswered, token))
        }
        Err(back) => {
            following = back;
            if let Some(pending) = following.pending.take() {
                pending.fail(McpClientError::Failed {
                    what: "input",
                    why: format!(
                        "{} calls already wait for their clients' answers on this server",
                        Parked::<E>::MOST
                    ),
                });
            }
            Err(following)
        }
    }
}

/// Ends the call parked under `token` at the server's input deadline,
/// unless a retry took it first.
fn expire<E: Executor>(shared: Arc<Shared<E>>, token: String) {
    let deadline = shared.input_deadline;
    tokio::spawn(async move {
        tokio::time::sleep(deadline).await;
        let Some(mut following) = shared.waiting.remove(&token) else {
            return;
        };
        if let Some(end) = stop_call(&mut following.handle).await {
            observe(&shared, &end, None, following.observed_arguments, 0);
        }
    });
}

/// The MCP result of the call's `end`, told to the observer.
pub(crate) fn finish<E: Executor>(
    shared: &Shared<E>,
    end: &CallEnd,
    output_schema: Option<&Value>,
    observed_arguments: Option<Value>,
) -> CallToolResult {
    // The cap is for what tools answer: rho's own texts (a denial naming
    // its rule, a timeout, how a server died) always reach the client whole.
    let tools_answer = matches!(end.outcome, Outcome::Succeeded | Outcome::Failed);
    let Some(cap) = shared.output_cap.filter(|_| tools_answer) else {
        let result = result::to_mcp(end, output_schema, &shared.outputs);
        observe(shared, end, Some(&result), observed_arguments, 0);
        return result;
    };
    let over = |part: &rho_tool_core::Content| {
        part.as_text()
            .is_some_and(|text| text.len() > cap.max_bytes())
    };
    if !end.result.content().iter().any(over) {
        let result = result::to_mcp(end, output_schema, &shared.outputs);
        observe(shared, end, Some(&result), observed_arguments, 0);
        return result;
    }
    // The cap cuts a copy: the observer hears the whole result.
    let mut capped = end.clone();
    let cut_bytes = cap.apply_in_place(&mut capped.result);
    let result = result::to_mcp(&capped, output_schema, &shared.outputs);
    observe(shared, end, Some(&result), observed_arguments, cut_bytes);
    result
}

/// Tells the server's observer, if any, of the call's end.
///
/// A call no client hears the end of (ended at its input deadline, or
/// for a missing capability) is told with the result rho makes of it.
pub(crate) fn observe<E: Executor>(
    shared: &Shared<E>,
    end: &CallEnd,
    result: Option<&CallToolResult>,
    arguments: Option<Value>,
    cut_bytes: usize,
) {
    if let (Some(observer), Some(arguments)) = (&shared.observer, arguments) {
        let made;
        let result = match result {
            Some(result) => result,
            None => {
                made = result::to_mcp(end, None, &shared.outputs);
                &made
            }
        };
        observer.ended(&ServedCall {
            end,
            result,
            arguments: &arguments,
            cut_bytes,
        });
    }
}

/// A call as [`start`] started it.
struct Started<E: Executor> {
    handle: CallHandle<E>,
    /// The tool's output schema, to check its answer against.
    output_schema: Option<Arc<Value>>,
    /// Set when the call may become a task (see `tasks`).
    task_after: Option<Duration>,
}

/// Starts `call`: the tool, or a refusal that ends at once (unknown or
/// disabled tool, arguments that do not fit). A tool the host runs only
/// as a task is refused to a client that does not take tasks
/// (`takes_tasks`), before anything runs, with MCP's missing-capability
/// error.
fn start<E: Executor>(
    shared: &Shared<E>,
    call: ToolCall,
    client: McpClient,
    takes_tasks: bool,
) -> Result<Started<E>, ErrorData> {
    let runner = &shared.runner;
    let resolved = match shared.registry.resolve(&call.name) {
        Err(refusal) => {
            return Ok(Started {
                handle: runner.start(call, refusal),
                output_schema: None,
                task_after: None,
            });
        }
        Ok(resolved) => resolved,
    };
    let info = resolved.info().clone();
    let support = shared
        .tasks
        .as_ref()
        .and_then(|tasks| tasks.support(&info.name, &info.annotations, info.untrusted));
    if support == Some(TaskSupport::Required) && !takes_tasks {
        return Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    let task_after = shared
        .tasks
        .as_ref()
        .filter(|_| support.is_some() && takes_tasks)
        .map(tasks::McpTasks::after_time);
    let output_schema = info.output_schema.clone().map(Arc::new);
    let handle = match shared.arguments.check_tool(&info, &call.arguments) {
        Ok(()) => runner.start(call, Start::from(resolved).with_extension(client)),
        // Told to the tool's source as a refusal, never a strike.
        Err(error) => runner.start(call, resolved.refused(error.to_result())),
    };
    Ok(Started {
        handle,
        output_schema,
        task_after,
    })
}
