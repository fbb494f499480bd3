//! Figure 2: memory per in-flight call. Many calls whose tools wait, each
//! measured in a fresh process (this binary re-run with a hidden
//! subcommand) so that no earlier figure's freed memory is reused.
//!
//! The child builds the runtime, warms it up, builds the calls' input (the
//! `ToolCall`s, which a loop holds anyway), then reads its resident size
//! (`VmRSS` of `/proc/self/status`) and the counting allocator's live
//! bytes; starts the calls, waits until every tool is waiting, polls every
//! handle once (as a loop awaiting them would, which starts each call's
//! timeout timer), and reads both again. The figure is the difference over
//! the number of calls: the task, the handle the loop holds, the notice, the
//! timer, the tool's future, everything.

use std::process::Command;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use crate::Config;
use crate::alloc::Counting;
use crate::floor::FloorRt;
use crate::report::{Report, Target};
use crate::rt::{Bench, RuntimeName, Smol, Tokio};
use crate::side::{self, Side, Which};
use crate::stats::median;
use crate::tools::{Hold, NoOp, Waits, calls};

/// The hidden subcommand's name.
pub(crate) const SUBCOMMAND: &str = "__memory";

/// One measurement, as the child prints it.
#[derive(Debug, Clone, Copy)]
struct Measured {
    rss_per_call: f64,
    heap_per_call: f64,
    allocations_per_call: f64,
}

/// The child: `__memory <tokio|smol> <rho|floor> <count>`; prints one line.
pub(crate) fn child(runtime: RuntimeName, which: Which, count: usize) {
    let measured = match runtime {
        RuntimeName::Tokio => measure(&Tokio::new(), which, count),
        RuntimeName::Smol => measure(&Smol::new(), which, count),
    };
    println!(
        "{} {} {}",
        measured.rss_per_call, measured.heap_per_call, measured.allocations_per_call
    );
    // The calls are still waiting: leave without tearing 100,000 of them
    // down.
    std::process::exit(0);
}

fn measure<B: Bench>(bench: &B, which: Which, count: usize) -> Measured {
    // Warm-up: threads, queues, timer wheel, allocator arenas.
    let noop_rho = side::rho(bench, None, Arc::new(NoOp));
    let noop_floor = side::floor(bench, None, Arc::new(NoOp));
    bench.block_on(async {
        for call in calls("noop", 1000) {
            match which {
                Which::Rho => drop(noop_rho.start(call).await),
                Which::Floor => drop(noop_floor.start(call).await),
            }
        }
    });
    bench.settle();

    let hold = Hold::new();
    let tool = Arc::new(Waits {
        hold: hold.clone(),
        timeout: Duration::from_secs(3600),
    });
    let input = calls("waits", count);
    match which {
        Which::Rho => hold_calls(bench, &side::rho(bench, None, tool), input, &hold),
        Which::Floor => hold_calls(bench, &side::floor(bench, None, tool), input, &hold),
    }
}

fn hold_calls<B: Bench, S: Side>(
    bench: &B,
    side: &S,
    input: Vec<rho_tool_core::ToolCall>,
    hold: &Hold,
) -> Measured {
    let count = input.len();
    let rss_before = rss_bytes();
    let counted_before = Counting::start();
    let handles = bench.block_on(async {
        let mut handles = Vec::with_capacity(count);
        for call in input {
            handles.push(side.start(call));
        }
        let start = Instant::now();
        while hold.waiting() < count {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "tools did not start"
            );
            <B::Floor as FloorRt>::sleep_until(Instant::now() + Duration::from_millis(1)).await;
        }
        // One poll of each handle, as the loop awaiting them would: it sees
        // the running notice and starts the call's timer.
        let mut cx = Context::from_waker(Waker::noop());
        for handle in &mut handles {
            assert!(std::pin::Pin::new(handle).poll(&mut cx).is_pending());
        }
        handles
    });
    let counted = Counting::stop().since(counted_before);
    let rss_after = rss_bytes();
    let per = |total: f64| total / count as f64;
    let measured = Measured {
        rss_per_call: per(rss_after.saturating_sub(rss_before) as f64),
        heap_per_call: per(counted.live as f64),
        allocations_per_call: per(counted.allocations as f64),
    };
    std::mem::forget(handles);
    measured
}

/// The resident size of this process, from `VmRSS` in `/proc/self/status`.
pub(crate) fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
        .expect("VmRSS in /proc/self/status")
}

fn run_child(runtime: &str, which: Which, count: usize) -> Measured {
    let exe = std::env::current_exe().expect("this binary's path");
    let output = Command::new(exe)
        .args([SUBCOMMAND, runtime, which.name(), &count.to_string()])
        .output()
        .expect("the memory child runs");
    assert!(
        output.status.success(),
        "the memory child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<f64> = text
        .split_whitespace()
        .map(|word| word.parse().expect("a number"))
        .collect();
    let [rss_per_call, heap_per_call, allocations_per_call] = numbers[..] else {
        panic!("the memory child printed `{text}`");
    };
    Measured {
        rss_per_call,
        heap_per_call,
        allocations_per_call,
    }
}

/// Runs the children for `runtime`, rho and floor alternating, and reports
/// the medians.
pub(crate) fn run(runtime: &'static str, config: &Config, report: &mut Report) {
    let count = config.memory_calls;
    let mut measured: [Vec<Measured>; 2] = [Vec::new(), Vec::new()];
    for round in 0..config.memory_rounds {
        for which in Which::order(round) {
            measured[which as usize].push(run_child(runtime, which, count));
        }
    }
    let pick = |which: Which, field: fn(&Measured) -> f64| -> f64 {
        let values: Vec<f64> = measured[which as usize].iter().map(field).collect();
        median(&values)
    };
    let rho_rss = pick(Which::Rho, |m| m.rss_per_call);
    let floor_rss = pick(Which::Floor, |m| m.rss_per_call);
    report.target(
        runtime,
        "memory_per_call_rho",
        rho_rss,
        "B resident",
        Target::AtMost(1536.0),
    );
    report.info(runtime, "memory_per_call_floor", floor_rss, "B resident");
    report.target(
        runtime,
        "memory_ratio",
        rho_rss / floor_rss,
        "rho/floor",
        Target::AtMost(1.5),
    );
    for which in [Which::Rho, Which::Floor] {
        report.info(
            runtime,
            &format!("heap_per_waiting_call_{}", which.name()),
            pick(which, |m| m.heap_per_call),
            "B live",
        );
        report.info(
            runtime,
            &format!("allocations_per_waiting_call_{}", which.name()),
            pick(which, |m| m.allocations_per_call),
            "allocs/call",
        );
    }
}
