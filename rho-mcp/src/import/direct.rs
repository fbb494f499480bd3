//! `tools/call` sent straight to a stdio server, past rmcp's service, and
//! its answer read straight into a tool's result.
//!
//! Through rmcp, a request goes by channel to the service's loop, which
//! writes it from a task of its own; the answer is read as an untagged
//! union of some twenty result types (each miss building and formatting
//! a serde error) and handed back by channel. For the one message a busy
//! connection carries most, that was most of a call's cost.
//!
//! So on a stdio connection a call writes its own request, as one whole
//! line on the output rmcp's messages share ([`Output`](crate::output)),
//! under an id of its own: `"rho-1"`, `"rho-2"`, ... (strings, so they
//! never meet rmcp's numbers). Its progress token is that id, and its
//! route is registered before the line leaves, so no progress of it can
//! arrive before its route. The transport hands each answer to such an
//! id to its call where it reads it: in the plain shape of a JSON-RPC
//! answer (`jsonrpc`, `id`, `result`, nothing else) read directly as a
//! [`CallToolResult`]; in any other (an error, more fields) after rmcp's
//! general reading. rmcp still does everything else on the connection:
//! the handshake, `tools/list`, pings, the server's own requests and
//! notifications.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolResult, ErrorData, JsonObject, JsonRpcVersion2_0, NumberOrString, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;

use crate::lines::encode;
use crate::output::SharedOutput;

/// A stdio server's stdin, as the connection's output writes to it.
pub(crate) type ServerStdin = Box<dyn AsyncWrite + Send + Unpin>;

/// What a server answered a call: its result, or its error.
pub(crate) type DirectAnswer = Result<ServerResult, ErrorData>;

/// The start of every id of a call sent past rmcp.
const ID_PREFIX: &str = "rho-";

/// The calls of one connection sent past rmcp and not yet answered.
pub(crate) struct DirectCalls {
    output: SharedOutput<ServerStdin>,
    pending: Mutex<HashMap<u64, oneshot::Sender<DirectAnswer>>>,
    /// How many ids were given out; ids are numbered from 1.
    issued: AtomicU64,
}

impl DirectCalls {
    pub(crate) fn new(output: SharedOutput<ServerStdin>) -> Self {
        Self {
            output,
            pending: Mutex::default(),
            issued: AtomicU64::new(0),
        }
    }

    /// The connection's output, shared with rmcp's sends.
    pub(crate) fn output(&self) -> &SharedOutput<ServerStdin> {
        &self.output
    }

    /// A new call: its id, and where its answer will come.
    pub(crate) fn register(self: &Arc<Self>) -> PendingCall {
        let number = self.issued.fetch_add(1, Ordering::AcqRel) + 1;
        let (answer_tx, answer) = oneshot::channel();
        self.lock().insert(number, answer_tx);
        PendingCall {
            id: NumberOrString::String(format!("{ID_PREFIX}{number}").into()),
            number,
            answer,
            calls: Arc::clone(self),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<DirectAnswer>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number in `id`, when it has the shape of a direct call's.
    fn number(id: &RequestId) -> Option<u64> {
        match id {
            NumberOrString::String(text) => {
                let digits = text.strip_prefix(ID_PREFIX)?;
                let number: u64 = digits.parse().ok()?;
                // Only the id as it was written: not "rho-01", "rho-+1".
                (number.to_string() == digits).then_some(number)
            }
            NumberOrString::Number(_) => None,
        }
    }

    /// Whether `id` names a call sent this way (answered or not).
    fn was_sent(&self, id: &RequestId) -> bool {
        Self::number(id).is_some_and(|n| n >= 1 && n <= self.issued.load(Ordering::Acquire))
    }

    /// Hands `answer` to the call numbered `number`, if it still waits.
    fn answer(&self, number: u64, answer: DirectAnswer) -> bool {
        let Some(waiting) = self.lock().remove(&number) else {
            return false;
        };
        // A call that gave up has dropped its receiver: nothing to do.
        let _ = waiting.send(answer);
        true
    }

    /// Takes `line` when it is the answer to a call that waits, in the
    /// plain shape; `false` sends it to the general reading.
    pub(crate) fn take_plain(&self, line: &[u8]) -> bool {
        if self.lock().is_empty() {
            return false;
        }
        let Ok(answer) = serde_json::from_slice::<PlainAnswer>(line) else {
            return false;
        };
        let Some(number) = Self::number(&answer.id) else {
            return false;
        };
        self.answer(number, Ok(ServerResult::CallToolResult(answer.result)))
    }

    /// Takes `message` when it answers a call sent this way (a late
    /// answer, to a call that gave up, is taken and dropped, as rmcp drops
    /// one); gives it back otherwise.
    pub(crate) fn take(
        &self,
        message: ServerJsonRpcMessage,
    ) -> Result<(), Box<ServerJsonRpcMessage>> {
        let (id, answer) = match message {
            ServerJsonRpcMessage::Response(response) if self.was_sent(&response.id) => {
                (response.id, Ok(response.result))
            }
            ServerJsonRpcMessage::Error(error)
                if error.id.as_ref().is_some_and(|id| self.was_sent(id)) =>
            {
                let Some(id) = error.id else {
                    return Err(Box::new(ServerJsonRpcMessage::Error(error)));
                };
                (id, Err(error.error))
            }
            other => return Err(Box::new(other)),
        };
        if let Some(number) = Self::number(&id) {
            self.answer(number, answer);
        }
        Ok(())
    }
}

/// A call registered and not yet answered; forgotten when dropped.
pub(crate) struct PendingCall {
    /// Its request id, also its progress token.
    pub(crate) id: RequestId,
    number: u64,
    /// Its answer, once the transport reads it.
    pub(crate) answer: oneshot::Receiver<DirectAnswer>,
    calls: Arc<DirectCalls>,
}

impl PendingCall {
    /// The call's request, as one line: `tool` with `arguments`, its
    /// progress token its id.
    pub(crate) fn request_line(
        &self,
        tool: &str,
        arguments: Option<&JsonObject>,
    ) -> std::io::Result<Vec<u8>> {
        encode(&CallLine {
            jsonrpc: JsonRpcVersion2_0,
            id: &self.id,
            method: "tools/call",
            params: CallParams {
                meta: Meta {
                    progress_token: &self.id,
                },
                name: tool,
                arguments,
            },
        })
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        self.calls.lock().remove(&self.number);
    }
}

/// A `tools/call` request as it is written.
#[derive(Serialize)]
struct CallLine<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: &'a RequestId,
    method: &'static str,
    params: CallParams<'a>,
}

#[derive(Serialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a JsonObject>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    progress_token: &'a RequestId,
}

