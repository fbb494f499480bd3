//! rho's benchmark harness of record: rho's runner against a hand-written
//! floor, on tokio and on smol, each with two worker threads.
//!
//! ```sh
//! cargo run --release -p rho-bench               # the table (a few minutes)
//! cargo run --release -p rho-bench -- --json     # one JSON object a line
//! cargo run --release -p rho-bench -- --quick    # a smoke run of a few seconds
//! ```
//!
//! A JSON line is `{"figure", "runtime", "value", "unit", "target",
//! "meets"}`; `target` is `null` for a figure printed for context (a floor's
//! own value, a part of a ratio), and such a figure always "meets". The
//! `--quick` run uses small counts: its figures show the harness works, not
//! whether the targets are met. `--only LIST` runs some figures
//! (comma-separated:
//! `percall,sequential_task,memory,kill,blocked,plain,registry`, and for
//! script tools `script` (figures 7 to 12) or some of `script_call`
//! (7 and 8), `script_stop` (9), `script_memory` (10), `code` (11 and
//! 12); for MCP `mcp_server` (13), `mcp_proxy` (14) and `mcp_scale`
//! (16); `confine` (15); `order` (17), what keeping the model's order
//! costs a turn; `hosts` (18), a request through the confinement's proxy).
//!
//! # How it measures
//!
//! The loop runs on the main thread in the runtime's `block_on`; the calls'
//! tasks run on the two workers (tokio's multi-thread runtime with two
//! workers; a smol executor run by two threads). One figure (the sequential
//! cost with the loop as a task) runs the loop as a task on the workers
//! instead. Every comparison runs rho and the floor in the same process, in
//! alternating rounds (rho first in even rounds, the floor first in odd
//! ones), and takes the median of the rounds, so that machine noise hits
//! both. Between rounds the harness
//! waits until the runtime has no task alive.
//!
//! **The floor** ([`floor`]) is what a careful engineer would write by hand
//! for the same observable job: one spawn, a `dyn` gate's boxed future and
//! the `dyn` tool's boxed future each polled inside `catch_unwind`, a
//! one-shot running notice, the timeout timer started when the notice
//! arrives, an abort at the deadline, and the join. So a ratio measures
//! what rho adds on top: containment of panicking `Drop`s, the watch,
//! events, normalised answers with plain details, texts, timings.
//!
//! # The figures
//!
//! 1. **Per-call cost** ([`percall`]): a no-op tool with the default gate.
//!    Sequential: start a call, await it, start the next. In flight: start
//!    100,000 calls, then await them all, each timed pass right after an
//!    untimed one of the same side (so each side meets the allocator as its
//!    own calls leave it). The figure is rho's time per call over the
//!    floor's. Also: allocations and bytes allocated per call of
//!    each, counted by this binary's counting allocator ([`alloc`]) in a
//!    separate, untimed pass.
//!
//!    Sequential, loop as a task (`--only sequential_task`, figures
//!    `per_call_*_sequential_task`): the same start, await, next, but the
//!    whole loop is one task spawned on the runtime (`Runtime::spawn` on
//!    tokio, `Executor::spawn` on the smol executor), and the main thread
//!    only waits for its end; the clock runs inside the task. That is the
//!    usual host shape, `tokio::spawn(async { loop { .. } })`: the loop
//!    runs on a worker beside its calls' tasks. On tokio a task spawned
//!    from a worker is queued on that worker (and run next once the loop
//!    waits), so a call need not cross threads the way it does from
//!    `block_on`; smol's executor queues every spawn on its shared queue
//!    and wakes a runner, wherever it came from. The ratio rho/floor is
//!    printed for context; the figure of record in this shape is rho's own
//!    time, set against a recorded reference: 8.1 us, a sequential call on the seed's
//!    own runtime (a BEAM `Task.Supervisor`), measured once on this
//!    project's machine and kept as a constant
//!    (`percall::BEAM_SEQUENTIAL_US`), not measured by this binary.
//!    `per_call_rho_sequential_task_vs_beam` is rho's time in microseconds
//!    with that reference as its target (it "meets" when rho beats it); it
//!    means something only on that machine.
//! 2. **Memory per in-flight call** ([`memory`]): 100,000 calls whose tools
//!    wait, each side measured in a fresh process (this binary re-run with a
//!    hidden subcommand): resident bytes (`VmRSS`) after, minus before, over
//!    the calls, once every tool waits and the loop has polled every handle
//!    (which starts each call's timer). Also the counting allocator's live
//!    heap bytes per call.
//! 3. **Kill latency** ([`kill`]): calls with a 10 ms timeout whose tools
//!    overrun; `ran - timeout` of each call, where `ran` runs from the
//!    task's running notice to the moment the handle ends the call. Tools
//!    that yield: 10,000 calls per round, started 100 per millisecond into
//!    one loop. Tools that never yield (spinning on a stop flag): one at a
//!    time, each on a worker of its own, since a spinning tool holds its
//!    worker (the floor's tokio timer needs the other, idle worker; rho's
//!    clock on tokio is a thread of its own; smol's timer runs on the loop's
//!    thread).
//! 4. **The loop is never blocked** ([`blocked`]): the latency of fresh
//!    no-op calls, one after the other, while 10,000 calls wait at their
//!    gate in the same loop, against none waiting; the figure is the ratio
//!    of the p99s.
//! 5. **Plain data** ([`plain`]): `to_plain` on a ~10 MB nested answer
//!    against `serde_json::to_value` of the same value, in a task on a
//!    worker; MB/s of compact JSON and the ratio.
//! 6. **Registry** ([`registry`]): `resolve` plus the watch's `started` and
//!    `ended` per call, on two threads at once, against a hand-written map;
//!    nanoseconds per call on each thread. No target: for context.
//!
//! Figures 5 and 6 do not depend on the runtime; they run in a task on each
//! runtime's workers all the same, so each runtime's table is complete.
//!
//! Script tools (`rho-script`: JavaScript the model writes, a fresh
//! QuickJS sandbox per call on the script pool's own threads) have a peer
//! of their own instead of the floor:
//!
//! 7. **A script call against the bare engine** ([`script`]): a trivial
//!    script (`{a, b}` in, `{sum}` out), one call after the other, through
//!    rho against the same work on the engine alone (`rquickjs`: a new
//!    runtime and full context, evaluate, call `run`, JSON in and out) on
//!    the loop's thread, in alternating rounds. The figure is rho's median
//!    call over the bare engine's (target <= 1.3), with rho's p50 (target
//!    <= 300 us) and the p99s beside it.
//! 8. **Against `node -e`** ([`script`]): the same call as a fresh
//!    `node -e` process per call, as hosts often run model-written code;
//!    node's p50 over rho's (target >= 100). Without `node` on `PATH` the
//!    figure is not measured, says so on stderr, and its row misses.
//! 9. **Stopping a script that never yields** ([`script_stop`]): a loop and
//!    a catastrophic regular expression, 20 ms timeout, on a pool of one
//!    script thread: how far past its deadline the call ends, and when a
//!    trivial call queued right behind it has ended (so the thread was
//!    free again); p99 target <= 5 ms each.
//! 10. **Memory of scripts that hit their cap** ([`script_memory`]): in a
//!     fresh process, 1,000 calls of a script that allocates until its
//!     16 MiB cap stops it (each must end `Crashed`; the ones whose text
//!     names the cap are counted); the resident size after a warm-up and
//!     after the calls, growth target <= 10%.
//! 11. **What a script's call of a tool adds** ([`script_code`]): a
//!     no-op tool called from a script (code mode) against the same tool
//!     called directly, each through the same turn runner; microseconds
//!     added per call, target <= 20.
//! 12. **A thousand calls from one script run** ([`script_code`]): at
//!     most 16 in flight, under a 16 MiB cap; every call must end once and
//!     be kept in the run's session entry (target: 1,000 ended).
//!
//! MCP (`rho-mcp`, tokio only: its SDK, rmcp, runs on tokio) has peers of
//! its own too:
//!
//! 13. **rho's MCP server against a bare rmcp server** ([`mcp_server`]):
//!     the same no-op tool, the same rmcp client, the same in-process pipe,
//!     8 calls in flight, alternating rounds; rho's calls/s over the bare
//!     server's (target >= 0.8).
//! 14. **Latency the proxy adds** ([`mcp_proxy`]): the same client calls a
//!     small Rust stdio MCP server (`__mcp_noop`, the bare server) directly,
//!     through the proxy (`__mcp_proxy`: `rho_mcp::proxy` run as
//!     `rho-mcp proxy` runs it), and through a byte relay (`__mcp_relay`,
//!     the floor: what a process in between costs before it does any
//!     work), fresh processes each round, one call after the other; the
//!     proxy's p50 and p99 minus the direct ones (target: p50 added <= 300
//!     us), next to the relay's.
//! 15. **What confinement costs** ([`confine`]): `/bin/true` plainly,
//!     through `rho-confine` with the default confinement, through this
//!     binary as the launcher, and through bubblewrap with the same
//!     namespaces and mounts, in turn; the added p50 (target <= 5 ms) and
//!     rho's p50 over bubblewrap's (target <= 1); a confined `ShellTool`
//!     call's p50 and p99.
//! 16. **MCP scaled out behind nginx** ([`mcp_scale`], as rho-mcp's test
//!     `scale_out.rs` checks it): rho's streamable HTTP server
//!     (`__mcp_http`, a child of this binary serving the no-op tool as
//!     `rho-mcp sample --http` serves) called by one client on MCP
//!     2026-07-28, stateless (each `tools/call` a POST by itself), 16 in
//!     flight. Throughput: one server directly against three behind nginx
//!     ([`nginx`]: Debian's package, round-robin, run as this user with its
//!     own prefix), alternating rounds; the calls/s of each, their ratio and
//!     each side's p50 and p99, all for context: on a 2-core machine three
//!     servers, nginx and the client share the same two CPUs, so the three
//!     are not expected to be faster than one. Then a run of 10,000 calls
//!     in which one of the three is killed (SIGKILL) a third of the way
//!     in: every call must end exactly once (target: ended = sent, none
//!     twice, none lost, none failed but with nginx's 502 for the calls in
//!     flight on the dead server, whose count is printed for context).
//!     Without nginx (and when `rho-mcp/tests/peers/install-nginx.sh`
//!     cannot install it) the figure is not measured, says so on stderr,
//!     and its row misses.
//! 17. **A turn's order** ([`order`]): 100 side-by-side calls ordered
//!     against unordered, and what the queued path adds per call.
//! 18. **A host by name** ([`hosts`]): one `curl` of a loopback server,
//!     unconfined, through bubblewrap with the host's network, and
//!     confined by rho with the name allowed (through the proxy outside
//!     the box); the p50 each adds, for context.
//!
//! # Profiling a figure
//!
//! Hidden subcommands run one side of a figure alone, for a profiler
//! (`valgrind --tool=callgrind` counts instructions repeatably on a noisy
//! machine; run two call counts and subtract to get a per-call figure):
//!
//! ```sh
//! rho-bench __percall <tokio|smol> <rho|floor> <sequential|sequential_task|in_flight> <calls> <rounds>
//! rho-bench __plain <mb> <rounds> <plain|json>
//! rho-bench __script <tokio|smol> <rho|bare> <calls> [script threads]
//! rho-bench __mcp_server <rho|bare> <calls>   # figure 13, one side
//! rho-bench __mcp_noop       # figure 14's server, over stdio
//! rho-bench __mcp_proxy      # the proxy in front of it, over stdio
//! rho-bench __mcp_relay      # a byte relay in front of it (figure 14's floor)
//! rho-bench __mcp_http       # figure 16's server: prints its URL, serves until stdin ends
//! ```
//!
//! `__script` also prints each thread's time on a CPU and waiting for one
//! (from `/proc/self/task/*/schedstat`) per call, which tells instructions
//! from the hops between threads.
//!
//! # Unsafe code
//!
//! The counting allocator ([`alloc`]) is an `unsafe impl GlobalAlloc`, the
//! crate's only unsafe code (it forwards to `System` and counts). So this
//! crate's `Cargo.toml` repeats the workspace's lints with `unsafe_code` at
//! `deny` instead of `forbid` (which no `#[allow]` could lower).

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: cli, percall — the per-call figure's command line: its modes
// are command-line values (`Mode`), and each mode names the figure it runs
// as (`Figure`).
mod alloc;
mod blocked;
mod cli;
mod confine;
mod driver;
mod floor;
mod hosts;
mod kill;
mod mcp;
mod mcp_proxy;
mod mcp_scale;
mod mcp_server;
mod memory;
mod nginx;
mod order;
mod percall;
mod plain;
mod registry;
mod report;
mod rt;
mod script;
mod script_code;
mod script_memory;
mod script_stop;
mod side;
mod stats;
mod tools;

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

