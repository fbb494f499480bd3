//! One registered tool: the tool itself, what the model sees of it, and its
//! source.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{Tool, ToolContext, ToolOutput, async_trait};

use crate::error::RegistryError;
use crate::source::Source;

/// What the model is told about one tool, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
    /// The name of the source it comes from.
    pub source: String,
    /// Whether its code was not written by the host (its source is
    /// untrusted, or the tool says so itself).
    pub untrusted: bool,
}

impl ToolInfo {
    /// The tool as a function definition:
    /// `{"name": ..., "description": ..., "parameters": ...}`, the shape
    /// most model APIs take (wrap it as your provider wants).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        })
    }
}

/// A tool as the registry holds it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) info: Arc<ToolInfo>,
    pub(crate) source: Arc<Source>,
}

impl Entry {
    /// Reads `tool`'s metadata once, here, with its panics contained: the
    /// listing and the look-ups never run the tool's code again.
    pub(crate) fn new(tool: Arc<dyn Tool>, source: &Arc<Source>) -> Result<Self, RegistryError> {
        let bad = |reason: String| RegistryError::BadTool {
            source_name: source.name().to_owned(),
            reason,
        };
        let read = call_contained(|| {
            (
                tool.name().to_owned(),
                tool.description().to_owned(),
                tool.parameters(),
                tool.is_untrusted(),
            )
        });
        let (name, description, parameters, says_untrusted) = read.map_err(|caught| {
            bad(format!(
                "reading its metadata panicked: {}",
                caught
                    .message
                    .as_deref()
                    .unwrap_or("(a payload that is not text)")
            ))
        })?;
        if name.is_empty() {
            return Err(bad("its name is empty".to_owned()));
        }
        let untrusted = says_untrusted || source.is_untrusted();
        // The gate and every other reader of `Tool::is_untrusted` must see
        // what the source says, so a tool of an untrusted source that does
        // not say so itself is wrapped.
        let tool = if untrusted && !says_untrusted {
            Arc::new(MarkedUntrusted(tool)) as Arc<dyn Tool>
        } else {
            tool
        };
        let info = Arc::new(ToolInfo {
            name,
            description,
            parameters,
            source: source.name().to_owned(),
            untrusted,
        });
        Ok(Self {
            tool,
            info,
            source: source.clone(),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.info.name
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.info.name)
            .field("source", &self.info.source)
            .field("untrusted", &self.info.untrusted)
            .finish_non_exhaustive()
    }
}

/// A tool of an untrusted source: the same tool, but
/// [`is_untrusted`](Tool::is_untrusted) says so.
struct MarkedUntrusted(Arc<dyn Tool>);

#[async_trait]
impl Tool for MarkedUntrusted {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn parameters(&self) -> serde_json::Value {
        self.0.parameters()
    }

    fn timeout(&self) -> Duration {
        self.0.timeout()
    }

    fn is_untrusted(&self) -> bool {
        true
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        self.0.run(arguments, context).await
    }
}
