//! Real package managers through network by host name (`Network::Hosts`):
//! pip and npm, run by the confined shell, install a real package from a
//! local registry whose name is on the confinement's allow list, through
//! the confinement's proxy; asked to use a name not on the list, they are
//! refused, the registry sees nothing, and the call's result names the
//! host. Each scenario runs the confined shell through rho's `Runner` on
//! tokio and on smol (`package_managers::<scenario>::on_tokio`,
//! `::on_smol`).
//!
//! The peers, each pinned, installed by `tests/peers/install-registries.sh`
//! into `target/peers/registries` (the tests run it when it has not run):
//!
//! - pip: Debian's `/usr/bin/python3 -m pip` (package `python3-pip`) inside
//!   the box, against pypiserver 2.4.2 (`tests/peers/registry-python.txt`
//!   pins it and all it pulls in) serving the wheel of six 1.17.0,
//!   downloaded from the Python package index at install time.
//! - npm: `/usr/bin/npm` (Node 20 or later) inside the box, against
//!   verdaccio 6.8.0 (`tests/peers/registry-node/`, exact versions in its
//!   lockfile) serving is-number 7.0.0, the npm registry's own tarball
//!   (`npm pack` at install time), published into verdaccio's storage at
//!   install time. The tests serve a copy of that storage with no uplinks:
//!   verdaccio asks no one else.
//!
//! The registries run on the host's loopback, started by the tests; the
//! names are the tests' own (`registry.test`, `evil.test`), both mapped to
//! the loopback and only `registry.test` allowed. A peer that is missing
//! fails the tests, saying what to install; they never pass without it.
//!
//! Inside the box the package managers need nothing beyond what the
//! confined shell gives every command: the system directories (Debian's
//! pip, npm and node live under `/usr`), `HOME=/tmp` (the call's scratch)
//! and the proxy's variables. pip is told `--trusted-host`, as it is for
//! any index served over plain HTTP by a name other than `localhost`.
//!
//! As root, `the_package_managers_pass_as_an_unprivileged_user` runs the
//! scenarios again as `nobody`, the registries then started by that run
//! from the same installed peers (readable by every user; copied to `/tmp`
//! for the rerun when the target directory is out of `nobody`'s reach).

#![cfg(target_os = "linux")]

mod support;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rho_process::ShellTool;
use rho_process::confine::Confinement;
use rho_tool_core::{CallEnd, Executor, Outcome, Runner, Tool, ToolCall};
use support::{Scratch, launcher};

/// How long a registry may take to answer once started.
const READY_BOUND: Duration = Duration::from_secs(60);

/// Whether this is the unprivileged rerun (`support::rerun_as_nobody`).
fn is_rerun() -> bool {
    std::env::var_os("RHO_TEST_LAUNCHER").is_some()
}

/// Where the installer puts the peers: `target/peers/registries`.
fn peers_dir() -> PathBuf {
    // `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the tmp dir is inside the target dir")
        .join("peers")
        .join("registries")
}

/// The installed peers, installed the first time they are asked for.
///
/// # Panics
///
/// Loudly, with the installer's words and what to install, when they
/// cannot be: these tests never pass without the real package managers
/// and registries.
fn peers() -> &'static Path {
    static PEERS: OnceLock<PathBuf> = OnceLock::new();
    PEERS.get_or_init(|| {
        let dir = peers_dir();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/install-registries.sh");
        if is_rerun() {
            // `nobody` cannot install: the root run installed them before
            // it reran the tests, and copied them for this run when the
            // target directory is out of its reach.
            let copy = rerun_copy_dir(std::os::unix::process::parent_id());
            if !dir.join(".rho-registries").exists() && copy.join(".rho-registries").exists() {
                return copy;
            }
            assert!(
                dir.join(".rho-registries").exists(),
                "\n\n*** the registries are not installed in {}: run `bash {} {}` first ***\n",
                dir.display(),
                script.display(),
                dir.display()
            );
        } else {
            let output = Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .output()
                .unwrap_or_else(|error| {
                    panic!("\n\n*** cannot run {}: {error} ***\n", script.display())
                });
            assert!(
                output.status.success(),
                "\n\n*** these tests run real package managers against real registries \
                 (pypiserver, verdaccio), and they could not be installed ***\n{} said ({}):\n{}{}\n\
                 Install Debian's python3 with python3-pip and python3-venv, and Node.js 20 or \
                 later with npm (/usr/bin/node, /usr/bin/npm); allow access to the Python package \
                 index and the npm registry; or run the script by hand.\n",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        // What the box runs: Debian's python3 with pip, and npm.
        let pip = Command::new("/usr/bin/python3")
            .args(["-m", "pip", "--version"])
            .output();
        assert!(
            pip.is_ok_and(|output| output.status.success()),
            "/usr/bin/python3 -m pip does not run: install python3-pip (`apt-get install python3-pip`)"
        );
        for (program, package) in [
            ("/usr/bin/node", "Node.js 20 or later"),
            ("/usr/bin/npm", "npm"),
        ] {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: install {package}"
            );
        }
        dir
    })
}

