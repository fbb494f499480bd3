//! Confinement: what a process rho starts may do, enforced by the kernel.
//!
//! A [`Confinement`] says which paths a process may read and write, what
//! it sees of the rest of the file system, which network it may reach,
//! which environment variables it gets and its resource limits. A
//! [`ProcessTool`](crate::ProcessTool) given one runs its command through
//! the [`Launcher`], a small program that confines itself and then runs
//! the command, so the confinement holds for the command and everything it
//! starts, whatever they do.
//!
//! # What the kernel enforces, and how
//!
//! On Linux, without root and without a setuid helper:
//!
//! | what | by |
//! |---|---|
//! | the call's end kills every process the command started, however it left the process group (`setsid`, a double fork, a daemon) | a PID namespace: the launcher's init is its PID 1, and when it exits the kernel kills the rest |
//! | the paths not named do not exist; system directories are read-only | a mount namespace with a new root assembled from bind mounts, as bubblewrap does |
//! | reads and writes only where allowed | Landlock, the second barrier, by path |
//! | no network, or a loopback of its own | a network namespace (its loopback down, or up) |
//! | no `ptrace`, no reading other processes' memory, no new namespaces or mounts, no keyrings, no terminal injection | seccomp, and a user namespace that may hold no other |
//! | memory, CPU time, processes, open files, file size | rlimits with the hard limit at the soft one (for a host running as root, processes by the PID namespace's own `pid_max`) |
//! | no host signals, no `/proc/<host pid>` | the PID namespace (and Landlock's signal scope) |
//! | no descriptor of the host's but stdin, stdout and stderr (a jobserver's pipe, a socket handed down without close-on-exec) | the launcher closes every other one first thing (`close_range`) |
//! | a bound on what a call writes in total, in bytes and files ([`Limits::written`], [`Limits::files`]) | each writable path an overlay whose changes go to a size- and inode-limited tmpfs, written back when the command ends by itself |
//! | the command cannot reach init's descriptors (the report pipe, the host's directories of bounded writes) through `/proc/1/fd` | init is not dumpable |
//! | no secrets in the environment | the environment starts empty; variables whose names look like secrets ([`looks_secret`]) never pass unless named |
//!
//! What this kernel can enforce is asked of the launcher once
//! ([`Launcher::support`]). A confinement with [`Enforcement::Required`]
//! (the default) that this kernel cannot enforce in full is refused before
//! the process starts, the call's error naming what is missing; with
//! [`Enforcement::BestEffort`] the rest is enforced and the call's result
//! ends with a line naming what was not. Elsewhere than Linux the API
//! compiles and every confined call is refused: never silently unconfined.
//!
//! # The launcher
//!
//! Entering a user namespace takes a process with one thread, which no
//! host is, so the confining happens in a process of its own: the host's
//! own executable, if its `main` calls [`serve_if_launcher`] first thing,
//! or the `rho-confine` program this crate ships. [`Launcher::find`] picks
//! the first.
//!
//! ```no_run
//! # #![allow(clippy::needless_doctest_main)]
//! fn main() {
//!     rho::process::confine::serve_if_launcher();
//!     // ... the host.
//! }
//! ```

mod explain;
pub(crate) mod grant;
mod hosts;
mod launcher;
mod policy;

#[cfg(target_os = "linux")]
mod launch;

/// The launcher's exit codes and the start of its own lines on stderr,
/// which the host reads on every platform.
mod launch_codes {
    /// The confinement could not be set up (as `env` and container
    /// runtimes use it).
    pub(crate) const SETUP_FAILED: i32 = 125;
    /// The command could not be started inside the confinement.
    pub(crate) const NOT_STARTED: i32 = 127;
    /// What the launcher's own lines on stderr begin with.
    pub(crate) const PREFIX: &str = "rho-confine: ";
    /// What the proxy's line for each refused connection begins with
    /// (`Network::Hosts`); the call's result gathers them.
    pub(crate) const REFUSED: &str = "rho-confine: refused host ";
    /// What init's lines about a call's bounded writes begin with (the
    /// bound was met, or some writes could not be kept).
    pub(crate) const WRITES: &str = "rho-confine: writes: ";
}

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

pub(crate) use explain::{Confined, refused_note, take_refused};
pub use grant::{GRANT_ARGUMENT, GrantGate, Grants};
pub use hosts::{AllowedHost, AllowedHostError, is_public};
pub use launcher::{LAUNCHER_ARG, LAUNCHER_PROGRAM, Launcher, serve_if_launcher, serve_launcher};
pub use policy::{Confinement, Enforcement, Limits, Network, Rest};

