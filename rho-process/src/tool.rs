//! `ProcessTool`: the builder, and the `Tool` it is.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rho_tool_core::{Tool, ToolAnnotations, ToolContext, ToolOutput, async_trait};

use crate::confine::{self, Confined, Confinement, GRANT_ARGUMENT, Grants, Launcher};
use crate::report;
use crate::supervise::{self, Caps, Finished};

impl ProcessTool {
    /// The default cap on what is read from the child's stdout: 16 MiB.
    pub const DEFAULT_MAX_STDOUT: usize = 16 * 1024 * 1024;

    /// The default cap on what is read from the child's stderr: 1 MiB.
    pub const DEFAULT_MAX_STDERR: usize = 1024 * 1024;
}

/// A [`Tool`] that runs a command as a child process, in its own process
/// group. See the [crate docs](crate) for the protocol and what is killed
/// when.
///
/// Built with [`new`](ProcessTool::new) and the `with_*` methods:
///
/// ```
/// use std::time::Duration;
/// use rho::process::ProcessTool;
///
/// let tool = ProcessTool::new("word_count", "/usr/local/bin/word-count")
///     .with_description("Counts the words of `text`.")
///     .with_parameters(serde_json::json!({
///         "type": "object",
///         "properties": { "text": { "type": "string" } },
///         "required": ["text"],
///     }))
///     .with_args(["--json"])
///     .with_timeout(Duration::from_secs(10))
///     .with_env("LANG", "C.UTF-8")
///     .with_max_stdout(64 * 1024)
///     .untrusted(true);
/// # let _ = tool;
/// ```
///
/// # Environment
///
/// The child starts with an **empty** environment, plus what
/// [`with_env`](ProcessTool::with_env) sets: a tool the agent wrote should
/// not see the host's API keys by default. Call
/// [`inherit_env`](ProcessTool::inherit_env) to start from the host's
/// environment instead. Without a `PATH`, give the program as an absolute
/// path (a shell then searches its own default path for the commands it
/// runs), or set `PATH` with `with_env`.
///
/// # Output caps
///
/// At most [`with_max_stdout`](ProcessTool::with_max_stdout) bytes
/// (default [`ProcessTool::DEFAULT_MAX_STDOUT`]) are read from stdout and at most
/// [`with_max_stderr`](ProcessTool::with_max_stderr) (default
/// [`ProcessTool::DEFAULT_MAX_STDERR`]) from stderr. A child that writes more to either
/// is stopped: rho stops reading at the cap, kills the process group, and
/// the call fails with a text saying which stream passed which cap. Nothing
/// beyond the caps is ever held in memory.
#[derive(Clone)]
pub struct ProcessTool {
    name: String,
    description: String,
    parameters: serde_json::Value,
    timeout: Duration,
    untrusted: bool,
    annotations: ToolAnnotations,
    program: OsString,
    args: Vec<OsString>,
    current_dir: Option<PathBuf>,
    inherit_env: bool,
    env: Vec<(OsString, OsString)>,
    caps: Caps,
    confinement: Option<Confinement>,
    launcher: Option<Launcher>,
    grants: Option<Grants>,
}

