//! Figure 9: how soon a script that never yields is stopped. Two scripts,
//! each with a 20 ms timeout: a loop (`function run() { for (;;) {} }`) and
//! a regular expression that backtracks for ever (`/^(a+)+$/` on forty
//! `a`s and a `!`). Each sample is one call of one of them on a pool of
//! ONE script thread, and:
//!
//! - **stop**: `ran - timeout` of the call, `ran` measured by the handle
//!   from the running notice to the moment it ended the call (as in
//!   figure 3);
//! - **thread free**: how long after the same deadline a trivial call
//!   queued right behind it (started 2 ms after the running notice, so it
//!   waits in the pool's queue for the only thread) has ended, as the loop
//!   sees it. It can only end once the stopped script has let go of the
//!   thread, so this bounds from above when the thread was free again; it
//!   includes the trivial call's own run (figure 7's p50, some 0.1 to
//!   0.3 ms).
//!
//! The two scripts alternate, sample by sample.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_script::{ScriptOptions, ScriptPool, ScriptTool};
use rho_tool_core::{CallEvent, Executor, Outcome, Runner, Tool, ToolCall};

use crate::Config;
use crate::floor::FloorRt;
use crate::report::{Report, Target};
use crate::rt::Bench;
use crate::script::{ADD_ANSWER, add_arguments, add_tool};
use crate::stats::{Samples, ms};

/// The never-yielding scripts' timeout.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(20);

/// How long after the running notice the trivial call is started, so that
/// the script being stopped surely holds the thread by then.
const QUEUE_AFTER: Duration = Duration::from_millis(2);

/// The scripts that never yield: their names in the figures, and sources.
const SCRIPTS: [(&str, &str); 2] = [
    ("loop", "function run() { for (;;) {} }"),
    (
        "regex",
        r#"function run() { return /^(a+)+$/.test("a".repeat(40) + "!"); }"#,
    ),
];

/// One sample: how far past the deadline the call ended, and the trivial
/// call behind it.
async fn sample<B: Bench, E: Executor>(
    runner: &Runner<E>,
    stuck: &Arc<dyn Tool>,
    next: &Arc<dyn Tool>,
    index: usize,
) -> (Duration, Duration) {
    let call = ToolCall::new(
        format!("stuck-{index}"),
        stuck.name(),
        serde_json::json!({}),
    );
    let mut handle = runner.start(call, Arc::clone(stuck));
    loop {
        match handle.next_event().await {
            Some(CallEvent::Running(_)) => break,
            Some(CallEvent::Ended(end)) => panic!("the stuck script ended at once: {end:?}"),
            Some(_) => {}
            None => panic!("the stuck call gave no events"),
        }
    }
    <B::Floor as FloorRt>::sleep_until(Instant::now() + QUEUE_AFTER).await;
    let behind = runner.start(
        ToolCall::new(format!("behind-{index}"), "add", add_arguments()),
        Arc::clone(next),
    );
    let end = (&mut handle).await;
    let ended = Instant::now();
    let ran = end.ran.expect("the stuck call ran");
    assert_eq!(
        end.outcome,
        Outcome::TimedOut,
        "the stuck script is stopped at its timeout: {}",
        end.result.text()
    );
    let behind = behind.await;
    let freed = Instant::now();
    assert_eq!(
        (behind.outcome, behind.result.text().as_str()),
        (Outcome::Succeeded, ADD_ANSWER),
        "the call behind it answers"
    );
    let deadline = ended - ran + TIMEOUT;
    (
        ran.saturating_sub(TIMEOUT),
        freed.saturating_duration_since(deadline),
    )
}

/// Runs figure 9 on `bench`.
pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let pool = ScriptPool::new(1).expect("the script thread starts");
    let runner = Runner::new(bench.executor());
    let next = add_tool(&pool);
    let stuck: Vec<Arc<dyn Tool>> = SCRIPTS
        .iter()
        .map(|(label, source)| {
            let tool = ScriptTool::new(*label, "Never ends.", *source, &pool)
                .with_options(ScriptOptions::new().with_timeout(TIMEOUT));
            Arc::new(tool) as Arc<dyn Tool>
        })
        .collect();

    // Warm-up: one of each.
    for (index, tool) in stuck.iter().enumerate() {
        bench.block_on(sample::<B, _>(&runner, tool, &next, index));
    }
    let mut stops = [Samples::default(), Samples::default()];
    let mut frees = [Samples::default(), Samples::default()];
    bench.block_on(async {
        for index in 0..config.script_stop_samples {
            for (which, tool) in stuck.iter().enumerate() {
                let (stop, free) = sample::<B, _>(&runner, tool, &next, index).await;
                stops[which].push(ms(stop));
                frees[which].push(ms(free));
            }
        }
    });

    for (which, (label, _)) in SCRIPTS.iter().enumerate() {
        for (figure, samples) in [
            ("stop", &mut stops[which]),
            ("thread_free", &mut frees[which]),
        ] {
            report.target(
                name,
                &format!("script_{figure}_p99_{label}"),
                samples.percentile(99.0),
                UNIT,
                Target::AtMost(5.0),
            );
            report.info(
                name,
                &format!("script_{figure}_p50_{label}"),
                samples.percentile(50.0),
                UNIT,
            );
        }
    }
}

const UNIT: &str = "ms past deadline";
