//! OpenAI's `shell` tool, run on rho's confined shell.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use rho_process::{CommandEnd, Executed, ShellTool};
use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};
use serde_json::{Value, json};

/// The name OpenAI's shell tool has.
pub const SHELL: &str = "shell";

/// The most commands one call runs.
const MAX_COMMANDS: usize = 32;

/// OpenAI's `shell` tool (named [`SHELL`]), run on rho's [`ShellTool`]:
/// each of a call's `commands` in turn, in a fresh confined `bash -c`,
/// each within its `timeout_ms` if the model gives one (and all within the
/// tool's own timeout), each's output cut at `max_output_length`.
///
/// Its answer is the `output` of a `shell_call_output` as JSON text (a
/// list of `{stdout, stderr, outcome}`), which the
/// [`Responses`](crate::responses::Responses) dialect sends back as that
/// item; a command that did not run, or was killed by a signal, reads as an
/// exit code (`127`; `128` and the signal) with why on its stderr.
///
/// ```no_run
/// use rho::model::client::OpenAiShell;
/// use rho::process::ShellTool;
///
/// let shell = OpenAiShell::new(ShellTool::new("/home/me/project"));
/// # let _ = shell;
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiShell {
    shell: ShellTool,
}

impl OpenAiShell {
    /// OpenAI's shell tool on `shell` (renamed [`SHELL`]).
    pub fn new(shell: ShellTool) -> Self {
        Self {
            shell: shell.with_name(SHELL),
        }
    }

    /// One command, within `limit`: its entry of the output.
    async fn one(
        &self,
        command: &str,
        limit: Option<Duration>,
        context: &ToolContext,
        cap: Option<usize>,
    ) -> Value {
        let run = self.shell.execute(command);
        let ran = match limit {
            None => Some(run.await),
            Some(limit) => first(run, context.sleep(limit)).await,
        };
        let Some(executed) = ran else {
            return json!({ "stdout": "", "stderr": format!("[stopped after {} ms]", limit.unwrap_or_default().as_millis()),
                "outcome": { "type": "timeout" } });
        };
        entry(&executed, cap)
    }
}

/// `run`'s output, or `None` if `timer` ends first (`run` is then dropped,
/// which kills the command's group).
async fn first<T>(run: impl Future<Output = T>, timer: impl Future<Output = ()>) -> Option<T> {
    let mut run = pin!(run);
    let mut timer = pin!(timer);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(value) = run.as_mut().poll(cx) {
            return Poll::Ready(Some(value));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// A command's entry of a `shell_call_output`'s output.
fn entry(executed: &Executed, cap: Option<usize>) -> Value {
    let cut = |text: &str| match cap {
        Some(cap) if text.len() > cap => {
            let mut end = cap;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}\n[cut at {cap} bytes]", &text[..end])
        }
        _ => text.to_owned(),
    };
    let mut stderr = cut(&executed.stderr);
    let mut note = |line: String| {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str(&line);
    };
    for (stream, bytes) in &executed.capped {
        note(format!(
            "[the command wrote more than {bytes} bytes to {stream}: it was stopped there]"
        ));
    }
    let code = match &executed.end {
        CommandEnd::Exited(code) => *code,
        CommandEnd::Capped => 1,
        CommandEnd::Killed {
            number,
            signal,
            limit,
        } => {
            note(format!(
                "[killed by signal {signal}{}]",
                limit
                    .as_ref()
                    .map(|limit| format!(": {limit}"))
                    .unwrap_or_default()
            ));
            // The shell's own convention for a command a signal ended.
            128 + number
        }
        CommandEnd::Failed(why) => {
            note(format!("[the command {why}]"));
            127
        }
        // A new way to end, unknown here: a failure.
        _ => 1,
    };
    if code != 0 && !executed.denial.is_empty() {
        note(executed.denial.clone());
    }
    if let Some(not_enforced) = &executed.not_enforced {
        note(not_enforced.clone());
    }
    json!({ "stdout": cut(&executed.stdout), "stderr": stderr,
        "outcome": { "type": "exit", "exit_code": code } })
}

#[async_trait]
impl Tool for OpenAiShell {
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
                "commands": { "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": MAX_COMMANDS },
                "timeout_ms": { "type": ["integer", "null"], "minimum": 1 },
                "max_output_length": { "type": ["integer", "null"], "minimum": 1 },
            },
            "required": ["commands"],
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
        let commands: Vec<&str> = arguments
            .get("commands")
            .and_then(Value::as_array)
            .map(|commands| commands.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if commands.is_empty() {
            return ToolOutput::error("`shell` needs `commands`, a list of command lines");
        }
        let limit = arguments
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .map(Duration::from_millis);
        let cap = arguments
            .get("max_output_length")
            .and_then(Value::as_u64)
            .and_then(|cap| usize::try_from(cap).ok());
        let mut output = Vec::with_capacity(commands.len());
        for command in commands {
            output.push(self.one(command, limit, &context, cap).await);
        }
        ToolOutput::text(Value::Array(output).to_string())
    }
}
