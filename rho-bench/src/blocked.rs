//! Figure 4: the loop is never blocked. The end-to-end latency (start to
//! end, as the loop sees it) of fresh no-op calls, one after the other,
//! while 10,000 calls wait at their gate in the same loop, against the same
//! with no gate waiting.
//!
//! The waiting calls are in the loop's set of calls (a driver that polls the
//! calls that were woken), as a host's would be; the fresh calls go into the
//! same set. A runner whose waiting gates held the loop, or cost it a poll
//! each per fresh call, would show here.

use std::sync::Arc;
use std::time::Instant;

use crate::Config;
use crate::driver::Driver;
use crate::floor::FloorRt;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::side::{self, Ended, Side, Which};
use crate::stats::{Samples, ms};
use crate::tools::{Hold, HoldGate, NoOp, calls};

/// Measures `fresh` sequential no-op calls through `fresh_side`, with
/// `held` calls of `held_side` waiting at their gate in the same driver.
async fn measure<B: Bench, S: Side>(
    held_side: &S,
    fresh_side: &S,
    hold: &Hold,
    held: usize,
    fresh: usize,
    samples: &mut Samples,
) {
    let mut driver: Driver<S::Call> = Driver::new();
    for call in calls("noop", held) {
        driver.push(held_side.start(call));
    }
    // Let every held gate start waiting, the loop taking the calls' events.
    let start = Instant::now();
    while hold.waiting() < held {
        assert!(start.elapsed().as_secs() < 60, "gates did not start");
        let tick = <B::Floor as FloorRt>::sleep_until(
            Instant::now() + std::time::Duration::from_millis(1),
        );
        let mut tick = std::pin::pin!(tick);
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(Some(_)) = driver.poll_next(cx) {
                panic!("a held call ended");
            }
            tick.as_mut().poll(cx)
        })
        .await;
    }
    for call in calls("noop", fresh) {
        let start = Instant::now();
        let index = driver.push(fresh_side.start(call));
        let (ended, end) = driver.next().await.expect("the fresh call ends");
        samples.push(ms(start.elapsed()) * 1e3);
        assert_eq!(ended, index, "only the fresh call ends");
        assert_eq!(S::ended(&end).0, Ended::Succeeded);
    }
    hold.release();
    while let Some((_, end)) = driver.next().await {
        assert_eq!(S::ended(&end).0, Ended::Denied);
    }
}

pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    // [side][0: none waiting, 1: held waiting]
    let mut samples: [[Samples; 2]; 2] = Default::default();
    for round in 0..config.blocked_rounds {
        for which in Which::order(round) {
            let conditions = if round % 2 == 0 { [1, 0] } else { [0, 1] };
            for condition in conditions {
                let held = if condition == 1 {
                    config.blocked_held
                } else {
                    0
                };
                let hold = Hold::new();
                let target = &mut samples[which as usize][condition];
                bench.settle();
                match which {
                    Which::Rho => {
                        let held_side = side::rho(
                            bench,
                            Some(Arc::new(HoldGate(hold.clone()))),
                            Arc::new(NoOp),
                        );
                        let fresh_side = side::rho(bench, None, Arc::new(NoOp));
                        bench.block_on(measure::<B, _>(
                            &held_side,
                            &fresh_side,
                            &hold,
                            held,
                            config.blocked_fresh,
                            target,
                        ));
                    }
                    Which::Floor => {
                        let held_side = side::floor(
                            bench,
                            Some(Arc::new(HoldGate(hold.clone()))),
                            Arc::new(NoOp),
                        );
                        let fresh_side = side::floor(bench, None, Arc::new(NoOp));
                        bench.block_on(measure::<B, _>(
                            &held_side,
                            &fresh_side,
                            &hold,
                            held,
                            config.blocked_fresh,
                            target,
                        ));
                    }
                }
            }
        }
    }
    for which in [Which::Rho, Which::Floor] {
        let [none, held] = &mut samples[which as usize];
        let ratio = held.percentile(99.0) / none.percentile(99.0);
        let figure = format!("fresh_call_p99_ratio_{}", which.name());
        if which == Which::Rho {
            report.target(name, &figure, ratio, "held/none", Target::AtMost(2.0));
        } else {
            report.info(name, &figure, ratio, "held/none");
        }
        for (label, samples) in [("none", none), ("held", held)] {
            report.info(
                name,
                &format!("fresh_call_p50_{label}_{}", which.name()),
                samples.percentile(50.0),
                "us",
            );
            report.info(
                name,
                &format!("fresh_call_p99_{label}_{}", which.name()),
                samples.percentile(99.0),
                "us",
            );
        }
    }
}
