//! tokio's kill (`JoinHandle::abort`): the handle resolves only once the
//! runtime dropped the task's future, so by the time a killed task reports
//! `Killed`, its `Drop` has run, also when that `Drop` panicked (tokio then
//! holds the panic in the `JoinError`, which `TokioTask` forgets). The
//! suite asks less of every executor (smol's kill resolves at once and
//! drops the future afterwards); what it asks is checked there.

use std::time::Duration;

use rho_conformance::support::{
    Code, InLoop, RaiseOnDrop, Reason, ReasonKind, Recorder, block_on_within,
};
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::{Executor, Joined, TaskHandle};

#[test]
fn a_killed_raw_task_whose_drop_panics_resolves_killed_after_its_future_was_dropped() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a timer");
    let reason = Reason::new(ReasonKind::Custom(None));
    let guard = Recorder::new();
    let raise = RaiseOnDrop::new(&reason, &guard);
    let mut task = executor.spawn(async move {
        let _raise = raise;
        std::future::pending::<()>().await;
    });
    std::thread::sleep(Duration::from_millis(20));
    task.kill();
    let joined = block_on_within(Duration::from_secs(10), InLoop::new(task))
        .expect("a killed task resolves");
    assert_eq!(joined, Joined::Killed);
    assert_eq!(
        guard.count(Code::Drop),
        1,
        "the handle resolved before the future was dropped"
    );
    assert_eq!(guard.in_loop(), 0, "the future's Drop ran in the loop");
    assert_eq!(reason.first().in_loop(), 0, "the payload ran in the loop");
    assert_eq!(reason.first().formats(), 0, "the payload was formatted");
}
