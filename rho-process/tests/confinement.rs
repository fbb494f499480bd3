//! The hostile catalogue: commands that try to get out of their
//! confinement, each run through rho's `Runner` on tokio and on smol
//! (`hostile::<scenario>::on_tokio`, `::on_smol`). Each ends with a
//! result that says what was denied, the host goes on, and nothing the
//! command started is left.
//!
//! CI runs as root, hosts as ordinary users: when these tests run as
//! root, `the_catalogue_passes_as_an_unprivileged_user` runs the whole
//! catalogue again as `nobody` (65534) from copies of the binaries, and
//! must pass too.

#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_process::confine::{Confinement, Limits, Network};
use rho_process::{ProcessTool, ShellTool};
use rho_tool_core::{CallEnd, Executor, Outcome, Runner, Tool, ToolCall};
use support::{Scratch, launcher};

/// A confined `/bin/bash -c script` whose workspace is `workspace`.
fn confined(
    name: &str,
    script: &str,
    workspace: &Scratch,
    confinement: Confinement,
) -> ProcessTool {
    ProcessTool::new(name, "/bin/bash")
        .with_args(["-c", script, name])
        .with_current_dir(workspace.path())
        .with_env("PATH", "/usr/bin:/bin")
        .with_timeout(support::NEVER)
        .with_confinement(confinement.with_workspace(workspace.path()))
        .with_launcher(launcher())
}

async fn run<E: Executor>(runner: &Runner<E>, tool: ProcessTool) -> CallEnd {
    let call = ToolCall::new("1", tool.name(), serde_json::json!({}));
    runner.start(call, Arc::new(tool)).await
}

