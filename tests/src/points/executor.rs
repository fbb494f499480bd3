//! The executor's own half of the contract (rho-tool-core's `Executor` and
//! `TaskHandle` docs), on raw tasks without rho's wrapper around the task
//! body: resolve once, kill idempotently, detach on drop, never carry a
//! panic payload into the loop, and a timer.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_tool_core::{Executor, Joined, TaskHandle};

use super::Rig;
use crate::Harness;
use crate::support::{
    Code, Hostile, RaiseOnDrop, Reason, ReasonKind, Recorder, SOON, SetOnDrop, flag, wait_until,
    within, yield_now,
};

/// A raw task resolves `Done` with its value: one that finishes at its
/// first poll, and one that yields first.
pub fn a_raw_task_resolves_done_with_its_value<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let (at_once, yielding) = rig.run(async {
        let at_once = within(&executor, SOON, executor.spawn(async { 6 * 7 })).await;
        let task = executor.spawn(async {
            yield_now().await;
            "yielded"
        });
        (at_once, within(&executor, SOON, task).await)
    });
    assert_eq!(at_once, Some(Joined::Done(42)));
    assert_eq!(yielding, Some(Joined::Done("yielded")));
    rig.finish();
}

/// A raw task that never finishes, killed twice (kill is idempotent),
/// resolves `Killed`, and its future is dropped: killed at once (before it
/// may even have started), and killed once it is surely waiting.
pub fn a_killed_raw_task_resolves_killed_and_its_future_is_dropped<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    for wait_first in [false, true] {
        let dropped = flag();
        let guard = SetOnDrop(dropped.clone());
        rig.run(async {
            let mut task = executor.spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
            });
            if wait_first {
                executor.sleep(Duration::from_millis(10)).await;
            }
            task.kill();
            task.kill();
            let joined = within(&executor, SOON, task).await;
            assert_eq!(
                joined,
                Some(Joined::Killed),
                "a killed task resolves Killed (killed after a wait: {wait_first})"
            );
            assert!(
                wait_until(&executor, SOON, || dropped.load(Ordering::SeqCst)).await,
                "the killed task's future was not dropped (killed after a wait: {wait_first})"
            );
        });
    }
    rig.finish();
}

/// A raw task killed (twice) after it finished keeps its value: `Done`, not
/// `Killed` (the `TaskHandle` contract: `Killed` unless the task had
/// already finished).
pub fn a_raw_task_killed_after_it_finished_resolves_done<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let joined = rig.run(async {
        let mut task = executor.spawn(async {
            yield_now().await;
            "done"
        });
        // The task's future is gone once it finished (counted live until
        // then); let the executor store its end too.
        assert!(
            wait_until(&executor, SOON, || executor.live() == 0).await,
            "the task never finished"
        );
        executor.sleep(Duration::from_millis(50)).await;
        task.kill();
        task.kill();
        within(&executor, SOON, task).await
    });
    assert_eq!(joined, Some(Joined::Done("done")));
    rig.finish();
}

/// Dropping a raw task's handle detaches the task: it runs on to its end.
pub fn a_dropped_raw_task_handle_detaches_its_task<H: Harness>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let finished = flag();
    rig.run(async {
        let task = {
            let (executor, finished) = (executor.clone(), finished.clone());
            executor.clone().spawn(async move {
                executor.sleep(Duration::from_millis(50)).await;
                finished.store(true, Ordering::SeqCst);
            })
        };
        drop(task);
        assert!(
            wait_until(&executor, SOON, || finished.load(Ordering::SeqCst)).await,
            "a task whose handle was dropped did not run to its end"
        );
    });
    rig.finish();
}

/// A raw task that panics with a custom payload: the awaiting loop gets
/// `Crashed`, and none of the payload's code runs in the loop (nor on the
/// loop's thread, on a multi-threaded executor; it may be dropped in the
/// task's thread, or leaked); the executor runs tasks afterwards.
pub fn a_raw_task_that_panics_resolves_crashed_and_its_payload_never_runs_in_the_loop<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let record = Recorder::new();
    let payload = Hostile::new(&record);
    let (joined, after) = rig.run(async {
        let task = executor.spawn(async move {
            yield_now().await;
            std::panic::panic_any(payload);
        });
        let joined = within(&executor, SOON, task).await;
        let after = within(&executor, SOON, executor.spawn(async { 1 })).await;
        (joined, after)
    });
    assert_eq!(joined, Some(Joined::Crashed));
    assert_eq!(
        record.in_loop(),
        0,
        "the payload's code ran in the loop: {record:?}"
    );
    assert_eq!(record.formats(), 0, "the payload was formatted: {record:?}");
    rig.assert_off_the_loop_thread(&record, "the payload's code");
    assert_eq!(
        after,
        Some(Joined::Done(1)),
        "the executor ran no task after the panic"
    );
    rig.finish();
}

