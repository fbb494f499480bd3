//! Figure 17: what keeping the model's order costs a turn.
//!
//! A turn of 100 calls of a read-only tool (side by side) through a turn
//! runner that keeps the model's order (the default), against the same
//! turn through one with ordering off (`with_ordering(false)`, every call
//! side by side: the path before the order existed), in alternating
//! rounds on one registry. The target is the ratio: an order that only
//! side-by-side calls meet costs them next to nothing.
//!
//! Then the queued path: 100 calls of an exclusive tool, each waiting for
//! the one before it to end, against the same calls side by side (ordering
//! off). The difference per call is what waiting for a place adds (a wait
//! registered, a wake-up when the call before ends, the queued event) plus
//! the overlap given up; printed, with no target.

use std::sync::Arc;
use std::time::Instant;

use rho_registry::{Source, ToolRegistry};
use rho_tool_core::{
    Concurrency, Outcome, Tool, ToolAnnotations, ToolCall, ToolContext, ToolOutput, async_trait,
};
use rho_turn::TurnRunner;

use crate::Config;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::side::Which;
use crate::stats::median;

/// Calls in one turn.
const CALLS: usize = 100;

/// A tool that answers at once, read-only or exclusive.
struct Answers(&'static str, Concurrency);

#[async_trait]
impl Tool for Answers {
    fn name(&self) -> &str {
        self.0
    }

    fn description(&self) -> &str {
        "Answers at once."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only()
    }

    fn concurrency(&self) -> Concurrency {
        self.1
    }

    async fn run(&self, _arguments: serde_json::Value, _cx: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

/// Nanoseconds per call of `turns` turns of `CALLS` calls of `tool`.
fn per_call<B: Bench>(bench: &B, runner: &TurnRunner<B::Exec>, tool: &str, turns: usize) -> f64 {
    let calls: Vec<ToolCall> = (0..CALLS)
        .map(|index| ToolCall::new(format!("c{index}"), tool, serde_json::json!({})))
        .collect();
    bench.settle();
    let start = Instant::now();
    for _ in 0..turns {
        let entries = bench.block_on(runner.turn(calls.clone()));
        assert!(
            entries
                .iter()
                .all(|entry| entry.outcome == Outcome::Succeeded),
            "every call of the turn succeeds"
        );
    }
    start.elapsed().as_secs_f64() * 1e9 / (turns * CALLS) as f64
}

pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let registry = ToolRegistry::new();
    let tools: [Arc<dyn Tool>; 2] = [
        Arc::new(Answers("read", Concurrency::Shared)),
        Arc::new(Answers("write", Concurrency::Exclusive)),
    ];
    registry
        .add_source(Source::trusted("bench"))
        .and_then(|source| source.add_all(tools))
        .expect("two distinct tools");
    let ordered = TurnRunner::new(bench.executor(), registry.clone());
    let unordered = ordered.clone().with_ordering(false);

    // Each kind in rounds of its own: measured in one round, the side that
    // follows the other's exclusive calls (the workers parking fifty times
    // more often on the ordered side) would start on different terms.
    let rounds = |tool: &str, turns: usize| {
        let mut times = [Vec::new(), Vec::new()];
        // Round 0 warms both sides up and is not counted.
        for round in 0..=config.order_rounds {
            for which in Which::order(round) {
                let runner = match which {
                    Which::Rho => &ordered,
                    Which::Floor => &unordered,
                };
                let took = per_call(bench, runner, tool, turns);
                if round > 0 {
                    times[which as usize].push(took);
                }
            }
        }
        (median(&times[0]), median(&times[1]))
    };
    let (ordered_shared, today) = rounds("read", config.order_turns);
    // A tenth as many: each of these calls waits for the one before it,
    // some twenty-five times as long.
    let (queued, exclusive_unordered) = rounds("write", config.order_turns.div_ceil(10));
    report.info(name, "turn_100_shared_ordered", ordered_shared, "ns/call");
    report.info(name, "turn_100_shared_unordered", today, "ns/call");
    report.target(
        name,
        "turn_100_shared_ordered_vs_unordered",
        ordered_shared / today,
        "ordered/unordered",
        Target::AtMost(1.05),
    );
    report.info(name, "turn_100_exclusive_queued", queued, "ns/call");
    report.info(
        name,
        "turn_queued_path_added",
        queued - exclusive_unordered,
        "ns/call",
    );
}
