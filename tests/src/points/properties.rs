//! The property tests (proptest), each on one harness for all its cases.
//!
//! Cases per property: the environment variable `RHO_PROPTEST_CASES`
//! (default 256). Failures are not persisted: proptest prints the minimal
//! failing input, which belongs in a named point.
//!
//! That `plain` is total and bounded, the other property about untrusted
//! values, does not depend on an executor: it is a property test of
//! `rho-untrusted` (`tests/plain_props.rs` there).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rho_tool_core::untrusted::{Exit, Phase, exit_text, timeout_text};
use rho_tool_core::{
    CallEvent, Executor, Gate, Outcome, Tool, ToolCall, ToolOutput, Verdict, Watch,
};

use super::{Rig, assert_panic_text, call, events_of};
use crate::Harness;
use crate::support::{
    Code, DropRaises, HANG, Latch, RaiseOnDrop, RaisesInRun, Reason, ReasonKind, Recorder,
    RecordingWatch, SOON, SerializeRaises, TestGate, TestTool, flag, wait_until, within,
};

/// The proptest configuration of the suite: `RHO_PROPTEST_CASES` cases
/// (default 256), no failure persistence, shrinking bounded (64 steps, one
/// minute: a failing case of a broken executor can take seconds).
pub fn config() -> Config {
    let cases = std::env::var("RHO_PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 64,
        max_shrink_time: 60_000,
        ..Config::default()
    }
}

/// The short timeout of the cases that time out.
const TIMEOUT: Duration = Duration::from_millis(30);

/// Where and when the reason of [`the_reason_never_runs`] is raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Phase gate, before the notice: the gate raises.
    GateRaises,
    /// Phase gate, "at the timeout": the gate waits past the tool's
    /// timeout, then raises (no clock runs in the gate: still a crash).
    GateRaisesAfterTheTimeout,
    /// Phase gate, at a host abort: the waiting gate's future holds a
    /// guard whose `Drop` raises.
    GateAbortedHolding,
    /// Phase tool, before the loop saw the notice: `run` itself raises.
    RunRaises,
    /// Phase tool: the tool's future raises, at once or once the loop saw
    /// `Running`.
    ToolRaises { after_running_seen: bool },
    /// Phase: the tool future's `Drop`, at a kill at the timeout.
    KilledAtTimeout,
    /// Phase: the tool future's `Drop`, at a host abort, before or after
    /// the loop saw `Running`.
    AbortedRunning { after_running_seen: bool },
    /// Phase answer: the untrusted answer's `Serialize` raises.
    SerializeRaises { after_running_seen: bool },
    /// Phase answer: the untrusted answer serialises, then its `Drop`
    /// raises.
    AnswerDropRaises { after_running_seen: bool },
}

impl Scenario {
    fn all() -> impl Strategy<Value = Scenario> {
        prop_oneof![
            Just(Scenario::GateRaises),
            Just(Scenario::GateRaisesAfterTheTimeout),
            Just(Scenario::GateAbortedHolding),
            Just(Scenario::RunRaises),
            any::<bool>()
                .prop_map(|after_running_seen| Scenario::ToolRaises { after_running_seen }),
            Just(Scenario::KilledAtTimeout),
            any::<bool>()
                .prop_map(|after_running_seen| Scenario::AbortedRunning { after_running_seen }),
            any::<bool>()
                .prop_map(|after_running_seen| Scenario::SerializeRaises { after_running_seen }),
            any::<bool>()
                .prop_map(|after_running_seen| Scenario::AnswerDropRaises { after_running_seen }),
        ]
    }

    fn after_running_seen(self) -> bool {
        matches!(
            self,
            Scenario::ToolRaises {
                after_running_seen: true
            } | Scenario::AbortedRunning {
                after_running_seen: true
            } | Scenario::SerializeRaises {
                after_running_seen: true
            } | Scenario::AnswerDropRaises {
                after_running_seen: true
            }
        )
    }

