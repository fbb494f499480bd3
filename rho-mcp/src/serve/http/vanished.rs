//! A request whose client went away before its answer.
//!
//! Over streamable HTTP each request's answer comes on an event stream of
//! its own (the `POST`'s response). A client that goes away mid-call (it
//! crashed, its network dropped, it gave up reading) closes that stream
//! without a word: no `DELETE`, no `notifications/cancelled`. rmcp keeps
//! the request running, because MCP lets a client resume a broken stream
//! (`GET` with `Last-Event-ID`), so the call used to run on until its own
//! end or the session's expiry five minutes later, holding a place of the
//! session's bounded calls all along.
//!
//! MCP's newest revision makes a closed stream the cancellation itself;
//! the earlier ones let the client come back for it. So a request whose
//! stream closes before its answer is cancelled, unless the client
//! resumes that stream within a grace period
//! ([`HttpOptions::with_resume_grace`](super::HttpOptions::with_resume_grace)).
//! The cancellation is `notifications/cancelled` for the request, put to
//! the session as the client's own would be: the call is aborted at once
//! and never charged to the tool. A stream that never carried an event id
//! cannot be resumed, and its request is cancelled at once.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::Stream;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

/// How long a request whose stream closed waits for its client to resume
/// it, by default: longer than the SDKs' reconnection delays (a few
/// seconds, after the server's `retry` hint of three).
pub(crate) const DEFAULT_RESUME_GRACE: Duration = Duration::from_secs(10);

/// The streams of one server's sessions that closed before their answer,
/// waiting for a resume.
pub(crate) struct Vanished {
    sessions: Arc<LocalSessionManager>,
    grace: Duration,
    /// By session and rmcp's number of the request's stream.
    waiting: Mutex<HashMap<(SessionId, u64), Waiting>>,
}

/// A closed request stream, waiting for its client.
struct Waiting {
    request: RequestId,
    /// Cancelled when the client resumes the stream.
    resumed: CancellationToken,
}

impl Vanished {
    pub(crate) fn new(sessions: Arc<LocalSessionManager>, grace: Duration) -> Arc<Self> {
        Arc::new(Self {
            sessions,
            grace,
            waiting: Mutex::default(),
        })
    }

    /// A request stream of `session` as rmcp made it, watched: if it is
    /// dropped before it carried the answer to `request`, the request is
    /// cancelled (after the grace, unless resumed).
    pub(crate) fn watch(
        self: &Arc<Self>,
        session: SessionId,
        request: RequestId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Watched {
        Watched {
            inner: Box::pin(stream),
            watched: Some(Watchee {
                vanished: self.clone(),
                session,
                request,
                stream_number: None,
            }),
        }
    }

    /// A stream that no request's cancellation hangs on (a resume of the
    /// common stream, say).
    pub(crate) fn unwatched(
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Watched {
        Watched {
            inner: Box::pin(stream),
            watched: None,
        }
    }

    /// The client asks to resume a stream from `last_event_id`: if that
    /// stream's request was waiting, it waits no more, and its request
    /// (whose answer the resumed stream carries) is watched again.
    pub(crate) fn resumed(&self, session: &SessionId, last_event_id: &str) -> Option<RequestId> {
        let number = stream_number(last_event_id)?;
        let waiting = self.lock().remove(&(session.clone(), number))?;
        waiting.resumed.cancel();
        Some(waiting.request)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(SessionId, u64), Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cancels `request` of `session` as its client would.
    async fn cancel(&self, session: &SessionId, request: RequestId) {
        let cancelled = ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(
                Some(request),
                Some("the client's stream closed before the answer".to_owned()),
            ),
        ));
        // A session that has ended has aborted its calls already.
        let _ = self
            .sessions
            .accept_message(session, ClientJsonRpcMessage::notification(cancelled))
            .await;
    }
}

/// rmcp's number of a request's stream, from one of its event ids
/// (`<index>/<stream>`); `None` for the session's common stream.
fn stream_number(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

/// A request's event stream, telling [`Vanished`] when it is dropped
/// before the answer.
pub(crate) struct Watched {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    /// `None` once the answer went out, or the stream ended, or for a
    /// stream no request hangs on.
    watched: Option<Watchee>,
}

/// What a dropped [`Watched`] cancels.
struct Watchee {
    vanished: Arc<Vanished>,
    session: SessionId,
    request: RequestId,
    /// Learnt from the stream's event ids: what a resume names.
    stream_number: Option<u64>,
}

impl Stream for Watched {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = ready!(self.inner.as_mut().poll_next(cx));
        let Some(message) = &next else {
            // The session closed it: its calls were aborted with it.
            self.watched = None;
            return Poll::Ready(next);
        };
        if let Some(watchee) = &mut self.watched {
            if let Some(number) = message.event_id.as_deref().and_then(stream_number) {
                watchee.stream_number = Some(number);
            }
            if message
                .message
                .as_deref()
                .is_some_and(|sent| answers(sent, &watchee.request))
            {
                self.watched = None;
            }
        }
        Poll::Ready(next)
    }
}

/// Whether `message` is the answer (a result or an error) to `request`.
fn answers(message: &ServerJsonRpcMessage, request: &RequestId) -> bool {
    match message {
        ServerJsonRpcMessage::Response(response) => response.id == *request,
        ServerJsonRpcMessage::Error(error) => error.id.as_ref() == Some(request),
        ServerJsonRpcMessage::Request(_) | ServerJsonRpcMessage::Notification(_) => false,
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let Some(Watchee {
            vanished,
            session,
            request,
            stream_number,
        }) = self.watched.take()
        else {
            return;
        };
        // Dropped by hyper, inside the runtime; without one (a runtime
        // shutting down) the session goes with it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(number) = stream_number else {
            // Nothing to resume from: the client cannot come back for it.
            runtime.spawn(async move { vanished.cancel(&session, request).await });
            return;
        };
        let resumed = CancellationToken::new();
        vanished.lock().insert(
            (session.clone(), number),
            Waiting {
                request,
                resumed: resumed.clone(),
            },
        );
        runtime.spawn(async move {
            tokio::select! {
                () = resumed.cancelled() => {}
                () = tokio::time::sleep(vanished.grace) => {
                    // Taken here or by a resume, never both.
                    let waiting = vanished.lock().remove(&(session.clone(), number));
                    if let Some(waiting) = waiting {
                        vanished.cancel(&session, waiting.request).await;
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_streams_number_is_read_from_its_event_ids() {
        assert_eq!(stream_number("0/7"), Some(7));
        assert_eq!(stream_number("12/3"), Some(3));
        // The common stream's ids carry no number; garbage none either.
        assert_eq!(stream_number("4"), None);
        assert_eq!(stream_number("4/x"), None);
        assert_eq!(stream_number(""), None);
    }
}
