//! Landlock (the file system, by path) and seccomp (the system calls that
//! namespaces and Landlock leave open), each applied by init to itself
//! and inherited by the command.

use std::collections::BTreeMap;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::root::{Access as Mount, Entry};
use super::{LaunchError, Plan, Step, failed, failed_at};
use crate::confine::Mechanism;
use crate::confine::policy::Rest;

/// The newest Landlock ABI rho asks for; older kernels get what they have
/// (the mounts of the new root are the first barrier, Landlock the
/// second), and a kernel without Landlock is refused by the probe.
const NEWEST: ABI = ABI::V6;

/// Restricts this process (and what it starts) to the plan's paths,
/// `entries`, and the directories open at `directories` (those of bounded
/// writes: mounted nowhere the command sees, reached by init and by the
/// overlays at work for the command).
pub(super) fn landlock(
    plan: &Plan,
    entries: &[Entry],
    directories: &[&std::os::fd::OwnedFd],
) -> Result<(), LaunchError> {
    let confinement = &plan.confinement;
    let namespaces = plan.uses(Mechanism::Namespaces);
    let mut read: Vec<PathBuf> = Vec::new();
    let mut write: Vec<PathBuf> = Vec::new();
    for entry in entries {
        if let Entry::Bind { path, access } = entry {
            match access {
                Mount::Read => read.push(path.clone()),
                Mount::Write => write.push(path.clone()),
            }
        }
    }
    if namespaces {
        // The new root's own parts.
        read.push("/proc".into());
        write.extend(["/dev".into(), "/tmp".into(), "/run".into()]);
        if confinement.rest() == Rest::ReadOnly {
            read.push("/".into());
        }
    } else {
        write.push("/dev/null".into());
    }
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(NEWEST))
        .map_err(failed(Step::Landlock))?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(failed(Step::Landlock))?;
    let mut created = ruleset.create().map_err(failed(Step::Landlock))?;
    // `/` lists (an `ls /` works), nothing more: every path below it
    // comes with its own rule.
    let root = PathFd::new("/").map_err(failed(Step::Landlock))?;
    created = created
        .add_rule(PathBeneath::new(root, AccessFs::ReadDir))
        .map_err(failed(Step::Landlock))?;
    for (paths, access) in [
        (read, AccessFs::from_read(NEWEST)),
        (write, AccessFs::from_all(NEWEST)),
    ] {
        for path in paths {
            // Every path exists here: the new root was made of them.
            let fd = PathFd::new(&path).map_err(failed_at(Step::Landlock, path.display()))?;
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(failed(Step::Landlock))?;
        }
    }
    for directory in directories {
        created = created
            .add_rule(PathBeneath::new(*directory, AccessFs::from_all(NEWEST)))
            .map_err(failed(Step::Landlock))?;
    }
    let status = created.restrict_self().map_err(failed(Step::Landlock))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(
            LaunchError::new(Step::Landlock).because("the kernel did not enforce the rules")
        );
    }
    Ok(())
}

/// The Landlock ABI this kernel offers, found by restricting this
/// (throwaway) process. What it finds missing is a reason in words for
/// the host's `Support`, not a step's failure.
pub(super) fn probe_landlock() -> Result<u8, String> {
    let status = Ruleset::default()
        .handle_access(AccessFs::Execute)
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| created.restrict_self())
        .map_err(|error| format!("Landlock is not available: {error}"))?;
    match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => Ok(effective_abi as u8),
        LandlockStatus::NotEnabled => Err("Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)".into()),
        LandlockStatus::NotImplemented => Err("this kernel has no Landlock (Linux 5.13 or later, built with it)".into()),
    }
}

/// The errno a denied call returns.
const EPERM: u32 = libc::EPERM as u32;
const ENOSYS: u32 = libc::ENOSYS as u32;

/// Calls denied with "Operation not permitted": reading or writing other
/// processes' memory, namespaces and mounts (an escape and a way around
/// the other rules), kernel keyrings (not namespaced), BPF, perf events,
/// userfaultfd.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
];

