//! Why a server could not be imported.

use rho_registry::RegistryError;

/// Why [`McpSourceBuilder::connect`](super::McpSourceBuilder::connect)
/// failed. Nothing is left behind: no source in the registry, no process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The source's runtime thread could not be started.
    #[error("the runtime of MCP source `{source_name}` could not be started: {error}")]
    Runtime {
        /// The source's name.
        source_name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The registry refused the source (its name is taken) or its tools
    /// (a name another source has).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The endpoint cannot be used as given: an HTTP URL that is not one,
    /// an `https://` URL without the crate's `https` feature, a header that
    /// HTTP does not allow. The text says which.
    #[error("{0}")]
    Endpoint(String),
    /// The server could not be started, did not shake hands, or did not
    /// list its tools; the text says which, with the end of its stderr.
    #[error("{0}")]
    Server(String),
}
