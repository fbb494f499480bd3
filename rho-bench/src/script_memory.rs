//! Figure 10: scripts that allocate up to their memory cap leave nothing
//! behind. A script that grows an array of 4 KiB strings for ever, with a
//! 16 MiB cap, is called again and again in a fresh process (this binary
//! re-run with a hidden subcommand, so no other figure's memory is in it),
//! two calls at a time on a pool of two script threads. Every call must
//! end `Crashed` (the child panics otherwise), and the ones whose text
//! names the cap are counted; a crash that does not name it is a row that
//! misses (smaller pieces, such as `hog.push({ i })`, run the engine so
//! short of memory that it cannot make its out-of-memory error, and the
//! call's text says the script threw `null`).
//!
//! The child reads its resident size (`VmRSS`) after a warm-up of such
//! calls (each thread's allocator arena has held a sandbox at its cap by
//! then) and again after the measured calls; the figure is the growth
//! between the two, in percent.

use std::process::Command;
use std::sync::Arc;

use rho_script::{ScriptLimits, ScriptOptions, ScriptPool, ScriptTool};
use rho_tool_core::{Executor, Outcome, Runner, Tool, ToolCall};

use crate::Config;
use crate::memory::rss_bytes;
use crate::report::{Report, Target};
use crate::rt::{self, Bench, RuntimeName, Smol, Tokio};

/// The hidden subcommand's name.
pub(crate) const SUBCOMMAND: &str = "__script_memory";

/// Each call's memory cap.
const CAP: usize = 16 << 20;

/// What each call runs: it allocates until the cap stops it.
/// Its pieces are made by concatenation, not each by `repeat`: QuickJS's
/// `repeat` writes one character at a time, which would make the figure
/// mostly the script's own 50 ms.
const HOG_SOURCE: &str = r#"function run() {
  const piece = "x".repeat(4096);
  const hog = [];
  for (let i = 0; ; i++) hog.push(piece + i);
}"#;

/// The text a call stopped by its cap ends with.
const CAPPED: &str = "exceeded its memory limit of 16 MiB";

/// One child's measurement.
#[derive(Debug, Clone, Copy)]
struct Measured {
    rss_warm: u64,
    rss_end: u64,
    /// Measured calls whose text names the cap.
    capped: u64,
    /// Measured calls that crashed with another text.
    unnamed: u64,
}

/// The child: `__script_memory <tokio|smol> <warm-up calls> <calls>`;
/// prints one line of numbers, and on stderr the first text of a crash
/// that did not name the cap, if any.
pub(crate) fn child(runtime: RuntimeName, warm_up: usize, count: usize) {
    let (rss_warm, rss_end, ends) = match runtime {
        RuntimeName::Tokio => measure(&Tokio::new(), warm_up, count),
        RuntimeName::Smol => measure(&Smol::new(), warm_up, count),
    };
    if let Some(text) = &ends.first_unnamed {
        eprintln!("{text}");
    }
    println!("{rss_warm} {rss_end} {} {}", ends.capped, ends.unnamed);
}

/// The resident size after the warm-up, at the end, and how the measured
/// calls ended.
fn measure<B: Bench>(bench: &B, warm_up: usize, count: usize) -> (u64, u64, Ends) {
    let pool = ScriptPool::new(rt::WORKERS).expect("the script threads start");
    let runner = Runner::new(bench.executor());
    let tool: Arc<dyn Tool> = Arc::new(
        ScriptTool::new("hog", "Takes all it can.", HOG_SOURCE, &pool).with_options(
            ScriptOptions::new().with_limits(ScriptLimits::default().with_memory(CAP)),
        ),
    );
    bench.block_on(hog_calls(&runner, &tool, warm_up));
    bench.settle();
    let rss_warm = rss_bytes();
    let ends = bench.block_on(hog_calls(&runner, &tool, count));
    bench.settle();
    (rss_warm, rss_bytes(), ends)
}

/// How a batch of hog calls ended: stopped by the cap with its text, or
/// `Crashed` with another text (the first such text kept).
#[derive(Debug, Default)]
struct Ends {
    capped: usize,
    unnamed: usize,
    first_unnamed: Option<String>,
}

/// `count` calls, [`rt::WORKERS`] at a time. Every call must end
/// `Crashed` (anything else panics); the text is counted.
async fn hog_calls<E: Executor>(runner: &Runner<E>, tool: &Arc<dyn Tool>, count: usize) -> Ends {
    let mut ends = Ends::default();
    let mut index = 0;
    while index < count {
        let batch: Vec<_> = (index..count.min(index + rt::WORKERS))
            .map(|n| {
                let call = ToolCall::new(format!("hog-{n}"), "hog", serde_json::json!({}));
                runner.start(call, Arc::clone(tool))
            })
            .collect();
        index += batch.len();
        for handle in batch {
            let end = handle.await;
            let text = end.result.text();
            assert_eq!(
                end.outcome,
                Outcome::Crashed,
                "a call that allocates without end crashes: {text}"
            );
            if text.contains(CAPPED) {
                ends.capped += 1;
            } else {
                ends.unnamed += 1;
                ends.first_unnamed.get_or_insert(text);
            }
        }
    }
    ends
}

fn run_child(runtime: &str, warm_up: usize, count: usize) -> Measured {
    let exe = std::env::current_exe().expect("this binary's path");
    let output = Command::new(exe)
        .args([
            SUBCOMMAND,
            runtime,
            &warm_up.to_string(),
            &count.to_string(),
        ])
        .output()
        .expect("the script memory child runs");
    assert!(
        output.status.success(),
        "the script memory child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<u64> = text
        .split_whitespace()
        .map(|word| word.parse().expect("a number"))
        .collect();
    let [rss_warm, rss_end, capped, unnamed] = numbers[..] else {
        panic!("the script memory child printed `{text}`");
    };
    if unnamed > 0 {
        eprintln!(
            "!!! [{runtime}] {unnamed} of the script memory calls crashed without naming the \
             memory cap; the first said: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Measured {
        rss_warm,
        rss_end,
        capped,
        unnamed,
    }
}

/// Runs figure 10's child for `runtime` and reports it.
pub(crate) fn run(runtime: &'static str, config: &Config, report: &mut Report) {
    let measured = run_child(
        runtime,
        config.script_memory_warm_up,
        config.script_memory_calls,
    );
    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    let growth =
        (measured.rss_end as f64 - measured.rss_warm as f64) * 100.0 / measured.rss_warm as f64;
    report.target(
        runtime,
        "script_memory_rss_growth",
        growth,
        "% of warm RSS",
        Target::AtMost(10.0),
    );
    report.info(
        runtime,
        "script_memory_rss_warm",
        mib(measured.rss_warm),
        "MiB resident",
    );
    report.info(
        runtime,
        "script_memory_rss_end",
        mib(measured.rss_end),
        "MiB resident",
    );
    report.info(
        runtime,
        "script_memory_capped_calls",
        measured.capped as f64,
        "calls Crashed naming the cap",
    );
    // Every call crashed (the child checks that); one whose text does not
    // name the cap tells the model the wrong thing about its script.
    report.target(
        runtime,
        "script_memory_unnamed_crashes",
        measured.unnamed as f64,
        "calls Crashed, cap not named",
        Target::AtMost(0.0),
    );
}
