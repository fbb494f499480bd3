//! The launcher's only `unsafe`: two system calls that Rust's safe crates
//! offer only as `unsafe` functions.
//!
//! - `unshare`: rustix's safe `unshare` is deprecated for `unshare_unsafe`,
//!   which is unsafe only because `CLONE_FILES` would unshare the file
//!   descriptor table under other threads' feet. The flags here never
//!   include `CLONE_FILES`, and the launcher has one thread.
//! - taking ownership of the descriptor outer passed to init by number: an
//!   `OwnedFd` from a raw number asserts that nothing else owns it.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

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

/// The descriptor `fd` that outer left open for init (its report pipe),
/// owned from now on.
///
/// # Errors
///
/// When `fd` is not an open descriptor of this process.
pub(super) fn inherited(fd: i32) -> io::Result<OwnedFd> {
    if fd < 3 {
        return Err(io::Error::other(format!(
            "descriptor {fd} is a standard stream"
        )));
    }
    // Refuse a number that is not open: `OwnedFd` would then close a
    // descriptor opened later under the same number.
    std::fs::symlink_metadata(format!("/proc/self/fd/{fd}"))
        .map_err(|error| io::Error::other(format!("descriptor {fd} is not open: {error}")))?;
    // SAFETY: `fd` is open (checked above) and was created by outer for
    // this process alone: outer passed its number on the command line,
    // and nothing in this single-threaded process has opened, wrapped or
    // closed it before this call, which happens once, at the start.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
