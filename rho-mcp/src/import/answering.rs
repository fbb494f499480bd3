//! What an imported server asks its client, answered by the host: the
//! user (elicitation), the model (sampling), the roots.
//!
//! A server asks in one of two ways. Before MCP 2026-07-28 it sends the
//! client a request of its own while a call runs (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`); on 2026-07-28 it answers the
//! call with an input-required result, and the client calls again with
//! the answers and the server's request state. Either way the host's
//! [`Answerer`] gets the same [`Questions`] and gives [`Answers`], and
//! the call's clock is held while it does: the wait is the person's, not
//! the tool's.

// rmcp marks sampling and roots deprecated by SEP-2577; they are what a
// server asks its client with until MCP has their successors.
#![allow(deprecated)]

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rho_tool_core::{ToolContext, async_trait};
use rmcp::model::ClientCapabilities;

use crate::serve::{Answers, McpClient, Questions};

/// A host's answers to what its imported servers ask their client, set by
/// [`McpSourceBuilder::answerer`](super::McpSourceBuilder::answerer).
///
/// Without one, rho offers a server nothing to ask with: it declares no
/// elicitation, sampling or roots, declines an elicitation, and a call
/// that asks anyway ends with an error saying so.
///
/// ```
/// use rho_mcp::import::Answerer;
/// use rho_mcp::rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction, InputRequest};
/// use rho_mcp::{Answer, Answers, Questions};
/// use rho_tool_core::{ToolContext, async_trait};
///
/// /// Declines every question put to the user (a host with no one to ask).
/// struct NobodyHome;
///
/// #[async_trait]
/// impl Answerer for NobodyHome {
///     fn capabilities(&self) -> ClientCapabilities {
///         ClientCapabilities::builder().enable_elicitation().build()
///     }
///
///     async fn answer(
///         &self,
///         questions: Questions,
///         _call: Option<ToolContext>,
///     ) -> Result<Answers, String> {
///         let mut answers = Answers::default();
///         for (key, request) in questions.requests() {
///             if let InputRequest::Elicitation(_) = request {
///                 let declined = ElicitResult::new(ElicitationAction::Decline);
///                 answers.insert(key, Answer::Elicit(declined));
///             }
///         }
///         Ok(answers)
///     }
/// }
/// ```
#[async_trait]
pub trait Answerer: Send + Sync + 'static {
    /// What the host answers: declared to each server as the client's
    /// capabilities (elicitation, sampling, roots), so that the server asks
    /// only that.
    fn capabilities(&self) -> ClientCapabilities;

    /// What the host answers for `call`: declared with the call's request
    /// to a server on 2026-07-28, where each request says what its client
    /// takes (before, only [`capabilities`](Answerer::capabilities) are
    /// declared, once). Default: the same for every call.
    fn capabilities_for(&self, call: &ToolContext) -> ClientCapabilities {
        let _ = call;
        self.capabilities()
    }

    /// Answers `questions`, each under its key. `call` is the call of an
    /// imported tool the server asked in, when rho knows it (always on
    /// 2026-07-28; before, when that call was the only one in flight on
    /// the server).
    ///
    /// # Errors
    ///
    /// Why there is no answer, as a sentence: the server's request gets an
    /// error with it, or the call ends with it.
    async fn answer(
        &self,
        questions: Questions,
        call: Option<ToolContext>,
    ) -> Result<Answers, String>;

    /// Answers `questions` that a server asked outside any call rho knows
    /// of, on a connection opened for `client` alone: one client before
    /// 2026-07-28 of the host's MCP server, which serves what it imports
    /// (see [`McpSource::features`](super::McpSource::features)). The
    /// server asked while it answered that client's read or prompt, or
    /// during one of several calls of it in flight at once. Default: as
    /// [`answer`](Answerer::answer) with no call.
    ///
    /// # Errors
    ///
    /// As for [`answer`](Answerer::answer).
    async fn answer_for_client(
        &self,
        questions: Questions,
        client: McpClient,
    ) -> Result<Answers, String> {
        let _ = client;
        self.answer(questions, None).await
    }

    /// A server on 2026-07-28 refused `call` because its client lacks
    /// `missing` (MCP's missing-capability error, `-32021`): what was
    /// declared for the call ([`capabilities_for`](Answerer::capabilities_for))
    /// did not include them. The call ends with an error result naming
    /// them either way; this is where a host that declared for someone
    /// else tells them. Default: nothing.
    async fn missing_capabilities(&self, missing: ClientCapabilities, call: ToolContext) {
        let _ = (missing, call);
    }
}

/// An [`Answerer`] that puts each question to the client of the served
/// call the server asked in ([`McpClient::ask`]): a proxy, or any host
/// that serves what it imports, passes its servers' questions on to the
/// person and the model at its own client.
///
/// It declares elicitation, sampling and roots, and to a server on
/// 2026-07-28 with each call what the client of that call declared of
/// them; a question its client cannot answer (it declared no such
/// capability, or there is no served call to reach it through) gets an
/// error saying so.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskTheClient;

