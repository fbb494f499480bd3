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
    Executed::read(ran, caps, confined).to_output(tool)
}

impl ShellTool {
    /// Runs `command` (as `bash -c` runs it) under the tool's confinement,
    /// outside any call: its stdout and stderr apart, and how it ended.
    /// For a host, or a tool of its own, that needs the pieces (an API
    /// whose shell tool wants each stream and exit code), not the text a
    /// model reads. Dropping the future kills the command's whole group.
    pub async fn execute(&self, command: &str) -> Executed {
        let (prepared, confined) = match self.command(command, &self.confinement) {
            Ok(prepared) => prepared,
            Err(text) => return Executed::failed(format!("was not run: {text}")),
        };
        let running = match supervise::start(prepared, Vec::new(), self.caps) {
            Ok(running) => running,
            Err(error) => {
                return Executed::failed(format!(
                    "failed: the command's supervising thread could not be started: {error}"
                ));
            }
        };
        match running.await {
            Some(Finished::Ran(ran)) => Executed::read(ran, self.caps, &confined),
            Some(Finished::NotStarted(error)) => Executed::failed(format!(
                "failed: {} could not be started: {error}",
                self.shell.display()
            )),
            None => Executed::failed("failed: the command's supervisor was lost".to_owned()),
        }
    }
}

/// A command's end as [`ShellTool::execute`] gives it: its output apart,
/// how it ended, and what its confinement explains of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Executed {
    /// Its stdout (as UTF-8, lossily), up to the cap.
    pub stdout: String,
    /// Its stderr, the same.
    pub stderr: String,
    /// How it ended.
    pub end: CommandEnd,
    /// What the confinement denied it, as words for the model, when its
    /// failure reads like a denial (empty otherwise).
    pub denial: String,
    /// The streams it wrote past the cap on, with the cap.
    pub capped: Vec<(&'static str, usize)>,
    /// What of the confinement the kernel could not enforce, if anything.
    pub not_enforced: Option<String>,
    /// The connections the confinement's proxy refused during the run
    /// ([`Network::Hosts`](crate::confine::Network::Hosts)), each as
    /// `host:port: why`, in order, once each; taken out of `stderr`.
    pub refused: Vec<String>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandEnd {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it: a limit its confinement set (`limit` says
    /// which), or anything else (a crash).
    Killed {
        /// The signal's number.
        number: i32,
        /// The signal, as text (`SIGSEGV (11)`).
        signal: String,
        /// The limit behind it, if one was.
        limit: Option<String>,
    },
    /// It wrote more than the cap, and rho stopped it there.
    Capped,
    /// It did not run, or its end could not be read: why, written to
    /// follow the tool's name ("was not run: ...", "failed: ...").
    Failed(String),
}

impl Executed {
    fn failed(text: String) -> Self {
        Self {
            stdout: String::new(),
            stderr: String::new(),
            end: CommandEnd::Failed(text),
            denial: String::new(),
            capped: Vec::new(),
            not_enforced: None,
            refused: Vec::new(),
        }
    }

    /// What the supervisor saw of a run, read.
    fn read(mut ran: Ran, caps: Caps, confined: &Confined) -> Self {
        let (refused, stderr) = crate::confine::take_refused(&ran.stderr.bytes);
        ran.stderr.bytes = stderr;
        let status = match &ran.status {
            Ok(status) => *status,
            Err(error) => {
                return Self::failed(format!(
                    "failed: the command's exit status could not be read: {error}"
                ));
            }
        };
        if let Some(text) = confined.launcher_failure(status.code(), &ran.stderr.bytes) {
            return Self::failed(text);
        }
        let capped: Vec<(&'static str, usize)> = [
            ("stdout", &ran.stdout, caps.stdout),
            ("stderr", &ran.stderr, caps.stderr),
        ]
        .into_iter()
        .filter(|(_, captured, _)| captured.overflowed)
        .map(|(stream, _, cap)| (stream, cap))
        .collect();
        let end = match (status.signal(), status.code()) {
            // rho's own kill at the cap: the command's failure, not a crash.
            _ if !capped.is_empty() => CommandEnd::Capped,
            (Some(signal), _) => CommandEnd::Killed {
                number: signal,
                signal: signal_text(signal),
                limit: confined.limit_for_signal(signal, &ran.stderr.bytes),
            },
            (None, Some(code)) => CommandEnd::Exited(code),
            (None, None) => CommandEnd::Failed(
                "failed: the command ended with neither an exit code nor a signal".to_owned(),
            ),
        };
        Self {
            denial: confined.denial(&ran.stderr.bytes),
            stdout: String::from_utf8_lossy(&ran.stdout.bytes).into_owned(),
            stderr: String::from_utf8_lossy(&ran.stderr.bytes).into_owned(),
            end,
            capped,
            not_enforced: confined.not_enforced_note(),
            refused,
        }
    }

    /// Its stdout, then its stderr under a `[stderr]` line, then a line
    /// for each stream it wrote past the cap on.
    fn text(&self) -> String {
        let mut text = self.stdout.clone();
        if !self.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&self.stderr);
        }
        for (stream, cap) in &self.capped {
            let _ = write!(
                text,
                "\n[the command wrote more than {cap} bytes to {stream}: it was stopped there]"
            );
        }
        text
    }

    /// The run as the model reads it from tool `tool` (what
    /// [`ShellTool`]'s calls answer).
    pub fn to_output(&self, tool: &str) -> ToolOutput {
        let text = self.text();
        let result = match &self.end {
            CommandEnd::Failed(why) => return ToolOutput::error(format!("tool `{tool}` {why}")),
            CommandEnd::Capped => ToolOutput::error(text),
            CommandEnd::Killed { signal, limit, .. } => {
                let why = limit
                    .as_ref()
                    .map(|limit| format!(": {limit}"))
                    .unwrap_or_default();
                let body = format!("[killed by signal {signal}{why}]\n{text}\n{}", self.denial);
                // A limit the confinement set is the command's failure; any
                // other signal is a crash, as for every process tool.
                if limit.is_some() {
                    ToolOutput::error(body)
                } else {
                    ToolOutput::crashed(body)
                }
            }
            CommandEnd::Exited(0) => ToolOutput::text(text),
            CommandEnd::Exited(code) => {
                ToolOutput::error(format!("[exit code {code}]\n{text}\n{}", self.denial))
            }
        };
        let result = match crate::confine::refused_note(&self.refused) {
            Some(note) => result.with_note(note),
            None => result,
        };
        match &self.not_enforced {
            Some(note) => result.with_note(note),
            None => result,
        }
    }
}
