//! The bearer token a server off loopback requires of every request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Lets a request through only when it carries `Authorization: Bearer
/// <token>`; anything else gets `401` with `WWW-Authenticate: Bearer`.
pub(crate) async fn require(
    State(token): State<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if given.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "this MCP server needs `Authorization: Bearer <token>`\n",
    )
        .into_response()
}

/// Whether `a` and `b` are equal, taking the same time for every `a` of
/// `b`'s length (a guess learns nothing from how long the answer took).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn only_the_same_bytes_are_the_same() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secreT", b"secret"));
        assert!(!same(b"secret!", b"secret"));
        assert!(!same(b"", b"secret"));
    }
}
