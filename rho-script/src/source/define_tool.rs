//! [`DefineTool`]: the ready tool by which the model defines script tools
//! during a turn.

use rho_tool_core::{Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use crate::source::{ScriptDefinition, ScriptSource};

/// The tool `define_tool`: the model defines (or redefines) a JavaScript
/// tool of a [`ScriptSource`] during a turn.
///
/// Its arguments are `{ name, description, parameters, source }` (its
/// [`parameters`](Tool::parameters) schema says so); it calls
/// [`ScriptSource::define`] and answers a text saying what was defined, or
/// an error result with the [`DefineError`](crate::DefineError)'s text: a
/// mistake of the model is an answer it can act on, not a crash, and is
/// never counted against a tool.
///
/// # The gate sees new code before it exists
///
/// A definition is a call like any other, so the host's gate checks it
/// before the tool runs, with the whole source in the call's arguments.
/// The tool is trusted (its code is the host's), and its annotations say
/// it is **not read-only** and destructive (a definition may replace a
/// tool): an [`AnnotationGate`](rho_tool_core::AnnotationGate) asks its
/// approver about every definition by default, so a person can read the
/// code before it is registered. A host that lets the model define tools
/// freely says so with a rule (`Rule::allow(Match::tool("define_tool"))`).
#[derive(Debug, Clone)]
pub struct DefineTool {
    source: ScriptSource,
}

impl DefineTool {
    /// The name of the tool: `define_tool`.
    pub const NAME: &'static str = "define_tool";

    /// A `define_tool` that defines tools of `source`.
    pub fn new(source: ScriptSource) -> Self {
        Self { source }
    }

    /// The source it defines tools of.
    pub fn source(&self) -> &ScriptSource {
        &self.source
    }
}

/// The arguments, read from the call's JSON (a turn has already checked
/// them against the schema; a call started some other way is checked
/// here).
fn definition(arguments: &Value) -> Result<ScriptDefinition, String> {
    let text = |key: &str| -> Result<String, String> {
        match arguments.get(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(format!("`{key}` must be a string")),
            None => Err(format!("`{key}` is missing")),
        }
    };
    let name = text("name")?;
    let description = text("description")?;
    let source = text("source")?;
    let parameters = arguments
        .get("parameters")
        .cloned()
        .ok_or_else(|| "`parameters` is missing".to_owned())?;
    Ok(ScriptDefinition::new(name, description, parameters, source))
}

#[async_trait]
impl Tool for DefineTool {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> &str {
        "Defines a new tool written in JavaScript, or replaces one defined before, so that you \
         can call it afterwards by its name. `source` is a script that defines \
         `function run(args) { ... }`: each call runs it in a fresh sandbox with the call's \
         arguments and answers what `run` returns (a string is the text; an object or array is \
         answered as JSON; `run` may be async). The sandbox has the language's built-ins only: \
         no files, network, processes, environment or modules, and nothing is kept from one \
         call to the next. `parameters` is the JSON Schema of the arguments, with \
         `\"type\": \"object\"`. The definition is checked first (name, schema, syntax, `run`); \
         a mistake is answered with what to fix."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The tool's name: letters, digits, `_` or `-`.",
                    "pattern": "^[A-Za-z0-9_-]+$",
                    "minLength": 1,
                    "maxLength": ScriptSource::MAX_NAME_LEN,
                },
                "description": {
                    "type": "string",
                    "description": "What the tool does and what it answers.",
                },
                "parameters": {
                    "type": "object",
                    "description": "The JSON Schema of the tool's arguments, with \"type\": \"object\".",
                },
                "source": {
                    "type": "string",
                    "description": "JavaScript that defines `function run(args) { ... }`.",
                },
            },
            "required": ["name", "description", "parameters", "source"],
            "additionalProperties": false,
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new()
            .title("Define a JavaScript tool")
            .destructive(true)
            .idempotent(true)
            .open_world(false)
    }

    async fn run(&self, arguments: Value, _context: ToolContext) -> ToolOutput {
        let definition = match definition(&arguments) {
            Ok(definition) => definition,
            Err(why) => return ToolOutput::error(format!("no tool was defined: {why}")),
        };
        match self.source.define(definition).await {
            Ok(defined) => ToolOutput::text(defined.to_string()),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}
