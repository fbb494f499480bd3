//! rmcp's transport over a server's stdin and stdout, strict about what
//! the server writes.
//!
//! rmcp's own line transport skips lines it cannot read and responses to
//! requests nobody sent, so a server that answers in garbage leaves its
//! call waiting until the deadline. Here anything on stdout that is not an
//! MCP message (not JSON, JSON of another shape, a line past the size
//! cap, an answer to a request id that was never sent) ends the
//! connection at once with a text that says what the server wrote; the
//! connection's watcher then kills the server, and its calls in flight end
//! as crashed with that text.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, NumberOrString, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::oneshot;

use super::task_support::TaskOnly;
use crate::answered::answered_id;
use crate::lines::{BoundedLines, Line, encode, excerpt};
use crate::output::SharedOutput;

/// How much of an offending line an error text quotes.
const EXCERPT_BYTES: usize = 200;

/// Why the transport stopped reading.
#[derive(Debug)]
pub(crate) enum TransportEnd {
    /// The server closed its stdout.
    Closed,
    /// Reading its stdout failed.
    ReadFailed(String),
    /// The server wrote something that is not an MCP message; the text says
    /// what, as the end of a sentence that starts with the server.
    Violation(String),
}

/// A stdio server's stdin, as the connection's output writes to it.
pub(crate) type ServerStdin = Box<dyn AsyncWrite + Send + Unpin>;

/// The client's transport over a server's stdout (`reader`) and stdin
/// (`output`: whole lines, even when a send is dropped half way).
pub(crate) struct LineTransport<R> {
    lines: BoundedLines<R>,
    max_line: usize,
    sent: SentIds,
    output: SharedOutput<ServerStdin>,
    end: Option<oneshot::Sender<TransportEnd>>,
    /// What the server's listings say of tasks, which rmcp does not read.
    task_only: TaskOnly,
}

/// Which request ids a client sent, to tell an answer to one of them
/// from an answer to a request nobody sent.
///
/// rmcp numbers a client's requests from 0 upwards, so the highest id
/// sent is enough to know them all.
#[derive(Debug, Clone)]
pub(crate) struct SentIds {
    highest: Arc<AtomicI64>,
}

impl Default for SentIds {
    fn default() -> Self {
        Self {
            highest: Arc::new(AtomicI64::new(-1)),
        }
    }
}

impl SentIds {
    /// Notes the id of `message` when it is a request.
    pub(crate) fn record(&self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = message
            && let NumberOrString::Number(id) = request.id
        {
            self.highest.fetch_max(id, Ordering::AcqRel);
        }
    }

    /// Whether `id` names a request this client sent.
    fn was_sent(&self, id: &NumberOrString) -> bool {
        let number = match id {
            NumberOrString::Number(number) => Some(*number),
            // rmcp matches "7" to request 7; so does this check.
            NumberOrString::String(text) => text.parse::<i64>().ok(),
        };
        number.is_some_and(|n| n >= 0 && n <= self.highest.load(Ordering::Acquire))
    }

    /// The id `message` answers, when it answers a request that was never
    /// sent.
    pub(crate) fn unsent_answer<'m>(
        &self,
        message: &'m ServerJsonRpcMessage,
    ) -> Option<&'m NumberOrString> {
        answered_id(message).filter(|id| !self.was_sent(id))
    }
}

impl<R> LineTransport<R>
where
    R: AsyncBufRead + Unpin + Send,
{
    /// A transport reading lines of at most `max_line` bytes; `end` hears
    /// why it stopped reading. The output is shared with the connection,
    /// which keeps it open (see [`close`](Transport::close)).
    pub(crate) fn new(
        reader: R,
        output: SharedOutput<ServerStdin>,
        max_line: usize,
        end: oneshot::Sender<TransportEnd>,
        task_only: TaskOnly,
    ) -> Self {
        Self {
            lines: BoundedLines::new(reader, max_line),
            max_line,
            sent: SentIds::default(),
            output,
            end: Some(end),
            task_only,
        }
    }

    fn stop(&mut self, why: TransportEnd) -> Option<ServerJsonRpcMessage> {
        if let Some(end) = self.end.take() {
            let _ = end.send(why);
        }
        None
    }

    /// Reads `line` as a message for rmcp, or says why it is not one.
    fn read(&mut self, line: &[u8]) -> Result<ServerJsonRpcMessage, String> {
        let message: ServerJsonRpcMessage = serde_json::from_slice(line).map_err(|error| {
            format!(
                "wrote a line to stdout that is not an MCP message ({error}): {}",
                excerpt(line, EXCERPT_BYTES)
            )
        })?;
        if let Some(id) = self.sent.unsent_answer(&message) {
            return Err(format!(
                "answered request id {id}, which it was never sent: {}",
                excerpt(line, EXCERPT_BYTES)
            ));
        }
        if let JsonRpcMessage::Response(answer) = &message
            && let ServerResult::ListToolsResult(_) = answer.result
        {
            // Read once more, for what rmcp's reading left out.
            self.task_only.read_listing(line);
        }
        Ok(message)
    }
}

impl<R> Transport<RoleClient> for LineTransport<R>
where
    R: AsyncBufRead + Unpin + Send,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.sent.record(&message);
        let encoded = encode(&message);
        let output = Arc::clone(&self.output);
        async move { output.lock().await.write_line(&encoded?).await }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.lines.next().await {
                Line::Text(line) if line.iter().all(u8::is_ascii_whitespace) => {}
                Line::Text(line) => match self.read(&line) {
                    Ok(message) => return Some(message),
                    Err(why) => return self.stop(TransportEnd::Violation(why)),
                },
                Line::TooLong => {
                    let why = format!(
                        "wrote a line to stdout longer than the limit of {} bytes",
                        self.max_line
                    );
                    return self.stop(TransportEnd::Violation(why));
                }
                Line::End => return self.stop(TransportEnd::Closed),
                Line::Failed(error) => {
                    return self.stop(TransportEnd::ReadFailed(error.to_string()));
                }
            }
        }
    }

    /// Leaves the server's stdin open: rmcp closes its transport when
    /// reading ends, and a server whose stdin closes exits, which would
    /// hide how it really ended (a server that closed its stdout but runs
    /// on would seem to exit by itself). The connection closes stdin when
    /// it is dropped, and kills the server anyway.
    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
