//! tokio's timer once its runtime shut down: tokio panics when such a
//! sleep is polled; `TokioSleep` stays pending instead, for ever. (The
//! suite only asks of every executor that the sleep does not panic; a call
//! then ends by its task reporting the executor gone, which the suite
//! checks.)

use std::time::Duration;

use rho_conformance::support::poll_once;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::Executor;

/// The loop runs on a runtime of its own; the executor's runtime is shut
/// down before the sleep is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_after_the_runtime_shut_down_neither_panics_nor_fires() {
    let tools = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the tools");
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    tools.shutdown_background();

    let mut sleep = executor.sleep(Duration::ZERO);
    assert!(poll_once(&mut sleep).await.is_none());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(poll_once(&mut sleep).await.is_none());
}
