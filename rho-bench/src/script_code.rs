//! Figures 11 and 12: code mode, a script's calls of tools.
//!
//! 11. **What a nested call adds.** A no-op tool called `K` times in a row
//!     from one script run (`for (...) await tools.noop({})`), against the
//!     same tool called `K` times in a row directly, each call one turn of
//!     the same [`TurnRunner`]. Both go through the turn machinery
//!     (validation, gate, clock, events); the nested call also crosses from
//!     the script's thread to the call's future and back, and its answer is
//!     parsed into the sandbox. A round times the script with `K` calls and
//!     the same script with none (the run's own cost), so a nested call
//!     costs `(with - without) / K`; the direct call costs its turns' time
//!     over `K`. The figure is the median over rounds of nested minus
//!     direct, in microseconds (target: at most 20).
//! 12. **A thousand nested calls in one run.** One script run makes 1,000
//!     calls of a tool, at most 16 in flight, under a 16 MiB memory cap;
//!     every call must end, in the order they complete, and the run must
//!     answer (the cap held). The figure is the number of calls that ended
//!     (target 1,000), with the run's time beside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_registry::{Source, ToolRegistry};
use rho_script::{CodeLimits, CodeMode, ScriptLimits, ScriptOptions, ScriptPool, ScriptTool};
use rho_tool_core::{Executor, Outcome, Tool, ToolCall, ToolContext, ToolOutput, async_trait};
use rho_turn::TurnRunner;

use crate::Config;
use crate::report::{Report, Target};
use crate::rt::{self, Bench};
use crate::stats::median;

/// The most a nested call may add over a direct one, in microseconds.
const NESTED_ADDED_US: f64 = 20.0;

/// The calls of figure 12.
const THOUSAND: usize = 1_000;

/// A tool that answers at once.
struct Noop;

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    async fn run(&self, _arguments: serde_json::Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text("ok")
    }
}

/// A script that calls `noop` `count` times in a row.
const SEQUENTIAL: &str = "async function run({ count }) {
    for (let i = 0; i < count; i++) await tools.noop({});
    return count;
}";

/// A script that makes `count` calls, at most 16 in flight, and answers
/// how many ended and whether each ended once.
const FAN_OUT: &str = "async function run({ count }) {
    const ended = [];
    const flying = new Set();
    for (let i = 0; i < count; i++) {
        if (flying.size >= 16) await Promise.race(flying);
        const call = tools.noop({}).then(() => { ended.push(i); flying.delete(call); });
        flying.add(call);
    }
    await Promise.all(flying);
    return { ended: ended.length, distinct: new Set(ended).size };
}";

/// The host of both figures: `noop` and two script tools that may call it.
fn host<E: Executor>(executor: E, pool: &ScriptPool) -> TurnRunner<E> {
    let registry = ToolRegistry::new();
    registry
        .add_source(Source::trusted("host"))
        .and_then(|source| source.add(Noop))
        .expect("the host's tool registers");
    let turns = TurnRunner::new(executor, registry.clone());
    let code = CodeMode::new(&turns)
        .allow_tool("noop")
        .with_limits(CodeLimits::default().with_max_calls(usize::MAX));
    let scripts: [Arc<dyn Tool>; 2] = [
        Arc::new(
            ScriptTool::new("sequential", "calls noop", SEQUENTIAL, pool).with_options(
                ScriptOptions::new()
                    .with_timeout(Duration::from_secs(600))
                    .with_code_mode(code.clone()),
            ),
        ),
        Arc::new(
            ScriptTool::new("fan_out", "calls noop", FAN_OUT, pool).with_options(
                ScriptOptions::new()
                    .with_timeout(Duration::from_secs(600))
                    .with_limits(ScriptLimits::default().with_memory(16 << 20))
                    .with_code_mode(code),
            ),
        ),
    ];
    registry
        .add_source(Source::untrusted("scripts"))
        .and_then(|source| source.add_all(scripts))
        .expect("the scripts register");
    turns
}

/// One turn of one call; its time.
async fn timed_turn<E: Executor>(
    turns: &TurnRunner<E>,
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> (Duration, rho_turn::SessionEntry) {
    let start = Instant::now();
    let mut entries = turns.turn([ToolCall::new(id, tool, arguments)]).await;
    let took = start.elapsed();
    (took, entries.remove(0))
}

/// Runs figures 11 and 12.
pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let pool = ScriptPool::new(rt::WORKERS).expect("the script threads start");
    let turns = host(bench.executor(), &pool);
    let count = config.code_calls;
    let (nested, direct, thousand) = bench.block_on(async {
        let mut nested = Vec::new();
        let mut direct = Vec::new();
        for round in 0..config.code_rounds {
            let arguments = |count: usize| serde_json::json!({ "count": count });
            let (with, entry) = timed_turn(&turns, "with", "sequential", arguments(count)).await;
            assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
            let (without, entry) = timed_turn(&turns, "without", "sequential", arguments(0)).await;
            assert_eq!(entry.outcome, Outcome::Succeeded, "{}", entry.text());
            let start = Instant::now();
            for index in 0..count {
                let id = format!("direct-{round}-{index}");
                let entries = turns
                    .turn([ToolCall::new(id, "noop", serde_json::json!({}))])
                    .await;
                assert_eq!(entries[0].outcome, Outcome::Succeeded);
            }
            let direct_each = start.elapsed().as_secs_f64() * 1e6 / count as f64;
            let nested_each = with.saturating_sub(without).as_secs_f64() * 1e6 / count as f64;
            nested.push(nested_each);
            direct.push(direct_each);
        }
        let (took, entry) = timed_turn(
            &turns,
            "thousand",
            "fan_out",
            serde_json::json!({ "count": THOUSAND }),
        )
        .await;
        (nested, direct, (took, entry))
    });
    let added: Vec<f64> = nested
        .iter()
        .zip(&direct)
        .map(|(nested, direct)| nested - direct)
        .collect();
    report.info(name, "code_nested_call_us", median(&nested), "us");
    report.info(name, "code_direct_call_us", median(&direct), "us");
    report.target(
        name,
        "code_nested_added_us",
        median(&added),
        "us",
        Target::AtMost(NESTED_ADDED_US),
    );
    let (took, entry) = thousand;
    let ended = if entry.outcome == Outcome::Succeeded {
        let answer: serde_json::Value =
            serde_json::from_str(&entry.text()).unwrap_or(serde_json::Value::Null);
        let distinct = answer["distinct"].as_u64().unwrap_or(0);
        let in_session = entry.nested.len() as u64;
        // Every call ended once, and the session kept each.
        if answer["ended"].as_u64() == Some(distinct) && in_session == distinct {
            distinct as f64
        } else {
            eprintln!(
                "[{name}] the thousand calls did not each end once: {answer}, {in_session} kept"
            );
            0.0
        }
    } else {
        eprintln!(
            "[{name}] the thousand-call run ended {}: {}",
            entry.outcome,
            entry.text()
        );
        0.0
    };
    report.target(
        name,
        "code_thousand_calls_ended",
        ended,
        "calls",
        Target::AtLeast(THOUSAND as f64),
    );
    report.info(
        name,
        "code_thousand_calls_ms",
        took.as_secs_f64() * 1e3,
        "ms",
    );
}
