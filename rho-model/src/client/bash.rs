//! Anthropic's bash tool, run on rho's confined shell.

use std::time::Duration;

use rho_process::ShellTool;
use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The name Anthropic's bash tool has.
pub const BASH: &str = crate::anthropic::BASH;

/// Anthropic's bash tool (`bash_20250124`, named [`BASH`]), run on rho's
/// [`ShellTool`]: each `command` in a fresh `bash -c`, confined by the
/// kernel to the shell's workspace, its output capped, its whole process
/// tree gone at the deadline. `restart` is answered at once: there is no
/// session to restart, since no command's state outlives it.
///
/// ```no_run
/// use rho::model::client::Bash;
/// use rho::process::ShellTool;
///
/// let bash = Bash::new(ShellTool::new("/home/me/project"));
/// # let _ = bash;
/// ```
#[derive(Debug, Clone)]
pub struct Bash {
    shell: ShellTool,
}

impl Bash {
    /// Anthropic's bash tool on `shell` (renamed [`BASH`]).
    pub fn new(shell: ShellTool) -> Self {
        Self {
            shell: shell.with_name(BASH),
        }
    }

    /// The shell the commands run on.
    pub fn shell(&self) -> &ShellTool {
        &self.shell
    }
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        self.shell.name()
    }

    fn description(&self) -> &str {
        self.shell.description()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The command, as bash -c runs it." },
                "restart": { "type": "boolean", "description": "Start a fresh shell (each command has one anyway)." },
            },
        })
    }

    fn timeout(&self) -> Duration {
        self.shell.timeout()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.shell.annotations()
    }

    fn concurrency(&self) -> Concurrency {
        self.shell.concurrency()
    }

    async fn run(&self, arguments: Value, context: ToolContext) -> ToolOutput {
        if arguments.get("restart").and_then(Value::as_bool) == Some(true) {
            return ToolOutput::text(
                "the shell was restarted: each command runs in a fresh, confined shell of its own",
            );
        }
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return ToolOutput::error("`bash` needs a `command` (or `restart: true`)");
        };
        self.shell.run(json!({ "command": command }), context).await
    }
}
