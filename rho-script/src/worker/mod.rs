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
//! **The cost.** Each call's job, partial results and answer cross a pipe
//! as JSON lines; see the benchmark harness for what that costs.
//!
//! # The worker program
//!
//! A worker is any program that calls [`serve`] (and nothing else on its
//! stdin and stdout). This crate ships one, `rho-script-worker`
//! (`cargo install rho-script` installs it); or a host serves from its own
//! executable, started with an argument it recognises:
//!
//! ```no_run
//! use rho_script::{Isolation, PoolOptions, ScriptPool, WorkerCommand};
//!
//! fn main() -> std::process::ExitCode {
//!     if std::env::args().nth(1).as_deref() == Some("--rho-script-worker") {
//!         return rho_script::worker::serve();
//!     }
//!     let worker = WorkerCommand::current_exe().expect("the host's path").with_arg("--rho-script-worker");
//!     let pool = ScriptPool::with_options(
//!         PoolOptions::new(2).with_isolation(Isolation::WorkerProcesses(worker)),
//!     );
//!     // ... the host, with `pool` ...
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

pub(crate) mod relay;
mod serve;
pub(crate) mod wire;

/// Serves a pool as its worker process: reads jobs from stdin, runs each
/// in a fresh sandbox, writes what it asks and answers to stdout; returns
/// when stdin ends (the pool, or the host, is gone), exits the process
/// if it ends while a script runs.
///
/// Call it from a program's `main` and do nothing else with stdin and
/// stdout; diagnostics go to stderr, which the pool keeps for the crash
/// text of a worker that dies.
pub fn serve() -> ExitCode {
    serve::serve()
}

/// How a pool starts its worker processes: a program that calls
/// [`serve`], its arguments, and its environment (empty unless set here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

impl WorkerCommand {
    /// The program at `program`, with no arguments.
    pub fn new(program: impl AsRef<Path>) -> Self {
        Self {
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The running executable (a host that serves from its own `main`).
    ///
    /// # Errors
    ///
    /// When the path of the executable cannot be read.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?))
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

    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned());
        command
    }
}
