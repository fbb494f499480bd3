//! What a launcher step that failed says: which step ([`Step`]), about
//! what (a path, a limit's name, a program) and why (the errno, or a
//! library's or rho's own words), as one [`LaunchError`].
//!
//! How a failure travels. Init reports to outer over the report pipe in
//! JSON, so there the error stays typed ([`Report::Failed`](super::Report))
//! and outer picks its exit code by the step ([`LaunchError::exit_code`]).
//! Outer tells the host by that exit code (125 or 127) and one line on
//! stderr, `rho-confine: ` and the error's text. That wire stays text, as
//! it was: people read that line (`rho-sandbox` passes the launcher's
//! stderr through, and so does any host that spawns a
//! [`ConfinedCommand`](crate::confine::ConfinedCommand) itself), the host
//! only puts it in words for the model, and nothing on the host's side
//! decides anything by the step; a second, coded line would be one more
//! line for those people to read past.
//!
//! The text is the one the launcher wrote before the steps had kinds,
//! word for word: the step's lead, its context, then the errno as
//! `std::io::Error` shows it ("No such file or directory (os error 2)"),
//! which is also how `rustix`'s `Errno` shows itself.

use std::error::Error;
use std::fmt::{self, Display};

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::{NOT_STARTED, SETUP_FAILED};

/// The launcher's steps that can fail, in the order a run takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Step {
    // Outer, in the host's namespaces.
    /// Closing the descriptors the host left open.
    CloseInherited,
    /// Reading the host's plan.
    Plan,
    /// The proxy's socket pair to init.
    ProxySocketPair,
    /// Forking the proxy.
    StartProxy,
    /// `unshare`: making the user namespace (and the others with it).
    UserNamespace,
    /// Mapping the host's user and group to root inside; the context is
    /// the file written.
    IdMap,
    /// The report pipe from init.
    ReportPipe,
    /// Forking init.
    StartInit,
    /// Waiting for init.
    WaitInit,
    /// Reading init's report.
    ReadReport,
    /// Init ended without a report; the context is how it ended.
    NoReport,
    /// Init answered with a report of the wrong kind.
    WrongReport,

    // Init, PID 1 of the new namespaces.
    /// Tying init's life to outer's (`PR_SET_PDEATHSIG`).
    TieToLauncher,
    /// A named path that is not absolute; the context is the path.
    RelativePath,
    /// A named path that cannot be resolved; the context is the path.
    Path,
    /// Building the new root: its directories, bind mounts, read-only
    /// remounts, `pivot_root` and detaching the old root; the context
    /// says which.
    Mount,
    /// A tmpfs of the new root (the temporary root, the new root, `/dev`,
    /// the scratch `/tmp` and `/run`); the context says which.
    Tmpfs,
    /// The new PID namespace's `/proc`.
    Proc,
    /// The store and overlays of bounded writes; the context says which.
    BoundedWrites,
    /// Making init not dumpable.
    Undumpable,
    /// Bringing the network namespace's loopback up.
    Loopback,
    /// Forbidding namespaces inside the confinement.
    NestedNamespaces,
    /// The proxy's listener, bound inside and handed out.
    ProxyListener,
    /// A resource limit (`setrlimit`); the context is its name.
    Rlimit,
    /// The PID namespace's own `pid_max`, the processes limit of a host
    /// running as root.
    PidMax,
    /// The processes limit of a host running as root, without the
    /// namespaces its `pid_max` needs.
    PidMaxWithoutNamespaces,
    /// Dropping capabilities; the context says which set.
    Capabilities,
    /// Landlock; the context is the path of a rule, if one failed.
    Landlock,
    /// The seccomp filter.
    Seccomp,
    /// Entering the working directory; the context is the directory.
    WorkingDirectory,
    /// Entering the new root.
    EnterRoot,
    /// No command was given.
    NoCommand,
    /// Starting the command (`exec`); the context is the program.
    Exec,
    /// Waiting for the command.
    WaitCommand,
}

