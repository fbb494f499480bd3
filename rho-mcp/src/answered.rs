//! Which request a server's message answers, read the same way by the
//! import (an answer to an id never sent is a violation), the HTTP server
//! (a request's stream has carried its answer) and every served
//! connection (its request is no longer in flight).

use rmcp::model::{RequestId, ServerJsonRpcMessage};

/// The id of the request `message` answers (a result or an error), if it
/// is an answer.
pub(crate) fn answered_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        ServerJsonRpcMessage::Response(response) => Some(&response.id),
        ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
        ServerJsonRpcMessage::Request(_) | ServerJsonRpcMessage::Notification(_) => None,
    }
}
