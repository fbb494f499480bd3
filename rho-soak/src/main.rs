//! The fault soak of rho: a million tool calls that misbehave in every way
//! rho knows of, on tokio and on smol at once, and a check that every call
//! ended exactly once with the outcome that was injected, that no foreign
//! code ran in the loop, and that nothing leaked.
//!
//! ```text
//! cargo run --release -p rho-soak -- --calls 1000000 --seed 42 --runtime both
//! ```
//!
//! Options: `--calls N` (default 1,000,000), `--seed S` (default random),
//! `--runtime tokio|smol|both` (default both, the calls split between
//! them), `--drivers D` (turns in flight at once per runtime, default 16),
//! `--max-rss-growth P` (default 10 %).
//!
//! The seed is printed first; running again with it makes the same turns
//! of the same calls (the timing differs, so a race that went one way may
//! go the other; the description of a wrong call names everything that
//! was injected into it).
//!
//! `rho-soak mcp --calls N` is a soak of its own: calls through an MCP
//! server imported as a source, a stand-in that dies, hangs and writes
//! garbage (see `mcp_soak`); `--http` imports it over streamable HTTP.
//!
//! # What it injects
//!
//! Calls come in turns of random size (mostly 1 to 8 calls, some up to
//! 64), run through `rho-turn`'s `TurnRunner` with a registry whose two
//! sources (the host's tools and the agent's) count with `Accounting` and
//! `QuarantineRule::never()`, so the counts are exact. Each runtime has
//! several drivers (default 16), each running its turns one after another,
//! so many turns are in flight at once; the calls are split between the
//! runtimes. Every call gets, at random from the seed:
//!
//! - a gate that allows, waits then allows, denies (at once or after a
//!   wait), panics (at once or after a wait, with every payload kind), or
//!   never answers (then the host aborts it);
//! - a tool that answers text, images, details (plain or foreign), an
//!   error or a crash it observed; that panics with every payload kind of
//!   the conformance suite (`&str`, `String`, values whose `Drop`,
//!   `Display`, `Debug`, `Clone` or `Serialize` record where they ran and
//!   may panic, a payload whose `Drop` panics with a second payload), at
//!   once, after a sleep, or in `run` before its future exists; whose
//!   answer's `Serialize` or `Drop` panics; that answers an image with no
//!   bytes or a mime type that is not an image's; that reports partial
//!   results (some hostile); that hangs past a timeout of 5 to 20 ms (some
//!   holding a guard whose `Drop` panics when they are killed); that answers
//!   at once after a gate that waited longer than its 50 ms timeout; that never
//!   yields (spins; at most one at a time per runtime, which has two
//!   workers, until its driver releases it after the turn); that hangs for
//!   a minute (then the host aborts it);
//! - or a refusal: an unknown tool, arguments that violate the schema or
//!   are not an object, an id an earlier call of the turn has, a tool that
//!   was removed;
//! - sometimes a host abort of the call alone, and sometimes of its whole
//!   turn, 0 to 25 ms after the turn started.
//!
//! Where the loop runs: on smol, the drivers are tasks of the same executor
//! as the calls (two threads run it); on tokio, the calls run on a
//! multi-thread runtime of two workers and the drivers on a thread of
//! their own (a current-thread runtime). A loop that is a task of the same
//! tokio runtime is held up by a tool that never yields: the call's task
//! wakes it just before the tool spins, and tokio keeps a task woken from a
//! worker in that worker's LIFO slot, which no other worker steals (see
//! `tests/findings.rs`).
//!
//! Meanwhile each driver adds and removes tools of its own in the registry
//! (also while its turn is in flight), and a thread keeps adding and
//! removing subscribers that panic, lag, or are dropped while events flow.
//!
//! # What it checks
//!
//! It prints progress every 10 % and, as its last line,
//! `calls N, ends N, wrong 0, foreign-code-in-loop 0, leaked-tasks 0,
//! rss-growth X%`, and exits non-zero on any violation, printing the first
//! wrong calls with their seed-derived description first.
//!
//! - **Every call ended exactly once, with the outcome injected**: each
//!   turn's session entries are one per call, in order, each with the
//!   outcome computed from the plan (and the words the model reads for it);
//!   and a subscriber sees exactly one start and one end event per call,
//!   the end with the entry's outcome. `ends` counts the calls with
//!   exactly one entry.
//! - **Exactly two outcomes are legitimate when a host abort races a
//!   call's own end**: a call the host aborts (alone, or with its whole
//!   turn) may end with its natural outcome (it ended first, or even was
//!   refused before the abort came) or aborted. A call that can only end
//!   by the abort (a gate that holds, a tool that hangs for a minute) must
//!   end aborted. Nothing else is ever accepted.
//! - **The registry's counts are the injected ones**: per tool, calls,
//!   successes, failures, denials, crashes, timeouts and aborts, against
//!   the calls that reached it (refused calls reach no source).
//! - **No foreign code ran in the loop**: every driver runs inside the
//!   conformance suite's `InLoop` marker; tool and gate bodies, and every
//!   hostile value (payloads, answers, guards, recording on the suite's
//!   `Recorder`), count the times they ran while it was set. A value's
//!   counts are read once nothing holds it any more, so code that runs
//!   late (a killed task's future dropped on a worker) is counted too.
//! - **No rho task is left**: every call's task runs on the suite's
//!   `Counting` wrapper of the runtime's executor; after the run (spinning
//!   tools released, a bounded wait for killed tasks to be dropped) both
//!   must hold none.
//! - **Memory**: resident memory (`VmRSS`) after the run is within 10 % of
//!   what it was after the warm-up (the first 5 % of the calls, and at
//!   least each driver's first two turns, which are of the largest size, so
//!   that the process has reached its working size). Nothing is
//!   trimmed or returned to the system on purpose: this is what the
//!   allocator keeps. The one growth by design: rho forgets (leaks) the
//!   second payload of a panic payload whose `Drop` panics (about 90 to
//!   190 bytes each), so those two payload kinds come one time in a
//!   hundred (about 2,000 per million calls), not at the rate of the
//!   others (which would add about 7 MiB per million calls).
//! - **The process never aborted**: it printed the line.
//!
//! `wrong` counts every disagreement: a call with a wrong outcome or text,
//! a call with a missing entry or wrong events, a tool whose counts differ,
//! a second payload that ran, a foreign value still alive at the end.

