//! Serving over a byte stream: stdio, or any reader and writer (a pipe, a
//! socket), one JSON-RPC message a line.
//!
//! A client that closes its end (stdin at end of file) has left: its calls
//! in flight are aborted at that moment (see `closing`).

use std::sync::Arc;

use rho_tool_core::Executor;
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use super::closing::Closing;
use super::dispatch::Dispatch;
use super::server::McpServer;
use super::stream::{CallDispatch, StreamTransport};
use crate::error::ServeError;

impl<E: Executor> McpServer<E> {
    /// Serves one client over this process's stdin and stdout until the
    /// client closes stdin. Write logs to stderr: stdout is the protocol's.
    ///
    /// # Errors
    ///
    /// [`ServeError::Handshake`] when the client's `initialize` fails or it
    /// leaves before; [`ServeError::Task`] when the session's task ended
    /// abnormally.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        // Pipes and sockets are read and written on the reactor, without
        // a turn to the blocking pool per message (see `stdio_fd`).
        #[cfg(unix)]
        return self
            .serve_io(super::stdio_fd::stdin(), super::stdio_fd::stdout())
            .await;
        #[cfg(not(unix))]
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client that writes to `reader` and reads from `writer`,
    /// until it closes its end of `reader`; its calls still in flight then
    /// are aborted at once.
    ///
    /// # Errors
    ///
    /// As [`serve_stdio`](McpServer::serve_stdio).
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let mut transport = Closing::new(StreamTransport::new(reader, writer));
        let session = self.session();
        // Plain calls run straight from the transport once the handshake
        // is done (see `dispatch`).
        let dispatch = Arc::new(Dispatch::new(
            session.calls(),
            Arc::clone(transport.inner_mut().output()),
            transport.closed().clone(),
        ));
        transport
            .inner_mut()
            .dispatch_to(Arc::clone(&dispatch) as Arc<dyn CallDispatch>);
        let running = session.serve(transport).await?;
        dispatch.ready(running.peer().clone());
        running.waiting().await?;
        Ok(())
    }
}
