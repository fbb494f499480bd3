//! Outer: the launcher in the host's namespaces. Unshares, maps, starts
//! init, and ends the way the command ended.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::process::Command;

use rustix::pipe::PipeFlags;
use rustix::process::{Resource, Rlimit, Signal, WaitOptions};
use rustix::thread::UnshareFlags;

use super::proxy::{self, ProxyEnd};
use super::{LaunchError, PREFIX, Plan, Report, Step, failed, failed_at, init, parse_plan, sys};
use crate::confine::policy::Network;
use crate::confine::{Mechanism, Support};

/// Ends the launcher with `error` on stderr, as a line the host reads
/// (see [`error`](super::error) for why it is text), and its exit code.
fn fail(error: &LaunchError) -> ! {
    let _ = writeln!(std::io::stderr(), "{}", line(error));
    std::process::exit(error.exit_code())
}

/// The line on stderr that tells the host of `error`.
pub(super) fn line(error: &LaunchError) -> String {
    format!("{PREFIX}{error}")
}

/// The namespaces a plan asks for.
fn namespaces(plan: &Plan) -> UnshareFlags {
    let mut flags = UnshareFlags::NEWUSER
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWCGROUP;
    if plan.confinement.network() != Network::Full {
        flags |= UnshareFlags::NEWNET;
    }
    flags
}

/// Enters new namespaces and maps the caller's ids to root inside.
fn enter(flags: UnshareFlags, uid: u32, gid: u32) -> Result<(), LaunchError> {
    sys::unshare(flags).map_err(failed(Step::UserNamespace))?;
    let write =
        |path: &str, text: String| std::fs::write(path, text).map_err(failed_at(Step::IdMap, path));
    // `deny` first: an unprivileged process may write its gid map only
    // once it can no longer drop supplementary groups (user_namespaces(7)).
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    Ok(())
}

/// Outer's run: see the [module docs](super).
pub(super) fn run(plan: &str, command: Vec<OsString>) -> ! {
    // First, before the launcher opens anything: nothing of the host's
    // but stdin, stdout and stderr reaches the command.
    if let Err(error) = sys::close_inherited() {
        fail(&failed(Step::CloseInherited)(error));
    }
    let mut plan = match parse_plan(plan) {
        Ok(plan) => plan,
        Err(error) => fail(&error),
    };
    // No core files of the command or of the launcher replaying its end.
    let _ = rustix::process::setrlimit(
        Resource::Core,
        Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    );
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    plan.ids = Some((uid, gid));
    // Before the unshare: the proxy stays in the host's network.
    let proxy = match proxy::start(&plan) {
        Ok(proxy) => proxy,
        Err(error) => fail(&error),
    };
    if plan.uses(Mechanism::Namespaces) {
        if let Err(error) = enter(namespaces(&plan), uid, gid) {
            fail(&error);
        }
    }
    match start_init(&plan, &command, proxy) {
        Ok(report) => replay(report),
        Err(error) => fail(&error),
    }
}

/// Forks init with `plan`, `command` and the end of the socket pair to
/// the proxy (if the plan has one), waits for it, and returns its report.
fn start_init(
    plan: &Plan,
    command: &[OsString],
    proxy: Option<ProxyEnd>,
) -> Result<Report, LaunchError> {
    // The report pipe, both ends close-on-exec: init writes, outer reads.
    let (read, write) =
        rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(failed(Step::ReportPipe))?;
    let init = match sys::fork().map_err(failed(Step::StartInit))? {
        sys::Forked::Child => {
            drop(read);
            init::run(File::from(write), plan, command, proxy)
        }
        sys::Forked::Parent(init) => {
            drop(proxy);
            init
        }
    };
    drop(write);
    let mut report = String::new();
    let read_result = File::from(read).read_to_string(&mut report);
    let status = loop {
        match rustix::process::waitpid(Some(init), WaitOptions::empty()) {
            Ok(Some((_, status))) => break status,
            Ok(None) | Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(failed(Step::WaitInit)(error)),
        }
    };
    read_result.map_err(failed(Step::ReadReport))?;
    serde_json::from_str(&report)
        .map_err(|_| LaunchError::new(Step::NoReport).at(format_args!("{status:?}")))
}

