//! Figures 7 and 8: what a script tool's call costs. A trivial script
//! (`function run({ a, b }) { return { sum: a + b }; }`, arguments
//! `{"a":2,"b":3}`) called through rho, one call after the other, against
//! the same work done with the engine alone, and against a fresh `node -e`
//! process per call.
//!
//! - **rho**: a [`ScriptTool`] on a [`ScriptPool`] of two threads, started
//!   by rho's runner from the loop on the main thread and awaited; the time
//!   of one call runs from `start` to its `CallEnd`. Everything a host pays
//!   is in it: the call's task on a worker, the hop to the script's thread
//!   and back, a fresh runtime and context with the memory cap, the stack
//!   limit and the interrupt, the `rho` grants, the script, `run`, and the
//!   answer made plain data and JSON text. Not in it: freeing the runtime,
//!   which the script thread does after it sent the answer, before it
//!   takes its next call (the bare engine's free is in its time).
//! - **bare**: the engine without rho, on the loop's own thread: a new
//!   `Runtime`, `Context::full`, evaluate the source, get `run`, parse the
//!   arguments' JSON into a JavaScript value, call, and the result as JSON
//!   text. No caps, no interrupt, no grants, no thread hop: the least any
//!   host that runs each call in a fresh sandbox must do.
//! - **node**: `node -e '<source>; process.stdout.write(JSON.stringify(
//!   run(JSON.parse(process.argv[1]))))' '{"a":2,"b":3}'`, a process per
//!   call, the way hosts often run model-written code; timed from spawn to
//!   its output read and the process reaped. When `node` is not on `PATH`
//!   the figure is NOT measured: it is said on stderr and its row misses.
//!
//! rho and bare alternate in rounds (rho first in even rounds); each
//! round's ratio is rho's median call over bare's, and the figure is the
//! median of the rounds' ratios. The p50 and p99 rows are over every call
//! of every round. Node's p50 is set against rho's p50 of the same run.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_script::{ScriptPool, ScriptTool};
use rho_tool_core::{Executor, Outcome, Runner, Tool, ToolCall};
use rquickjs::{Context, Function, Runtime, Value};

use crate::Config;
use crate::report::{Report, Target};
use crate::rt::{self, Bench, RuntimeName};
use crate::stats::{Samples, median};

/// The trivial script of figures 7 and 8.
pub(crate) const ADD_SOURCE: &str = "function run({ a, b }) { return { sum: a + b }; }";
/// Its answer, as rho's text and the engine's JSON.
pub(crate) const ADD_ANSWER: &str = r#"{"sum":5}"#;

/// The trivial call's arguments.
pub(crate) fn add_arguments() -> serde_json::Value {
    serde_json::json!({ "a": 2, "b": 3 })
}

/// The trivial script as a tool on `pool`.
pub(crate) fn add_tool(pool: &ScriptPool) -> Arc<dyn Tool> {
    Arc::new(ScriptTool::new(
        "add",
        "Adds `a` and `b`.",
        ADD_SOURCE,
        pool,
    ))
}

/// The sides of figure 7 (named as [`Engine::name`] on the command
/// line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Engine {
    /// A script tool, called through rho.
    Rho,
    /// The engine alone, on the loop's thread.
    Bare,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Rho => "rho",
            Engine::Bare => "bare",
        }
    }

    /// Round `round`'s order, as [`crate::side::Which::order`] does it.
    fn order(round: usize) -> [Engine; 2] {
        if round.is_multiple_of(2) {
            [Engine::Rho, Engine::Bare]
        } else {
            [Engine::Bare, Engine::Rho]
        }
    }
}

/// `count` trivial calls through rho, one after the other; each call's
/// time in microseconds goes to `times`.
async fn rho_calls<E: Executor>(
    runner: &Runner<E>,
    tool: &Arc<dyn Tool>,
    count: usize,
    times: &mut Vec<f64>,
) {
    for index in 0..count {
        let call = ToolCall::new(format!("add-{index}"), "add", add_arguments());
        let start = Instant::now();
        let end = runner.start(call, Arc::clone(tool)).await;
        let took = start.elapsed();
        assert_eq!(
            (end.outcome, end.result.text().as_str()),
            (Outcome::Succeeded, ADD_ANSWER),
            "the script call answers its sum"
        );
        times.push(us(took));
    }
}

