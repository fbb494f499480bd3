//! One running server: started, shaken hands with, and watched until it
//! dies.
//!
//! A stdio server is a [`ChildGroup`]: its own process group, killed whole
//! when the connection is dropped, reaped by a thread of its own. A watcher
//! task waits for whichever comes first of the child's exit and the end of
//! its stdout (closed, unreadable, or garbage); it then kills the group,
//! and publishes the death, with the end of the server's stderr, to every
//! call in flight, which ends at that moment.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rho_process::{ChildGroup, DEFAULT_STDERR_TAIL, Exited, GroupKiller};
use rmcp::service::{Peer, RunningService};
use rmcp::{RoleClient, ServiceExt};
use tokio::sync::{Notify, oneshot, watch};

use super::handler::{Handler, ProgressRoutes};
use super::transport::{LineTransport, TransportEnd};

/// How much of the end of a server's stderr an error text quotes.
const STDERR_QUOTED: usize = 2000;
/// How long a server that closed its stdout gets to exit by itself (so its
/// own exit status is told) before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(20);
/// How long the stderr's last words get to arrive after a death.
const STDERR_SETTLE: Duration = Duration::from_millis(10);
/// How long a failed handshake waits for the server's death, which says
/// more than rmcp's error.
const DEATH_WAIT: Duration = Duration::from_millis(100);

/// How to start a stdio server: a program, its arguments, environment and
/// directory. Kept rather than a `Command`, which cannot be started twice.
#[derive(Debug, Clone)]
pub(crate) struct CommandSpec {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) current_dir: Option<PathBuf>,
}

impl CommandSpec {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command.envs(self.env.iter().map(|(key, value)| (key, value)));
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        command
    }
}

/// How a server died, as the end of a sentence about it ("exited with code
/// 3"), with the end of its stderr.
#[derive(Debug, Clone)]
pub(crate) struct Death {
    pub(crate) what: String,
    pub(crate) stderr: String,
    /// The host closed the connection (the source was removed): not the
    /// server's fault, not counted.
    pub(crate) deliberate: bool,
}

impl Death {
    /// "MCP server `name` <what>", and the end of its stderr if it wrote any.
    pub(crate) fn describe(&self, server: &str) -> String {
        format!("MCP server `{server}` {}", self.describe_short())
    }
}

/// What a connection's owner sets for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_message: usize,
    pub(crate) startup_timeout: Duration,
    /// Copy the server's stderr to this process's as it comes.
    pub(crate) forward_stderr: bool,
}

/// The child process of a stdio server.
struct Process {
    child: ChildGroup,
    /// The server's stdin, open as long as the connection lives.
    _stdin: Arc<tokio::sync::Mutex<tokio::net::unix::pipe::Sender>>,
}

/// A live (or dead) connection to one server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    routes: ProgressRoutes,
    /// Kept so the group dies with the connection.
    process: Option<Arc<Process>>,
    died: watch::Receiver<Option<Arc<Death>>>,
}