use crate::cli::{Child, Cli, Figure};
use crate::report::Report;
use crate::rt::{Bench, Smol, Tokio};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// The counts of one run.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    quick: bool,
    /// Calls per round, sequential, with the loop on the main thread and
    /// as a task (figure 1).
    sequential: usize,
    /// Calls in flight per round (figure 1).
    in_flight: usize,
    /// Rounds of each side (figure 1).
    rounds: usize,
    /// Waiting calls per process (figure 2).
    memory_calls: usize,
    /// Processes of each side (figure 2).
    memory_rounds: usize,
    /// Yielding calls per round (figure 3).
    kill_yielding: usize,
    /// Non-yielding calls of each side, over all rounds (figure 3).
    kill_spinning: usize,
    /// Rounds of each side (figure 3).
    kill_rounds: usize,
    /// Calls waiting at their gate (figure 4).
    blocked_held: usize,
    /// Fresh calls per round and condition (figure 4).
    blocked_fresh: usize,
    /// Rounds of each side (figure 4).
    blocked_rounds: usize,
    /// The answer's size in MB (figure 5).
    plain_mb: usize,
    /// Rounds (figure 5).
    plain_rounds: usize,
    /// Calls per thread per round (figure 6).
    registry_calls: usize,
    /// Rounds of each side (figure 6).
    registry_rounds: usize,
    /// Script calls of each side per round (figure 7).
    script_calls: usize,
    /// Rounds of each side (figure 7).
    script_rounds: usize,
    /// `node -e` processes (figure 8).
    script_node_calls: usize,
    /// Samples of each never-yielding script (figure 9).
    script_stop_samples: usize,
    /// Calls before the first resident size is read (figure 10).
    script_memory_warm_up: usize,
    /// Calls measured (figure 10).
    script_memory_calls: usize,
    /// Calls of a tool per round, nested and direct (figure 11).
    code_calls: usize,
    /// Rounds (figure 11).
    code_rounds: usize,
    /// Calls of each side per round (figure 13).
    mcp_calls: usize,
    /// Rounds of each side (figure 13).
    mcp_rounds: usize,
    /// Timed calls of each side per round (figure 14).
    mcp_proxy_calls: usize,
    /// Rounds of each side (figure 14).
    mcp_proxy_rounds: usize,
    /// Runs of each way in figure 15 (confinement).
    confine_runs: usize,
    /// Timed calls of each side per round (figure 16).
    mcp_scale_calls: usize,
    /// Rounds of each side (figure 16).
    mcp_scale_rounds: usize,
    /// Calls of the run in which a server is killed (figure 16).
    mcp_scale_kill_calls: usize,
    /// Turns of 100 side-by-side calls per side per round, a tenth as many
    /// of exclusive ones (figure 17).
    order_turns: usize,
    /// Rounds of each side (figure 17).
    order_rounds: usize,
}

