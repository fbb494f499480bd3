//! `tools/call` requests read straight into rmcp's message type.
//!
//! rmcp reads a client's message as an untagged union: a request is tried
//! as each of some twenty request types in turn, and every miss builds
//! (and formats) a serde error. `tools/call` comes late in that list, so
//! the message a busy session carries most cost more to read than the
//! rest of its way through the server.
//!
//! A line in the plain shape of a call (`jsonrpc`, `id`, `method` =
//! `"tools/call"`, `params` with no field MCP does not define for a
//! call) is read here directly, and gets what rmcp's reading would have
//! made of it: the same params, and `params._meta` moved into the
//! request's extensions. Anything else returns `None` and is read by
//! rmcp's general reading, as before.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientJsonRpcMessage,
    ClientRequest, InputResponses, JsonObject, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0,
    RequestId, RequestMetaObject,
};
use serde::Deserialize;

/// A `tools/call` request read the short way.
pub(crate) struct PlainCall {
    jsonrpc: JsonRpcVersion2_0,
    method: CallToolRequestMethod,
    /// Its request id.
    pub(crate) id: RequestId,
    /// Its params, without `_meta`.
    pub(crate) params: CallToolRequestParams,
    /// Its `_meta`, if it has one.
    pub(crate) meta: Option<JsonObject>,
}

/// `line` as a `tools/call` request, when it is one in the plain shape.
pub(crate) fn read(line: &[u8]) -> Option<PlainCall> {
    let call: CallLine = serde_json::from_slice(line).ok()?;
    let CallLine {
        jsonrpc,
        id,
        method,
        params,
    } = call;
    let mut read = CallToolRequestParams::new(params.name);
    read.arguments = params.arguments;
    read.input_responses = params.input_responses;
    read.request_state = params.request_state;
    Some(PlainCall {
        jsonrpc,
        method,
        id,
        params: read,
        meta: params.meta,
    })
}

impl PlainCall {
    /// The call as rmcp's general reading makes it: `_meta` in the
    /// request's extensions.
    pub(crate) fn into_message(self) -> ClientJsonRpcMessage {
        let mut request = CallToolRequest::new(self.params);
        request.method = self.method;
        if let Some(meta) = self.meta {
            request.extensions.insert(RequestMetaObject::from(meta));
        }
        JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc: self.jsonrpc,
            id: self.id,
            request: ClientRequest::CallToolRequest(request),
        })
    }
}

/// A JSON-RPC request whose method is `tools/call`, and nothing more.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    /// Reads only `"tools/call"`.
    method: CallToolRequestMethod,
    params: CallParams,
}

/// A call's params as MCP defines them; any other field sends the line
/// to rmcp's general reading.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CallParams {
    #[serde(rename = "_meta")]
    meta: Option<JsonObject>,
    name: String,
    arguments: Option<JsonObject>,
    input_responses: Option<InputResponses>,
    request_state: Option<String>,
}

#[cfg(test)]
mod tests {
    use rmcp::model::GetExtensions;

    use super::*;

    /// What rmcp's general reading makes of `line`.
    fn general(line: &str) -> ClientJsonRpcMessage {
        serde_json::from_str(line).expect("an MCP message")
    }

    fn meta(message: &ClientJsonRpcMessage) -> Option<RequestMetaObject> {
        match message {
            JsonRpcMessage::Request(request) => request
                .request
                .extensions()
                .get::<RequestMetaObject>()
                .cloned(),
            _ => None,
        }
    }

    #[test]
    fn plain_calls_read_as_the_general_reading_does() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":1.5,"big":18446744073709551615}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"method":"tools/call","params":{"arguments":null,"name":"echo","_meta":{"progressToken":3}},"id":8,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","_meta":null,"requestState":"s","inputResponses":{"q":{"action":"accept"}}}}"#,
        ] {
            let fast = read(line.as_bytes())
                .unwrap_or_else(|| panic!("read directly: {line}"))
                .into_message();
            let general = general(line);
            assert_eq!(
                serde_json::to_value(&fast).expect("encodes"),
                serde_json::to_value(&general).expect("encodes"),
                "{line}"
            );
            assert_eq!(meta(&fast), meta(&general), "{line}");
            // `_meta` lives in the extensions only, as rmcp reads it (the
            // encoding above would hide a copy in the params too).
            let JsonRpcMessage::Request(request) = &fast else {
                panic!("a request: {fast:?}")
            };
            let ClientRequest::CallToolRequest(call) = &request.request else {
                panic!("a call: {request:?}")
            };
            assert!(call.params.meta.is_none(), "{line}");
        }
    }

    #[test]
    fn anything_but_a_plain_call_goes_the_general_way() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","extra":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            "not json",
        ] {
            assert!(read(line.as_bytes()).is_none(), "{line}");
        }
    }
}