/// A launcher step that failed: the step, what it was about, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LaunchError {
    step: Step,
    /// What the step was about: a path, a limit's name, a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<String>,
    /// The system call's errno, when one failed.
    #[serde(default, with = "raw_errno", skip_serializing_if = "Option::is_none")]
    errno: Option<Errno>,
    /// Why, in words, when the errno alone does not say it: a library's
    /// error (Landlock's, seccomp's, the plan's JSON) or rho's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl LaunchError {
    /// `step` failed (say about what with [`at`](Self::at), why with
    /// [`by`](Self::by) or [`because`](Self::because)).
    pub(crate) fn new(step: Step) -> Self {
        Self {
            step,
            context: None,
            errno: None,
            reason: None,
        }
    }

    /// About `context`: a path, a limit's name, a program.
    pub(crate) fn at(mut self, context: impl Display) -> Self {
        self.context = Some(context.to_string());
        self
    }

    /// For `reason`, rho's own words.
    pub(crate) fn because(mut self, reason: impl Display) -> Self {
        self.reason = Some(reason.to_string());
        self
    }

    /// By `error`: its errno is kept (its own, or the first in its
    /// sources), and its text too unless the errno says all of it.
    pub(crate) fn by(mut self, error: &(dyn Error + 'static)) -> Self {
        let own = errno_of(error);
        self.errno = own;
        let mut inner = error.source();
        while let (None, Some(source)) = (self.errno, inner) {
            self.errno = errno_of(source);
            inner = source.source();
        }
        // An errno shows itself as `std::io::Error` does: the same text.
        if own.is_none() {
            self.reason = Some(error.to_string());
        }
        self
    }

    /// The step that failed.
    pub(crate) fn step(&self) -> Step {
        self.step
    }

    /// What the step was about, if the step names something.
    pub(crate) fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// The errno of the system call that failed, if one did.
    pub(crate) fn errno(&self) -> Option<Errno> {
        self.errno
    }

    /// The launcher's exit code for this failure: the command was not
    /// started (127) when starting it failed, else the confinement could
    /// not be set up (125).
    pub(crate) fn exit_code(&self) -> i32 {
        match self.step() {
            Step::NoCommand | Step::Exec => NOT_STARTED,
            _ => SETUP_FAILED,
        }
    }

    /// The step's own words, with its context where they take it.
    fn lead(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.context().unwrap_or_default();
        // Words, then `: context` if there is one.
        let then = |f: &mut fmt::Formatter<'_>, words: &str| match self.context() {
            Some(context) => write!(f, "{words}: {context}"),
            None => f.write_str(words),
        };
        match self.step {
            Step::CloseInherited => f.write_str("could not close the descriptors the host left open"),
            Step::Plan => f.write_str("the plan is not valid"),
            Step::ProxySocketPair => f.write_str("could not make the proxy's socket pair"),
            Step::StartProxy => f.write_str("could not start the proxy"),
            Step::UserNamespace => f.write_str("user namespaces are not available: unshare"),
            Step::IdMap => write!(f, "user namespaces are not usable: writing {at}"),
            Step::ReportPipe => f.write_str("could not make a pipe"),
            Step::StartInit => f.write_str("could not start the confinement's init"),
            Step::WaitInit => f.write_str("could not wait for the confinement's init"),
            Step::ReadReport => f.write_str("could not read the confinement's report"),
            Step::NoReport => write!(
                f,
                "the confinement's init ended ({at}) without saying how the command ended"
            ),
            Step::WrongReport => f.write_str("init answered a probe to a run"),
            Step::TieToLauncher => f.write_str("could not tie the confinement to its launcher"),
            Step::RelativePath => write!(f, "the path {at} is not absolute"),
            Step::Path => write!(f, "the path {at} cannot be used"),
            Step::Mount | Step::Tmpfs | Step::Proc => {
                then(f, "could not build the confinement's file system")
            }
            Step::BoundedWrites => then(f, "could not set up the bound on what the call may write"),
            Step::Undumpable => f.write_str("could not make init undumpable"),
            Step::Loopback => f.write_str("could not bring the confinement's loopback up"),
            Step::NestedNamespaces => f.write_str("could not forbid nested namespaces"),
            Step::ProxyListener => f.write_str("could not start the proxy's listener"),
            Step::Rlimit => write!(f, "could not set the {at} limit"),
            Step::PidMax => f.write_str(
                "could not set the processes limit for a host running as root (a PID namespace's own pid_max needs Linux 6.14 or later)",
            ),
            Step::PidMaxWithoutNamespaces => f.write_str(
                "the processes limit of a host running as root needs the confinement's namespaces",
            ),
            Step::Capabilities => write!(f, "could not drop capabilities ({at})"),
            Step::Landlock => then(f, "could not restrict file access (Landlock)"),
            Step::Seccomp => f.write_str("could not filter system calls (seccomp)"),
            Step::WorkingDirectory => write!(
                f,
                "the working directory {at} is not reachable inside the confinement"
            ),
            Step::EnterRoot => f.write_str("could not enter the new root"),
            Step::NoCommand => f.write_str("no command was given"),
            Step::Exec => write!(f, "could not start `{at}` inside the confinement"),
            Step::WaitCommand => f.write_str("could not wait for the command"),
        }
    }
}

impl Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.lead(f)?;
        match (&self.reason, self.errno()) {
            (Some(reason), _) => write!(f, ": {reason}"),
            (None, Some(errno)) => write!(f, ": {errno}"),
            (None, None) => Ok(()),
        }
    }
}

impl Error for LaunchError {}

/// For `map_err`: `step` failed by the error it is given.
pub(crate) fn failed<E: Error + 'static>(step: Step) -> impl FnOnce(E) -> LaunchError {
    move |error| LaunchError::new(step).by(&error)
}