impl Config {
    fn full() -> Self {
        Self {
            quick: false,
            sequential: 20_000,
            in_flight: 100_000,
            rounds: 7,
            memory_calls: 100_000,
            memory_rounds: 3,
            kill_yielding: 10_000,
            kill_spinning: 600,
            kill_rounds: 3,
            blocked_held: 10_000,
            blocked_fresh: 3_000,
            blocked_rounds: 4,
            plain_mb: 10,
            plain_rounds: 7,
            registry_calls: 500_000,
            registry_rounds: 5,
            script_calls: 2_000,
            script_rounds: 7,
            script_node_calls: 50,
            script_stop_samples: 200,
            script_memory_warm_up: 50,
            script_memory_calls: 1_000,
            code_calls: 500,
            code_rounds: 9,
            mcp_calls: 20_000,
            mcp_rounds: 7,
            mcp_proxy_calls: 5_000,
            mcp_proxy_rounds: 5,
            confine_runs: 200,
            mcp_scale_calls: 10_000,
            mcp_scale_rounds: 5,
            mcp_scale_kill_calls: 10_000,
            order_turns: 500,
            order_rounds: 9,
        }
    }

    fn quick() -> Self {
        Self {
            quick: true,
            sequential: 1_000,
            in_flight: 10_000,
            rounds: 3,
            memory_calls: 10_000,
            memory_rounds: 1,
            kill_yielding: 1_000,
            kill_spinning: 20,
            kill_rounds: 2,
            blocked_held: 1_000,
            blocked_fresh: 200,
            blocked_rounds: 2,
            plain_mb: 1,
            plain_rounds: 3,
            registry_calls: 20_000,
            registry_rounds: 3,
            script_calls: 200,
            script_rounds: 3,
            script_node_calls: 10,
            script_stop_samples: 20,
            script_memory_warm_up: 10,
            script_memory_calls: 100,
            code_calls: 50,
            code_rounds: 3,
            mcp_calls: 1_000,
            mcp_rounds: 3,
            mcp_proxy_calls: 300,
            mcp_proxy_rounds: 2,
            confine_runs: 10,
            mcp_scale_calls: 500,
            mcp_scale_rounds: 2,
            mcp_scale_kill_calls: 1_000,
            order_turns: 10,
            order_rounds: 2,
        }
    }
}

