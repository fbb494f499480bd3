//! A host that embeds the worker in its own executable, as the worker
//! module's docs show: `serve_if_worker()` first thing in `main`, then
//! `WorkerCommand::embedded()` or `WorkerCommand::find()`. This file is
//! such a host (its own `main`, no test harness). It also starts itself in
//! other roles, to see what a host is told when the worker is missing: one
//! without the entry point and without `rho-script-worker` on its `PATH`,
//! one with it there, and one whose `main` is started as a worker by
//! mistake.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rho_script::worker::{EMBEDDED_WORKER_ARG, WORKER_PROGRAM, serve_if_worker};
use rho_script::{Isolation, PoolOptions, ScriptOptions, ScriptPool, ScriptTool, WorkerCommand};
use rho_tool_core::{Outcome, Runner, ToolCall};

/// The role of a host whose `main` never calls `serve_if_worker`: it
/// prints what `embedded()` and `find()` tell it.
const WITHOUT_ENTRY_POINT: &str = "--role-a-host-without-the-entry-point";
/// The role of a host's own `main`, started as a worker by mistake.
const HOST_MAIN: &str = "--role-a-host-main";

/// The worker program this crate builds.
const INSTALLED: &str = env!("CARGO_BIN_EXE_rho-script-worker");

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some(WITHOUT_ENTRY_POINT) => return without_entry_point(),
        Some(HOST_MAIN) => {
            println!("a host's own output");
            return;
        }
        _ => {}
    }
    // First thing, as the docs say: when the pool starts this executable
    // as its worker, it serves here and never returns.
    serve_if_worker();

    check(
        "find() takes the embedded worker",
        find_takes_the_embedded_worker,
    );
    check(
        "an embedded worker runs scripts",
        an_embedded_worker_runs_scripts,
    );
    check(
        "neither worker: the error names both",
        neither_worker_the_error_names_both,
    );
    check(
        "without the entry point, find() takes the installed worker",
        without_the_entry_point_find_takes_the_installed_worker,
    );
    check(
        "a host's main started as a worker: the call says so",
        a_hosts_main_started_as_a_worker_the_call_says_so,
    );
}

/// Runs one check, saying so as a test harness would.
fn check(name: &str, check: fn()) {
    check();
    println!("test {name} ... ok");
}

/// The role of a host without the entry point: prints what it is told.
fn without_entry_point() {
    match WorkerCommand::embedded() {
        Ok(worker) => println!("embedded: {}", worker.program().display()),
        Err(missing) => println!("embedded: error: {missing}"),
    }
    match WorkerCommand::find() {
        Ok(worker) => println!("find: {}", worker.program().display()),
        Err(missing) => println!("find: error: {missing}"),
    }
}

