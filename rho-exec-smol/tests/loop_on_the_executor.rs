//! The loop as smol lets a host place it: inside the executor it drives
//! (`ex.run` around the loop, one thread for the loop and the tools), or as
//! a task on the executor's own threads. The suite's harnesses run the loop
//! on a thread of its own; these are the placements only smol offers.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_conformance::support::{InLoop, SOON, SetOnDrop, TestTool, flag, wait_until_blocking};
use rho_exec_smol::SmolExecutor;
use rho_tool_core::untrusted::timeout_text;
use rho_tool_core::{Outcome, Runner, ToolOutput, ToolResult};
use support::{Pool, call};

/// The loop drives the executor itself (`ex.run` around the call), one
/// thread for everything: fine for tools that yield.
#[test]
fn a_call_succeeds_with_the_loop_and_the_tools_on_one_thread() {
    let ex = Arc::new(smol::Executor::new());
    let runner = Runner::new(SmolExecutor::new(ex.clone()));
    let tool = TestTool::new("nap", |_, _| async {
        smol::Timer::after(Duration::from_millis(20)).await;
        ToolOutput::text("rested")
    });
    let end = smol::block_on(ex.run(InLoop::new(
        runner.start(call("c1", "nap"), tool.into_arc()),
    )));
    assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
    assert_eq!(end.result.text(), "rested");
}

/// A tool that never yields, with the loop itself a task on the two
/// threads the tool spins on: the other thread runs the loop, and the call
/// ends at its deadline while the tool still spins (the timer is
/// async-io's, not the executor's).
#[test]
fn a_tool_that_never_yields_still_ends_at_its_deadline_with_the_loop_on_the_same_two_threads() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let pool = Pool::new(2);
    let spinning = flag();
    let stop = flag();
    let exited = flag();
    let tool = {
        let (spinning, stop, exited) = (spinning.clone(), stop.clone(), exited.clone());
        TestTool::new("spin", move |_, _| {
            let guard = SetOnDrop(exited.clone());
            let (spinning, stop) = (spinning.clone(), stop.clone());
            async move {
                let _guard = guard;
                spinning.store(true, Ordering::SeqCst);
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                ToolOutput::text("stopped")
            }
        })
        .with_timeout(TIMEOUT)
    };
    // Should the loop never end the call, free the thread anyway so the test
    // fails instead of hanging.
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let begin = Instant::now();
            while !stop.load(Ordering::SeqCst) && begin.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::SeqCst);
        })
    };

    let runner = Runner::new(pool.executor());
    let handle = InLoop::new(runner.start(call("c1", "spin"), tool.into_arc()));
    let end = smol::block_on(pool.ex().spawn(handle));
    let still_spinning = spinning.load(Ordering::SeqCst) && !exited.load(Ordering::SeqCst);
    let stopped_by_watchdog = stop.swap(true, Ordering::SeqCst);
    watchdog.join().expect("the watchdog thread");

    assert!(
        !stopped_by_watchdog,
        "the loop did not end the call at its deadline"
    );
    assert!(still_spinning, "the call ended only once the tool stopped");
    assert_eq!(end.outcome, Outcome::TimedOut, "{end:?}");
    assert_eq!(end.result, ToolResult::error(timeout_text("spin", TIMEOUT)));
    assert!(end.ran.expect("the clock ran") >= TIMEOUT);
    // Released, the tool returns and its (cancelled) future is dropped.
    assert!(
        wait_until_blocking(SOON, || exited.load(Ordering::SeqCst)),
        "the tool never stopped"
    );
}
