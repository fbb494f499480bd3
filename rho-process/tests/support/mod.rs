//! Executors, scratch directories, shell children and process checks shared
//! by the process tool's test files.
//!
//! Every test binary includes this module with `mod support;` and uses only
//! part of it.
//!
//! Children are small `/bin/sh` scripts: `/bin/sh`, `cat`, `sleep`, `yes`
//! and `head` are on every Unix machine, so nothing has to be built. A
//! script gets its scratch directory as `$1` (and as its working
//! directory) and reports pids by writing files there.
//!
//! Nothing here depends on timing being fast: waits poll with generous
//! bounds (a minute for a child to start, half a minute for a killed one to
//! be gone) and only fail past them.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_exec_smol::{SmolExecutor, SmolPool};
use rho_exec_tokio::TokioExecutor;
use rho_process::ProcessTool;
use rho_tool_core::Runner;
use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process, kill_process_group, test_kill_process};

/// How long a child may take to start and write its pid file.
pub(crate) const START_BOUND: Duration = Duration::from_secs(60);
/// How long a killed process may take to be gone.
pub(crate) const GONE_BOUND: Duration = Duration::from_secs(30);
/// A timeout no test reaches unless something is wrong: a call that ends
/// as `TimedOut` with it did not end for the reason the test is about.
pub(crate) const NEVER: Duration = Duration::from_secs(60);

/// Runs `scenario` with a runner on a tokio multi-thread runtime (two
/// workers); the loop is the test's own thread.
pub(crate) fn on_tokio<F, Fut>(scenario: F)
where
    F: FnOnce(Runner<TokioExecutor>) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a timer");
    runtime.block_on(scenario(Runner::new(executor)));
}

/// Runs `scenario` with a runner on a smol executor run by two threads;
/// the loop is the test's own thread.
pub(crate) fn on_smol<F, Fut>(scenario: F)
where
    F: FnOnce(Runner<SmolExecutor>) -> Fut,
    Fut: Future<Output = ()>,
{
    let pool = SmolPool::new(2).expect("two executor threads");
    smol::block_on(scenario(Runner::new(pool.executor())));
}

/// Defines `<scenario>::on_tokio` and `<scenario>::on_smol`, one test each.
#[macro_export]
macro_rules! on_both_executors {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn on_tokio() {
                $crate::support::on_tokio(super::$scenario);
            }

            #[test]
            fn on_smol() {
                $crate::support::on_smol(super::$scenario);
            }
        }
    )*};
}

/// The confinement launcher: the crate's `rho-confine`, or the copy the
/// unprivileged rerun ([`rerun_as_nobody`]) was given.
pub(crate) fn launcher() -> rho_process::confine::Launcher {
    match std::env::var_os("RHO_TEST_LAUNCHER") {
        Some(path) => rho_process::confine::Launcher::new(path),
        None => rho_process::confine::Launcher::new(env!("CARGO_BIN_EXE_rho-confine")),
    }
}

/// When the tests run as root, runs this test binary's tests whose names
/// hold `filter` again as `nobody` (65534), from copies of the binary and
/// of `launcher` in a directory that user can read, and fails unless they
/// all pass. The rerun finds its launcher in `RHO_TEST_LAUNCHER`, which
/// also tells it not to rerun itself. Run as an ordinary user, the tests
/// already ran unprivileged: nothing to do.
pub(crate) fn rerun_as_nobody(filter: &str, launcher: &str) {
    if std::env::var_os("RHO_TEST_LAUNCHER").is_some() {
        return; // This is the unprivileged run itself.
    }
    if !rustix::process::getuid().is_root() {
        eprintln!("running as an ordinary user: the tests ran unprivileged");
        return;
    }
    let dir = Scratch::new("unprivileged");
    let copy = |from: &Path| -> PathBuf {
        let to = dir.path().join(from.file_name().expect("a file name"));
        std::fs::copy(from, &to).expect("a copy of the binary");
        to
    };
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("permissions");
    let tests = copy(&std::env::current_exe().expect("this test binary"));
    let launcher = copy(Path::new(launcher));
    let output = std::os::unix::process::CommandExt::gid(
        std::os::unix::process::CommandExt::uid(&mut std::process::Command::new(&tests), 65534),
        65534,
    )
    .args([filter, "--test-threads=2"])
    .env_clear()
    .env("PATH", "/usr/bin:/bin")
    .env("RHO_TEST_LAUNCHER", &launcher)
    .env("TMPDIR", "/tmp")
    .env("RHO_TEST_SESSION_TOKEN", "leaked")
    .current_dir("/tmp")
    .output()
    .expect("the test binary runs as nobody");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the tests failed as nobody ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("passed; 0 failed"), "{stdout}");
}