impl ProcessTool {
    /// A tool called `name` that runs `program` (no arguments, an empty
    /// environment, the host's working directory, the default timeout and
    /// caps, trusted, parameters: any object, no description).
    pub fn new(name: impl Into<String>, program: impl AsRef<OsStr>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({ "type": "object" }),
            timeout: <dyn Tool>::DEFAULT_TIMEOUT,
            untrusted: false,
            annotations: ToolAnnotations::default(),
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            current_dir: None,
            inherit_env: false,
            env: Vec::new(),
            caps: Caps {
                stdout: ProcessTool::DEFAULT_MAX_STDOUT,
                stderr: ProcessTool::DEFAULT_MAX_STDERR,
            },
            confinement: None,
            launcher: None,
            grants: None,
        }
    }

    /// What the tool does, for the model.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The JSON Schema of the arguments. Default: any object.
    pub fn with_parameters(mut self, schema: serde_json::Value) -> Self {
        self.parameters = schema;
        self
    }

    /// How long the child may run once the gate allowed the call; at the
    /// deadline rho ends the call and the whole process group is killed.
    /// Default: `<dyn Tool>::DEFAULT_TIMEOUT`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Marks the tool as untrusted (written by the agent, loaded at run
    /// time), or not. Default: trusted. See [`Tool::is_untrusted`].
    pub fn untrusted(mut self, untrusted: bool) -> Self {
        self.untrusted = untrusted;
        self
    }

    /// What the tool says of itself (read-only, destructive, ...), for a
    /// gate that decides by it and for the model's tool list. Default:
    /// nothing, which a gate reads with MCP's cautious defaults.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Adds one fixed argument, after those added before.
    pub fn with_arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds fixed arguments, after those added before.
    pub fn with_args<I>(mut self, args: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// The child's working directory. Default: the host's.
    pub fn with_current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.current_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Starts the child from the host's environment rather than an empty
    /// one; [`with_env`](ProcessTool::with_env) still adds to and overrides
    /// it.
    pub fn inherit_env(mut self) -> Self {
        self.inherit_env = true;
        self
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// The most bytes read from stdout; more stops the child. Default:
    /// [`ProcessTool::DEFAULT_MAX_STDOUT`].
    pub fn with_max_stdout(mut self, bytes: usize) -> Self {
        self.caps.stdout = bytes;
        self
    }

    /// The most bytes read from stderr; more stops the child. Default:
    /// [`ProcessTool::DEFAULT_MAX_STDERR`].
    pub fn with_max_stderr(mut self, bytes: usize) -> Self {
        self.caps.stderr = bytes;
        self
    }

    /// Runs every call confined: see [`confine`](crate::confine). The
    /// environment is still the tool's (empty unless set, or the host's
    /// with [`inherit_env`](ProcessTool::inherit_env)), less the variables
    /// whose names look like secrets unless the confinement passes them;
    /// the working directory, if set, must be inside the confinement.
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = Some(confinement);
        self
    }

    /// The launcher that confines this tool's calls. Default:
    /// [`Launcher::find`] at the first call.
    pub fn with_launcher(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Lets the model ask for more access for one call of a confined
    /// tool: a `grant` beside the arguments, run only if `grants`'
    /// [`GrantGate`](crate::confine::GrantGate) approved it for that very
    /// call (see [`ShellTool::with_grants`](crate::ShellTool::with_grants)).
    /// The child never sees the `grant`: it is taken out of the arguments
    /// it reads.
    pub fn with_grants(mut self, grants: &Grants) -> Self {
        self.grants = Some(grants.clone());
        self
    }

    /// The program the tool runs.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The tool's confinement, if it has one.
    pub fn confinement(&self) -> Option<&Confinement> {
        self.confinement.as_ref()
    }

    /// The command for one confined call: the launcher's, and what of the
    /// confinement this kernel does not enforce.
    fn confined_command(&self, confinement: &Confinement) -> Result<(Command, Confined), String> {
        let mut env = if self.inherit_env {
            confine::inherited_env(confinement)
        } else {
            Vec::new()
        };
        env.extend(self.env.iter().cloned());
        let prepared = confine::prepare(
            confinement,
            self.launcher.as_ref(),
            &self.program,
            &self.args,
            &env,
            self.current_dir.as_deref(),
        )?;
        let confined = Confined {
            confinement: confinement.clone(),
            not_enforced: prepared.not_enforced,
        };
        Ok((prepared.command, confined))
    }

    /// The command for one call (stdio and the process group are set by
    /// the supervisor, which relies on them).
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if !self.inherit_env {
            command.env_clear();
        }
        command.envs(self.env.iter().map(|(key, value)| (key, value)));
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        command
    }
}

