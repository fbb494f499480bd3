//! No task leaks: once a call ended, however it ended, the executor holds
//! no task of rho's (counted by [`Counting`](crate::support::Counting));
//! each call is one task.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rho_tool_core::{Executor, Outcome, ToolCall, ToolOutput, Verdict};

use super::shutdown::{AT_GATE, InFlight, RUNNING, in_flight};
use super::{Rig, call, end_of};
use crate::Harness;
use crate::support::{
    HANG, MetadataPanics, Reason, ReasonKind, Recorder, SOON, TestGate, TestTool, flag, wait_until,
    wait_until_blocking,
};

/// Calls ending every way there is (succeeded, failed, denied, gate panic,
/// tool panic, metadata panic, timeout, timeout of a future whose `Drop`
/// panics, host abort at the gate and while running, handle dropped): each
/// is one task, and once all ended no task of rho's is alive.
pub fn no_task_leaks_after_every_kind_of_end<H: Harness>() {
    const TIMEOUT: Duration = Duration::from_millis(100);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let gate = TestGate::new(|call: ToolCall| async move {
        match call.arguments["gate"].as_str() {
            Some("deny") => Verdict::deny("no"),
            Some("panic") => panic!("the gate panicked"),
            Some("never") => std::future::pending().await,
            _ => Verdict::Allow,
        }
    });
    let with_gate = |id: &str, name: &str, gate: &str| {
        ToolCall::new(id, name, serde_json::json!({ "gate": gate }))
    };
    let sleeping = |name: &str| {
        let executor = executor.clone();
        TestTool::new(name, move |_, _| {
            let wait = executor.sleep(HANG);
            async move {
                wait.await;
                ToolOutput::text("never")
            }
        })
    };
    let reason = Reason::new(ReasonKind::Custom(None));
    let guard = Recorder::new();
    let grumpy =
        super::kill::grumpy(&executor, "grumpy", &reason, &guard, &flag()).with_timeout(TIMEOUT);
    let runner = rig.runner().with_gate(gate);
    let started = flag();
    rig.run(async {
        let ok = TestTool::answering("ok", "fine").into_arc();
        let fails = TestTool::new("fails", |_, _| async { ToolOutput::error("no") }).into_arc();
        let crashes = TestTool::new("crashes", |_, _| async { panic!("boom") }).into_arc();
        let hangs = sleeping("hangs").with_timeout(TIMEOUT).into_arc();
        let ending = [
            (call("ok", "ok"), ok.clone(), Outcome::Succeeded),
            (call("fails", "fails"), fails, Outcome::Failed),
            (
                with_gate("denied", "ok", "deny"),
                ok.clone(),
                Outcome::Denied,
            ),
            (
                with_gate("gate", "ok", "panic"),
                ok.clone(),
                Outcome::Crashed,
            ),
            (call("crashes", "crashes"), crashes, Outcome::Crashed),
            (
                call("meta", MetadataPanics::NAME),
                Arc::new(MetadataPanics::default()),
                Outcome::Crashed,
            ),
            (call("hangs", "hangs"), hangs, Outcome::TimedOut),
            (
                call("grumpy", "grumpy"),
                grumpy.into_arc(),
                Outcome::TimedOut,
            ),
        ];
        let mut calls = 0;
        for (call, tool, outcome) in ending {
            calls += 1;
            let end = end_of(&executor, runner.start(call, tool)).await;
            assert_eq!(end.outcome, outcome, "{end:?}");
        }
        let at_gate = runner.start(with_gate("at_gate", "ok", "never"), ok.clone());
        at_gate.abort();
        calls += 1;
        let end = end_of(&executor, at_gate).await;
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        let running = {
            let (executor, started) = (executor.clone(), started.clone());
            TestTool::new("running", move |_, _| {
                let wait = executor.sleep(HANG);
                let started = started.clone();
                async move {
                    started.store(true, Ordering::SeqCst);
                    wait.await;
                    ToolOutput::text("never")
                }
            })
            .into_arc()
        };
        let aborted = runner.start(call("aborted", "running"), running);
        calls += 1;
        assert!(wait_until(&executor, SOON, || started.load(Ordering::SeqCst)).await);
        aborted.abort();
        let end = end_of(&executor, aborted).await;
        assert_eq!(end.outcome, Outcome::Aborted, "{end:?}");
        drop(runner.start(call("dropped", "sleepy"), sleeping("sleepy").into_arc()));
        calls += 1;

        let clean = wait_until(&executor, SOON, || executor.live() == 0).await;
        assert!(
            clean,
            "task leak: {} of {} tasks still alive {SOON:?} after every call ended",
            executor.live(),
            executor.spawned()
        );
        assert_eq!(executor.spawned(), calls, "one task per call");
    });
    assert_eq!(guard.in_loop(), 0);
    rig.finish();
}

/// The executor shuts down while calls are in flight (in their gates,
/// running): the futures of all their tasks are dropped (in the background
/// is fine), so no task of rho's stays alive.
pub fn no_task_leaks_after_the_executor_shuts_down<H: Harness>() {
    if !super::shuts_down::<H>("no_task_leaks_after_the_executor_shuts_down") {
        return;
    }
    let rig = Rig::<H>::new();
    let InFlight {
        calls,
        gates_dropped,
        tools_dropped,
        ..
    } = in_flight(&rig);
    let executor = rig.shut_down();
    let clean = wait_until_blocking(SOON, || {
        executor.live() == 0
            && gates_dropped.load(Ordering::SeqCst) == AT_GATE
            && tools_dropped.load(Ordering::SeqCst) == RUNNING
    });
    assert!(
        clean,
        "after the executor shut down, {} of {} tasks are still alive {SOON:?} later \
         ({} of {AT_GATE} gates and {} of {RUNNING} tools dropped)",
        executor.live(),
        executor.spawned(),
        gates_dropped.load(Ordering::SeqCst),
        tools_dropped.load(Ordering::SeqCst),
    );
    // The handles go last, dropped with no runtime: nothing to kill any more.
    crate::support::block_on_within(
        SOON,
        crate::support::InLoop::new(async move { drop(calls) }),
    )
    .expect("dropping the handles returns");
}
