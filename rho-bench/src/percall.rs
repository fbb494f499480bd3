//! Figure 1: the per-call cost of a no-op tool with the default gate,
//! sequential and with many calls in flight, rho against the floor; and the
//! allocations per call of each.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Config;
use crate::alloc::Counting;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::side::{self, Ended, Side, Which};
use crate::stats::{median, ns_per};
use crate::tools::{NoOp, calls};

/// One call after the other: start, await, next.
async fn sequential<S: Side>(side: &S, calls: Vec<rho_tool_core::ToolCall>) -> Duration {
    let count = calls.len();
    let mut succeeded = 0;
    let start = Instant::now();
    for call in calls {
        let end = side.start(call).await;
        succeeded += usize::from(S::ended(&end).0 == Ended::Succeeded);
    }
    let took = start.elapsed();
    assert_eq!(succeeded, count, "every no-op call succeeds");
    took
}

/// All calls started, then all awaited (in order: the cheapest way to
/// await them all, so the figure is the calls' cost, not the loop's).
async fn in_flight<S: Side>(side: &S, calls: Vec<rho_tool_core::ToolCall>) -> Duration {
    let count = calls.len();
    let mut handles = Vec::with_capacity(count);
    let mut succeeded = 0;
    let start = Instant::now();
    for call in calls {
        handles.push(side.start(call));
    }
    for handle in handles.drain(..) {
        let end = handle.await;
        succeeded += usize::from(S::ended(&end).0 == Ended::Succeeded);
    }
    let took = start.elapsed();
    assert_eq!(succeeded, count, "every no-op call succeeds");
    took
}

pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let rho = side::rho(bench, None, Arc::new(NoOp));
    let floor = side::floor(bench, None, Arc::new(NoOp));
    let name = B::NAME;

    // Warm-up: the runtime's threads, queues, timer and allocator arenas.
    for which in [Which::Rho, Which::Floor] {
        let few = calls("noop", config.sequential / 4 + 1);
        match which {
            Which::Rho => bench.block_on(sequential(&rho, few)),
            Which::Floor => bench.block_on(sequential(&floor, few)),
        };
        let many = calls("noop", config.in_flight / 4 + 1);
        match which {
            Which::Rho => bench.block_on(in_flight(&rho, many)),
            Which::Floor => bench.block_on(in_flight(&floor, many)),
        };
        bench.settle();
    }

    for (mode, count, target) in [
        ("sequential", config.sequential, 1.25),
        ("in_flight", config.in_flight, 1.15),
    ] {
        let mut times = [Vec::new(), Vec::new()];
        let mut ratios = Vec::new();
        for round in 0..config.rounds {
            let mut pair = [0.0; 2];
            for which in Which::order(round) {
                if mode == "in_flight" {
                    // An untimed pass of the same side first: the timed one
                    // then finds the allocator as this side's own steady
                    // state leaves it, not as the other side's last round
                    // did (whether freed pages went back to the system
                    // swung single rounds by 2x).
                    let primer = calls("noop", count);
                    match which {
                        Which::Rho => bench.block_on(in_flight(&rho, primer)),
                        Which::Floor => bench.block_on(in_flight(&floor, primer)),
                    };
                }
                let calls = calls("noop", count);
                bench.settle();
                let took = match (mode, which) {
                    ("sequential", Which::Rho) => bench.block_on(sequential(&rho, calls)),
                    ("sequential", Which::Floor) => bench.block_on(sequential(&floor, calls)),
                    (_, Which::Rho) => bench.block_on(in_flight(&rho, calls)),
                    (_, Which::Floor) => bench.block_on(in_flight(&floor, calls)),
                };
                let index = which as usize;
                pair[index] = ns_per(took, count);
                times[index].push(pair[index]);
            }
            ratios.push(pair[0] / pair[1]);
        }
        let label = mode;
        report.target(
            name,
            &format!("per_call_ratio_{label}"),
            median(&ratios),
            "rho/floor",
            Target::AtMost(target),
        );
        report.info(
            name,
            &format!("per_call_rho_{label}"),
            median(&times[0]),
            "ns/call",
        );
        report.info(
            name,
            &format!("per_call_floor_{label}"),
            median(&times[1]),
            "ns/call",
        );
    }

    // Allocations per call, counted in a pass of its own (counting is
    // off while timing).
    for which in [Which::Rho, Which::Floor] {
        let count = config.sequential;
        let calls = calls("noop", count);
        bench.settle();
        let before = Counting::start();
        match which {
            Which::Rho => bench.block_on(sequential(&rho, calls)),
            Which::Floor => bench.block_on(sequential(&floor, calls)),
        };
        bench.settle();
        let counted = Counting::stop().since(before);
        let per = |total: u64| total as f64 / count as f64;
        report.info(
            name,
            &format!("allocations_per_call_{}", which.name()),
            per(counted.allocations),
            "allocs/call",
        );
        report.info(
            name,
            &format!("allocated_bytes_per_call_{}", which.name()),
            per(counted.bytes),
            "B/call",
        );
    }
}

/// The hidden subcommand that runs one side of figure 1 alone, for a
/// profiler: `__percall <tokio|smol> <rho|floor> <sequential|in_flight>
/// <calls> <rounds>`.
pub(crate) const PROFILE: &str = "__percall";

pub(crate) fn profile(args: &[String]) {
    let [runtime, which, mode, count, rounds] = args else {
        panic!("usage: {PROFILE} <tokio|smol> <rho|floor> <sequential|in_flight> <calls> <rounds>");
    };
    let count: usize = count.parse().expect("a count");
    let rounds: usize = rounds.parse().expect("a count");
    match runtime.as_str() {
        "tokio" => profile_on(&crate::rt::Tokio::new(), which, mode, count, rounds),
        "smol" => profile_on(&crate::rt::Smol::new(), which, mode, count, rounds),
        other => panic!("no runtime `{other}`"),
    }
}

fn profile_on<B: Bench>(bench: &B, which: &str, mode: &str, count: usize, rounds: usize) {
    let rho = side::rho(bench, None, Arc::new(NoOp));
    let floor = side::floor(bench, None, Arc::new(NoOp));
    for _ in 0..rounds {
        let calls = calls("noop", count);
        let took = match (which, mode) {
            ("rho", "sequential") => bench.block_on(sequential(&rho, calls)),
            ("floor", "sequential") => bench.block_on(sequential(&floor, calls)),
            ("rho", _) => bench.block_on(in_flight(&rho, calls)),
            _ => bench.block_on(in_flight(&floor, calls)),
        };
        bench.settle();
        eprintln!("{which} {mode}: {:.0} ns/call", ns_per(took, count));
    }
}
