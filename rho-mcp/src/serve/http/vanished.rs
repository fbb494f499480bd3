//! A request whose client went away before its answer.
//!
//! Over streamable HTTP each request's answer comes on an event stream of
//! its own (the `POST`'s response). A client that goes away mid-call (it
//! crashed, it was killed, it gave up and closed the connection) closes
//! that stream without a word: no `DELETE`, no `notifications/cancelled`. rmcp keeps
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
//!
//! A resume may reach the session before the server has even noticed the
//! old stream closing, and a stream may be resumed more than once: each
//! stream of a request is a generation of it, and only the dropping of
//! its newest generation counts. What this cannot see is a client whose
//! network vanished without closing anything: the server learns of that
//! only when a write to the connection fails, which TCP may take minutes
//! to tell.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::Stream;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    RequestId,
};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

use crate::answered::answered_id;

/// How long a request whose stream closed waits for its client to resume
/// it, by default: longer than the SDKs' reconnection delays (a few
/// seconds, after the server's `retry` hint of three).
pub(crate) const DEFAULT_RESUME_GRACE: Duration = Duration::from_secs(10);

/// The request streams of one server's sessions, by session and rmcp's
/// number of the stream (what a resume names).
pub(crate) struct Vanished {
    sessions: Arc<LocalSessionManager>,
    grace: Duration,
    /// The server's stop: its streams all end then, and nothing is
    /// cancelled for that.
    stopped: CancellationToken,
    streams: Mutex<HashMap<(SessionId, u64), Tracked>>,
}

/// A request whose answer has not gone out yet.
struct Tracked {
    request: RequestId,
    /// Which of the request's streams is the client's: a resume makes a
    /// new one.
    generation: u64,
    /// Where its newest stream is.
    state: StreamState,
}

/// Where the newest stream of a tracked request is.
enum StreamState {
    /// With the client.
    Open,
    /// Closed; the grace runs, and a resume cancels this token.
    Closed { resumed: CancellationToken },
}

/// Which stream a [`Watched`] is.
struct Watchee {
    vanished: Arc<Vanished>,
    session: SessionId,
    request: RequestId,
    /// Learnt from the stream's first event id (or the resume's).
    stream_number: Option<u64>,
    generation: u64,
}

