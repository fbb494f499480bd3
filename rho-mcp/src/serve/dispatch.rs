//! `tools/call` run straight from the stream transport, past rmcp's
//! service.
//!
//! Through rmcp, a request read by the transport goes to the service's
//! loop, which spawns a task for its handler; the handler's answer goes
//! back to the loop by channel, and the loop spawns another task to write
//! it. For the one request a busy session carries most, those turns cost
//! more than the call's own work. So once the client is initialized (the
//! classic handshake done, rmcp's peer at hand), the transport hands each
//! plain `tools/call` it reads to a task of its own here, which runs it as
//! the session's handler would (the same [`SessionCalls::call`]) and
//! writes the answer on the transport's output itself.
//!
//! What rmcp does for a request is kept:
//!
//! - `notifications/cancelled` for such a call cancels it (read by the
//!   transport, which takes it), and its answer is then not sent, as rmcp
//!   drops the answer of a cancelled request;
//! - the connection's end and the session's close abort it, and the
//!   transport waits for its answer before it closes (five seconds at
//!   most, after rmcp's own wait for its handlers; then the call's task
//!   is aborted);
//! - its result is shaped for the protocol version the session
//!   negotiated, as rmcp shapes a handler's result;
//! - only a call whose `_meta` holds nothing but a progress token is run
//!   here, so that rmcp still checks any per-request protocol metadata;
//!   anything read before the handshake is done goes to rmcp too;
//! - a request id is answered once: a second call under an id still in
//!   flight is neither run nor answered (JSON-RPC forbids reusing an id;
//!   rmcp answers only one of the two as well).
//!
//! Its progress notifications are written on the same output by the call's
//! progress task, and its answer only after them (a stopped call's
//! progress still queued is dropped).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rho_tool_core::Executor;
use rmcp::model::{
    ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use tokio::io::AsyncWrite;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::call_request::PlainCall;
use super::closing::ConnectionClosed;
use super::progress::{ProgressSink, SendLine};
use super::session::SessionCalls;
use super::stream::{CallDispatch, SETTLE};
use crate::lines::encode;
use crate::output::SharedOutput;

/// A call in flight.
struct InFlight {
    /// Cancelled by the client's `notifications/cancelled`.
    cancel: CancellationToken,
    /// Its task, aborted when it does not end in time at the close.
    abort: AbortHandle,
}

/// Removes call `id` from `dispatch`'s calls in flight when dropped.
struct InFlightUntilDropped<'a, E: Executor, W> {
    dispatch: &'a Dispatch<E, W>,
    id: RequestId,
}

