//! The answers to `tools/call` requests, read straight into a tool's
//! result.
//!
//! rmcp reads a server's answer without knowing which request it answers:
//! its result type is an untagged union of some twenty result types, tried
//! one after the other until one fits, and every miss builds (and formats)
//! a serde error. A tool's result comes sixteenth, so the answer to a
//! `tools/call` — the one message a busy connection carries most — cost
//! more to read than all the rest of its way through the host.
//!
//! The transport knows better: it sent the request, so it knows which
//! requests in flight are `tools/call`. An answer to one of those, in the
//! plain shape of a JSON-RPC answer (`jsonrpc`, `id`, `result`, nothing
//! else), is read directly as a [`CallToolResult`]. Anything else — an id
//! that is not a call, any other field, a result that is not a tool's —
//! goes to rmcp's general reading as before, so nothing that read before
//! reads differently, except that an answer to a call which would also fit
//! an earlier type of the union (a result with both `content` and `tools`,
//! say) now reads as what the request asked for.

use std::collections::BTreeSet;

use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcResponse,
    JsonRpcVersion2_0, NumberOrString, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;

use crate::answered::answered_id;

/// How many calls' ids are remembered. A call whose answer never comes (a
/// cancelled one) would otherwise stay for good; past this many, the
/// oldest is forgotten, and its late answer is read the general way.
const REMEMBERED: usize = 1024;

/// The ids of the `tools/call` requests sent and not yet answered.
#[derive(Debug, Default)]
pub(crate) struct PendingCalls {
    ids: BTreeSet<i64>,
}

impl PendingCalls {
    /// Notes `message` when it is a `tools/call` request.
    pub(crate) fn record(&mut self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = message
            && let ClientRequest::CallToolRequest(_) = request.request
            && let NumberOrString::Number(id) = request.id
        {
            self.ids.insert(id);
            if self.ids.len() > REMEMBERED {
                self.ids.pop_first();
            }
        }
    }

    /// `line` read as the answer to a call in flight, when it is one in
    /// the plain shape; `None` sends it to the general reading.
    pub(crate) fn read(&mut self, line: &[u8]) -> Option<ServerJsonRpcMessage> {
        if self.ids.is_empty() {
            return None;
        }
        let answer: CallAnswer = serde_json::from_slice(line).ok()?;
        let NumberOrString::Number(id) = answer.id else {
            return None;
        };
        if !self.ids.remove(&id) {
            return None;
        }
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: answer.jsonrpc,
            id: answer.id,
            result: ServerResult::CallToolResult(answer.result),
        }))
    }
}

impl PendingCalls {
    /// Forgets the call `message` answers, when it answers one: an answer
    /// read the general way (an error, say) ends its call too.
    pub(crate) fn forget(&mut self, message: &ServerJsonRpcMessage) {
        if let Some(NumberOrString::Number(id)) = answered_id(message) {
            self.ids.remove(id);
        }
    }
}

/// A JSON-RPC answer whose result is a tool's, and nothing more.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallAnswer {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, PingRequest};

    use super::*;

    fn call(id: i64) -> ClientJsonRpcMessage {
        let request = CallToolRequest::new(CallToolRequestParams::new("echo"));
        JsonRpcMessage::request(
            ClientRequest::CallToolRequest(request),
            NumberOrString::Number(id),
        )
    }

    fn ping(id: i64) -> ClientJsonRpcMessage {
        JsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            NumberOrString::Number(id),
        )
    }

    /// What rmcp's general reading makes of `line`.
    fn general(line: &str) -> ServerJsonRpcMessage {
        serde_json::from_str(line).expect("an MCP message")
    }

    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}],"isError":false,"structuredContent":{"n":1}}}"#;

    #[test]
    fn a_calls_plain_answer_reads_as_the_general_reading_does() {
        let mut pending = PendingCalls::default();
        pending.record(&call(3));
        let fast = pending.read(ANSWER.as_bytes()).expect("read directly");
        assert_eq!(
            serde_json::to_value(&fast).expect("encodes"),
            serde_json::to_value(general(ANSWER)).expect("encodes")
        );
        // Answered: the id is forgotten, a second answer goes the general way.
        assert!(pending.read(ANSWER.as_bytes()).is_none());
    }

    #[test]
    fn other_requests_and_other_shapes_go_the_general_way() {
        let mut pending = PendingCalls::default();
        pending.record(&ping(3));
        assert!(
            pending.read(ANSWER.as_bytes()).is_none(),
            "a ping's answer is no tool's result"
        );
        pending.record(&call(4));
        for line in [
            // An empty result is EmptyResult, as rmcp reads it.
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            // Result and error both: rmcp refuses such a message.
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad"}}"#,
            r#"{"jsonrpc":"1.0","id":4,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"4","result":{"content":[]}}"#,
            "not json",
        ] {
            assert!(pending.read(line.as_bytes()).is_none(), "{line}");
        }
        assert!(
            pending
                .read(br#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#)
                .is_some(),
            "still pending after the lines it did not take"
        );
    }

    #[test]
    fn a_call_answered_the_general_way_is_forgotten() {
        let mut pending = PendingCalls::default();
        pending.record(&call(5));
        pending.forget(&general(
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}"#,
        ));
        assert!(pending.ids.is_empty());
    }

    #[test]
    fn a_call_never_answered_is_forgotten_past_the_bound() {
        let mut pending = PendingCalls::default();
        for id in 0..=i64::try_from(REMEMBERED).expect("small") {
            pending.record(&call(id));
        }
        assert_eq!(pending.ids.len(), REMEMBERED);
        let first = r#"{"jsonrpc":"2.0","id":0,"result":{"content":[]}}"#;
        assert!(pending.read(first.as_bytes()).is_none());
    }
}
