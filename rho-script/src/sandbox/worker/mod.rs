//! Running scripts in worker processes, for hosts that must survive an
//! engine bug.
//!
//! QuickJS is C. A bug in it (or in the binding) can abort the process or
//! corrupt its memory, which no guard inside the process can catch. A
//! [`ScriptPool`](crate::ScriptPool) made with
//! [`Isolation::WorkerProcesses`](crate::Isolation::WorkerProcesses) runs
//! every script in a worker process instead of on its own threads: one
//! worker per pool thread, each in a process group of its own (through
//! [`rho_process::ChildGroup`]), serving one call at a time.
//!
//! **The same results.** The worker runs the same sandbox, with the same
//! caps, interrupt and conversion; partial results, host functions and
//! sleeps go through the pool's thread to the call's future as in the
//! in-process mode, so a script cannot tell the difference and neither can
//! the host. What differs is what an engine failure costs: the worker
//! dies, the call ends crashed with how it died (`killed by signal
//! SIGSEGV (11)`, the end of its stderr), that counts against the tool
//! like any crash, and the next call starts a fresh worker.
//!
//! **Stopping.** At the call's timeout or a host abort the worker is told
//! to stop, and the engine's interrupt stops the script as in the
//! in-process mode; a worker that does not answer within 20 ms (its script
//! is inside one long native operation, or the worker is broken) is killed
//! at once, its whole group, and the call answers as a stuck thread's does
//! in the in-process mode. The pool's thread is free then, and its next
//! call starts a fresh worker
//! ([`PoolState::worker_restarts`](crate::PoolState::worker_restarts)
//! counts them).
//!
//! **Its life.** A worker is started on its pool thread's first call and
//! kept; it is killed when the pool is dropped, and it exits by itself
//! when its stdin closes, so it never outlives the host, however the host
//! ends. Its environment is empty but for what [`WorkerCommand::with_env`]
//! adds.
//!
//! **Its confinement.** On Linux a worker runs confined by the kernel
//! ([`rho_process::confine`]): it needs nothing but its pipes, so it gets
//! [`WorkerCommand::default_confinement`] (the system's libraries and its
//! own program read-only, no network, nothing else of the file system, its
//! processes gone with it). A worker program is its own launcher: both
//! [`serve_if_worker`] and `rho-script-worker` serve
//! [`serve_if_launcher`](rho_process::confine::serve_if_launcher) first. A
//! kernel that cannot confine it refuses to start it, saying why;
//! [`WorkerCommand::with_confinement`] sets another (best effort, say) and
//! [`WorkerCommand::unconfined`] none.
//!
//! **The cost.** Each call's job, partial results and answer cross a pipe
//! as JSON lines; see the benchmark harness for what that costs.
//!
//! # The worker program
//!
//! A worker is a program that calls [`serve`] (and does nothing else with
//! its stdin and stdout). A host finds one in one of two ways, and
//! [`WorkerCommand::find`] takes whichever is there:
//!
//! - **Embedded in the host's own executable**: the host calls
//!   [`serve_if_worker`] first thing in `main`; started by a pool as its
//!   worker, the same executable serves and exits there, and otherwise the
//!   call returns at once. [`WorkerCommand::embedded`] starts it so. Nothing
//!   else to install or ship.
//! - **The installed `rho-script-worker`**: the program this crate ships
//!   (`cargo install rho-script` installs it), next to the host's
//!   executable or on `PATH` ([`WorkerCommand::installed`]). It must be of
//!   the same version as the host's rho-script.
//!
//! When neither is there, [`WorkerCommand::find`] says so, naming both.
//! A program that is not a worker (a host that forgot [`serve_if_worker`],
//! a worker of another version) is told apart by its first line on stdout,
//! the worker's greeting with its version: without it each call crashes
//! with a text that says which is the case.
//!
//! A host that embeds the worker:
//!
//! ```no_run
//! use rho::script::worker::serve_if_worker;
//! use rho::script::{Isolation, PoolOptions, ScriptPool, WorkerCommand};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // First thing: a pool's worker serves here and never returns.
//!     serve_if_worker();
//!
//!     // This executable, started as the pool's worker.
//!     let worker = WorkerCommand::embedded()?;
//!     let pool = ScriptPool::with_options(
//!         PoolOptions::new(2).with_isolation(Isolation::WorkerProcesses(worker)),
//!     )?;
//!     // ... the host, with `pool` ...
//!     # drop(pool);
//!     Ok(())
//! }
//! ```
//!
//! A host that uses the installed worker (or either, with
//! [`WorkerCommand::find`]):
//!
//! ```no_run
//! use rho::script::{Isolation, PoolOptions, ScriptPool, WorkerCommand};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // `rho-script-worker` next to this executable or on `PATH`; the
//!     // error names what is missing and where it looked.
//!     let worker = WorkerCommand::installed()?;
//!     let pool = ScriptPool::with_options(
//!         PoolOptions::new(2).with_isolation(Isolation::WorkerProcesses(worker)),
//!     )?;
//!     // ... the host, with `pool` ...
//!     # drop(pool);
//!     Ok(())
//! }
//! ```

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser as _;
use rho_process::confine::{Confinement, Launcher};

