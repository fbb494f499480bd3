//! The MCP client a served call came from, handed to its tool:
//! [`McpClient`].
//!
//! A rho tool knows nothing of MCP: the same tool runs in a host's own
//! loop, in a turn, or served here. When rho's server starts a call it
//! hands the tool the client the call came from, as a value of the call
//! ([`Start::with_extension`](rho_tool_core::Start::with_extension)); a
//! tool written to use MCP's way back to the client finds it with
//! [`McpClient::of`] and logs to it, asks its model to sample, asks its
//! user (elicitation) or asks for its roots. Run anywhere else, the tool
//! finds none and does without.
//!
//! To a client on 2025-06-18 to 2025-11-25 these are requests from server
//! to client. A client on 2026-07-28 or later takes questions as
//! input-required results instead (see `input`): the tool asks the same
//! way and rho puts the questions to the client in the answer to its
//! request, keeping the call waiting for the retry. A question that waits
//! for a person (elicitation, and on 2026 clients every question, which
//! waits for the client's next request) holds the call's clock while it
//! waits, as the gate's approvals do: the person's time is not the tool's.

// Logging, sampling and roots are deprecated by SEP-2577 (2026-07-28 has
// no requests from server to client); this module serves the clients on
// 2025-11-25 that still use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rho_tool_core::ToolContext;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, InputRequest, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion,
};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::input::{Answer, Answers, Asker, Question, Questions, lacking};

/// The MCP client a served call came from: what a tool can ask of it while
/// it runs. Found with [`McpClient::of`] in a call rho's server started.
///
/// Cheap to clone. Every request checks first that the client offered it
/// (its capabilities at initialization), and ends with an
/// [`McpClientError`] saying what was missing when it did not.
///
/// ```
/// use rho::{Tool, ToolContext, ToolOutput, async_trait};
/// use rho::mcp::McpClient;
/// use rho::mcp::rmcp::model::{CreateMessageRequestParams, SamplingMessage};
///
/// /// Asks the client's model for a one-line summary.
/// struct Summarise;
///
/// #[async_trait]
/// impl Tool for Summarise {
///     fn name(&self) -> &str { "summarise" }
///     fn description(&self) -> &str { "Summarises a text in one line." }
///
///     async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
///         let Some(client) = McpClient::of(&context) else {
///             return ToolOutput::error("summarise runs only when served over MCP");
///         };
///         let text = arguments["text"].as_str().unwrap_or_default();
///         let message = SamplingMessage::user_text(format!("Summarise in one line: {text}"));
///         match client.create_message(CreateMessageRequestParams::new(vec![message], 100)).await {
///             Ok(answer) => ToolOutput::text(
///                 answer.message.content.first().and_then(|part| part.as_text())
///                     .map(|text| text.text.clone()).unwrap_or_default(),
///             ),
///             Err(error) => ToolOutput::error(error.to_string()),
///         }
///     }
/// }
/// ```
#[derive(Clone)]
pub struct McpClient {
    peer: Peer<RoleServer>,
    /// The least severity the client asked for (`logging/setLevel`).
    threshold: LogThreshold,
    /// The call's context, whose clock a question to a person holds; set
    /// by [`of`](McpClient::of).
    context: Option<ToolContext>,
    /// Set when the client is on 2026-07-28 or later: questions go to
    /// whoever follows the call, as input-required results.
    modern: Option<Modern>,
    /// The session of a client before 2026-07-28, whose calls rho serves.
    session: Option<ClientSession>,
}

/// The session of a client before 2026-07-28: what its handshake set (its
/// revision, its capabilities) holds for each of its calls, until it ends.
/// A proxy keeps what it opened upstream for that client this long.
#[derive(Clone)]
pub(crate) struct ClientSession {
    /// The session's number among its server's: no two sessions of one
    /// server have the same.
    pub(crate) number: u64,
    /// Cancelled when the session ends.
    pub(crate) closed: CancellationToken,
}

/// A client on 2026-07-28 or later.
#[derive(Clone)]
struct Modern {
    /// What the client declared with the request that started the call.
    capabilities: Option<ClientCapabilities>,
    asker: Asker,
}

impl McpClient {
    pub(crate) fn new(peer: Peer<RoleServer>, threshold: LogThreshold) -> Self {
        Self {
            peer,
            threshold,
            context: None,
            modern: None,
            session: None,
        }
    }

    /// The client of a call of `session`, a session before 2026-07-28.
    pub(crate) fn in_session(self, session: ClientSession) -> Self {
        Self {
            session: Some(session),
            ..self
        }
    }

    /// The session of a client before 2026-07-28 (whose handshake said
    /// what it is), when rho serves it; `None` on 2026-07-28 or later,
    /// where each request says it.
    pub(crate) fn session(&self) -> Option<&ClientSession> {
        self.session.as_ref()
    }

