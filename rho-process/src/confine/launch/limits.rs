//! Resource limits, set by init and inherited by the command: `setrlimit`
//! with the hard limit at the soft one (raising a hard limit needs a
//! capability in the host's user namespace, which nothing here has).

use rustix::process::{Resource, Rlimit};

use super::{LaunchError, Plan, Step, failed, failed_at};
use crate::confine::Mechanism;

/// The smallest `pid_max` the kernel accepts (its reserved PIDs, plus one).
pub(crate) const MIN_PID_MAX: u64 = 301;

/// Sets the plan's limits on this process.
pub(super) fn apply(plan: &Plan) -> Result<(), LaunchError> {
    let limits = plan.confinement.limits();
    let set = |resource: Resource, name: &str, soft: u64, hard: u64| {
        rustix::process::setrlimit(
            resource,
            Rlimit {
                current: Some(soft),
                maximum: Some(hard),
            },
        )
        .map_err(failed_at(Step::Rlimit, name))
    };
    if let Some(bytes) = limits.memory {
        set(Resource::Data, "memory", bytes, bytes)?;
    }
    if let Some(cpu) = limits.cpu {
        // Whole seconds, at least one; SIGXCPU at the soft limit, SIGKILL
        // a second later at the hard one.
        let seconds = cpu.as_secs_f64().ceil().max(1.0) as u64;
        set(Resource::Cpu, "CPU time", seconds, seconds + 1)?;
    }
    if let Some(files) = limits.open_files {
        set(Resource::Nofile, "open files", files, files)?;
    }
    if let Some(bytes) = limits.file_size {
        set(Resource::Fsize, "file size", bytes, bytes)?;
    }
    set(Resource::Core, "core file", 0, 0)?;
    if let Some(processes) = limits.processes {
        if plan.uses(Mechanism::ProcessLimit) {
            processes_limit(plan, processes)?;
        }
    }
    Ok(())
}

/// Whether the command runs as the host's root (the kernel does not
/// enforce `RLIMIT_NPROC` for it).
fn host_root(plan: &Plan) -> bool {
    plan.ids.is_none_or(|(uid, _)| uid == 0)
}

/// At most `processes` processes in the confinement. For an ordinary host
/// user, `RLIMIT_NPROC`, which counts per user and user namespace. The
/// kernel never applies it to the host's root, so there the limit is the
/// PID namespace's own `pid_max` (Linux 6.14 and later), which allows
/// PIDs below it only.
fn processes_limit(plan: &Plan, processes: u64) -> Result<(), LaunchError> {
    if !host_root(plan) {
        return rustix::process::setrlimit(
            Resource::Nproc,
            Rlimit {
                current: Some(processes),
                maximum: Some(processes),
            },
        )
        .map_err(failed_at(Step::Rlimit, "processes"));
    }
    if !plan.uses(Mechanism::Namespaces) {
        return Err(LaunchError::new(Step::PidMaxWithoutNamespaces));
    }
    let pid_max = (processes + 1).max(MIN_PID_MAX);
    std::fs::write("/proc/sys/kernel/pid_max", pid_max.to_string()).map_err(failed(Step::PidMax))
}

/// Whether the processes limit can be enforced, tried in a probe's new
/// root. A probe's finding is a reason in words ([`Support`] is the
/// host's, and text), not a step's failure.
///
/// [`Support`]: crate::confine::Support
pub(super) fn probe_process_limit(plan: &Plan) -> Result<(), String> {
    if !host_root(plan) {
        return Ok(());
    }
    std::fs::write("/proc/sys/kernel/pid_max", "4096").map_err(|error| {
        format!("a host running as root needs a PID namespace's own pid_max (Linux 6.14 or later) for the processes limit: {error}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::{Confinement, Limits};

    /// A host running as root bounds processes by the PID namespace's
    /// `pid_max`, which a plan without the namespaces cannot have: that
    /// step fails, by its kind, before anything is set on this process.
    #[test]
    fn a_root_hosts_processes_limit_without_namespaces_fails_at_its_step() {
        let plan = Plan {
            confinement: Confinement::new().with_limits(Limits {
                processes: Some(10),
                ..Limits::default()
            }),
            skip: vec![Mechanism::Namespaces],
            cwd: None,
            ids: Some((0, 0)),
        };
        let error = processes_limit(&plan, 10).expect_err("refused");
        assert_eq!(error.step(), Step::PidMaxWithoutNamespaces);
        assert_eq!(error.errno(), None);
        assert_eq!(error.exit_code(), super::super::SETUP_FAILED);
    }
}
