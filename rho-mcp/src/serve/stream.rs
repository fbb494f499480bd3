//! The server's transport over a byte stream: one JSON-RPC message a line.
//!
//! rmcp has one (`AsyncRwTransport`), and this one keeps its rules, for
//! clients that rely on them:
//!
//! - a line longer than the cap (16 MiB, rmcp's too) is dropped, and
//!   reading goes on after its end;
//! - an empty line is skipped, a UTF-8 byte order mark ignored;
//! - a line that is not JSON is dropped without an answer (an answer to
//!   garbage can start an error storm with a peer that echoes it);
//! - JSON that is not an MCP message gets an "Invalid request" error
//!   (with no id) — except a notification MCP does not define, which is
//!   ignored (editors' clients send other protocols' notifications; one
//!   whose shape rmcp can read reaches the session as a custom
//!   notification, as with rmcp's transport);
//! - the end of the stream, or a failed read, ends the session.
//!
//! It differs in two things. A `tools/call` in the plain shape is read
//! straight into its type ([`call_request`](super::call_request)), not
//! tried against every request type first: that was the largest single
//! cost of a call through the server. And once the session is set up,
//! such a call (its `_meta` at most a progress token) is run past rmcp's
//! service ([`dispatch`](super::dispatch)), which also takes the client's
//! cancellations of it.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorData, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use serde_json::error::Category;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use super::call_request::{self, PlainCall};
use crate::lines::{BoundedLines, Line, encode};
use crate::output::{Output, SharedOutput};

/// The longest line read; longer ones are dropped.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// How long closing waits for each thing it waits for: the calls run past
/// rmcp to answer (see `dispatch`), then the last writer to let the output
/// go. rmcp waits as long for its own handlers.
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// The server's side of a client that writes to `R` and reads from `W`.
pub(crate) struct StreamTransport<R, W> {
    lines: BoundedLines<BufReader<R>>,
    /// Shared with the sends in flight.
    output: SharedOutput<W>,
    /// An error answer owed and not yet queued (kept here across a
    /// dropped `receive`).
    owed: Option<Vec<u8>>,
    /// Runs calls past rmcp, once the client is initialized.
    dispatch: Option<Arc<dyn CallDispatch>>,
    /// The client sent `notifications/initialized`: its session is set up
    /// the classic way, and its calls may be dispatched.
    initialized: bool,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StreamTransport<R, W> {
    pub(crate) fn new(reader: R, writer: W) -> Self {
        Self::with_max_line(reader, writer, MAX_LINE)
    }

    fn with_max_line(reader: R, writer: W, max_line: usize) -> Self {
        Self {
            lines: BoundedLines::new(BufReader::new(reader), max_line),
            output: Output::shared(writer),
            owed: None,
            dispatch: None,
            initialized: false,
        }
    }

    /// The output, shared with whoever writes answers of their own.
    pub(crate) fn output(&self) -> &SharedOutput<W> {
        &self.output
    }

    /// Has `dispatch` run the plain calls read once the client is
    /// initialized, rather than rmcp.
    pub(crate) fn dispatch_to(&mut self, dispatch: Arc<dyn CallDispatch>) {
        self.dispatch = Some(dispatch);
    }

    /// What `read` gave, for rmcp; `None` when it was dispatched or
    /// taken here.
    fn pass(&mut self, read: Read) -> Option<ClientJsonRpcMessage> {
        match read {
            Read::Call(call) => {
                let call = match &self.dispatch {
                    Some(dispatch) if self.initialized => match Arc::clone(dispatch).call(call) {
                        Ok(()) => return None,
                        Err(call) => *call,
                    },
                    _ => call,
                };
                Some(call.into_message())
            }
            Read::Message(message) => {
                if is_initialized(&message) {
                    self.initialized = true;
                }
                if let (Some(dispatch), Some(id)) = (&self.dispatch, cancelled_request(&message))
                    && dispatch.cancel(id)
                {
                    return None;
                }
                Some(message)
            }
        }
    }
}

/// Runs `tools/call` requests that the transport reads, past rmcp's
/// service (see `dispatch`).
pub(crate) trait CallDispatch: Send + Sync {
    /// Takes `call`: starts it (or drops it, when its id is already in
    /// flight: an id is answered once), or gives it back when it cannot
    /// take it (rmcp then runs it).
    fn call(self: Arc<Self>, call: PlainCall) -> Result<(), Box<PlainCall>>;

