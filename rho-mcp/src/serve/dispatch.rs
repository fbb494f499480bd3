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
//! - the connection's end and the session's close abort it;
//! - an id already in flight here goes to rmcp instead, as does anything
//!   read before the handshake is done.
//!
//! Its progress notifications are written on the same output by the call's
//! progress task, and its answer only after them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rho_tool_core::Executor;
use rmcp::model::{RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

use super::call_request::PlainCall;
use super::closing::ConnectionClosed;
use super::progress::{ProgressSink, SendLine};
use super::session::SessionCalls;
use super::stream::CallDispatch;
use crate::lines::encode;
use crate::output::SharedOutput;

/// Runs one session's plain calls, writing their answers to `W`.
pub(crate) struct Dispatch<E: Executor, W> {
    calls: SessionCalls<E>,
    output: SharedOutput<W>,
    /// Cancelled when the client has gone.
    connection: CancellationToken,
    /// rmcp's peer of the client, once the handshake is done: the gate's
    /// questions go through it.
    peer: OnceLock<Peer<RoleServer>>,
    /// The calls in flight, by request id, each with its cancellation.
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
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
            output,
            connection,
            peer: OnceLock::new(),
            in_flight: Mutex::default(),
        }
    }

    /// The handshake is done: calls may run here from now on.
    pub(crate) fn ready(&self, peer: Peer<RoleServer>) {
        let _ = self.peer.set(peer);
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one line on the output; `false` when the client is gone.
    fn send_line(&self) -> SendLine {
        let output = Arc::clone(&self.output);
        Arc::new(move |line: Vec<u8>| {
            let output = Arc::clone(&output);
            Box::pin(async move { output.lock().await.write_line(&line).await.is_ok() })
        })
    }

    async fn run(self: Arc<Self>, call: PlainCall, context: RequestContext<RoleServer>) {
        let cancelled = context.ct.clone();
        let id = call.id;
        let progress = ProgressSink::Lines(self.send_line());
        let result = self.calls.call(call.params, &context, progress).await;
        self.in_flight().remove(&id);
        if cancelled.is_cancelled() {
            // The client cancelled it: it wants no answer.
            return;
        }
        let answer = ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id);
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
        let cancel = CancellationToken::new();
        {
            let mut in_flight = self.in_flight();
            if in_flight.contains_key(&call.id) {
                return Err(Box::new(call));
            }
            in_flight.insert(call.id.clone(), cancel.clone());
        }
        let mut context = RequestContext::new(call.id.clone(), peer);
        context.ct = cancel;
        if let Some(meta) = call.meta.take() {
            context.meta = RequestMetaObject::from(meta);
        }
        context
            .extensions
            .insert(ConnectionClosed(self.connection.clone()));
        drop(tokio::spawn(self.run(call, context)));
        Ok(())
    }

    fn cancel(&self, id: &RequestId) -> bool {
        match self.in_flight().get(id) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }
}