/// A free port on the host's loopback (the listener is closed: a server
/// that loses it to another process is started again on another).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A registry on the host's loopback, ended when dropped.
struct Registry {
    child: Child,
    port: u16,
    /// What it wrote (its request log among it).
    log: PathBuf,
    _dir: Scratch,
}

impl Registry {
    /// Starts `command` (given the port to listen on) and waits until
    /// `GET probe` answers 200.
    fn start(what: &str, dir: Scratch, probe: &str, command: impl Fn(u16) -> Command) -> Self {
        let log = dir.path().join("server.log");
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = free_port();
            let out = File::create(&log).expect("a log file");
            let mut child = command(port)
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("a log file"))
                .stderr(out)
                .spawn()
                .unwrap_or_else(|error| panic!("{what} does not start: {error}"));
            match ready(&mut child, port, probe) {
                Ok(()) => {
                    return Self {
                        child,
                        port,
                        log,
                        _dir: dir,
                    };
                }
                Err(Some(status)) => {
                    let said = std::fs::read_to_string(&log).unwrap_or_default();
                    // The port was taken in between: another one.
                    if said.contains("in use") && attempts < 3 {
                        continue;
                    }
                    panic!("{what} ended ({status}) before it answered:\n{said}");
                }
                Err(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{what} did not answer GET {probe} in {READY_BOUND:?}:\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                }
            }
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its request log, up to now: the servers write it late, so a
    /// request of the test's own, sent after everything the test is
    /// about, is waited for in it.
    fn log_up_to_now(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mark = format!("/rho-log-mark-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let _ = answers(self.port, &mark);
        let since = Instant::now();
        loop {
            let log = self.log_text();
            if log.contains(&mark) {
                return log;
            }
            assert!(
                since.elapsed() < READY_BOUND,
                "the registry did not log GET {mark} in {READY_BOUND:?}:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// pypiserver, from the installed venv, serving the six wheel.
    fn pypiserver() -> Self {
        let peers = peers();
        let dir = Scratch::new("pypiserver");
        Self::start("pypiserver", dir, "/simple/", |port| {
            let mut command = Command::new(peers.join("python/bin/python"));
            command
                // `-v`: a line for each request.
                .args(["-m", "pypiserver", "run", "-v", "-p", &port.to_string()])
                .args(["-i", "127.0.0.1"])
                .arg(peers.join("python-packages"))
                .env("PYTHONUNBUFFERED", "1");
            command
        })
    }

    /// verdaccio, from the installed modules, serving a copy of the
    /// seeded storage, with no uplinks and no package proxied.
    fn verdaccio() -> Self {
        let peers = peers();
        let dir = Scratch::new("verdaccio");
        let storage = dir.path().join("storage");
        copy_tree(&peers.join("npm-storage"), &storage);
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "storage: {storage}
auth:
  htpasswd:
    file: {htpasswd}
    max_users: -1
uplinks: {{}}
packages:
  '**':
    access: $all
    publish: $authenticated
web:
  enable: false
log: {{ type: stdout, format: pretty, level: http }}
",
                storage = storage.display(),
                htpasswd = dir.path().join("htpasswd").display(),
            ),
        )
        .expect("verdaccio's configuration");
        let home = dir.path().to_path_buf();
        Self::start("verdaccio", dir, "/-/ping", move |port| {
            let mut command = Command::new("/usr/bin/node");
            command
                .arg(peers.join("node/node_modules/verdaccio/bin/verdaccio"))
                .arg("--config")
                .arg(&config)
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"))
                .env("HOME", &home);
            command
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `GET probe` on the loopback's `port` answers 200: `Ok`;
/// or until `child` ends (`Err` with its status) or [`READY_BOUND`]
/// passes (`Err(None)`).
fn ready(child: &mut Child, port: u16, probe: &str) -> Result<(), Option<ExitStatus>> {
    let since = Instant::now();
    while since.elapsed() < READY_BOUND {
        if answers(port, probe) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Some(status));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(None)
}

/// Whether `GET path` on the loopback's `port` answers 200.
fn answers(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok()
        && (head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200"))
}

/// Copies the directory tree `from` to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("the seeded storage") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("a copy");
        }
    }
}

/// The confinement of the scenarios: `registry.test` allowed and mapped
/// to the host's loopback (named, so allowed though not public);
/// `evil.test` mapped there too, and not allowed.
fn by_name() -> Confinement {
    let loopback = IpAddr::from(Ipv4Addr::LOCALHOST);
    Confinement::new()
        .with_allowed_host("registry.test".parse().expect("a host"))
        .with_host_address("registry.test", loopback)
        .with_host_address("evil.test", loopback)
}

/// Runs `command` in the confined shell, in `workspace`.
async fn run_shell<E: Executor>(runner: &Runner<E>, workspace: &Scratch, command: &str) -> CallEnd {
    let tool = ShellTool::new(workspace.path())
        .with_confinement(by_name())
        .with_launcher(launcher());
    let call = ToolCall::new("1", tool.name(), serde_json::json!({ "command": command }));
    runner.start(call, Arc::new(tool)).await
}

/// Asserts a refused call: it failed, its result names `host` once as
/// not allowed, and the registry's log shows no `request`.
fn assert_refused(end: &CallEnd, host: &str, port: u16, registry: &Registry, request: &str) {
    let text = end.result.text();
    assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
    assert!(
        text.contains(&format!(
            "connections the confinement refused during the call:\n- {host}:{port}: it is not one of the confinement's allowed hosts; to allow it, add `{host}` to the allowed hosts"
        )),
        "the note names the host: {text}"
    );
    assert_eq!(
        text.matches(&format!("- {host}:")).count(),
        1,
        "the host once: {text}"
    );
    let log = registry.log_up_to_now();
    assert!(
        !log.contains(request),
        "a request reached the registry: {log}"
    );
}

/// Asserts an allowed call: it succeeded, and nothing was refused (the
/// package manager asked for no other host).
fn assert_allowed(end: &CallEnd) {
    let text = end.result.text();
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert!(
        !text.contains("refused during the call"),
        "only the allowed registry was asked for: {text}"
    );
}

/// The pip command of the scenarios, against `host`.
fn pip_install(host: &str, port: u16) -> String {
    format!(
        "/usr/bin/python3 -m pip install --no-cache-dir --disable-pip-version-check \
         --index-url http://{host}:{port}/simple/ --trusted-host {host} --target ./vendor six==1.17.0"
    )
}

/// The npm command of the scenarios, against `host`.
fn npm_install(host: &str, port: u16) -> String {
    format!(
        "/usr/bin/npm install --no-audit --no-fund --registry http://{host}:{port}/ is-number@7.0.0"
    )
}

mod package_managers {
    use super::*;

    crate::on_both_executors!(
        pip_installs_a_real_wheel_from_an_allowed_registry_name,
        pip_is_refused_a_registry_name_not_allowed,
        npm_installs_a_real_package_from_an_allowed_registry_name,
        npm_is_refused_a_registry_name_not_allowed,
    );

    /// pip installs six 1.17.0 from pypiserver, asked for by its allowed
    /// name through the proxy the box offers it (`HTTP_PROXY`).
    pub(super) async fn pip_installs_a_real_wheel_from_an_allowed_registry_name<E: Executor>(
        runner: Runner<E>,
    ) {
        let registry = Registry::pypiserver();
        let port = registry.port;
        let workspace = Scratch::new("pip");
        let end = run_shell(&runner, &workspace, &pip_install("registry.test", port)).await;
        assert_allowed(&end);
        assert!(
            end.result
                .text()
                .contains("Successfully installed six-1.17.0"),
            "{end:?}"
        );
        assert!(
            workspace.path().join("vendor/six.py").is_file(),
            "vendor/six.py is not in the workspace: {end:?}"
        );
        let log = registry.log_up_to_now();
        assert!(
            log.contains("/packages/six-1.17.0-py2.py3-none-any.whl"),
            "the wheel came from the registry: {log}\n{end:?}"
        );
    }

    /// The same pip command naming `evil.test` (mapped to the same
    /// server, not allowed): refused, nothing installed, the host named.
    pub(super) async fn pip_is_refused_a_registry_name_not_allowed<E: Executor>(runner: Runner<E>) {
        let registry = Registry::pypiserver();
        let port = registry.port;
        let workspace = Scratch::new("pip");
        let end = run_shell(&runner, &workspace, &pip_install("evil.test", port)).await;
        assert_refused(&end, "evil.test", port, &registry, "GET /simple/six");
        assert!(!workspace.path().join("vendor/six.py").exists(), "{end:?}");
    }

    /// npm installs is-number 7.0.0 from verdaccio, asked for by its
    /// allowed name through the proxy the box offers it; the tarball's
    /// address is the one verdaccio derives from the allowed name.
    pub(super) async fn npm_installs_a_real_package_from_an_allowed_registry_name<E: Executor>(
        runner: Runner<E>,
    ) {
        let registry = Registry::verdaccio();
        let port = registry.port;
        let workspace = Scratch::new("npm");
        let end = run_shell(&runner, &workspace, &npm_install("registry.test", port)).await;
        assert_allowed(&end);
        let manifest =
            std::fs::read_to_string(workspace.path().join("node_modules/is-number/package.json"))
                .unwrap_or_else(|error| {
                    panic!("node_modules/is-number/package.json: {error}: {end:?}")
                });
        let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("json");
        assert_eq!(manifest["version"], "7.0.0");
        let log = registry.log_up_to_now();
        assert!(
            log.contains("/is-number/-/is-number-7.0.0.tgz"),
            "the tarball came from the registry: {log}\n{end:?}"
        );
    }

    /// The same npm command naming `evil.test`: refused, nothing
    /// installed, the host named.
    pub(super) async fn npm_is_refused_a_registry_name_not_allowed<E: Executor>(runner: Runner<E>) {
        let registry = Registry::verdaccio();
        let port = registry.port;
        let workspace = Scratch::new("npm");
        let end = run_shell(&runner, &workspace, &npm_install("evil.test", port)).await;
        assert_refused(&end, "evil.test", port, &registry, "GET /is-number");
        assert!(
            !workspace.path().join("node_modules/is-number").exists(),
            "{end:?}"
        );
    }
}

/// When the tests run as root, the scenarios again as `nobody`, from
/// copies of this test binary and the launcher; the peers are installed
/// first, as `nobody` cannot.
#[test]
fn the_package_managers_pass_as_an_unprivileged_user() {
    let _copy = (!is_rerun() && rustix::process::getuid().is_root())
        .then(copy_for_nobody)
        .flatten();
    support::rerun_as_nobody("package_managers::", env!("CARGO_BIN_EXE_rho-confine"));
}

/// Installs the peers and, when `nobody` cannot read them where they are,
/// copies them where the rerun looks next ([`rerun_copy_dir`]).
fn copy_for_nobody() -> Option<PeersCopy> {
    let peers = peers();
    if nobody_reads(peers) {
        return None;
    }
    let copy = PeersCopy(rerun_copy_dir(std::process::id()));
    let _ = std::fs::remove_dir_all(&copy.0);
    let run = |command: &mut Command| command.status().is_ok_and(|status| status.success());
    assert!(
        run(Command::new("cp").arg("-a").arg(peers).arg(&copy.0))
            && run(Command::new("chmod").args(["-R", "a+rX"]).arg(&copy.0))
            && nobody_reads(&copy.0),
        "cannot copy {} where nobody can read it",
        peers.display()
    );
    Some(copy)
}

/// Where the unprivileged rerun of the process `pid` finds the peers when
/// the target directory is out of its reach (a checkout under `/root`,
/// say): a copy in `/tmp`, whose name the rerun knows from its parent.
fn rerun_copy_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/rho-process-{pid}-registries"))
}

/// Whether `nobody` can read the peers in `dir` and run what they run.
fn nobody_reads(dir: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    Command::new("/bin/sh")
        .args([
            "-c",
            r#"test -r "$1/.rho-registries" && test -r "$1/python-packages" && test -x "$1/python/bin/python" && test -r "$1/node/node_modules/verdaccio/bin/verdaccio" && test -r "$1/npm-storage/is-number/package.json""#,
            "sh",
        ])
        .arg(dir)
        .uid(65534)
        .gid(65534)
        .env_clear()
        .current_dir("/")
        .status()
        .is_ok_and(|status| status.success())
}

/// The peers copied for the rerun, removed when dropped.
struct PeersCopy(PathBuf);

impl Drop for PeersCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
