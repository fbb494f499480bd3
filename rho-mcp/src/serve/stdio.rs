//! Serving over a byte stream: stdio, or any reader and writer (a pipe, a
//! socket), one JSON-RPC message a line, on rmcp's own transport and
//! service (`AsyncRwTransport`): a line past 16 MiB is dropped and reading
//! goes on, an empty line is skipped, a line that is not JSON is dropped
//! without an answer (an answer to garbage can start an error storm with a
//! peer that echoes it), JSON that is no MCP message is answered "Invalid
//! request", and the end of the stream ends the session.
//!
//! A client that closes its end (stdin at end of file) has left: its calls
//! in flight are aborted at that moment (see `closing`).

use std::time::Duration;

use rho_tool_core::Executor;
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::closing::{Closing, CutWriter};

/// How long a client that has left is still written to: the answers of its
/// calls, each aborted the moment it left, go out meanwhile. rmcp waits as
/// long for its handlers.
const SETTLE: Duration = Duration::from_secs(5);
use super::server::McpServer;
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
        // A client that left still gets the answers of its calls (each
        // aborted at once, see `closing`) for `SETTLE`; one that also
        // stopped reading is written to no more after that, so the session
        // ends rather than wait on a full pipe for ever.
        let closed = CancellationToken::new();
        let cut = CancellationToken::new();
        let writer = CutWriter::new(writer, cut.clone());
        let settle = {
            let (closed, cut) = (closed.clone(), cut.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = closed.cancelled() => {}
                    () = cut.cancelled() => return,
                }
                tokio::select! {
                    () = tokio::time::sleep(SETTLE) => cut.cancel(),
                    () = cut.cancelled() => {}
                }
            })
        };
        let transport = Closing::with_token(AsyncRwTransport::new_server(reader, writer), closed);
        let served = async {
            let running = self.session().serve(transport).await?;
            running.waiting().await?;
            Ok(())
        };
        let ended: Result<(), ServeError> = served.await;
        cut.cancel();
        drop(settle);
        ended
    }
}
