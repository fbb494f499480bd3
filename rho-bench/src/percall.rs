//! Figure 1: the per-call cost of a no-op tool with the default gate,
//! sequential and with many calls in flight, rho against the floor; the
//! sequential cost again with the loop as a task of the runtime; and the
//! allocations per call of each.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_tool_core::ToolCall;

use crate::Config;
use crate::alloc::Counting;
use crate::cli::Figure;
use crate::report::{Report, Target};
use crate::rt::{Bench, RuntimeName, Smol, Tokio};
use crate::side::{self, Ended, FloorSide, RhoSide, Side, Which};
use crate::stats::{median, ns_per};
use crate::tools::{NoOp, calls};

/// A recorded reference, not measured by this harness: a sequential call
/// (start, await, next) on the seed's own runtime, a BEAM
/// `Task.Supervisor`, took 8.1 us on this project's machine (2 cores, AMD
/// EPYC). rho's figure with the loop as a task is set against it.
pub(crate) const BEAM_SEQUENTIAL_US: f64 = 8.1;

/// How a figure's loop starts and awaits its calls (named as
/// [`Mode::name`] on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// Start, await, next; the loop on the main thread in `block_on`.
    Sequential,
    /// The same loop, as one task spawned on the runtime.
    SequentialTask,
    /// All started, then all awaited; the loop on the main thread.
    InFlight,
}

impl Mode {
    /// In the order the table shows them.
    pub(crate) const ALL: [Mode; 3] = [Mode::Sequential, Mode::SequentialTask, Mode::InFlight];

    /// The name in the figures' names (and the profiling subcommand).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::SequentialTask => "sequential_task",
            Mode::InFlight => "in_flight",
        }
    }

    /// The `--only` figure that runs this mode.
    pub(crate) fn only(self) -> Figure {
        match self {
            Mode::Sequential | Mode::InFlight => Figure::Percall,
            Mode::SequentialTask => Figure::SequentialTask,
        }
    }

    /// The target of rho's time per call over the floor's.
    /// The ratio rho/floor must stay under; `None` where the figure of
    /// record is another (with the loop as a task, rho's absolute time
    /// against the recorded reference).
    fn target(self) -> Option<f64> {
        match self {
            Mode::Sequential => Some(1.25),
            Mode::InFlight => Some(1.15),
            Mode::SequentialTask => None,
        }
    }
}

/// rho and the floor, each shared so that a loop spawned as a task can
/// hold it.
struct Sides<B: Bench> {
    rho: Arc<RhoSide<B::Exec>>,
    floor: Arc<FloorSide<B::Floor>>,
}

impl<B: Bench> Sides<B> {
    fn new(bench: &B) -> Self {
        Self {
            rho: Arc::new(side::rho(bench, None, Arc::new(NoOp))),
            floor: Arc::new(side::floor(bench, None, Arc::new(NoOp))),
        }
    }

    /// One timed pass of `which` side's loop over `calls`.
    fn pass(&self, bench: &B, mode: Mode, which: Which, calls: Vec<ToolCall>) -> Duration {
        match which {
            Which::Rho => pass(bench, &self.rho, mode, calls),
            Which::Floor => pass(bench, &self.floor, mode, calls),
        }
    }
}

fn pass<B, S>(bench: &B, side: &Arc<S>, mode: Mode, calls: Vec<ToolCall>) -> Duration
where
    B: Bench,
    S: Side + Send + Sync + 'static,
    S::Call: Send,
{
    match mode {
        Mode::Sequential => bench.block_on(sequential(&**side, calls)),
        Mode::InFlight => bench.block_on(in_flight(&**side, calls)),
        Mode::SequentialTask => {
            // The clock runs inside the task: the figure is the calls'
            // cost, not the loop task's own spawn and join.
            let side = side.clone();
            bench.run_in_task(async move { sequential(&*side, calls).await })
        }
    }
}

