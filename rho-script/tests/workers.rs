//! What only the worker-process mode can survive: a worker that dies mid
//! call (a signal, as an engine bug would end it), one killed from
//! outside, one that writes garbage or an endless line, one that never
//! stops, one that cannot start. Each ends its call with one clear result
//! while the host goes on; the behaviour shared with the in-process mode
//! is tested in both modes by the other test files.
//!
//! Workers that misbehave are stand-ins written in `sh`; the real worker
//! is this crate's `rho-script-worker`, started through a `sh` wrapper
//! that writes its pid to a file first, so a test can kill exactly its
//! own worker.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_script::{
    Isolation, PoolOptions, ScriptDefinition, ScriptLimits, ScriptOptions, ScriptPool,
    ScriptSource, ScriptTool, WorkerCommand,
};
use rho_tool_core::untrusted::Limits;
use rho_tool_core::{Executor, Outcome, Runner, ToolCall};
use rho_turn::TurnRunner;
use serde_json::json;
use support::{NEVER, STOP_BOUND, call, script};

macro_rules! on_both_executors_alone {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn on_tokio() {
                $crate::support::on_tokio(|runner, _pool| super::$scenario(runner));
            }

            #[test]
            fn on_smol() {
                $crate::support::on_smol(|runner, _pool| super::$scenario(runner));
            }
        }
    )*};
}

on_both_executors_alone!(
    a_worker_killed_mid_call_crashes_the_call_and_the_next_gets_a_fresh_worker,
    a_worker_that_keeps_dying_is_quarantined_like_any_crashing_tool,
    a_worker_that_writes_garbage_is_killed_and_the_call_crashes_saying_so,
    an_endless_line_is_cut_at_its_bound_and_the_worker_killed,
    a_worker_that_does_not_stop_is_killed_whole,
    a_worker_that_cannot_start_crashes_the_call_at_once,
    a_program_that_is_not_a_worker_crashes_the_call_saying_so,
    a_program_that_never_greets_crashes_the_call_after_its_wait,
    dropping_the_pool_ends_its_workers,
    a_worker_runs_confined_by_default,
);

const WORKER: &str = env!("CARGO_BIN_EXE_rho-script-worker");

/// A pool of one thread whose worker is `command`.
fn pool_of(command: WorkerCommand) -> ScriptPool {
    ScriptPool::with_options(
        PoolOptions::new(1).with_isolation(Isolation::WorkerProcesses(command)),
    )
    .expect("a script thread")
}

/// A stand-in program: `sh -c script`.
fn sh(script: &str) -> WorkerCommand {
    // Not a worker program, so not a launcher either: unconfined.
    WorkerCommand::new("/bin/sh")
        .with_arg("-c")
        .with_arg(script)
        .unconfined()
}

