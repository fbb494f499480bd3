//! The new root: a file system made of the paths the confinement names,
//! a fresh `/proc` of the new PID namespace, a minimal `/dev` and a
//! scratch `/tmp`, in a mount namespace of its own. What is not named does
//! not exist for the command (or, with [`Rest::ReadOnly`], is the host's
//! tree read-only), so Landlock's gaps on older kernels (connecting to a
//! Unix socket by path, seeing that a file exists) stay closed.
//!
//! The steps are bubblewrap's: a tmpfs becomes a temporary root with the
//! host's root below it at `/oldroot`; the new root is assembled beside it
//! at `/newroot` from bind mounts of `/oldroot/<path>`; then the new root
//! takes `/`, and the old one is detached.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

use super::writes::{self, Bounded};
use super::{LaunchError, Plan, Step, failed_at};
use crate::confine::policy::{Confinement, Rest};

/// How a path is mounted in the new root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    Read,
    Write,
}

/// One path of the new root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A directory or file bound from the host at the same path.
    Bind { path: PathBuf, access: Access },
    /// A symbolic link, recreated (its target is bound as its own entry).
    Link { path: PathBuf, target: PathBuf },
}

/// The paths of the new root, in the host's view: each named path made
/// absolute and resolved, symbolic links recreated and their targets
/// added. Missing system paths are skipped; a missing named path is an
/// error (a typo must not make a narrower, or wider, confinement).
pub(crate) fn entries(confinement: &Confinement) -> Result<Vec<Entry>, LaunchError> {
    let mut named: Vec<(PathBuf, Access, bool)> = Vec::new();
    if confinement.system_paths() {
        for path in Confinement::SYSTEM_PATHS {
            named.push((PathBuf::from(path), Access::Read, false));
        }
    }
    for path in confinement.read_paths() {
        named.push((path.clone(), Access::Read, true));
    }
    for path in confinement.write_paths() {
        named.push((path, Access::Write, true));
    }
    let mut entries = Vec::new();
    for (path, access, required) in named {
        if !path.is_absolute() {
            return Err(LaunchError::new(Step::RelativePath).at(path.display()));
        }
        let resolved = match fs::canonicalize(&path) {
            Ok(resolved) => resolved,
            Err(_) if !required => continue,
            Err(error) => return Err(failed_at(Step::Path, path.display())(error)),
        };
        // The named path's own form stays usable when it goes through a
        // link (`/bin` -> `usr/bin`, a workspace under a linked home).
        if resolved != lexical(&path) {
            if let Ok(target) = fs::read_link(&path) {
                entries.push(Entry::Link {
                    path: lexical(&path),
                    target,
                });
            }
        }
        entries.push(Entry::Bind {
            path: resolved,
            access,
        });
    }
    // Parents before children, and for one path the writable mount last,
    // so it is the one on top.
    entries.sort_by_key(key);
    entries.dedup();
    // A path inside a bound parent of the same access is there already
    // (`/usr/bin` for `/bin`, under `/usr`): one mount and one Landlock
    // rule fewer each. A child of the other access keeps its own, on top.
    let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
    for entry in entries {
        let covered = match &entry {
            Entry::Bind { path, access } => kept.iter().any(|parent| {
                matches!(parent, Entry::Bind { path: p, access: a } if a == access && path != p && path.starts_with(p))
            }),
            Entry::Link { .. } => false,
        };
        if !covered {
            kept.push(entry);
        }
    }
    Ok(kept)
}

fn key(entry: &Entry) -> (usize, PathBuf, Option<Access>) {
    match entry {
        Entry::Bind { path, access } => (path.components().count(), path.clone(), Some(*access)),
        Entry::Link { path, .. } => (path.components().count(), path.clone(), None),
    }
}

/// `path` with `.` and `..` taken out, without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` (absolute) under `base`.
fn under(base: &str, path: &Path) -> PathBuf {
    Path::new(base).join(path.strip_prefix("/").unwrap_or(path))
}

/// For `map_err`: building the new root failed at `what`.
fn err<E: std::error::Error + 'static>(
    what: impl std::fmt::Display,
) -> impl FnOnce(E) -> LaunchError {
    failed_at(Step::Mount, what.to_string())
}

/// For `map_err`: a tmpfs of the new root failed, `what`.
fn tmpfs_err<E: std::error::Error + 'static>(what: &str) -> impl FnOnce(E) -> LaunchError {
    failed_at(Step::Tmpfs, what.to_owned())
}

