//! `TokioExecutor` and `TokioTask` on their own, without rho's wrapper around
//! the task body: the executor's half of the contract (rho-tool-core's
//! `Executor` and `TaskHandle` docs, DESIGN.md "Kill semantics": "tokio:
//! never drop a panic `JoinError` in the loop").
//!
//! These tests are in their own binary because one of them is expected to
//! fail today, and its failure would otherwise disturb the loop counters of
//! other tests.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_exec_tokio::{TokioExecutor, TokioExecutorError};
use rho_tool_core::{Executor, Joined, TaskHandle};
use support::{InLoop, PanicOnDropWith, Record, SetOnDrop, Tattle, executor, flag, wait_for};

const SOON: Duration = Duration::from_secs(10);

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
    timer.block_on(executor.sleep(Duration::from_millis(1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_resolves_done_with_its_value() {
    let task = executor().spawn(async { 6 * 7 });
    assert_eq!(task.await, Joined::Done(42));
}

/// Kill is idempotent and the handle resolves `Killed`; the future is
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_resolves_killed_and_its_future_is_dropped() {
    let dropped = flag();
    let guard = SetOnDrop(dropped.clone());
    let mut task = executor().spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    task.kill();
    task.kill();
    let joined = tokio::time::timeout(SOON, InLoop::new(task))
        .await
        .expect("a killed task resolves");
    assert_eq!(joined, Joined::Killed);
    assert!(wait_for(&dropped, SOON).await);
}

/// A raw task that panics with a custom payload: the awaiting loop gets
/// `Crashed`, and none of the payload's code runs in the loop (the payload
/// is forgotten).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_task_panic_resolves_crashed_without_running_payload_code_in_the_loop() {
    let record = Record::new();
    let payload = Tattle::new(&record);
    let task = executor().spawn(async move {
        tokio::task::yield_now().await;
        std::panic::panic_any(payload);
    });
    let joined = InLoop::new(task).await;
    assert_eq!(joined, Joined::Crashed);
    assert_eq!(record.in_loop(), 0, "the payload's code ran in the loop");
    assert_eq!(record.formats(), 0);
}

/// A raw task whose future's `Drop` panics with a custom payload, killed:
/// the handle resolves `Killed` (the `TaskHandle` contract: after `kill` the
/// handle resolves `Killed` unless the task had already finished), and the
/// payload's code does not run in the loop.
///
/// Fails today: see the report (rho-exec-tokio/src/lib.rs, `TokioTask::poll`
/// checks `is_panic()` before `self.killed`, so a kill whose drop panicked
/// resolves `Crashed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_raw_task_whose_drop_panics_resolves_killed_without_payload_code_in_the_loop() {
    let dropped = flag();
    let record = Record::new();
    let guard = PanicOnDropWith {
        dropped: dropped.clone(),
        payload: record.clone(),
    };
    let mut task = executor().spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    task.kill();
    let joined = tokio::time::timeout(SOON, InLoop::new(task))
        .await
        .expect("a killed task resolves");
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(record.in_loop(), 0, "the payload's code ran in the loop");
    assert_eq!(record.formats(), 0);
    assert_eq!(joined, Joined::Killed);
}

/// A handle dropped (not awaited) after its raw task panicked with a custom
/// payload: tokio drops the stored `JoinError`, payload and all, where the
/// `JoinHandle` is dropped. The payload's `Drop` must not run in the loop.
///
/// Fails today: see the report (rho-exec-tokio/src/lib.rs, `TokioTask` has
/// no `Drop` of its own and spawns the future unwrapped, so tokio's
/// `JoinHandle` drop disposes of the payload in the loop's thread). rho's
/// own task body never lets a panic reach tokio, so `Runner` calls are not
/// affected; a host using `TokioExecutor` directly is, and so is the
/// `CallHandle` should a panic ever escape the wrapper (it kills and then
/// drops its `TokioTask` without polling it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_raw_task_handle_after_its_task_panicked_keeps_the_payload_out_of_the_loop() {
    let record = Record::new();
    let payload = Tattle::new(&record);
    let about_to_panic = flag();
    let task = {
        let about_to_panic = about_to_panic.clone();
        executor().spawn(async move {
            about_to_panic.store(true, Ordering::SeqCst);
            std::panic::panic_any(payload);
        })
    };
    assert!(wait_for(&about_to_panic, SOON).await);
    // Let tokio store the task's output (the panic) before the handle goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(InLoop::new(task));
    assert_eq!(
        record.in_loop(),
        0,
        "the panic payload's Drop ran in the loop (dropped with the JoinHandle)"
    );
}
