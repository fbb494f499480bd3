//! The phases of a run: start the runtimes and their drivers, watch them
//! until every driver is done, then let everything settle and check what
//! can only be checked at the end.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rho_conformance::support::{InLoop, wait_until_blocking};
use rho_exec_smol::SmolExecutor;
use rho_exec_tokio::TokioExecutor;
use rho_tool_core::untrusted::Plain;
use rho_turn::{KeepDetails, Subscription};

use crate::args::{Args, Runtimes};
use crate::drive::{self, Caught};
use crate::events::{Checker, Churn, ChurnReport, EventReport};
use crate::lane::{DriverFuture, Lane, Platform, SmolPlatform, Soak, TokioPlatform};
use crate::memory::{mib, rss_bytes};
use crate::plan::{self, Planner};
use crate::report;
use crate::tools;
use crate::witness::{self, Sweep};

/// How long the soak waits without any call ending before it calls itself
/// stuck.
const STUCK: Duration = Duration::from_secs(60);
/// How long killed tasks may take to be dropped after the run.
const SETTLE: Duration = Duration::from_secs(20);

/// A started run: the runtimes with their lanes, the drivers, the
/// subscribers.
pub(crate) struct Running {
    pub(crate) soak: Arc<Soak>,
    pub(crate) started: Instant,
    /// Drivers in all.
    pub(crate) drivers: usize,
    checker: Subscription,
    churn: Churn,
    lanes: Lanes,
}

/// The runtimes, started, with their lanes.
struct Lanes {
    tokio: Option<(TokioPlatform, Arc<Lane<TokioExecutor>>)>,
    smol: Option<(SmolPlatform, Arc<Lane<SmolExecutor>>)>,
}

impl Lanes {
    fn live_tasks(&self) -> usize {
        let tokio = self.tokio.as_ref().map(|(_, lane)| lane.counting.live());
        let smol = self.smol.as_ref().map(|(_, lane)| lane.counting.live());
        tokio.unwrap_or(0) + smol.unwrap_or(0)
    }
}

impl Running {
    /// rho tasks alive on both executors.
    pub(crate) fn live_tasks(&self) -> usize {
        self.lanes.live_tasks()
    }

    /// Stops the runtimes.
    pub(crate) fn shut_down(self) {
        if let Some((platform, lane)) = self.lanes.tokio {
            drop(lane);
            platform.shut_down();
        }
        if let Some((platform, lane)) = self.lanes.smol {
            drop(lane);
            platform.shut_down();
        }
    }
}