impl fmt::Debug for ProcessTool {
    /// Shows the environment's names only: values may be secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&OsStr> = self.env.iter().map(|(key, _)| key.as_os_str()).collect();
        f.debug_struct("ProcessTool")
            .field("name", &self.name)
            .field("program", &self.program)
            .field("args", &self.args)
            .field("current_dir", &self.current_dir)
            .field("inherit_env", &self.inherit_env)
            .field("env_names", &env_names)
            .field("timeout", &self.timeout)
            .field("untrusted", &self.untrusted)
            .field("max_stdout", &self.caps.stdout)
            .field("max_stderr", &self.caps.stderr)
            .field("confinement", &self.confinement)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for ProcessTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        let mut schema = self.parameters.clone();
        if self.grants.is_some() {
            if let Some(properties) = schema
                .as_object_mut()
                .map(|object| {
                    object
                        .entry("properties")
                        .or_insert_with(|| serde_json::json!({}))
                })
                .and_then(serde_json::Value::as_object_mut)
            {
                properties.insert(GRANT_ARGUMENT.to_owned(), confine::grant::schema());
            }
        }
        schema
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn is_untrusted(&self) -> bool {
        self.untrusted
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations.clone()
    }

    /// Runs the command once: `arguments` as one line of JSON on its stdin,
    /// its answer read from stdout. Dropping the future (rho's kill at the
    /// timeout, a host abort) kills the process group.
    async fn run(&self, mut arguments: serde_json::Value, context: ToolContext) -> ToolOutput {
        let confinement = match &self.confinement {
            Some(confinement) => match confine::grant::confinement_for(
                self.grants.as_ref(),
                confinement,
                &self.name,
                &arguments,
                context.call_id(),
            ) {
                Ok(confinement) => Some(confinement),
                Err(text) => return ToolOutput::error(text),
            },
            None if arguments.get(GRANT_ARGUMENT).is_some() && self.grants.is_some() => {
                return ToolOutput::error(format!(
                    "tool `{}` takes no `{GRANT_ARGUMENT}`: it is not confined",
                    self.name
                ));
            }
            None => None,
        };
        if self.grants.is_some() {
            if let Some(object) = arguments.as_object_mut() {
                object.remove(GRANT_ARGUMENT);
            }
        }
        let mut input = match serde_json::to_vec(&arguments) {
            Ok(input) => input,
            Err(error) => {
                return ToolOutput::error(format!(
                    "tool `{}` could not write its arguments as JSON: {error}",
                    self.name
                ));
            }
        };
        input.push(b'\n');
        let (command, confined) = match &confinement {
            None => (self.command(), None),
            Some(confinement) => match self.confined_command(confinement) {
                Ok((command, confined)) => (command, Some(confined)),
                Err(text) => {
                    return ToolOutput::error(format!("tool `{}` was not run: {text}", self.name));
                }
            },
        };
        let running = match supervise::start(command, input, self.caps) {
            Ok(running) => running,
            Err(error) => return report::no_supervisor(&self.name, &error),
        };
        match running.await {
            Some(Finished::Ran(ran)) => {
                let output = report::ran(&self.name, ran, self.caps, confined.as_ref());
                if output.is_error() && confined.is_some() && self.grants.is_some() {
                    output.with_note(confine::grant::how_to_ask())
                } else {
                    output
                }
            }
            Some(Finished::NotStarted(error)) => {
                report::not_started(&self.name, &self.program, &error)
            }
            None => report::lost(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The annotations a host gives a process tool are what a gate and the
    /// model's tool list read; without any, the tool says nothing.
    #[test]
    fn a_process_tool_says_what_the_host_says_of_it() {
        let plain = ProcessTool::new("ls", "ls");
        assert_eq!(plain.annotations(), ToolAnnotations::default());
        let read_only = plain.with_annotations(ToolAnnotations::new().read_only());
        assert!(read_only.annotations().is_read_only());
        assert!(!read_only.annotations().is_destructive());
    }
}
