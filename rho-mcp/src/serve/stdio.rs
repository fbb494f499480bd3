//! Serving over a byte stream: stdio, or any reader and writer (a pipe, a
//! socket), one JSON-RPC message a line.
//!
//! A client that closes its end (stdin at end of file) has left: its calls
//! in flight are aborted at that moment (see `closing`).

use rho_tool_core::Executor;
use rmcp::ServiceExt;
use rmcp::transport::IntoTransport;
use tokio::io::{AsyncRead, AsyncWrite};

use super::closing::Closing;
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
        match stdio_pipes() {
            Some((stdin, stdout)) => self.serve_io(stdin, stdout).await,
            None => self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await,
        }
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
        let transport = Closing::new((reader, writer).into_transport());
        let running = self.session().serve(transport).await?;
        running.waiting().await?;
        Ok(())
    }
}

/// Stdin and stdout as non-blocking pipes of tokio's reactor, when both
/// are pipes, on Linux.
///
/// `tokio::io::stdin` and `stdout` do each read and each write on tokio's
/// blocking pool, a turn to another thread and back per message; on a
/// two-core machine that was a third of the proxy's time. The pipes are
/// opened again through `/proc/self/fd`, which gives a description of
/// their own: setting it non-blocking leaves this process's fds 0 and 1
/// (which other code may use, and a `println!` would fail on) as they
/// were. Only FIFOs are opened (a terminal is never opened again, so it
/// cannot become a controlling terminal); anything else (a socket pair,
/// as some clients hand their servers, a file, a runtime without IO,
/// another system) gets `None` and the blocking pool.
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::unix::fs::FileTypeExt;
    if !cfg!(target_os = "linux") {
        return None;
    }
    let is_pipe =
        |path: &str| std::fs::metadata(path).is_ok_and(|metadata| metadata.file_type().is_fifo());
    if !is_pipe("/proc/self/fd/0") || !is_pipe("/proc/self/fd/1") {
        return None;
    }
    // Registering with the reactor panics on a runtime built without IO.
    std::panic::catch_unwind(|| {
        let options = tokio::net::unix::pipe::OpenOptions::new();
        let stdin = options.open_receiver("/proc/self/fd/0").ok()?;
        let stdout = options.open_sender("/proc/self/fd/1").ok()?;
        Some((stdin, stdout))
    })
    .ok()
    .flatten()
}