/// A JSON-RPC answer whose result is a tool's, and nothing more.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainAnswer {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest,
        JsonRpcMessage, ProgressToken, RequestMetaObject,
    };

    use super::*;
    use crate::output::Output;

    fn calls() -> Arc<DirectCalls> {
        let stdin: ServerStdin = Box::new(tokio::io::sink());
        Arc::new(DirectCalls::new(Output::shared(stdin)))
    }

    /// What rmcp's general reading makes of `line`.
    fn general(line: &str) -> ServerJsonRpcMessage {
        serde_json::from_str(line).expect("an MCP message")
    }

    #[test]
    fn the_request_line_is_what_rmcp_would_write() {
        let calls = calls();
        let call = calls.register();
        let mut arguments = JsonObject::new();
        arguments.insert("text".to_owned(), "hi".into());
        let line = call
            .request_line("echo", Some(&arguments))
            .expect("encodes");
        assert_eq!(line.last(), Some(&b'\n'));
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = Some(arguments);
        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(call.id.clone()));
        params.meta = Some(meta);
        let rmcp: ClientJsonRpcMessage = JsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            call.id.clone(),
        );
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&line).expect("JSON"),
            serde_json::to_value(&rmcp).expect("encodes")
        );
        assert_eq!(call.id, NumberOrString::String("rho-1".into()));
    }

    #[test]
    fn a_plain_answer_reaches_its_call_as_the_general_reading_would_read_it() {
        let calls = calls();
        let mut call = calls.register();
        let line = r#"{"jsonrpc":"2.0","id":"rho-1","result":{"content":[{"type":"text","text":"ok"}],"isError":false,"structuredContent":{"n":1}}}"#;
        assert!(calls.take_plain(line.as_bytes()));
        let answer = call.answer.try_recv().expect("answered").expect("a result");
        let JsonRpcMessage::Response(general) = general(line) else {
            panic!("a response")
        };
        assert_eq!(
            serde_json::to_value(&answer).expect("encodes"),
            serde_json::to_value(&general.result).expect("encodes")
        );
        // Answered: a second answer is not a waiting call's.
        assert!(!calls.take_plain(line.as_bytes()));
    }

    #[test]
    fn other_shapes_go_the_general_way_and_still_reach_their_call() {
        let calls = calls();
        let mut call = calls.register();
        for line in [
            r#"{"jsonrpc":"2.0","id":"rho-1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"rho-1","error":{"code":-32602,"message":"bad"}}"#,
            r#"{"jsonrpc":"1.0","id":"rho-1","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"rho-2","result":{"content":[]}}"#,
            "not json",
        ] {
            assert!(!calls.take_plain(line.as_bytes()), "{line}");
        }
        let error =
            general(r#"{"jsonrpc":"2.0","id":"rho-1","error":{"code":-32602,"message":"bad"}}"#);
        assert!(calls.take(error).is_ok());
        let answer = call.answer.try_recv().expect("answered");
        assert_eq!(answer.expect_err("an error").message, "bad");
    }

    #[test]
    fn late_answers_are_taken_and_foreign_ones_given_back() {
        let calls = calls();
        drop(calls.register());
        assert!(calls.lock().is_empty(), "a dropped call is forgotten");
        let late = general(r#"{"jsonrpc":"2.0","id":"rho-1","result":{"content":[]}}"#);
        assert!(calls.take(late).is_ok(), "a late answer is dropped here");
        for line in [
            r#"{"jsonrpc":"2.0","id":"rho-2","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"rho-01","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"rho-+1","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"rho-1","progress":1}}"#,
        ] {
            assert!(calls.take(general(line)).is_err(), "{line}");
        }
    }
}
