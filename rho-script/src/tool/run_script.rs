//! [`RunScript`]: the ready tool by which the model runs a program it
//! writes in the call itself.

use crate::ScriptTool;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

use crate::sandbox::{Origin, ScriptPool};
use crate::tool::ScriptOptions;
use crate::tool::script_tool::Runs;

/// The tool `run_script`: the model writes a JavaScript program in the
/// call (`{ source, args }`) and gets what it answers, in one call.
///
/// With a [`CodeMode`](crate::CodeMode) it is code mode's usual shape: the program calls
/// the host's tools (`await tools.read_file({ path })`), each call a rho
/// call, and only its answer reaches the model. The source is the same
/// shape as a script tool's (it defines `run`, called with `args`); it
/// runs once, in a fresh sandbox, with the same caps, interrupt and
/// answers as any [`ScriptTool`](crate::ScriptTool).
///
/// A program that does not load (a syntax error, a top level that throws,
/// no `run`) is the call's mistake: an error result with the engine's
/// line and column, no strike against `run_script`. What the program does
/// once it runs (a throw, its timeout, its memory cap) counts like any
/// script tool's crash: put `run_script` in a source without a quarantine
/// rule if the model's programs should not disable it.
///
/// The tool is the host's, the program the model's: it is untrusted, and
/// its annotations say it is not read-only, so an
/// [`AnnotationGate`](rho_tool_core::AnnotationGate) asks its approver
/// about each program by default (with the source in the call's
/// arguments).
#[derive(Clone)]
pub struct RunScript {
    runs: Runs,
    max_source: usize,
}

impl RunScript {
    /// The default name of the tool: `run_script`.
    pub const NAME: &'static str = "run_script";

    /// A `run_script` on `pool`'s threads: the default timeout, limits and
    /// largest source ([`ScriptTool::DEFAULT_MAX_SOURCE`]), no grants, no code mode.
    pub fn new(pool: &ScriptPool) -> Self {
        Self {
            runs: Runs::new(Self::NAME.to_owned(), pool),
            max_source: ScriptTool::DEFAULT_MAX_SOURCE,
        }
    }

    /// Names the tool `name` instead.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.runs.name = Arc::from(name.into());
        self
    }

    /// Runs each program with `options`: its timeout, limits, grants and
    /// code mode (see [`ScriptOptions`]).
    #[must_use]
    pub fn with_options(mut self, options: ScriptOptions) -> Self {
        self.runs.options = options;
        self
    }

    /// What each program runs with.
    pub fn options(&self) -> &ScriptOptions {
        &self.runs.options
    }

    /// Sets the largest program, in bytes; a larger one is refused before
    /// anything parses it.
    #[must_use]
    pub fn with_max_source(mut self, bytes: usize) -> Self {
        self.max_source = bytes;
        self
    }
}

#[async_trait]
impl Tool for RunScript {
    fn name(&self) -> &str {
        &self.runs.name
    }

    fn description(&self) -> &str {
        "Runs a JavaScript program you write now, once, and answers what it returns. `source` \
         defines `async function run(args) { ... }`, called with `args`; a string it returns is \
         the text, an object or array is answered as JSON. The sandbox has the language's \
         built-ins and nothing else of the machine: no files, network, processes or modules; \
         where the host allows it, the global `tools` has one async function per tool you may \
         call (`await tools.read_file({ path: \"a.txt\" })`): use it to call several tools and \
         answer only what matters. A failed tool call throws an Error with the tool's answer."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "source": {
                    "type": "string",
                    "description": "JavaScript that defines `async function run(args) { ... }`.",
                },
                "args": {
                    "type": "object",
                    "description": "The argument `run` is called with (default: {}).",
                },
            },
            "required": ["source"],
            "additionalProperties": false,
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().title("Run a JavaScript program")
    }

    fn timeout(&self) -> Duration {
        self.runs.options.timeout()
    }

    fn concurrency(&self) -> Concurrency {
        self.runs.concurrency()
    }

    fn is_untrusted(&self) -> bool {
        true
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        let source = match arguments.get("source") {
            Some(Value::String(source)) => source,
            Some(_) => return ToolOutput::error("`source` must be a string of JavaScript"),
            None => return ToolOutput::error("`source` is missing: give the program to run"),
        };
        if source.len() > self.max_source {
            return ToolOutput::error(format!(
                "the program is {} bytes, more than the {} bytes a program may have",
                source.len(),
                self.max_source
            ));
        }
        let args = match arguments.get("args") {
            None | Some(Value::Null) => json!({}),
            Some(args @ Value::Object(_)) => args.clone(),
            Some(_) => return ToolOutput::error("`args` must be an object"),
        };
        self.runs
            .run(Arc::from(source.as_str()), Origin::Given, args, context)
            .await
    }
}

impl fmt::Debug for RunScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunScript")
            .field("name", &self.runs.name)
            .field("options", &self.runs.options)
            .field("max_source", &self.max_source)
            .finish_non_exhaustive()
    }
}
