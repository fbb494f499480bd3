//! Serving over a byte stream: stdio, or any reader and writer (a pipe, a
//! socket), one JSON-RPC message a line.
//!
//! A client that closes its end (stdin at end of file) has left: its calls
//! in flight are aborted at that moment. rmcp alone would let them run
//! for up to its drain time (five seconds) before cancelling them, and a
//! tool would go on working for nobody.

use std::pin::Pin;
use std::task::{Context, Poll};

use rho_tool_core::Executor;
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

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
        let session = self.session();
        let closed = session.closed_token();
        let reader = UntilEnd {
            inner: reader,
            closed,
        };
        let running = session.serve((reader, writer)).await?;
        running.waiting().await?;
        Ok(())
    }
}

/// A reader that cancels `closed` when it reaches its end or fails.
struct UntilEnd<R> {
    inner: R,
    closed: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilEnd<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        match &read {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                this.closed.cancel();
            }
            Poll::Ready(Err(_)) => this.closed.cancel(),
            _ => {}
        }
        read
    }
}
