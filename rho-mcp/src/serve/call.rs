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

//! On a client on 2026-07-28 or later a tool's questions to the client
//! (through [`McpClient`]) end the request that follows the call with an
//! input-required result; the call waits, parked on the server, for the
//! retry that answers them, which then follows it on (see `input`).

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{CallEnd, CallEvent, CallHandle, Executor, Outcome, Start, ToolCall};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ErrorData,
    InputResponses, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::client::{LogThreshold, McpClient, McpClientError};
use super::closing::ConnectionClosed;
use super::elicit::InFlight;
use super::input::{self, AskedQuestions, Pending, Taken, Waiting};
use super::observe::ServedCall;
use super::progress::{Progress, ProgressSink};
use super::result;
use super::server::Shared;

/// A call being followed, by the request that started it or by a retry
/// that resumed it; parked between them (see `input`).
pub(crate) struct Following<E: Executor> {
    handle: CallHandle<E>,
    /// The questions its tool asks, on a client on 2026-07-28 or later.
    questions: Option<AskedQuestions>,
    /// A question waiting for the client's answers.
    pending: Option<Pending>,
    /// The tool and arguments of the request that started it, which a
    /// retry must repeat (2026-07-28 and later only).
    asked_as: Option<(String, Value)>,
    output_schema: Option<Arc<Value>>,
    /// Kept for the observer only.
    observed_arguments: Option<Value>,
    /// The call's entry in the approver's directory, for as long as the
    /// call lives.
    _asks_this_client: Option<InFlight>,
}

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
            begin(shared, call, context, log_threshold, asks)
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
        match follow(
            &mut following,
            &mut responses,
            declared.as_ref(),
            progress.as_mut(),
            stop(),
        )
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
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
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
) -> Box<Following<E>> {
    // The tool may log to the client, or ask it, through this.
    let (client, questions, asked_as) = if let Some(declared) = modern {
        let (asker, questions) = mpsc::unbounded_channel();
        let client =
            McpClient::modern(context.peer.clone(), log_threshold.clone(), declared, asker);
        let asked_as = (call.name.clone(), call.arguments.clone());
        (client, Some(questions), Some(asked_as))
    } else {
        let client = McpClient::new(context.peer.clone(), log_threshold.clone());
        (client, None, None)
    };
    let asks_this_client = shared
        .elicitation
        .as_ref()
        .map(|asks| asks.enter(&call.id, client.clone()));
    // Without an observer the arguments move into the call.
    let observed_arguments = shared.observer.as_ref().map(|_| call.arguments.clone());
    let (handle, output_schema) = start(shared, call, client);
    Box::new(Following {
        handle,
        questions,
        pending: None,
        asked_as,
        output_schema,
        observed_arguments,
        _asks_this_client: asks_this_client,
    })
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

/// What following a call for one request came to.
enum Step {
    /// The call ended (`None`: without an end, a guard only).
    Ended(Option<CallEnd>),
    /// The tool asks; the question is in `pending`.
    Asks,
    /// The tool asks what the client did not declare it can take.
    Missing(ClientCapabilities),
}

/// Follows the call until it ends or asks what `responses` do not answer,
/// sending partial results to `progress` when the client asked for them;
/// aborts the call when `stop` comes first.
async fn follow<E: Executor>(
    following: &mut Following<E>,
    responses: &mut InputResponses,
    declared: Option<&ClientCapabilities>,
    mut progress: Option<&mut Progress>,
    stop: impl Future<Output = ()>,
) -> Step {
    tokio::pin!(stop);
    loop {
        if let Some(mut pending) = following.pending.take() {
            if let Some(missing) = pending.missing_capabilities(declared) {
                pending.fail(McpClientError::NotOffered {
                    what: "input",
                    why: "the client did not declare it can take it".to_owned(),
                });
                return Step::Missing(missing);
            }
            pending.take_answers(responses);
            match pending.finish() {
                Ok(()) => continue,
                Err(unanswered) => {
                    following.pending = Some(unanswered);
                    return Step::Asks;
                }
            }
        }
        // Nothing reads partial results and nothing can be asked: await
        // the end alone, which keeps none of them.
        if progress.is_none() && following.questions.is_none() {
            tokio::select! {
                end = &mut following.handle => return Step::Ended(Some(end)),
                () = &mut stop => break,
            }
        }
        let questions = async {
            match following.questions.as_mut() {
                Some(questions) => questions.recv().await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            event = following.handle.next_event() => Next::Event(event),
            question = questions => Next::Question(question),
            () = &mut stop => break,
        };
        match next {
            Next::Event(Some(CallEvent::Ended(end))) => return Step::Ended(Some(end)),
            Next::Event(Some(CallEvent::Update(update))) => {
                if let Some(progress) = progress.as_deref_mut() {
                    progress.report(&update);
                }
            }
            Next::Event(Some(CallEvent::AwaitingApproval(_) | CallEvent::Running(_))) => {}
            Next::Event(None) => return Step::Ended(None),
            Next::Question(Some(question)) => following.pending = Some(Pending::new(question)),
            // Every asker is gone (the tool dropped its client).
            Next::Question(None) => following.questions = None,
        }
    }
    Step::Ended(stop_call(&mut following.handle).await)
}

/// What came first while following a call.
enum Next {
    Event(Option<CallEvent>),
    Question(Option<input::Question>),
}

/// Aborts the call and gives its end.
async fn stop_call<E: Executor>(handle: &mut CallHandle<E>) -> Option<CallEnd> {
    handle.abort();
    while let Some(event) = handle.next_event().await {
        if let CallEvent::Ended(end) = event {
            return Some(end);
        }
    }
    None
}

/// The MCP result of the call's `end`, told to the observer.
fn finish<E: Executor>(
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
fn observe<E: Executor>(
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

/// Starts `call`: the tool, or a refusal that ends at once (unknown or
/// disabled tool, arguments that do not fit). Also gives the tool's output
/// schema, to check its answer against.
fn start<E: Executor>(
    shared: &Shared<E>,
    call: ToolCall,
    client: McpClient,
) -> (CallHandle<E>, Option<Arc<Value>>) {
    let runner = &shared.runner;
    match shared.registry.resolve(&call.name) {
        Err(refusal) => (runner.start(call, refusal), None),
        Ok(resolved) => {
            let info = resolved.info().clone();
            let output_schema = info.output_schema.clone().map(Arc::new);
            let handle = match shared.arguments.check_tool(&info, &call.arguments) {
                Ok(()) => runner.start(call, Start::from(resolved).with_extension(client)),
                // Told to the tool's source as a refusal, never a strike.
                Err(error) => runner.start(call, resolved.refused(error.to_result())),
            };
            (handle, output_schema)
        }
    }
}
