//! What a server listed of its tools on one connection, each tool as it
//! listed it, for `tools/list` to pass on unchanged: on the source's
//! connection, the listing the registry's tools come from; on a client's
//! lane, what that client is shown of them (a server may list by what
//! its client offers, and a lane declares what its client offered).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::Tool;
use rmcp::{Peer, RoleClient};

use crate::serve::ToolListing;

/// The last listing one connection got, by the registry's name of each
/// tool (the source's prefix and the server's name); nothing before the
/// first listing that worked (one that fails keeps the one before).
#[derive(Clone, Default)]
pub(crate) struct Listed(Arc<Mutex<Option<HashMap<String, ToolListing>>>>);

impl Listed {
    /// Keeps `tools`, listed in that order, as this connection's listing.
    pub(crate) fn keep(&self, tools: &[Tool], prefix: &str) {
        let listings = tools
            .iter()
            .enumerate()
            .map(|(position, tool)| {
                // As the server listed it (rho's reading leaves out its
                // icons and `_meta`, and where it put its title).
                let fields = match serde_json::to_value(tool) {
                    Ok(serde_json::Value::Object(fields)) => fields,
                    _ => serde_json::Map::new(),
                };
                (
                    format!("{prefix}{}", tool.name),
                    ToolListing::new(position, fields),
                )
            })
            .collect();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(listings);
    }

    /// The tool the registry names `name` as this connection's listing
    /// gave it: `None` when nothing was listed here yet, `Some(None)` when
    /// the listing left it out.
    pub(crate) fn of(&self, name: &str) -> Option<Option<ToolListing>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|listings| listings.get(name).cloned())
    }
}

/// The tools the server behind `peer` lists (every page), the first of
/// each name only, within `limit`; none when it declared no tools (a
/// server of prompts or resources only, which would refuse the request).
///
/// # Errors
///
/// The listing failed or timed out: the text says which, naming the
/// server by `server`.
pub(crate) async fn fetch(
    peer: &Peer<RoleClient>,
    server: &str,
    limit: Duration,
) -> Result<Vec<Tool>, String> {
    let serves_tools = peer
        .peer_info()
        .is_none_or(|info| info.capabilities.tools.is_some());
    if !serves_tools {
        return Ok(Vec::new());
    }
    let listed = tokio::time::timeout(limit, peer.list_all_tools())
        .await
        .map_err(|_| {
            format!(
                "MCP server `{server}` did not answer `tools/list` within {} ms",
                limit.as_millis()
            )
        })?
        .map_err(|error| format!("MCP server `{server}` failed `tools/list`: {error}"))?;
    let mut seen = HashSet::new();
    Ok(listed
        .into_iter()
        .filter(|tool| seen.insert(tool.name.to_string()))
        .collect())
}
