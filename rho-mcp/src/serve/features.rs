//! What a host serves beside its tools: resources, resource templates,
//! prompts and completions, through rho's server.
//!
//! rho governs tools (a call is a rho call, with its gate, clock and
//! plain answer); the rest of MCP it only serves. A host that has
//! resources or prompts gives the server an [`McpFeatures`]
//! ([`McpServer::with_features`](crate::McpServer::with_features)), and
//! each session answers those requests from it and declares the
//! capabilities it names, so one server offers a client everything; what
//! the features announce goes through a [`Notifier`] (see `notify`). A
//! panic in the host's code is contained: the request gets an internal
//! error naming what failed, and the session serves on. A request the
//! client cancels (or whose session the host closes) is stopped: the
//! host's future for it is dropped, so a host need not watch the
//! request's cancellation token itself.

use rho_tool_core::async_trait;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
// Deprecated by SEP-2577 with the rest of logging; clients on 2025-11-25
// still set their level.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::notify::Notifier;

/// Resources, prompts and completions a host serves beside its tools.
///
/// Every method has a default: a request for something not served is
/// answered "method not found", as rmcp answers it. Implement what the
/// host has, and say so in [`capabilities`](McpFeatures::capabilities)
/// (rho declares only what that names). The types are rmcp's.
///
/// ```
/// use rho_mcp::rmcp::model::{
///     ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities,
/// };
/// use rho_mcp::rmcp::service::RequestContext;
/// use rho_mcp::rmcp::{ErrorData, RoleServer};
/// use rho_mcp::serve::McpFeatures;
///
/// /// A host's one document, listed as a resource.
/// struct Docs;
///
/// #[rho_tool_core::async_trait]
/// impl McpFeatures for Docs {
///     fn capabilities(&self) -> ServerCapabilities {
///         ServerCapabilities::builder().enable_resources().build()
///     }
///
///     async fn list_resources(
///         &self,
///         _request: Option<PaginatedRequestParams>,
///         _context: RequestContext<RoleServer>,
///     ) -> Result<ListResourcesResult, ErrorData> {
///         let readme = Resource::new("file:///README.md", "README").with_mime_type("text/markdown");
///         Ok(ListResourcesResult::with_all_items(vec![readme]))
///     }
/// }
/// ```
#[async_trait]
pub trait McpFeatures: Send + Sync + 'static {
    /// Which of resources, prompts and completions are served (the rest
    /// of what it says, tools among them, is rho's to say and ignored).
    fn capabilities(&self) -> ServerCapabilities;

    /// `resources/list`.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(not_served("resources/list"))
    }

    /// `resources/templates/list`.
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(not_served("resources/templates/list"))
    }

    /// `resources/read`. The answer may be questions for the client (an
    /// input-required result, the 2026-07-28 way), whatever its revision:
    /// a client on 2026-07-28 answers them and reads again itself; rho
    /// asks an older one the older way (requests on its session) and
    /// calls this again with its answers and the state given
    /// (`input_responses`, `request_state`), at most 8 rounds.
    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Err(not_served("resources/read"))
    }

    /// `resources/subscribe` (revisions before 2026-07-28).
    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(not_served("resources/subscribe"))
    }

    /// `resources/unsubscribe` (revisions before 2026-07-28).
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(not_served("resources/unsubscribe"))
    }

    /// `prompts/list`.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(not_served("prompts/list"))
    }

    /// `prompts/get`. The answer may be questions for the client, as for
    /// [`read_resource`](McpFeatures::read_resource).
    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Err(not_served("prompts/get"))
    }

    /// `completion/complete`. Default: no completions (an empty list), as
    /// a server that declares completions and knows none answers.
    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(CompleteResult::default())
    }

    /// `logging/setLevel` (revisions before 2026-07-28), after the session
    /// took the level for the messages it passes on. Default: nothing
    /// more to do.
    // Deprecated by SEP-2577 with the rest of logging; clients on
    // 2025-11-25 still set their level.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    /// The registry's tool `name` as the MCP server it comes from lists
    /// it, if the host has that listing: a proxy passes its server's
    /// through this way. `tools/list` then lists it as given (its title
    /// where the server put it, its icons, its `_meta`) and in the
    /// server's order (before the tools without a listing, which keep
    /// the registry's order by name), with only what rho governs in
    /// rho's words: the name the registry calls it by, and its behaviour
    /// hints left out unless believed (`believe_untrusted_hints`).
    /// Default: none, and rho lists the tool from the registry's record.
    fn tool_listing(&self, _name: &str) -> Option<ToolListing> {
        None
    }

    /// How `tools/list` shows the registry's tool `name` to the client of
    /// `context`, when not every client is shown the same: listed as
    /// given, from the registry's record, or not at all. A proxy shows
    /// an older client what its server listed on the connection opened
    /// for that client (a server may list by what its client offers).
    /// Only what the registry holds is ever shown, and a tool left out is
    /// still the registry's: a call of it is not refused for that.
    /// Asked once per tool of each `tools/list`, so it should answer
    /// from what it holds. Default: as
    /// [`tool_listing`](McpFeatures::tool_listing) says, the same for
    /// every client.
    fn tool_shown(&self, name: &str, _context: &RequestContext<RoleServer>) -> ToolShown {
        self.tool_listing(name)
            .map_or(ToolShown::Recorded, ToolShown::Listed)
    }

    /// What the features declare to the client of `context` alone, when
    /// that is not what [`capabilities`](McpFeatures::capabilities) says:
    /// asked once for each client before 2026-07-28, as it initializes
    /// its session (the context is that of its `initialize`, and carries
    /// its session as each of its requests does), before rho answers it.
    /// Read as `capabilities` is; behind a proxy, whose tools and logs are
    /// its server's, its tools and logging too. A proxy that opens a
    /// connection of its own for such a client answers with what its
    /// server declared there. Default: `None`, what `capabilities` says.
    async fn capabilities_for(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Option<ServerCapabilities> {
        None
    }

    /// Where the features send their notifications to the clients (lists
    /// changed, a resource updated, log messages), if they send any. Asked
    /// once per session. Default: none.
    fn notifier(&self) -> Option<Notifier> {
        None
    }
}

/// How the MCP server a tool comes from lists it
/// ([`McpFeatures::tool_listing`]): where in its list, and what.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolListing {
    /// The tool's place in the server's list, from 0.
    pub position: usize,
    /// The tool, as MCP's `Tool` in JSON.
    pub tool: JsonObject,
}

impl ToolListing {
    /// The tool `tool`, listed at `position`.
    pub fn new(position: usize, tool: JsonObject) -> Self {
        Self { position, tool }
    }
}

/// How `tools/list` shows one of the registry's tools to one client
/// ([`McpFeatures::tool_shown`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolShown {
    /// As the MCP server it comes from lists it (see
    /// [`McpFeatures::tool_listing`]).
    Listed(ToolListing),
    /// From the registry's record of it.
    Recorded,
    /// Not at all: this client is not shown it.
    Hidden,
}

fn not_served(method: &'static str) -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None)
}

/// `capabilities` with the resources, prompts and completions the
/// features declare, if there are features.
pub(crate) fn merged(
    mut capabilities: ServerCapabilities,
    features: Option<ServerCapabilities>,
) -> ServerCapabilities {
    if let Some(theirs) = features {
        capabilities.resources = theirs.resources;
        capabilities.prompts = theirs.prompts;
        capabilities.completions = theirs.completions;
    }
    capabilities
}
