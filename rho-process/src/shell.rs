//! `ShellTool`: the model's command, run by `bash -c` in the workspace,
//! confined.

use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rho_tool_core::{Concurrency, Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};

use crate::confine::{self, Confined, Confinement, GRANT_ARGUMENT, Grants, Launcher};
use crate::report::signal_text;
use crate::supervise::{self, Caps, Finished, Ran};

impl ShellTool {
    /// The default timeout of a command: two minutes.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    /// The default cap on what is read of each of stdout and stderr:
    /// 64 KiB (a model reads the result; more is noise).
    pub const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;
}

/// A ready shell tool for a coding agent: the model gives a command, rho
/// runs it with `bash -c` in the workspace, confined
/// ([`Confinement::new`] with the workspace writable, unless another is
/// given), its output capped, its whole process tree gone at the deadline.
///
/// Registered in one line:
///
/// ```no_run
/// use std::sync::Arc;
/// use rho::process::ShellTool;
///
/// let shell = Arc::new(ShellTool::new("/home/me/project"));
/// # let _ = shell;
/// ```
///
/// Its result: the command's stdout, then its stderr under a
/// `[stderr]` line; a command that exits non-zero is a failed call whose
/// text starts with its exit code; one stopped by a limit or denied by its
/// confinement says which. A command whose output passes the cap is
/// stopped there and its result says so.
#[derive(Debug, Clone)]
pub struct ShellTool {
    name: String,
    workspace: PathBuf,
    confinement: Confinement,
    launcher: Option<Launcher>,
    shell: PathBuf,
    timeout: Duration,
    caps: Caps,
    grants: Option<Grants>,
}

impl ShellTool {
    /// The tool `shell`, running commands in `workspace` under the default
    /// confinement.
    pub fn new(workspace: impl AsRef<Path>) -> Self {
        let workspace = workspace.as_ref().to_path_buf();
        Self {
            name: "shell".to_owned(),
            confinement: Confinement::new().with_workspace(&workspace),
            workspace,
            launcher: None,
            shell: PathBuf::from("/bin/bash"),
            timeout: Self::DEFAULT_TIMEOUT,
            caps: Caps {
                stdout: Self::DEFAULT_MAX_OUTPUT,
                stderr: Self::DEFAULT_MAX_OUTPUT,
            },
            grants: None,
        }
    }

    /// Lets the model ask for more access for one call: a `grant` beside
    /// the command (paths to read or write, a network), which runs only
    /// if `grants`' [`GrantGate`](crate::confine::GrantGate) (the
    /// runner's gate) approved it for that very call. A denied command's
    /// result then says how to ask.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rho::process::ShellTool;
    /// use rho::process::confine::Grants;
    /// use rho::gate::{AllowAll, ApprovalRequest, Verdict};
    ///
    /// let approver = Arc::new(|request: ApprovalRequest| async move {
    ///     // A person reads `request.reason`: "`shell` asks for more than
    ///     // its confinement allows: write /home/me/.cache".
    ///     Verdict::Allow
    /// });
    /// let grants = Grants::new(approver.clone());
    /// let shell = ShellTool::new("/home/me/project").with_grants(&grants);
    /// let gate = grants.gate(AllowAll);
    /// // Runner::new(executor).with_gate(Arc::new(gate)).with_approver(approver)
    /// # let _ = (shell, gate);
    /// ```
    #[must_use]
    pub fn with_grants(mut self, grants: &Grants) -> Self {
        self.grants = Some(grants.clone());
        self
    }

