//! Figure 3: kill latency, how long after its deadline (the running notice
//! plus the tool's 10 ms timeout) a call that overruns ends. The latency of
//! each call is `ran - timeout`: `ran` is measured by the handle from the
//! task's running notice to the moment it ends the call.
//!
//! - Tools that yield (they wait on something that never comes): the calls
//!   are started at a steady 100 per millisecond, so about a thousand are
//!   in flight and a hundred reach their deadline each millisecond, all
//!   awaited by one loop. A burst of thousands of deadlines in the same
//!   millisecond would measure how fast a loop can end calls, not how late.
//! - Tools that never yield (they spin on a stop flag): one at a time. A
//!   spinning tool holds a worker until it stops. The floor's timer on tokio
//!   is tokio's, driven by an idle worker: with both workers spinning it
//!   could not notice a deadline at all (rho's clock on tokio is a thread of
//!   its own, and smol's timer runs on the loop's thread). So that both
//!   sides are measured on equal terms, each call runs alone on one worker;
//!   once it ended the bench tells the tool to stop and waits until its
//!   worker is free before the next call.

use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::Config;
use crate::driver::Driver;
use crate::floor::FloorRt;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::side::{self, Ended, Side, Which};
use crate::stats::{Samples, ms};
use crate::tools::{Hold, Spins, Waits, calls};

/// The tools' timeout.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(10);
/// Calls started per millisecond in the yielding run.
pub(crate) const PER_MS: usize = 100;

/// Starts `input` at `PER_MS` calls a millisecond into one driver and
/// records each call's latency past its deadline, in ms.
async fn paced<B: Bench, S: Side>(
    side: &S,
    input: Vec<rho_tool_core::ToolCall>,
    samples: &mut Samples,
) {
    let count = input.len();
    let mut input = input.into_iter();
    let mut driver: Driver<S::Call> = Driver::new();
    let mut started = 0;
    let mut ended = 0;
    let mut next_batch = Instant::now();
    let mut tick: Option<<B::Floor as FloorRt>::Sleep> = None;
    let mut wrong = 0;
    std::future::poll_fn(|cx| {
        loop {
            let now = Instant::now();
            while started < count && next_batch <= now {
                for call in input.by_ref().take(PER_MS) {
                    driver.push(side.start(call));
                    started += 1;
                }
                next_batch += Duration::from_millis(1);
            }
            if started == count {
                break;
            }
            let sleep = tick.get_or_insert_with(|| <B::Floor as FloorRt>::sleep_until(next_batch));
            if std::pin::Pin::new(sleep).poll(cx).is_ready() {
                tick = None;
                continue;
            }
            break;
        }
        while let Poll::Ready(Some((_, end))) = driver.poll_next(cx) {
            ended += 1;
            match S::ended(&end) {
                (Ended::TimedOut, Some(ran)) => samples.push(ms(ran.saturating_sub(TIMEOUT))),
                _ => wrong += 1,
            }
        }
        if ended == count {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    assert_eq!(wrong, 0, "every call times out");
}

/// One spinning call after the other.
async fn spinning<S: Side>(
    side: &S,
    spins: &Spins,
    count: usize,
    samples: &mut Samples,
    exits: &mut usize,
) {
    for call in calls("spins", count) {
        spins.arm();
        let end = side.start(call).await;
        match S::ended(&end) {
            (Ended::TimedOut, Some(ran)) => samples.push(ms(ran.saturating_sub(TIMEOUT))),
            other => panic!("a spinning call ended {other:?}"),
        }
        *exits += 1;
        spins.stop_and_wait(*exits);
    }
}

pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let hold = Hold::new();
    let waits = Arc::new(Waits {
        hold: hold.clone(),
        timeout: TIMEOUT,
    });
    let rho = side::rho(bench, None, waits.clone());
    let floor = side::floor(bench, None, waits);

    let mut yielding = [Samples::default(), Samples::default()];
    for round in 0..config.kill_rounds {
        for which in Which::order(round) {
            bench.settle();
            let input = calls("waits", config.kill_yielding);
            let samples = &mut yielding[which as usize];
            match which {
                Which::Rho => bench.block_on(paced::<B, _>(&rho, input, samples)),
                Which::Floor => bench.block_on(paced::<B, _>(&floor, input, samples)),
            }
        }
    }
    hold.release();

    let spins = Spins::new(TIMEOUT);
    let rho = side::rho(bench, None, spins.clone());
    let floor = side::floor(bench, None, spins.clone());
    let mut spinning_samples = [Samples::default(), Samples::default()];
    let mut exits = 0;
    let per_round = config.kill_spinning.div_ceil(config.kill_rounds);
    for round in 0..config.kill_rounds {
        for which in Which::order(round) {
            bench.settle();
            let samples = &mut spinning_samples[which as usize];
            match which {
                Which::Rho => {
                    bench.block_on(spinning(&rho, &spins, per_round, samples, &mut exits))
                }
                Which::Floor => {
                    bench.block_on(spinning(&floor, &spins, per_round, samples, &mut exits))
                }
            }
        }
    }

    for which in [Which::Rho, Which::Floor] {
        let samples = &mut yielding[which as usize];
        let figure = format!("kill_p99_yielding_{}", which.name());
        let p99 = samples.percentile(99.0);
        if which == Which::Rho {
            report.target(name, &figure, p99, "ms past deadline", Target::AtMost(2.0));
        } else {
            report.info(name, &figure, p99, "ms past deadline");
        }
        report.info(
            name,
            &format!("kill_p50_yielding_{}", which.name()),
            samples.percentile(50.0),
            "ms past deadline",
        );
    }
    for which in [Which::Rho, Which::Floor] {
        let samples = &mut spinning_samples[which as usize];
        let figure = format!("kill_p99_non_yielding_{}", which.name());
        let p99 = samples.percentile(99.0);
        if which == Which::Rho {
            report.target(name, &figure, p99, "ms past deadline", Target::AtMost(5.0));
        } else {
            report.info(name, &figure, p99, "ms past deadline");
        }
        report.info(
            name,
            &format!("kill_p50_non_yielding_{}", which.name()),
            samples.percentile(50.0),
            "ms past deadline",
        );
    }
}