/// Builds the new root of `entries` (computed in the host's view, before
/// anything is mounted) and enters it. Init runs this, as root of its
/// user namespace, in its own mount namespace. Returns the writable paths
/// whose writes are bounded (none unless the limits bound them).
pub(super) fn build(plan: &Plan, entries: &[Entry]) -> Result<Vec<Bounded>, LaunchError> {
    let confinement = &plan.confinement;
    let limits = confinement.limits();
    let bound = writes::bounded(&limits);

    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(err("making mounts private"))?;
    // A temporary root: a tmpfs with the host's root below it.
    let base = "/tmp";
    rustix::mount::mount(
        "tmpfs",
        base,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755",
    )
    .map_err(tmpfs_err("mounting the temporary root"))?;
    std::env::set_current_dir(base).map_err(err("entering the temporary root"))?;
    for dir in ["newroot", "oldroot"] {
        fs::create_dir(dir).map_err(err(dir))?;
    }
    rustix::process::pivot_root(".", "oldroot").map_err(err("pivot_root"))?;
    std::env::set_current_dir("/").map_err(err("chdir /"))?;
    if bound {
        let writable = entries
            .iter()
            .filter(|entry| {
                matches!(
                    entry,
                    Entry::Bind {
                        access: Access::Write,
                        ..
                    }
                )
            })
            .count();
        writes::mount_store(&limits, confinement.scratch_size(), writable)?;
    }

    // The new root itself: an empty tmpfs, read-only once assembled.
    rustix::mount::mount(
        "tmpfs",
        "/newroot",
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755",
    )
    .map_err(tmpfs_err("mounting the new root"))?;
    if confinement.rest() == Rest::ReadOnly {
        bind(Path::new("/oldroot"), Path::new("/newroot"), Access::Read)?;
    }
    // Before the named paths: one of them may lie under `/tmp` or `/run`.
    proc_dev_tmp(confinement)?;
    let mut bounded = Vec::new();
    for entry in entries {
        match entry {
            Entry::Bind {
                path,
                access: Access::Write,
            } if bound => bounded.push(writes::overlay(
                bounded.len(),
                &under("/oldroot", path),
                &under("/newroot", path),
                path,
            )?),
            Entry::Bind { path, access } => {
                bind(&under("/oldroot", path), &under("/newroot", path), *access)?
            }
            Entry::Link { path, target } => {
                let at = under("/newroot", path);
                if fs::symlink_metadata(&at).is_err() {
                    if let Some(parent) = at.parent() {
                        fs::create_dir_all(parent).map_err(err(parent.display()))?;
                    }
                    std::os::unix::fs::symlink(target, &at).map_err(err(at.display()))?;
                }
            }
        }
    }

    // The host's tree goes; the new root takes `/`.
    rustix::mount::unmount("/oldroot", UnmountFlags::DETACH)
        .map_err(err("detaching the host's root"))?;
    std::env::set_current_dir("/newroot").map_err(err("entering the new root"))?;
    // pivot_root(".", ".") stacks the old root on the new one at `/`;
    // detaching it leaves the new root alone (pivot_root(2)).
    rustix::process::pivot_root(".", ".").map_err(err("pivot_root into the new root"))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(err("detaching the temporary root"))?;
    std::env::set_current_dir("/").map_err(err("chdir /"))?;
    if confinement.rest() == Rest::Hidden {
        rustix::mount::mount_remount(
            "/",
            MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
            "",
        )
        .map_err(err("making the new root read-only"))?;
    }
    Ok(bounded)
}

/// A fresh `/proc` of the new PID namespace, a `/dev` of the harmless
/// devices with an empty `/dev/shm` in it, the scratch `/tmp`, and an
/// empty `/run` (a directory of the read-only new root, or, over the
/// host's tree, a tmpfs that hides the host's sockets). Each mount is a
/// few tens of microseconds of every confined call: no more than needed.
fn proc_dev_tmp(confinement: &Confinement) -> Result<(), LaunchError> {
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    fs::create_dir_all("/newroot/proc").map_err(err("/proc"))?;
    rustix::mount::mount("proc", "/newroot/proc", "proc", flags, None)
        .map_err(failed_at(Step::Proc, "mounting /proc"))?;

    fs::create_dir_all("/newroot/dev").map_err(err("/dev"))?;
    rustix::mount::mount(
        "tmpfs",
        "/newroot/dev",
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        c"mode=0755",
    )
    .map_err(tmpfs_err("mounting /dev"))?;
    for device in ["null", "zero", "full", "random", "urandom", "tty"] {
        let source = format!("/oldroot/dev/{device}");
        if fs::metadata(&source).is_ok() {
            bind(
                Path::new(&source),
                Path::new(&format!("/newroot/dev/{device}")),
                Access::Write,
            )?;
        }
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, format!("/newroot/dev/{link}")).map_err(err(link))?;
    }
    fs::create_dir("/newroot/dev/shm").map_err(err("/dev/shm"))?;
    // The root directory is one of its inodes.
    let inodes = confinement
        .limits()
        .files
        .map(|files| files.saturating_add(1));
    let options = writes::tmpfs_options("1777", confinement.scratch_size(), inodes);
    let scratch = std::ffi::CString::new(options).map_err(tmpfs_err("scratch options"))?;
    let scratches: &[&str] = match confinement.rest() {
        Rest::Hidden => {
            fs::create_dir_all("/newroot/run").map_err(err("/run"))?;
            &["/newroot/tmp"]
        }
        Rest::ReadOnly => &["/newroot/tmp", "/newroot/run"],
    };
    for &dir in scratches {
        fs::create_dir_all(dir).map_err(err(dir))?;
        rustix::mount::mount(
            "tmpfs",
            dir,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            scratch.as_c_str(),
        )
        .map_err(tmpfs_err(dir))?;
    }
    Ok(())
}

