//! rho's demo: a scripted session of tool calls, printed live.
//!
//! Twelve model messages, each run as one turn of `rho-turn`: the first has
//! one call of each kind a host meets (a gate that waits about a second for
//! a person while the others run, a build that reports progress and is
//! killed at its timeout, an agent-written tool that panics with a custom
//! payload, an image, details, an agent-written tool whose answer is a
//! struct of its own, a call the gate denies); the second retries the
//! crashing tool (its source quarantines it), misspells a tool and sends
//! malformed arguments; the third tries the quarantined tool; in the fourth
//! a person presses Esc. In the fifth to the eighth the model writes tools
//! in JavaScript (`define_tool`, put to a person first; one has a syntax error
//! and is refused with its line and column), then calls them at once: one
//! answers, one spins for ever and is stopped at its deadline, one blows
//! its memory cap, one throws until its source quarantines it. In the
//! ninth the model writes one program (`run_script`, code mode) that reads
//! three files, greps them, looks a word up in the docs and saves a note:
//! each of its six calls is a rho call of its own, shown under it, and the
//! note waits for a person without running the program's clock; the demo
//! prints how many bytes the model read against the same calls made one by
//! one. In the tenth the model calls two tools imported over MCP from a
//! documentation server the demo starts itself (this same program, run
//! with a hidden flag): one answers, one never does and is cut at rho's
//! deadline. In the eleventh the model's shell commands run confined by the
//! kernel: one reads a private key and `/etc/shadow`, one connects out,
//! both denied with texts that say so, while the third runs in the
//! workspace. In the twelfth the model edits a file and runs the tests in
//! one message: the tests wait for the edit, off their clock, and see it.
//! The session keeps details of at most 120 bytes; the health
//! table of the agent's tools closes the run.
//!
//! `cargo run -p rho-demo` prints readable lines; `-- --json` prints one JSON
//! object a line; `-- --runtime smol` runs the same tools and gate on smol
//! instead of tokio. `-- model --api anthropic` (or `chat`, `responses`,
//! `gemini`) talks to a real model instead: the whole loop of a host, with
//! a key from the environment (see `model.rs`).

mod docs;
mod model;
mod print;
mod session;
mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use rho::smol::SmolPool;
use rho::tokio::TokioExecutor;
use rho::turn::{EventBus, TurnAbort};
use rho::{KeepDetails, SessionEntry, ToolCall};

use crate::print::Printer;
use crate::session::{Runtime, Wait, add_run_script, approver, gate, registry, run_session};

/// The session on tokio: a turn runner on its executor, the turns driven
/// by the runtime's `block_on`.
struct OnTokio {
    turns: rho::tokio::TurnRunner,
    runtime: tokio::runtime::Runtime,
}

impl Runtime for OnTokio {
    fn events(&self) -> &EventBus {
        self.turns.events()
    }

    fn run(&self, calls: Vec<ToolCall>, started: &mut dyn FnMut(TurnAbort)) -> Vec<SessionEntry> {
        let turn = self.turns.turn(calls);
        started(turn.abort_handle());
        self.runtime.block_on(turn)
    }
}

/// The session on smol: a turn runner on a pool of its own, the turns
/// driven by `smol::block_on`.
struct OnSmol {
    turns: rho::smol::TurnRunner,
    /// Runs the calls' tasks for as long as the session lasts.
    _pool: SmolPool,
}

impl Runtime for OnSmol {
    fn events(&self) -> &EventBus {
        self.turns.events()
    }

    fn run(&self, calls: Vec<ToolCall>, started: &mut dyn FnMut(TurnAbort)) -> Vec<SessionEntry> {
        let turn = self.turns.turn(calls);
        started(turn.abort_handle());
        smol::block_on(turn)
    }
}

/// What the session keeps of each call's details.
const KEEP: KeepDetails = KeepDetails::MaxBytes(120);

/// rho's demo: a scripted session of tool calls, printed live.
///
/// Twelve model messages, each run as one turn: gates that wait, deny or
/// are interrupted, tools that report progress, time out, panic, are
/// quarantined, written by the model in JavaScript, run as one program
/// (code mode), imported over MCP, or shell commands confined by the
/// kernel, and an edit the tests of the same message wait for. About
/// five seconds.
#[derive(Debug, Parser)]
#[command(
    name = "rho-demo",
    // A flag given twice takes its last value, as it always has.
    args_override_self = true
)]
struct Cli {
    /// Print one JSON object a line instead of readable lines.
    #[arg(long)]
    json: bool,
    /// The runtime the tools and the gate run on.
    #[arg(long, value_name = "RUNTIME", value_enum, default_value_t = RuntimeName::Tokio)]
    runtime: RuntimeName,
    /// Serve the documentation tools over MCP on stdio, and nothing else:
    /// the session starts this program so, as the server it imports.
    #[arg(long = docs::SERVE_FLAG, hide = true)]
    serve_docs: bool,
    /// Instead of the scripted session: something else to run.
    #[command(subcommand)]
    command: Option<Command>,
}

/// What else the demo runs.
#[derive(Debug, Subcommand)]
enum Command {
    /// Talk to a real model: request, calls, turn, results, next request,
    /// in any of the four dialects rho speaks, against a URL and key from
    /// the environment (RHO_MODEL_KEY, or the provider's own variable).
    Model(model::ModelArgs),
}

