//! Bounded writes ([`Limits::written`](crate::confine::Limits::written),
//! [`Limits::files`](crate::confine::Limits::files)): the writable paths
//! as overlays whose changes the kernel keeps in one size- and
//! inode-limited tmpfs, written back to the host's paths when the command
//! ends.
//!
//! While the command runs, each writable path in the new root is an
//! overlay: the host's directory below, read-only, and an upper directory
//! on the bounded tmpfs where every file created or changed goes (a
//! changed file is copied up whole). A write past the bound fails with
//! `ENOSPC` ("No space left on device"), which no command can get around:
//! the tmpfs is the kernel's. When the command ends by itself, init
//! stops what it left running and writes the changes back to the host's
//! directories, one file at a time (each replaced by a rename, so none is
//! seen half written); a call killed at its deadline before that leaves
//! the host's paths as they were (killed during it, the files written back
//! so far stay). A mount inside a writable path is not seen through the
//! overlay; hard links are written back as separate files.
//!
//! The host's directories stay reachable for init only, through
//! descriptors opened before the new root took `/`: they are mounted
//! nowhere the command can see, and init is not dumpable, so the command
//! cannot reach them through `/proc/1/fd` either.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::mount::MountFlags;

use super::{LaunchError, Step, failed_at};
use crate::confine::Limits;

/// Where the bounded tmpfs is mounted in the temporary root, and where
/// each host directory is bound before it becomes an overlay's lower
/// layer (simple paths: overlay's options cannot hold every path).
const STORE: &str = "/writes";
const LOWERS: &str = "/lowers";

/// Inodes the overlays themselves take in the store, beyond the files
/// the command creates: the store's root, and per path its slot, upper
/// and work directories and the work directory's own.
const OWN_INODES: u64 = 1;
const INODES_PER_PATH: u64 = 4;

/// One writable path whose writes are bounded.
#[derive(Debug)]
pub(crate) struct Bounded {
    /// The path, as the command sees it (and as it is on the host).
    pub(crate) path: PathBuf,
    /// The overlay's upper directory: what the command changed.
    upper: OwnedFd,
    /// The host's directory.
    real: OwnedFd,
}

impl Bounded {
    /// The descriptors Landlock must let init (and so, by inheritance of
    /// its domain, the overlay working for the command) use in full: the
    /// upper directory and the host's.
    pub(crate) fn directories(&self) -> [&OwnedFd; 2] {
        [&self.upper, &self.real]
    }
}

/// Whether `limits` bound what a call may write.
pub(crate) fn bounded(limits: &Limits) -> bool {
    limits.written.is_some() || limits.files.is_some()
}

/// For `map_err`: setting up bounded writes failed at `what`.
fn err<E: std::error::Error + 'static>(
    what: impl std::fmt::Display,
) -> impl FnOnce(E) -> LaunchError {
    failed_at(Step::BoundedWrites, what.to_string())
}

