//! The launcher's only `unsafe`: four system calls that Rust's safe
//! crates offer only as `unsafe` functions, or not at all.
//!
//! - `unshare`: rustix's safe `unshare` is deprecated for `unshare_unsafe`,
//!   which is unsafe only because `CLONE_FILES` would unshare the file
//!   descriptor table under other threads' feet. The flags here never
//!   include `CLONE_FILES`, and the launcher has one thread.
//! - `fork`: init is a copy of outer, not a new program. Starting it by
//!   `exec` of the launcher again cost a millisecond of every confined
//!   call (a second program load and runtime start), a fifth of what the
//!   whole confinement may add. A fork is sound only in a process with one
//!   thread (the child's copy of another thread's lock would never be
//!   released), which [`fork`] checks before it forks.
//! - `kill(-1, SIGKILL)`: rustix's `Pid` cannot be -1. Init, PID 1 of
//!   its namespace, stops everything the command left before it writes
//!   the command's changes back.
//! - `close_range`: rustix does not offer it. It closes descriptors the
//!   launcher never opened, so nothing of this process may hold one: it
//!   runs first thing, before the launcher opens anything.
#![allow(unsafe_code)]

use std::io;

use rustix::process::Pid;
use rustix::thread::UnshareFlags;

/// `unshare(2)` with `flags`, which must not hold `CLONE_FILES`.
pub(super) fn unshare(flags: UnshareFlags) -> io::Result<()> {
    if flags.contains(UnshareFlags::FILES) {
        return Err(io::Error::other("CLONE_FILES is never unshared here"));
    }
    // SAFETY: without CLONE_FILES, `unshare` changes nothing another
    // thread relies on (and the launcher has no other thread).
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// Closes every file descriptor from 3 up: what the host left open
/// without close-on-exec (a jobserver's pipe, a socket a service manager
/// handed down) must not reach the command, nor keep a pipe of the host's
/// open while the command runs.
///
/// Call it before this process opens anything of its own.
pub(super) fn close_inherited() -> io::Result<()> {
    const FIRST: u32 = 3;
    // SAFETY: `close_range` takes plain integers. The descriptors it
    // closes are ones this process never opened (it runs before the
    // launcher opens any), so no `OwnedFd` or `File` of this process owns
    // one; Rust's runtime holds none past `main`'s start.
    if unsafe { libc::syscall(libc::SYS_close_range, FIRST, u32::MAX, 0u32) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if !matches!(error.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
        return Err(error);
    }
    // A kernel older than 5.9, or a container's system call filter that
    // refuses `close_range`: the listed ones, one by one. The listing's
    // own descriptor is among them and already closed when they are.
    let mut listed = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        if let Some(fd) = entry?
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        {
            listed.push(fd);
        }
    }
    for fd in listed.into_iter().filter(|fd| *fd >= 3) {
        // SAFETY: as above; `fd` is no descriptor this process opened
        // (closing the listing's, already closed, fails harmlessly).
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// `SIGKILL` to every process this one may signal but itself: for init,
/// PID 1 of its namespace, every other process in it.
pub(super) fn kill_all_others() -> io::Result<()> {
    // SAFETY: `kill` takes plain integers and touches no memory.
    if unsafe { libc::kill(-1, libc::SIGKILL) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Which side of a fork this process is.
pub(super) enum Forked {
    /// The new process.
    Child,
    /// The process that forked, and the new one's pid.
    Parent(Pid),
}

/// `fork(2)`, in a process that has exactly one thread.
///
/// # Errors
///
/// When this process has more than one thread (or it cannot be told), or
/// the fork fails.
pub(super) fn fork() -> io::Result<Forked> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let threads = status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse::<u32>().ok());
    if threads != Some(1) {
        return Err(io::Error::other(format!(
            "the launcher must have one thread to fork, and has {threads:?}: call `serve_if_launcher` before anything starts a thread"
        )));
    }
    // SAFETY: this process has one thread (checked above, and nothing in
    // the launcher starts one), so no lock, allocator state or buffer is
    // held by a thread the child would not have. The child runs init's
    // code, then exits with `std::process::exit`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Pid::from_raw(pid)
            .map(Forked::Parent)
            .ok_or_else(|| io::Error::other("fork returned an invalid pid")),
    }
}