// The modules below that import each other in a circle, each circle one
// concept (`.ci/cycles.py` holds every other module to one-way imports):
// One concept: plan, tools — the seeded plan of each call and the tools that
// act it out: a tool reads its act from the call's arguments (`Act`,
// `CallArgs`), and the plan picks among the tools' slots (`DYN_SLOTS`).
// One concept: report, run — a run and what it prints: the report reads the
// run's records (`Running`, `Settled`), and the run prints through it while
// it goes (a stuck call, the counts compared).
mod args;
mod check;
mod drive;
mod events;
mod gate;
mod lane;
mod mcp_http_stand_in;
mod mcp_soak;
mod mcp_stand_in;
mod memory;
mod plan;
mod processes;
mod report;
mod run;
mod tools;
mod witness;

use std::process::ExitCode;

use clap::Parser;
use rho_tool_core::untrusted::install_quiet_panic_hook;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::McpStandIn { .. }) => {
            mcp_stand_in::main();
            return ExitCode::SUCCESS;
        }
        Some(Command::McpHttpStandIn { port, .. }) => {
            mcp_http_stand_in::main(port);
            return ExitCode::SUCCESS;
        }
        Some(Command::Mcp(flags)) => {
            install_quiet_panic_hook();
            return mcp_soak::main(&flags);
        }
        None => {}
    }
    let args = cli.soak.resolve();
    println!(
        "rho-soak: seed {seed} (replay: cargo run --release -p rho-soak -- --calls {calls} \
         --seed {seed} --runtime {runtimes})",
        seed = args.seed,
        calls = args.calls,
        runtimes = args.runtimes,
    );
    // Contained panics (thousands of them) stay off the screen.
    install_quiet_panic_hook();
    let running = run::start(&args);
    let watched = run::watch(&args, &running);
    let settled = run::settle(&running);
    let verdict = report::summary(&args, &running, &watched, &settled);
    running.shut_down();
    verdict.print_last_line();
    if verdict.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
