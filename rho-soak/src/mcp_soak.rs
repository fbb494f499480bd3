//! The MCP soak: `rho-soak mcp --calls N` sends N calls through an MCP
//! server imported as a rho source (`rho_mcp::import::McpSource`), a
//! stand-in written in Rust (`mcp_stand_in`) that dies, hangs and writes
//! garbage when told to, and checks that every call ended exactly once
//! with an outcome its plan allows, that the source's counts are exactly
//! the calls', and that no server process is left at the end.
//!
//! ```text
//! cargo run --release -p rho-soak -- mcp --calls 100000 --seed 42
//! cargo run --release -p rho-soak -- mcp --http --calls 20000
//! ```
//!
//! With `--http` the server is imported over streamable HTTP instead: the
//! stand-in is rho's own HTTP server (`mcp_http_stand_in`), which a
//! supervisor starts again on the same port whenever it dies. There is no
//! garbage there (those calls die instead), a death is known by the
//! broken connection rather than an exit code, and calls made while the
//! server is down crash at once (a refused connection is a death too).
//!
//! Each call's plan comes from the seed and its number: an `echo` of a
//! text of its own (most calls), the server's own error, a short sleep, a
//! hang past the 100 ms timeout, or (one call in 200 each) a death with an
//! exit code or a line of garbage, each of which kills the connection. The
//! calls run `--concurrency` at a time (default 32) on a tokio host.
//!
//! What a call may end with:
//!
//! - its plan's own end: the echo's text (exactly its own: an answer
//!   routed to the wrong request shows here), the server's error, `slept`,
//!   a timeout for a hang, a crash for a death or garbage;
//! - a crash, when the server died under it (another call's death or
//!   garbage): such calls are counted as collateral;
//! - a timeout, when the server was being started again for longer than
//!   the call's 100 ms (counted apart too);
//! - the error that the server could not be started, for a call that came
//!   while it was down (over HTTP, between a death and the supervisor's
//!   restart: a refused connection), also counted apart.
//!
//! Anything else (a refusal, an abort, a wrong text, a second end) is
//! wrong. The server's quarantine is off and restarts wait 1 to 20 ms,
//! so that the soak keeps calling a server that keeps dying.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rho_exec_tokio::TokioExecutor;
use rho_mcp::import::{Backoff, McpSource, McpSourceBuilder};
use rho_registry::{Accounting, QuarantineRule, ToolRegistry};
use rho_tool_core::{CallEnd, Outcome, Runner, ToolCall};
use serde_json::json;

use crate::args::McpFlags;
use crate::mcp_http_stand_in::{self, Supervisor};
use crate::mcp_stand_in;
use crate::processes::{live_children, processes_with, wait_until};

/// Each call's timeout.
const TIMEOUT: Duration = Duration::from_millis(100);
/// How many wrong calls are printed.
const SHOWN: usize = 20;

/// How the stand-in is imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

/// What one call is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Echo,
    Fail,
    Sleep(u64),
    Hang,
    Die(i64),
    Garbage,
}

impl Plan {
    /// Call `index`'s plan under `seed`, over `transport`.
    fn of(seed: u64, index: u64, transport: Transport) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match rng.u32(0..1000) {
            0..=4 => Plan::Die(rng.i64(1..=100)),
            // rho's HTTP server writes no garbage: such a call dies.
            5..=9 if transport == Transport::Http => Plan::Die(rng.i64(1..=100)),
            5..=9 => Plan::Garbage,
            10..=19 => Plan::Hang,
            20..=69 => Plan::Fail,
            70..=149 => Plan::Sleep(rng.u64(0..=3)),
            _ => Plan::Echo,
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Plan::Echo => "echo",
            Plan::Fail => "fail",
            Plan::Sleep(_) => "sleep",
            Plan::Hang => "hang",
            Plan::Die(_) => "die",
            Plan::Garbage => "garbage",
        }
    }

    fn call(self, index: u64) -> ToolCall {
        let arguments = match self {
            Plan::Echo => json!({ "text": text_of(index) }),
            Plan::Sleep(ms) => json!({ "ms": ms }),
            Plan::Die(code) => json!({ "code": code }),
            _ => json!({}),
        };
        ToolCall::new(format!("call-{index}"), self.tool(), arguments)
    }
}

fn text_of(index: u64) -> String {
    format!("echo of call {index}")
}

/// How calls ended, by kind.
#[derive(Debug, Default)]
struct Tally {
    ends: AtomicU64,
    natural: AtomicU64,
    collateral_crashes: AtomicU64,
    slow_restart_timeouts: AtomicU64,
    start_failures: AtomicU64,
    wrong: AtomicU64,
    shown: Mutex<Vec<String>>,
}