/// Asserts the call failed with a text holding each of `needles`.
fn assert_failed_saying(end: &CallEnd, needles: &[&str]) {
    assert!(end.result.is_error, "the call should have failed: {end:?}");
    let text = end.result.text();
    for needle in needles {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

/// Waits until no process of this host has `marker` in its command line
/// (the command and everything it started are gone).
fn assert_no_process_with(marker: &str) {
    let since = Instant::now();
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
            .filter(|cmdline| cmdline.contains(marker))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            since.elapsed() < support::GONE_BOUND,
            "still running after {:?}: {left:?}",
            support::GONE_BOUND
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A marker unique to one test run.
fn marker(what: &str) -> String {
    format!("rho-marker-{what}-{}", std::process::id())
}

mod hostile {
    use super::*;

    crate::on_both_executors!(
        a_confined_command_reads_and_writes_its_workspace_and_nothing_else,
        a_fork_bomb_ends_at_the_deadline_and_leaves_nothing,
        the_processes_limit_holds_and_is_named,
        a_setsid_and_double_fork_escape_leaves_nothing_after_the_call,
        a_child_ignoring_sigterm_is_gone_at_the_deadline,
        secrets_outside_the_workspace_do_not_exist,
        writing_outside_the_workspace_is_denied,
        a_symlink_out_of_the_workspace_leads_nowhere,
        no_network_refuses_a_connect_to_the_hosts_loopback_server,
        loopback_is_its_own_and_works_inside,
        a_dns_lookup_fails_without_network,
        a_file_past_the_size_limit_names_the_limit,
        memory_past_the_limit_names_the_limit,
        ptrace_is_denied,
        unjudgeable_calls_are_not_implemented_beside_denied_ones,
        the_hosts_proc_and_signals_are_out_of_reach,
        limits_cannot_be_raised,
        no_namespace_can_be_nested,
        secret_looking_variables_do_not_pass_unless_named,
        a_descriptor_the_host_left_open_does_not_reach_the_command,
        the_shell_tool_runs_the_models_command_in_its_workspace,
        the_shell_tools_output_is_capped_and_its_tree_gone_at_the_deadline,
        the_rest_read_only_shows_the_hosts_tree_and_writes_nowhere_else,
        a_confined_process_that_crashes_is_still_crashed,
        what_cannot_be_enforced_is_refused_or_with_best_effort_named,
    );

    crate::on_both_executors!(
        a_denied_call_retried_with_a_grant_runs_once_approved_and_its_clock_starts_then,
        a_grant_the_gate_did_not_approve_is_refused,
        a_process_tools_grant_widens_its_confinement_and_never_reaches_the_child,
    );
    use super::asking_for_more::{
        a_denied_call_retried_with_a_grant_runs_once_approved_and_its_clock_starts_then,
        a_grant_the_gate_did_not_approve_is_refused,
        a_process_tools_grant_widens_its_confinement_and_never_reaches_the_child,
    };

    /// A confined process killed by a signal ends the call `Crashed`,
    /// naming the signal, as an unconfined one does: the launcher ends the
    /// way its command did.
    pub(super) async fn a_confined_process_that_crashes_is_still_crashed<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let script = "cat >/dev/null; echo 'about to crash' >&2; kill -SEGV $$";
        let end = run(
            &runner,
            confined("crasher", script, &workspace, Confinement::new()),
        )
        .await;
        assert_eq!(end.outcome, Outcome::Crashed, "{end:?}");
        assert_failed_saying(
            &end,
            &[
                "tool `crasher` crashed: its process was killed by signal SIGSEGV (11)",
                "about to crash",
            ],
        );
    }

    /// `Rest::ReadOnly`: the host's files are there to read, nothing is
    /// written outside the workspace, and the host's `/tmp` is not there.
    pub(super) async fn the_rest_read_only_shows_the_hosts_tree_and_writes_nowhere_else<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let host_tmp = Scratch::new("host-tmp");
        std::fs::write(host_tmp.path().join("left"), "host temp").expect("a file");
        let confinement = Confinement::new().with_rest(rho_process::confine::Rest::ReadOnly);
        let tool = ShellTool::new(workspace.path())
            .with_launcher(launcher())
            .with_confinement(confinement);
        let command = format!(
            "test -r /etc/hostname && echo readable; ls {0} 2>&1; echo x > /etc/rho-was-here; echo y > out && cat out",
            host_tmp.path().display()
        );
        let end = run_shell(&runner, tool, &command).await;
        let text = end.result.text();
        assert!(text.starts_with("readable\n"), "{text}");
        assert!(
            text.contains("No such file or directory"),
            "the host's /tmp is hidden: {text}"
        );
        assert!(
            text.contains("/etc/rho-was-here: Read-only file system"),
            "{text}"
        );
        assert!(text.contains("y\n"), "{text}");
        assert!(!Path::new("/etc/rho-was-here").exists());
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("out")).expect("written"),
            "y\n"
        );
    }

    /// A processes limit below 300 cannot be enforced for a host running
    /// as root (only `pid_max`, whose floor is 301, can bound it there):
    /// required, the call is refused before anything starts; best effort,
    /// it runs and its result names what was not enforced. For an
    /// ordinary user `RLIMIT_NPROC` enforces it, and nothing is named.
    pub(super) async fn what_cannot_be_enforced_is_refused_or_with_best_effort_named<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let limits = Limits {
            processes: Some(100),
            ..Limits::default()
        };
        let root = rustix::process::getuid().is_root();
        let script = "cat >/dev/null; echo '{\"text\": \"ran\"}'";
        let required = confined(
            "strict",
            script,
            &workspace,
            Confinement::new().with_limits(limits),
        );
        let end = run(&runner, required).await;
        if root {
            assert_failed_saying(
                &end,
                &[
                    "tool `strict` was not run: the confinement cannot be enforced on this system",
                    "below 300",
                ],
            );
        } else {
            assert_eq!(end.result.text(), "ran", "{end:?}");
        }
        let lenient = confined(
            "lenient",
            script,
            &workspace,
            Confinement::new().with_limits(limits).best_effort(),
        );
        let end = run(&runner, lenient).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        if root {
            assert_eq!(
                end.result.text(),
                "ran\n\nnot enforced on this system: the processes limit"
            );
        } else {
            assert_eq!(end.result.text(), "ran");
        }
    }

    fn shell(workspace: &Scratch) -> ShellTool {
        ShellTool::new(workspace.path()).with_launcher(launcher())
    }

    async fn run_shell<E: Executor>(runner: &Runner<E>, tool: ShellTool, command: &str) -> CallEnd {
        let call = ToolCall::new("1", "shell", serde_json::json!({ "command": command }));
        runner.start(call, Arc::new(tool)).await
    }

    /// The shell tool: one line to make, the command's output back, a
    /// failing command's exit code and stderr, a denial named.
    pub(super) async fn the_shell_tool_runs_the_models_command_in_its_workspace<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("shell");
        let end = run_shell(&runner, shell(&workspace), "echo hi > note; cat note; pwd").await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(
            end.result.text(),
            format!("hi\n{}\n", workspace.path().display())
        );

        let end = run_shell(&runner, shell(&workspace), "echo out; echo err >&2; exit 3").await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert!(
            end.result
                .text()
                .starts_with("[exit code 3]\nout\n[stderr]\nerr\n"),
            "{}",
            end.result.text()
        );

        let end = run_shell(&runner, shell(&workspace), "cat ~/.ssh/id_rsa /etc/shadow").await;
        assert_failed_saying(
            &end,
            &[
                "/etc/shadow: No such file or directory",
                "a path outside the confinement does not exist inside it",
            ],
        );
        let end = run_shell(&runner, shell(&workspace), "exec 3<>/dev/tcp/1.1.1.1/80").await;
        assert_failed_saying(
            &end,
            &[
                "Network is unreachable",
                "the network is not reachable from the confinement (network: none)",
            ],
        );

        let end = run_shell(&runner, shell(&workspace), "").await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        let end = runner
            .start(
                ToolCall::new("2", "shell", serde_json::json!({ "cmd": "ls" })),
                Arc::new(shell(&workspace)),
            )
            .await;
        assert_failed_saying(&end, &["needs a `command` string"]);
    }

    /// Output past the cap stops the command; a command still running at
    /// the deadline is gone with everything it started, `setsid` or not.
    pub(super) async fn the_shell_tools_output_is_capped_and_its_tree_gone_at_the_deadline<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("shell");
        let end = run_shell(&runner, shell(&workspace).with_max_output(1000), "yes").await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert!(
            end.result
                .text()
                .contains("wrote more than 1000 bytes to stdout: it was stopped there"),
            "{}",
            end.result.text()
        );

        let marker = marker("shell");
        let tool = shell(&workspace).with_timeout(Duration::from_secs(1));
        let end = run_shell(
            &runner,
            tool,
            &format!("setsid bash -c 'exec -a {marker} sleep 300' & sleep 300"),
        )
        .await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        assert_no_process_with(&marker);
    }

    /// The baseline: the workspace is the working directory, readable and
    /// writable; the system's programs run; the answer arrives.
    pub(super) async fn a_confined_command_reads_and_writes_its_workspace_and_nothing_else<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        std::fs::write(workspace.path().join("input.txt"), "from the host").expect("a file");
        let tool = confined(
            "baseline",
            r#"cat >/dev/null; echo "$(cat input.txt), $(pwd)" > output.txt; echo scratch > /tmp/s; printf '{"text": "%s"}' "$(cat output.txt) $(cat /tmp/s)""#,
            &workspace,
            Confinement::new(),
        );
        let end = run(&runner, tool).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(
            end.result.text(),
            format!("from the host, {} scratch", workspace.path().display())
        );
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("output.txt")).expect("written"),
            format!("from the host, {}\n", workspace.path().display())
        );
    }

    /// A fork bomb: the call ends at its deadline, the host is untouched,
    /// and every process of it is gone.
    pub(super) async fn a_fork_bomb_ends_at_the_deadline_and_leaves_nothing<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("bomb");
        let marker = marker("bomb");
        let limits = Limits {
            processes: Some(400),
            ..Limits::default()
        };
        let tool = ProcessTool::new("bomb", "/bin/bash")
            .with_args(["-c", "bomb() { bomb | bomb & }; bomb; sleep 60", &marker])
            .with_env("PATH", "/usr/bin:/bin")
            .with_timeout(Duration::from_secs(3))
            .with_confinement(
                Confinement::new()
                    .with_workspace(workspace.path())
                    .with_limits(limits),
            )
            .with_launcher(launcher());
        let started = Instant::now();
        let end = run(&runner, tool).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        assert_no_process_with(&marker);
    }

    /// Forks past the processes limit fail, and the result names the limit.
    pub(super) async fn the_processes_limit_holds_and_is_named<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("forks");
        let marker = marker("forks");
        let limits = Limits {
            processes: Some(400),
            ..Limits::default()
        };
        let script = format!(
            r#"cat >/dev/null; exec -a {marker} perl -e '
  for my $n (0..600) {{
    my $pid = fork();
    if (!defined $pid) {{ print STDERR "fork failed after $n: $!\n"; exit 1 }}
    if ($pid == 0) {{ sleep 30; exit 0 }}
  }}
  print "{{\"text\": \"600 forks\"}}"'"#
        );
        let end = run(
            &runner,
            confined(
                "forks",
                &script,
                &workspace,
                Confinement::new().with_limits(limits),
            ),
        )
        .await;
        assert_failed_saying(
            &end,
            &[
                "fork failed after",
                "Resource temporarily unavailable",
                "the processes limit (400) was likely reached",
            ],
        );
        let text = end.result.text();
        let forked: u32 = text
            .split("fork failed after ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .expect("the count of forks");
        assert!(forked < 400, "{forked} forks passed a limit of 400");
        assert_no_process_with(&marker);
    }

    /// `setsid` and a double fork leave the process group rho kills; the
    /// PID namespace still ends them with the call.
    pub(super) async fn a_setsid_and_double_fork_escape_leaves_nothing_after_the_call<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("escape");
        let marker = marker("escape");
        let script = format!(
            r#"cat >/dev/null; (setsid bash -c 'exec -a {marker} sleep 300' &); (bash -c 'exec -a {marker} sleep 300' &) ; sleep 0.2; echo '{{"text": "escaped?"}}'"#
        );
        let tool = confined("escape", &script, &workspace, Confinement::new());
        let end = run(&runner, tool).await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_no_process_with(&marker);
    }

    /// A child that ignores `SIGTERM`, in a session of its own, never
    /// ending: gone at the deadline.
    pub(super) async fn a_child_ignoring_sigterm_is_gone_at_the_deadline<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("term");
        let marker = marker("term");
        let tool = ProcessTool::new("stubborn", "/bin/bash")
            .with_args([
                "-c",
                &format!("trap '' TERM; setsid bash -c \"trap '' TERM; exec -a {marker} sleep 300\" & wait"),
                "stubborn",
            ])
            .with_env("PATH", "/usr/bin:/bin")
            .with_timeout(Duration::from_secs(1))
            .with_confinement(Confinement::new().with_workspace(workspace.path()))
            .with_launcher(launcher());
        let end = run(&runner, tool).await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        assert_no_process_with(&marker);
    }

    /// `~/.ssh/id_*` of a home outside the workspace and `/etc/shadow`
    /// do not exist inside; their contents never reach the result.
    pub(super) async fn secrets_outside_the_workspace_do_not_exist<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let home = Scratch::new("home");
        std::fs::create_dir_all(home.path().join(".ssh")).expect("a .ssh");
        std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY MATERIAL").expect("a key");
        let script = format!("cat {}/.ssh/id_* /etc/shadow", home.path().display());
        let end = run(
            &runner,
            confined("secrets", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_failed_saying(
            &end,
            &[
                "No such file or directory",
                "/etc/shadow",
                "confined: writable",
            ],
        );
        assert!(!end.result.text().contains("PRIVATE KEY MATERIAL"));
    }

    /// A write outside the workspace: to the system directories (read-only)
    /// and to a host directory beside the workspace (which does not exist
    /// inside). Nothing appears on the host.
    pub(super) async fn writing_outside_the_workspace_is_denied<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let beside = Scratch::new("beside");
        let script = format!(
            "echo x > /usr/rho-was-here; echo x > {}/rho-was-here; exit 1",
            beside.path().display()
        );
        let end = run(
            &runner,
            confined("writer", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_failed_saying(
            &end,
            &[
                "Read-only file system",
                "access outside what the confinement allows was denied",
            ],
        );
        assert!(!Path::new("/usr/rho-was-here").exists());
        assert!(!beside.path().join("rho-was-here").exists());
    }

    /// A symlink inside the workspace pointing out of it leads to a path
    /// that does not exist inside: neither read nor written through.
    pub(super) async fn a_symlink_out_of_the_workspace_leads_nowhere<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let outside = Scratch::new("outside");
        std::fs::write(outside.path().join("secret"), "OUTSIDE SECRET").expect("a file");
        std::os::unix::fs::symlink(outside.path(), workspace.path().join("link")).expect("a link");
        let link = workspace.path().join("link");
        let script = format!(
            "cat {0}/secret; echo x > {0}/planted; exit 1",
            link.display()
        );
        let end = run(
            &runner,
            confined("linker", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_failed_saying(&end, &["No such file or directory"]);
        assert!(!end.result.text().contains("OUTSIDE SECRET"));
        assert!(!outside.path().join("planted").exists());
    }

    /// A server the test listens with on the host's loopback: without
    /// network, a connect fails as unreachable.
    pub(super) async fn no_network_refuses_a_connect_to_the_hosts_loopback_server<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
        let port = server.local_addr().expect("an address").port();
        let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
        let end = run(
            &runner,
            confined("connect", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_failed_saying(&end, &["Network is unreachable", "network: none"]);
        // The same command unconfined reaches it: the test's server is real.
        let plain = ProcessTool::new("connect", "/bin/bash").with_args([
            "-c",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port}; echo '{{\"text\": \"connected\"}}'"),
        ]);
        let end = run(&runner, plain).await;
        assert_eq!(end.result.text(), "connected", "{end:?}");
    }

    /// With `Network::Loopback` the command has a loopback of its own: a
    /// server it starts answers it; the host's loopback servers are another
    /// namespace's and refuse.
    pub(super) async fn loopback_is_its_own_and_works_inside<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let host_server = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
        let host_port = host_server.local_addr().expect("an address").port();
        let script = format!(
            r#"cat >/dev/null
perl -MIO::Socket::INET -e '
  my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:7777", ReuseAddr => 1) or die "listen: $!";
  if (fork() == 0) {{ my $c = IO::Socket::INET->new("127.0.0.1:7777") or die "connect: $!"; print $c "ping\n"; exit 0 }}
  my $a = $s->accept; my $line = <$a>; chomp $line;
  my $host = IO::Socket::INET->new(PeerAddr => "127.0.0.1:{host_port}", Timeout => 5);
  printf("{{\"text\": \"%s; host: %s\"}}", $line, $host ? "reached" : "$!");
'"#
        );
        let confinement = Confinement::new().with_network(Network::Loopback);
        let end = run(
            &runner,
            confined("loopback", &script, &workspace, confinement),
        )
        .await;
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        assert_eq!(end.result.text(), "ping; host: Connection refused");
    }

    /// A name lookup without network fails.
    pub(super) async fn a_dns_lookup_fails_without_network<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let end = run(
            &runner,
            confined(
                "dns",
                "getent hosts example.com || { echo 'lookup failed' >&2; exit 2; }",
                &workspace,
                Confinement::new(),
            ),
        )
        .await;
        assert_failed_saying(
            &end,
            &["exited with code 2", "lookup failed", "network none"],
        );
    }

    /// A file written past the size limit: the writer is killed by
    /// `SIGXFSZ` and the result names the limit.
    pub(super) async fn a_file_past_the_size_limit_names_the_limit<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let limits = Limits {
            file_size: Some(1 << 20),
            ..Limits::default()
        };
        let end = run(
            &runner,
            confined(
                "big",
                "exec head -c 2000000 /dev/zero > big",
                &workspace,
                Confinement::new().with_limits(limits),
            ),
        )
        .await;
        assert_eq!(end.outcome, Outcome::Failed, "{end:?}");
        assert_failed_saying(
            &end,
            &[
                "stopped by its confinement: the file size limit (1 MiB) was reached",
                "SIGXFSZ",
            ],
        );
        let written = std::fs::metadata(workspace.path().join("big"))
            .expect("the file")
            .len();
        assert_eq!(written, 1 << 20);
    }

    /// An allocation past the memory limit fails and the result names the
    /// limit.
    pub(super) async fn memory_past_the_limit_names_the_limit<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let limits = Limits {
            memory: Some(64 << 20),
            ..Limits::default()
        };
        let end = run(
            &runner,
            confined(
                "hungry",
                r#"exec perl -e '$x = "a" x (256 * 1024 * 1024); print "{\"text\": \"fed\"}"'"#,
                &workspace,
                Confinement::new().with_limits(limits),
            ),
        )
        .await;
        assert_failed_saying(&end, &["memory limit (64 MiB)"]);
    }

    /// `ptrace` of another process (its own init): not permitted.
    pub(super) async fn ptrace_is_denied<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let script = format!(
            r#"perl -e 'syscall({}, 16, 1, 0, 0) == -1 or exit 0; print STDERR "ptrace: $!\n"; exit 1'"#,
            libc::SYS_ptrace
        );
        let end = run(
            &runner,
            confined("tracer", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_failed_saying(&end, &["ptrace: Operation not permitted"]);
    }

    /// Calls a filter cannot judge answer "not implemented" (so C
    /// libraries fall back to ones it can): `clone3`, io_uring, and on
    /// x86_64 any call by its x32 number; the same filter denies `ptrace`
    /// with "not permitted", and lets an ordinary call through.
    pub(super) async fn unjudgeable_calls_are_not_implemented_beside_denied_ones<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let mut calls = vec![
            ("clone3", libc::SYS_clone3),
            ("io_uring_setup", libc::SYS_io_uring_setup),
        ];
        if cfg!(target_arch = "x86_64") {
            calls.push(("x32 getpid", 0x4000_0000 | libc::SYS_getpid));
        }
        let mut script = String::from("perl -e '");
        for (name, number) in &calls {
            script.push_str(&format!(
                r#"syscall({number}, 0, 0, 0, 0); print STDERR "{name}: $!\n"; "#
            ));
        }
        script.push_str(&format!(
            r#"syscall({}, 16, 1, 0, 0); print STDERR "ptrace: $!\n"; "#,
            libc::SYS_ptrace
        ));
        script.push_str(&format!(
            r#"print STDERR "getpid: ", syscall({}), "\n"; exit 1'"#,
            libc::SYS_getpid
        ));
        let end = run(
            &runner,
            confined("caller", &script, &workspace, Confinement::new()),
        )
        .await;
        let mut expected: Vec<String> = calls
            .iter()
            .map(|(name, _)| format!("{name}: Function not implemented"))
            .collect();
        expected.push("ptrace: Operation not permitted".into());
        // PID 2: the command, below its init, in its own PID namespace.
        expected.push("getpid: 2".into());
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        assert_failed_saying(&end, &expected);
    }

    /// The host's `/proc/<pid>/environ` does not exist inside, and a
    /// signal to the host's pid reaches no one: the host lives on.
    pub(super) async fn the_hosts_proc_and_signals_are_out_of_reach<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let host = std::process::id();
        let script = format!("cat /proc/{host}/environ; kill -KILL {host}; kill -TERM 1; exit 1");
        let end = run(
            &runner,
            confined("signaller", &script, &workspace, Confinement::new()),
        )
        .await;
        assert_failed_saying(
            &end,
            &[&format!("/proc/{host}/environ: No such file or directory")],
        );
        let text = end.result.text();
        assert!(
            text.contains("No such process") || text.contains("Operation not permitted"),
            "{text}"
        );
        // Still here, and the runner still runs calls.
        let again = run(
            &runner,
            confined(
                "after",
                "cat >/dev/null; echo '{\"text\": \"alive\"}'",
                &workspace,
                Confinement::new(),
            ),
        )
        .await;
        assert_eq!(again.result.text(), "alive");
    }

    /// A hard limit cannot be raised from inside, not even to a value the
    /// host itself could set.
    pub(super) async fn limits_cannot_be_raised<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let limits = Limits {
            open_files: Some(64),
            ..Limits::default()
        };
        let end = run(
            &runner,
            confined(
                "raiser",
                "ulimit -Hn 128",
                &workspace,
                Confinement::new().with_limits(limits),
            ),
        )
        .await;
        assert_failed_saying(
            &end,
            &["open files: cannot modify limit: Operation not permitted"],
        );
    }

    /// No new namespace inside the confinement (a way out of its rules).
    pub(super) async fn no_namespace_can_be_nested<E: Executor>(runner: Runner<E>) {
        let workspace = Scratch::new("ws");
        let end = run(
            &runner,
            confined(
                "nester",
                "unshare -U -r true",
                &workspace,
                Confinement::new(),
            ),
        )
        .await;
        assert_failed_saying(&end, &["unshare", "Operation not permitted"]);
    }

    /// The host's secret-looking variables stay out even when the tool
    /// inherits the host's environment, unless named. (The unprivileged
    /// run gives the host `RHO_TEST_SESSION_TOKEN`; every run has the
    /// tool's own.)
    pub(super) async fn secret_looking_variables_do_not_pass_unless_named<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let script = r#"cat >/dev/null; printf '{"text": "%s|%s|%s"}' "${RHO_TEST_SESSION_TOKEN:-absent}" "$RHO_TEST_PLAIN" "$RHO_TEST_API_KEY""#;
        let tool = ProcessTool::new("env", "/bin/bash")
            .with_args(["-c", script])
            .inherit_env()
            .with_env("RHO_TEST_PLAIN", "plain")
            .with_env("RHO_TEST_API_KEY", "named by the tool")
            .with_confinement(Confinement::new().with_workspace(workspace.path()))
            .with_launcher(launcher());
        let end = run(&runner, tool).await;
        assert_eq!(
            end.result.text(),
            "absent|plain|named by the tool",
            "{end:?}"
        );
    }

    /// A descriptor the host holds without close-on-exec (a jobserver's
    /// pipe, a socket a service manager handed down) does not reach the
    /// confined command: it holds stdin, stdout and stderr and nothing
    /// else, and what it tries to write to the host's pipe never arrives.
    pub(super) async fn a_descriptor_the_host_left_open_does_not_reach_the_command<E: Executor>(
        runner: Runner<E>,
    ) {
        use rustix::io::{Errno, FdFlags};
        let workspace = Scratch::new("ws");
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("a pipe");
        // High, so that no descriptor the command opens itself takes its
        // number; then without close-on-exec, as a careless host leaves one.
        let open = rustix::io::fcntl_dupfd_cloexec(&write, 400).expect("a second descriptor");
        rustix::io::fcntl_setfd(&open, FdFlags::empty()).expect("close-on-exec cleared");
        drop(write);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&open);
        let script = format!(
            r#"cat >/dev/null
if [ -e /proc/self/fd/{fd} ]; then echo leaked >&{fd}; held="{fd} held"; else held="{fd} not held"; fi
printf '{{"text": "%s; ls holds: %s"}}' "$held" "$(ls /proc/self/fd | sort -n | tr '\n' ' ')""#
        );
        let end = run(
            &runner,
            confined("inherit", &script, &workspace, Confinement::new()),
        )
        .await;
        drop(open);
        assert_eq!(
            end.result.text(),
            format!("{fd} not held; ls holds: 0 1 2 3 "),
            "{end:?}"
        );
        // Other tests of this binary may start processes while the
        // descriptor is open, and they inherit it: read without waiting.
        rustix::fs::fcntl_setfl(&read, rustix::fs::OFlags::NONBLOCK).expect("non-blocking");
        let mut buffer = [0u8; 64];
        match rustix::io::read(&read, &mut buffer) {
            Ok(0) | Err(Errno::AGAIN) => {}
            Ok(n) => panic!(
                "the command wrote to the host's pipe: {:?}",
                String::from_utf8_lossy(&buffer[..n])
            ),
            Err(error) => panic!("reading the pipe: {error}"),
        }
    }
}