/// This executable in the role of a host without the entry point, with
/// `path` as its `PATH`: what it printed.
fn host_without_entry_point(path: &Path) -> String {
    let output = Command::new(std::env::current_exe().expect("this executable"))
        .arg(WITHOUT_ENTRY_POINT)
        .env("PATH", path)
        .output()
        .expect("the host runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("text")
}

fn find_takes_the_embedded_worker() {
    let worker = WorkerCommand::find().expect("this executable embeds the worker");
    let exe = std::env::current_exe().expect("this executable");
    assert_eq!(worker.program(), exe);
    assert_eq!(worker.args(), [EMBEDDED_WORKER_ARG]);
    assert_eq!(WorkerCommand::embedded().expect("embedded"), worker);
}

fn an_embedded_worker_runs_scripts() {
    let worker = WorkerCommand::find().expect("this executable embeds the worker");
    let pool = ScriptPool::with_options(
        PoolOptions::new(1).with_isolation(Isolation::WorkerProcesses(worker)),
    )
    .expect("the pool starts");
    let executors = rho_exec_smol::SmolPool::new(1).expect("an executor");
    let runner = Runner::new(executors.executor());
    let add = Arc::new(ScriptTool::new(
        "add",
        "Adds `a` and `b`.",
        "function run({ a, b }) { return { sum: a + b }; }",
        &pool,
    ));
    let spin = Arc::new(
        ScriptTool::new("spin", "Spins.", "function run() { for (;;) {} }", &pool)
            .with_options(ScriptOptions::new().with_timeout(Duration::from_millis(200))),
    );
    smol::block_on(async {
        let call = ToolCall::new("c1", "add", serde_json::json!({ "a": 2, "b": 3 }));
        let end = runner.start(call, add.clone()).await;
        assert_eq!(end.result.text(), r#"{"sum":5}"#, "{end:?}");
        let end = runner
            .start(ToolCall::new("c2", "spin", serde_json::json!({})), spin)
            .await;
        assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
        let call = ToolCall::new("c3", "add", serde_json::json!({ "a": 20, "b": 22 }));
        let end = runner.start(call, add).await;
        assert_eq!(end.result.text(), r#"{"sum":42}"#, "{end:?}");
    });
}

fn neither_worker_the_error_names_both() {
    let nowhere = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-worker-here");
    let printed = host_without_entry_point(&nowhere);
    let embedded = printed
        .lines()
        .find_map(|line| line.strip_prefix("embedded: "))
        .expect("what embedded() said");
    assert!(
        embedded.starts_with(
            "error: no rho-script worker: this program does not embed the worker (`rho_script::worker::serve_if_worker()` was not called in it)"
        ),
        "{printed}"
    );
    let find = printed
        .lines()
        .find_map(|line| line.strip_prefix("find: "))
        .expect("what find() said");
    assert!(
        find.starts_with(
            "error: no rho-script worker: this program does not embed the worker (`rho_script::worker::serve_if_worker()` was not called in it), and `rho-script-worker` was not found (looked in "
        ),
        "{printed}"
    );
    // Where it looked: next to the executable, then `PATH`.
    let exe = std::env::current_exe().expect("this executable");
    let beside = exe.parent().expect("a directory").display().to_string();
    assert!(
        find.contains(&format!("looked in {beside}, {})", nowhere.display())),
        "{printed}"
    );
    // And how to have one, either way.
    assert!(
        find.contains("call `rho_script::worker::serve_if_worker()` first thing in `main`"),
        "{printed}"
    );
    assert!(find.contains("`cargo install rho-script`"), "{printed}");
}

fn without_the_entry_point_find_takes_the_installed_worker() {
    let installed = Path::new(INSTALLED);
    assert_eq!(
        installed.file_name().and_then(|name| name.to_str()),
        Some(WORKER_PROGRAM)
    );
    let printed = host_without_entry_point(installed.parent().expect("a directory"));
    assert!(
        printed.contains(&format!("find: {INSTALLED}\n")),
        "{printed}"
    );
    let found = WorkerCommand::installed();
    // This executable's own `PATH` may or may not hold it; when it does,
    // it is found there.
    if let Ok(found) = found {
        assert!(found.program().ends_with(WORKER_PROGRAM), "{found:?}");
    }
}

fn a_hosts_main_started_as_a_worker_the_call_says_so() {
    // A host that forgot the entry point: its own `main` runs instead.
    let exe = std::env::current_exe().expect("this executable");
    let worker = WorkerCommand::new(&exe).with_arg(HOST_MAIN);
    let pool = ScriptPool::with_options(
        PoolOptions::new(1).with_isolation(Isolation::WorkerProcesses(worker)),
    )
    .expect("the pool starts");
    let executors = rho_exec_smol::SmolPool::new(1).expect("an executor");
    let runner = Runner::new(executors.executor());
    let tool = Arc::new(ScriptTool::new(
        "add",
        "Adds.",
        "function run() { return 1; }",
        &pool,
    ));
    let end = smol::block_on(runner.start(ToolCall::new("c", "add", serde_json::json!({})), tool));
    let text = end.result.text();
    assert_eq!(end.outcome, Outcome::Crashed, "{text}");
    assert!(
        text.starts_with(&format!(
            "tool `add` crashed: its worker process `{}` is not a rho-script worker of this host's version: its first line on stdout was not a rho-script worker's greeting but \"a host's own output\"",
            exe.display()
        )),
        "{text}"
    );
    assert!(text.contains("serve_if_worker()"), "{text}");
}
