//! Malformed JSON-RPC gets a JSON-RPC error.
//!
//! rmcp answers a body it cannot read as a message of a client with `415`
//! and a line of text, which a client cannot match to anything. This guard
//! keeps each `POST` body (within the body bound) as rmcp reads it, and
//! when rmcp refuses a body sent as JSON, answers instead with `400` and a
//! JSON-RPC error object: `-32700` (parse error) for a body that is not
//! JSON, `-32600` (invalid request) for JSON that is not a message of a
//! client, with the request's id when it has a usable one. Only such a
//! refused body is read here; every other goes to rmcp alone, which parses
//! it. The server keeps serving either way.

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// JSON-RPC's code for a body that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// Keeps a `POST` body, `max_bytes` at most, while rmcp reads it, and
/// answers rmcp's refusal of it as JSON-RPC.
pub(crate) async fn guard(
    State(max_bytes): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let sent_as_json = is_json(request.headers());
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, max_bytes).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over {max_bytes} bytes, or could not be read\n"),
        )
            .into_response();
    };
    let answer = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    // rmcp answers 415 both for a body that is not JSON and for a
    // Content-Type that is not; only the first is a malformed message.
    if !sent_as_json || answer.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return answer;
    }
    refused(&bytes)
}

/// Whether `headers` say the body is JSON, as rmcp judges it.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The JSON-RPC error for a body rmcp could not read as a message.
fn refused(body: &Bytes) -> Response {
    let (code, message, id) = match serde_json::from_slice::<Value>(body) {
        Err(error) => (PARSE_ERROR, format!("Parse error: {error}"), Value::Null),
        Ok(message) => {
            let why = not_a_message(&message)
                .unwrap_or("not a request, notification or response an MCP client sends");
            let id = match message.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            };
            (INVALID_REQUEST, format!("Invalid Request: {why}"), id)
        }
    };
    let error =
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        error.to_string(),
    )
        .into_response()
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