fn main() {
    // Figure 15 runs this binary as its confinement launcher.
    rho_process::confine::serve_if_launcher();
    let cli = Cli::parse();
    if let Some(child) = cli.child {
        run_child(child);
        return;
    }
    let (json, quick, only) = (cli.json, cli.quick, cli.figures());
    let config = if quick {
        Config::quick()
    } else {
        Config::full()
    };
    let started = Instant::now();
    let load_before = load_average();
    let mut report = Report::new(json);
    let answer = only
        .contains(&Figure::Plain)
        .then(|| Arc::new(plain::Answer::of_size(config.plain_mb)));

    run_on::<Tokio>(&config, &only, answer.as_ref(), &mut report);
    run_on::<Smol>(&config, &only, answer.as_ref(), &mut report);
    // rmcp runs on tokio only: the MCP figures are tokio's.
    if only.contains(&Figure::McpServer) {
        eprintln!("[tokio] MCP server: rho against bare rmcp");
        mcp_server::run(&config, &mut report);
    }
    if only.contains(&Figure::McpProxy) {
        eprintln!("[tokio] MCP proxy: added latency");
        mcp_proxy::run(&config, &mut report);
    }
    if only.contains(&Figure::Confine) {
        eprintln!("[tokio] confinement: a trivial command, plain, rho, bubblewrap");
        confine::run(&config, &mut report);
    }
    if only.contains(&Figure::Hosts) {
        eprintln!(
            "[tokio] network by host name: curl plain, through bubblewrap, through rho's proxy"
        );
        hosts::run(&config, &mut report);
    }
    if only.contains(&Figure::McpScale) {
        eprintln!("[tokio] MCP scale-out: three servers behind nginx, one killed");
        mcp_scale::run(&config, &mut report);
    }

    let took = started.elapsed();
    if !json {
        println!(
            "rho-bench{}: {} on {}, {} cores, {} worker threads per runtime; {:.1} s\n",
            if config.quick {
                " --quick (smoke run: targets are not judged on it)"
            } else {
                ""
            },
            std::env::consts::ARCH,
            cpu_model(),
            std::thread::available_parallelism().map_or(0, usize::from),
            rt::WORKERS,
            took.as_secs_f64(),
        );
        println!(
            "load average (1 min) before {load_before}, after {}: other work on the machine \
             skews the latency percentiles (the ratios are measured in alternating rounds)\n",
            load_average()
        );
        print!("{}", report.table());
        println!();
        print_beam(&report);
        print_notes(&config);
        print_mcp_notes(&config);
        let missed = report.missed();
        if missed.is_empty() {
            println!("\nevery target is met");
        } else {
            println!("\ntargets missed:");
            for row in missed {
                println!(
                    "  {} on {}: {:.3} {}",
                    row.figure, row.runtime, row.value, row.unit
                );
            }
        }
    } else {
        eprintln!(
            "rho-bench: {:.1} s; load average before {load_before}, after {}",
            took.as_secs_f64(),
            load_average()
        );
    }
}