impl Tally {
    fn judge(&self, index: u64, plan: Plan, end: &CallEnd, transport: Transport) {
        self.ends.fetch_add(1, Ordering::Relaxed);
        let text = end.result.text();
        let natural = match plan {
            Plan::Echo => end.outcome == Outcome::Succeeded && text == text_of(index),
            Plan::Fail => end.outcome == Outcome::Failed && text == "it failed",
            Plan::Sleep(_) => end.outcome == Outcome::Succeeded && text == "slept",
            Plan::Hang => end.outcome == Outcome::TimedOut,
            // Over HTTP a death is a broken connection, with no exit code.
            Plan::Die(_) if transport == Transport::Http => end.outcome == Outcome::Crashed,
            Plan::Die(code) => {
                end.outcome == Outcome::Crashed
                    && text.contains(&format!("exited with code {code}"))
            }
            Plan::Garbage => end.outcome == Outcome::Crashed && text.contains("this is not json {"),
        };
        let counter = if end.call_id != format!("call-{index}") {
            &self.wrong
        } else if natural {
            &self.natural
        } else if end.outcome == Outcome::Crashed {
            &self.collateral_crashes
        } else if end.outcome == Outcome::TimedOut {
            &self.slow_restart_timeouts
        } else if end.outcome == Outcome::Failed
            && text.starts_with(&format!(
                "tool `{}` cannot run: MCP server `stand-in` failed its handshake",
                plan.tool()
            ))
        {
            &self.start_failures
        } else {
            &self.wrong
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if std::ptr::eq(counter, &self.wrong) {
            let mut shown = self.shown.lock().unwrap_or_else(PoisonError::into_inner);
            if shown.len() < SHOWN {
                shown.push(format!(
                    "call {index} ({plan:?}) ended {} as {:?}: {}",
                    end.outcome.as_str(),
                    end.call_id,
                    cut(&text)
                ));
            }
        }
    }
}

fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}

