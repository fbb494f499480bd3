//! One registered tool: the tool itself, what the model sees of it, and its
//! source.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::untrusted::call_contained;
use rho_tool_core::{
    Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, WaitingFor, async_trait,
};

use crate::bound::Bound;

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
    /// Its title and behaviour hints, as the tool states them
    /// ([`Tool::annotations`]); for an untrusted tool, its own claims.
    pub annotations: ToolAnnotations,
    /// The JSON Schema of its answers' details, if it gives one
    /// ([`Tool::output_schema`]); always a JSON object.
    pub output_schema: Option<serde_json::Value>,
    /// How its calls may overlap with others ([`Tool::concurrency`]); a
    /// [`Concurrency::Bounded`] tool's bound holds across every runner of
    /// the registry.
    pub concurrency: Concurrency,
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

    /// The tool in MCP's `Tool` shape, as a `tools/list` answer lists it:
    /// `name`, `title` (when the annotations give one), `description`,
    /// `inputSchema`, `outputSchema` (when the tool gives one) and
    /// `annotations` (when any is set).
    ///
    /// The behaviour hints of an untrusted tool are left out (its title
    /// stays): they are claims of code the host did not write, and a client
    /// that trusts this listing must not take them as the host's word. The
    /// client then reads the tool with MCP's cautious defaults.
    pub fn to_mcp_json(&self) -> serde_json::Value {
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.annotations.title {
            tool.insert("title".into(), title.clone().into());
        }
        tool.insert("description".into(), self.description.clone().into());
        tool.insert("inputSchema".into(), self.parameters.clone());
        if let Some(schema) = &self.output_schema {
            tool.insert("outputSchema".into(), schema.clone());
        }
        let annotations = self.annotations.believed(!self.untrusted);
        if !annotations.is_empty() {
            // Strings and booleans only: turning them into JSON cannot fail.
            let annotations = serde_json::to_value(&annotations).unwrap_or_default();
            tool.insert("annotations".into(), annotations);
        }
        serde_json::Value::Object(tool)
    }
}

/// A tool as the registry holds it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) info: Arc<ToolInfo>,
    pub(crate) source: Arc<Source>,
    /// The tool's own bound on calls at once, if it is
    /// [`Concurrency::Bounded`]; shared by every call of this entry.
    pub(crate) bound: Option<Bound>,
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
                tool.annotations(),
                tool.output_schema(),
                tool.concurrency(),
            )
        });
        let (name, description, parameters, says_untrusted, hints, schema, concurrency) = read
            .map_err(|caught| {
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
        if schema.as_ref().is_some_and(|schema| !schema.is_object()) {
            return Err(bad("its output schema is not a JSON object".to_owned()));
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
        let bound = concurrency.bound().map(|limit| {
            let waiting_for = WaitingFor::Tool {
                name: name.clone(),
                limit: limit.get(),
            };
            Bound::new(limit.get(), waiting_for)
        });
        let info = Arc::new(ToolInfo {
            name,
            description,
            parameters,
            source: source.name().to_owned(),
            untrusted,
            annotations: hints,
            output_schema: schema,
            concurrency,
        });
        Ok(Self {
            tool,
            info,
            source: source.clone(),
            bound,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.info.name
    }

    /// What a call of the tool waits for after its gate: room under the
    /// tool's bound, then under its source's (always in that order, so no
    /// two calls wait for each other).
    pub(crate) fn waits(&self) -> impl Iterator<Item = rho_tool_core::Wait> + '_ {
        self.bound
            .iter()
            .chain(self.source.bound())
            .map(Bound::wait)
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

    fn annotations(&self) -> ToolAnnotations {
        self.0.annotations()
    }

    fn concurrency(&self) -> Concurrency {
        self.0.concurrency()
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        self.0.output_schema()
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        self.0.run(arguments, context).await
    }
}