/// The first line a worker of this version writes.
fn greeting() -> String {
    format!(
        r#"{{"ready":{{"worker":"rho-script","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// A stand-in worker: greets as a real worker does, then `sh -c script`.
fn sh_worker(script: &str) -> WorkerCommand {
    sh(&format!("echo '{}'; {script}", greeting()))
}

/// A file name of this test's own, in the target's temporary folder.
fn pid_file(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    dir.join(format!(
        "{test}-{}-{:?}.pid",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// The real worker, which writes its pid to `file` first.
fn real_worker_telling_its_pid(file: &std::path::Path) -> WorkerCommand {
    sh(r#"echo $$ > "$0"; exec "$1""#)
        .with_arg(file)
        .with_arg(WORKER)
}

/// The pid written to `file`, once it is there.
fn read_pid(file: &std::path::Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            started.elapsed() < STOP_BOUND,
            "no pid in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn wait_gone(pid: i32) {
    let started = Instant::now();
    while alive(pid) {
        assert!(
            started.elapsed() < STOP_BOUND,
            "process {pid} is still alive"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill(pid: i32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

async fn a_worker_killed_mid_call_crashes_the_call_and_the_next_gets_a_fresh_worker<E: Executor>(
    runner: Runner<E>,
) {
    let file = pid_file("killed");
    let pool = pool_of(real_worker_telling_its_pid(&file));
    let spin = script(&pool, "spin", "function run() { for (;;) {} }", NEVER);
    let call_started = Instant::now();
    let killer = {
        let file = file.clone();
        std::thread::spawn(move || {
            let pid = read_pid(&file);
            std::thread::sleep(Duration::from_millis(200));
            kill(pid);
            pid
        })
    };
    let end = call(&runner, &spin, json!({})).await;
    let first = killer.join().expect("the killer thread");
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result.text().starts_with(
            "tool `spin` crashed: its worker process was killed by signal SIGKILL (9) while it ran the script"
        ),
        "{}",
        end.result.text()
    );
    assert!(
        call_started.elapsed() < NEVER / 2,
        "ended by the death, not the timeout"
    );
    // The next call starts a fresh worker, and answers.
    std::fs::remove_file(&file).expect("the pid file");
    let fine = script(
        &pool,
        "fine",
        "function run({ n }) { return n * 2; }",
        NEVER,
    );
    let end = call(&runner, &fine, json!({ "n": 21 })).await;
    assert_eq!(end.result.text(), "42", "{end:?}");
    assert_ne!(read_pid(&file), first);
    let _ = std::fs::remove_file(&file);
}

async fn a_worker_that_keeps_dying_is_quarantined_like_any_crashing_tool<E: Executor>(
    runner: Runner<E>,
) {
    // Dies as an engine bug would: an abort, after a word on stderr.
    let pool = pool_of(sh_worker(
        "read job; echo 'engine: assertion failed' >&2; kill -ABRT $$",
    ));
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::after(2)));
    let scripts = ScriptSource::builder("agent", &pool)
        .with_policy(accounting.clone())
        .register(&registry)
        .expect("a new source");
    // The definition's check also runs in the worker, which dies: the
    // definition is refused, saying why.
    let refused = scripts
        .define(ScriptDefinition::new(
            "doomed",
            "never gets to run",
            json!({ "type": "object" }),
            "function run() { return 1; }",
        ))
        .await
        .expect_err("the check crashed");
    assert!(refused.to_string().contains("SIGABRT"), "{refused}");

    let tool = Arc::new(ScriptTool::new(
        "doomed",
        "dies",
        "function run() { return 1; }",
        &pool,
    ));
    let source = registry
        .add_source(rho_registry::Source::untrusted("direct").with_policy(accounting.clone()));
    source.expect("a new source").add(tool).expect("a new tool");
    let turns = TurnRunner::new(runner, registry);
    for round in 0..2 {
        let entries = turns
            .turn([ToolCall::new(format!("c{round}"), "doomed", json!({}))])
            .await;
        assert_eq!(
            entries[0].outcome,
            Outcome::Crashed,
            "{}",
            entries[0].text()
        );
        let text = entries[0].text();
        assert!(text.contains("was killed by signal SIGABRT (6)"), "{text}");
        assert!(text.contains("engine: assertion failed"), "{text}");
    }
    let entries = turns.turn([ToolCall::new("c2", "doomed", json!({}))]).await;
    assert_eq!(
        entries[0].outcome,
        Outcome::Refused,
        "{}",
        entries[0].text()
    );
    assert!(
        accounting
            .tool_health("doomed")
            .is_some_and(|health| health.quarantine.is_some())
    );
}

async fn a_worker_that_writes_garbage_is_killed_and_the_call_crashes_saying_so<E: Executor>(
    runner: Runner<E>,
) {
    let file = pid_file("garbage");
    let pool = pool_of(
        sh_worker(r#"echo $$ > "$0"; read job; echo 'this is not a message'; sleep 1000"#)
            .with_arg(&file),
    );
    let tool = script(&pool, "garbled", "function run() { return 1; }", NEVER);
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result
            .text()
            .contains("it wrote a line that is not JSON"),
        "{}",
        end.result.text()
    );
    assert!(started.elapsed() < STOP_BOUND);
    wait_gone(read_pid(&file));
    let _ = std::fs::remove_file(&file);
}

async fn an_endless_line_is_cut_at_its_bound_and_the_worker_killed<E: Executor>(runner: Runner<E>) {
    let pool = pool_of(sh_worker(
        "read job; head -c 100000000 /dev/zero | tr '\\0' x",
    ));
    let tool = Arc::new(
        ScriptTool::new("endless", "floods", "function run() { return 1; }", &pool).with_options(
            ScriptOptions::new().with_timeout(NEVER).with_limits(
                ScriptLimits::default()
                    .with_memory(1 << 20)
                    .with_answer(Limits::default().with_max_bytes(1 << 20)),
            ),
        ),
    );
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result.text().contains("it wrote a line longer than"),
        "{}",
        end.result.text()
    );
}

async fn a_worker_that_does_not_stop_is_killed_whole<E: Executor>(runner: Runner<E>) {
    let file = pid_file("stuck");
    // Ignores every message after the job, and has a child of its own.
    let pool = pool_of(sh_worker(r#"read job; sleep 1000 & echo $! > "$0"; wait"#).with_arg(&file));
    let tool = script(
        &pool,
        "stuck",
        "function run() { return 1; }",
        Duration::from_millis(200),
    );
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::TimedOut, "{}", end.result.text());
    assert!(started.elapsed() < STOP_BOUND);
    // Told to stop, it did not answer: killed with everything it started.
    wait_gone(read_pid(&file));
    let _ = std::fs::remove_file(&file);
}

async fn a_worker_that_cannot_start_crashes_the_call_at_once<E: Executor>(runner: Runner<E>) {
    let pool = pool_of(WorkerCommand::new("/nonexistent/rho-script-worker"));
    let tool = script(&pool, "orphan", "function run() { return 1; }", NEVER);
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    assert_eq!(end.outcome, Outcome::Crashed, "{}", end.result.text());
    assert!(
        end.result.text().starts_with(
            "tool `orphan` crashed: its worker process `/nonexistent/rho-script-worker` could not be started"
        ),
        "{}",
        end.result.text()
    );
    assert!(started.elapsed() < STOP_BOUND);
}

/// A program that is not a worker of this version (a host that did not
/// call `serve_if_worker` first thing, a worker of another version) is
/// told apart by its first line, and each call says so and what to do.
async fn a_program_that_is_not_a_worker_crashes_the_call_saying_so<E: Executor>(runner: Runner<E>) {
    let programs = [
        (
            sh("echo 'usage: host [options]'; sleep 1000"),
            r#"its first line on stdout was not a rho-script worker's greeting but "usage: host [options]""#,
        ),
        // Its stdout ends with it, unless another process holds the pipe
        // (one of this test binary's, started at the same moment, may):
        // then its exit tells.
        (
            sh("echo 'unknown argument' >&2; exit 2"),
            "its stdout ended before it said it is a rho-script worker|it exited with code 2 before it said it is a rho-script worker",
        ),
        // A process outside its group (here one it left in a session of
        // its own, for a few seconds) holds its stdout open: its exit
        // still tells, at once rather than at the end of the wait for a
        // greeting.
        (
            sh("echo 'unknown argument' >&2; setsid sleep 6 2>/dev/null & sleep 0.3; exit 2"),
            "it exited with code 2 before it said it is a rho-script worker",
        ),
        (
            sh(r#"echo '{"ready":{"worker":"rho-script","version":"0.0.1-other"}}'; read job"#),
            "it is the worker of rho-script 0.0.1-other, and this host runs rho-script",
        ),
    ];
    for (program, why) in programs {
        let pool = pool_of(program);
        let tool = script(&pool, "fine", "function run() { return 1; }", NEVER);
        let started = Instant::now();
        let end = call(&runner, &tool, json!({})).await;
        let text = end.result.text();
        assert_eq!(end.outcome, Outcome::Crashed, "{text}");
        assert!(
            text.starts_with(
                "tool `fine` crashed: its worker process `/bin/sh` is not a rho-script worker of this host's version: "
            ),
            "{text}"
        );
        assert!(why.split('|').any(|why| text.contains(why)), "{text}");
        assert!(
            text.contains("call `rho_script::worker::serve_if_worker()` first thing in `main`"),
            "{text}"
        );
        assert!(started.elapsed() < STOP_BOUND, "{:?}", started.elapsed());
    }
    // Its stderr is in the text, as for a worker that dies.
    let pool = pool_of(sh("echo 'unknown argument' >&2; exit 2"));
    let tool = script(&pool, "fine", "function run() { return 1; }", NEVER);
    let text = call(&runner, &tool, json!({})).await.result.text();
    assert!(
        text.ends_with("\nthe end of its stderr:\nunknown argument"),
        "{text}"
    );
}

/// A program that writes nothing at all is given a few seconds to greet,
/// then each call crashes saying so.
async fn a_program_that_never_greets_crashes_the_call_after_its_wait<E: Executor>(
    runner: Runner<E>,
) {
    let pool = pool_of(sh("sleep 1000"));
    let tool = script(&pool, "silent", "function run() { return 1; }", NEVER);
    let started = Instant::now();
    let end = call(&runner, &tool, json!({})).await;
    let text = end.result.text();
    assert_eq!(end.outcome, Outcome::Crashed, "{text}");
    assert!(
        text.contains("is not a rho-script worker of this host's version: it wrote nothing on stdout within 15s of its start"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15) + STOP_BOUND,
        "{:?}",
        started.elapsed()
    );
}

async fn dropping_the_pool_ends_its_workers<E: Executor>(runner: Runner<E>) {
    let file = pid_file("dropped");
    let pool = pool_of(real_worker_telling_its_pid(&file));
    let tool = script(&pool, "fine", "function run() { return 'ok'; }", NEVER);
    assert_eq!(call(&runner, &tool, json!({})).await.result.text(), "ok");
    let pid = read_pid(&file);
    assert!(alive(pid), "the worker is kept between calls");
    drop(tool);
    drop(pool);
    wait_gone(pid);
    let _ = std::fs::remove_file(&file);
}

/// The worker program's own processes on this host: (pid, command line).
fn worker_processes() -> Vec<(i32, String)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.starts_with(WORKER).then_some((pid, cmdline))
        })
        .collect()
}

/// By default a worker runs confined: in user and network namespaces of
/// its own (its program launching itself), with nothing but its pipes;
/// scripts run the same.
async fn a_worker_runs_confined_by_default<E: Executor>(runner: Runner<E>) {
    let command = WorkerCommand::new(WORKER);
    assert!(command.confinement().is_some());
    let before: Vec<i32> = worker_processes().into_iter().map(|(pid, _)| pid).collect();
    let pool = pool_of(command);
    let tool = script(&pool, "fine", "function run() { return 'ok'; }", NEVER);
    assert_eq!(call(&runner, &tool, json!({})).await.result.text(), "ok");
    let ours: Vec<(i32, String)> = worker_processes()
        .into_iter()
        .filter(|(pid, _)| !before.contains(pid))
        .collect();
    let launcher = ours
        .iter()
        .find(|(_, cmdline)| cmdline.contains("--rho-confine "));
    assert!(launcher.is_some(), "no launcher among {ours:?}");
    let ns = |pid: i32, kind: &str| std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok();
    let me = std::process::id() as i32;
    let confined: Vec<&(i32, String)> = ours
        .iter()
        .filter(|(pid, _)| ns(*pid, "user") != ns(me, "user") && ns(*pid, "net") != ns(me, "net"))
        .collect();
    assert!(
        !confined.is_empty(),
        "no worker process in namespaces of its own among {ours:?}"
    );
    drop(tool);
    drop(pool);
}