    /// Cancels call `id` when it is one it runs; `false` otherwise.
    fn cancel(&self, id: &RequestId) -> bool;

    /// Resolves once the calls it runs have answered, or were aborted for
    /// taking too long. Called once reading has ended.
    fn settle(self: Arc<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// What a line that is a message is.
enum Read {
    /// A `tools/call` read the short way.
    Call(PlainCall),
    /// Any other message, read by rmcp's general reading.
    Message(ClientJsonRpcMessage),
}

/// What a line that is not a message is.
enum Unread {
    /// Dropped without a word.
    Ignored,
    /// Answered with an "Invalid request" error.
    Invalid,
}

fn read(line: &[u8]) -> Result<Read, Unread> {
    let line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
    if line.is_empty() {
        return Err(Unread::Ignored);
    }
    if let Some(call) = call_request::read(line) {
        return Ok(Read::Call(call));
    }
    serde_json::from_slice::<ClientJsonRpcMessage>(line)
        .map(Read::Message)
        .map_err(|error| match error.classify() {
            Category::Syntax | Category::Eof => Unread::Ignored,
            Category::Data | Category::Io if is_foreign_notification(line) => Unread::Ignored,
            Category::Data | Category::Io => Unread::Invalid,
        })
}

/// The request `message` cancels, when it is `notifications/cancelled`.
fn cancelled_request(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            ClientNotification::CancelledNotification(cancelled) => {
                cancelled.params.request_id.as_ref()
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `message` is `notifications/initialized`.
fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Notification(notification)
            if matches!(notification.notification, ClientNotification::InitializedNotification(_))
    )
}

/// Whether `line` is a notification MCP does not define: another
/// protocol's (no id, a method MCP does not have) or an unknown
/// `notifications/...`.
fn is_foreign_notification(line: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    let Some(method) = value.get("method").and_then(serde_json::Value::as_str) else {
        return false;
    };
    let defined = is_mcp_notification(method);
    // An `"id": null` counts as an id: such a line is a request.
    let notification = value.get("id").is_none();
    (notification && !defined && !is_mcp_request(method))
        || (method.starts_with("notifications/") && !defined)
}

fn is_mcp_request(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "completion/complete"
            | "elicitation/create"
            | "logging/setLevel"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/templates/list"
            | "resources/unsubscribe"
            | "roots/list"
            | "sampling/createMessage"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
    )
}

fn is_mcp_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}

impl<R, W> Transport<RoleServer> for StreamTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = encode(&message);
        let output = Arc::clone(&self.output);
        async move { output.lock().await.write_line(&line?).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(line) = &self.owed {
                let output = Arc::clone(&self.output);
                let mut output = output.lock().await;
                output.queue(line);
                self.owed = None;
                // Dropped half way, the rest is written by the next
                // writer; failed, the client is gone.
                if output.write_queued().await.is_err() {
                    return None;
                }
            } else if let Ok(mut output) = self.output.try_lock()
                && output.has_queued()
                && output.write_queued().await.is_err()
            {
                // The rest of a write dropped half way (unless a send
                // holds the output: it writes the rest).
                return None;
            }
            match self.lines.next().await {
                Line::Text(line) => match read(&line) {
                    Ok(read) => {
                        if let Some(message) = self.pass(read) {
                            return Some(message);
                        }
                    }
                    Err(Unread::Ignored) => {}
                    Err(Unread::Invalid) => {
                        let error = ServerJsonRpcMessage::error(
                            ErrorData::invalid_request("Invalid request", None),
                            None,
                        );
                        self.owed = Some(encode(&error).ok()?);
                    }
                },
                Line::TooLong => {}
                Line::End | Line::Failed(_) => return None,
            }
        }
    }

    /// Closes the output, once the calls run past rmcp have answered (or
    /// were aborted, see `dispatch`). A writer stuck on a client that
    /// stopped reading holds the output: after [`SETTLE`] it is left to
    /// fail, and the output closes when the last writer lets it go.
    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(dispatch) = &self.dispatch {
            Arc::clone(dispatch).settle().await;
        }
        if let Ok(mut output) = tokio::time::timeout(SETTLE, self.output.lock()).await {
            output.close();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, duplex};

    use super::*;

    /// A transport over a duplex pipe, with the client's ends.
    fn pair() -> (
        StreamTransport<tokio::io::DuplexStream, tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        BufReader<tokio::io::DuplexStream>,
    ) {
        let (client_writes, server_reads) = duplex(1 << 16);
        let (server_writes, client_reads) = duplex(1 << 16);
        (
            StreamTransport::new(server_reads, server_writes),
            client_writes,
            BufReader::new(client_reads),
        )
    }

    #[tokio::test]
    async fn bad_lines_are_dropped_or_answered_and_reading_goes_on() {
        let (mut transport, mut client, mut answers) = pair();
        let input = concat!(
            "\n",
            "not json at all\n",
            // Notifications MCP does not define, in shapes rmcp cannot
            // read (one it can read reaches the session as a custom one).
            "{\"jsonrpc\":\"2.0\",\"method\":\"$/lsp/thing\",\"params\":5}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\",\"params\":\"x\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"nothing\":true}\n",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n",
        );
        client.write_all(input.as_bytes()).await.expect("written");
        let message = transport.receive().await.expect("the ping");
        assert!(
            matches!(&message, JsonRpcMessage::Request(request) if request.id == RequestId::Number(2)),
            "{message:?}"
        );
        // One answer for the one JSON value that is not an MCP message.
        let mut answer = String::new();
        answers.read_line(&mut answer).await.expect("an answer");
        let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(answer.get("id").is_none_or(serde_json::Value::is_null));
        drop(client);
        assert!(transport.receive().await.is_none(), "the stream ended");
    }

    #[tokio::test]
    async fn a_line_past_the_cap_is_dropped_and_the_next_one_read() {
        let (client_writes, server_reads) = duplex(1 << 16);
        let (server_writes, _client_reads) = duplex(1 << 16);
        let mut transport = StreamTransport::with_max_line(server_reads, server_writes, 64);
        let mut client = client_writes;
        let long = format!("{{\"x\":\"{}\"}}\n", "a".repeat(500));
        client.write_all(long.as_bytes()).await.expect("written");
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")
            .await
            .expect("written");
        let message = transport.receive().await.expect("the ping");
        assert!(matches!(message, JsonRpcMessage::Request(_)), "{message:?}");
    }

    /// An error answer whose write is dropped half way (rmcp's `select!`
    /// drops `receive` when another branch is ready) is finished by the
    /// next send, before that send's own line: the client reads whole
    /// lines.
    #[tokio::test]
    async fn a_write_dropped_half_way_never_splits_a_line() {
        // Room for 16 bytes at a time towards the client.
        let (mut client, server_reads) = duplex(1 << 16);
        let (server_writes, client_reads) = duplex(16);
        let mut transport = StreamTransport::new(server_reads, server_writes);
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"nothing\":true}\n")
            .await
            .expect("written");
        let receive =
            tokio::time::timeout(std::time::Duration::from_millis(50), transport.receive());
        assert!(receive.await.is_err(), "stuck writing its error answer");
        let pong = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(5),
        );
        let send = tokio::spawn(transport.send(pong));
        let mut answers = BufReader::new(client_reads);
        for expected in [-32600, 0] {
            let mut line = String::new();
            answers.read_line(&mut line).await.expect("a line");
            let value: serde_json::Value = serde_json::from_str(&line).expect("a whole line");
            if expected == 0 {
                assert_eq!(value["id"], 5, "{value}");
            } else {
                assert_eq!(value["error"]["code"], expected, "{value}");
            }
        }
        send.await.expect("joined").expect("sent");
    }

    /// A client that stopped reading: the first failed write closes the
    /// output, and nothing more is queued for it.
    #[tokio::test]
    async fn a_failed_write_closes_the_output() {
        let (_client, server_reads) = duplex(1 << 16);
        let (server_writes, client_reads) = duplex(1 << 16);
        drop(client_reads);
        let mut transport = StreamTransport::new(server_reads, server_writes);
        let pong = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(5),
        );
        assert!(transport.send(pong.clone()).await.is_err());
        let again = transport.send(pong).await.expect_err("closed");
        assert_eq!(again.kind(), std::io::ErrorKind::NotConnected);
        let output = transport.output.lock().await;
        assert!(output.is_closed());
    }

    #[tokio::test]
    async fn sends_are_lines_and_a_closed_transport_refuses_them() {
        let (mut transport, _client, mut answers) = pair();
        let pong = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(5),
        );
        transport.send(pong.clone()).await.expect("sent");
        let mut line = String::new();
        answers.read_line(&mut line).await.expect("a line");
        assert!(line.ends_with('\n'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).expect("JSON"),
            serde_json::to_value(&pong).expect("encodes")
        );
        transport.close().await.expect("closed");
        assert!(transport.send(pong).await.is_err());
    }
}
