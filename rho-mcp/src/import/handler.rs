//! rmcp's client handler for one connection: routes the progress the
//! transport could not (see `progress`), tells the source when the
//! server's tool list changed, hands what else the server announces
//! (resource and prompt lists changed, a resource updated, log messages)
//! to the source's [`Notifier`], which a host serving the source's
//! features passes on to its clients, and puts the server's own requests to its
//! client (elicitation, sampling, roots) to the host's answerer (see
//! `answering`); without one, rho offers the server no capabilities, and
//! what it asks anyway is declined as rmcp declines it.

// rmcp marks sampling and roots deprecated by SEP-2577; they are what a
// server asks its client with until MCP has their successors.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ErrorCode, Implementation, InputRequest, ListRootsResult, LoggingLevel,
    LoggingMessageNotification, LoggingMessageNotificationParam, ProgressNotificationParam,
    PromptListChangedNotification, ProtocolVersion, ResourceListChangedNotification,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use tokio::sync::Notify;

use super::answering::{Answering, InFlight};
use super::asking::Asking;
use super::listed::Listed;
use super::listen::Followed;
use super::progress::{HandlerTally, ProgressRoutes, route};
use crate::serve::{Answer, Audience, Notifier, Questions};

/// What a server tells its client, as the source hears it: kept by the
/// source across the connections it starts.
#[derive(Clone, Default)]
pub(crate) struct Heard {
    /// Woken when the server says its tools changed.
    pub(crate) tools_changed: Arc<Notify>,
    /// What the server listed of its tools here last.
    pub(crate) listed: Listed,
    /// Where the rest goes, for the source's features to pass on.
    pub(crate) notifier: Notifier,
    /// Whose it is: every client's, or, on a connection opened for one
    /// client (a proxy's lane), that client's alone.
    pub(crate) audience: Audience,
    /// The resources the features follow (asked of a server on
    /// 2026-07-28 when the source listens to it).
    pub(crate) followed: Followed,
    /// The log level the features' client asked for last, sent with each
    /// call to a server on 2026-07-28 (before, it is set on the server).
    pub(crate) log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// The questions the server asked outside any call rho knows of that
    /// wait for their answers, which hold the deadline of what is
    /// forwarded on the connection.
    pub(crate) asking: Asking,
}

impl Heard {
    /// What a connection opened for the client of session `number` alone
    /// hears: its announcements go to that client, and its tools (what
    /// that client is shown of the source's), subscriptions and log level
    /// are its own.
    pub(crate) fn of_session(&self, number: u64) -> Self {
        Self {
            tools_changed: Arc::default(),
            listed: Listed::default(),
            notifier: self.notifier.clone(),
            audience: Audience::Session(number),
            followed: Followed::default(),
            log_level: Arc::default(),
            asking: Asking::default(),
        }
    }

    /// Passes `notification` on to whoever hears this connection.
    pub(crate) fn announce(&self, notification: ServerNotification) {
        self.notifier.notify_to(self.audience, notification);
    }

    /// A restarted server may offer other tools, resources and prompts
    /// (a server before 2026-07-28 is subscribed again as it starts: see
    /// `Server::renew_subscriptions`).
    pub(crate) fn restarted(&self) {
        self.tools_changed.notify_one();
        self.announce(ResourceListChangedNotification::default().into());
        self.announce(PromptListChangedNotification::default().into());
    }
}

/// The handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) routes: ProgressRoutes,
    /// What the server tells besides answers.
    pub(crate) heard: Heard,
    /// Counts each progress notification handled.
    pub(crate) tally: Arc<HandlerTally>,
    /// The host's answers to the server's questions.
    pub(crate) answering: Answering,
    /// The calls in flight, which a question may belong to.
    pub(crate) in_flight: Arc<InFlight>,
}

impl Handler {
    pub(crate) fn new(heard: Heard, answering: Answering) -> Self {
        Self {
            routes: Arc::default(),
            heard,
            tally: Arc::default(),
            answering,
            in_flight: Arc::default(),
        }
    }

    /// Puts the server's one question to the host: its answer, or the
    /// error the server's request gets.
    async fn ask(&self, request: InputRequest) -> Result<Answer, ErrorData> {
        let questions = Questions::new().with(QUESTION, request);
        let call = self.in_flight.only();
        // Outside a call rho knows, the person's time is not the clock of
        // a call but the deadline of what is forwarded meanwhile.
        let _held = call.is_none().then(|| self.heard.asking.hold());
        let mut answers = self
            .answering
            .answer(questions, call)
            .await
            .map_err(|why| ErrorData::new(ErrorCode::INTERNAL_ERROR, why, None))?;
        answers.take(QUESTION).ok_or_else(|| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "the host gave no answer to the question",
                None,
            )
        })
    }
}

impl Handler {
    /// Whether this connection declared what a server's request asks for
    /// (`declared` says): when it did not, the request gets what a client
    /// that does not offer it answers, JSON-RPC's "Method not found", as
    /// the client the connection was opened for would answer it directly.
    fn offered(&self, declared: impl Fn(&ClientCapabilities) -> bool) -> Result<(), ErrorData> {
        if declared(&self.answering.capabilities()) {
            Ok(())
        } else {
            Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            ))
        }
    }
}

/// The key of a question a server sends as a request of its own.
const QUESTION: &str = "question";

/// The error for an answer that is not what the question called for.
fn mismatched() -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        "the host answered with another kind of answer than the question called for",
        None,
    )
}

impl ClientHandler for Handler {
    /// Progress the transport could not route as it read it: its call had
    /// not registered yet (see `progress`).
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // The call registers its token right after rmcp queued the
        // request; a server quick enough to report progress before that
        // gets one more chance.
        if !route(&self.routes, &params) {
            tokio::task::yield_now().await;
            route(&self.routes, &params);
        }
        self.tally.handled_one();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.heard.tools_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.heard
            .announce(ResourceListChangedNotification::default().into());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.heard
            .announce(PromptListChangedNotification::default().into());
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard
            .announce(ResourceUpdatedNotification::new(params).into());
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard
            .announce(LoggingMessageNotification::new(params).into());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if !self.answering.is_set() {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        self.offered(|declared| declared.elicitation.is_some())?;
        match self
            .ask(InputRequest::Elicitation(ElicitRequest::new(request)))
            .await?
        {
            Answer::Elicit(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.offered(|declared| declared.sampling.is_some())?;
        match self
            .ask(InputRequest::CreateMessage(CreateMessageRequest::new(
                params,
            )))
            .await?
        {
            Answer::Message(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        if !self.answering.is_set() {
            return Ok(ListRootsResult::default());
        }
        self.offered(|declared| declared.roots.is_some())?;
        match self
            .ask(InputRequest::ListRoots(Default::default()))
            .await?
        {
            Answer::Roots(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.answering.capabilities(),
            Implementation::new("rho", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