pub(crate) mod relay;
mod serve;

/// The argument with which a pool starts the host's own executable as its
/// worker ([`WorkerCommand::embedded`]), and by which [`serve_if_worker`]
/// knows it was started so: the only argument.
pub const EMBEDDED_WORKER_ARG: &str = "--rho-script-worker";

/// The name of the worker program this crate ships.
pub const WORKER_PROGRAM: &str = "rho-script-worker";

/// Set once [`serve_if_worker`] returned in this process: its executable
/// embeds the worker.
static EMBEDS_THE_WORKER: AtomicBool = AtomicBool::new(false);

/// Serves a pool as its worker process: reads jobs from stdin, runs each
/// in a fresh sandbox, writes what it asks and answers to stdout; returns
/// when stdin ends (the pool, or the host, is gone), exits the process
/// if it ends while a script runs.
///
/// Call it from a program's `main` and do nothing else with stdin and
/// stdout; diagnostics go to stderr, which the pool keeps for the crash
/// text of a worker that dies. A host that embeds the worker calls
/// [`serve_if_worker`] instead.
pub fn serve() -> ExitCode {
    if serve::serve() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The worker embedded in a host's own executable: call it first thing in
/// `main`.
///
/// When this process was started as a pool's worker (by
/// [`WorkerCommand::embedded`]: its only argument is
/// [`EMBEDDED_WORKER_ARG`]), it serves as [`serve`] does and then exits
/// the process: it never returns. Otherwise it returns at once, having
/// done nothing but note that this executable embeds the worker, which
/// [`WorkerCommand::embedded`] and [`WorkerCommand::find`] check.
///
/// First thing, because in a worker nothing of the host's `main` may run
/// before it: the worker's stdout is the pool's, and anything else written
/// there is taken for a broken worker.
pub fn serve_if_worker() {
    // A worker program is its own confinement launcher: started as one,
    // this never returns.
    rho_process::confine::serve_if_launcher();
    let args: Vec<OsString> = std::env::args_os().collect();
    // The host's own command line is the host's: it is parsed here only
    // when it names the worker's marker, and then must be exactly the
    // worker's (the marker and nothing else), or the host runs.
    let marked = args.iter().skip(1).any(|arg| arg == EMBEDDED_WORKER_ARG);
    if marked
        && matches!(
            EmbeddedWorker::try_parse_from(&args),
            Ok(EmbeddedWorker { worker: true })
        )
    {
        std::process::exit(if serve::serve() { 0 } else { 1 });
    }
    EMBEDS_THE_WORKER.store(true, Ordering::Release);
}

/// The command line with which [`WorkerCommand::embedded`] starts the
/// host's executable: [`EMBEDDED_WORKER_ARG`], the only argument.
#[derive(clap::Parser)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct EmbeddedWorker {
    /// Serve as a pool's worker process.
    #[arg(long = "rho-script-worker")]
    worker: bool,
}

