//! The model's order, as properties over random turns, on tokio and on
//! smol: shared, exclusive and bounded calls with random durations,
//! gates, approvals, failures, panics, unknown tools, aborts, a turn that
//! stops at its first failure, and a second turn on the same runner at
//! the same time.
//!
//! What each tool run does is logged with a sequence number taken from
//! one counter (no clocks): the order relation is checked on those
//! numbers, and the bounds on counters of runs in progress.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use proptest::prelude::*;
use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{
    ApprovalRequest, Concurrency, Executor, Gate, Outcome, Tool, ToolCall, ToolContext, ToolOutput,
    Verdict, async_trait,
};
use rho_turn::{SessionEntry, TurnEvent, TurnRunner};
use serde_json::{Value, json};

/// The tool's own timeout: far above any one run (at most 12 ms of
/// sleep), far below what a whole turn of exclusive calls and slow gates
/// can wait in line. A call that waited on its clock would time out.
const TIMEOUT: Duration = Duration::from_millis(400);
/// How long a turn may take before the test calls it a deadlock.
const DEADLOCK: Duration = Duration::from_secs(60);
/// The bound `capped` declares itself (held by the registry).
const CAPPED: usize = 2;
/// The bound the host puts on `limited` (held by the runner).
const LIMITED: usize = 1;
/// The bound on every call of the `probe` source's tools.
const SOURCE: usize = 3;

/// Which tool a call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Read-only: shared.
    Shared,
    /// Says nothing: exclusive.
    Exclusive,
    /// Shared, at most [`CAPPED`] at once, by its own word.
    Capped,
    /// Exclusive by its own word, shared at most [`LIMITED`] at once by the
    /// host's.
    Limited,
    /// No such tool: refused before its gate.
    Unknown,
}

impl Kind {
    fn tool(self) -> &'static str {
        match self {
            Kind::Shared => "shared",
            Kind::Exclusive => "exclusive",
            Kind::Capped => "capped",
            Kind::Limited => "limited",
            Kind::Unknown => "unknown",
        }
    }

    /// Whether a call of it takes the turn's order exclusively.
    fn exclusive(self) -> bool {
        self == Kind::Exclusive
    }
}

/// What the gate does with a call.
#[derive(Debug, Clone, Copy)]
enum GateDoes {
    Allow,
    /// Allows after this many ms (a slow policy).
    AllowAfter(u64),
    Deny,
    /// Asks the approver, who answers after this many ms.
    Ask {
        after: u64,
        allow: bool,
    },
}

/// How a tool's run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    Ok,
    Fails,
    Panics,
}

#[derive(Debug, Clone)]
struct Spec {
    kind: Kind,
    /// How long the tool sleeps, in ms.
    ms: u64,
    gate: GateDoes,
    ends: Ends,
}

#[derive(Debug, Clone)]
struct Case {
    calls: Vec<Spec>,
    /// A second turn of these calls on the same runner, at the same time.
    twin: Option<Vec<Spec>>,
    stop_on_failure: bool,
    /// Aborts the first turn this many ms after it starts.
    abort_after: Option<u64>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let kind = prop_oneof![
        4 => Just(Kind::Shared),
        3 => Just(Kind::Exclusive),
        2 => Just(Kind::Capped),
        2 => Just(Kind::Limited),
        1 => Just(Kind::Unknown),
    ];
    let gate = prop_oneof![
        6 => Just(GateDoes::Allow),
        2 => (1..15_u64).prop_map(GateDoes::AllowAfter),
        1 => Just(GateDoes::Deny),
        2 => (1..15_u64, any::<bool>()).prop_map(|(after, allow)| GateDoes::Ask { after, allow }),
    ];
    let ends = prop_oneof![8 => Just(Ends::Ok), 2 => Just(Ends::Fails), 1 => Just(Ends::Panics)];
    (kind, 0..12_u64, gate, ends).prop_map(|(kind, ms, gate, ends)| Spec {
        kind,
        ms,
        gate,
        ends,
    })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(spec(), 1..12),
        prop::option::weighted(0.3, prop::collection::vec(spec(), 1..8)),
        any::<bool>(),
        prop::option::weighted(0.2, 0..40_u64),
    )
        .prop_map(|(calls, twin, stop_on_failure, abort_after)| Case {
            // An abort kills runs whose futures are dropped after their
            // calls end: their permits go back first, so bounds are
            // counted on turns without one.
            twin: twin.filter(|_| abort_after.is_none()),
            calls,
            stop_on_failure,
            abort_after,
        })
}

