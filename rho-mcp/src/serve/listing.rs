//! `tools/list`: the registry's tools in MCP's `Tool` shape.

use std::sync::Arc;

use rho_registry::{ToolInfo, ToolRegistry};
use rmcp::RoleServer;
use rmcp::model::{JsonObject, ListToolsResult, Tool};
use rmcp::service::RequestContext;

use super::features::{McpFeatures, ToolShown};

/// Every tool the registry offers now (quarantined ones left out), sorted
/// by name (after the tools whose origin's listing places them), in one
/// page.
///
/// The shape is the registry's own ([`ToolInfo::to_mcp_json`]): name,
/// title, description, input schema, output schema and annotations, with
/// an untrusted tool's behaviour hints left out unless the host believes
/// them (`believe_untrusted_hints`). A tool whose listing rmcp cannot read
/// is left out rather than failing the whole list (a registry only holds
/// tools whose metadata it could read, so this is a guard, not a path
/// anyone is expected to take).
///
/// Each tool is shown to the client of `context` as `features` say
/// ([`McpFeatures::tool_shown`]): a tool whose origin's listing they give
/// is listed as its origin lists it, in rho's words only for what rho
/// governs, and a tool they hide from this client is left out.
pub(crate) fn list(
    registry: &ToolRegistry,
    believe_untrusted_hints: bool,
    features: Option<&Arc<dyn McpFeatures>>,
    context: &RequestContext<RoleServer>,
) -> ListToolsResult {
    let mut tools: Vec<(Option<usize>, Tool)> = registry
        .tools()
        .iter()
        .filter_map(|info| {
            let shown = features.map_or(ToolShown::Recorded, |features| {
                features.tool_shown(&info.name, context)
            });
            let origin = match shown {
                ToolShown::Hidden => return None,
                ToolShown::Listed(listing) => Some(listing),
                ToolShown::Recorded => None,
            };
            let position = origin.as_ref().map(|listing| listing.position);
            let tool = origin
                .and_then(|listing| as_listed(listing.tool, info, believe_untrusted_hints))
                .or_else(|| to_mcp_tool(info, believe_untrusted_hints))?;
            Some((position, tool))
        })
        .collect();
    // Stable: the tools without a place keep the registry's order by
    // name, after the ones the origin placed.
    tools.sort_by_key(|(position, _)| position.unwrap_or(usize::MAX));
    ListToolsResult::with_all_items(tools.into_iter().map(|(_, tool)| tool).collect())
}

/// One tool in rmcp's type.
pub(crate) fn to_mcp_tool(info: &ToolInfo, believe_untrusted_hints: bool) -> Option<Tool> {
    let mut json = info.to_mcp_json();
    // MCP requires the input schema to be an object schema; a tool whose
    // parameters say nothing of their type is still called with an object.
    if let Some(schema) = json.get_mut("inputSchema")
        && !schema.is_object()
    {
        *schema = serde_json::json!({ "type": "object" });
    }
    if info.untrusted && believe_untrusted_hints && !info.annotations.is_empty() {
        // The tool's own claims, as stated: the host vouches for them.
        let stated = serde_json::to_value(&info.annotations).ok()?;
        json["annotations"] = stated;
    }
    serde_json::from_value(json).ok()
}

/// The behaviour hints of MCP's `ToolAnnotations`: the tool's claims,
/// listed only when believed.
const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// The tool as its origin listed it (`fields`), with what rho governs in
/// rho's words: the registry's name, and the hints of an untrusted tool
/// left out unless believed. `None` for a listing rmcp cannot read back
/// (rho then lists the tool from its own record).
fn as_listed(mut fields: JsonObject, info: &ToolInfo, believe: bool) -> Option<Tool> {
    fields.insert("name".to_owned(), info.name.clone().into());
    if info.untrusted
        && !believe
        && let Some(serde_json::Value::Object(annotations)) = fields.get_mut("annotations")
    {
        annotations.retain(|field, _| !HINTS.contains(&field.as_str()));
        if annotations.is_empty() {
            fields.remove("annotations");
        }
    }
    serde_json::from_value(serde_json::Value::Object(fields)).ok()
}