/// How a pool starts its worker processes: a program that calls
/// [`serve`], its arguments, its environment (empty unless set here) and
/// its confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// Boxed: a confinement is large, and `Isolation` holds this inline.
    confinement: Option<Box<Confinement>>,
    launcher: Option<Launcher>,
}

impl WorkerCommand {
    /// The program at `program`, with no arguments, confined by
    /// [`default_confinement`](Self::default_confinement) on Linux with
    /// the program as its own launcher.
    pub fn new(program: impl AsRef<Path>) -> Self {
        let program = program.as_ref().to_path_buf();
        Self {
            confinement: cfg!(target_os = "linux")
                .then(|| Box::new(Self::default_confinement(&program))),
            program,
            args: Vec::new(),
            env: Vec::new(),
            launcher: None,
        }
    }

    /// What a worker needs: the system's libraries and `program` itself,
    /// read-only; no network; no workspace; the default limits.
    pub fn default_confinement(program: &Path) -> Confinement {
        Confinement::new().with_read(program)
    }

    /// Runs the worker under `confinement` instead of the default.
    #[must_use]
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = Some(Box::new(confinement));
        self
    }

    /// Runs the worker unconfined, with the host's authority (a program
    /// that does not embed the launcher, or a kernel that cannot confine).
    #[must_use]
    pub fn unconfined(mut self) -> Self {
        self.confinement = None;
        self
    }

    /// The launcher that confines the worker. Default: the worker program
    /// itself (every worker program embeds it).
    #[must_use]
    pub fn with_launcher(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// The worker's confinement, if it has one.
    pub fn confinement(&self) -> Option<&Confinement> {
        self.confinement.as_deref()
    }

    /// The running executable, with no arguments (a host that serves from
    /// its own `main` and picks its own argument; [`embedded`](Self::embedded)
    /// is the ready form).
    ///
    /// # Errors
    ///
    /// When the path of the executable cannot be read.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?))
    }

    /// The running executable as the worker, started with
    /// [`EMBEDDED_WORKER_ARG`], which [`serve_if_worker`] recognises.
    ///
    /// # Errors
    ///
    /// [`WorkerNotFound`] when [`serve_if_worker`] was not called in this
    /// process (the executable would not serve: it would run the host's
    /// `main` again), or when the path of the executable cannot be read.
    pub fn embedded() -> Result<Self, WorkerNotFound> {
        if !EMBEDS_THE_WORKER.load(Ordering::Acquire) {
            return Err(WorkerNotFound {
                looked: Looked::Embedded,
                searched: Vec::new(),
            });
        }
        let exe = std::env::current_exe().map_err(|error| WorkerNotFound {
            looked: Looked::NoExecutable(error.to_string()),
            searched: Vec::new(),
        })?;
        Ok(Self::new(exe).with_arg(EMBEDDED_WORKER_ARG))
    }

    /// The installed worker program, [`WORKER_PROGRAM`]: in the directory
    /// of the running executable, else in the first directory of `PATH`
    /// that has it (an executable file).
    ///
    /// # Errors
    ///
    /// [`WorkerNotFound`], naming the program and where it looked.
    pub fn installed() -> Result<Self, WorkerNotFound> {
        rho_process::installed::find(WORKER_PROGRAM)
            .map(Self::new)
            .map_err(|searched| WorkerNotFound {
                looked: Looked::Installed,
                searched,
            })
    }

    /// The worker this host has: embedded in its own executable if
    /// [`serve_if_worker`] was called in this process
    /// ([`embedded`](Self::embedded)), else the installed one
    /// ([`installed`](Self::installed)).
    ///
    /// # Errors
    ///
    /// [`WorkerNotFound`] when there is neither, naming both.
    pub fn find() -> Result<Self, WorkerNotFound> {
        if EMBEDS_THE_WORKER.load(Ordering::Acquire) {
            return Self::embedded();
        }
        Self::installed().map_err(|missing| WorkerNotFound {
            looked: Looked::Both,
            ..missing
        })
    }

    /// Adds an argument.
    #[must_use]
    pub fn with_arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Sets an environment variable of the worker (whose environment is
    /// otherwise empty).
    #[must_use]
    pub fn with_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The arguments.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The command that starts a worker: the program itself, or its
    /// launcher running it confined.
    pub(crate) fn command(&self) -> std::io::Result<Command> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned());
        let Some(confinement) = &self.confinement else {
            return Ok(command);
        };
        let launcher = self
            .launcher
            .clone()
            .unwrap_or_else(|| Launcher::new(&self.program));
        let mut confined = launcher
            .confine(&command, confinement)
            .map_err(|error| std::io::Error::other(format!("it cannot be confined: {error}")))?;
        confined
            .command_mut()
            .env_clear()
            .envs(self.env.iter().cloned());
        Ok(confined.into_command())
    }
}

