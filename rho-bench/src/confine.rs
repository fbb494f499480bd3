//! Figure 15: what confinement costs. The start-to-end time of a trivial
//! command (`/bin/true`) run plainly, confined by rho's launcher with the
//! default confinement (namespaces, a new root, Landlock, seccomp,
//! rlimits), and confined by bubblewrap (`bwrap`, Debian's package) with
//! the same namespaces and mounts (bubblewrap sets no Landlock rules, no
//! seccomp filter of its own and no rlimits, so it does less); and a
//! confined `ShellTool` call (`echo hi`) through rho's runner on tokio.
//!
//! The floor beside them: util-linux's `unshare` entering the same
//! namespaces (user, PID, mount, network, IPC, UTS, cgroup) around the
//! command and nothing more: no new root, no filters, no limits. What the
//! kernel takes to make and tear down those namespaces is in every
//! confined call, rho's or bubblewrap's; the rest is the launcher's.
//!
//! Runs alternate between the ways in every round, so none always runs
//! on a warmer machine. The launcher is the shipped `rho-confine` found
//! next to this binary (`cargo build --release -p rho-process --bin
//! rho-confine`), and also this binary itself, which embeds one (its
//! `main` serves as a launcher first thing): a launcher's own start is
//! part of the cost, and a big host executable starts slower than the
//! small program.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use rho_process::ShellTool;
use rho_process::confine::{Confinement, Launcher};
use rho_tool_core::{Runner, ToolCall};

use crate::Config;
use crate::report::{Report, Target};
use crate::stats::Samples;

/// Where Debian's bubblewrap is.
pub(crate) const BWRAP: &str = "/usr/bin/bwrap";
/// Where util-linux's `unshare` is (Debian's essential `util-linux`).
const UNSHARE: &str = "/usr/bin/unshare";

/// The ways to run `/bin/true`.
#[derive(Debug, Clone, Copy)]
enum Way {
    Plain,
    /// Through `rho-confine`.
    Rho,
    /// Through this binary as the launcher.
    Embedded,
    Bwrap,
    /// The namespaces alone, by util-linux's `unshare`: the floor.
    Unshare,
}

/// bubblewrap's arguments for what rho's default confinement does with
/// namespaces and mounts: new user, PID, mount, network, IPC and UTS
/// namespaces, the system directories read-only, a fresh `/proc`, a
/// minimal `/dev`, a scratch `/tmp`, no nested user namespaces, killed
/// with its parent; around `/bin/true`.
fn bwrap_command() -> Command {
    bwrap(&["/bin/true"], false)
}

/// bubblewrap as in [`bwrap_command`] around `argv`; with `share_net`,
/// in the host's network namespace (`--share-net`).
pub(crate) fn bwrap(argv: &[&str], share_net: bool) -> Command {
    let mut command = Command::new(BWRAP);
    command.args([
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--disable-userns",
    ]);
    if share_net {
        command.arg("--share-net");
    }
    for dir in [
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib64",
        "/etc/ld.so.cache",
    ] {
        let path = Path::new(dir);
        match std::fs::read_link(path) {
            Ok(target) => {
                command.arg("--symlink").arg(target).arg(path);
            }
            Err(_) if path.exists() => {
                command.arg("--ro-bind").arg(path).arg(path);
            }
            Err(_) => {}
        }
    }
    command.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
    command.args(argv);
    command
}

/// The same namespaces as rho's default confinement, entered by
/// `unshare`, which forks (so the command is PID 1 of its namespace) and
/// then runs it: nothing else of a confinement.
fn unshare_command() -> Command {
    let mut command = Command::new(UNSHARE);
    command.args([
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--mount",
        "--net",
        "--ipc",
        "--uts",
        "--cgroup",
        "/bin/true",
    ]);
    command
}

fn rho_command(launcher: &Launcher) -> Command {
    launcher
        .confine(&Command::new("/bin/true"), &Confinement::new())
        .expect("this kernel confines (see `rho-confine --rho-confine-probe`)")
        .into_command()
}

/// Runs `command` to its end; the time it took, in ms.
fn time(command: &mut Command) -> f64 {
    let started = Instant::now();
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("the command runs");
    let took = started.elapsed();
    assert!(status.success(), "{command:?} ended {status}");
    took.as_secs_f64() * 1000.0
}