/// A seed of its own for each lane and driver, derived from the run's.
fn derive(seed: u64, lane: u64, driver: u64) -> u64 {
    // splitmix64 over the three: distinct, well mixed, reproducible.
    let mut z = seed
        .wrapping_add(lane.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(driver.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A keep-details policy for a lane, from the seed.
fn keep_policy(rng: &mut fastrand::Rng) -> KeepDetails {
    match rng.u8(0..4) {
        0 => KeepDetails::None,
        1 => KeepDetails::All,
        2 => KeepDetails::MaxBytes(512),
        _ => KeepDetails::with(|end| {
            end.details()
                .map(|details| Plain::Text(format!("{} details kept by kind", details.kind())))
        }),
    }
}

/// Starts a lane's drivers on `platform`, sharing `calls` between them;
/// returns how many.
fn start_drivers<P: Platform>(
    platform: &mut P,
    soak: &Arc<Soak>,
    lane: &Arc<Lane<P::Executor>>,
    seed: u64,
    calls: u64,
    drivers: usize,
) -> usize {
    let drivers = drivers
        .min(usize::try_from(calls).unwrap_or(usize::MAX))
        .max(1);
    let count = drivers as u64;
    let bodies = (0..drivers)
        .map(|driver| {
            let index = driver as u64;
            let quota = calls / count + u64::from(index < calls % count);
            let rng = fastrand::Rng::with_seed(derive(seed, u64::from(lane.index) + 1, index));
            let planner = Planner::new(rng, lane.tag, lane.index, driver);
            let label = format!("{} driver {driver}", lane.name);
            let body = drive::drive(soak.clone(), lane.clone(), planner, quota);
            // A driver reports through the shared counters.
            Box::pin(InLoop::new(Caught::new(body, soak.clone(), label))) as DriverFuture
        })
        .collect();
    platform.run_drivers(bodies);
    drivers
}

/// Starts the runtimes `args` asks for, their drivers and the subscribers.
pub(crate) fn start(args: &Args) -> Running {
    let started = Instant::now();
    let soak = Arc::new(Soak::new());
    let checker = soak
        .bus
        .subscribe(Checker(soak.events.clone()))
        .expect("a thread for the checking subscriber");
    let mut policies = fastrand::Rng::with_seed(derive(args.seed, 0, 0));
    let (tokio_calls, smol_calls) = match args.runtimes {
        Runtimes::Tokio => (args.calls, 0),
        Runtimes::Smol => (0, args.calls),
        Runtimes::Both => (args.calls - args.calls / 2, args.calls / 2),
    };
    let mut drivers = 0;
    let tokio = (tokio_calls > 0).then(|| {
        let mut platform = TokioPlatform::start();
        let keep = keep_policy(&mut policies);
        let lane = Arc::new(Lane::new(&soak, "tokio", 't', 0, platform.executor(), keep));
        let calls = tokio_calls;
        drivers += start_drivers(&mut platform, &soak, &lane, args.seed, calls, args.drivers);
        (platform, lane)
    });
    let smol = (smol_calls > 0).then(|| {
        let mut platform = SmolPlatform::start();
        let keep = keep_policy(&mut policies);
        let lane = Arc::new(Lane::new(&soak, "smol", 's', 1, platform.executor(), keep));
        let calls = smol_calls;
        drivers += start_drivers(&mut platform, &soak, &lane, args.seed, calls, args.drivers);
        (platform, lane)
    });
    let churn = Churn::start(soak.bus.clone(), derive(args.seed, 9, 9));
    Running {
        soak,
        started,
        drivers,
        checker,
        churn,
        lanes: Lanes { tokio, smol },
    }
}

/// What watching the run measured.
pub(crate) struct Watched {
    /// Calls in the warm-up.
    pub(crate) warm_up: u64,
    /// Resident memory after it.
    pub(crate) warm_rss: Option<u64>,
    pub(crate) ran_for: Duration,
}

/// Watches until every driver is done: progress every 10 %, memory after
/// the warm-up, witnesses swept now and then. A run in which no turn ends
/// for [`STUCK`] is reported and ends the process.
pub(crate) fn watch(args: &Args, running: &Running) -> Watched {
    let soak = &running.soak;
    // The warm-up is the first 5 % of the calls, and at least the drivers'
    // first turns, which are the largest.
    let warm_up = (args.calls / 20)
        .max((running.drivers as u64 * plan::WARM_UP_CALLS).min(args.calls / 2))
        .max(1);
    let mut warm_rss = None;
    let mut tenths_printed = 0;
    let mut last = (0, Instant::now());
    let mut last_sweep = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let done = soak.progress.load(Ordering::Relaxed);
        if warm_rss.is_none() && done >= warm_up {
            warm_rss = rss_bytes();
        }
        while tenths_printed < 10 && done >= args.calls * (tenths_printed + 1) / 10 {
            tenths_printed += 1;
            let seconds = running.started.elapsed().as_secs_f64();
            println!(
                "progress {:>3}%: {done} calls in {seconds:.1} s ({:.0} calls/s), rss {:.1} MiB",
                tenths_printed * 10,
                done as f64 / seconds,
                mib(rss_bytes().unwrap_or(0)),
            );
        }
        if last_sweep.elapsed() > Duration::from_millis(200) {
            witness::sweep();
            last_sweep = Instant::now();
        }
        if soak.drivers_done.load(Ordering::SeqCst) == running.drivers {
            break;
        }
        if done != last.0 {
            last = (done, Instant::now());
        } else if last.1.elapsed() > STUCK {
            report::stuck(args, running, STUCK);
            std::process::exit(3);
        }
    }
    Watched {
        warm_up,
        warm_rss,
        ran_for: running.started.elapsed(),
    }
}

/// What could only be checked once every driver was done.
pub(crate) struct Settled {
    pub(crate) churned: ChurnReport,
    /// rho tasks still alive after the bounded wait.
    pub(crate) leaked: usize,
    /// How long the killed tasks took to go.
    pub(crate) settled_in: Duration,
    pub(crate) events: EventReport,
    /// Tools whose counts were compared.
    pub(crate) compared_tools: usize,
    pub(crate) sweep: Sweep,
    pub(crate) foreign: u64,
    pub(crate) end_rss: Option<u64>,
}

/// Releases what spins, waits (bounded) for killed tasks to go, drains the
/// checking subscriber, and checks the events, the registry's counts and
/// the foreign values; every disagreement goes to the verdicts.
pub(crate) fn settle(running: &Running) -> Settled {
    let soak = &running.soak;
    let churned = running.churn.stop();
    tools::release_all_spinners();
    let settle_start = Instant::now();
    wait_until_blocking(SETTLE, || running.live_tasks() == 0);
    let leaked = running.live_tasks();
    let settled_in = settle_start.elapsed();
    if !running.checker.wait_idle(Duration::from_secs(60)) {
        soak.verdicts
            .wrong(|| "the checking subscriber did not catch up within a minute".to_owned());
    }
    running.checker.unsubscribe();
    let events = soak.events.finish();
    for description in &events.described {
        let description = description.clone();
        soak.verdicts.wrong(move || description);
    }
    soak.verdicts
        .count_wrong(events.wrong.saturating_sub(events.described.len() as u64));
    let calls = soak.verdicts.calls.load(Ordering::Relaxed);
    if events.starts != calls || events.ends != calls {
        soak.verdicts.wrong(|| {
            format!(
                "events: {} start and {} end events for {calls} calls",
                events.starts, events.ends
            )
        });
    }
    let in_flight = soak.registry.in_flight();
    if in_flight > 0 {
        soak.verdicts
            .wrong(|| format!("the registry still counts {in_flight} calls in flight"));
    }
    let compared_tools = report::compare_counts(soak);
    let sweep = witness::sweep();
    if sweep.second_ran > 0 {
        soak.verdicts.wrong(|| {
            format!(
                "{} second panic payloads ran (rho must forget them)",
                sweep.second_ran
            )
        });
    }
    if sweep.pending > 0 {
        soak.verdicts.wrong(|| {
            format!(
                "{} calls' foreign values are still alive after every task ended",
                sweep.pending
            )
        });
    }
    Settled {
        churned,
        leaked,
        settled_in,
        events,
        compared_tools,
        sweep,
        foreign: witness::foreign_in_loop() + witness::count_pending_in_loop(),
        end_rss: rss_bytes(),
    }
}
