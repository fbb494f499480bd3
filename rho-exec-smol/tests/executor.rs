//! `SmolExecutor` and `SmolTask` on their own, without rho's wrapper around
//! the task body: the executor's half of the contract (rho-tool-core's
//! `Executor` and `TaskHandle` docs; DESIGN.md "Kill semantics": "smol:
//! guard against the abort-on-panicking-drop path").

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_exec_smol::SmolExecutor;
use rho_tool_core::{Executor, Joined, TaskHandle};
use support::{InLoop, PanicOnDrop, Pool, Record, SOON, SetOnDrop, Tattle, flag, wait_for};

#[test]
fn a_raw_task_resolves_done_with_its_value() {
    let pool = Pool::new(2);
    let task = pool.executor().spawn(async { 6 * 7 });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Done(42));
    let task = SmolExecutor::global().spawn(async { "global" });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Done("global"));
}

/// Kill twice: idempotent, the handle resolves `Killed` at once, and the
/// task's future is dropped (by an executor thread).
#[test]
fn a_raw_task_killed_twice_resolves_killed_and_its_future_is_dropped() {
    let pool = Pool::new(2);
    let dropped = flag();
    let guard = SetOnDrop(dropped.clone());
    let mut task = InLoop::new(pool.executor().spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }));
    std::thread::sleep(Duration::from_millis(20));
    task.with(|task| task.kill());
    task.with(|task| task.kill());
    assert_eq!(smol::block_on(task), Joined::Killed);
    assert!(
        wait_for(&dropped),
        "the killed task's future was not dropped"
    );
}

/// Killing a task that already finished keeps its value.
#[test]
fn a_raw_task_killed_after_it_finished_resolves_done() {
    let pool = Pool::new(2);
    let finished = flag();
    let mut task = {
        let finished = finished.clone();
        pool.executor().spawn(async move {
            finished.store(true, Ordering::SeqCst);
            "done"
        })
    };
    assert!(wait_for(&finished));
    // The flag is set just before the task completes: let it complete.
    std::thread::sleep(Duration::from_millis(50));
    task.kill();
    task.kill();
    assert_eq!(smol::block_on(task), Joined::Done("done"));
}

/// A raw future (no rho wrapper) panicking with a custom payload: the
/// awaiting thread gets `Crashed`, and none of the payload's code runs
/// there (smol would resume the panic in whoever awaits the task).
#[test]
fn a_raw_task_panicking_with_a_custom_payload_resolves_crashed_and_no_payload_code_runs_in_the_awaiting_thread()
 {
    let pool = Pool::new(2);
    let record = Record::new();
    let payload = Tattle(record.clone());
    let task = pool.executor().spawn(async move {
        smol::future::yield_now().await;
        std::panic::panic_any(payload);
    });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Crashed);
    assert_eq!(record.in_loop(), 0, "the payload's code ran in the loop");
    assert_eq!(record.formats(), 0);
    assert_eq!(record.drops(), 1, "the payload is disposed of in the task");
    assert!(!record.ran_on(std::thread::current().id()));

    // The executor's threads survived the panic.
    let task = pool.executor().spawn(async { 1 });
    assert_eq!(smol::block_on(task), Joined::Done(1));
}

/// The same on smol's global executor.
#[test]
fn a_raw_task_panicking_on_the_global_executor_resolves_crashed() {
    let record = Record::new();
    let payload = Tattle(record.clone());
    let task = SmolExecutor::global().spawn(async move {
        smol::future::yield_now().await;
        std::panic::panic_any(payload);
    });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Crashed);
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0);
    assert!(!record.ran_on(std::thread::current().id()));
}

/// A raw future whose `Drop` panics with a custom payload, killed:
/// async-task drops it under an abort-on-panic guard, and the process
/// survives; the handle resolves `Killed`; the payload's code never runs in
/// the loop.
#[test]
fn a_killed_raw_task_whose_drop_panics_resolves_killed_and_the_process_survives() {
    let pool = Pool::new(2);
    let dropped = flag();
    let record = Record::new();
    let guard = PanicOnDrop::with_payload(&dropped, &record);
    let mut task = InLoop::new(pool.executor().spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }));
    std::thread::sleep(Duration::from_millis(20));
    task.with(|task| task.kill());
    assert_eq!(smol::block_on(task), Joined::Killed);
    assert!(wait_for(&dropped), "the future was not dropped");
    assert_eq!(record.wait_for_drops(1), 1);
    assert_eq!(record.in_loop(), 0);
    assert_eq!(record.formats(), 0);

    let task = pool.executor().spawn(async { "alive" });
    assert_eq!(smol::block_on(task), Joined::Done("alive"));
}