impl<E: Executor, W> Drop for InFlightUntilDropped<'_, E, W> {
    fn drop(&mut self) {
        self.dispatch
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// Runs one session's plain calls, writing their answers to `W`.
pub(crate) struct Dispatch<E: Executor, W> {
    calls: SessionCalls<E>,
    output: SharedOutput<W>,
    /// Writes a line on `output`, for the calls' progress.
    send_line: SendLine,
    /// Cancelled when the client has gone.
    connection: CancellationToken,
    /// rmcp's peer of the client, once the handshake is done: the gate's
    /// questions go through it.
    peer: OnceLock<Peer<RoleServer>>,
    /// The calls in flight, by request id.
    in_flight: Mutex<HashMap<RequestId, InFlight>>,
    /// The calls' tasks, waited for before the output closes.
    tasks: TaskTracker,
}

impl<E: Executor, W> Dispatch<E, W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(
        calls: SessionCalls<E>,
        output: SharedOutput<W>,
        connection: CancellationToken,
    ) -> Self {
        Self {
            calls,
            send_line: send_line(&output),
            output,
            connection,
            peer: OnceLock::new(),
            in_flight: Mutex::default(),
            tasks: TaskTracker::new(),
        }
    }

    /// The handshake is done: calls may run here from now on, if it was
    /// the classic one (`initialize`; a session set up another way keeps
    /// rmcp's per-request checks).
    pub(crate) fn ready(&self, peer: Peer<RoleServer>) {
        if peer.peer_info().is_some() {
            let _ = self.peer.set(peer);
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, InFlight>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(self: Arc<Self>, call: PlainCall, context: RequestContext<RoleServer>) {
        let cancelled = context.ct.clone();
        let id = call.id;
        // In flight until its answer is written (or its task aborted): a
        // task stuck writing to a client that stopped reading can still be
        // aborted at the close.
        let _in_flight = InFlightUntilDropped {
            dispatch: &self,
            id: id.clone(),
        };
        let progress = ProgressSink::Lines(Arc::clone(&self.send_line));
        let result = self.calls.call(call.params, &context, progress).await;
        if cancelled.is_cancelled() {
            // The client cancelled it: it wants no answer.
            return;
        }
        let mut result = ServerResult::CallToolResult(result);
        shape_for_version(&mut result, context.protocol_version().as_ref());
        let answer = ServerJsonRpcMessage::response(result, id);
        if let Ok(line) = encode(&answer) {
            // A client gone mid-answer has nobody to tell.
            let _ = self.output.lock().await.write_line(&line).await;
        }
    }
}

impl<E: Executor, W> CallDispatch for Dispatch<E, W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn call(self: Arc<Self>, mut call: PlainCall) -> Result<(), Box<PlainCall>> {
        let Some(peer) = self.peer.get().cloned() else {
            return Err(Box::new(call));
        };
        let only_progress =
            |meta: &rmcp::model::JsonObject| meta.keys().all(|key| key == "progressToken");
        if !call.meta.as_ref().is_none_or(only_progress) {
            return Err(Box::new(call));
        }
        let cancel = CancellationToken::new();
        let mut context = RequestContext::new(call.id.clone(), peer);
        context.ct = cancel.clone();
        if let Some(meta) = call.meta.take() {
            context.meta = RequestMetaObject::from(meta);
        }
        context
            .extensions
            .insert(ConnectionClosed(self.connection.clone()));
        let id = call.id.clone();
        // Held while the task is spawned: its own removal comes after.
        let mut in_flight = self.in_flight();
        if in_flight.contains_key(&id) {
            // Taken and dropped: its id is already answered for.
            return Ok(());
        }
        let task = self.tasks.spawn(Arc::clone(&self).run(call, context));
        let abort = task.abort_handle();
        in_flight.insert(id, InFlight { cancel, abort });
        Ok(())
    }

    fn settle(self: Arc<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.tasks.close();
        Box::pin(async move {
            if tokio::time::timeout(SETTLE, self.tasks.wait())
                .await
                .is_err()
            {
                // Stuck (writing to a client that stopped reading, say):
                // a write cut short is finished by the next writer, if any.
                let stuck: Vec<AbortHandle> = self
                    .in_flight()
                    .values()
                    .map(|call| call.abort.clone())
                    .collect();
                for task in stuck {
                    task.abort();
                }
            }
        })
    }

    fn cancel(&self, id: &RequestId) -> bool {
        match self.in_flight().get(id) {
            Some(call) => {
                call.cancel.cancel();
                true
            }
            None => false,
        }
    }
}

/// Writes one line on `output`; `false` when the client is gone.
fn send_line<W>(output: &SharedOutput<W>) -> SendLine
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    let output = Arc::clone(output);
    Arc::new(move |line: Vec<u8>| {
        let output = Arc::clone(&output);
        Box::pin(async move { output.lock().await.write_line(&line).await.is_ok() })
    })
}

/// Shapes `result` for a client of `version`, as rmcp shapes a handler's:
/// from 2026-07-28 on, cache hints filled in; before, no `resultType` and
/// no tool output that is not an object.
fn shape_for_version(result: &mut ServerResult, version: Option<&ProtocolVersion>) {
    let current = version.is_some_and(|version| {
        // ISO dates compare as text the way they compare as dates.
        version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
    });
    if current {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
}