/// One run of a tool, as the tool saw it.
#[derive(Debug, Clone, Copy)]
struct Run {
    turn: usize,
    index: usize,
    began: u64,
    ended: Option<u64>,
}

/// What the tools saw: their runs, and the most running at once.
#[derive(Debug, Default)]
struct Log {
    seq: AtomicU64,
    runs: Mutex<Vec<Run>>,
    running: Mutex<HashMap<&'static str, usize>>,
    most: Mutex<HashMap<&'static str, usize>>,
}

impl Log {
    fn next(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst)
    }

    fn runs(&self) -> Vec<Run> {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn most(&self, what: &str) -> usize {
        let most = self.most.lock().unwrap_or_else(PoisonError::into_inner);
        most.get(what).copied().unwrap_or(0)
    }

    /// A run of `tool` begins: counted for the tool and its source.
    fn begin(self: &Arc<Self>, tool: &'static str, turn: usize, index: usize) -> Running {
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            let mut most = self.most.lock().unwrap_or_else(PoisonError::into_inner);
            for key in [tool, "source"] {
                let now = running.entry(key).or_default();
                *now += 1;
                let top = most.entry(key).or_default();
                *top = (*top).max(*now);
            }
            let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
            runs.push(Run {
                turn,
                index,
                began: self.next(),
                ended: None,
            });
        }
        Running {
            log: self.clone(),
            tool,
            turn,
            index,
        }
    }
}

/// A run in progress; its drop (the run returned, panicked or was
/// killed) ends it.
struct Running {
    log: Arc<Log>,
    tool: &'static str,
    turn: usize,
    index: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        let log = &self.log;
        let ended = log.next();
        // One lock at a time: `begin` takes `running` before `runs`, so
        // holding `runs` while taking `running` would deadlock with it.
        {
            let mut runs = log.runs.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(run) = runs
                .iter_mut()
                .find(|run| run.turn == self.turn && run.index == self.index)
            {
                run.ended = Some(ended);
            }
        }
        let mut running = log.running.lock().unwrap_or_else(PoisonError::into_inner);
        for key in [self.tool, "source"] {
            *running.entry(key).or_default() -= 1;
        }
    }
}

struct Probe {
    name: &'static str,
    concurrency: Concurrency,
    log: Arc<Log>,
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "logs its run"
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object" })
    }
    fn timeout(&self) -> Duration {
        TIMEOUT
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
    async fn run(&self, args: Value, cx: ToolContext) -> ToolOutput {
        let number = |key: &str| args[key].as_u64().unwrap_or_default();
        let (turn, index) = (number("turn") as usize, number("index") as usize);
        let _running = self.log.begin(self.name, turn, index);
        cx.sleep(Duration::from_millis(number("ms"))).await;
        match args["ends"].as_str() {
            Some("fails") => ToolOutput::error("it failed, as asked"),
            Some("panics") => panic!("it panicked, as asked"),
            _ => ToolOutput::text("done"),
        }
    }
}

/// Does what each call's `gate` argument says.
struct ScriptedGate<E> {
    executor: E,
}

#[async_trait]
impl<E: Executor> Gate for ScriptedGate<E> {
    async fn check(&self, call: &ToolCall, _tool: &dyn Tool) -> Verdict {
        let gate = &call.arguments["gate"];
        match gate["does"].as_str() {
            Some("deny") => Verdict::deny("denied, as asked"),
            Some("ask") => Verdict::ask("asked, as asked"),
            Some("after") => {
                let ms = gate["ms"].as_u64().unwrap_or_default();
                self.executor.sleep(Duration::from_millis(ms)).await;
                Verdict::Allow
            }
            _ => Verdict::Allow,
        }
    }
}

fn registry(log: &Arc<Log>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let source = registry
        .add_source(Source::trusted("probe").with_max_concurrent_calls(SOURCE))
        .expect("a new source");
    for (name, concurrency) in [
        ("shared", Concurrency::Shared),
        ("exclusive", Concurrency::Exclusive),
        ("capped", Concurrency::bounded(CAPPED)),
        ("limited", Concurrency::Exclusive),
    ] {
        let probe = Probe {
            name,
            concurrency,
            log: log.clone(),
        };
        source.add(Arc::new(probe)).expect("a new tool");
    }
    registry
}

