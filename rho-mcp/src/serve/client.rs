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
//! These are requests from server to client, which MCP has from 2025-06-18
//! to 2025-11-25: a client on 2026-07-28 or later takes questions as
//! input-required results instead, which a tool cannot send this way yet,
//! so its requests end with an error saying so. A question that waits for
//! a person (elicitation) holds the call's clock while it waits, as the
//! gate's approvals do: the person's time is not the tool's.

// Logging, sampling and roots are deprecated by SEP-2577 (2026-07-28 has
// no requests from server to client); this module serves the clients on
// 2025-11-25 that still use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rho_tool_core::ToolContext;
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

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
}

impl McpClient {
    pub(crate) fn new(peer: Peer<RoleServer>, threshold: LogThreshold) -> Self {
        Self {
            peer,
            threshold,
            context: None,
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
    /// protocol version, its capabilities.
    pub fn info(&self) -> Option<Arc<ClientConfig>> {
        self.peer.peer_info()
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
    /// or is on a revision without requests to clients;
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn create_message(
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
    /// elicitation or is on a revision without requests to clients;
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn elicit(
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
    /// [`McpClientError::NotOffered`] when the client offers no roots or
    /// is on a revision without requests to clients;
    /// [`McpClientError::Failed`] when the client answered with an error
    /// or went away.
    pub async fn list_roots(&self) -> Result<ListRootsResult, McpClientError> {
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

impl LogThreshold {
    /// The client asked for `level` and more severe.
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(severity(level), Ordering::Relaxed);
    }

    fn passes(&self, level: LoggingLevel) -> bool {
        severity(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// RFC 5424's order, least severe first, from 1 (`0` is "unset").
fn severity(level: LoggingLevel) -> u8 {
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
}