/// Ends this process the way the command ended.
fn replay(report: Report) -> ! {
    match report {
        Report::Exited(code) => std::process::exit(code),
        Report::Signaled(number) => {
            if let Some(signal) = Signal::from_named_raw(number) {
                let me = rustix::process::getpid();
                // Twice: the first may meet a handler Rust's runtime
                // installed (SIGSEGV's stack-overflow check), which
                // restores the default before returning.
                let _ = rustix::process::kill_process(me, signal);
                let _ = rustix::process::kill_process(me, signal);
            }
            // A signal this process ignores (SIGPIPE, as every Rust
            // program does): the shell's convention.
            std::process::exit(128 + number)
        }
        Report::Failed(error) => fail(&error),
        Report::Probe(_) => fail(&LaunchError::new(Step::WrongReport)),
    }
}

/// What this kernel lets the launcher enforce, found by trying each
/// mechanism in throwaway processes (the probe's own).
pub(super) fn probe() -> ! {
    let support = probe_here();
    let text = serde_json::to_string(&support).unwrap_or_default();
    let _ = writeln!(std::io::stdout(), "{text}");
    std::process::exit(0)
}

fn probe_here() -> Support {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let flags = UnshareFlags::NEWUSER
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWNET;
    if let Err(error) = enter(flags, uid, gid) {
        // Landlock and seccomp need no namespace: try them here.
        let mut support = Support::none(error.to_string());
        init::probe_filters(&mut support);
        return support;
    }
    let plan = Plan {
        confinement: crate::confine::Confinement::new(),
        skip: Vec::new(),
        cwd: None,
        ids: Some((uid, gid)),
    };
    match start_init(&plan, &[OsString::from(init::PROBE_COMMAND)], None) {
        Ok(Report::Probe(support)) => support,
        Ok(Report::Failed(error)) => Support::none(error.to_string()),
        Ok(other) => Support::none(format!("the probe's init answered {other:?}")),
        Err(error) => Support::none(error.to_string()),
    }
}

/// What this kernel lets a confinement enforce, from the launcher at
/// `program` (run once with the probe argument).
pub(crate) fn probe_support(program: &std::path::Path) -> Result<Support, String> {
    let output = Command::new(program)
        .arg(super::PROBE_ARG)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| {
            format!(
                "could not run the launcher `{}`: {error}",
                program.display()
            )
        })?;
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).map_err(|_| {
        format!(
            "the launcher `{}` did not answer its probe ({}): {}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use rustix::io::Errno;

    use super::*;
    use crate::confine::{Confined, Confinement};

    /// The host reads a launcher's failure from its exit code and its
    /// line on stderr: the step picks the code, and the step's text
    /// reaches the model whole, under the refusal that code means.
    #[test]
    fn the_host_reads_a_failure_by_its_steps_exit_code_and_line() {
        let confined = Confined {
            confinement: Confinement::new(),
            not_enforced: Vec::new(),
        };
        let read = |error: &LaunchError| {
            let stderr = format!("noise\n{}\n", line(error));
            confined.launcher_failure(Some(error.exit_code()), stderr.as_bytes())
        };
        let unshare = failed(Step::UserNamespace)(Errno::PERM);
        assert_eq!(
            read(&unshare).as_deref(),
            Some(
                "was not run: its confinement could not be set up: user namespaces are not available: unshare: Operation not permitted (os error 1)"
            )
        );
        let exec = failed_at(Step::Exec, "nope")(Errno::NOENT);
        assert_eq!(
            read(&exec).as_deref(),
            Some(
                "could not start its process: could not start `nope` inside the confinement: No such file or directory (os error 2)"
            )
        );
    }
}
