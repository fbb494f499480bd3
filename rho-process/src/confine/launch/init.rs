//! Init: PID 1 of the confinement. Sets everything up, runs the command,
//! reaps, reports.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::process::Command;

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Signal, WaitOptions};

use super::proxy::{self, ProxyEnd};
use super::writes::{self, Bounded};
use super::{
    LaunchError, Plan, Report, Step, WRITES, failed, failed_at, filter, limits, net, root,
};
use crate::confine::policy::Network;
use crate::confine::{Mechanism, Support};

/// The command with which a probe's init probes instead of running one.
pub(super) const PROBE_COMMAND: &str = "--rho-confine-probe-init";

/// Init's run, in the child of outer's fork: see the [module docs](super).
/// `report` is the write end of outer's report pipe (close-on-exec: only
/// init reports).
pub(super) fn run(report: File, plan: &Plan, command: &[OsString], proxy: Option<ProxyEnd>) -> ! {
    let send = |message: Report| -> ! {
        let text = serde_json::to_string(&message).unwrap_or_default();
        let _ = (&report).write_all(text.as_bytes());
        // Exiting ends the PID namespace: the kernel kills whatever the
        // command left behind.
        std::process::exit(0)
    };
    if plan.uses(Mechanism::Namespaces) {
        // Outer's death (the host's kill at the deadline) is init's, and
        // so the namespace's. Outer has one thread, the one that started
        // init, so the "parent" of PR_SET_PDEATHSIG is outer itself.
        if let Err(error) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
            send(Report::Failed(failed(Step::TieToLauncher)(error)));
        }
        // Outer may have died before that: then nobody reads the pipe.
        if outer_is_gone(&report) {
            std::process::exit(0);
        }
    }
    if command.first().is_some_and(|c| c == PROBE_COMMAND) {
        send(Report::Probe(probe(plan)));
    }
    let Set {
        proxy_port,
        bounded,
    } = match setup(plan, proxy) {
        Ok(set) => set,
        Err(error) => send(Report::Failed(error)),
    };
    let Some((program, args)) = command.split_first() else {
        send(Report::Failed(LaunchError::new(Step::NoCommand)));
    };
    let mut command = Command::new(program);
    command.args(args);
    if let Some(port) = proxy_port {
        command.envs(proxy::environment(port));
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(error) => send(Report::Failed(failed_at(
            Step::Exec,
            program.to_string_lossy(),
        )(error))),
    };
    let pid = rustix::process::Pid::from_child(&child);
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((reaped, status))) if reaped == pid => {
                if !bounded.is_empty() {
                    keep_writes(plan, &bounded);
                }
                if let Some(code) = status.exit_status() {
                    send(Report::Exited(code));
                }
                if let Some(signal) = status.terminating_signal() {
                    send(Report::Signaled(signal));
                }
            }
            // An orphan that came to PID 1, reaped.
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => send(Report::Failed(failed(Step::WaitCommand)(error))),
        }
    }
}

/// Whether the read end of the report pipe is closed.
fn outer_is_gone(report: &File) -> bool {
    let mut fds = [PollFd::new(report, PollFlags::OUT)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match rustix::event::poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        Err(_) => false,
    }
}

/// What [`setup`] leaves for the rest of init's run.
struct Set {
    /// The port of the proxy's listener, for the command's environment.
    proxy_port: Option<u16>,
    /// The writable paths whose writes are bounded, to write back.
    bounded: Vec<Bounded>,
}

/// The command ended: stops what it left running (nothing may write while
/// its changes are written back), then writes them back, and tells on
/// stderr what the command should know: that it met its bound, or what
/// could not be kept.
fn keep_writes(plan: &Plan, bounded: &[Bounded]) {
    // As PID 1: every other process of the namespace.
    let _ = super::sys::kill_all_others();
    while let Ok(Some(_)) | Err(rustix::io::Errno::INTR) =
        rustix::process::wait(WaitOptions::empty())
    {}
    let done = writes::write_back(bounded);
    let mut stderr = std::io::stderr();
    if done.full {
        let limits = plan.confinement.limits();
        let mut bounds = Vec::new();
        if let Some(bytes) = limits.written {
            bounds.push(format!("{bytes} bytes"));
        }
        if let Some(files) = limits.files {
            bounds.push(format!("{files} files"));
        }
        let _ = writeln!(
            stderr,
            "{WRITES}the command reached the bound on what a call may write ({}): writes past it failed (\"No space left on device\"); what it wrote before them was kept",
            bounds.join(", ")
        );
    }
    if !done.failed.is_empty() {
        let _ = writeln!(
            stderr,
            "{WRITES}some of the command's writes could not be kept: {}",
            done.failed.join("; ")
        );
    }
}