/// A scratch directory, removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rho-process-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The pids in every `*.pid` file, as far as they are written.
    fn reported_pids(&self) -> Vec<Pid> {
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "pid"))
            .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
            .filter_map(|text| text.trim().parse::<i32>().ok())
            .filter_map(Pid::from_raw)
            .collect()
    }

    /// Waits for the pid a script wrote to `file`.
    pub(crate) fn pid(&self, file: &str) -> Pid {
        let path = self.0.join(file);
        let since = Instant::now();
        loop {
            let written = std::fs::read_to_string(&path).ok();
            if let Some(pid) = written.and_then(|text| text.trim().parse::<i32>().ok()) {
                return Pid::from_raw(pid).expect("a positive pid");
            }
            assert!(
                since.elapsed() < START_BOUND,
                "no pid in {} after {START_BOUND:?}: the child did not start",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The test failed, maybe because the tool left processes
            // running: kill those the scripts reported, so a failing run
            // does not leave them spinning. (Only then: after a passing
            // test they are gone, and their pids may be someone else's.)
            for pid in self.reported_pids() {
                let _ = kill_process_group(pid, Signal::KILL);
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A tool running `script` with `/bin/sh -c`; `$1` and the working
/// directory are `scratch`. A cleared environment but for `PATH`; a
/// timeout of [`NEVER`] unless the caller sets one.
pub(crate) fn sh(name: &str, script: &str, scratch: &Scratch) -> ProcessTool {
    ProcessTool::new(name, "/bin/sh")
        .with_args(["-c", script, "sh"])
        .with_arg(scratch.path())
        .with_current_dir(scratch.path())
        .with_env("PATH", "/usr/bin:/bin")
        .with_timeout(NEVER)
}

/// Whether `pid` is still a process of any kind, a zombie included.
pub(crate) fn exists(pid: Pid) -> bool {
    match test_kill_process(pid) {
        Ok(()) => true,
        Err(Errno::SRCH) => false,
        // EPERM: a process that is not ours; it exists.
        Err(_) => true,
    }
}

/// Whether `pid` is a zombie: dead, waiting for its parent to reap it.
/// (Linux's `/proc`; elsewhere never.)
pub(crate) fn is_zombie(pid: Pid) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()));
    // The state follows the command name, which is in parentheses and may
    // itself hold spaces or parentheses.
    stat.ok()
        .and_then(|stat| {
            let (_, after) = stat.rsplit_once(')')?;
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

/// Waits until `pid` is gone entirely: killed AND reaped, no zombie. For
/// the tool's own child, which the tool must reap.
pub(crate) fn assert_reaped(pid: Pid, what: &str) {
    let since = Instant::now();
    while exists(pid) {
        assert!(
            since.elapsed() < GONE_BOUND,
            "{what} (pid {}) still exists after {GONE_BOUND:?}{}",
            pid.as_raw_nonzero(),
            if is_zombie(pid) { " as a zombie" } else { "" }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `pid` is dead: gone, or a zombie. For a grandchild: once its
/// parent died it is reaped by init (or a subreaper), not by the tool, and
/// some container inits never reap.
pub(crate) fn assert_dead(pid: Pid, what: &str) {
    let since = Instant::now();
    while exists(pid) && !is_zombie(pid) {
        assert!(
            since.elapsed() < GONE_BOUND,
            "{what} (pid {}) still runs after {GONE_BOUND:?}",
            pid.as_raw_nonzero()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
