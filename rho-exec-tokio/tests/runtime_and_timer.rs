//! What `TokioExecutor` needs of its runtime, tokio's own rules: a runtime
//! to find (`TokioExecutor::current`) and a timer (`TokioExecutor::new`),
//! without which every call's timeout would panic in the loop.

use std::time::Duration;

use rho_exec_tokio::{TokioExecutor, TokioExecutorError};
use rho_tool_core::Executor;

#[test]
fn an_executor_needs_a_runtime_and_a_timer() {
    assert_eq!(
        TokioExecutor::current().expect_err("no runtime on a plain test thread"),
        TokioExecutorError::NoRuntime
    );
    let no_timer = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    assert_eq!(
        TokioExecutor::new(no_timer.handle().clone()).expect_err("the runtime has no timer"),
        TokioExecutorError::NoTimer
    );
    let timer = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let executor = TokioExecutor::new(timer.handle().clone()).expect("the runtime has a timer");
    let sleep = executor.sleep(Duration::from_millis(1));
    timer
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), sleep).await })
        .expect("the executor's sleep completes");
}