/// No worker program was found: what was looked for, and where.
///
/// Its text names what is missing and the two ways to have a worker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub struct WorkerNotFound {
    looked: Looked,
    searched: Vec<PathBuf>,
}

/// What [`WorkerNotFound`] looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Looked {
    /// The embedded worker: `serve_if_worker` was not called.
    Embedded,
    /// The embedded worker, and the executable's path cannot be read.
    NoExecutable(String),
    /// The installed program.
    Installed,
    /// The embedded worker, then the installed program.
    Both,
}

/// How to have a worker, for the texts.
pub(crate) const HOW: &str = "embed the worker (call `rho_script::worker::serve_if_worker()` first thing in `main`, then use `WorkerCommand::embedded()`), or install `rho-script-worker` of the same version as this rho-script (`cargo install rho-script`) next to this program or on `PATH`";

impl WorkerNotFound {
    /// The directories searched for the installed program, in order.
    pub fn searched(&self) -> &[PathBuf] {
        &self.searched
    }

    fn text(&self) -> String {
        let searched = || {
            if self.searched.is_empty() {
                "nowhere: no executable directory and no `PATH`".to_owned()
            } else {
                self.searched
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        match &self.looked {
            Looked::Embedded => format!(
                "no rho-script worker: this program does not embed the worker (`rho_script::worker::serve_if_worker()` was not called in it); {HOW}"
            ),
            Looked::NoExecutable(error) => format!(
                "no rho-script worker: the path of this program, which embeds the worker, cannot be read ({error})"
            ),
            Looked::Installed => format!(
                "no rho-script worker: `{WORKER_PROGRAM}` was not found (looked in {}); {HOW}",
                searched()
            ),
            Looked::Both => format!(
                "no rho-script worker: this program does not embed the worker (`rho_script::worker::serve_if_worker()` was not called in it), and `{WORKER_PROGRAM}` was not found (looked in {}); {HOW}",
                searched()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_marker_alone_is_the_embedded_workers_command_line() {
        let parse = |args: &[&str]| {
            EmbeddedWorker::try_parse_from(args)
                .map(|parsed| parsed.worker)
                .unwrap_or(false)
        };
        assert!(parse(&["host", EMBEDDED_WORKER_ARG]));
        assert!(!parse(&["host"]));
        assert!(!parse(&["host", EMBEDDED_WORKER_ARG, "x"]));
        assert!(!parse(&["host", "x", EMBEDDED_WORKER_ARG]));
        assert!(!parse(&["host", EMBEDDED_WORKER_ARG, EMBEDDED_WORKER_ARG]));
        assert!(!parse(&["host", "--help"]));
    }
}