/// Everything before the command: new root, network (and the proxy's
/// listener: its port is returned), limits, capabilities, Landlock,
/// seccomp, working directory. Any failure is the call's refusal: nothing
/// here is skipped silently.
fn setup(plan: &Plan, proxy: Option<ProxyEnd>) -> Result<Set, LaunchError> {
    let namespaces = plan.uses(Mechanism::Namespaces);
    // The paths, resolved once in the host's view: the new root is built
    // of them, and Landlock's rules name the same paths inside it.
    let entries = root::entries(&plan.confinement)?;
    let mut bounded = Vec::new();
    if namespaces {
        bounded = root::build(plan, &entries)?;
        // Not dumpable: the command (which has no capability) cannot open
        // init's descriptors through `/proc/1/fd`: the report pipe, and
        // the host's directories of bounded writes.
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
            .map_err(failed(Step::Undumpable))?;
        if matches!(
            plan.confinement.network(),
            Network::Loopback | Network::Hosts
        ) {
            net::loopback_up()?;
        }
        // No namespace inside this one (an escape route, and a way around
        // the limits): the count of user namespaces this one may hold.
        std::fs::write("/proc/sys/user/max_user_namespaces", "0")
            .map_err(failed(Step::NestedNamespaces))?;
        let _ = rustix::system::sethostname(b"rho");
    }
    let proxy_port = proxy.map(proxy::offer).transpose()?;
    limits::apply(plan)?;
    if namespaces {
        drop_capabilities()?;
    }
    if plan.uses(Mechanism::Landlock) {
        let directories: Vec<&OwnedFd> = bounded.iter().flat_map(Bounded::directories).collect();
        filter::landlock(plan, &entries, &directories)?;
    }
    if plan.uses(Mechanism::Seccomp) {
        filter::seccomp()?;
    }
    let cwd = plan.cwd.clone().or_else(|| {
        plan.confinement
            .workspace()
            .map(std::path::Path::to_path_buf)
    });
    if let Some(cwd) = cwd {
        std::env::set_current_dir(&cwd)
            .map_err(failed_at(Step::WorkingDirectory, cwd.display()))?;
    } else if namespaces {
        std::env::set_current_dir("/").map_err(failed(Step::EnterRoot))?;
    }
    Ok(Set {
        proxy_port,
        bounded,
    })
}

/// Drops every capability init holds in its user namespace, for good: the
/// command runs as root of the namespace (the only id mapped) with none,
/// and cannot gain any by `exec`.
fn drop_capabilities() -> Result<(), LaunchError> {
    use rustix::thread::{CapabilitiesSecureBits as Bits, CapabilitySet, CapabilitySets};
    let failed = |what: &'static str| failed_at(Step::Capabilities, what);
    for bit in 0..64 {
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(
            1 << bit,
        )) {
            // Past the last capability this kernel knows.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(error) => return Err(failed("bounding set")(error)),
        }
    }
    let locked = Bits::NO_ROOT
        | Bits::NO_ROOT_LOCKED
        | Bits::NO_SETUID_FIXUP
        | Bits::NO_SETUID_FIXUP_LOCKED
        | Bits::KEEP_CAPS_LOCKED
        | Bits::NO_CAP_AMBIENT_RAISE
        | Bits::NO_CAP_AMBIENT_RAISE_LOCKED;
    rustix::thread::set_capabilities_secure_bits(locked).map_err(failed("secure bits"))?;
    rustix::thread::clear_ambient_capability_set().map_err(failed("ambient set"))?;
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(failed("sets"))
}

/// A probe's init: tries each mechanism that needs the namespaces, then
/// Landlock and seccomp.
fn probe(plan: &Plan) -> Support {
    let mut support = Support::none(String::new());
    // What failed is a reason in words: `Support` is the host's, and text.
    support.namespaces = root::entries(&plan.confinement)
        .and_then(|entries| root::build(plan, &entries))
        .and_then(|_| net::loopback_up())
        .map_err(|error| error.to_string());
    support.process_limit = limits::probe_process_limit(plan);
    probe_filters(&mut support);
    support
}

/// Tries Landlock and seccomp on this (throwaway) process.
pub(super) fn probe_filters(support: &mut Support) {
    support.landlock = filter::probe_landlock();
    support.seccomp = filter::seccomp().map_err(|error| error.to_string());
}
