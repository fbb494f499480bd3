//! Executors and tools shared by the script tool's test files.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rho_exec_smol::{SmolExecutor, SmolPool};
use rho_exec_tokio::TokioExecutor;
use rho_script::{Isolation, PoolOptions, ScriptOptions, ScriptPool, ScriptTool, WorkerCommand};
use rho_tool_core::{CallEnd, Executor, Runner, ToolCall};

/// The timeout of calls that are meant to answer: no test reaches it
/// unless something is wrong.
pub(crate) const NEVER: Duration = Duration::from_secs(60);
/// The timeout of calls that are meant to be stopped.
pub(crate) const SHORT: Duration = Duration::from_millis(300);
/// How long past its timeout a stopped call may take to end, on a shared
/// machine.
pub(crate) const STOP_BOUND: Duration = Duration::from_secs(5);

/// Where a scenario's scripts run: the pool's own threads, or worker
/// processes (this crate's `rho-script-worker`). Every scenario runs in
/// both, with the same assertions.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    Threads,
    Workers,
}

/// A pool of two script threads, each running its scripts as `mode` says.
pub(crate) fn pool(mode: Mode) -> ScriptPool {
    let options = PoolOptions::new(2);
    let options = match mode {
        Mode::Threads => options,
        Mode::Workers => options.with_isolation(Isolation::WorkerProcesses(WorkerCommand::new(
            env!("CARGO_BIN_EXE_rho-script-worker"),
        ))),
    };
    ScriptPool::with_options(options).expect("two script threads")
}

/// Runs `scenario` with a runner on a tokio multi-thread runtime (two
/// workers) and a pool of two script threads.
pub(crate) fn on_tokio<F, Fut>(scenario: F)
where
    F: FnOnce(Runner<TokioExecutor>, ScriptPool) -> Fut,
    Fut: Future<Output = ()>,
{
    on_tokio_in(Mode::Threads, scenario);
}

/// Runs `scenario` on tokio as [`on_tokio`] does, the scripts running as
/// `mode` says.
pub(crate) fn on_tokio_in<F, Fut>(mode: Mode, scenario: F)
where
    F: FnOnce(Runner<TokioExecutor>, ScriptPool) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a timer");
    runtime.block_on(scenario(Runner::new(executor), pool(mode)));
}

/// Runs `scenario` with a runner on a smol executor run by two threads and
/// a pool of two script threads.
pub(crate) fn on_smol<F, Fut>(scenario: F)
where
    F: FnOnce(Runner<SmolExecutor>, ScriptPool) -> Fut,
    Fut: Future<Output = ()>,
{
    on_smol_in(Mode::Threads, scenario);
}

/// Runs `scenario` on smol as [`on_smol`] does, the scripts running as
/// `mode` says.
pub(crate) fn on_smol_in<F, Fut>(mode: Mode, scenario: F)
where
    F: FnOnce(Runner<SmolExecutor>, ScriptPool) -> Fut,
    Fut: Future<Output = ()>,
{
    let executors = SmolPool::new(2).expect("two executor threads");
    smol::block_on(scenario(Runner::new(executors.executor()), pool(mode)));
}

/// Defines `<scenario>::on_tokio` and `<scenario>::on_smol` (scripts on
/// the pool's threads), and `<scenario>::in_workers_on_tokio` and
/// `<scenario>::in_workers_on_smol` (scripts in worker processes): the
/// same scenario, four tests.
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

            #[test]
            fn in_workers_on_tokio() {
                $crate::support::on_tokio_in($crate::support::Mode::Workers, super::$scenario);
            }

            #[test]
            fn in_workers_on_smol() {
                $crate::support::on_smol_in($crate::support::Mode::Workers, super::$scenario);
            }
        }
    )*};
}

/// A script tool called `name` with `source` and a timeout.
pub(crate) fn script(
    pool: &ScriptPool,
    name: &str,
    source: &str,
    timeout: Duration,
) -> Arc<ScriptTool> {
    Arc::new(
        ScriptTool::new(name, "a test script", source, pool)
            .with_options(ScriptOptions::new().with_timeout(timeout)),
    )
}

/// Runs one call of `tool` with `arguments` and gives how it ended.
pub(crate) async fn call<E: Executor>(
    runner: &Runner<E>,
    tool: &Arc<ScriptTool>,
    arguments: serde_json::Value,
) -> CallEnd {
    let name = rho_tool_core::Tool::name(&**tool).to_owned();
    runner
        .start(ToolCall::new("call", name, arguments), tool.clone())
        .await
}
