//! rmcp's session manager, with each session's transport told to say when
//! its client has gone (see `closing`), so a session that ends (the
//! client's `DELETE`, an expiry) aborts its calls at once; and each
//! request's stream watched, so a client that vanishes mid-call has that
//! call cancelled (see `vanished`).

use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId, SessionManager};

use tokio_util::sync::CancellationToken;

use super::super::closing::Closing;
use super::vanished::Vanished;

/// [`LocalSessionManager`] whose transports are [`Closing`] and whose
/// request streams are watched.
pub(crate) struct ClosingSessions {
    sessions: Arc<LocalSessionManager>,
    vanished: Arc<Vanished>,
}

impl ClosingSessions {
    /// Sessions whose requests wait `resume_grace` for a client that
    /// closed their stream to resume it, until the server's `stopped`.
    pub(crate) fn new(resume_grace: Duration, stopped: CancellationToken) -> Self {
        let sessions = Arc::new(LocalSessionManager::default());
        let vanished = Vanished::new(sessions.clone(), resume_grace, stopped);
        Self { sessions, vanished }
    }
}

type Inner = LocalSessionManager;
type InnerError = <Inner as SessionManager>::Error;

impl SessionManager for ClosingSessions {
    type Error = InnerError;
    type Transport = Closing<<Inner as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.sessions.create_session().await?;
        Ok((id, Closing::new(transport)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.sessions.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.sessions.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.sessions.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let stream = self.sessions.create_stream(id, message).await?;
        Ok(match request {
            Some(request) => self.vanished.watch(id.clone(), request, stream),
            None => Vanished::unwatched(stream),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.sessions.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.sessions.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Before rmcp swaps the stream: the old one's end must count for
        // nothing, however soon it comes.
        let resume = self.vanished.resuming(id, &last_event_id);
        let stream = match self.sessions.resume(id, last_event_id).await {
            Ok(stream) => stream,
            Err(error) => {
                if let Some(resume) = resume {
                    self.vanished.resume_failed(id, resume).await;
                }
                return Err(error);
            }
        };
        // The new stream carries the request's answer, and is watched the
        // same way.
        Ok(match resume {
            Some(resume) => self.vanished.resumed(id.clone(), resume, stream),
            None => Vanished::unwatched(stream),
        })
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.sessions.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(Closing::new(transport))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<std::sync::Arc<dyn EventStore>> {
        self.sessions.event_store()
    }
}