    /// The client that sent `context`'s request, to be asked outside any
    /// call (a forwarded feature request's questions), in its session
    /// when rho's server put the session in the request's context. Only
    /// for a client before 2026-07-28, which is asked with requests on its
    /// session: a later one answers an input-required result itself.
    pub(crate) fn of_request(context: &RequestContext<RoleServer>) -> Self {
        Self {
            session: context.extensions.get::<ClientSession>().cloned(),
            ..Self::new(context.peer.clone(), LogThreshold::of_request(None))
        }
    }

    /// The same client, asked outside any call: no call's clock is held
    /// while it answers.
    pub(crate) fn outside_call(&self) -> Self {
        Self {
            context: None,
            ..self.clone()
        }
    }

    /// The client of a call whose request is on 2026-07-28 or later: its
    /// questions go to `asker`.
    pub(crate) fn modern(
        peer: Peer<RoleServer>,
        threshold: LogThreshold,
        capabilities: Option<ClientCapabilities>,
        asker: Asker,
    ) -> Self {
        Self {
            modern: Some(Modern {
                capabilities,
                asker,
            }),
            ..Self::new(peer, threshold)
        }
    }

    /// The client of the call `context` belongs to, when rho's MCP server
    /// started the call; `None` anywhere else.
    pub fn of(context: &ToolContext) -> Option<Self> {
        let client = context.extension::<Self>()?;
        Some(Self {
            context: Some(context.clone()),
            ..client.clone()
        })
    }

    /// What the client said of itself at initialization: its name, its
    /// protocol version, its capabilities. `None` on 2026-07-28 or later,
    /// where a client says it with each request instead (see
    /// [`capabilities`](McpClient::capabilities)).
    pub fn info(&self) -> Option<Arc<ClientConfig>> {
        self.peer.peer_info()
    }

    /// What the client can be asked: its capabilities, as it declared them
    /// at initialization or, on 2026-07-28 or later, with the request that
    /// started the call. A tool that can do without an answer checks here
    /// before it asks: on 2026-07-28 a question the client did not declare
    /// ends its request with MCP's missing-capability error.
    pub fn capabilities(&self) -> Option<ClientCapabilities> {
        match &self.modern {
            Some(modern) => modern.capabilities.clone(),
            None => self.peer.peer_info().map(|info| info.capabilities.clone()),
        }
    }

    /// Puts `questions` to the client at once and gives its answers, by
    /// the keys the tool chose. On a client on 2026-07-28 or later they go
    /// out together in one input-required result and the call waits for
    /// the client's retry (its clock held); on an older client they are
    /// requests from server to client, one after another.
    ///
    /// # Errors
    ///
    /// [`McpClientError::NotOffered`] when the client cannot take one of
    /// them (on 2026-07-28, where MCP calls that a missing capability, the
    /// call is ended instead and its client told which capabilities it
    /// lacks); [`McpClientError::Failed`] when the client answered with an
    /// error or went away.
    pub async fn ask(&self, questions: Questions) -> Result<Answers, McpClientError> {
        let Some(modern) = &self.modern else {
            return self.ask_one_by_one(questions).await;
        };
        if questions.is_empty() {
            return Ok(Answers::default());
        }
        let (reply, answers) = oneshot::channel();
        let gone = || McpClientError::Failed {
            what: "input",
            why: "the call's request ended before the client answered".to_owned(),
        };
        modern
            .asker
            .send(Question {
                questions,
                required: None,
                reply,
            })
            .map_err(|_| gone())?;
        // The client's next request may take a person's time: not the
        // tool's.
        let _held = self.context.as_ref().map(ToolContext::pause_clock);
        answers.await.map_err(|_| gone())?
    }

    /// Checks that the client declared `needed` (`elicitation`,
    /// `sampling`, `roots`, `tasks`, an extension...; a capability
    /// declared in any form counts). A tool that cannot do its job without
    /// something the client lacks uses it the way MCP means: on a client on
    /// 2026-07-28 or later, the call's request then ends with MCP's
    /// missing-capability error naming what is missing (`-32021`), and the
    /// call with it, never charged to the tool. A proxy passes a server's
    /// refusal of that kind on this way ([`AskTheClient`]).
    ///
    /// [`AskTheClient`]: crate::import::AskTheClient
    ///
    /// # Errors
    ///
    /// [`McpClientError::NotOffered`] when the client did not declare all
    /// of `needed`: on 2026-07-28 and later its request has ended (the
    /// tool's call is being stopped); on older clients nothing else
    /// happens, and the tool answers as it sees fit.
    pub async fn require(&self, needed: ClientCapabilities) -> Result<(), McpClientError> {
        let declared = self.capabilities().unwrap_or_default();
        let Some(missing) = lacking(&needed, &declared) else {
            return Ok(());
        };
        let refused = || McpClientError::NotOffered {
            what: "what the call needs",
            why: format!(
                "it did not declare {}",
                serde_json::to_string(&missing).unwrap_or_default()
            ),
        };
        let Some(modern) = &self.modern else {
            return Err(refused());
        };
        // Whoever follows the call ends its request: a question with no
        // questions that needs what the client lacks.
        let (reply, answer) = oneshot::channel();
        let question = Question {
            questions: Questions::new(),
            required: Some(Box::new(needed)),
            reply,
        };
        if modern.asker.send(question).is_err() {
            return Err(refused());
        }
        match answer.await {
            // The request that follows the call now declared it (a retry
            // says again what its client takes).
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(refused()),
        }
    }