impl Vanished {
    pub(crate) fn new(
        sessions: Arc<LocalSessionManager>,
        grace: Duration,
        stopped: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            sessions,
            grace,
            stopped,
            streams: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(SessionId, u64), Tracked>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops tracking the stream `key` if it is still `generation` (no
    /// resume replaced it) and `also` holds of it; what it tracked.
    fn take_if(
        &self,
        key: &(SessionId, u64),
        generation: u64,
        also: impl FnOnce(&Tracked) -> bool,
    ) -> Option<Tracked> {
        let mut streams = self.lock();
        let newest = streams
            .get(key)
            .is_some_and(|tracked| tracked.generation == generation && also(tracked));
        newest.then(|| streams.remove(key)).flatten()
    }

    /// A new request's stream as rmcp made it, watched: if it is dropped
    /// before it carried the answer to `request`, the request is cancelled
    /// (after the grace, unless resumed).
    pub(crate) fn watch(
        self: &Arc<Self>,
        session: SessionId,
        request: RequestId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Watched {
        // A request id the client uses again is no longer the old
        // request's: a late cancellation by that id must not reach the new
        // one.
        self.lock()
            .retain(|(of, _), tracked| *of != session || tracked.request != request);
        let watchee = Watchee {
            vanished: self.clone(),
            session,
            request,
            stream_number: None,
            generation: 0,
        };
        Watched::over(stream, Some(watchee))
    }

    /// A stream that no request's cancellation hangs on (the session's
    /// common stream, resumed).
    pub(crate) fn unwatched(
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Watched {
        Watched::over(stream, None)
    }

    /// The client resumes a stream from `last_event_id`: called before
    /// rmcp swaps the stream, so that the old one's end counts for
    /// nothing. The request's new generation, if the stream is one this
    /// watches, for [`resumed`](Vanished::resumed).
    pub(crate) fn resuming(&self, session: &SessionId, last_event_id: &str) -> Option<Resume> {
        let number = stream_number(last_event_id)?;
        let mut streams = self.lock();
        let tracked = streams.get_mut(&(session.clone(), number))?;
        tracked.generation += 1;
        if let StreamState::Closed { resumed } =
            std::mem::replace(&mut tracked.state, StreamState::Open)
        {
            resumed.cancel();
        }
        Some(Resume {
            request: tracked.request.clone(),
            number,
            generation: tracked.generation,
        })
    }

    /// The resumed stream, watched as the request's newest generation.
    pub(crate) fn resumed(
        self: &Arc<Self>,
        session: SessionId,
        resume: Resume,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Watched {
        let watchee = Watchee {
            vanished: self.clone(),
            session,
            request: resume.request,
            stream_number: Some(resume.number),
            generation: resume.generation,
        };
        Watched::over(stream, Some(watchee))
    }

    /// rmcp could not resume the stream (its request is over, or the
    /// session): nothing will carry the answer now, so the request is
    /// given up as if the stream had vanished for good.
    pub(crate) async fn resume_failed(&self, session: &SessionId, resume: Resume) {
        let key = (session.clone(), resume.number);
        if let Some(tracked) = self.take_if(&key, resume.generation, |_| true) {
            self.cancel(session, tracked.request).await;
        }
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

/// A resume of a watched request's stream.
pub(crate) struct Resume {
    request: RequestId,
    number: u64,
    generation: u64,
}

/// rmcp's number of a request's stream, from one of its event ids
/// (`<index>/<stream>`); `None` for the session's common stream.
fn stream_number(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

impl Watchee {
    /// The stream now has a number: its request is tracked under it.
    fn numbered(&mut self, number: u64) {
        if self.stream_number.is_some() {
            return;
        }
        self.stream_number = Some(number);
        self.vanished
            .lock()
            .entry((self.session.clone(), number))
            .or_insert_with(|| Tracked {
                request: self.request.clone(),
                generation: self.generation,
                state: StreamState::Open,
            });
    }

    /// The answer went out, or the session ended the stream: nothing to
    /// cancel, now or later.
    fn done(self) {
        let Some(number) = self.stream_number else {
            return;
        };
        let key = (self.session, number);
        self.vanished.take_if(&key, self.generation, |_| true);
    }

    /// The stream was dropped before the answer.
    fn dropped(self) {
        let Watchee {
            vanished,
            session,
            request,
            stream_number,
            generation,
        } = self;
        if vanished.stopped.is_cancelled() {
            return;
        }
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
        let key = (session.clone(), number);
        let resumed = CancellationToken::new();
        {
            let mut streams = vanished.lock();
            let Some(tracked) = streams.get_mut(&key) else {
                return;
            };
            if tracked.generation != generation {
                // A resume has replaced this stream already.
                return;
            }
            tracked.state = StreamState::Closed {
                resumed: resumed.clone(),
            };
        }
        runtime.spawn(async move {
            tokio::select! {
                () = resumed.cancelled() => {}
                () = vanished.stopped.cancelled() => {}
                () = tokio::time::sleep(vanished.grace) => {
                    let still_closed =
                        |tracked: &Tracked| matches!(tracked.state, StreamState::Closed { .. });
                    if let Some(tracked) = vanished.take_if(&key, generation, still_closed) {
                        vanished.cancel(&session, tracked.request).await;
                    }
                }
            }
        });
    }
}

/// A request's event stream, telling [`Vanished`] when it is dropped
/// before the answer.
pub(crate) struct Watched {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    /// `None` once the answer went out, or the stream ended, or for a
    /// stream no request hangs on.
    watched: Option<Watchee>,
}

impl Watched {
    fn over(
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        watched: Option<Watchee>,
    ) -> Self {
        Self {
            inner: Box::pin(stream),
            watched,
        }
    }
}

impl Stream for Watched {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = ready!(self.inner.as_mut().poll_next(cx));
        let Some(message) = &next else {
            // The session closed it (its calls were aborted with it), or
            // a resume took its place.
            if let Some(watchee) = self.watched.take() {
                watchee.done();
            }
            return Poll::Ready(next);
        };
        let answered = match &mut self.watched {
            Some(watchee) => {
                if let Some(number) = message.event_id.as_deref().and_then(stream_number) {
                    watchee.numbered(number);
                }
                message
                    .message
                    .as_deref()
                    .is_some_and(|sent| answered_id(sent) == Some(&watchee.request))
            }
            None => false,
        };
        if answered && let Some(watchee) = self.watched.take() {
            watchee.done();
        }
        Poll::Ready(next)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(watchee) = self.watched.take() {
            watchee.dropped();
        }
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