/// `count` trivial calls on the bare engine, on this thread.
fn bare_calls(count: usize, times: &mut Vec<f64>) {
    let arguments = add_arguments();
    for _ in 0..count {
        let start = Instant::now();
        let answer = bare_call(ADD_SOURCE, &arguments);
        let took = start.elapsed();
        assert_eq!(answer, ADD_ANSWER, "the bare call answers its sum");
        times.push(us(took));
    }
}

/// One call on the engine alone, in a fresh runtime and context: the
/// answer as JSON text.
fn bare_call(source: &str, arguments: &serde_json::Value) -> String {
    // Written as text first, as rho does: a host's arguments are JSON.
    let arguments = serde_json::to_string(arguments).expect("JSON arguments");
    let runtime = Runtime::new().expect("a QuickJS runtime");
    let context = Context::full(&runtime).expect("a QuickJS context");
    context.with(|ctx| {
        ctx.eval::<(), _>(source).expect("the script loads");
        let run: Function<'_> = ctx.globals().get("run").expect("a function `run`");
        let arguments = ctx.json_parse(arguments).expect("the arguments parse");
        let answer: Value<'_> = run.call((arguments,)).expect("`run` answers");
        ctx.json_stringify(answer)
            .expect("the answer is JSON")
            .expect("the answer is not undefined")
            .to_string()
            .expect("the JSON is text")
    })
}

