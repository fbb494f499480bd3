//! `tools/list`: the registry's tools in MCP's `Tool` shape.

use rho_registry::{ToolInfo, ToolRegistry};
use rmcp::model::{ListToolsResult, Tool};

/// Every tool the registry offers now (quarantined ones left out), sorted
/// by name, in one page.
///
/// The shape is the registry's own ([`ToolInfo::to_mcp_json`]): name,
/// title, description, input schema, output schema and annotations, with
/// an untrusted tool's behaviour hints left out unless the host believes
/// them (`believe_untrusted_hints`). A tool whose listing rmcp cannot read
/// is left out rather than failing the whole list (a registry only holds
/// tools whose metadata it could read, so this is a guard, not a path
/// anyone is expected to take).
pub(crate) fn list(registry: &ToolRegistry, believe_untrusted_hints: bool) -> ListToolsResult {
    let tools = registry
        .tools()
        .iter()
        .filter_map(|info| to_mcp_tool(info, believe_untrusted_hints))
        .collect();
    ListToolsResult::with_all_items(tools)
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
