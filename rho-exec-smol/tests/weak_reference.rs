//! smol's weak-reference rule: `SmolExecutor::new` keeps only a weak
//! reference, so the executor goes away exactly when the host drops its
//! last `Arc` (`is_gone`), and dropping a smol executor drops its tasks'
//! futures at once, on the dropping thread (a panicking `Drop` contained).
//! The global executor never goes away. (What every executor must do when
//! it goes away, calls ending `ExecutorGone` and so on, is the suite's.)

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rho_conformance::support::{
    Code, InLoop, RaiseOnDrop, Reason, ReasonKind, Recorder, SOON, SetOnDrop, TestTool, flag,
    wait_until_blocking,
};
use rho_exec_smol::SmolExecutor;
use rho_tool_core::untrusted::{Exit, exit_text};
use rho_tool_core::{
    CallHandle, Executor, Joined, Outcome, Runner, TaskHandle, ToolOutput, ToolResult,
};
use support::{Pool, call};

/// Awaits `handle` on a thread of its own (a loop thread, in smol's
/// `block_on`), the thread marked as the loop.
fn on_loop_thread(
    handle: CallHandle<SmolExecutor>,
) -> std::thread::JoinHandle<rho_tool_core::CallEnd> {
    std::thread::Builder::new()
        .name("loop".to_owned())
        .spawn(move || smol::block_on(InLoop::new(handle)))
        .expect("a loop thread")
}

/// A tool that sets `started`, then sleeps an hour on smol's timer,
/// holding what `guard` makes (dropped with its future).
fn sleeping(
    name: &str,
    started: &Arc<AtomicBool>,
    guard: impl Fn() -> Box<dyn Send> + Send + Sync + 'static,
) -> TestTool {
    let started = started.clone();
    TestTool::new(name, move |_, _| {
        let guard = guard();
        let started = started.clone();
        async move {
            let _guard = guard;
            started.store(true, Ordering::SeqCst);
            smol::Timer::after(Duration::from_secs(3600)).await;
            ToolOutput::text("woke up")
        }
    })
}

#[test]
fn an_executor_reports_what_it_spawns_on() {
    let ex = Arc::new(smol::Executor::new());
    let shared = SmolExecutor::new(ex.clone());
    assert!(!shared.is_global());
    assert!(!shared.is_gone());
    assert!(format!("{shared:?}").contains("shared"));
    drop(ex);
    assert!(shared.is_gone());
    assert!(format!("{shared:?}").contains("gone"));
    let global = SmolExecutor::global();
    assert!(global.is_global());
    assert!(!global.is_gone());
    assert!(format!("{global:?}").contains("global"));
}

/// The host drops its last `Arc` (its threads stopped) while a tool runs,
/// the loop awaiting the call on its own thread: the executor is gone, the
/// tool's future was dropped with it, on the spot, and the call ends
/// `ExecutorGone` with nothing panicking in the loop.
#[test]
fn the_executor_dropped_while_a_tool_runs_ends_executor_gone() {
    let mut pool = Pool::new(2);
    let started = flag();
    let dropped = flag();
    let tool = {
        let dropped = dropped.clone();
        sleeping("sleepy", &started, move || {
            Box::new(SetOnDrop(dropped.clone()))
        })
    };
    let runs = tool.runs();
    let executor = pool.executor();
    let handle = Runner::new(executor.clone()).start(call("c1", "sleepy"), tool.into_arc());
    assert!(wait_until_blocking(SOON, || started.load(Ordering::SeqCst)));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let looping = on_loop_thread(handle);

    assert!(!executor.is_gone());
    pool.drop_executor();
    assert!(executor.is_gone());
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropping the executor drops the task"
    );

    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
    assert_eq!(
        end.result,
        ToolResult::error(exit_text("sleepy", Exit::ExecutorGone))
    );
    assert!(end.ran.is_some());
    assert!(!end.outcome.counts_against_tool());
}

/// The same with a tool future whose `Drop` panics: the executor drops it
/// on the spot, under async-task's abort-on-panic guard, and the process
/// survives (rho contains the panic in the task).
#[test]
fn the_executor_dropped_under_a_tool_whose_drop_panics_ends_executor_gone_and_the_process_survives()
{
    let mut pool = Pool::new(2);
    let started = flag();
    let reason = Reason::new(ReasonKind::StaticStr);
    let guard = Recorder::new();
    let tool = {
        let (reason, guard) = (reason.clone(), guard.clone());
        sleeping("grumpy", &started, move || {
            Box::new(RaiseOnDrop::new(&reason, &guard))
        })
    };
    let handle = Runner::new(pool.executor()).start(call("c1", "grumpy"), tool.into_arc());
    assert!(wait_until_blocking(SOON, || started.load(Ordering::SeqCst)));
    let looping = on_loop_thread(handle);
    pool.drop_executor();
    assert_eq!(
        guard.count(Code::Drop),
        1,
        "dropping the executor drops the task"
    );
    let end = looping.join().expect("no panic in the loop");
    assert_eq!(end.outcome, Outcome::ExecutorGone, "{end:?}");
}

/// A raw task pending when its executor is dropped: its future was dropped
/// on the spot, and it resolves `Lost`. A spawn on the dropped executor
/// does not panic: its future is dropped at once, in `spawn` (a panicking
/// `Drop` contained), and the handle resolves `Lost`, even after a kill.
#[test]
fn raw_tasks_of_a_dropped_executor_resolve_lost() {
    let mut pool = Pool::new(1);
    let executor = pool.executor();
    let dropped = flag();
    let guard = SetOnDrop(dropped.clone());
    let task = executor.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    pool.drop_executor();
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Lost);

    let reason = Reason::new(ReasonKind::StaticStr);
    let late = Recorder::new();
    let raise = RaiseOnDrop::new(&reason, &late);
    let mut task = executor.spawn(async move {
        let _raise = raise;
    });
    assert_eq!(
        late.count(Code::Drop),
        1,
        "the unspawned future was dropped"
    );
    task.kill();
    assert_eq!(smol::block_on(task), Joined::Lost);
}
