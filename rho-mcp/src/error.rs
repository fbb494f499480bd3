//! Why serving stopped.

/// Why a transport stopped serving before its client left normally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The client's `initialize` failed, or it left before it.
    /// (Boxed: rmcp's error is large, and this one travels through every
    /// `Result` of a transport.)
    #[error("the MCP handshake failed: {0}")]
    Handshake(Box<rmcp::service::ServerInitializeError>),
    /// The session's task ended abnormally.
    #[error("the MCP session's task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// A listening socket could not be opened or accepted on.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<rmcp::service::ServerInitializeError> for ServeError {
    fn from(error: rmcp::service::ServerInitializeError) -> Self {
        ServeError::Handshake(Box::new(error))
    }
}