    /// Whether the gate allows (so `Running` comes, once).
    fn allows(self) -> bool {
        !matches!(
            self,
            Scenario::GateRaises
                | Scenario::GateRaisesAfterTheTimeout
                | Scenario::GateAbortedHolding
        )
    }

    /// Whether a held value (guard or answer) records on the `held`
    /// recorder, and is dropped once.
    fn holds(self) -> bool {
        !matches!(
            self,
            Scenario::GateRaises
                | Scenario::GateRaisesAfterTheTimeout
                | Scenario::RunRaises
                | Scenario::ToolRaises { .. }
        )
    }

    fn aborts(self) -> bool {
        matches!(
            self,
            Scenario::GateAbortedHolding | Scenario::AbortedRunning { .. }
        )
    }
}

const TOOL: &str = "hostile";

/// The gate of a scenario; `entered` is set once the gate runs.
fn gate_of<E: Executor>(
    executor: &E,
    scenario: Scenario,
    reason: &Reason,
    held: &Arc<Recorder>,
    entered: &Arc<AtomicBool>,
) -> Arc<dyn Gate> {
    let (executor, reason, held, entered) = (
        executor.clone(),
        reason.clone(),
        held.clone(),
        entered.clone(),
    );
    TestGate::new(move |_| {
        let (reason, entered) = (reason.clone(), entered.clone());
        let guard =
            (scenario == Scenario::GateAbortedHolding).then(|| RaiseOnDrop::new(&reason, &held));
        let wait = executor.sleep(TIMEOUT * 2);
        async move {
            entered.store(true, Ordering::SeqCst);
            match scenario {
                Scenario::GateRaises => reason.raise_as::<Verdict>(),
                Scenario::GateRaisesAfterTheTimeout => {
                    wait.await;
                    reason.raise_as::<Verdict>()
                }
                Scenario::GateAbortedHolding => {
                    let _guard = guard;
                    std::future::pending::<Verdict>().await
                }
                _ => Verdict::Allow,
            }
        }
    })
}

/// The tool of a scenario; `started` is set once its future runs, and it
/// waits for `seen` (the loop saw `Running`) when the scenario says so.
fn tool_of<E: Executor>(
    executor: &E,
    scenario: Scenario,
    reason: &Reason,
    held: &Arc<Recorder>,
    started: &Arc<AtomicBool>,
    seen: &Arc<Latch>,
) -> Arc<dyn Tool> {
    if scenario == Scenario::RunRaises {
        return Arc::new(RaisesInRun::new(TOOL, reason));
    }
    let timeout = match scenario {
        Scenario::KilledAtTimeout | Scenario::GateRaisesAfterTheTimeout => TIMEOUT,
        _ => HANG,
    };
    let (executor, reason, held, started, seen) = (
        executor.clone(),
        reason.clone(),
        held.clone(),
        started.clone(),
        seen.clone(),
    );
    TestTool::new(TOOL, move |_, _| {
        let (reason, started, seen) = (reason.clone(), started.clone(), seen.clone());
        let guard = matches!(
            scenario,
            Scenario::KilledAtTimeout | Scenario::AbortedRunning { .. }
        )
        .then(|| RaiseOnDrop::new(&reason, &held));
        let held = held.clone();
        let wait = executor.sleep(HANG);
        async move {
            started.store(true, Ordering::SeqCst);
            if scenario.after_running_seen() {
                seen.wait().await;
            }
            match scenario {
                Scenario::ToolRaises { .. } => reason.raise_as::<ToolOutput>(),
                Scenario::KilledAtTimeout | Scenario::AbortedRunning { .. } => {
                    let _guard = guard;
                    wait.await;
                    ToolOutput::text("woke up")
                }
                Scenario::SerializeRaises { .. } => {
                    ToolOutput::text("1 hit").with_details(SerializeRaises::new(&reason, &held))
                }
                Scenario::AnswerDropRaises { .. } => {
                    ToolOutput::text("1 hit").with_details(DropRaises::new(&reason, &held))
                }
                _ => ToolOutput::text("allowed"),
            }
        }
    })
    .untrusted()
    .with_timeout(timeout)
    .into_arc()
}