/// One call after the other: start, await, next.
async fn sequential<S: Side>(side: &S, calls: Vec<ToolCall>) -> Duration {
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
async fn in_flight<S: Side>(side: &S, calls: Vec<ToolCall>) -> Duration {
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

/// Runs `modes` (in [`Mode::ALL`]'s order), then, if `allocations`, the
/// allocations per call.
pub(crate) fn run<B: Bench>(
    bench: &B,
    config: &Config,
    report: &mut Report,
    modes: &[Mode],
    allocations: bool,
) {
    let sides = Sides::new(bench);
    let name = B::NAME;
    let count_of = |mode: Mode| match mode {
        Mode::Sequential | Mode::SequentialTask => config.sequential,
        Mode::InFlight => config.in_flight,
    };

    // Warm-up: the runtime's threads, queues, timer and allocator arenas.
    for which in [Which::Rho, Which::Floor] {
        for &mode in modes {
            sides.pass(bench, mode, which, calls("noop", count_of(mode) / 4 + 1));
        }
        if allocations && !modes.contains(&Mode::Sequential) {
            let few = calls("noop", config.sequential / 4 + 1);
            sides.pass(bench, Mode::Sequential, which, few);
        }
        bench.settle();
    }

    for &mode in modes {
        let count = count_of(mode);
        let mut times = [Vec::new(), Vec::new()];
        let mut ratios = Vec::new();
        for round in 0..config.rounds {
            let mut pair = [0.0; 2];
            for which in Which::order(round) {
                if mode == Mode::InFlight {
                    // An untimed pass of the same side first: the timed one
                    // then finds the allocator as this side's own steady
                    // state leaves it, not as the other side's last round
                    // did (whether freed pages went back to the system
                    // swung single rounds by 2x).
                    sides.pass(bench, mode, which, calls("noop", count));
                }
                let calls = calls("noop", count);
                bench.settle();
                let took = sides.pass(bench, mode, which, calls);
                let index = which as usize;
                pair[index] = ns_per(took, count);
                times[index].push(pair[index]);
            }
            ratios.push(pair[0] / pair[1]);
        }
        let label = mode.name();
        let ratio = median(&ratios);
        match mode.target() {
            Some(most) => report.target(
                name,
                &format!("per_call_ratio_{label}"),
                ratio,
                "rho/floor",
                Target::AtMost(most),
            ),
            None => report.info(name, &format!("per_call_ratio_{label}"), ratio, "rho/floor"),
        }
        let rho = median(&times[0]);
        report.info(name, &format!("per_call_rho_{label}"), rho, "ns/call");
        report.info(
            name,
            &format!("per_call_floor_{label}"),
            median(&times[1]),
            "ns/call",
        );
        if mode == Mode::SequentialTask {
            // rho's absolute time against the recorded reference: the
            // target is to beat it.
            report.target(
                name,
                "per_call_rho_sequential_task_vs_beam",
                rho / 1e3,
                BEAM_UNIT,
                Target::AtMost(BEAM_SEQUENTIAL_US),
            );
        }
    }

    if !allocations {
        return;
    }
    // Allocations per call, counted in a pass of its own (counting is
    // off while timing).
    for which in [Which::Rho, Which::Floor] {
        let count = config.sequential;
        let calls = calls("noop", count);
        bench.settle();
        let before = Counting::start();
        sides.pass(bench, Mode::Sequential, which, calls);
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

/// The unit of rho's time with the loop as a task, set against the
/// recorded BEAM reference (the row's target).
const BEAM_UNIT: &str = "us/call (target: BEAM, recorded)";

/// The hidden subcommand that runs one side of figure 1 alone, for a
/// profiler: `__percall <tokio|smol> <rho|floor>
/// <sequential|sequential_task|in_flight> <calls> <rounds>`.
pub(crate) const PROFILE: &str = "__percall";

/// Runs the [`PROFILE`] subcommand.
pub(crate) fn profile(runtime: RuntimeName, which: Which, mode: Mode, count: usize, rounds: usize) {
    match runtime {
        RuntimeName::Tokio => profile_on(&Tokio::new(), which, mode, count, rounds),
        RuntimeName::Smol => profile_on(&Smol::new(), which, mode, count, rounds),
    }
}

fn profile_on<B: Bench>(bench: &B, which: Which, mode: Mode, count: usize, rounds: usize) {
    let sides = Sides::new(bench);
    for _ in 0..rounds {
        let took = sides.pass(bench, mode, which, calls("noop", count));
        bench.settle();
        eprintln!(
            "{} {}: {:.0} ns/call",
            which.name(),
            mode.name(),
            ns_per(took, count)
        );
    }
}