/// Calls that answer "not implemented", so that C libraries fall back:
/// `clone3` (its flags sit in memory a filter cannot read; glibc then uses
/// `clone`, whose flags it can), and io_uring (which would do what the
/// filter denies without the calls it watches).
const NOT_IMPLEMENTED: &[i64] = &[
    libc::SYS_clone3,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// `clone` flags that make a namespace.
const NEW_NAMESPACES: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// Terminal ioctls that push input into another process's terminal.
const TERMINAL_INJECTION: &[u64] = &[libc::TIOCSTI, libc::TIOCLINUX];

/// Installs the filter on this process (no new privileges first, as
/// seccomp requires of a process without `CAP_SYS_ADMIN`).
pub(super) fn seccomp() -> Result<(), LaunchError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(failed(Step::Seccomp))?;
    let condition = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value)
            .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let clone_rules = NEW_NAMESPACES
        .iter()
        .map(|&flag| condition(0, SeccompCmpOp::MaskedEq(flag), flag))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed(Step::Seccomp))?;
    denied.insert(libc::SYS_clone, clone_rules);
    let ioctl_rules = TERMINAL_INJECTION
        .iter()
        .map(|&request| condition(1, SeccompCmpOp::Eq, request))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed(Step::Seccomp))?;
    denied.insert(libc::SYS_ioctl, ioctl_rules);
    let not_implemented: BTreeMap<i64, Vec<SeccompRule>> =
        NOT_IMPLEMENTED.iter().map(|&nr| (nr, Vec::new())).collect();

    // One program, attached once: every system call the command makes
    // runs each attached filter, so three filters would cost it three runs.
    let mut program = if arch == TargetArch::x86_64 {
        x32_guard()
    } else {
        BpfProgram::new()
    };
    for (rules, errno) in [(not_implemented, ENOSYS), (denied, EPERM)] {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno),
            arch,
        )
        .map_err(failed(Step::Seccomp))?;
        chain(
            &mut program,
            BpfProgram::try_from(filter).map_err(failed(Step::Seccomp))?,
        );
    }
    seccompiler::apply_filter(&program).map_err(failed(Step::Seccomp))
}

const RET_K: u16 = 0x06; // BPF_RET | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW

/// Appends `next` to `program` so that a call `program` allows goes on to
/// be judged by `next`: each "allow" of `program` becomes a jump to where
/// `next` starts. BPF's jumps are relative and only go forward, and this
/// keeps every instruction in its place, so both programs' own jumps still
/// land where they did. Any other answer of `program` (a denial) stands.
fn chain(program: &mut BpfProgram, next: BpfProgram) {
    let end = program.len();
    for (at, instruction) in program.iter_mut().enumerate() {
        if instruction.code == RET_K && instruction.k == RET_ALLOW {
            *instruction = sock_filter {
                code: JA,
                jt: 0,
                jf: 0,
                // From the instruction after this one to `end`.
                k: u32::try_from(end - at - 1).unwrap_or(u32::MAX),
            };
        }
    }
    program.extend(next);
}

/// On x86_64 the x32 ABI reaches every call under a second number (with
/// bit 30 set) that a filter of x86_64 numbers would not match: "not
/// implemented" for all of them, as on kernels built without x32.
fn x32_guard() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const X32_BIT: u32 = 0x4000_0000;
    const RET_ERRNO: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
    vec![
        // The system call's number (offset 0 of struct seccomp_data).
        sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: JGE_K,
            jt: 0,
            jf: 1,
            k: X32_BIT,
        },
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: RET_ERRNO | ENOSYS,
        },
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: RET_ALLOW,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(k: u32) -> sock_filter {
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// Chaining turns each "allow" of the first program into a jump to
    /// the second's start, leaves its denials and its other instructions
    /// where they were, and appends the second unchanged.
    #[test]
    fn a_chained_program_allows_only_what_both_allow() {
        let deny = 0x0005_0000 | EPERM;
        let mut first = vec![
            sock_filter {
                code: 0x20,
                jt: 0,
                jf: 0,
                k: 0,
            },
            ret(RET_ALLOW),
            ret(deny),
            ret(RET_ALLOW),
        ];
        let second = vec![ret(deny), ret(RET_ALLOW)];
        chain(&mut first, second.clone());
        assert_eq!(first.len(), 6);
        assert_eq!((first[0].code, first[0].k), (0x20, 0));
        // Index 1 jumps over 2 and 3 to the second's start, index 4.
        assert_eq!((first[1].code, first[1].k), (JA, 2));
        assert_eq!((first[2].code, first[2].k), (RET_K, deny));
        assert_eq!((first[3].code, first[3].k), (JA, 0));
        assert_eq!(
            first[4..].iter().map(|i| (i.code, i.k)).collect::<Vec<_>>(),
            second.iter().map(|i| (i.code, i.k)).collect::<Vec<_>>()
        );
    }
}
