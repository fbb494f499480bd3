//! Sources adding and removing tools while calls are in flight: no call is
//! lost, none sees a half-registered tool, each finishes with the tool it
//! started with, and each is told to the source whose tool ran.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rho_registry::{Accounting, QuarantineRule, Refusal, Source, SourceHandle, ToolRegistry};
use rho_tool_core::{CallEvent, Outcome, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
use support::runner;
use tokio::sync::Semaphore;

/// A tool whose description names its version and source, and whose
/// answer repeats both, after sleeping `{"sleep_ms": n}`.
struct Versioned {
    name: String,
    label: String,
}

fn versioned(name: &str, generation: u64, source: &str) -> Arc<dyn Tool> {
    Arc::new(Versioned {
        name: name.to_owned(),
        label: format!("v{generation} from {source}"),
    })
}

#[async_trait]
impl Tool for Versioned {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.label
    }

    async fn run(&self, arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        let sleep = arguments["sleep_ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(sleep)).await;
        ToolOutput::text(format!("{} {}", self.name, self.label))
    }
}

fn accounted(registry: &ToolRegistry, name: &str) -> (SourceHandle, Arc<Accounting>) {
    let accounting = Arc::new(Accounting::new(QuarantineRule::never()));
    let handle = registry
        .add_source(Source::untrusted(name).with_policy(accounting.clone()))
        .expect("a new source");
    (handle, accounting)
}

const CALLERS: usize = 8;
const ROUNDS: usize = 25;
const BATCH: usize = 16;
const NAMES: [&str; 4] = ["shared", "pair_a", "pair_b", "stable"];

#[derive(Default)]
struct Tally {
    shared_from_a: AtomicU64,
    shared_from_b: AtomicU64,
    answered: AtomicU64,
    refused: AtomicU64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_come_and_go_under_load_without_losing_a_call() {
    let registry = ToolRegistry::new();
    let (a, a_accounting) = accounted(&registry, "a");
    let (b, b_accounting) = accounted(&registry, "b");
    let pairs = registry
        .add_source(Source::trusted("pairs"))
        .expect("a new source");
    registry
        .add_source(Source::trusted("builtin"))
        .expect("a new source")
        .add(versioned("stable", 0, "builtin"))
        .expect("a new name");

    // The churner: `shared` moves between sources `a` and `b`, and the pair
    // is swapped for a new generation (all at once) or cleared.
    let stop = Arc::new(AtomicBool::new(false));
    let churner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut generation = 0_u64;
            while !stop.load(Ordering::Acquire) {
                generation += 1;
                let mine = if generation % 2 == 0 { &a } else { &b };
                mine.add(versioned("shared", generation, mine.name()))
                    .expect("the other source removed `shared`");
                pairs
                    .set_tools([
                        versioned("pair_a", generation, "pairs"),
                        versioned("pair_b", generation, "pairs"),
                    ])
                    .expect("only this source has the pair");
                std::thread::sleep(Duration::from_millis(1));
                assert!(mine.remove("shared"));
                if generation % 3 == 0 {
                    assert_eq!(pairs.clear(), 2);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            generation
        })
    };

    let runner = runner();
    let tally = Arc::new(Tally::default());
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let registry = registry.clone();
        let runner = runner.clone();
        let tally = tally.clone();
        callers.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                // No listing shows half a batch: both of the pair, of one
                // generation, or neither.
                let listed = registry.tools();
                let pair: Vec<_> = listed
                    .iter()
                    .filter(|tool| tool.name.starts_with("pair_"))
                    .collect();
                match pair.as_slice() {
                    [] => {}
                    [first, second] => assert_eq!(first.description, second.description),
                    half => panic!("half a batch listed: {half:?}"),
                }

                let mut batch = Vec::new();
                for i in 0..BATCH {
                    let name = NAMES[(caller * 7 + round * 3 + i) % NAMES.len()];
                    let id = format!("c{caller}-{round}-{i}");
                    let call = ToolCall::new(id, name, serde_json::json!({ "sleep_ms": i % 3 }));
                    let expected = match registry.resolve(name) {
                        Ok(resolved) => {
                            // The whole tool or nothing: its listed
                            // metadata is the tool's own.
                            assert_eq!(resolved.info().description, resolved.tool().description());
                            let expected = format!("{name} {}", resolved.info().description);
                            batch
                                .push((Some(expected), tokio::spawn(runner.start(call, resolved))));
                            continue;
                        }
                        Err(refusal @ Refusal::Unknown { .. }) => {
                            assert_ne!(name, "stable", "the stable tool is always there");
                            refusal
                        }
                        Err(other) => panic!("nothing is disabled here: {other}"),
                    };
                    batch.push((None, tokio::spawn(runner.start(call, expected))));
                }
                for (expected, call) in batch {
                    let end = call.await.expect("the awaiting task does not panic");
                    match expected {
                        Some(expected) => {
                            // It finished with the tool it started with.
                            assert_eq!(end.outcome, Outcome::Succeeded, "{end:?}");
                            assert_eq!(end.result.text(), expected);
                            tally.answered.fetch_add(1, Ordering::Relaxed);
                            if expected.starts_with("shared") {
                                let counter = if expected.ends_with("from a") {
                                    &tally.shared_from_a
                                } else {
                                    &tally.shared_from_b
                                };
                                counter.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        None => {
                            assert_eq!(end.outcome, Outcome::Refused, "{end:?}");
                            let text = end.result.text();
                            assert!(
                                text.starts_with(&format!("no such tool `{}`", end.tool)),
                                "{text}"
                            );
                            tally.refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    for caller in callers {
        caller.await.expect("a caller's assertions hold");
    }
    stop.store(true, Ordering::Release);
    let generations = churner.join().expect("the churner's assertions hold");

    // No call was lost: every one answered or was refused, and the registry
    // holds none in flight.
    let answered = tally.answered.load(Ordering::Relaxed);
    let refused = tally.refused.load(Ordering::Relaxed);
    assert_eq!(answered + refused, (CALLERS * ROUNDS * BATCH) as u64);
    assert_eq!(registry.in_flight(), 0);

    // Each source was told exactly of the calls that ran its own tool.
    for (accounting, from_it) in [
        (&a_accounting, &tally.shared_from_a),
        (&b_accounting, &tally.shared_from_b),
    ] {
        let ran = from_it.load(Ordering::Relaxed);
        match accounting.tool_health("shared") {
            Some(health) => {
                assert_eq!((health.calls, health.succeeded), (ran, ran), "{health:?}");
            }
            None => assert_eq!(ran, 0),
        }
    }
    println!("{generations} generations, {answered} answered, {refused} refused");
}

/// A tool that answers its label once the test releases it.
struct Held {
    label: String,
    release: Arc<Semaphore>,
}

#[async_trait]
impl Tool for Held {
    fn name(&self) -> &str {
        "job"
    }

    fn description(&self) -> &str {
        &self.label
    }

    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        let _permit = self.release.acquire().await;
        ToolOutput::text(self.label.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_with_its_tool_and_tells_its_source() {
    let registry = ToolRegistry::new();
    let (a, a_accounting) = accounted(&registry, "a");
    let (b, b_accounting) = accounted(&registry, "b");
    let release = Arc::new(Semaphore::new(0));
    let held = |label: &str| -> Arc<dyn Tool> {
        Arc::new(Held {
            label: label.to_owned(),
            release: release.clone(),
        })
    };
    let runner = runner();
    let call = |id: &str| ToolCall::new(id, "job", serde_json::json!({}));

    // v1 of `a` runs; then `a` swaps in v2, which runs too.
    a.add(held("v1")).expect("a new name");
    let mut first = {
        let call = call("1");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    };
    // Wait until v1 runs (skipping any other event the core reports).
    loop {
        match first.next_event().await {
            Some(CallEvent::Running(_)) => break,
            Some(CallEvent::Ended(end)) => panic!("ended before running: {end:?}"),
            None => panic!("no events"),
            Some(_) => {}
        }
    }
    assert!(a.replace(held("v2")).expect("its own name"));
    let second = {
        let call = call("2");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    };

    // Then the name moves to `b`, and v3 runs there.
    assert!(a.remove("job"));
    match registry.resolve("job") {
        Err(Refusal::Unknown { name, .. }) => assert_eq!(name, "job"),
        other => panic!("expected no such tool, got {other:?}"),
    }
    let gone = {
        let call = call("gone");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    }
    .await;
    assert_eq!(gone.outcome, Outcome::Refused);
    assert_eq!(
        gone.result.text(),
        "no such tool `job` (no tool has a similar name)"
    );
    b.add(held("v3")).expect("free again");
    let third = {
        let call = call("3");
        let start = registry.start_for(&call.name);
        runner.start(call, start)
    };
    assert_eq!(registry.in_flight(), 3);

    release.add_permits(3);
    assert_eq!(first.await.result.text(), "v1");
    assert_eq!(second.await.result.text(), "v2");
    assert_eq!(third.await.result.text(), "v3");
    assert_eq!(registry.in_flight(), 0);

    let a_health = a_accounting.tool_health("job").expect("a's job ran");
    let b_health = b_accounting.tool_health("job").expect("b's job ran");
    assert_eq!((a_health.calls, a_health.succeeded), (2, 2));
    assert_eq!((b_health.calls, b_health.succeeded), (1, 1));
}