    /// `questions` as requests from server to client, in turn.
    async fn ask_one_by_one(&self, questions: Questions) -> Result<Answers, McpClientError> {
        let mut answers = Answers::default();
        for (key, request) in questions.requests() {
            let answer = match request {
                InputRequest::Elicitation(request) => {
                    Answer::Elicit(self.elicit_now(request.params.clone()).await?)
                }
                InputRequest::CreateMessage(request) => {
                    Answer::Message(self.create_message_now(request.params.clone()).await?)
                }
                InputRequest::ListRoots(_) => Answer::Roots(self.list_roots_now().await?),
                _ => {
                    return Err(McpClientError::NotOffered {
                        what: "input",
                        why: "rho asks only elicitation, sampling and roots".to_owned(),
                    });
                }
            };
            answers.insert(key.to_owned(), answer);
        }
        Ok(answers)
    }

    /// One question, asked through [`ask`](McpClient::ask) under `key`.
    async fn ask_alone(
        &self,
        key: &'static str,
        questions: Questions,
    ) -> Result<Answer, McpClientError> {
        let mut answers = self.ask(questions).await?;
        answers.take(key).ok_or_else(|| McpClientError::Failed {
            what: "input",
            why: format!("the client gave no answer to `{key}`"),
        })
    }

    /// Sends the client a log message (`notifications/message`), unless
    /// it asked for more severe ones only (`logging/setLevel`); by default
    /// every level is sent. `logger` names what logs (the tool, say).
    ///
    /// # Errors
    ///
    /// [`McpClientError::Failed`] when the message could not be sent (the
    /// client has gone).
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: Value,
    ) -> Result<(), McpClientError> {
        if !self.threshold.passes(level) {
            return Ok(());
        }
        let mut message = LoggingMessageNotificationParam::new(level, data);
        message.logger = logger.map(str::to_owned);
        self.peer
            .notify_logging_message(message)
            .await
            .map_err(|error| failed("the log message", &error))
    }

    /// Asks the client's model for a message (`sampling/createMessage`).
    ///
    /// # Errors
    ///
    /// [`McpClientError::NotOffered`] when the client offers no sampling
    /// (see [`ask`](McpClient::ask) for a client on 2026-07-28);
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, McpClientError> {
        if self.modern.is_none() {
            return self.create_message_now(params).await;
        }
        match self
            .ask_alone(
                "sampling",
                Questions::new().create_message("sampling", params),
            )
            .await?
        {
            Answer::Message(answer) => Ok(answer),
            _ => Err(not_the_answer("sampling")),
        }
    }

    async fn create_message_now(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, McpClientError> {
        self.offers("sampling", |info| info.capabilities.sampling.is_some())?;
        self.peer
            .create_message(params)
            .await
            .map_err(|error| failed("sampling", &error))
    }

    /// Asks the client's user (`elicitation/create`). The call's clock
    /// is held while the client answers: a person's time is not the
    /// tool's (the deadline still ends the call, moved by at most the
    /// runner's most pause).
    ///
    /// # Errors
    ///
    /// [`McpClientError::NotOffered`] when the client offers no
    /// elicitation (see [`ask`](McpClient::ask) for a client on
    /// 2026-07-28);
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, McpClientError> {
        if self.modern.is_none() {
            return self.elicit_now(params).await;
        }
        match self
            .ask_alone(
                "elicitation",
                Questions::new().elicit("elicitation", params),
            )
            .await?
        {
            Answer::Elicit(answer) => Ok(answer),
            _ => Err(not_the_answer("elicitation")),
        }
    }

    async fn elicit_now(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, McpClientError> {
        self.offers("elicitation", |info| {
            info.capabilities.elicitation.is_some()
        })?;
        let _held = self.context.as_ref().map(ToolContext::pause_clock);
        self.peer
            .create_elicitation(params)
            .await
            .map_err(|error| failed("elicitation", &error))
    }

    /// Asks the client for its roots (`roots/list`): the directories or
    /// files it lets servers work in.
    ///
    /// # Errors
    ///
    /// [`McpClientError::NotOffered`] when the client offers no roots
    /// (see [`ask`](McpClient::ask) for a client on 2026-07-28);
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn list_roots(&self) -> Result<ListRootsResult, McpClientError> {
        if self.modern.is_none() {
            return self.list_roots_now().await;
        }
        match self
            .ask_alone("roots", Questions::new().list_roots("roots"))
            .await?
        {
            Answer::Roots(answer) => Ok(answer),
            _ => Err(not_the_answer("roots")),
        }
    }

    async fn list_roots_now(&self) -> Result<ListRootsResult, McpClientError> {
        self.offers("roots", |info| info.capabilities.roots.is_some())?;
        self.peer
            .list_roots()
            .await
            .map_err(|error| failed("the roots", &error))
    }

    /// `Ok` when the client offers `what` on a revision that has requests
    /// from server to client.
    fn offers(
        &self,
        what: &'static str,
        offered: impl FnOnce(&ClientConfig) -> bool,
    ) -> Result<(), McpClientError> {
        let Some(info) = self.peer.peer_info() else {
            return Err(McpClientError::NotOffered {
                what,
                why: "the client has not initialized".to_owned(),
            });
        };
        if info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            return Err(McpClientError::NotOffered {
                what,
                why: format!(
                    "the client speaks MCP {}, which has no requests from server to client",
                    info.protocol_version
                ),
            });
        }
        if !offered(&info) {
            return Err(McpClientError::NotOffered {
                what,
                why: "the client did not offer it when it initialized".to_owned(),
            });
        }
        Ok(())
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field(
                "client",
                &self
                    .peer
                    .peer_info()
                    .map(|info| info.client_info.name.clone()),
            )
            .finish_non_exhaustive()
    }
}

