//! smol's spawn guard (`Guarded` in `rho-exec-smol`): every raw future is
//! polled and dropped inside it, so a panic never reaches async-task (which
//! would resume it in whoever awaits the task, drop its payload wherever
//! the handle goes, or abort the process on a panicking `Drop`). A panic's
//! payload is disposed of right there, in the task, on an executor thread;
//! a future whose `Drop` panics after it finished still gives its value.
//! (That no payload code runs in the loop, on any executor, is the
//! suite's.)

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use rho_conformance::support::{
    Code, Hostile, InLoop, LoopMark, RaiseOnDrop, Reason, ReasonKind, Recorder, SOON, flag,
    wait_until_blocking,
};
use rho_tool_core::{Executor, Joined, TaskHandle};
use support::Pool;

/// Waits until `recorder` saw a drop (or `SOON` passed); returns the drops.
fn drops_once_settled(recorder: &Recorder) -> usize {
    wait_until_blocking(SOON, || recorder.count(Code::Drop) > 0);
    recorder.count(Code::Drop)
}

/// A raw future panicking with a custom payload: `Crashed`, and the
/// payload was dropped once, in the task (not on the awaiting thread).
#[test]
fn a_raw_tasks_panic_payload_is_disposed_of_in_the_task() {
    let pool = Pool::new(2);
    let record = Recorder::new();
    let payload = Hostile::new(&record);
    let task = pool.executor().spawn(async move {
        smol::future::yield_now().await;
        std::panic::panic_any(payload);
    });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Crashed);
    assert_eq!(
        record.count(Code::Drop),
        1,
        "the payload is disposed of in the task"
    );
    assert!(!record.ran_on(std::thread::current().id()));
}

/// A raw future whose `Drop` panics with a custom payload, killed: the
/// payload is disposed of once, in the task.
#[test]
fn a_killed_raw_tasks_drop_panic_payload_is_disposed_of_in_the_task() {
    let pool = Pool::new(2);
    let reason = Reason::new(ReasonKind::Custom(None));
    let guard = Recorder::new();
    let raise = RaiseOnDrop::new(&reason, &guard);
    let mut task = pool.executor().spawn(async move {
        let _raise = raise;
        std::future::pending::<()>().await;
    });
    std::thread::sleep(Duration::from_millis(20));
    {
        let _mark = LoopMark::enter();
        task.kill();
    }
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Killed);
    assert_eq!(drops_once_settled(&guard), 1, "the future was not dropped");
    assert_eq!(drops_once_settled(reason.first()), 1);
    assert!(!reason.first().ran_on(std::thread::current().id()));
}

/// A handle dropped (not awaited) after its raw task panicked with a
/// custom payload: the payload was disposed of in the task, once.
#[test]
fn a_panic_payload_is_disposed_of_in_the_task_when_the_handle_is_dropped() {
    let pool = Pool::new(2);
    let record = Recorder::new();
    let payload = Hostile::new(&record);
    let about_to_panic = flag();
    let task = {
        let about_to_panic = about_to_panic.clone();
        pool.executor().spawn(async move {
            about_to_panic.store(true, Ordering::SeqCst);
            std::panic::panic_any(payload);
        })
    };
    assert!(wait_until_blocking(SOON, || about_to_panic.load(Ordering::SeqCst)));
    std::thread::sleep(Duration::from_millis(100));
    drop(InLoop::new(task));
    assert_eq!(drops_once_settled(&record), 1);
    assert_eq!(record.in_loop(), 0, "the payload's Drop ran in the loop");
    assert!(!record.ran_on(std::thread::current().id()));
}

/// A raw future that finishes, then panics in its own `Drop` (async-task
/// drops a finished future under its abort guard): `Done` with its value,
/// the future dropped by then, the process and the executor fine. (An
/// `async` block would not do: its locals are dropped inside the poll that
/// returns, so their panic is a poll's panic.)
#[test]
fn a_raw_task_whose_drop_panics_after_it_finished_resolves_done() {
    struct ReadyThenPanicOnDrop {
        _raise: RaiseOnDrop,
    }
    impl Future for ReadyThenPanicOnDrop {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
            Poll::Ready(7)
        }
    }

    let pool = Pool::new(2);
    let reason = Reason::new(ReasonKind::StaticStr);
    let guard = Recorder::new();
    let task = pool.executor().spawn(ReadyThenPanicOnDrop {
        _raise: RaiseOnDrop::new(&reason, &guard),
    });
    assert_eq!(smol::block_on(InLoop::new(task)), Joined::Done(7));
    assert_eq!(guard.count(Code::Drop), 1);

    let task = pool.executor().spawn(async { "alive" });
    assert_eq!(smol::block_on(task), Joined::Done("alive"));
}
