//! A client on MCP 2026-07-28 that sends each request by itself over
//! stateless streamable HTTP, as raw JSON-RPC: what the tests of questions
//! (input-required results) and tasks drive rho's server with, so that
//! every byte on the wire is the test's.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rho_mcp::rmcp::model::ElicitRequestParams;
use serde_json::{Value, json};

/// What a test's tools did: runs begun, ticks, and whether a run was
/// dropped (stopped).
#[derive(Default)]
pub struct Seen {
    pub runs: AtomicUsize,
    pub ticks: AtomicUsize,
    pub dropped: AtomicBool,
}

/// Sets [`Seen::dropped`] when dropped: held by a run, it tells that the
/// run was stopped.
pub struct DropFlag(pub Arc<Seen>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

/// The parameters of the retry that approves what `asked` (an
/// input-required result) asks: its first question accepted with
/// `{"approve": true}`, its request state.
pub fn approval(asked: &Value) -> Value {
    let state = asked["requestState"].as_str().expect("a requestState");
    let (key, _) = asked["inputRequests"]
        .as_object()
        .and_then(|requests| requests.iter().next())
        .expect("a question");
    let approve = json!({ key: { "action": "accept", "content": { "approve": true } } });
    json!({ "inputResponses": approve, "requestState": state })
}

/// A form elicitation asking for one string `field`.
pub fn form(message: &str, field: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field],
        },
    }))
    .expect("a form")
}

/// A client on 2026-07-28 that declared `capabilities` (elicitation by
/// default).
pub struct StatelessClient {
    http: reqwest::Client,
    url: String,
    capabilities: Value,
}

impl StatelessClient {
    /// A client of the server at `url` that declared elicitation.
    pub fn new(url: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            url,
            capabilities: json!({ "elicitation": {} }),
        }
    }

    /// The same client declaring `capabilities` instead.
    pub fn declaring(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// `tools/call` of `tool` with `extra` parameters (`inputResponses`,
    /// `requestState`); gives the JSON-RPC answer's `result`, or
    /// `{"error": ...}`.
    pub async fn call(&self, tool: &str, arguments: Value, extra: Value) -> Value {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        self.request("tools/call", params).await
    }

    /// `method` with `params` (the request's `_meta` added); gives the
    /// JSON-RPC answer's `result`, or `{"error": ...}`.
    pub async fn request(&self, method: &str, params: Value) -> Value {
        self.try_request(method, params)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`request`](Self::request), but what failed below JSON-RPC (no
    /// answer, an HTTP error status such as a load balancer's 502, a body
    /// that is not JSON-RPC) is an `Err` saying so.
    pub async fn try_request(&self, method: &str, mut params: Value) -> Result<Value, String> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
        });
        // The routing headers mirror the body (SEP-2243, SEP-2663).
        let name = params["name"]
            .as_str()
            .or_else(|| params["taskId"].as_str())
            .map(str::to_owned);
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| format!("no answer: {error}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| format!("a broken answer: {error}"))?;
        // JSON, or one SSE event whose data is the answer. A JSON-RPC
        // error may come with an HTTP error status (400 for a missing
        // capability): it is read as any answer.
        let json = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.contains("\"jsonrpc\""))
            .unwrap_or(text.trim());
        let message: Value = match serde_json::from_str(json) {
            Ok(message) => message,
            Err(_) if !status.is_success() => {
                return Err(format!("HTTP {status}: {}", text.trim()));
            }
            Err(error) => return Err(format!("not JSON-RPC ({error}): {text}")),
        };
        if let Some(error) = message.get("error") {
            return Ok(json!({ "error": error }));
        }
        Ok(message["result"].clone())
    }
}