fn run_on<B: Bench>(
    config: &Config,
    only: &[Figure],
    answer: Option<&Arc<(plain::Answer, usize)>>,
    report: &mut Report,
) {
    let wants = |figure: Figure| only.contains(&figure);
    let bench = B::new();
    let step = |figure: &str| eprintln!("[{}] {figure}", B::NAME);
    let modes: Vec<percall::Mode> = percall::Mode::ALL
        .into_iter()
        .filter(|mode| wants(mode.only()))
        .collect();
    if !modes.is_empty() {
        step("per-call cost");
        percall::run(&bench, config, report, &modes, wants(Figure::Percall));
    }
    if wants(Figure::Kill) {
        step("kill latency");
        kill::run(&bench, config, report);
    }
    if wants(Figure::Blocked) {
        step("loop never blocked");
        blocked::run(&bench, config, report);
    }
    if let (true, Some(answer)) = (wants(Figure::Plain), answer) {
        step("plain data");
        plain::run(&bench, answer, config, report);
    }
    if wants(Figure::Registry) {
        step("registry");
        registry::run(&bench, config, report);
    }
    if wants(Figure::Order) {
        step("a turn's order: 100 calls side by side, ordered and not");
        order::run(&bench, config, report);
    }
    if wants(Figure::Script) || wants(Figure::ScriptCall) {
        step("script call: rho, the bare engine, node -e");
        script::run(&bench, config, report);
    }
    if wants(Figure::Script) || wants(Figure::Code) {
        step("code mode: nested calls");
        script_code::run(&bench, config, report);
    }
    if wants(Figure::Script) || wants(Figure::ScriptStop) {
        step("script stop latency");
        script_stop::run(&bench, config, report);
    }
    drop(bench);
    if wants(Figure::Memory) {
        step("memory per in-flight call (fresh processes)");
        memory::run(B::NAME, config, report);
    }
    if wants(Figure::Script) || wants(Figure::ScriptMemory) {
        step("script memory (a fresh process)");
        script_memory::run(B::NAME, config, report);
    }
}