impl Connection {
    /// Starts the stdio server `spec` and shakes hands with it.
    ///
    /// # Errors
    ///
    /// Why it could not be started, as the end of a sentence about the
    /// server ("could not be started: ...", "exited with code 1 before it
    /// answered `initialize`; ...").
    pub(crate) async fn start_stdio(
        spec: &CommandSpec,
        limits: Limits,
        tools_changed: Arc<Notify>,
    ) -> Result<Self, String> {
        let copy = limits
            .forward_stderr
            .then(|| Box::new(std::io::stderr()) as Box<dyn std::io::Write + Send>);
        let spawned = ChildGroup::spawn_with_stderr(spec.command(), DEFAULT_STDERR_TAIL, copy);
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
                let stdout =
                    tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stdout))?;
                Ok((stdin, stdout))
            });
        let (stdin, stdout) =
            pipes.map_err(|error| format!("could not be started (its pipes: {error})"))?;
        let (end_tx, end_rx) = oneshot::channel();
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let transport = LineTransport::new(
            tokio::io::BufReader::with_capacity(64 << 10, stdout),
            Arc::clone(&stdin),
            limits.max_message,
            end_tx,
        );
        let watching = Watching {
            exited: child.exited(),
            exited_again: child.exited(),
            killer: child.killer(),
        };
        let process = Arc::new(Process {
            child,
            _stdin: stdin,
        });
        let (died_tx, mut died) = watch::channel(None);
        tokio::spawn(watch_process(
            Arc::downgrade(&process),
            watching,
            end_rx,
            died_tx,
        ));
        let handler = Handler::new(tools_changed);
        let routes = Arc::clone(&handler.routes);
        let handshake = tokio::time::timeout(limits.startup_timeout, handler.serve(transport));
        let service = tokio::select! {
            biased;
            answered = handshake => match answered {
                Ok(Ok(service)) => service,
                Ok(Err(error)) => {
                    let death = settle(&mut died).await;
                    return Err(match death {
                        Some(death) => format!(
                            "failed its handshake ({error}): {}",
                            death.describe_short()
                        ),
                        None => format!("failed its handshake ({error})"),
                    });
                }
                Err(_) => {
                    let stderr = tail(&process.child);
                    return Err(with_stderr(
                        format!(
                            "did not answer `initialize` within {} ms",
                            limits.startup_timeout.as_millis()
                        ),
                        &stderr,
                    ));
                }
            },
            death = wait_for_death(&mut died) => {
                return Err(format!("died before it answered `initialize`: {}", death.describe_short()));
            }
        };
        Ok(Self {
            service,
            routes,
            process: Some(process),
            died,
        })
    }

    /// The rmcp peer to send requests on.
    /// What the server said of itself at `initialize`: its name and
    /// version, and its instructions for the model.
    pub(crate) fn server_info(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.service.peer_info()
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Where calls register for their progress.
    pub(crate) fn routes(&self) -> &ProgressRoutes {
        &self.routes
    }

    /// The death, once the server died.
    pub(crate) fn death(&self) -> Option<Arc<Death>> {
        self.died.borrow().clone()
    }

    /// A receiver of the death, for a call to wait on.
    pub(crate) fn death_watch(&self) -> watch::Receiver<Option<Arc<Death>>> {
        self.died.clone()
    }

    /// Kills the server's whole process group (a stdio server). Never
    /// blocks.
    pub(crate) fn kill(&self) {
        if let Some(process) = &self.process {
            process.child.kill();
        }
    }

    /// The server's process id, for a stdio server.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|process| process.child.id())
    }

    /// The end of the server's stderr kept so far.
    pub(crate) fn stderr_tail(&self) -> String {
        self.process
            .as_ref()
            .map(|process| tail(&process.child))
            .unwrap_or_default()
    }
}

impl Death {
    /// The death without the server's name: "exited with code 1; the end
    /// of its stderr: ...".
    fn describe_short(&self) -> String {
        with_stderr(self.what.clone(), &self.stderr)
    }
}

fn with_stderr(mut text: String, stderr: &str) -> String {
    let stderr = stderr.trim_end();
    if !stderr.is_empty() {
        text.push_str("; the end of its stderr:\n");
        text.push_str(stderr);
    }
    text
}

/// Waits until the death is published.
pub(crate) async fn wait_for_death(died: &mut watch::Receiver<Option<Arc<Death>>>) -> Arc<Death> {
    loop {
        if let Some(death) = died.borrow_and_update().clone() {
            return death;
        }
        if died.changed().await.is_err() {
            // The watcher is gone without a word: only when the runtime
            // shuts down, and then nobody is waiting.
            return Arc::new(Death {
                what: "stopped being watched".to_owned(),
                stderr: String::new(),
                deliberate: true,
            });
        }
    }
}

/// The death, if it comes soon: a failed handshake is usually the server
/// dying, and its exit says more than rmcp's error.
async fn settle(died: &mut watch::Receiver<Option<Arc<Death>>>) -> Option<Arc<Death>> {
    tokio::time::timeout(DEATH_WAIT, wait_for_death(died))
        .await
        .ok()
}

/// The last [`STDERR_QUOTED`] bytes of the child's stderr, cut at a
/// character boundary.
fn tail(child: &ChildGroup) -> String {
    let all = child.stderr_tail();
    let mut start = all.len().saturating_sub(STDERR_QUOTED);
    while !all.is_char_boundary(start) {
        start += 1;
    }
    all[start..].to_owned()
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
    died: watch::Sender<Option<Arc<Death>>>,
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
        Some(process) => (tail(&process.child), false),
        None => (String::new(), true),
    };
    let _ = died.send(Some(Arc::new(Death {
        what,
        stderr,
        deliberate,
    })));
}