/// For `map_err`: `step` failed about `context` by the error it is given.
pub(crate) fn failed_at<E: Error + 'static>(
    step: Step,
    context: impl Display,
) -> impl FnOnce(E) -> LaunchError {
    move |error| LaunchError::new(step).at(context).by(&error)
}

/// The errno `error` is, if it is one (`std::io::Error` of the OS, or
/// `rustix`'s).
fn errno_of(error: &(dyn Error + 'static)) -> Option<Errno> {
    if let Some(errno) = error.downcast_ref::<Errno>() {
        return Some(*errno);
    }
    error
        .downcast_ref::<std::io::Error>()
        .and_then(Errno::from_io_error)
}

/// An errno on the report pipe: its number.
mod raw_errno {
    use rustix::io::Errno;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        errno: &Option<Errno>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        errno.map(Errno::raw_os_error).serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Errno>, D::Error> {
        // rustix asserts an errno's range: a number outside it (a report
        // corrupted on its way) is refused here, not a panic of outer.
        match Option::<i32>::deserialize(deserializer)? {
            None => Ok(None),
            Some(raw @ 1..=4095) => Ok(Some(Errno::from_raw_os_error(raw))),
            Some(raw) => Err(serde::de::Error::custom(format!("{raw} is not an errno"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An errno shows as `std::io::Error` shows it, whether it came as
    /// `rustix`'s `Errno` or as `std::io::Error`: the launcher's texts
    /// read as they did when they were made with `format!`.
    #[test]
    fn the_text_is_the_steps_words_its_context_and_the_errno() {
        let io = std::io::Error::from_raw_os_error(libc::ENOENT);
        let error = failed_at(Step::Mount, "mounting /proc")(Errno::NOENT);
        assert_eq!(
            error.to_string(),
            format!("could not build the confinement's file system: mounting /proc: {io}")
        );
        let error = failed(Step::UserNamespace)(std::io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(error.step(), Step::UserNamespace);
        assert_eq!(error.errno(), Some(Errno::PERM));
        assert_eq!(
            error.to_string(),
            "user namespaces are not available: unshare: Operation not permitted (os error 1)"
        );
        // Words of rho's own, no errno.
        let error = failed(Step::StartInit)(std::io::Error::other("two threads"));
        assert_eq!((error.errno(), error.context()), (None, None));
        assert_eq!(
            error.to_string(),
            "could not start the confinement's init: two threads"
        );
        assert_eq!(
            LaunchError::new(Step::PidMaxWithoutNamespaces).to_string(),
            "the processes limit of a host running as root needs the confinement's namespaces"
        );
    }

    /// A library's error keeps its text, and the errno found among its
    /// sources.
    #[test]
    fn a_librarys_error_keeps_its_text_and_the_errno_beneath() {
        #[derive(Debug)]
        struct Wrapped(std::io::Error);
        impl Display for Wrapped {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the ruleset could not be created")
            }
        }
        impl Error for Wrapped {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        let error =
            failed(Step::Landlock)(Wrapped(std::io::Error::from_raw_os_error(libc::ENOSYS)));
        assert_eq!(error.errno(), Some(Errno::NOSYS));
        assert_eq!(
            error.to_string(),
            "could not restrict file access (Landlock): the ruleset could not be created"
        );
    }

    /// Across the report pipe the step, context and errno survive, and
    /// with them the text and the exit code.
    #[test]
    fn the_report_pipe_keeps_the_kind() {
        let sent = failed_at(Step::Exec, "nope")(Errno::NOENT);
        let text = serde_json::to_string(&sent).expect("encoded");
        let got: LaunchError = serde_json::from_str(&text).expect("decoded");
        assert_eq!(got, sent);
        assert_eq!(got.exit_code(), NOT_STARTED);
        assert_eq!(
            got.to_string(),
            "could not start `nope` inside the confinement: No such file or directory (os error 2)"
        );
        assert_eq!(
            failed(Step::Seccomp)(Errno::INVAL).exit_code(),
            SETUP_FAILED
        );
    }

    /// A report whose errno is no errno (corrupted on its way) fails to
    /// decode; it does not panic the reader, as rustix's range assertion
    /// would.
    #[test]
    fn an_errno_out_of_range_is_refused_not_a_panic() {
        let mut report =
            serde_json::to_value(failed(Step::Seccomp)(Errno::INVAL)).expect("encoded");
        for raw in [0, -1, 4096, i32::MAX] {
            report["errno"] = raw.into();
            let decoded = serde_json::from_value::<LaunchError>(report.clone());
            assert!(decoded.is_err(), "{raw}: {decoded:?}");
        }
        report["errno"] = 22.into();
        let decoded: LaunchError = serde_json::from_value(report).expect("in range");
        assert_eq!(decoded.errno(), Some(Errno::INVAL));
    }
}
