//! A transport that says when its client has gone, and holds its client
//! to one request per id.
//!
//! rmcp notices a closed connection too, but lets the handlers in flight
//! run on for its drain time (five seconds) before cancelling them, and a
//! tool would go on working for nobody. This wrapper cancels a token the
//! moment the transport yields no more messages (stdin at end of file, an
//! HTTP session ended), and hands that token to every request it passes on
//! (in the request's extensions), so each call of the connection aborts at
//! once. It works the same under any transport, which is why the token
//! travels with the requests rather than through the session. Over a byte
//! stream the same token cuts the writer ([`CutWriter`]): a client that
//! stopped reading and left is written to no more, so the session ends
//! rather than wait on a full pipe for ever.
//!
//! MCP forbids a client to reuse a request id, and rmcp does not check:
//! a second request under the id of one in flight would run beside it and
//! take over its cancellation. Such a request is dropped here, neither run
//! nor answered (an answer would carry an id the client already waits on).
//! An id is in flight from its request until its answer is sent or the
//! client cancels it, so the set is as small as the calls in flight.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, GetExtensions, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use tokio::io::AsyncWrite;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::answered::answered_id;

/// The token of the connection a request came on: cancelled when the
/// client has gone. Found in a request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionClosed(pub(crate) CancellationToken);

/// `inner`, cancelling a token when it yields no more messages, and
/// dropping a request whose id is in flight.
#[derive(Debug)]
pub(crate) struct Closing<T> {
    inner: T,
    closed: CancellationToken,
    in_flight: HashSet<RequestId>,
}

impl<T> Closing<T> {
    /// `inner` with a token of its own.
    pub(crate) fn new(inner: T) -> Self {
        Self::with_token(inner, CancellationToken::new())
    }

    /// `inner`, cancelling `closed` when its client has gone (the token a
    /// [`CutWriter`] under it watches).
    pub(crate) fn with_token(inner: T, closed: CancellationToken) -> Self {
        Self {
            inner,
            closed,
            in_flight: HashSet::new(),
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Closing<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(id) = answered_id(&item) {
            self.in_flight.remove(id);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let Some(mut message) = self.inner.receive().await else {
                self.closed.cancel();
                return None;
            };
            match &mut message {
                ClientJsonRpcMessage::Request(request) => {
                    if !self.in_flight.insert(request.id.clone()) {
                        // The id of a request in flight: see the module docs.
                        continue;
                    }
                    request
                        .request
                        .extensions_mut()
                        .insert(ConnectionClosed(self.closed.clone()));
                }
                ClientJsonRpcMessage::Notification(notification) => {
                    let cancelled = match &notification.notification {
                        ClientNotification::CancelledNotification(cancelled) => {
                            cancelled.params.request_id.as_ref()
                        }
                        _ => None,
                    };
                    if let Some(id) = cancelled {
                        self.in_flight.remove(id);
                    }
                }
                _ => {}
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.closed.cancel();
        self.inner.close()
    }
}

/// A writer that fails every write, and wakes a write that waits, once its
/// token is cancelled: the output of a client that has gone.
pub(crate) struct CutWriter<W> {
    inner: W,
    cut: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<W> CutWriter<W> {
    /// `inner`, cut when `closed` is cancelled.
    pub(crate) fn new(inner: W, closed: CancellationToken) -> Self {
        Self {
            inner,
            cut: Box::pin(closed.cancelled_owned()),
        }
    }

    /// Whether the client has gone (and, if not, a wake-up when it goes).
    fn is_cut(&mut self, cx: &mut Context<'_>) -> bool {
        self.cut.as_mut().poll(cx).is_ready()
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the client has gone")
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CutWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.is_cut(cx) {
            return Poll::Ready(Err(gone()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.is_cut(cx) {
            return Poll::Ready(Err(gone()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.is_cut(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