fn runner<E: Executor>(executor: E, log: &Arc<Log>, stop_on_failure: bool) -> TurnRunner<E> {
    let approver = {
        let executor = executor.clone();
        move |request: ApprovalRequest| {
            let executor = executor.clone();
            async move {
                let gate = &request.arguments["gate"];
                let ms = gate["ms"].as_u64().unwrap_or_default();
                executor.sleep(Duration::from_millis(ms)).await;
                if gate["allow"].as_bool().unwrap_or_default() {
                    Verdict::Allow
                } else {
                    Verdict::deny("the person said no")
                }
            }
        }
    };
    TurnRunner::new(executor.clone(), registry(log))
        .with_gate(Arc::new(ScriptedGate { executor }))
        .with_approver(Arc::new(approver))
        .with_concurrency("limited", Concurrency::bounded(LIMITED))
        .with_stop_on_failure(stop_on_failure)
}

fn calls(turn: usize, specs: &[Spec]) -> Vec<ToolCall> {
    specs
        .iter()
        .enumerate()
        .map(|(index, spec)| {
            let gate = match spec.gate {
                GateDoes::Allow => json!({ "does": "allow" }),
                GateDoes::AllowAfter(ms) => json!({ "does": "after", "ms": ms }),
                GateDoes::Deny => json!({ "does": "deny" }),
                GateDoes::Ask { after, allow } => {
                    json!({ "does": "ask", "ms": after, "allow": allow })
                }
            };
            let ends = match spec.ends {
                Ends::Ok => "ok",
                Ends::Fails => "fails",
                Ends::Panics => "panics",
            };
            let arguments = json!({
                "turn": turn, "index": index, "ms": spec.ms, "gate": gate, "ends": ends,
            });
            ToolCall::new(format!("t{turn}-c{index}"), spec.kind.tool(), arguments)
        })
        .collect()
}

/// What one case gives: each turn's entries and events, and the log.
struct Seen {
    entries: Vec<Vec<SessionEntry>>,
    events: Vec<TurnEvent>,
    log: Arc<Log>,
}

/// Runs `case` on `executor`, `block_on` driving the turns, on a thread of
/// its own so that a deadlock fails the test instead of hanging it.
fn run<E: Executor>(
    executor: E,
    block_on: impl FnOnce(
        std::pin::Pin<Box<dyn Future<Output = Vec<Vec<SessionEntry>>> + Send>>,
    ) -> Vec<Vec<SessionEntry>>
    + Send
    + 'static,
    case: &Case,
) -> Seen {
    let log = Arc::new(Log::default());
    let turns = runner(executor.clone(), &log, case.stop_on_failure);
    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = events.clone();
    let subscription = turns
        .events()
        .subscribe(move |event: &TurnEvent| {
            recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event.clone());
        })
        .expect("a subscriber thread");
    let first = turns.turn(calls(0, &case.calls));
    let abort = first.abort_handle();
    let abort_after = case.abort_after;
    let twin = case.twin.as_ref().map(|specs| turns.turn(calls(1, specs)));
    let sleeper = executor.clone();
    let all = Box::pin(async move {
        let aborter = async move {
            if let Some(ms) = abort_after {
                sleeper.sleep(Duration::from_millis(ms)).await;
                abort.abort();
            }
        };
        let first = async move { join(first, aborter).await.0 };
        let second = async move {
            match twin {
                Some(twin) => Some(twin.await),
                None => None,
            }
        };
        let (first, second) = join(first, second).await;
        std::iter::once(first).chain(second).collect()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(block_on(all));
    });
    let entries = rx
        .recv_timeout(DEADLOCK)
        .unwrap_or_else(|_| panic!("the turns did not end within {DEADLOCK:?}: a deadlock"));
    let expected: usize = entries.iter().map(Vec::len).sum();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let ends = || {
        events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|event| matches!(event, TurnEvent::ToolExecutionEnd(_)))
            .count()
    };
    while ends() < expected && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(subscription);
    let events = events
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Seen {
        entries,
        events,
        log,
    }
}