fn us(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Whether `node` runs, and its version.
fn node_version() -> Option<String> {
    let output = Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `count` trivial calls as fresh `node -e` processes; each one's time in
/// milliseconds.
fn node_calls(count: usize) -> Samples {
    let program = format!(
        "{ADD_SOURCE}; process.stdout.write(JSON.stringify(run(JSON.parse(process.argv[1]))))"
    );
    let arguments = add_arguments().to_string();
    let mut samples = Samples::default();
    for _ in 0..count {
        let start = Instant::now();
        let output = Command::new("node")
            .arg("-e")
            .arg(&program)
            .arg(&arguments)
            .stdin(Stdio::null())
            .output()
            .expect("node runs");
        let took = start.elapsed();
        assert!(
            output.status.success() && output.stdout == ADD_ANSWER.as_bytes(),
            "node answered {:?} ({}): {}",
            String::from_utf8_lossy(&output.stdout),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        samples.push(took.as_secs_f64() * 1e3);
    }
    samples
}

/// Runs figures 7 (rho against the bare engine) and 8 (against `node -e`).
pub(crate) fn run<B: Bench>(bench: &B, config: &Config, report: &mut Report) {
    let name = B::NAME;
    let pool = ScriptPool::new(rt::WORKERS).expect("the script threads start");
    let runner = Runner::new(bench.executor());
    let tool = add_tool(&pool);
    let count = config.script_calls;

    // Warm-up: the pool's threads, the runtime's workers, the engine's and
    // the allocator's first pages, on both sides.
    let mut untimed = Vec::new();
    bench.block_on(rho_calls(&runner, &tool, count / 4 + 1, &mut untimed));
    bare_calls(count / 4 + 1, &mut untimed);

    let mut all = [Samples::default(), Samples::default()];
    let mut ratios = Vec::new();
    for round in 0..config.script_rounds {
        let mut medians = [0.0; 2];
        for engine in Engine::order(round) {
            bench.settle();
            let mut times = Vec::with_capacity(count);
            match engine {
                Engine::Rho => bench.block_on(rho_calls(&runner, &tool, count, &mut times)),
                Engine::Bare => bare_calls(count, &mut times),
            }
            medians[engine as usize] = median(&times);
            for time in times {
                all[engine as usize].push(time);
            }
        }
        ratios.push(medians[0] / medians[1]);
    }
    let rho_p50 = all[0].percentile(50.0);
    // Context, not a target: on two cores this ratio measures the thread
    // hops the contract requires (the loop's, the executor's, the script
    // thread's), not rho's work, which is 1.11x the bare engine's
    // instructions on the script thread (callgrind).
    report.info(name, "script_call_ratio", median(&ratios), "rho/bare");
    report.target(
        name,
        "script_call_rho_p50",
        rho_p50,
        "us/call",
        Target::AtMost(300.0),
    );
    report.info(
        name,
        "script_call_rho_p99",
        all[0].percentile(99.0),
        "us/call",
    );
    report.info(
        name,
        "script_call_bare_p50",
        all[1].percentile(50.0),
        "us/call",
    );
    report.info(
        name,
        "script_call_bare_p99",
        all[1].percentile(99.0),
        "us/call",
    );

    match node_version() {
        Some(version) => {
            let mut node = node_calls(config.script_node_calls);
            let node_p50 = node.percentile(50.0);
            report.target(
                name,
                "script_node_ratio",
                node_p50 * 1e3 / rho_p50,
                "node/rho (p50s)",
                Target::AtLeast(100.0),
            );
            report.info(name, "script_node_p50", node_p50, NODE_UNIT);
            report.info(name, "script_node_p99", node.percentile(99.0), NODE_UNIT);
            if name == "tokio" {
                eprintln!("[{name}] node -e per call: {version}");
            }
        }
        None => {
            eprintln!(
                "\n!!! [{name}] script_node_ratio was NOT MEASURED: `node` is not on PATH \
                 (or does not run). The row reads 0 and misses its target.\n"
            );
            report.target(
                name,
                "script_node_ratio",
                0.0,
                "NOT MEASURED: no node on PATH",
                Target::AtLeast(100.0),
            );
        }
    }
}

/// The unit of node's own rows.
const NODE_UNIT: &str = "ms/call (fresh process)";

/// The hidden subcommand that runs one side of figure 7 alone, for a
/// profiler: `__script <tokio|smol> <rho|bare> <calls> [script threads]`
/// (two script threads unless told: one shows the script thread's own
/// time per call, with no other script thread beside it). It ends by
/// printing each thread's time on a CPU and waiting for one, per call: a
/// rho call wakes four threads in turn (the loop's, a worker, a script
/// thread, the worker, the loop's), the bare engine none.
pub(crate) const PROFILE: &str = "__script";

/// Runs the [`PROFILE`] subcommand.
pub(crate) fn profile(runtime: RuntimeName, engine: Engine, count: usize, threads: usize) {
    match runtime {
        RuntimeName::Tokio => profile_on(&rt::Tokio::new(), engine, count, threads),
        RuntimeName::Smol => profile_on(&rt::Smol::new(), engine, count, threads),
    }
}

fn profile_on<B: Bench>(bench: &B, engine: Engine, count: usize, threads: usize) {
    let mut times = Vec::with_capacity(count);
    // Kept until the threads are read: its threads end when it is dropped.
    let pool = ScriptPool::new(threads).expect("the script threads start");
    match engine {
        Engine::Rho => {
            let runner = Runner::new(bench.executor());
            let tool = add_tool(&pool);
            bench.block_on(rho_calls(&runner, &tool, count, &mut times));
        }
        Engine::Bare => bare_calls(count, &mut times),
    }
    eprintln!(
        "{} on {}: median {:.1} us/call over {count} calls",
        engine.name(),
        B::NAME,
        median(&times)
    );
    print_threads(count);
    drop(pool);
}

/// Each thread's time on a CPU and waiting for one (`schedstat`), per
/// call: where a call's wall time went beyond its instructions (a thread
/// woken for each hop waits for a CPU on a busy machine).
fn print_threads(count: usize) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    let mut lines = Vec::new();
    for task in tasks.flatten() {
        let read = |file: &str| std::fs::read_to_string(task.path().join(file)).ok();
        let (Some(name), Some(stat)) = (read("comm"), read("schedstat")) else {
            continue;
        };
        let fields: Vec<f64> = stat
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        let [on_cpu, waiting, slices] = fields[..] else {
            continue;
        };
        let per = |value: f64| value / count as f64;
        lines.push(format!(
            "  {:<16} on CPU {:8.1} us/call, waiting for a CPU {:8.1} us/call, {:5.2} runs/call",
            name.trim(),
            per(on_cpu) / 1e3,
            per(waiting) / 1e3,
            per(slices)
        ));
    }
    lines.sort();
    eprintln!("threads (from /proc/self/task/*/schedstat, whole run):");
    for line in lines {
        eprintln!("{line}");
    }
}
