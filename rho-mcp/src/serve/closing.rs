//! A transport that says when its client has gone.
//!
//! rmcp notices a closed connection too, but lets the handlers in flight
//! run on for its drain time (five seconds) before cancelling them, and a
//! tool would go on working for nobody. This wrapper cancels a token the
//! moment the transport yields no more messages (stdin at end of file, an
//! HTTP session ended), and hands that token to every request it passes on
//! (in the request's extensions), so each call of the connection aborts at
//! once. It works the same under any transport, which is why the token
//! travels with the requests rather than through the session.

use std::borrow::Cow;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

/// The token of the connection a request came on: cancelled when the
/// client has gone. Found in a request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionClosed(pub(crate) CancellationToken);

/// `inner`, cancelling a token when it yields no more messages.
#[derive(Debug)]
pub(crate) struct Closing<T> {
    inner: T,
    closed: CancellationToken,
}

impl<T> Closing<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            closed: CancellationToken::new(),
        }
    }

    /// The token cancelled when the client has gone.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// The transport inside.
    pub(crate) fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
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
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let Some(mut message) = self.inner.receive().await else {
            self.closed.cancel();
            return None;
        };
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            request
                .request
                .extensions_mut()
                .insert(ConnectionClosed(self.closed.clone()));
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.closed.cancel();
        self.inner.close()
    }
}
