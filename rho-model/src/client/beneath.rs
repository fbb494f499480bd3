//! Files opened beneath a workspace folder, and never outside it.
//!
//! On Linux the kernel holds the line: every open is `openat2` from the
//! workspace's own descriptor with `RESOLVE_BENEATH` and
//! `RESOLVE_NO_MAGICLINKS`, so neither `..` nor a symbolic link (planted
//! before or swapped in during the call) leads out. A write goes to a new
//! file in the same folder, renamed over the old one, so a reader never
//! sees half a file.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// A workspace folder, held open.
#[derive(Debug)]
pub(crate) struct Beneath {
    root: OwnedFd,
    path: PathBuf,
}

/// What went wrong, in words for the model.
pub(crate) type Refused = String;

impl Beneath {
    /// The workspace at `path`, which must be a folder.
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        let root = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            root,
            path: path.to_path_buf(),
        })
    }

    /// The workspace's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `given` (absolute under the workspace, or relative to it) as a
    /// path relative to the workspace, made only of names; `None` for a
    /// path elsewhere.
    pub(crate) fn relative(&self, given: &str) -> Option<PathBuf> {
        let given = Path::new(given);
        let inside = if given.is_absolute() {
            given.strip_prefix(&self.path).ok()?
        } else {
            given
        };
        let mut relative = PathBuf::new();
        for component in inside.components() {
            match component {
                Component::Normal(name) => relative.push(name),
                Component::CurDir => {}
                // `..` is left to the kernel, which refuses any that
                // climbs out; kept, it still resolves beneath.
                Component::ParentDir => relative.push(".."),
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        Some(relative)
    }

    fn open_at(&self, relative: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        rustix::fs::openat2(
            self.root.as_fd(),
            relative,
            flags | OFlags::CLOEXEC,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
    }

    /// What is at `relative`: a file, a folder, or nothing.
    pub(crate) fn kind(&self, relative: &Path) -> Result<Kind, Refused> {
        match self.open_at(relative, OFlags::PATH, Mode::empty()) {
            Ok(fd) => {
                let stat = rustix::fs::fstat(&fd).map_err(|errno| errno.to_string())?;
                let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
                Ok(match kind {
                    rustix::fs::FileType::Directory => Kind::Folder,
                    rustix::fs::FileType::RegularFile => Kind::File(stat.st_size as u64),
                    _ => Kind::Other,
                })
            }
            Err(Errno::NOENT) => Ok(Kind::Missing),
            Err(errno) => Err(refusal(relative, errno)),
        }
    }

    /// The bytes of the file at `relative`, up to `limit` (more is an
    /// error).
    pub(crate) fn read(&self, relative: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
        let fd = self
            .open_at(relative, OFlags::RDONLY, Mode::empty())
            .map_err(|errno| refusal(relative, errno))?;
        let mut bytes = Vec::new();
        File::from(fd)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("`{}` could not be read: {error}", relative.display()))?;
        if bytes.len() as u64 > limit {
            return Err(format!(
                "`{}` is larger than {limit} bytes; this editor opens smaller files",
                relative.display()
            ));
        }
        Ok(bytes)
    }

    /// `bytes` written as the whole file at `relative` (made, or
    /// replaced), through a new file renamed over it.
    pub(crate) fn write(&self, relative: &Path, bytes: &[u8]) -> Result<(), Refused> {
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(format!("`{}` names no file", relative.display()));
        };
        if name == ".." {
            return Err(format!("`{}` names no file", relative.display()));
        }
        let folder = self
            .open_at(parent, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .map_err(|errno| match errno {
                Errno::NOENT => format!(
                    "the folder of `{}` does not exist; create the folder first",
                    relative.display()
                ),
                errno => refusal(parent, errno),
            })?;
        // The permissions of the file replaced, or the usual ones.
        let mode = rustix::fs::statat(&folder, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .filter(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file())
            .map_or(Mode::from_raw_mode(0o644), |stat| {
                Mode::from_raw_mode(stat.st_mode & 0o7777)
            });
        let temporary = format!(
            ".{}.rho-edit-{}",
            name.to_string_lossy(),
            std::process::id()
        );
        let fd = rustix::fs::openat(
            &folder,
            temporary.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            mode,
        )
        .map_err(|errno| refusal(relative, errno))?;
        // On disk before it replaces the old file: a crash between the two
        // leaves the old file, never an empty one.
        let mut file = File::from(fd);
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        let renamed = written.map_err(|error| error.to_string()).and_then(|()| {
            rustix::fs::renameat(&folder, temporary.as_str(), &folder, name)
                .map_err(|errno| errno.to_string())
        });
        if let Err(error) = renamed {
            let _ = rustix::fs::unlinkat(&folder, temporary.as_str(), rustix::fs::AtFlags::empty());
            return Err(format!(
                "`{}` could not be written: {error}",
                relative.display()
            ));
        }
        Ok(())
    }

    /// The folders of `relative` made where missing (as `mkdir -p` its
    /// parent would), each beneath the workspace.
    pub(crate) fn make_folders(&self, relative: &Path) -> Result<(), Refused> {
        let Some(parent) = relative.parent() else {
            return Ok(());
        };
        let mut made = PathBuf::new();
        for name in parent.components() {
            let above = made.clone();
            made.push(name);
            match self.open_at(&made, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()) {
                Ok(_) => continue,
                Err(Errno::NOENT) => {}
                Err(errno) => return Err(refusal(&made, errno)),
            }
            let folder = self
                .open_at(&above, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
                .map_err(|errno| refusal(&above, errno))?;
            match rustix::fs::mkdirat(&folder, name.as_os_str(), Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(refusal(&made, errno)),
            }
        }
        Ok(())
    }

    /// The file at `relative` removed.
    pub(crate) fn remove(&self, relative: &Path) -> Result<(), Refused> {
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(format!("`{}` names no file", relative.display()));
        };
        let folder = self
            .open_at(parent, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .map_err(|errno| refusal(parent, errno))?;
        rustix::fs::unlinkat(&folder, name, rustix::fs::AtFlags::empty())
            .map_err(|errno| refusal(relative, errno))
    }

    /// The names in the folder at `relative`, and in its folders, to
    /// `depth` levels; hidden ones (a leading `.`) left out; sorted.
    pub(crate) fn list(
        &self,
        relative: &Path,
        depth: usize,
    ) -> Result<Vec<(PathBuf, bool)>, Refused> {
        let mut found = Vec::new();
        self.list_into(relative, depth, &mut found)?;
        found.sort();
        Ok(found)
    }

    fn list_into(
        &self,
        relative: &Path,
        depth: usize,
        found: &mut Vec<(PathBuf, bool)>,
    ) -> Result<(), Refused> {
        let fd = self
            .open_at(relative, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .map_err(|errno| refusal(relative, errno))?;
        let mut dir = rustix::fs::Dir::read_from(&fd).map_err(|errno| refusal(relative, errno))?;
        let mut folders = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|errno| refusal(relative, errno))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = relative.join(&name);
            let folder = entry.file_type() == rustix::fs::FileType::Directory;
            if folder {
                folders.push(path.clone());
            }
            found.push((path, folder));
            if found.len() > 10_000 {
                return Err(format!(
                    "`{}` holds more than 10000 entries; view a folder inside it",
                    relative.display()
                ));
            }
        }
        if depth > 1 {
            for folder in folders {
                self.list_into(&folder, depth - 1, found)?;
            }
        }
        Ok(())
    }
}

/// What is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    Folder,
    /// A regular file of this many bytes.
    File(u64),
    /// A device, a socket, a pipe.
    Other,
}

/// An open refused by the kernel, in words.
fn refusal(relative: &Path, errno: Errno) -> Refused {
    match errno {
        // RESOLVE_BENEATH's answer to a path that leads out.
        Errno::XDEV => format!(
            "`{}` leads outside the workspace (by `..` or a symbolic link); this editor works \
             only inside it",
            relative.display()
        ),
        Errno::LOOP => format!(
            "`{}` goes through a symbolic link this editor does not follow",
            relative.display()
        ),
        Errno::NOENT => format!("`{}` does not exist", relative.display()),
        Errno::NOTDIR => format!("a part of `{}` is not a folder", relative.display()),
        Errno::ACCESS | Errno::PERM => format!(
            "`{}` may not be opened (permission denied)",
            relative.display()
        ),
        errno => format!("`{}` could not be opened: {errno}", relative.display()),
    }
}