/// A raw future that finishes, then panics in its own `Drop` (async-task
/// drops a finished future under the same abort guard): `Done`, process
/// fine. (An `async` block would not do: its locals are dropped inside the
/// poll that returns, so their panic is a poll's panic.)
#[test]
fn a_raw_task_whose_drop_panics_after_it_finished_resolves_done() {
    struct ReadyThenPanicOnDrop {
        _guard: PanicOnDrop,
    }
    impl std::future::Future for ReadyThenPanicOnDrop {
        type Output = u32;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<u32> {
            std::task::Poll::Ready(7)
        }
    }

    let pool = Pool::new(2);
    let dropped = flag();
    let task = pool.executor().spawn(ReadyThenPanicOnDrop {
        _guard: PanicOnDrop::new(&dropped),
    });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Done(7));
    assert!(dropped.load(Ordering::SeqCst));

    let task = pool.executor().spawn(async { "alive" });
    assert_eq!(smol::block_on(task), Joined::Done("alive"));
}

/// Dropping the handle detaches the task: it keeps running to its end.
#[test]
fn dropping_a_raw_task_handle_detaches_the_task() {
    let pool = Pool::new(2);
    let release = flag();
    let finished = flag();
    let task = {
        let (release, finished) = (release.clone(), finished.clone());
        pool.executor().spawn(async move {
            while !release.load(Ordering::SeqCst) {
                smol::Timer::after(Duration::from_millis(5)).await;
            }
            finished.store(true, Ordering::SeqCst);
        })
    };
    drop(InLoop::new(task));
    release.store(true, Ordering::SeqCst);
    assert!(wait_for(&finished), "the detached task did not run on");
}

/// A handle dropped (not awaited) after its raw task panicked with a custom
/// payload: smol would drop a stored panic where the handle is dropped;
/// here the payload was disposed of in the task, never in the loop.
#[test]
fn dropping_a_raw_task_handle_after_its_task_panicked_keeps_the_payload_out_of_the_loop() {
    let pool = Pool::new(2);
    let record = Record::new();
    let payload = Tattle(record.clone());
    let about_to_panic = flag();
    let task = {
        let about_to_panic = about_to_panic.clone();
        pool.executor().spawn(async move {
            about_to_panic.store(true, Ordering::SeqCst);
            std::panic::panic_any(payload);
        })
    };
    assert!(wait_for(&about_to_panic));
    std::thread::sleep(Duration::from_millis(100));
    drop(InLoop::new(task));
    assert_eq!(record.wait_for_drops(1), 1);
    assert_eq!(record.in_loop(), 0, "the payload's Drop ran in the loop");
    assert!(!record.ran_on(std::thread::current().id()));
}

/// A raw task pending when its executor is dropped resolves `Lost`; a
/// spawn on the dropped executor does not panic and resolves `Lost` at once
/// (its future dropped, a panicking `Drop` contained).
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

    let late = flag();
    let guard = PanicOnDrop::new(&late);
    let mut task = executor.spawn(async move {
        let _guard = guard;
    });
    assert!(
        late.load(Ordering::SeqCst),
        "the unspawned future was dropped"
    );
    task.kill();
    assert_eq!(smol::block_on(task), Joined::Lost);
}

/// The sleep is smol's timer: it fires after its duration (no upper bound
/// checked), and an endless one neither panics nor fires.
#[test]
fn the_sleep_fires_after_its_duration_and_an_endless_one_does_not_panic() {
    let executor = SmolExecutor::global();
    let begin = Instant::now();
    smol::block_on(executor.sleep(Duration::from_millis(50)));
    assert!(begin.elapsed() >= Duration::from_millis(50));

    let mut endless = Box::pin(executor.sleep(Duration::MAX));
    let fired = smol::block_on(async {
        futures_lite_poll_for(&mut endless, Duration::from_millis(50)).await
    });
    assert!(!fired);
    assert!(begin.elapsed() < SOON);
}

/// Polls `future` for `limit`; whether it completed.
async fn futures_lite_poll_for<F: std::future::Future + Unpin>(
    future: &mut F,
    limit: Duration,
) -> bool {
    use smol::future::FutureExt;
    let completed = async {
        future.await;
        true
    };
    let expired = async {
        smol::Timer::after(limit).await;
        false
    };
    completed.or(expired).await
}

#[test]
fn an_executor_reports_what_it_spawns_on() {
    let ex = std::sync::Arc::new(smol::Executor::new());
    let shared = SmolExecutor::new(ex.clone());
    assert!(!shared.is_global());
    assert!(!shared.is_gone());
    assert!(format!("{shared:?}").contains("shared"));
    drop(ex);
    assert!(shared.is_gone());
    assert!(format!("{shared:?}").contains("gone"));
    assert!(format!("{:?}", SmolExecutor::global()).contains("global"));
}
