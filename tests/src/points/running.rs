//! The running notice, which starts the timeout clock: sent at most once,
//! after the gate allowed and before the tool starts; the loop reports it
//! before the call's end, and never for a call whose gate did not allow it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_tool_core::{CallEvent, Executor, Outcome, ToolCall, ToolOutput, Verdict};

use super::{Rig, all_events_of, events_of};
use crate::Harness;
use crate::support::{
    EventLog, Latch, Reason, ReasonKind, SOON, Step, TestGate, TestTool, poll_once, wait_until,
    within,
};

/// Checks the notice on calls of every kind.
///
/// - A gated call: while its gate holds, the loop gets no event; once the
///   gate allows, exactly one `Running` arrives, after the gate's "allowed"
///   step; the notice's moment (`started + waited`) lies after the gate
///   allowed and before the tool's first poll (checked one-sidedly against
///   instants taken around `start`, so no timing can make it flaky).
/// - A call whose tool finished before the loop first looked: `Running`,
///   then `Ended`, `ran` known.
/// - A call whose tool panics, and one that times out: one `Running`.
/// - A denied call, a call whose gate panics, a call aborted at its gate:
///   no `Running` at all.
pub fn the_running_notice_comes_at_most_once_after_the_gate_allows_and_before_the_tool_starts<
    H: Harness,
>() {
    const TIMEOUT: Duration = Duration::from_millis(150);
    let rig = Rig::<H>::new();
    let executor = rig.executor();
    let log = EventLog::new();
    let gate_release = Latch::new();
    let tool_release = Latch::new();
    let reason = Reason::new(ReasonKind::StaticStr);
    let gate = {
        let (log, gate_release, reason) = (log.clone(), gate_release.clone(), reason.clone());
        TestGate::new(move |call: ToolCall| {
            let (log, gate_release, reason) = (log.clone(), gate_release.clone(), reason.clone());
            async move {
                match call.arguments["gate"].as_str() {
                    Some("hold") => {
                        gate_release.wait().await;
                        log.log(Step::GateAllowed);
                        Verdict::Allow
                    }
                    Some("deny") => Verdict::deny("no"),
                    Some("panic") => reason.raise(),
                    Some("never") => std::future::pending().await,
                    _ => Verdict::Allow,
                }
            }
        })
    };
    let logged = {
        let (log, tool_release) = (log.clone(), tool_release.clone());
        TestTool::new("logged", move |_, _| {
            let (log, tool_release) = (log.clone(), tool_release.clone());
            async move {
                log.log(Step::ToolStarted);
                tool_release.wait().await;
                ToolOutput::text("done")
            }
        })
        .into_arc()
    };
    let quick = TestTool::answering("quick", "done");
    let quick_runs = quick.runs();
    let quick = quick.into_arc();
    let crashes = TestTool::new("crashes", |_, _| async { panic!("boom") }).into_arc();
    let hangs = {
        let executor = executor.clone();
        TestTool::new("hangs", move |_, _| {
            let wait = executor.sleep(crate::support::HANG);
            async move {
                wait.await;
                ToolOutput::text("never")
            }
        })
        .with_timeout(TIMEOUT)
        .into_arc()
    };
    let gated = |id: &str, name: &str, gate: &str| {
        ToolCall::new(id, name, serde_json::json!({ "gate": gate }))
    };
    let runner = rig.runner().with_gate(gate);
    rig.run(async {
        // The gated call.
        let before_start = Instant::now();
        let mut handle = runner.start(gated("held", "logged", "hold"), logged.clone());
        let after_start = Instant::now();
        // The gate did not answer at its first poll: the loop hears it waits.
        match within(&executor, SOON, handle.next_event()).await {
            Some(Some(CallEvent::AwaitingApproval(waiting))) => assert_eq!(waiting.call_id, "held"),
            other => panic!("expected AwaitingApproval while the gate holds, got {other:?}"),
        }
        for _ in 0..5 {
            assert!(
                poll_once(&mut Box::pin(handle.next_event()))
                    .await
                    .is_none(),
                "an event (Running?) while the gate holds"
            );
            executor.sleep(Duration::from_millis(10)).await;
        }
        assert!(!handle.is_running());
        gate_release.open();
        let (running, end) = events_of(&executor, &mut handle, |_| {
            log.log(Step::LoopSawRunning);
            assert!(
                log.at(Step::GateAllowed).is_some(),
                "Running arrived before the gate allowed: {:?}",
                log.steps()
            );
            tool_release.open();
        })
        .await;
        log.log(Step::LoopSawEnded);
        let running = running.expect("the gate allowed: one Running");
        assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
        let steps = log.steps();
        let allowed = log.at(Step::GateAllowed).expect("the gate allowed");
        let started = log.at(Step::ToolStarted).expect("the tool started");
        assert_eq!(steps.iter().filter(|s| **s == Step::GateAllowed).count(), 1);
        assert_eq!(steps.iter().filter(|s| **s == Step::ToolStarted).count(), 1);
        assert_eq!(steps.last(), Some(&Step::LoopSawEnded), "{steps:?}");
        // The notice was set at `started_at + waited`, with `started_at`
        // (the handle's creation) between `before_start` and `after_start`.
        assert!(
            allowed <= after_start + running.waited,
            "the notice was sent before the gate allowed (waited {:?})",
            running.waited
        );
        assert!(
            before_start + running.waited <= started,
            "the tool started before the notice was sent (waited {:?})",
            running.waited
        );

        // A call whose task ends before the loop first looks (a loop busy
        // elsewhere, or simply a quick tool): still exactly `Running`, then
        // `Ended`, with `ran` known.
        let mut handle = runner.start(gated("quick", "quick", "allow"), quick.clone());
        assert!(
            wait_until(&executor, SOON, || quick_runs.load(Ordering::SeqCst) == 1).await,
            "the quick tool never ran"
        );
        assert!(
            wait_until(&executor, SOON, || executor.live() == 0).await,
            "the quick call's task never finished"
        );
        executor.sleep(Duration::from_millis(50)).await;
        let events = all_events_of(&executor, &mut handle, |_| {}).await;
        assert!(!events.awaiting_approval, "the gate allowed at once");
        assert!(
            events.running.is_some(),
            "a call that ran reported no Running"
        );
        assert_eq!(events.end.outcome, Outcome::Succeeded, "{:?}", events.end);

        // Calls that ran and ended badly: one Running each.
        for (id, tool, outcome) in [
            ("crashes", &crashes, Outcome::Crashed),
            ("hangs", &hangs, Outcome::TimedOut),
        ] {
            let mut handle = runner.start(gated(id, id, "allow"), Arc::clone(tool));
            let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
            assert!(running.is_some(), "{id}: no Running");
            assert_eq!(end.outcome, outcome, "{end:?}");
        }

        // Calls whose gate never allowed: no Running.
        for (id, gate, outcome) in [
            ("denied", "deny", Outcome::Denied),
            ("gate_panics", "panic", Outcome::Crashed),
            ("never", "never", Outcome::Aborted),
        ] {
            let mut handle = runner.start(gated(id, "quick", gate), quick.clone());
            if gate == "never" {
                handle.abort();
            }
            let (running, end) = events_of(&executor, &mut handle, |_| {}).await;
            assert!(
                running.is_none(),
                "{id}: Running though the gate never allowed"
            );
            assert_eq!(end.outcome, outcome, "{end:?}");
        }
    });
    assert_eq!(
        quick_runs.load(Ordering::SeqCst),
        1,
        "a gate that did not allow ran the tool"
    );
    rig.finish();
}