/// Runs one hidden subcommand: a piece of the harness in a process of its
/// own.
fn run_child(child: Child) {
    match child {
        Child::Memory {
            runtime,
            which,
            count,
        } => memory::child(runtime, which, count),
        Child::ScriptMemory {
            runtime,
            warm_up,
            calls,
        } => script_memory::child(runtime, warm_up, calls),
        Child::Percall {
            runtime,
            which,
            mode,
            calls,
            rounds,
        } => percall::profile(runtime, which, mode, calls, rounds),
        Child::Plain {
            mb,
            rounds,
            conversion,
        } => plain::profile(mb, rounds, conversion),
        Child::Script {
            runtime,
            engine,
            calls,
            threads,
        } => script::profile(runtime, engine, calls, threads),
        Child::McpServer { server, calls } => mcp_server::profile(server, calls),
        Child::McpNoop => mcp::noop_server(),
        Child::McpProxy => mcp::proxy(),
        Child::McpRelay => mcp::relay(),
        Child::McpReactorRelay => mcp::reactor_relay(),
        Child::McpHttp => mcp_scale::server(),
    }
}

/// rho's sequential call with the loop as a task, against the recorded
/// BEAM reference, in words.
fn print_beam(report: &Report) {
    let figures: Vec<String> = ["tokio", "smol"]
        .into_iter()
        .filter_map(|runtime| {
            let ns = report.value(runtime, "per_call_rho_sequential_task")?;
            let us = ns / 1e3;
            let verdict = if us < percall::BEAM_SEQUENTIAL_US {
                "beats it"
            } else {
                "does NOT beat it"
            };
            Some(format!("{us:.2} us on {runtime} ({verdict})"))
        })
        .collect();
    if figures.is_empty() {
        return;
    }
    println!(
        "Sequential call, loop as a task: rho {}; reference: {} us, the BEAM's Task.Supervisor \
         as recorded on this project's machine (a constant, not measured by this run)\n",
        figures.join(", "),
        percall::BEAM_SEQUENTIAL_US
    );
}