/// What one case of [`the_reason_never_runs`] saw.
struct Seen {
    running: bool,
    end: rho_tool_core::CallEnd,
    settled: bool,
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seen")
            .field("running", &self.running)
            .field("end", &self.end)
            .field("settled", &self.settled)
            .finish()
    }
}

fn reason_case<H: Harness>(
    rig: &Rig<H>,
    kind: ReasonKind,
    scenario: Scenario,
) -> Result<(), TestCaseError> {
    let executor = rig.executor();
    let reason = Reason::new(kind);
    let held = Recorder::new();
    let entered = flag();
    let started = flag();
    let seen = Latch::new();
    let gate = gate_of(&executor, scenario, &reason, &held, &entered);
    let tool = tool_of(&executor, scenario, &reason, &held, &started, &seen);
    let runner = rig.runner().with_gate(gate);
    let outcome = rig.run(async {
        let mut handle = runner.start(call("c1", TOOL), tool);
        let mut running = false;
        if scenario.aborts() {
            if scenario.after_running_seen() {
                match within(&executor, SOON, handle.next_event()).await {
                    Some(Some(CallEvent::Running(_))) => running = true,
                    other => panic!("expected Running first, got {other:?}"),
                }
                seen.open();
            }
            let reached = wait_until(&executor, SOON, || {
                entered.load(Ordering::SeqCst)
                    && (!scenario.allows() || started.load(Ordering::SeqCst))
            })
            .await;
            assert!(reached, "the call never reached the point of its abort");
            handle.abort();
        }
        let (more, end) = events_of(&executor, &mut handle, |_| seen.open()).await;
        let running = running || more.is_some();
        // A killed task's future goes asynchronously: wait for the reason
        // to have been raised and disposed of, and the task to be gone.
        let settled = wait_until(&executor, SOON, || {
            reason.raised().count(Code::Run) == 1
                && (!kind.is_custom() || reason.first().count(Code::Drop) == 1)
                && (!scenario.holds() || held.count(Code::Drop) == 1)
                && executor.live() == 0
        })
        .await;
        Seen {
            running,
            end,
            settled,
        }
    });
    let Seen {
        running,
        end,
        settled,
    } = outcome;
    prop_assert!(
        settled,
        "the case never settled: {reason:?}, held {held:?}, live {}",
        executor.live()
    );
    prop_assert_eq!(running, scenario.allows(), "Running events: {:?}", end);
    let message = kind.message();
    match scenario {
        Scenario::GateRaises | Scenario::GateRaisesAfterTheTimeout => {
            prop_assert_eq!(end.outcome, Outcome::Crashed, "{:?}", end);
            assert_panic_text(&end.result, TOOL, Phase::Gate, message.as_deref());
        }
        Scenario::RunRaises | Scenario::ToolRaises { .. } => {
            prop_assert_eq!(end.outcome, Outcome::Crashed, "{:?}", end);
            assert_panic_text(&end.result, TOOL, Phase::Tool, message.as_deref());
        }
        Scenario::SerializeRaises { .. } | Scenario::AnswerDropRaises { .. } => {
            prop_assert_eq!(end.outcome, Outcome::Crashed, "{:?}", end);
            assert_panic_text(&end.result, TOOL, Phase::Answer, message.as_deref());
        }
        Scenario::KilledAtTimeout => {
            prop_assert_eq!(end.outcome, Outcome::TimedOut, "{:?}", end);
            prop_assert_eq!(end.result.text(), timeout_text(TOOL, TIMEOUT));
        }
        Scenario::GateAbortedHolding | Scenario::AbortedRunning { .. } => {
            prop_assert_eq!(end.outcome, Outcome::Aborted, "{:?}", end);
            prop_assert_eq!(end.result.text(), exit_text(TOOL, Exit::Aborted));
        }
    }
    prop_assert!(end.result.is_error);
    prop_assert_eq!(&end.result.details, &None);
    // Nothing recorded ran in the loop; everything ran in the call's task.
    for (what, recorder) in [
        ("the raise", reason.raised()),
        ("the payload", reason.first()),
        ("the held value", &held),
    ] {
        prop_assert_eq!(
            recorder.in_loop(),
            0,
            "{} ran in the loop: {:?}",
            what,
            recorder
        );
        prop_assert_eq!(
            recorder.outside_task(),
            0,
            "{} ran outside its task: {:?}",
            what,
            recorder
        );
    }
    prop_assert_eq!(
        reason.first().formats(),
        0,
        "the payload was formatted: {:?}",
        reason
    );
    prop_assert_eq!(
        reason.second().runs(),
        0,
        "the second payload ran: {:?}",
        reason
    );
    Ok(())
}