/// Both futures, polled side by side, to the end of both.
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut a_out, mut b_out) = (None, None);
    std::future::poll_fn(|cx| {
        if a_out.is_none()
            && let std::task::Poll::Ready(value) = a.as_mut().poll(cx)
        {
            a_out = Some(value);
        }
        if b_out.is_none()
            && let std::task::Poll::Ready(value) = b.as_mut().poll(cx)
        {
            b_out = Some(value);
        }
        match (a_out.take(), b_out.take()) {
            (Some(a), Some(b)) => std::task::Poll::Ready((a, b)),
            (a, b) => {
                (a_out, b_out) = (a, b);
                std::task::Poll::Pending
            }
        }
    })
    .await
}

/// Every property of one case.
fn check(case: &Case, seen: &Seen) {
    let turns: Vec<&[Spec]> = std::iter::once(case.calls.as_slice())
        .chain(case.twin.as_deref())
        .collect();
    let runs = seen.log.runs();
    for (turn, specs) in turns.iter().enumerate() {
        let entries = &seen.entries[turn];
        // One entry per call, in the model's order; one start and one end
        // event each.
        assert_eq!(entries.len(), specs.len());
        for (index, entry) in entries.iter().enumerate() {
            assert_eq!(entry.call_id, format!("t{turn}-c{index}"));
            let id = entry.call_id.as_str();
            let of = |name: &str| {
                seen.events
                    .iter()
                    .filter(|event| event.call_id() == id && event.name() == name)
                    .count()
            };
            assert_eq!(of("tool_execution_start"), 1, "{id}: one start");
            assert_eq!(of("tool_execution_end"), 1, "{id}: one end");
            // Told once per thing it waited for: its place, a bound of the
            // host's or the tool's, the source's bound.
            assert!(
                of("tool_execution_queued") <= 3,
                "{id}: queued at most thrice"
            );
            // The clock never ran while the call waited: nothing timed out.
            assert_ne!(entry.outcome, Outcome::TimedOut, "{id}: {}", entry.text());
        }
        let ran = |index: usize| {
            runs.iter()
                .find(|run| run.turn == turn && run.index == index)
                .copied()
        };
        // The order: an exclusive call's run and any other run of the
        // turn do not overlap, and the earlier call's run comes first.
        // An aborted call's run ends when its killed future is dropped,
        // after the call ended: it is left out.
        let aborted = |index: usize| entries[index].outcome == Outcome::Aborted;
        for j in 0..specs.len() {
            let Some(later) = ran(j) else { continue };
            for i in 0..j {
                let Some(earlier) = ran(i).filter(|_| !aborted(i)) else {
                    continue;
                };
                if specs[i].kind.exclusive() || specs[j].kind.exclusive() {
                    let ended = earlier.ended.expect("an earlier run ended");
                    assert!(
                        ended < later.began,
                        "turn {turn}: call {j} ({:?}) began at {} before call {i} ({:?}) ended at {ended}",
                        specs[j].kind,
                        later.began,
                        specs[i].kind,
                    );
                }
            }
        }
        // Each call ends as its spec says, unless stopped or aborted.
        let failed = first_failure(&seen.events, turn);
        for (index, (spec, entry)) in specs.iter().zip(entries).enumerate() {
            let id = &entry.call_id;
            let skipped = entry
                .result
                .details
                .as_ref()
                .is_some_and(|d| d.to_string().contains("earlier_call_failed"));
            if skipped {
                let (at, failed_id) = failed.clone().expect("a skip after a failure");
                assert!(case.stop_on_failure, "{id}: skipped without the option");
                assert!(at < index, "{id}: skipped after a later call");
                assert_eq!(entry.outcome, Outcome::Refused);
                assert!(entry.text().contains(&failed_id), "{}", entry.text());
                assert!(ran(index).is_none(), "{id}: skipped but it ran");
                continue;
            }
            if entry.outcome == Outcome::Aborted {
                assert!(case.abort_after.is_some() && turn == 0, "{id}: aborted");
                continue;
            }
            let expected = match (spec.kind, spec.gate, spec.ends) {
                (Kind::Unknown, ..) => Outcome::Refused,
                (_, GateDoes::Deny | GateDoes::Ask { allow: false, .. }, _) => Outcome::Denied,
                (_, _, Ends::Ok) => Outcome::Succeeded,
                (_, _, Ends::Fails) => Outcome::Failed,
                (_, _, Ends::Panics) => Outcome::Crashed,
            };
            assert_eq!(entry.outcome, expected, "{id}: {}", entry.text());
            let should_run = matches!(
                expected,
                Outcome::Succeeded | Outcome::Failed | Outcome::Crashed
            );
            assert_eq!(ran(index).is_some(), should_run, "{id}: ran or not");
            // A call that must wait for the failed call never ran.
            if let Some((at, _)) = &failed
                && case.stop_on_failure
                && *at < index
                && should_run
            {
                assert!(
                    !(specs[*at].kind.exclusive() || spec.kind.exclusive())
                        || specs[*at].kind == Kind::Unknown,
                    "{id} ran after call {at} failed, which it had to wait for"
                );
            }
        }
    }
    // The bounds, across both turns.
    assert!(
        seen.log.most("capped") <= CAPPED,
        "capped: {}",
        seen.log.most("capped")
    );
    assert!(
        seen.log.most("limited") <= LIMITED,
        "limited: {}",
        seen.log.most("limited")
    );
    assert!(
        seen.log.most("source") <= SOURCE,
        "source: {}",
        seen.log.most("source")
    );
}

