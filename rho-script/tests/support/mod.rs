//! Executors and tools shared by the script tool's test files.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rho_exec_smol::{SmolExecutor, SmolPool};
use rho_exec_tokio::TokioExecutor;
use rho_script::{ScriptPool, ScriptTool};
use rho_tool_core::{CallEnd, Executor, Runner, ToolCall};

/// The timeout of calls that are meant to answer: no test reaches it
/// unless something is wrong.
pub(crate) const NEVER: Duration = Duration::from_secs(60);
/// The timeout of calls that are meant to be stopped.
pub(crate) const SHORT: Duration = Duration::from_millis(300);
/// How long past its timeout a stopped call may take to end, on a shared
/// machine.
pub(crate) const STOP_BOUND: Duration = Duration::from_secs(5);

/// Runs `scenario` with a runner on a tokio multi-thread runtime (two
/// workers) and a pool of two script threads.
pub(crate) fn on_tokio<F, Fut>(scenario: F)
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
    let pool = ScriptPool::new(2).expect("two script threads");
    runtime.block_on(scenario(Runner::new(executor), pool));
}

/// Runs `scenario` with a runner on a smol executor run by two threads and
/// a pool of two script threads.
pub(crate) fn on_smol<F, Fut>(scenario: F)
where
    F: FnOnce(Runner<SmolExecutor>, ScriptPool) -> Fut,
    Fut: Future<Output = ()>,
{
    let executors = SmolPool::new(2).expect("two executor threads");
    let pool = ScriptPool::new(2).expect("two script threads");
    smol::block_on(scenario(Runner::new(executors.executor()), pool));
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

/// A script tool called `name` with `source` and a timeout.
pub(crate) fn script(
    pool: &ScriptPool,
    name: &str,
    source: &str,
    timeout: Duration,
) -> Arc<ScriptTool> {
    Arc::new(ScriptTool::new(name, "a test script", source, pool).with_timeout(timeout))
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