fn print_notes(config: &Config) {
    println!("How each figure was measured (rho and floor alternate, medians of rounds):");
    println!(
        "  per_call_*       no-op tool, default gate; sequential: {} calls a round, start then await; \
         in flight: {} started then awaited, after an untimed pass of the same side; {} rounds",
        config.sequential, config.in_flight, config.rounds
    );
    println!(
        "  per_call_*_sequential_task  the sequential loop ({} calls a round) as ONE task spawned on \
         the runtime (tokio::spawn / the smol executor's spawn), so it runs on a worker beside the \
         calls' tasks; {} rounds; _vs_beam: rho's us/call against {} us recorded for the BEAM's \
         Task.Supervisor (not measured here)",
        config.sequential,
        config.rounds,
        percall::BEAM_SEQUENTIAL_US
    );
    println!(
        "  memory_*         {} waiting calls in a fresh process, resident (VmRSS) delta over calls, \
         after every handle was polled once (timers started); median of {} processes",
        config.memory_calls, config.memory_rounds
    );
    println!(
        "  kill_*_yielding  {} calls a round x {} rounds, 10 ms timeout, started {} per ms into one loop; \
         latency = ran - timeout",
        config.kill_yielding,
        config.kill_rounds,
        kill::PER_MS
    );
    println!(
        "  kill_*_non_yielding  {} calls of a tool spinning on a stop flag, ONE AT A TIME (a spinning tool \
         holds a worker; the floor's tokio timer needs the other one idle)",
        config.kill_spinning.div_ceil(config.kill_rounds) * config.kill_rounds
    );
    println!(
        "  fresh_call_*     {} sequential no-op calls a round, with {} calls waiting at their gate in the \
         same loop (held) or none; {} rounds; ratio of p99s",
        config.blocked_fresh, config.blocked_held, config.blocked_rounds
    );
    println!(
        "  plain_*          to_plain vs serde_json::to_value of a ~{} MB answer, in a task on a worker; \
         {} rounds",
        config.plain_mb, config.plain_rounds
    );
    println!(
        "  registry_*       resolve + watch started/ended, 2 tasks on the 2 workers at once, {} calls each; \
         ns per call per thread",
        config.registry_calls
    );
    println!(
        "  script_call_*    a trivial script ({{a,b}} -> {{sum}}), one call after the other, {} calls a \
         round x {} rounds: rho (ScriptTool, 2 script threads, loop on the main thread) against the \
         bare engine on the loop's thread (Runtime, Context::full, eval, run, JSON in and out); ratio \
         = median over rounds of rho's median call / bare's",
        config.script_calls, config.script_rounds
    );
    println!(
        "  script_node_*    the same call as a fresh `node -e` process, {} processes; ratio = node p50 / \
         rho p50",
        config.script_node_calls
    );
    println!(
        "  script_stop_*, script_thread_free_*  a never-yielding script (loop; catastrophic regex), {} ms \
         timeout, on ONE script thread, {} samples each: the call's end past its deadline, and the end \
         of a trivial call queued right behind it (includes that call's own run)",
        script_stop::TIMEOUT.as_millis(),
        config.script_stop_samples
    );
    println!(
        "  script_memory_*  a fresh process: {} calls of a script that allocates to its 16 MiB cap (each \
         ends Crashed), two at a time; RSS after {} such calls, then after the {}",
        config.script_memory_warm_up + config.script_memory_calls,
        config.script_memory_warm_up,
        config.script_memory_calls
    );
}

