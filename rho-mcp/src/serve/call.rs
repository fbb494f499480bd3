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

use std::sync::Arc;

use rho_tool_core::{CallEnd, CallEvent, CallHandle, Executor, Outcome, Start, ToolCall};
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::client::{LogThreshold, McpClient};
use super::closing::ConnectionClosed;
use super::observe::ServedCall;
use super::progress::{Progress, ProgressSink};
use super::result;
use super::server::Shared;

/// Runs one `tools/call` to its MCP result.
///
/// `session` is the session's token, cancelled when the host closes it;
/// the connection's own (cancelled when the client has gone) comes with
/// the request. Partial results go to `progress` when the client asked
/// for them; the result is given only once they are sent (or, when the
/// call was stopped, once they are dropped).
pub(crate) async fn run<E: Executor>(
    shared: &Shared<E>,
    session_number: u64,
    params: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    session: &CancellationToken,
    progress: ProgressSink,
    log_threshold: &LogThreshold,
) -> CallToolResult {
    let connection = context
        .extensions
        .get::<ConnectionClosed>()
        .map_or_else(CancellationToken::new, |closed| closed.0.clone());
    let arguments = params
        .arguments
        .map_or_else(|| Value::Object(Default::default()), Value::Object);
    // Unique across sessions (each client numbers its own requests), so a
    // call's id names one call of one client.
    let call_id = format!("mcp-{session_number}-{}", context.id);
    let _asks_this_client = shared
        .elicitation
        .as_ref()
        .map(|asks| asks.enter(&call_id, context.peer.clone()));
    // Kept for the observer only: without one, the arguments move into
    // the call.
    let observed_arguments = shared.observer.as_ref().map(|_| arguments.clone());
    let call = ToolCall::new(call_id, params.name.into_owned(), arguments);
    // The tool may log to the client, or ask it, through this.
    let client = McpClient::new(context.peer.clone(), log_threshold.clone());
    let (handle, output_schema) = start(shared, call, client);
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
    let end = follow(handle, progress.as_mut(), stop()).await;
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
        return result::error_text("the call ended without a result".to_owned());
    };
    // The cap is for what tools answer: rho's own texts (a denial naming
    // its rule, a timeout, how a server died) always reach the client whole.
    let tools_answer = matches!(end.outcome, Outcome::Succeeded | Outcome::Failed);
    let Some(cap) = shared.output_cap.filter(|_| tools_answer) else {
        let result = result::to_mcp(&end, output_schema.as_deref(), &shared.outputs);
        observe(shared, &end, &result, observed_arguments, 0);
        return result;
    };
    let over = |part: &rho_tool_core::Content| {
        part.as_text()
            .is_some_and(|text| text.len() > cap.max_bytes())
    };
    if !end.result.content().iter().any(over) {
        let result = result::to_mcp(&end, output_schema.as_deref(), &shared.outputs);
        observe(shared, &end, &result, observed_arguments, 0);
        return result;
    }
    // The cap cuts a copy: the observer hears the whole result.
    let mut capped = end.clone();
    let cut_bytes = cap.apply_in_place(&mut capped.result);
    let result = result::to_mcp(&capped, output_schema.as_deref(), &shared.outputs);
    observe(shared, &end, &result, observed_arguments, cut_bytes);
    result
}

/// Tells the server's observer, if any, of the call's end.
fn observe<E: Executor>(
    shared: &Shared<E>,
    end: &CallEnd,
    result: &CallToolResult,
    arguments: Option<Value>,
    cut_bytes: usize,
) {
    if let (Some(observer), Some(arguments)) = (&shared.observer, arguments) {
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

/// Awaits the call's end, sending partial results to `progress` when the
/// client asked for them; aborts the call when `stop` comes first.
async fn follow<E: Executor>(
    mut handle: CallHandle<E>,
    progress: Option<&mut Progress>,
    stop: impl Future<Output = ()>,
) -> Option<CallEnd> {
    tokio::pin!(stop);
    match progress {
        // Nobody reads partial results: await the end alone, which keeps
        // none of them.
        None => tokio::select! {
            end = &mut handle => return Some(end),
            () = &mut stop => {}
        },
        Some(progress) => loop {
            tokio::select! {
                event = handle.next_event() => match event {
                    Some(CallEvent::Ended(end)) => return Some(end),
                    Some(CallEvent::Update(update)) => progress.report(&update),
                    Some(CallEvent::AwaitingApproval(_) | CallEvent::Running(_)) => {}
                    None => return None,
                },
                () = &mut stop => break,
            }
        },
    }
    handle.abort();
    while let Some(event) = handle.next_event().await {
        if let CallEvent::Ended(end) = event {
            return Some(end);
        }
    }
    None
}