/// **The reason never runs**, on this executor: no code of a foreign
/// panic payload or answer runs in the loop, whatever ends the call.
///
/// Generated over the payload kind (`&'static str`, `String`, custom values
/// whose `Drop`, `Display`, `Debug`, `Clone` or `Serialize` records and
/// may panic, a `Drop` that panics with a second payload), the phase (gate,
/// tool, the tool future's `Drop` at a kill, the untrusted answer's
/// `Serialize` and `Drop`) and the timing (before or after the loop saw the
/// running notice, at the timeout, at a host abort). Property: the call
/// ends with exactly one result, an error of the expected class and text
/// (`Running` exactly when the gate allowed), and no recorded code ran
/// while the loop was polled or dropped, nor outside the call's task; a
/// panic payload is never formatted and a second payload never runs.
pub fn the_reason_never_runs<H: Harness>() {
    let rig = Rig::<H>::new();
    let strategy = (proptest::sample::select(ReasonKind::all()), Scenario::all());
    let mut runner = TestRunner::new(config());
    let result = runner.run(&strategy, |(kind, scenario)| {
        reason_case(&rig, kind, scenario)
    });
    if let Err(error) = result {
        panic!("the reason never runs: {error}");
    }
    rig.finish();
}

/// How a call of [`every_call_ends_exactly_once`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndKind {
    Succeeds,
    Fails,
    Denied,
    GatePanics,
    ToolPanics,
    TimesOut,
    AbortedAtGate,
    AbortedRunning,
    Dropped,
}

impl EndKind {
    const ALL: [EndKind; 9] = [
        EndKind::Succeeds,
        EndKind::Fails,
        EndKind::Denied,
        EndKind::GatePanics,
        EndKind::ToolPanics,
        EndKind::TimesOut,
        EndKind::AbortedAtGate,
        EndKind::AbortedRunning,
        EndKind::Dropped,
    ];

    fn name(self) -> &'static str {
        match self {
            EndKind::Succeeds => "succeeds",
            EndKind::Fails => "fails",
            EndKind::Denied => "denied",
            EndKind::GatePanics => "gate_panics",
            EndKind::ToolPanics => "tool_panics",
            EndKind::TimesOut => "times_out",
            EndKind::AbortedAtGate => "aborted_at_gate",
            EndKind::AbortedRunning => "aborted_running",
            EndKind::Dropped => "dropped",
        }
    }

    fn outcome(self) -> Outcome {
        match self {
            EndKind::Succeeds => Outcome::Succeeded,
            EndKind::Fails => Outcome::Failed,
            EndKind::Denied => Outcome::Denied,
            EndKind::GatePanics | EndKind::ToolPanics => Outcome::Crashed,
            EndKind::TimesOut => Outcome::TimedOut,
            EndKind::AbortedAtGate | EndKind::AbortedRunning | EndKind::Dropped => Outcome::Aborted,
        }
    }
}