#[async_trait]
impl Answerer for AskTheClient {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::builder()
            .enable_elicitation()
            .enable_sampling()
            .enable_roots()
            .build()
    }

    fn capabilities_for(&self, call: &ToolContext) -> ClientCapabilities {
        let Some(theirs) = McpClient::of(call).and_then(|client| client.capabilities()) else {
            return self.capabilities();
        };
        // What its client can be asked, and nothing else it declared (an
        // extension of its own is not the server's to see).
        let mut passed = ClientCapabilities::default();
        passed.elicitation = theirs.elicitation;
        passed.sampling = theirs.sampling;
        passed.roots = theirs.roots;
        passed
    }

    async fn answer(
        &self,
        questions: Questions,
        call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        let client = call
            .as_ref()
            .and_then(McpClient::of)
            .ok_or_else(|| "there is no client to ask: no call rho serves asked".to_owned())?;
        client
            .ask(questions)
            .await
            .map_err(|error| error.to_string())
    }

    /// The connection's own client is asked.
    async fn answer_for_client(
        &self,
        questions: Questions,
        client: McpClient,
    ) -> Result<Answers, String> {
        client
            .ask(questions)
            .await
            .map_err(|error| error.to_string())
    }

    /// The client of the served call lacks them too (its capabilities
    /// were declared for it): its request ends with the same error
    /// ([`McpClient::require`]).
    async fn missing_capabilities(&self, missing: ClientCapabilities, call: ToolContext) {
        if let Some(client) = McpClient::of(&call) {
            // Refused, as it should be: the call ends either way.
            let _ = client.require(missing).await;
        }
    }
}

/// A source's answerer, if it has one.
#[derive(Clone, Default)]
pub(crate) struct Answering(Option<Arc<dyn Answerer>>);

impl fmt::Debug for Answering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Answering(host)"
        } else {
            "Answering(none)"
        })
    }
}

impl Answering {
    pub(crate) fn new(answerer: Arc<dyn Answerer>) -> Self {
        Self(Some(answerer))
    }

    /// What the source declares to its server.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        self.0
            .as_ref()
            .map(|answerer| answerer.capabilities())
            .unwrap_or_default()
    }

    /// Tells the host what a server said `call`'s client lacks.
    pub(crate) async fn missing_capabilities(
        &self,
        missing: ClientCapabilities,
        call: ToolContext,
    ) {
        if let Some(answerer) = &self.0 {
            answerer.missing_capabilities(missing, call).await;
        }
    }

    /// The host's answers, or why there are none; with `call`'s clock held
    /// meanwhile.
    pub(crate) async fn answer(
        &self,
        questions: Questions,
        call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        let Some(answerer) = &self.0 else {
            return Err("rho's import answers none: the host set no answerer".to_owned());
        };
        let _held = call.as_ref().map(ToolContext::pause_clock);
        answerer.answer(questions, call).await
    }

    /// What the source declares to its server with `call`'s request (on
    /// 2026-07-28).
    pub(crate) fn capabilities_for(&self, call: &ToolContext) -> ClientCapabilities {
        self.0
            .as_ref()
            .map(|answerer| answerer.capabilities_for(call))
            .unwrap_or_default()
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The same answers, for a connection opened for `client` alone (a
    /// client before 2026-07-28, whose server learns at the handshake,
    /// once, what it may ask, and lists tools by it): declared to the
    /// server as what that client offered and the host answers, and a
    /// question asked outside a known call put to the host as that
    /// client's ([`Answerer::answer_for_client`]).
    pub(crate) fn for_client(&self, client: &McpClient) -> Self {
        let Some(inner) = &self.0 else {
            return Self(None);
        };
        let offered = client.capabilities().unwrap_or_default();
        let answered = inner.capabilities();
        let mut declared = ClientCapabilities::default();
        declared.elicitation = answered.elicitation.and(offered.elicitation);
        declared.sampling = answered.sampling.and(offered.sampling);
        declared.roots = answered.roots.and(offered.roots);
        Self::new(Arc::new(Declaring {
            inner: Arc::clone(inner),
            declared,
            client: client.outside_call(),
        }))
    }
}

/// An answerer for one client's connection, which declares what that
/// client offered: see [`Answering::for_client`].
struct Declaring {
    inner: Arc<dyn Answerer>,
    declared: ClientCapabilities,
    client: McpClient,
}

#[async_trait]
impl Answerer for Declaring {
    fn capabilities(&self) -> ClientCapabilities {
        self.declared.clone()
    }

    fn capabilities_for(&self, _call: &ToolContext) -> ClientCapabilities {
        self.declared.clone()
    }

    async fn answer(
        &self,
        questions: Questions,
        call: Option<ToolContext>,
    ) -> Result<Answers, String> {
        match call {
            Some(call) => self.inner.answer(questions, Some(call)).await,
            // Whatever the server asked about, it asked this client.
            None => {
                self.inner
                    .answer_for_client(questions, self.client.clone())
                    .await
            }
        }
    }

    async fn missing_capabilities(&self, missing: ClientCapabilities, call: ToolContext) {
        self.inner.missing_capabilities(missing, call).await;
    }
}

/// The calls in flight on one connection, so that a question the server
/// sends by itself (before 2026-07-28) can be put to the host with the
/// call it belongs to, when that is the only one.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<Vec<(u64, ToolContext)>>,
    next: std::sync::atomic::AtomicU64,
}

impl InFlight {
    /// Registers `call` until the returned guard drops.
    pub(crate) fn register(self: &Arc<Self>, call: ToolContext) -> Registered {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push((id, call));
        Registered {
            calls: Arc::clone(self),
            id,
        }
    }

    /// The call in flight, when there is exactly one.
    pub(crate) fn only(&self) -> Option<ToolContext> {
        match self.lock().as_slice() {
            [(_, call)] => Some(call.clone()),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, ToolContext)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's place in [`InFlight`], given up on drop.
pub(crate) struct Registered {
    calls: Arc<InFlight>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.calls.lock().retain(|(id, _)| *id != self.id);
    }
}
