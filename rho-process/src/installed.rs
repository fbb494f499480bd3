//! Where rho finds the programs it ships beside a host: the confinement
//! launcher (`rho-confine`) and the script worker (`rho-script-worker`).
//!
//! One search for all of them, so a host that installs them in one place
//! finds each the same way: the directory of the running executable first
//! (a host and its helpers installed together, as `cargo install` and
//! `cargo build` put them), then each directory of `PATH`, in order.

use std::path::{Path, PathBuf};

/// The directories [`find`] looks in, in order: the running executable's,
/// then those of `PATH` (empty entries skipped).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|dir| !dir.as_os_str().is_empty()));
    }
    dirs
}

/// The first file named `program` in [`search_dirs`] that someone may run.
///
/// # Errors
///
/// The directories it looked in, for the caller's message, when none has
/// such a file.
///
/// # Examples
///
/// ```
/// // `sh` is on every Unix `PATH`; a name nobody ships is not.
/// assert!(rho_process::installed::find("sh").is_ok());
/// let looked = rho_process::installed::find("no-such-rho-program").unwrap_err();
/// assert!(!looked.is_empty());
/// ```
pub fn find(program: &str) -> Result<PathBuf, Vec<PathBuf>> {
    let dirs = search_dirs();
    dirs.iter()
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
        .ok_or(dirs)
}

/// A file that someone may run (a directory or a file without an execute
/// bit is not).
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