/// A raw task whose future's `Drop` panics with a custom payload, killed:
/// the handle resolves `Killed` (after `kill`, `Killed` unless the task had
/// already finished), the process survives, none of the payload's code
/// runs in the loop (nor on the loop's thread, on a multi-threaded
/// executor), and the executor runs tasks afterwards.
pub fn a_killed_raw_task_whose_drop_panics_resolves_killed_and_its_payload_never_runs_in_the_loop<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let reason = Reason::new(ReasonKind::Custom(None));
    let guard = Recorder::new();
    let raise = RaiseOnDrop::new(&reason, &guard);
    rig.run(async {
        let mut task = executor.spawn(async move {
            let _raise = raise;
            std::future::pending::<()>().await;
        });
        executor.sleep(Duration::from_millis(10)).await;
        task.kill();
        let joined = within(&executor, SOON, task).await;
        assert_eq!(
            joined,
            Some(Joined::Killed),
            "a killed task resolves Killed"
        );
        assert!(
            wait_until(&executor, SOON, || guard.count(Code::Drop) == 1).await,
            "the killed task's future was not dropped"
        );
        let after = within(&executor, SOON, executor.spawn(async { "alive" })).await;
        assert_eq!(
            after,
            Some(Joined::Done("alive")),
            "the executor ran no task after the kill"
        );
    });
    assert_eq!(guard.in_loop(), 0, "the future's Drop ran in the loop");
    let payload = reason.first();
    assert_eq!(
        payload.in_loop(),
        0,
        "the payload's code ran in the loop: {payload:?}"
    );
    assert_eq!(
        payload.formats(),
        0,
        "the payload was formatted: {payload:?}"
    );
    rig.assert_off_the_loop_thread(&guard, "the future's Drop");
    rig.assert_off_the_loop_thread(payload, "the payload's code");
    rig.finish();
}

/// A raw task's handle dropped (not awaited) after its task panicked with
/// a custom payload: the payload's code does not run in the loop (nor on
/// the loop's thread, on a multi-threaded executor; tokio's `JoinHandle`,
/// for one, drops a stored panic where it is dropped).
pub fn dropping_a_raw_task_handle_after_its_task_panicked_keeps_the_payload_out_of_the_loop<
    H: Harness,
>() {
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let record = Recorder::new();
    let payload = Hostile::new(&record);
    rig.run(async {
        let task = executor.spawn(async move {
            std::panic::panic_any(payload);
        });
        // Let the task panic and its end be stored before the handle goes.
        assert!(
            wait_until(&executor, SOON, || executor.live() == 0).await,
            "the panicking task never ran"
        );
        executor.sleep(Duration::from_millis(300)).await;
        drop(task);
    });
    assert_eq!(
        record.in_loop(),
        0,
        "the panic payload's code ran in the loop (dropped with the task's handle): {record:?}"
    );
    assert_eq!(record.formats(), 0, "the payload was formatted: {record:?}");
    rig.assert_off_the_loop_thread(&record, "the payload's code");
    rig.finish();
}

/// The executor's timer: `sleep(d)` completes, and not before `d` passed;
/// `sleep(0)` completes; an endless `sleep(Duration::MAX)` neither panics
/// nor completes (within a while).
pub fn the_executors_sleep_waits_at_least_its_duration<H: Harness>() {
    const NAP: Duration = Duration::from_millis(50);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let slept = rig.run(async {
        let begin = Instant::now();
        let done = within(&executor, SOON, executor.sleep(NAP)).await;
        assert!(
            done.is_some(),
            "sleep({NAP:?}) did not complete within {SOON:?}"
        );
        let slept = begin.elapsed();
        let zero = within(&executor, SOON, executor.sleep(Duration::ZERO)).await;
        assert!(zero.is_some(), "sleep(0) did not complete");
        let endless = within(&executor, NAP, executor.sleep(Duration::MAX)).await;
        assert!(endless.is_none(), "sleep(Duration::MAX) completed");
        slept
    });
    assert!(slept >= NAP, "sleep({NAP:?}) completed after {slept:?}");
    rig.finish();
}
