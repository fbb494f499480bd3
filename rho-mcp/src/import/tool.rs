//! An imported tool: a rho [`Tool`] whose `run` is a `tools/call` on its
//! server.

use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::Value;

use super::call::call;
use super::server::Server;

/// What the server listed of a tool, as rho reads it.
#[derive(Debug, Clone)]
pub(crate) struct ToolSpec {
    /// The server's name for it (the registry's has the source's prefix).
    pub(crate) remote: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: ToolAnnotations,
}

impl ToolSpec {
    pub(crate) fn from_mcp(tool: rmcp::model::Tool) -> Self {
        let mut annotations: ToolAnnotations = tool
            .annotations
            .as_ref()
            .and_then(|hints| serde_json::to_value(hints).ok())
            .and_then(|hints| serde_json::from_value(hints).ok())
            .unwrap_or_default();
        if annotations.title.is_none() {
            annotations.title = tool.title.clone();
        }
        Self {
            remote: tool.name.to_string(),
            description: tool.description.map(String::from).unwrap_or_default(),
            parameters: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
            output_schema: tool
                .output_schema
                .map(|schema| Value::Object(Arc::unwrap_or_clone(schema))),
            annotations,
        }
    }
}

/// A tool of an imported MCP server.
pub(crate) struct ImportedTool {
    server: Arc<Server>,
    /// The registry's name: the source's prefix and the server's name.
    name: String,
    spec: ToolSpec,
}

impl ImportedTool {
    pub(crate) fn new(server: Arc<Server>, spec: ToolSpec) -> Self {
        let name = format!("{}{}", server.settings.prefix, spec.remote);
        Self { server, name, spec }
    }
}

#[async_trait]
impl Tool for ImportedTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }

    fn timeout(&self) -> Duration {
        self.server.settings.timeout
    }

    fn is_untrusted(&self) -> bool {
        true
    }

    fn annotations(&self) -> ToolAnnotations {
        self.spec.annotations.clone()
    }

    fn output_schema(&self) -> Option<Value> {
        self.spec.output_schema.clone()
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        call(
            &self.server,
            &self.spec.remote,
            &self.name,
            arguments,
            context,
        )
        .await
    }
}