/// Why a request to the client came to nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The client does not take this request.
    #[error("the client cannot be asked for {what}: {why}")]
    NotOffered {
        /// What was asked: "sampling", "elicitation", "roots".
        what: &'static str,
        /// Why it cannot be.
        why: String,
    },
    /// The request was sent, and answered with an error or not at all.
    #[error("asking the client for {what} failed: {why}")]
    Failed {
        /// What was asked.
        what: &'static str,
        /// The error, as text.
        why: String,
    },
}

/// An answer of another kind than the question's (rho reads each answer
/// as its question's kind, so this is a guard only).
fn not_the_answer(what: &'static str) -> McpClientError {
    McpClientError::Failed {
        what,
        why: "the client's answer is of another kind".to_owned(),
    }
}

fn failed(what: &'static str, error: &ServiceError) -> McpClientError {
    McpClientError::Failed {
        what,
        why: error.to_string(),
    }
}

/// The least severity a session's client wants log messages at, shared by
/// the session and its calls' [`McpClient`]s. `0` until the client sets
/// one: every message goes.
#[derive(Clone, Default)]
pub(crate) struct LogThreshold(Arc<AtomicU8>);

/// Above every severity: nothing passes.
const NONE_PASS: u8 = u8::MAX;

impl LogThreshold {
    /// One request's threshold on 2026-07-28 or later, where logging is
    /// asked for with each request (its `logLevel`) and a request that
    /// names no level gets no messages (SEP-2575).
    pub(crate) fn of_request(level: Option<LoggingLevel>) -> Self {
        Self(Arc::new(AtomicU8::new(level.map_or(NONE_PASS, severity))))
    }

    /// The client asked for `level` and more severe.
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(severity(level), Ordering::Relaxed);
    }

    pub(crate) fn passes(&self, level: LoggingLevel) -> bool {
        severity(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// RFC 5424's order, least severe first, from 1 (`0` is "unset").
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before the client sets a level everything passes; after, only its
    /// level and more severe ones.
    #[test]
    fn the_clients_level_lets_through_only_as_severe_or_worse() {
        let threshold = LogThreshold::default();
        assert!(threshold.passes(LoggingLevel::Debug));
        threshold.set(LoggingLevel::Warning);
        assert!(!threshold.passes(LoggingLevel::Debug));
        assert!(!threshold.passes(LoggingLevel::Notice));
        assert!(threshold.passes(LoggingLevel::Warning));
        assert!(threshold.passes(LoggingLevel::Emergency));
    }

    /// A request on 2026-07-28 that names no level gets no messages; one
    /// that names a level gets that level and more severe ones.
    #[test]
    fn a_requests_own_level_or_none_at_all() {
        assert!(!LogThreshold::of_request(None).passes(LoggingLevel::Emergency));
        let error = LogThreshold::of_request(Some(LoggingLevel::Error));
        assert!(!error.passes(LoggingLevel::Warning));
        assert!(error.passes(LoggingLevel::Critical));
    }
}