pub(crate) fn run(config: &Config, report: &mut Report) {
    let name = "tokio";
    let embedded = Launcher::new(std::env::current_exe().expect("this binary's path"));
    let installed = Launcher::installed();
    if let Err(missing) = &installed {
        eprintln!("rho-bench: {missing}; the `rho-confine` figures are not measured");
    }
    let bwrap = Path::new(BWRAP).exists();
    if !bwrap {
        eprintln!(
            "rho-bench: {BWRAP} is missing, so the bubblewrap figures are not measured; \
             install Debian's package (`apt-get install bubblewrap`, or rho-bench/peers/install-bwrap.sh)"
        );
    }
    let unshare = Path::new(UNSHARE).exists();
    if !unshare {
        eprintln!(
            "rho-bench: {UNSHARE} is missing, so the namespaces' floor is not measured; \
             install util-linux"
        );
    }
    let mut samples: [Samples; 5] = Default::default();
    let mut ways = vec![Way::Plain, Way::Embedded];
    if installed.is_ok() {
        ways.push(Way::Rho);
    }
    if bwrap {
        ways.push(Way::Bwrap);
    }
    if unshare {
        ways.push(Way::Unshare);
    }
    // A warm-up of each, then the rounds.
    for round in 0..=config.confine_runs {
        ways.rotate_left(1);
        for &way in &ways {
            let took = match way {
                Way::Plain => time(&mut Command::new("/bin/true")),
                Way::Rho => time(&mut rho_command(installed.as_ref().expect("found"))),
                Way::Embedded => time(&mut rho_command(&embedded)),
                Way::Bwrap => time(&mut bwrap_command()),
                Way::Unshare => time(&mut unshare_command()),
            };
            if round > 0 {
                samples[way as usize].push(took);
            }
        }
    }
    let [
        mut plain,
        mut rho,
        mut embedded_samples,
        mut bwrapped,
        mut unshared,
    ] = samples;
    let plain_p50 = plain.percentile(50.0);
    let embedded_p50 = embedded_samples.percentile(50.0);
    report.info(name, "confine_true_plain_p50", plain_p50, "ms");
    report.info(name, "confine_true_embedded_p50", embedded_p50, "ms");
    report.info(
        name,
        "confine_embedded_added_p50",
        embedded_p50 - plain_p50,
        "ms",
    );
    if unshare {
        let floor = unshared.percentile(50.0);
        report.info(name, "confine_true_unshare_p50", floor, "ms");
        report.info(
            name,
            "confine_namespaces_added_p50",
            floor - plain_p50,
            "ms",
        );
    }
    let bwrap_p50 = bwrap.then(|| bwrapped.percentile(50.0));
    if let Some(bwrap_p50) = bwrap_p50 {
        report.info(name, "confine_true_bwrap_p50", bwrap_p50, "ms");
    }
    if installed.is_ok() {
        let rho_p50 = rho.percentile(50.0);
        report.info(name, "confine_true_rho_p50", rho_p50, "ms");
        report.info(name, "confine_true_rho_p99", rho.percentile(99.0), "ms");
        report.target(
            name,
            "confine_added_p50",
            rho_p50 - plain_p50,
            "ms",
            Target::AtMost(5.0),
        );
        if let Some(bwrap_p50) = bwrap_p50 {
            report.target(
                name,
                "confine_rho_over_bwrap_p50",
                rho_p50 / bwrap_p50,
                "x",
                Target::AtMost(1.0),
            );
        }
    }

    // A confined shell call through the runner.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::rt::WORKERS)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let runner =
        Runner::new(rho_exec_tokio::TokioExecutor::new(runtime.handle().clone()).expect("a timer"));
    let workspace = std::env::temp_dir().join(format!("rho-bench-shell-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).expect("a workspace");
    let launcher = installed.unwrap_or(embedded);
    let shell = Arc::new(ShellTool::new(&workspace).with_launcher(launcher));
    let mut calls = Samples::default();
    runtime.block_on(async {
        for i in 0..=config.confine_runs {
            let call = ToolCall::new(
                format!("c{i}"),
                "shell",
                serde_json::json!({ "command": "echo hi" }),
            );
            let started = Instant::now();
            let end = runner.start(call, shell.clone()).await;
            let took = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(end.result.text(), "hi\n", "{end:?}");
            if i > 0 {
                calls.push(took);
            }
        }
    });
    let _ = std::fs::remove_dir_all(&workspace);
    report.info(name, "confine_shell_echo_p50", calls.percentile(50.0), "ms");
    report.info(name, "confine_shell_echo_p99", calls.percentile(99.0), "ms");
}