/// The index and id of the first call of `turn` whose end was not a
/// success, in the order the turn published ends.
fn first_failure(events: &[TurnEvent], turn: usize) -> Option<(usize, String)> {
    let prefix = format!("t{turn}-");
    events.iter().find_map(|event| match event {
        TurnEvent::ToolExecutionEnd(end)
            if end.call_id().starts_with(&prefix) && end.outcome() != Outcome::Succeeded =>
        {
            Some((end.index, end.call_id().to_owned()))
        }
        _ => None,
    })
}

fn tokio_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// On tokio: runs respect the order relation, every call ends once as
    /// its spec says, nothing deadlocks, no call's clock ran while it
    /// waited, and no bound is exceeded.
    #[test]
    fn on_tokio_runs_keep_the_order_end_once_and_stay_within_bounds(case in case()) {
        let runtime = tokio_runtime();
        let executor = TokioExecutor::new(runtime.handle().clone()).expect("a timer");
        let handle = runtime.handle().clone();
        let seen = run(executor, move |all| handle.block_on(all), &case);
        check(&case, &seen);
    }

    /// The same on smol's global executor.
    #[test]
    fn on_smol_runs_keep_the_order_end_once_and_stay_within_bounds(case in case()) {
        let seen = run(SmolExecutor::global(), smol::block_on, &case);
        check(&case, &seen);
    }
}

/// How many calls at once each counter saw, for a turn of `specs`.
fn most_at_once(specs: &[Spec]) -> (Arc<Log>, Vec<SessionEntry>) {
    let runtime = tokio_runtime();
    let executor = TokioExecutor::new(runtime.handle().clone()).expect("a timer");
    let case = Case {
        calls: specs.to_vec(),
        twin: None,
        stop_on_failure: false,
        abort_after: None,
    };
    let handle = runtime.handle().clone();
    let mut seen = run(executor, move |all| handle.block_on(all), &case);
    (seen.log.clone(), seen.entries.remove(0))
}

fn plain(kind: Kind, ms: u64) -> Spec {
    Spec {
        kind,
        ms,
        gate: GateDoes::Allow,
        ends: Ends::Ok,
    }
}

#[test]
fn shared_calls_reach_the_source_bound_and_no_further() {
    let (log, entries) = most_at_once(&vec![plain(Kind::Shared, 30); 8]);
    assert_eq!(
        log.most("source"),
        SOURCE,
        "the bound is reached, never passed"
    );
    // Five of the eight waited for room, and said so.
    let queued = entries.iter().filter(|e| !e.queued.is_zero()).count();
    assert!(queued >= 8 - SOURCE, "{queued} queued");
}

#[test]
fn a_bounded_tool_reaches_its_own_bound_and_no_further() {
    let (log, _) = most_at_once(&vec![plain(Kind::Capped, 30); 6]);
    assert_eq!(log.most("capped"), CAPPED);
    let (log, _) = most_at_once(&vec![plain(Kind::Limited, 10); 4]);
    assert_eq!(log.most("limited"), LIMITED, "the host's bound");
}