/// Binds `source` at `target` (created as a directory or an empty file to
/// match), read-only unless `access` is `Write`.
fn bind(source: &Path, target: &Path, access: Access) -> Result<(), LaunchError> {
    let meta = fs::metadata(source).map_err(err(source.display()))?;
    if fs::symlink_metadata(target).is_err() {
        if meta.is_dir() {
            fs::create_dir_all(target).map_err(err(target.display()))?;
        } else {
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(err(parent.display()))?;
            }
            fs::File::create(target).map_err(err(target.display()))?;
        }
    }
    rustix::mount::mount_bind_recursive(source, target)
        .map_err(err(format_args!("binding {}", source.display())))?;
    if access == Access::Read {
        read_only(target).map_err(err(format_args!("making {} read-only", source.display())))?;
    }
    Ok(())
}

/// Remounts the bind mount at `target` read-only, keeping the flags the
/// kernel locks on a mount seen from a user namespace (a remount that
/// dropped `nosuid` or `nodev` would be refused).
fn read_only(target: &Path) -> io::Result<()> {
    let held = rustix::fs::statvfs(target)?.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (have, keep) in [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ] {
        if held.contains(have) {
            flags |= keep;
        }
    }
    rustix::mount::mount_remount(target, flags, "")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The system paths resolve to binds none of which lies inside
    /// another of the same access (a link such as `/bin` -> `usr/bin` is
    /// a link, its target covered by `/usr`), and a named path inside a
    /// parent of the other access keeps its own bind.
    #[test]
    fn no_bind_lies_inside_another_of_the_same_access() {
        let dir = std::env::temp_dir().join(format!("rho-entries-{}", std::process::id()));
        let inner = dir.join("inner");
        fs::create_dir_all(&inner).expect("dirs");
        let confinement = Confinement::new()
            .with_write(&dir)
            .with_read(&inner)
            .with_read("/usr/bin");
        let entries = entries(&confinement).expect("entries");
        let _ = fs::remove_dir_all(&dir);
        let binds: Vec<(&PathBuf, Access)> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Bind { path, access } => Some((path, *access)),
                Entry::Link { .. } => None,
            })
            .collect();
        for (a, access_a) in &binds {
            for (b, access_b) in &binds {
                assert!(
                    a == b || access_a != access_b || !a.starts_with(b),
                    "{a:?} lies inside {b:?}: {entries:?}"
                );
            }
        }
        let inner = fs::canonicalize(dir.parent().expect("a parent"))
            .expect("tmp")
            .join(dir.file_name().expect("a name"))
            .join("inner");
        assert!(
            binds
                .iter()
                .any(|(p, a)| **p == inner && *a == Access::Read),
            "{entries:?}"
        );
        assert!(
            !binds.iter().any(|(p, _)| p.ends_with("usr/bin")),
            "{entries:?}"
        );
    }

    /// A named path that cannot be used fails at its own step, before
    /// anything is mounted: not absolute, or not there (with the errno
    /// that said so), each naming the path.
    #[test]
    fn a_named_path_that_cannot_be_used_fails_at_its_step() {
        let relative = entries(&Confinement::new().with_read("relative/dir")).expect_err("refused");
        assert_eq!(relative.step(), Step::RelativePath);
        assert_eq!(
            (relative.context(), relative.errno()),
            (Some("relative/dir"), None)
        );
        assert_eq!(
            relative.to_string(),
            "the path relative/dir is not absolute"
        );

        let missing = "/no/such/rho/path";
        let error = entries(&Confinement::new().with_write(missing)).expect_err("refused");
        assert_eq!(error.step(), Step::Path);
        assert_eq!(error.errno(), Some(rustix::io::Errno::NOENT));
        assert_eq!(error.context(), Some(missing));
        assert_eq!(
            error.to_string(),
            format!("the path {missing} cannot be used: No such file or directory (os error 2)")
        );
        // A missing system path is skipped, not refused.
        assert!(entries(&Confinement::new()).is_ok());
    }
}