/// When the tests run as root, the catalogue again as `nobody`: copies of
/// this test binary and the launcher in a directory that user can read,
/// run with its user and group ids, must pass. (Run as an ordinary user,
/// the catalogue above already was.)
#[test]
fn the_catalogue_passes_as_an_unprivileged_user() {
    support::rerun_as_nobody("hostile::", env!("CARGO_BIN_EXE_rho-confine"));
}

mod asking_for_more {
    use std::sync::Mutex;

    use rho_process::confine::Grants;
    use rho_tool_core::{AllowAll, ApprovalRequest, Verdict};

    use super::*;

    /// An approver that records what it was asked and answers `verdict`
    /// after `wait`.
    fn approver(
        asked: Arc<Mutex<Vec<String>>>,
        wait: Duration,
        verdict: Verdict,
    ) -> Arc<dyn rho_tool_core::Approver> {
        Arc::new(move |request: ApprovalRequest| {
            let asked = asked.clone();
            let verdict = verdict.clone();
            async move {
                asked
                    .lock()
                    .expect("not poisoned")
                    .push(request.reason.clone());
                std::thread::sleep(wait);
                verdict
            }
        })
    }

    /// The denied write, the retry with a grant naming the path: the
    /// approver is asked exactly that, takes longer than the command's
    /// whole timeout, and the retry still runs (its clock starts at the
    /// approval) and writes on the host.
    pub(crate) async fn a_denied_call_retried_with_a_grant_runs_once_approved_and_its_clock_starts_then<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let beside = Scratch::new("beside");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let approve = approver(asked.clone(), Duration::from_millis(1500), Verdict::Allow);
        let grants = Grants::new(approve.clone());
        let runner = runner
            .with_gate(Arc::new(grants.gate(AllowAll)))
            .with_approver(approve);
        let shell = Arc::new(
            ShellTool::new(workspace.path())
                .with_launcher(launcher())
                .with_timeout(Duration::from_secs(1))
                .with_grants(&grants),
        );
        let target = beside.path().join("note");
        let command = format!("echo hi > {}", target.display());