/// One of the kernel's mechanisms a confinement is built of, as
/// [`Support`] reports them and a best-effort result names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// User, PID, mount, network, IPC and UTS namespaces: the new root,
    /// the network, and the end of every process at the call's end.
    Namespaces,
    /// Landlock: file access by path.
    Landlock,
    /// seccomp: the system call filter.
    Seccomp,
    /// The processes limit.
    ProcessLimit,
}

impl Mechanism {
    /// What is not enforced without it, for a best-effort result.
    pub fn enforces(self) -> &'static str {
        match self {
            Mechanism::Namespaces => {
                "the hidden file system, the network rule and the end of every process at the call's end (namespaces)"
            }
            Mechanism::Landlock => "the file access rules (Landlock)",
            Mechanism::Seccomp => "the system call filter (seccomp)",
            Mechanism::ProcessLimit => "the processes limit",
        }
    }
}

/// What the running kernel lets a launcher enforce: each mechanism
/// available, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// User, PID, mount and network namespaces, a new root, a loopback.
    pub namespaces: Result<(), String>,
    /// Landlock, with the ABI version the kernel offers.
    pub landlock: Result<u8, String>,
    /// seccomp filters.
    pub seccomp: Result<(), String>,
    /// A processes limit for this host's user.
    pub process_limit: Result<(), String>,
}

impl Support {
    /// Nothing, for `reason`.
    pub(crate) fn none(reason: String) -> Self {
        Self {
            namespaces: Err(reason.clone()),
            landlock: Err(reason.clone()),
            seccomp: Err(reason.clone()),
            process_limit: Err(reason),
        }
    }

    /// Why `mechanism` is unavailable, if it is.
    pub fn missing(&self, mechanism: Mechanism) -> Option<&str> {
        match mechanism {
            Mechanism::Namespaces => self.namespaces.as_ref().err(),
            Mechanism::Landlock => self.landlock.as_ref().err(),
            Mechanism::Seccomp => self.seccomp.as_ref().err(),
            Mechanism::ProcessLimit => self.process_limit.as_ref().err(),
        }
        .map(String::as_str)
    }
}

/// More access for one retry of a denied call, approved through the gate
/// ([`GrantGate`]): the paths and the network asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Grant {
    /// Paths to read.
    pub read: Vec<PathBuf>,
    /// Paths to write.
    pub write: Vec<PathBuf>,
    /// The network, if more is asked.
    pub network: Option<Network>,
    /// Hosts to reach by name ([`Network::Hosts`]), beside those the
    /// confinement allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<AllowedHost>,
}

/// Whether an environment variable's name looks like it holds a secret:
/// it contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`,
/// `CREDENTIAL`, `AUTH`, `COOKIE`, `SESSION` or `PRIVATE` (in any case).
/// Such a variable reaches a confined process only when its name is passed
/// with [`Confinement::with_env_pass`] or set on the tool itself.
pub fn looks_secret(name: &OsStr) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
        "PRIVATE",
    ];
    let upper = name.to_string_lossy().to_ascii_uppercase();
    WORDS.iter().any(|word| upper.contains(word))
}

/// The host's environment as a confined process may get it: the
/// variables whose names look like secrets ([`looks_secret`]) dropped
/// unless `confinement` passes them.
pub fn inherited_env(confinement: &Confinement) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            !looks_secret(name)
                || confinement
                    .env_pass()
                    .iter()
                    .any(|pass| OsStr::new(pass) == name)
        })
        .collect()
}

/// A command made to run confined ([`Launcher::confine`]): the
/// launcher's command, and what of the confinement this kernel does not
/// enforce (with [`Enforcement::BestEffort`] only; otherwise nothing).
#[derive(Debug)]
pub struct ConfinedCommand {
    command: Command,
    not_enforced: Vec<Mechanism>,
}

impl ConfinedCommand {
    /// The command to spawn (stdio and process group are the caller's).
    pub fn command_mut(&mut self) -> &mut Command {
        &mut self.command
    }

    /// The command to spawn.
    pub fn into_command(self) -> Command {
        self.command
    }

    /// What this kernel does not enforce.
    pub fn not_enforced(&self) -> &[Mechanism] {
        &self.not_enforced
    }
}

