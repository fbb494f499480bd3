//! [`Launcher`]: which program confines, and how a host embeds it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use super::Support;
#[cfg(target_os = "linux")]
use super::launch::PROBE_ARG;

/// The argument with which a host's own executable is started as the
/// launcher ([`Launcher::embedded`]); [`serve_if_launcher`] knows it.
pub const LAUNCHER_ARG: &str = "--rho-confine";

/// The name of the launcher program this crate ships.
pub const LAUNCHER_PROGRAM: &str = "rho-confine";

/// Set once [`serve_if_launcher`] returned in this process.
static EMBEDS_THE_LAUNCHER: AtomicBool = AtomicBool::new(false);

/// The launcher embedded in a host's own executable: call it first thing
/// in `main`.
///
/// When this process was started as a launcher (its first argument is
/// [`LAUNCHER_ARG`] or one of the launcher's own stages), it confines
/// itself, runs the command and exits with the command's end: it never
/// returns. Otherwise it returns at once, having noted that this
/// executable embeds the launcher ([`Launcher::find`] then picks it).
///
/// First thing, because nothing of the host may run in a launcher: no
/// thread may be started before it (a process with two threads cannot
/// enter a new user namespace), and the command's stdin and stdout are
/// the launcher's.
pub fn serve_if_launcher() {
    if let Some(stage) = stage_from_args() {
        serve(stage);
    }
    EMBEDS_THE_LAUNCHER.store(true, Ordering::Release);
}

/// Serves as the launcher: the `main` of `rho-confine`. Exits the
/// process.
pub fn serve_launcher() -> ! {
    match stage_from_args() {
        Some(stage) => serve(stage),
        None => {
            eprintln!(
                "{LAUNCHER_PROGRAM}: rho's confinement launcher; rho starts it ({LAUNCHER_ARG} PLAN -- COMMAND...), people do not"
            );
            std::process::exit(2)
        }
    }
}

#[cfg(target_os = "linux")]
fn serve(stage: super::launch::Stage) -> ! {
    super::launch::run(stage)
}

#[cfg(not(target_os = "linux"))]
fn serve(_stage: Stage) -> ! {
    eprintln!(
        "{}confinement is only implemented on Linux",
        "rho-confine: "
    );
    std::process::exit(125)
}

#[cfg(not(target_os = "linux"))]
enum Stage {}

#[cfg(target_os = "linux")]
use super::launch::Stage;

/// The launcher's stage named by this process's command line, if any.
/// The host's own command line is the host's: only one that starts with
/// a launcher marker is read here.
fn stage_from_args() -> Option<Stage> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let marker = args.get(1)?.to_str()?;
    if !marker.starts_with(LAUNCHER_ARG) {
        return None;
    }
    parse(&args[1..])
}

#[cfg(target_os = "linux")]
fn parse(args: &[OsString]) -> Option<Stage> {
    let text = |arg: Option<&OsString>| arg.and_then(|arg| arg.to_str()).map(str::to_owned);
    let command = |from: usize| -> Option<Vec<OsString>> {
        (args.get(from)? == "--").then(|| args[from + 1..].to_vec())
    };
    match args.first()?.to_str()? {
        LAUNCHER_ARG => Some(Stage::Outer {
            plan: text(args.get(1))?,
            command: command(2)?,
        }),
        PROBE_ARG if args.len() == 1 => Some(Stage::Probe),
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn parse(_args: &[OsString]) -> Option<Stage> {
    None
}

/// The program that confines a process: it enters new namespaces,
/// builds the confinement, restricts itself, then runs the command. The
/// host's own executable ([`embedded`](Self::embedded), after
/// [`serve_if_launcher`]) or the installed `rho-confine`
/// ([`installed`](Self::installed)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    program: PathBuf,
}

/// What each launcher program found the kernel could do, probed once.
static PROBED: Mutex<Vec<(PathBuf, Result<Support, String>)>> = Mutex::new(Vec::new());

impl Launcher {
    /// The launcher at `program` (a build of `rho-confine`, or a program
    /// whose `main` calls [`serve_if_launcher`] first).
    pub fn new(program: impl AsRef<Path>) -> Self {
        Self {
            program: program.as_ref().to_path_buf(),
        }
    }

    /// The running executable, which must have called
    /// [`serve_if_launcher`].
    ///
    /// # Errors
    ///
    /// When [`serve_if_launcher`] was not called in this process, or the
    /// executable's path cannot be read.
    pub fn embedded() -> Result<Self, String> {
        if !EMBEDS_THE_LAUNCHER.load(Ordering::Acquire) {
            return Err(format!(
                "no confinement launcher: this program does not embed it (`rho_process::confine::serve_if_launcher()` was not called first thing in `main`); {HOW}"
            ));
        }
        let exe = std::env::current_exe().map_err(|error| {
            format!("no confinement launcher: the path of this program cannot be read ({error})")
        })?;
        Ok(Self::new(exe))
    }

    /// The installed [`LAUNCHER_PROGRAM`]: in the directory of the running
    /// executable, else on `PATH`.
    ///
    /// # Errors
    ///
    /// A text naming where it looked.
    pub fn installed() -> Result<Self, String> {
        crate::installed::find(LAUNCHER_PROGRAM)
            .map(Self::new)
            .map_err(|looked| {
                let looked: Vec<String> = looked.iter().map(|d| d.display().to_string()).collect();
                format!("no confinement launcher: `{LAUNCHER_PROGRAM}` was not found (looked in {}); {HOW}", looked.join(", "))
            })
    }

    /// The embedded launcher if [`serve_if_launcher`] was called, else the
    /// installed one.
    ///
    /// # Errors
    ///
    /// When there is neither.
    pub fn find() -> Result<Self, String> {
        if EMBEDS_THE_LAUNCHER.load(Ordering::Acquire) {
            return Self::embedded();
        }
        Self::installed()
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// What this kernel lets the launcher enforce: asked of the launcher
    /// once per program and process, then remembered.
    ///
    /// # Errors
    ///
    /// When the launcher cannot be run or does not answer.
    pub fn support(&self) -> Result<Support, String> {
        let mut probed = PROBED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, known)) = probed.iter().find(|(program, _)| program == &self.program) {
            return known.clone();
        }
        let found = probe(&self.program);
        probed.push((self.program.clone(), found.clone()));
        found
    }

    /// The launcher's command.
    pub(crate) fn command(&self) -> std::process::Command {
        std::process::Command::new(&self.program)
    }
}

#[cfg(target_os = "linux")]
fn probe(program: &Path) -> Result<Support, String> {
    super::launch::probe_support(program)
}

#[cfg(not(target_os = "linux"))]
fn probe(_program: &Path) -> Result<Support, String> {
    Err("confinement is only implemented on Linux".into())
}

/// How to have a launcher, for the texts.
const HOW: &str = "call `rho::process::confine::serve_if_launcher()` first thing in `main`, or install `rho-confine` of the same version (`cargo install rho-process`) next to this program or on `PATH`";