    /// Another name for the tool.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Another confinement (the workspace is made its workspace).
    #[must_use]
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement.with_workspace(&self.workspace);
        self
    }

    /// The launcher that confines the commands. Default:
    /// [`Launcher::find`].
    #[must_use]
    pub fn with_launcher(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// The shell that runs the command with `-c`. Default: `/bin/bash`.
    #[must_use]
    pub fn with_shell(mut self, shell: impl AsRef<Path>) -> Self {
        self.shell = shell.as_ref().to_path_buf();
        self
    }

    /// How long a command may run. Default:
    /// [`ShellTool::DEFAULT_TIMEOUT`].
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most bytes read of each of stdout and stderr. Default:
    /// [`ShellTool::DEFAULT_MAX_OUTPUT`].
    #[must_use]
    pub fn with_max_output(mut self, bytes: usize) -> Self {
        self.caps = Caps {
            stdout: bytes,
            stderr: bytes,
        };
        self
    }

    /// The confinement commands run under.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    fn command(
        &self,
        script: &str,
        confinement: &Confinement,
    ) -> Result<(Command, Confined), String> {
        let env = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("HOME", "/tmp"),
            ("TMPDIR", "/tmp"),
            ("LANG", "C.UTF-8"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let prepared = confine::prepare(
            confinement,
            self.launcher.as_ref(),
            self.shell.as_os_str(),
            &["-c".into(), script.into()],
            &env,
            Some(&self.workspace),
        )?;
        let confined = Confined {
            confinement: confinement.clone(),
            not_enforced: prepared.not_enforced,
        };
        Ok((prepared.command, confined))
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Runs a shell command (bash -c) in the workspace and returns its output. The command is confined: it can write only in the workspace and /tmp, read the system's programs and libraries, and has no network."
    }

    fn parameters(&self) -> serde_json::Value {
        let mut schema = serde_json::json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The command, as bash -c runs it." }
            },
            "required": ["command"],
            "additionalProperties": false,
        });
        if self.grants.is_some() {
            schema["properties"][GRANT_ARGUMENT] = confine::grant::schema();
        }
        schema
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Exclusive: a command can read or write anything its confinement
    /// reaches, so it runs alone, in the model's order.
    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    async fn run(&self, arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        let Some(script) = arguments.get("command").and_then(serde_json::Value::as_str) else {
            return ToolOutput::error(format!("tool `{}` needs a `command` string", self.name));
        };
        let confinement = match confine::grant::confinement_for(
            self.grants.as_ref(),
            &self.confinement,
            &self.name,
            &arguments,
            context.call_id(),
        ) {
            Ok(confinement) => confinement,
            Err(text) => return ToolOutput::error(text),
        };
        let (command, confined) = match self.command(script, &confinement) {
            Ok(prepared) => prepared,
            Err(text) => {
                return ToolOutput::error(format!("tool `{}` was not run: {text}", self.name));
            }
        };
        let running = match supervise::start(command, Vec::new(), self.caps) {
            Ok(running) => running,
            Err(error) => return crate::report::no_supervisor(&self.name, &error),
        };
        match running.await {
            Some(Finished::Ran(ran)) => {
                let output = answer(&self.name, ran, self.caps, &confined);
                if output.is_error() && self.grants.is_some() {
                    output.with_note(confine::grant::how_to_ask())
                } else {
                    output
                }
            }
            Some(Finished::NotStarted(error)) => {
                crate::report::not_started(&self.name, self.shell.as_os_str(), &error)
            }
            None => crate::report::lost(&self.name),
        }
    }
}

/// The command's output as the model reads it.
fn answer(tool: &str, ran: Ran, caps: Caps, confined: &Confined) -> ToolOutput {
    let output = |ran: &Ran| {
        let mut text = String::from_utf8_lossy(&ran.stdout.bytes).into_owned();
        if !ran.stderr.bytes.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&String::from_utf8_lossy(&ran.stderr.bytes));
        }
        text
    };
    let status = match &ran.status {
        Ok(status) => *status,
        Err(error) => {
            return ToolOutput::error(format!(
                "tool `{tool}` failed: the command's exit status could not be read: {error}"
            ));
        }
    };
    if let Some(text) = confined.launcher_failure(status.code(), &ran.stderr.bytes) {
        return ToolOutput::error(format!("tool `{tool}` {text}"));
    }
    let mut text = output(&ran);
    for (stream, captured, cap) in [
        ("stdout", &ran.stdout, caps.stdout),
        ("stderr", &ran.stderr, caps.stderr),
    ] {
        if captured.overflowed {
            let _ = write!(
                text,
                "\n[the command wrote more than {cap} bytes to {stream}: it was stopped there]"
            );
        }
    }
    let overflowed = ran.stdout.overflowed || ran.stderr.overflowed;
    let result = match (status.signal(), status.code()) {
        // rho's own kill at the cap: the command's failure, not a crash.
        _ if overflowed => ToolOutput::error(text),
        (Some(signal), _) => {
            let limit = confined.limit_for_signal(signal, &ran.stderr.bytes);
            let why = limit
                .as_ref()
                .map(|limit| format!(": {limit}"))
                .unwrap_or_default();
            let body = format!(
                "[killed by signal {}{why}]\n{text}\n{}",
                signal_text(signal),
                confined.denial(&ran.stderr.bytes)
            );
            // A limit the confinement set is the command's failure; any
            // other signal is a crash, as for every process tool.
            if limit.is_some() {
                ToolOutput::error(body)
            } else {
                ToolOutput::crashed(body)
            }
        }
        (None, Some(0)) => ToolOutput::text(text),
        (None, code) => {
            let code = code.map_or_else(|| "?".to_owned(), |c| c.to_string());
            ToolOutput::error(format!(
                "[exit code {code}]\n{text}\n{}",
                confined.denial(&ran.stderr.bytes)
            ))
        }
    };
    match confined.not_enforced_note() {
        Some(note) => result.with_note(note),
        None => result,
    }
}
