//! rho's clock once the executor's runtime shut down: it is not the
//! runtime's, so a sleep neither panics (as a tokio sleep polled after its
//! timer shut down does) nor hangs: it completes at its deadline. (The
//! suite only asks of every executor that the sleep does not panic; a call
//! then ends by its task reporting the executor gone, which the suite
//! checks.)

use std::time::{Duration, Instant};

use rho_conformance::support::poll_once;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::Executor;

/// The loop runs on a runtime of its own; the executor's runtime is shut
/// down before the sleep is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_after_the_runtime_shut_down_completes_at_its_deadline() {
    let tools = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the tools");
    let executor = TokioExecutor::new(tools.handle().clone()).expect("a timer");
    tools.shutdown_background();

    let made = Instant::now();
    let mut sleep = executor.sleep(Duration::from_millis(20));
    assert!(
        poll_once(&mut sleep).await.is_none(),
        "not before its deadline"
    );
    tokio::time::timeout(Duration::from_secs(10), sleep)
        .await
        .expect("the sleep completes");
    assert!(made.elapsed() >= Duration::from_millis(20));
}