        let denied = runner
            .start(
                ToolCall::new("1", "shell", serde_json::json!({ "command": command })),
                shell.clone(),
            )
            .await;
        assert_failed_saying(
            &denied,
            &["No such file or directory", "call again with a `grant`"],
        );
        assert!(asked.lock().expect("not poisoned").is_empty());

        let grant = serde_json::json!({ "write": [beside.path()] });
        let retried = runner
            .start(
                ToolCall::new(
                    "2",
                    "shell",
                    serde_json::json!({ "command": command, "grant": grant }),
                ),
                shell.clone(),
            )
            .await;
        assert_eq!(retried.outcome, Outcome::Succeeded, "{retried:?}");
        assert_eq!(std::fs::read_to_string(&target).expect("written"), "hi\n");
        assert_eq!(
            *asked.lock().expect("not poisoned"),
            [format!(
                "`shell` asks for more than its confinement allows: write {}",
                beside.path().display()
            )]
        );
        assert!(retried.waited >= Duration::from_millis(1500), "{retried:?}");
        assert!(
            retried.ran.expect("it ran") < Duration::from_secs(1),
            "{retried:?}"
        );
    }

    /// A grant the approver denies ends the call with its reason; a grant
    /// given to a runner whose gate does not ask is refused by the tool.
    pub(crate) async fn a_grant_the_gate_did_not_approve_is_refused<E: Executor>(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let beside = Scratch::new("beside");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let deny = approver(asked.clone(), Duration::ZERO, Verdict::deny("not today"));
        let grants = Grants::new(deny.clone());
        let shell = Arc::new(
            ShellTool::new(workspace.path())
                .with_launcher(launcher())
                .with_grants(&grants),
        );
        let target = beside.path().join("note");
        let arguments = serde_json::json!({
            "command": format!("echo hi > {}", target.display()),
            "grant": { "write": [beside.path()], "network": "full" },
        });

        let gated = runner
            .clone()
            .with_gate(Arc::new(grants.gate(AllowAll)))
            .with_approver(deny);
        let end = gated
            .start(
                ToolCall::new("1", "shell", arguments.clone()),
                shell.clone(),
            )
            .await;
        assert_failed_saying(&end, &["more access was not approved: not today"]);
        assert!(asked.lock().expect("not poisoned")[0].ends_with("; the network (full)"));

        // No grant gate: the model cannot grant itself more.
        let end = runner
            .start(ToolCall::new("2", "shell", arguments), shell)
            .await;
        assert_failed_saying(&end, &["was not approved by the host's gate for this call"]);
        assert!(!target.exists());
    }

    /// A `ProcessTool` takes grants the same way; the child reads its
    /// arguments without the grant.
    pub(crate) async fn a_process_tools_grant_widens_its_confinement_and_never_reaches_the_child<
        E: Executor,
    >(
        runner: Runner<E>,
    ) {
        let workspace = Scratch::new("ws");
        let beside = Scratch::new("beside");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let approve = approver(asked.clone(), Duration::ZERO, Verdict::Allow);
        let grants = Grants::new(approve.clone());
        let runner = runner
            .with_gate(Arc::new(grants.gate(AllowAll)))
            .with_approver(approve);
        let target = beside.path().join("args.json");
        let script = format!(
            r#"cat > {} || exit 1; echo '{{"text": "saved"}}'"#,
            target.display()
        );
        let tool = Arc::new(
            confined("saver", &script, &workspace, Confinement::new()).with_grants(&grants),
        );
        assert!(tool.parameters()["properties"]["grant"].is_object());
        let denied = runner
            .start(
                ToolCall::new("1", "saver", serde_json::json!({ "n": 1 })),
                tool.clone(),
            )
            .await;
        assert_failed_saying(&denied, &["call again with a `grant`"]);
        let arguments = serde_json::json!({ "n": 2, "grant": { "write": [beside.path()] } });
        let end = runner
            .start(ToolCall::new("2", "saver", arguments), tool)
            .await;
        assert_eq!(end.result.text(), "saved", "{end:?}");
        assert_eq!(
            std::fs::read_to_string(&target).expect("written"),
            "{\"n\":2}\n"
        );
        assert_eq!(asked.lock().expect("not poisoned").len(), 1);
    }
}
