//! How an import opens its conversation with a server: which revision of
//! MCP it speaks, and how it learns the server's.

use rmcp::model::ProtocolVersion;
use rmcp::service::ClientLifecycleMode;

/// How an imported server is greeted, set by
/// [`McpSourceBuilder::handshake`](super::McpSourceBuilder::handshake).
///
/// MCP 2026-07-28 has no handshake: a client asks `server/discover` what
/// the server speaks, and every request then carries the client's
/// revision, capabilities and name itself (in its `_meta`, and over HTTP
/// in the `MCP-Protocol-Version` header), so any server behind a load
/// balancer can answer it. Revisions up to 2025-11-25 open with
/// `initialize` instead, and over HTTP keep a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Handshake {
    /// `initialize` at 2025-11-25 (the default): what every server up to
    /// that revision answers, and what most servers in use today speak.
    #[default]
    Initialize,
    /// `server/discover` at 2026-07-28 only: a server that does not know
    /// it fails `connect`.
    Discover,
    /// `server/discover` first, and `initialize` at 2025-11-25 when the
    /// server answers that with an error (it is older) or not within ten
    /// seconds. For servers of either kind, at the price of one more
    /// round trip to an older one.
    Either,
}

impl Handshake {
    /// rmcp's lifecycle for this handshake.
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Self::Initialize => ClientLifecycleMode::Initialize,
            Self::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Self::Either => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
        }
    }

    /// The request that opens the conversation, for error texts.
    pub(crate) fn opening(self) -> &'static str {
        match self {
            Self::Initialize => "`initialize`",
            Self::Discover => "`server/discover`",
            Self::Either => "`server/discover` or `initialize`",
        }
    }
}