/// Mounts the store: a tmpfs of `limits.written` bytes (`scratch_size`
/// without it) and room for `limits.files` files (beyond what `paths`
/// overlays take themselves), in the temporary root.
pub(super) fn mount_store(
    limits: &Limits,
    scratch_size: u64,
    paths: usize,
) -> Result<(), LaunchError> {
    std::fs::create_dir(STORE).map_err(err(STORE))?;
    std::fs::create_dir(LOWERS).map_err(err(LOWERS))?;
    // Without a byte bound, the scratch size's: a tmpfs is memory, and
    // its own default (half of it) is no bound at all.
    let bytes = limits.written.unwrap_or(scratch_size);
    let inodes = limits
        .files
        .map(|files| files.saturating_add(OWN_INODES + INODES_PER_PATH * paths as u64));
    let options = CString::new(tmpfs_options("0700", bytes, inodes)).map_err(err("options"))?;
    rustix::mount::mount(
        "tmpfs",
        STORE,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(err("mounting its store"))
}

/// Mounts the overlay of `source` (the host's directory, under the old
/// root) at `target` (in the new root), its changes kept in the store's
/// slot `slot`. `path` is the path as the command sees it.
pub(super) fn overlay(
    slot: usize,
    source: &Path,
    target: &Path,
    path: &Path,
) -> Result<Bounded, LaunchError> {
    if !source.is_dir() {
        return Err(LaunchError::new(Step::BoundedWrites)
            .at(path.display())
            .because("bounded writes take directories, and this is not one"));
    }
    let at = |name: &str| PathBuf::from(format!("{STORE}/{slot}/{name}"));
    let (upper, work) = (at("upper"), at("work"));
    for dir in [&upper, &work] {
        std::fs::create_dir_all(dir).map_err(err(dir.display()))?;
    }
    let lower = PathBuf::from(format!("{LOWERS}/{slot}"));
    std::fs::create_dir(&lower).map_err(err(lower.display()))?;
    // Recursive: a write-back into a folder that is a mount of its own
    // lands in that mount, as the command's write would have.
    rustix::mount::mount_bind_recursive(source, &lower)
        .map_err(err(format_args!("binding {}", source.display())))?;
    std::fs::create_dir_all(target).map_err(err(target.display()))?;
    let options = CString::new(format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper.display(),
        work.display()
    ))
    .map_err(err("options"))?;
    rustix::mount::mount(
        "overlay",
        target,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(err(format_args!("an overlay on {}", path.display())))?;
    let open = |dir: &Path| {
        rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(err(dir.display()))
    };
    Ok(Bounded {
        path: path.to_path_buf(),
        upper: open(&upper)?,
        real: open(&lower)?,
    })
}

/// What writing the changes back did: files written, paths removed, and
/// what could not be done.
#[derive(Debug, Default)]
pub(crate) struct WrittenBack {
    pub(crate) written: u64,
    pub(crate) removed: u64,
    pub(crate) failed: Vec<String>,
    /// Whether the store was full: the command met its bound.
    pub(crate) full: bool,
}

/// The most failures a write-back names.
const MAX_FAILURES_NAMED: usize = 10;

/// Writes each path's changes back to the host's directory.
pub(crate) fn write_back(bounded: &[Bounded]) -> WrittenBack {
    let mut done = WrittenBack::default();
    for path in bounded {
        let (upper, real) = match (reopen(&path.upper), reopen(&path.real)) {
            (Ok(upper), Ok(real)) => (upper, real),
            (Err(error), _) | (_, Err(error)) => {
                done.fail(&path.path, &error);
                continue;
            }
        };
        if let Ok(stat) = rustix::fs::fstatvfs(&upper) {
            done.full |= stat.f_bavail == 0 || stat.f_favail == 0;
        }
        apply(&upper, &real, &path.path, &mut done);
    }
    done
}

impl WrittenBack {
    fn fail(&mut self, path: &Path, error: &dyn std::fmt::Display) {
        if self.failed.len() < MAX_FAILURES_NAMED {
            self.failed.push(format!("{}: {error}", path.display()));
        } else if self.failed.len() == MAX_FAILURES_NAMED {
            self.failed.push("and more".to_owned());
        }
    }
}

/// A directory's `O_PATH` descriptor opened for reading its entries.
fn reopen(dir: &OwnedFd) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Applies the upper directory `upper` (an overlay's changes) to `real`;
/// `path` names it in failures.
fn apply(upper: &OwnedFd, real: &OwnedFd, path: &Path, done: &mut WrittenBack) {
    let mut names = Vec::new();
    match Dir::read_from(upper) {
        Ok(mut dir) => {
            while let Some(entry) = dir.read() {
                match entry {
                    Ok(entry) => {
                        let name = entry.file_name().to_bytes();
                        if name != b"." && name != b".." {
                            names.push(name.to_vec());
                        }
                    }
                    Err(error) => {
                        done.fail(path, &error);
                        return;
                    }
                }
            }
        }
        Err(error) => {
            done.fail(path, &error);
            return;
        }
    }
    for name in names {
        let name = OsStr::from_bytes(&name);
        let here = path.join(name);
        if let Err(error) = apply_one(upper, real, name, &here, done) {
            done.fail(&here, &error);
        }
    }
}

/// Applies one entry `name` of `upper` to `real`.
fn apply_one(
    upper: &OwnedFd,
    real: &OwnedFd,
    name: &OsStr,
    here: &Path,
    done: &mut WrittenBack,
) -> io::Result<()> {
    let stat = rustix::fs::statat(upper, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    let mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
    match kind {
        // A whiteout: the command removed it.
        FileType::CharacterDevice if stat.st_rdev == 0 => {
            done.removed += u64::from(remove(real, name)?);
        }
        FileType::Directory => {
            let from = rustix::fs::openat(
                upper,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let opaque = matches!(opaque(&from), Some(true));
            let existing = rustix::fs::statat(real, name, AtFlags::SYMLINK_NOFOLLOW).ok();
            let is_dir = existing
                .is_some_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory);
            // Replaced whole (opaque), or over a file: the host's goes.
            if existing.is_some() && (opaque || !is_dir) && remove(real, name)? {
                done.removed += 1;
            }
            if existing.is_none() || opaque || !is_dir {
                rustix::fs::mkdirat(real, name, mode)?;
            }
            let to = rustix::fs::openat(
                real,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let _ = rustix::fs::fchmod(&to, mode);
            apply(&from, &to, here, done);
        }
        FileType::RegularFile => {
            copy_file(upper, real, name, mode)?;
            done.written += 1;
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(upper, name, Vec::new())?;
            remove(real, name)?;
            rustix::fs::symlinkat(target.as_c_str(), real, name)?;
            done.written += 1;
        }
        FileType::Fifo => {
            remove(real, name)?;
            rustix::fs::mknodat(real, name, FileType::Fifo, mode, 0)?;
            done.written += 1;
        }
        // Sockets and devices are not written back.
        _ => {}
    }
    Ok(())
}

/// Whether an upper directory is opaque (it replaced the host's whole).
fn opaque(dir: &OwnedFd) -> Option<bool> {
    let mut value = [0u8; 4];
    let read = rustix::fs::fgetxattr(dir, "user.overlay.opaque", &mut value[..]).ok()?;
    Some(&value[..read] == b"y")
}

/// Copies the regular file `name` of `upper` over `name` of `real`: to a
/// temporary file beside it, then renamed over it, so nobody sees it half
/// written.
fn copy_file(upper: &OwnedFd, real: &OwnedFd, name: &OsStr, mode: Mode) -> io::Result<()> {
    let mut from = File::from(rustix::fs::openat(
        upper,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    // A name of its own, short, that no file of the host's has (made
    // with `O_EXCL`, another number when one has).
    let (temporary, to) = (0u32..)
        .map(|n| format!(".rho-written-{}-{n}", std::process::id()))
        .find_map(|temporary| {
            match rustix::fs::openat(
                real,
                temporary.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            ) {
                Err(rustix::io::Errno::EXIST) => None,
                opened => Some((temporary, opened)),
            }
        })
        .ok_or_else(|| io::Error::other("no temporary name is free"))?;
    let temporary = OsStr::new(&temporary);
    let mut to = File::from(to?);
    let copied = io::copy(&mut from, &mut to).and_then(|_| {
        rustix::fs::fchmod(&to, mode)?;
        Ok(())
    });
    if let Err(error) = copied {
        let _ = rustix::fs::unlinkat(real, temporary, AtFlags::empty());
        return Err(error);
    }
    // A directory where the file goes is the host's no more.
    if let Ok(stat) = rustix::fs::statat(real, name, AtFlags::SYMLINK_NOFOLLOW) {
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            remove(real, name)?;
        }
    }
    rustix::fs::renameat(real, temporary, real, name)?;
    Ok(())
}

/// Removes `name` from `dir`, a directory with everything in it; whether
/// there was something to remove.
fn remove(dir: &impl AsFd, name: &OsStr) -> io::Result<bool> {
    let Ok(stat) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
        return Ok(false);
    };
    if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
        let inner = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut names = Vec::new();
        let mut entries = Dir::read_from(&inner)?;
        while let Some(entry) = entries.read() {
            let entry = entry?;
            let child = entry.file_name().to_bytes();
            if child != b"." && child != b".." {
                names.push(child.to_vec());
            }
        }
        for child in names {
            remove(&inner, OsStr::from_bytes(&child))?;
        }
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(true)
}
/// A tmpfs's mount options: `mode`, at most `bytes` and, when files are
/// bounded, at most `inodes`. One rule for every tmpfs the launcher
/// mounts, each of which is a bound on what the command writes: the size
/// is at least one byte, because tmpfs takes zero for "no limit" (and
/// rounds any other size up to a page).
pub(super) fn tmpfs_options(mode: &str, bytes: u64, inodes: Option<u64>) -> String {
    let mut options = format!("mode={mode},size={}", bytes.max(1));
    if let Some(inodes) = inodes {
        options.push_str(&format!(",nr_inodes={inodes}"));
    }
    options
}