/// A confinement that cannot be had: no launcher, a path that does not
/// exist, or (with [`Enforcement::Required`]) a mechanism this kernel
/// lacks. Its text is for the model and the host alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfineError(String);

impl std::fmt::Display for ConfineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfineError {}

impl Launcher {
    /// `command` as this launcher runs it under `confinement`: the same
    /// program, arguments and working directory, and as environment only
    /// the variables set on `command` itself (a confined process never
    /// inherits the host's).
    ///
    /// # Errors
    ///
    /// [`ConfineError`] when the confinement cannot be enforced as asked.
    pub fn confine(
        &self,
        command: &Command,
        confinement: &Confinement,
    ) -> Result<ConfinedCommand, ConfineError> {
        let args: Vec<OsString> = command.get_args().map(OsStr::to_os_string).collect();
        let env: Vec<(OsString, OsString)> = command
            .get_envs()
            .filter_map(|(key, value)| Some((key.to_os_string(), value?.to_os_string())))
            .collect();
        let prepared = prepare(
            confinement,
            Some(self),
            command.get_program(),
            &args,
            &env,
            command.get_current_dir(),
        )
        .map_err(ConfineError)?;
        Ok(ConfinedCommand {
            command: prepared.command,
            not_enforced: prepared.not_enforced,
        })
    }
}

/// A command ready to run confined, and what of the confinement this
/// kernel does not enforce (best effort only).
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) command: Command,
    pub(crate) not_enforced: Vec<Mechanism>,
}

/// The launcher's command that runs `program` with `args` under
/// `confinement`, with the environment `env` and working directory `cwd`.
///
/// # Errors
///
/// A text for the model: no launcher, or (with [`Enforcement::Required`])
/// what this kernel cannot enforce.
pub(crate) fn prepare(
    confinement: &Confinement,
    launcher: Option<&Launcher>,
    program: &OsStr,
    args: &[OsString],
    env: &[(OsString, OsString)],
    cwd: Option<&Path>,
) -> Result<Prepared, String> {
    let found;
    let launcher = match launcher {
        Some(launcher) => launcher,
        None => {
            found = Launcher::find()?;
            &found
        }
    };
    let support = launcher.support()?;
    let mut wanted = vec![
        Mechanism::Namespaces,
        Mechanism::Landlock,
        Mechanism::Seccomp,
    ];
    if confinement.limits().processes.is_some() {
        wanted.push(Mechanism::ProcessLimit);
    }
    let mut missing: Vec<(Mechanism, String)> = wanted
        .iter()
        .filter_map(|&m| support.missing(m).map(|why| (m, why.to_owned())))
        .collect();
    if let Some(processes) = confinement.limits().processes {
        let root = rustix::process::getuid().is_root();
        if root && processes < 300 && !missing.iter().any(|(m, _)| *m == Mechanism::ProcessLimit) {
            missing.push((
                Mechanism::ProcessLimit,
                format!("a processes limit below 300 ({processes}) cannot be enforced for a host running as root"),
            ));
        }
    }
    if !missing.is_empty() && confinement.enforcement() == Enforcement::Required {
        let reasons: Vec<String> = missing
            .iter()
            .map(|(m, why)| format!("{}: {why}", m.enforces()))
            .collect();
        return Err(format!(
            "the confinement cannot be enforced on this system, so the command was not started: {}",
            reasons.join("; ")
        ));
    }
    let not_enforced: Vec<Mechanism> = missing.into_iter().map(|(m, _)| m).collect();
    let plan = plan_text(confinement, &not_enforced, cwd)?;
    let mut command = launcher.command();
    command
        .arg(LAUNCHER_ARG)
        .arg(plan)
        .arg("--")
        .arg(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    Ok(Prepared {
        command,
        not_enforced,
    })
}

#[cfg(target_os = "linux")]
fn plan_text(
    confinement: &Confinement,
    skip: &[Mechanism],
    cwd: Option<&Path>,
) -> Result<String, String> {
    let plan = launch::Plan {
        confinement: confinement.clone(),
        skip: skip.to_vec(),
        cwd: cwd.map(Path::to_path_buf),
        ids: None,
    };
    serde_json::to_string(&plan)
        .map_err(|error| format!("the confinement cannot be written for the launcher: {error}"))
}

#[cfg(not(target_os = "linux"))]
fn plan_text(_: &Confinement, _: &[Mechanism], _: Option<&Path>) -> Result<String, String> {
    Err("confinement is only implemented on Linux: the command was not started".into())
}