fn ends_case<H: Harness>(rig: &Rig<H>, kinds: &[EndKind]) -> Result<(), TestCaseError> {
    let executor = rig.executor();
    let watch = RecordingWatch::new();
    let gate = TestGate::new(|call: ToolCall| async move {
        match call.arguments["kind"].as_str() {
            Some("denied") => Verdict::deny("no"),
            Some("gate_panics") => panic!("the gate panicked"),
            Some("aborted_at_gate") => std::future::pending().await,
            _ => Verdict::Allow,
        }
    });
    let runner = rig
        .runner()
        .with_gate(gate)
        .with_watch(watch.clone() as Arc<dyn Watch>);
    let spawned_before = executor.spawned();
    let calls: Vec<_> = kinds
        .iter()
        .enumerate()
        .map(|(n, kind)| {
            let started = flag();
            let tool = {
                let (executor, started, kind) = (executor.clone(), started.clone(), *kind);
                TestTool::new(kind.name(), move |_, _| {
                    let wait = executor.sleep(HANG);
                    let started = started.clone();
                    async move {
                        started.store(true, Ordering::SeqCst);
                        match kind {
                            EndKind::Fails => ToolOutput::error("no"),
                            EndKind::ToolPanics => panic!("the tool panicked"),
                            EndKind::TimesOut | EndKind::AbortedRunning | EndKind::Dropped => {
                                wait.await;
                                ToolOutput::text("woke up")
                            }
                            _ => ToolOutput::text("fine"),
                        }
                    }
                })
                .with_timeout(if kind == EndKind::TimesOut {
                    TIMEOUT
                } else {
                    HANG
                })
                .into_arc()
            };
            let call = ToolCall::new(
                format!("c{n}"),
                kind.name(),
                serde_json::json!({ "kind": kind.name() }),
            );
            (*kind, call, tool, started)
        })
        .collect();
    let ends = rig.run(async {
        let handles: Vec<_> = calls
            .into_iter()
            .map(|(kind, call, tool, started)| (kind, runner.start(call, tool), started))
            .collect();
        let mut ends = Vec::new();
        for (kind, mut handle, started) in handles {
            let task = handle.task();
            match kind {
                EndKind::Dropped => {
                    drop(handle);
                    ends.push((kind, task, None));
                    continue;
                }
                EndKind::AbortedAtGate => handle.abort(),
                EndKind::AbortedRunning => {
                    let reached =
                        wait_until(&executor, SOON, || started.load(Ordering::SeqCst)).await;
                    assert!(reached, "the tool never started");
                    handle.abort();
                }
                _ => {}
            }
            let (_, end) = events_of(&executor, &mut handle, |_| {}).await;
            ends.push((kind, task, Some(end)));
        }
        let clean = wait_until(&executor, SOON, || executor.live() == 0).await;
        (ends, clean)
    });
    let (ends, clean) = ends;
    prop_assert!(
        clean,
        "task leak: {} tasks alive after every call ended",
        executor.live()
    );
    prop_assert_eq!(
        executor.spawned() - spawned_before,
        kinds.len(),
        "one task per call"
    );
    for (kind, task, end) in ends {
        if let Some(end) = &end {
            prop_assert_eq!(end.outcome, kind.outcome(), "{:?}", end);
        }
        prop_assert_eq!(
            watch.started_for(task).len(),
            1,
            "{:?}: started told once",
            kind
        );
        prop_assert_eq!(
            watch.ended_for(task),
            vec![(kind.name().to_owned(), kind.outcome())],
            "{:?}: ended told once",
            kind
        );
    }
    Ok(())
}

/// **Every call ends exactly once**: for generated batches of calls in
/// flight together (1 to 8, each ending its own way: succeeds, fails,
/// denied, gate panics, tool panics, times out, aborted at the gate or
/// while running, handle dropped), each awaited call reports at most one
/// `Running` and exactly one `Ended` of its expected outcome, the watch is
/// told each start and end exactly once, each call is one task, and no
/// task is left once all ended.
pub fn every_call_ends_exactly_once<H: Harness>() {
    let rig = Rig::<H>::new();
    let strategy =
        proptest::collection::vec(proptest::sample::select(EndKind::ALL.to_vec()), 1..=8);
    let mut runner = TestRunner::new(config());
    let result = runner.run(&strategy, |kinds| ends_case(&rig, &kinds));
    if let Err(error) = result {
        panic!("every call ends exactly once: {error}");
    }
    rig.finish();
}