fn print_mcp_notes(config: &Config) {
    println!(
        "  mcp_server_*     a no-op tool through rho's McpServer and through a bare rmcp server, the \
         same rmcp client, an in-process duplex pipe, {} calls in flight; {} calls a round x {} \
         rounds; ratio = median over rounds of rho's calls/s / bare's",
        mcp_server::CONCURRENCY,
        config.mcp_calls,
        config.mcp_rounds
    );
    println!(
        "  mcp_*_p50/p99    one call after the other from the same rmcp client to a bare stdio \
         server (direct), to the proxy in front of it, or to a byte relay in front of it (two \
         threads copying, no parsing: the floor of any proxy process); fresh processes each \
         round; {} calls a round x {} rounds; added = proxy (or relay) - direct",
        config.mcp_proxy_calls, config.mcp_proxy_rounds
    );
    println!(
        "  confine_*        /bin/true started and waited for, {} rounds, each way once a round in \
         turn: plainly, through rho-confine with Confinement::new(), through this binary as the \
         launcher (embedded), through bubblewrap with the same namespaces and mounts, through \
         util-linux unshare with the same namespaces and nothing else (the kernel's floor); \
         added = rho-confine - plain; confine_shell_echo: a confined ShellTool call of `echo hi` through \
         the runner, {} calls",
        config.confine_runs, config.confine_runs
    );
    println!(
        "  hosts_*          one curl of a loopback HTTP server, {} rounds, each way once a round in \
         turn: unconfined (by address), through bubblewrap with the host's network \
         (--share-net), and confined by rho-confine with the name allowed (through the proxy \
         outside the box); added = that way - unconfined",
        config.confine_runs
    );
    println!(
        "  mcp_scale_*      rho's streamable HTTP server (a child of this binary, the no-op tool) \
         called by one client on 2026-07-28 (stateless: each tools/call a POST by itself), {} in \
         flight: one server directly against three behind nginx (round-robin, loopback), {} calls \
         a round x {} rounds in alternation; ratio = median of the rounds' nginx/direct calls/s \
         (context: on 2 cores the three share the CPUs with nginx and the client); kill: {} calls \
         through nginx, one of the three killed (SIGKILL) once a third ended; every call must end \
         once (its answer, or nginx's 502 if its server died under it), none lost",
        mcp_scale::IN_FLIGHT,
        config.mcp_scale_calls,
        config.mcp_scale_rounds,
        config.mcp_scale_kill_calls
    );
}

/// The one-minute load average, from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The CPU's model name, from `/proc/cpuinfo`.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "an unknown CPU".to_owned())
}
