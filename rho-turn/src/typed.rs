//! Typed tools: the argument type gives the schema and is deserialised for
//! the tool.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A tool whose arguments are a Rust type.
///
/// Wrap it in [`Typed`] to get a [`Tool`]: its parameter schema is derived
/// from `Args` (with `schemars`), and its `run` gets the arguments already
/// deserialised. A turn checks the arguments against that schema before the
/// gate; arguments that still do not deserialise (a constraint the schema
/// cannot express) end the call with an error result naming the problem.
///
/// ```
/// use rho::{Tool, ToolContext, ToolOutput, Typed, TypedTool, async_trait};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct AddArgs {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// struct Add;
///
/// #[async_trait]
/// impl TypedTool for Add {
///     type Args = AddArgs;
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> &str { "Adds two numbers." }
///     async fn run(&self, args: AddArgs, _cx: ToolContext) -> ToolOutput {
///         ToolOutput::text((args.a + args.b).to_string())
///     }
/// }
///
/// let tool = Typed::new(Add);
/// let schema = tool.parameters();
/// assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(schema["additionalProperties"], false);
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; `#[derive(Deserialize, JsonSchema)]`, and
    /// `#[serde(deny_unknown_fields)]` to refuse fields it does not know.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// How long the tool may run once its gate allowed it. Default:
    /// `<dyn Tool>::DEFAULT_TIMEOUT`.
    fn timeout(&self) -> Duration {
        <dyn Tool>::DEFAULT_TIMEOUT
    }

    /// Whether the tool's code was not written by the host. Default:
    /// `false`.
    fn is_untrusted(&self) -> bool {
        false
    }

    /// What the tool says of itself (read-only, destructive, ...), as
    /// [`Tool::annotations`]. Default: nothing.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// How the tool's calls may overlap, as [`Tool::concurrency`]. Default:
    /// from [`annotations`](TypedTool::annotations): side by side for a
    /// read-only tool, exclusive for any other.
    fn concurrency(&self) -> Concurrency {
        Concurrency::from_annotations(&self.annotations())
    }

    /// The JSON Schema of the answer's details, as [`Tool::output_schema`].
    /// Default: none. A tool whose details are a type of its own can give
    /// `schemars::schema_for!(MyDetails).to_value()`.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }

    /// Runs the tool on its arguments, in the call's own task.
    async fn run(&self, args: Self::Args, context: ToolContext) -> ToolOutput;
}

/// A [`TypedTool`] as a [`Tool`]. The schema is derived once, in
/// [`Typed::new`].
pub struct Typed<T> {
    tool: T,
    parameters: serde_json::Value,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `tool`, deriving its parameter schema from `T::Args`. The root
    /// `$schema` key is left out (model APIs reject it; the schema is
    /// JSON Schema 2020-12, which the turn's validation assumes).
    pub fn new(tool: T) -> Self {
        let mut parameters = schemars::schema_for!(T::Args).to_value();
        if let Some(object) = parameters.as_object_mut() {
            object.remove("$schema");
        }
        Self { tool, parameters }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }

    /// As a shared tool, ready for a registry.
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    fn timeout(&self) -> Duration {
        self.tool.timeout()
    }

    fn is_untrusted(&self) -> bool {
        self.tool.is_untrusted()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.tool.annotations()
    }

    fn concurrency(&self) -> Concurrency {
        self.tool.concurrency()
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        self.tool.output_schema()
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        match serde_json::from_value::<T::Args>(arguments) {
            Ok(args) => self.tool.run(args, context).await,
            Err(error) => ToolOutput::error(format!(
                "tool `{}` was not run: its arguments could not be read: {error}",
                self.tool.name()
            )),
        }
    }
}

impl<T> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Typed")
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Path {
        #[allow(dead_code)] // read by serde only; the test checks the schema
        path: String,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)] // only its schema is used
    struct Listing {
        files: Vec<String>,
    }

    struct List;

    #[async_trait]
    impl TypedTool for List {
        type Args = Path;
        fn name(&self) -> &str {
            "list"
        }
        fn description(&self) -> &str {
            "Lists a folder."
        }
        fn annotations(&self) -> ToolAnnotations {
            ToolAnnotations::new().read_only()
        }
        fn output_schema(&self) -> Option<serde_json::Value> {
            Some(schemars::schema_for!(Listing).to_value())
        }
        async fn run(&self, _args: Path, _cx: ToolContext) -> ToolOutput {
            ToolOutput::text("")
        }
    }

    /// What a typed tool says of itself reaches the `Tool` a registry
    /// reads: its annotations and the schema of its details.
    #[test]
    fn a_typed_tool_passes_on_its_annotations_and_output_schema() {
        let tool = Typed::new(List);
        assert!(tool.annotations().is_read_only());
        let schema = tool.output_schema().expect("an output schema");
        assert_eq!(schema["properties"]["files"]["type"], "array");
        assert_eq!(tool.parameters()["properties"]["path"]["type"], "string");
    }
}