/// Runs the MCP soak as `flags` ask.
pub(crate) fn main(flags: &McpFlags) -> ExitCode {
    let calls = flags.calls;
    let seed = flags.seed.unwrap_or_else(|| fastrand::u64(..));
    let concurrency = flags.concurrency;
    let transport = if flags.http {
        Transport::Http
    } else {
        Transport::Stdio
    };
    let http = if transport == Transport::Http {
        " --http"
    } else {
        ""
    };
    println!(
        "rho-soak mcp: seed {seed} (replay: cargo run --release -p rho-soak -- mcp{http} --calls \
         {calls} --seed {seed} --concurrency {concurrency})"
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rho-soak mcp: cannot start tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(soak(calls, seed, concurrency, transport)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("rho-soak mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn soak(
    calls: u64,
    seed: u64,
    concurrency: u64,
    transport: Transport,
) -> Result<bool, String> {
    let marker = format!("rho-soak-mcp-{}", std::process::id());
    let this = std::env::current_exe().map_err(|error| error.to_string())?;
    let registry = ToolRegistry::new();
    let accounting = Arc::new(Accounting::new(QuarantineRule::never()));
    let (source, supervisor) = match transport {
        Transport::Stdio => {
            let builder =
                McpSource::stdio("stand-in", this).args([mcp_stand_in::SUBCOMMAND, &marker]);
            (
                configured(builder, &accounting).connect(&registry).await,
                None,
            )
        }
        Transport::Http => {
            let port = mcp_http_stand_in::free_port()?;
            let supervisor = {
                let marker = marker.clone();
                tokio::task::spawn_blocking(move || Supervisor::start(port, &marker))
                    .await
                    .map_err(|error| error.to_string())??
            };
            let url = format!("http://127.0.0.1:{port}/mcp");
            let builder = McpSource::http("stand-in", url);
            let source = configured(builder, &accounting).connect(&registry).await;
            (source, Some(supervisor))
        }
    };
    let source = source.map_err(|error| error.to_string())?;
    let executor = TokioExecutor::current().map_err(|error| error.to_string())?;
    let runner = Runner::new(executor);
    let tally = Arc::new(Tally::default());
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let most_alive = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (marker, most_alive, next) =
            (marker.clone(), Arc::clone(&most_alive), Arc::clone(&next));
        tokio::task::spawn_blocking(move || {
            let mut reported = 0;
            while next.load(Ordering::Relaxed) < calls {
                let alive = processes_with(&marker).len() as u64;
                most_alive.fetch_max(alive, Ordering::Relaxed);
                let done = next.load(Ordering::Relaxed) * 10 / calls.max(1);
                if done > reported {
                    reported = done;
                    println!(
                        "  {}0% started, {:.1} s",
                        done,
                        started.elapsed().as_secs_f64()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let lanes: Vec<_> = (0..concurrency)
        .map(|_| {
            let (registry, runner, tally, next) = (
                registry.clone(),
                runner.clone(),
                Arc::clone(&tally),
                Arc::clone(&next),
            );
            tokio::spawn(async move {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= calls {
                        break;
                    }
                    let plan = Plan::of(seed, index, transport);
                    let end = {
                        let call = plan.call(index);
                        let start = registry.start_for(&call.name);
                        runner.start(call, start)
                    }
                    .await;
                    tally.judge(index, plan, &end, transport);
                }
            })
        })
        .collect();
    for lane in lanes {
        lane.await
            .map_err(|error| format!("a lane failed: {error}"))?;
    }
    let took = started.elapsed();
    let _ = watcher.await;
    let (deaths, _) = source.deaths();
    let counted = compare_counts(&accounting, seed, calls, transport);
    drop(source);
    let restarts = supervisor.map_or(0, |supervisor| {
        let starts = supervisor.starts();
        supervisor.stop();
        starts - 1
    });
    let gone = wait_until(Duration::from_secs(5), || {
        processes_with(&marker).is_empty()
    });
    let leaked = processes_with(&marker).len() + live_children().len();

    let ends = tally.ends.load(Ordering::Relaxed);
    let wrong = tally.wrong.load(Ordering::Relaxed) + counted.len() as u64;
    println!(
        "  {:.1} s, {:.0} calls/s; natural ends {}, collateral crashes {}, timeouts while the \
         server restarted {}, calls while it could not be started {}; deaths {deaths} \
         (servers started again by the supervisor: {restarts}); at most {} server processes \
         alive at a sample",
        took.as_secs_f64(),
        calls as f64 / took.as_secs_f64(),
        tally.natural.load(Ordering::Relaxed),
        tally.collateral_crashes.load(Ordering::Relaxed),
        tally.slow_restart_timeouts.load(Ordering::Relaxed),
        tally.start_failures.load(Ordering::Relaxed),
        most_alive.load(Ordering::Relaxed),
    );
    for line in tally
        .shown
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .chain(counted.iter())
    {
        println!("  WRONG {line}");
    }
    if !gone {
        println!(
            "  WRONG server processes left: {:?}",
            processes_with(&marker)
        );
    }
    println!("mcp: calls {calls}, ends {ends}, wrong {wrong}, leaked-processes {leaked}");
    Ok(ends == calls && wrong == 0 && leaked == 0)
}

/// The soak's settings of an imported source: rho's timeout, no
/// quarantine, quick restarts, the soak's accounting.
fn configured<K>(
    builder: McpSourceBuilder<K>,
    accounting: &Arc<Accounting>,
) -> McpSourceBuilder<K> {
    builder
        .timeout(TIMEOUT)
        .quarantine(QuarantineRule::never())
        .backoff(Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(20),
        })
        .accounting(Arc::clone(accounting))
}

/// Compares the source's counts with the plans' (every call reaches the
/// source: no refusals); the disagreements, in words.
fn compare_counts(
    accounting: &Accounting,
    seed: u64,
    calls: u64,
    transport: Transport,
) -> Vec<String> {
    let mut planned = std::collections::BTreeMap::<&str, u64>::new();
    for index in 0..calls {
        *planned
            .entry(Plan::of(seed, index, transport).tool())
            .or_default() += 1;
    }
    let mut wrong = Vec::new();
    let mut total = 0;
    for (tool, want) in &planned {
        let Some(health) = accounting.tool_health(tool) else {
            wrong.push(format!("no counts of `{tool}` ({want} calls)"));
            continue;
        };
        let ended = health.succeeded
            + health.failed
            + health.crashed
            + health.timed_out
            + health.denied
            + health.aborted
            + health.executor_gone
            + health.refused;
        total += health.calls;
        if health.calls != *want || ended != *want {
            wrong.push(format!(
                "`{tool}`: {want} calls planned; the source counted {} started and {ended} ended",
                health.calls
            ));
        }
        if health.denied + health.aborted + health.executor_gone + health.refused != 0 {
            wrong.push(format!("`{tool}`: ends no plan allows: {health:?}"));
        }
    }
    if total != calls {
        wrong.push(format!("the source counted {total} calls of {calls}"));
    }
    wrong
}
