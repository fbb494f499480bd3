//! The writing side of a line stream: whole lines queued, then written out.
//!
//! rmcp's sends to an imported stdio server share one stream, each from a
//! task of its own, and any of their writes can be dropped half way: a
//! task aborted, a future dropped by a `select!`, a connection given up
//! while the server is slow to read. What a line had left to write stays queued here, and
//! the next writer writes it before its own line, so lines never
//! interleave on the wire and a dropped write never leaves half a message
//! behind for good.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// How much of the queue's room is kept between writes.
const KEPT_ROOM: usize = 64 * 1024;

/// An [`Output`] shared by its writers.
pub(crate) type SharedOutput<W> = Arc<Mutex<Output<W>>>;

/// Whole lines queued, then written out to `W`.
#[derive(Debug)]
pub(crate) struct Output<W> {
    /// `None` once closed.
    writer: Option<W>,
    /// Lines accepted and not yet wholly written...
    queued: Vec<u8>,
    /// ...of which this much was.
    written: usize,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// An output writing to `writer`, shared.
    pub(crate) fn shared(writer: W) -> SharedOutput<W> {
        Arc::new(Mutex::new(Self {
            writer: Some(writer),
            queued: Vec::new(),
            written: 0,
        }))
    }

    /// Queues `line` and writes out everything queued.
    ///
    /// # Errors
    ///
    /// `NotConnected` once the output is closed (after a failed write);
    /// the write's own error otherwise.
    pub(crate) async fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.writer.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the stream is closed",
            ));
        }
        self.queued.extend_from_slice(line);
        self.write_queued().await
    }

    /// Writes out what is queued. Cancel-safe: progress is counted as it
    /// is made. A failed write closes the output: what is queued is
    /// dropped, and every later write fails at once.
    pub(crate) async fn write_queued(&mut self) -> io::Result<()> {
        let written = self.write_queued_once().await;
        if written.is_err() {
            self.writer = None;
            self.queued = Vec::new();
            self.written = 0;
        }
        written
    }

    async fn write_queued_once(&mut self) -> io::Result<()> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        while self.written < self.queued.len() {
            match writer.write(&self.queued[self.written..]).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                more => self.written += more,
            }
        }
        self.queued.clear();
        // A large message's room is not kept for the session.
        self.queued.shrink_to(KEPT_ROOM);
        self.written = 0;
        writer.flush().await
    }
}
