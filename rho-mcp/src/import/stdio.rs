//! A server that is a child process, spoken to over its stdin and stdout.
//!
//! The child is a [`ChildGroup`]: its own process group, killed whole when
//! the connection is dropped, reaped by a thread of its own. A watcher
//! task waits for whichever comes first of the child's exit and the end of
//! its stdout (closed, unreadable, or garbage); it then kills the group,
//! and publishes the death with the end of the server's stderr.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rho_process::confine::{Confinement, Launcher};
use rho_process::{ChildGroup, Exited, GroupKiller};
use tokio::sync::{oneshot, watch};

use super::connection::{Connection, Death, DeathSender, Limits, Remote, publish};
use super::handler::Heard;
use super::task_support::TaskOnly;
use super::transport::ServerStdin;
use super::transport::{LineTransport, TransportEnd};
use crate::output::{Output, SharedOutput};

/// How much of the end of a server's stderr an error text quotes.
const STDERR_QUOTED: usize = 2000;
/// How long a server that closed its stdout gets to exit by itself (so its
/// own exit status is told) before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(20);
/// How long the stderr's last words get to arrive after a death.
const STDERR_SETTLE: Duration = Duration::from_millis(10);

/// How to start a stdio server: a program, its arguments, environment and
/// directory. Kept rather than a `Command`, which cannot be started twice.
#[derive(Debug, Clone)]
pub(crate) struct CommandSpec {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) current_dir: Option<PathBuf>,
    /// Run confined, through this launcher (or the one found).
    pub(crate) confinement: Option<Box<Confinement>>,
    pub(crate) launcher: Option<Launcher>,
}

impl CommandSpec {
    /// The command that starts the server: the program itself (with the
    /// host's environment), or its launcher running it confined (with the
    /// host's environment less what looks like a secret).
    fn command(&self) -> Result<Command, String> {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if let Some(confinement) = &self.confinement {
            command.envs(rho_process::confine::inherited_env(confinement));
        }
        command.envs(self.env.iter().map(|(key, value)| (key, value)));
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        let Some(confinement) = &self.confinement else {
            return Ok(command);
        };
        let launcher = match &self.launcher {
            Some(launcher) => launcher.clone(),
            None => Launcher::find()?,
        };
        let confined = launcher
            .confine(&command, confinement)
            .map_err(|error| error.to_string())?;
        Ok(confined.into_command())
    }
}

/// The child process of a stdio server.
pub(crate) struct Process {
    child: ChildGroup,
    /// The server's stdin, shared with the transport: open as long as the
    /// connection lives (see [`LineTransport`]'s `close`).
    _stdin: SharedOutput<ServerStdin>,
    /// The tools its listings say run only as tasks.
    pub(crate) task_only: TaskOnly,
}

impl Process {
    /// Kills the whole process group. Never blocks.
    pub(crate) fn kill(&self) {
        self.child.kill();
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The last [`STDERR_QUOTED`] bytes of the child's stderr, cut at a
    /// character boundary.
    pub(crate) fn stderr_tail(&self) -> String {
        let all = self.child.stderr_tail();
        let mut start = all.len().saturating_sub(STDERR_QUOTED);
        while !all.is_char_boundary(start) {
            start += 1;
        }
        all[start..].to_owned()
    }
}

/// Starts the stdio server `spec` and shakes hands with it.
///
/// # Errors
///
/// Why it could not be started, as the end of a sentence about the server
/// ("could not be started: ...", "died before it answered `initialize`:
/// exited with code 1; ...").
pub(crate) async fn start(
    spec: &CommandSpec,
    limits: Limits,
    heard: Heard,
) -> Result<Connection, String> {
    let copy = limits
        .forward_stderr
        .then(|| Box::new(std::io::stderr()) as Box<dyn std::io::Write + Send>);
    let command = spec
        .command()
        .map_err(|why| format!("could not be started confined: {why}"))?;
    let spawned = ChildGroup::spawn_with_stderr(command, ChildGroup::DEFAULT_STDERR_TAIL, copy);
    let mut child = spawned.map_err(|error| {
        format!(
            "could not be started (`{}`: {error})",
            spec.program.to_string_lossy()
        )
    })?;
    let (stdin, stdout) = match (child.take_stdin(), child.take_stdout()) {
        (Some(stdin), Some(stdout)) => (stdin, stdout),
        _ => return Err("could not be started (its pipes were not set up)".to_owned()),
    };
    let pipes =
        tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(stdin)).and_then(|stdin| {
            let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stdout))?;
            Ok((stdin, stdout))
        });
    let (stdin, stdout) =
        pipes.map_err(|error| format!("could not be started (its pipes: {error})"))?;
    let (end_tx, end_rx) = oneshot::channel();
    let stdin = Output::shared(Box::new(stdin) as ServerStdin);
    let task_only = TaskOnly::default();
    let transport = LineTransport::new(
        tokio::io::BufReader::with_capacity(64 << 10, stdout),
        Arc::clone(&stdin),
        limits.max_message,
        end_tx,
        task_only.clone(),
    );
    let watching = Watching {
        exited: child.exited(),
        exited_again: child.exited(),
        killer: child.killer(),
    };
    let process = Arc::new(Process {
        child,
        _stdin: stdin,
        task_only,
    });
    let (died_tx, died) = watch::channel(None);
    tokio::spawn(watch_process(
        Arc::downgrade(&process),
        watching,
        end_rx,
        died_tx,
    ));
    Connection::handshake(transport, Remote::Process(process), died, limits, heard).await
}

/// What the watcher needs of the child, taken before the connection owns it.
struct Watching {
    exited: Exited,
    exited_again: Exited,
    killer: GroupKiller,
}

/// Waits for the child's exit or the end of its stdout, whichever is
/// first; kills the group; publishes the death.
async fn watch_process(
    process: Weak<Process>,
    watching: Watching,
    transport_end: oneshot::Receiver<TransportEnd>,
    died: DeathSender,
) {
    let Watching {
        exited,
        exited_again,
        killer,
    } = watching;
    let what = tokio::select! {
        exit = exited => exit.to_string(),
        end = transport_end => match end {
                // A dying server closes its stdout on the way out: its
                // exit, if it comes at once, is what happened.
                Ok(TransportEnd::Closed) => {
                    match tokio::time::timeout(EXIT_GRACE, exited_again).await {
                        Ok(exit) => exit.to_string(),
                        Err(_) => "closed its stdout while it ran, so it was killed".to_owned(),
                    }
                }
                Ok(TransportEnd::ReadFailed(error)) => {
                    format!("could not be read from ({error}), so it was killed")
                }
                Ok(TransportEnd::Violation(text)) => format!("{text}; so it was killed"),
                // rmcp dropped the transport: the connection was closed.
                Err(_) => "was disconnected".to_owned(),
        }
    };
    // Whatever ended it, nothing of its group outlives it.
    killer.kill();
    // Its last words may still be in the pipe: the thread keeping the
    // stderr reads them a moment after the exit.
    tokio::time::sleep(STDERR_SETTLE).await;
    let (stderr, deliberate) = match process.upgrade() {
        Some(process) => (process.stderr_tail(), false),
        None => (String::new(), true),
    };
    publish(
        &died,
        Death {
            what,
            stderr,
            deliberate,
        },
    );
}
