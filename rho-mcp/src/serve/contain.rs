//! The last guard: a panic while the server handles a request (a bug of
//! rho-mcp's own, or of the SDK's code it calls) ends that request with an
//! answer, never a dropped one.
//!
//! rmcp runs each request's handler on a task of its own and sends no
//! response when that task panics, so the client waits for its own timeout
//! (rmcp's issue 106). Tools' panics never get this far (rho contains them
//! in the call's task); this guard is for the code around them.

use std::future::{Future, poll_fn};
use std::task::Poll;

use rho_tool_core::untrusted::{Caught, call_contained, drop_contained};

/// Runs `future` to its end, or to its first panic (whose payload is
/// disposed of; only a `String` or `&str` message is read).
pub(crate) async fn contained<F: Future>(future: F) -> Result<F::Output, Caught> {
    let mut future = Box::pin(future);
    let polled = poll_fn(|cx| match call_contained(|| future.as_mut().poll(cx)) {
        Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(caught) => Poll::Ready(Err(caught)),
    })
    .await;
    // A future that panicked may panic again when dropped.
    let _ = drop_contained(future);
    polled
}

/// What the client reads when handling its request panicked.
pub(crate) fn failure_text(what: &str, caught: &Caught) -> String {
    format!(
        "the MCP server failed while handling {what}: {}; the call was stopped",
        caught
            .message
            .as_deref()
            .unwrap_or("a panic without a message")
    )
}

#[cfg(test)]
mod tests {
    use super::contained;

    #[tokio::test]
    async fn a_panic_is_an_answer_and_a_good_future_its_output() {
        assert_eq!(contained(async { 5 }).await.ok(), Some(5));
        let panicking = async {
            tokio::task::yield_now().await;
            panic!("a bug in the handler");
        };
        let result: Result<(), _> = contained(panicking).await;
        let caught = result.expect_err("caught");
        assert_eq!(caught.message.as_deref(), Some("a bug in the handler"));
    }
}
