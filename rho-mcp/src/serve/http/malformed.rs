//! Malformed JSON-RPC gets a JSON-RPC error.
//!
//! rmcp answers a body it cannot read as a JSON-RPC message with `415` and
//! a line of text, which a client cannot match to anything. This guard
//! reads each `POST` body first (within the body bound) and answers, with
//! `400` and a JSON-RPC error object, a body that is not JSON (`-32700`,
//! parse error) or not one JSON-RPC message (`-32600`, invalid request,
//! with the request's id when it has a usable one). Everything else goes on
//! to rmcp unchanged; the server keeps serving either way.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// JSON-RPC's code for a body that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// Checks a `POST` body, `max_bytes` at most, before rmcp reads it.
pub(crate) async fn guard(
    State(max_bytes): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, max_bytes).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over {max_bytes} bytes, or could not be read\n"),
        )
            .into_response();
    };
    let problem = match serde_json::from_slice::<Value>(&bytes) {
        Err(error) => Some((PARSE_ERROR, format!("Parse error: {error}"), Value::Null)),
        Ok(message) => not_a_message(&message).map(|why| {
            let id = match message.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            };
            (INVALID_REQUEST, format!("Invalid Request: {why}"), id)
        }),
    };
    if let Some((code, message, id)) = problem {
        let error =
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            error.to_string(),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Why `message` is not one JSON-RPC 2.0 message, if it is not.
fn not_a_message(message: &Value) -> Option<&'static str> {
    let Value::Object(fields) = message else {
        return Some(if message.is_array() {
            "batches are not part of MCP; send one message a request"
        } else {
            "a JSON-RPC message is a JSON object"
        });
    };
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("`jsonrpc` must be \"2.0\"");
    }
    match (fields.get("method"), fields.get("id")) {
        (Some(Value::String(_)), _) => None,
        (Some(_), _) => Some("`method` must be a string"),
        (None, Some(_)) if fields.contains_key("result") || fields.contains_key("error") => None,
        (None, _) => {
            Some("a request needs a `method`, a response an `id` and a `result` or `error`")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::not_a_message;
    use serde_json::json;

    #[test]
    fn only_one_jsonrpc_message_passes() {
        for good in [
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": "a", "result": {} }),
            json!({ "jsonrpc": "2.0", "id": 2, "error": { "code": 1, "message": "x" } }),
        ] {
            assert_eq!(not_a_message(&good), None, "{good}");
        }
        for bad in [
            json!([]),
            json!(5),
            json!({}),
            json!({ "jsonrpc": "1.0", "id": 1, "method": "x" }),
            json!({ "jsonrpc": "2.0", "id": 1, "method": 7 }),
            json!({ "jsonrpc": "2.0", "id": 1 }),
        ] {
            assert!(not_a_message(&bad).is_some(), "{bad}");
        }
    }
}
