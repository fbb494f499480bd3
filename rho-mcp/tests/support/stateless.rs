//! A client on MCP 2026-07-28 that sends each request by itself over
//! stateless streamable HTTP, as raw JSON-RPC: what the tests of questions
//! (input-required results) and tasks drive rho's server with, so that
//! every byte on the wire is the test's.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};

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
    pub async fn request(&self, method: &str, mut params: Value) -> Value {
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
            .expect("the server answers");
        let text = response.text().await.expect("a body");
        // JSON, or one SSE event whose data is the answer.
        let json = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.contains("\"jsonrpc\""))
            .unwrap_or(text.trim());
        let message: Value = serde_json::from_str(json)
            .unwrap_or_else(|error| panic!("not JSON-RPC ({error}): {text}"));
        if let Some(error) = message.get("error") {
            return json!({ "error": error });
        }
        message["result"].clone()
    }
}