/// The runtimes the session runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RuntimeName {
    /// tokio, two worker threads.
    Tokio,
    /// smol, an executor run by two threads.
    Smol,
}

impl RuntimeName {
    /// The name the printed lines show, as `--runtime` takes it.
    fn name(self) -> &'static str {
        match self {
            RuntimeName::Tokio => "tokio",
            RuntimeName::Smol => "smol",
        }
    }
}

fn main() {
    // First: the demo's shell runs its commands through this program as
    // their confinement launcher.
    rho::process::confine::serve_if_launcher();
    let Cli {
        json,
        runtime,
        serve_docs,
        command,
    } = Cli::parse();
    if serve_docs {
        docs::serve();
    }
    if let Some(Command::Model(args)) = command {
        std::process::exit(model::run(args));
    }
    // The panics of `flaky_lint` are reported in its end lines, with where
    // they were raised; the quiet hook keeps them from being printed over
    // the demo.
    rho::untrusted::install_quiet_panic_hook();
    let mut printer = Printer::new(json, runtime.name(), Instant::now());
    let (registry, accounting, pool) = registry();

    match runtime {
        RuntimeName::Tokio => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|error| fail(&format!("cannot start tokio: {error}")));
            let executor = TokioExecutor::new(runtime.handle().clone())
                .unwrap_or_else(|error| fail(&error.to_string()));
            let wait: Wait = Arc::new(|duration: Duration| Box::pin(tokio::time::sleep(duration)));
            // Kept for the session: dropping it stops the docs server.
            let _docs = runtime.block_on(docs::import(&registry));
            let turns = rho::tokio::TurnRunner::new(executor, registry)
                .with_gate(gate())
                .with_approver(approver(wait))
                .with_keep_details(KEEP);
            add_run_script(&turns, &pool);
            run_session(&OnTokio { turns, runtime }, &accounting, &mut printer);
        }
        RuntimeName::Smol => {
            let executors = SmolPool::new(2)
                .unwrap_or_else(|error| fail(&format!("cannot start smol: {error}")));
            let wait: Wait = Arc::new(|duration: Duration| {
                Box::pin(async move {
                    smol::Timer::after(duration).await;
                })
            });
            let _docs = smol::block_on(docs::import(&registry));
            let turns = rho::smol::TurnRunner::new(executors.executor(), registry)
                .with_gate(gate())
                .with_approver(approver(wait))
                .with_keep_details(KEEP);
            add_run_script(&turns, &pool);
            run_session(
                &OnSmol {
                    turns,
                    _pool: executors,
                },
                &accounting,
                &mut printer,
            );
        }
    }
}

pub(crate) fn fail(message: &str) -> ! {
    eprintln!("rho-demo: {message}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    use super::*;

    fn parse(line: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rho-demo").chain(line.iter().copied()))
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_documented_lines_parse() {
        let cli = parse(&[]).expect("parses");
        assert!(!cli.json && !cli.serve_docs);
        assert_eq!(cli.runtime, RuntimeName::Tokio);
        let cli = parse(&["--json"]).expect("parses");
        assert!(cli.json);
        assert_eq!(cli.runtime, RuntimeName::Tokio);
        let cli = parse(&["--runtime", "smol"]).expect("parses");
        assert!(!cli.json);
        assert_eq!(cli.runtime, RuntimeName::Smol);
        let cli = parse(&["--runtime", "tokio", "--json"]).expect("parses");
        assert!(cli.json);
        assert_eq!(cli.runtime, RuntimeName::Tokio);
        assert_eq!(RuntimeName::Smol.name(), "smol");
        assert_eq!(RuntimeName::Tokio.name(), "tokio");
    }

    #[test]
    fn the_line_the_session_starts_its_docs_server_with_parses() {
        let flag = format!("--{}", docs::SERVE_FLAG);
        assert_eq!(flag, "--serve-docs-over-mcp");
        assert!(parse(&[&flag]).expect("parses").serve_docs);
    }

    #[test]
    fn bad_values_and_unknown_flags_are_errors() {
        for line in [
            &["--runtime", "both"][..],
            &["--runtime", "async-std"],
            &["--runtime"],
            &["--json=yes"],
            &["--verbose"],
            &["smol"],
            &["model", "--api", "bard"],
            &["model", "--max-requests", "many"],
        ] {
            let error = parse(line).expect_err("a bad line is an error");
            assert_ne!(error.kind(), ErrorKind::DisplayHelp, "{line:?}");
            assert_eq!(error.exit_code(), 2, "{line:?}");
        }
    }

    #[test]
    fn the_model_loop_takes_its_api_from_a_flag() {
        let cli =
            parse(&["model", "--api", "anthropic", "--url", "http://127.0.0.1:9"]).expect("parses");
        assert!(matches!(cli.command, Some(Command::Model(_))));
    }

    #[test]
    fn help_names_the_flags_and_hides_the_docs_server() {
        let help = Cli::command().render_long_help().to_string();
        for flag in ["--json", "--runtime", "tokio", "smol"] {
            assert!(help.contains(flag), "help names {flag}:\n{help}");
        }
        assert!(!help.contains(docs::SERVE_FLAG), "help hides it:\n{help}");
    }
}
