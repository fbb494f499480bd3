//! The command line, parsed by clap: the run's flags, and the hidden
//! subcommands that run one piece alone, in a process of its own. The
//! harness starts this binary again with some of them (the fresh processes
//! of figures 2 and 10, the stdio servers and relays of figure 14, the
//! HTTP servers of figure 16); the others run one side of a figure under a
//! profiler.

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

use crate::mcp_server::Server;
use crate::percall::Mode;
use crate::plain::Conversion;
use crate::rt::RuntimeName;
use crate::script::Engine;
use crate::side::Which;
use crate::{mcp, mcp_scale, mcp_server, memory, percall, plain, script, script_memory};

/// rho's benchmark harness of record: rho's runner against a hand-written
/// floor, on tokio and on smol, each with two worker threads.
///
/// Prints a table of figures with their targets (a few minutes), or one
/// JSON object a line with `--json`.
#[derive(Debug, Parser)]
#[command(
    name = "rho-bench",
    // `rho-bench --quick __memory ..` is a mistake, not a run.
    args_conflicts_with_subcommands = true,
    // A flag given twice is the same flag, as it always was.
    args_override_self = true,
    // Every subcommand is hidden: no `help` subcommand to list them.
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    /// One piece alone, in a process of its own; none runs the figures.
    #[command(subcommand)]
    pub(crate) child: Option<Child>,
    /// Print one JSON object a line (`figure`, `runtime`, `value`, `unit`,
    /// `target`, `meets`) instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// A smoke run of a few seconds: small counts, which show the harness
    /// works, not whether the targets are met.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run only these figures, comma-separated [default: all].
    // `Set`, not the `Append` of a list: given twice, the last list is
    // the one run, as it always was.
    #[arg(long, value_name = "LIST", value_delimiter = ',', action = ArgAction::Set)]
    pub(crate) only: Vec<Figure>,
}

impl Cli {
    /// The figures to run: those of `--only`, or all.
    pub(crate) fn figures(&self) -> Vec<Figure> {
        if self.only.is_empty() {
            Figure::value_variants().to_vec()
        } else {
            self.only.clone()
        }
    }
}

/// What `--only` names: a figure, or a group of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum Figure {
    /// 1: the per-call cost, sequential and in flight.
    Percall,
    /// 1: the sequential cost with the loop as a task.
    SequentialTask,
    /// 2: memory per in-flight call (fresh processes).
    Memory,
    /// 3: kill latency.
    Kill,
    /// 4: the loop is never blocked.
    Blocked,
    /// 5: plain data.
    Plain,
    /// 6: the registry.
    Registry,
    /// 7 to 12: every script figure.
    Script,
    /// 7 and 8: a script call against the bare engine and `node -e`.
    ScriptCall,
    /// 9: stopping a script that never yields.
    ScriptStop,
    /// 10: memory of scripts that hit their cap (a fresh process).
    ScriptMemory,
    /// 11 and 12: code mode.
    Code,
    /// 13: rho's MCP server against a bare rmcp server.
    McpServer,
    /// 14: the latency the MCP proxy adds.
    McpProxy,
    /// 15: what confinement costs a process, against bubblewrap.
    Confine,
    /// 16: rho's MCP servers scaled out behind nginx, one killed.
    McpScale,
    /// 17: what keeping the model's order costs a turn.
    Order,
    /// 18: a request to a host allowed by name, through the confinement's
    /// proxy, against the same request unconfined and through bubblewrap.
    Hosts,
}

/// The hidden subcommands: one piece of the harness in a process of its
/// own.
#[derive(Debug, Subcommand)]
pub(crate) enum Child {
    /// Figure 2's fresh process: `count` waiting calls of one side; prints
    /// one line of numbers.
    #[command(name = memory::SUBCOMMAND, hide = true)]
    Memory {
        /// The runtime the calls run on.
        runtime: RuntimeName,
        /// rho or the floor.
        which: Which,
        /// Calls that wait.
        count: usize,
    },
    /// Figure 10's fresh process: scripts that allocate to their cap;
    /// prints one line of numbers.
    #[command(name = script_memory::SUBCOMMAND, hide = true)]
    ScriptMemory {
        /// The runtime the calls run on.
        runtime: RuntimeName,
        /// Calls before the first resident size is read.
        warm_up: usize,
        /// Calls measured.
        calls: usize,
    },
    /// One side of figure 1 alone, for a profiler.
    #[command(name = percall::PROFILE, hide = true)]
    Percall {
        /// The runtime the calls run on.
        runtime: RuntimeName,
        /// rho or the floor.
        which: Which,
        /// How the loop starts and awaits its calls.
        mode: Mode,
        /// Calls per round.
        calls: usize,
        /// Rounds.
        rounds: usize,
    },
    /// One conversion of figure 5 alone, for a profiler.
    #[command(name = plain::PROFILE, hide = true)]
    Plain {
        /// The answer's size in MB.
        mb: usize,
        /// Rounds.
        rounds: usize,
        /// `to_plain` or `serde_json::to_value`.
        conversion: Conversion,
    },
    /// One side of figure 7 alone, for a profiler; prints each thread's
    /// time on a CPU and waiting for one, per call.
    #[command(name = script::PROFILE, hide = true)]
    Script {
        /// The runtime the loop's calls run on.
        runtime: RuntimeName,
        /// rho or the bare engine.
        engine: Engine,
        /// Calls, one after the other.
        calls: usize,
        /// The script pool's threads.
        #[arg(default_value_t = crate::rt::WORKERS)]
        threads: usize,
    },
    /// One side of figure 13 alone, for a profiler; prints its calls/s.
    #[command(name = mcp_server::PROFILE, hide = true)]
    McpServer {
        /// rho's server or the bare rmcp one.
        server: Server,
        /// Calls timed.
        #[arg(default_value_t = 20_000)]
        calls: usize,
    },
    /// Figure 14's bare server, over stdio until stdin ends.
    #[command(name = mcp::NOOP_SERVER, hide = true)]
    McpNoop,
    /// The proxy in front of the bare server, over stdio.
    #[command(name = mcp::PROXY, hide = true)]
    McpProxy,
    /// A byte relay in front of the bare server (figure 14's floor).
    #[command(name = mcp::RELAY, hide = true)]
    McpRelay,
    /// The byte relay on a tokio reactor.
    #[command(name = mcp::REACTOR_RELAY, hide = true)]
    McpReactorRelay,
    /// One of figure 16's servers: streamable HTTP on loopback; prints its
    /// URL, serves until stdin ends.
    #[command(name = mcp_scale::SERVER, hide = true)]
    McpHttp,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    use super::*;
    use crate::rt::{Bench, Smol, Tokio};

    fn parse(line: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rho-bench").chain(line.iter().copied()))
    }

    fn child(line: &[&str]) -> Child {
        parse(line)
            .expect("the line parses")
            .child
            .expect("a child")
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_documented_runs_parse() {
        let cli = parse(&[]).expect("parses");
        assert!(!cli.json && !cli.quick && cli.child.is_none());
        assert_eq!(cli.figures(), Figure::value_variants());
        let cli = parse(&["--quick"]).expect("parses");
        assert!(cli.quick && !cli.json);
        let cli = parse(&["--json"]).expect("parses");
        assert!(cli.json && !cli.quick);
        let cli = parse(&["--json", "--quick", "--quick"]).expect("parses");
        assert!(cli.json && cli.quick);
        let cli = parse(&["--only", "script"]).expect("parses");
        assert_eq!(cli.figures(), [Figure::Script]);
        let cli = parse(&["--only", "mcp_server,mcp_proxy"]).expect("parses");
        assert_eq!(cli.figures(), [Figure::McpServer, Figure::McpProxy]);
        let cli = parse(&["--quick", "--only", "mcp_scale"]).expect("parses");
        assert_eq!(cli.figures(), [Figure::McpScale]);
        let cli = parse(&["--only", "kill,plain", "--only", "code"]).expect("parses");
        assert_eq!(cli.figures(), [Figure::Code], "the last list is run");
        let all = "percall,sequential_task,memory,kill,blocked,plain,registry,script,\
                   script_call,script_stop,script_memory,code,mcp_server,mcp_proxy,confine,mcp_scale,order,hosts";
        let cli = parse(&["--quick", "--only", all]).expect("parses");
        assert_eq!(cli.figures(), Figure::value_variants());
    }

    #[test]
    fn the_lines_the_harness_starts_itself_with_parse() {
        for (runtime, name) in [
            (RuntimeName::Tokio, Tokio::NAME),
            (RuntimeName::Smol, Smol::NAME),
        ] {
            for which in [Which::Rho, Which::Floor] {
                let line = [memory::SUBCOMMAND, name, which.name(), "100000"];
                let Child::Memory {
                    runtime: parsed,
                    which: parsed_which,
                    count: 100_000,
                } = child(&line)
                else {
                    panic!("{line:?} is the memory child");
                };
                assert_eq!((parsed, parsed_which), (runtime, which));
            }
            let line = [script_memory::SUBCOMMAND, name, "50", "1000"];
            assert!(matches!(
                child(&line),
                Child::ScriptMemory { runtime: parsed, warm_up: 50, calls: 1000 } if parsed == runtime
            ));
        }
        assert!(matches!(child(&[mcp::NOOP_SERVER]), Child::McpNoop));
        assert!(matches!(child(&[mcp::PROXY]), Child::McpProxy));
        assert!(matches!(child(&[mcp::RELAY]), Child::McpRelay));
        assert!(matches!(
            child(&[mcp::REACTOR_RELAY]),
            Child::McpReactorRelay
        ));
        assert!(matches!(child(&[mcp_scale::SERVER]), Child::McpHttp));
    }

    #[test]
    fn the_documented_profiles_parse() {
        for (mode, name) in [
            (Mode::Sequential, "sequential"),
            (Mode::SequentialTask, "sequential_task"),
            (Mode::InFlight, "in_flight"),
        ] {
            assert_eq!(mode.name(), name);
            let line = [percall::PROFILE, "smol", "floor", name, "1000", "3"];
            assert!(matches!(
                child(&line),
                Child::Percall {
                    runtime: RuntimeName::Smol,
                    which: Which::Floor,
                    mode: parsed,
                    calls: 1000,
                    rounds: 3,
                } if parsed == mode
            ));
        }
        assert!(matches!(
            child(&[plain::PROFILE, "10", "7", "plain"]),
            Child::Plain {
                mb: 10,
                rounds: 7,
                conversion: Conversion::Plain
            }
        ));
        assert!(matches!(
            child(&[plain::PROFILE, "1", "1", "json"]),
            Child::Plain {
                conversion: Conversion::Json,
                ..
            }
        ));
        assert!(matches!(
            child(&[script::PROFILE, "tokio", "rho", "10000", "1"]),
            Child::Script {
                runtime: RuntimeName::Tokio,
                engine: Engine::Rho,
                calls: 10_000,
                threads: 1
            }
        ));
        assert!(matches!(
            child(&[script::PROFILE, "smol", "bare", "300"]),
            Child::Script {
                engine: Engine::Bare,
                calls: 300,
                threads: crate::rt::WORKERS,
                ..
            }
        ));
        assert!(matches!(
            child(&[mcp_server::PROFILE, "bare", "5000"]),
            Child::McpServer {
                server: Server::Bare,
                calls: 5000
            }
        ));
        assert!(matches!(
            child(&[mcp_server::PROFILE, "rho"]),
            Child::McpServer {
                server: Server::Rho,
                calls: 20_000
            }
        ));
    }

    #[test]
    fn bad_values_and_unknown_flags_are_errors() {
        for line in [
            &["--only", "percal"][..],
            &["--only", "kill,"],
            &["--only", ""],
            &["--only"],
            &["--quick=yes"],
            &["--bogus"],
            &["--quick", memory::SUBCOMMAND, "tokio", "rho", "10"],
            &[memory::SUBCOMMAND, "tokyo", "rho", "10"],
            &[memory::SUBCOMMAND, "tokio", "bare", "10"],
            &[memory::SUBCOMMAND, "tokio", "rho"],
            &[memory::SUBCOMMAND, "tokio", "rho", "ten"],
            &[
                percall::PROFILE,
                "tokio",
                "rho",
                "sequential-task",
                "10",
                "1",
            ],
            &[plain::PROFILE, "1", "1", "xml"],
            &[script::PROFILE, "tokio", "floor", "10"],
            &[mcp_server::PROFILE, "floor"],
            &[mcp_server::PROFILE, "rho", "many"],
            &[mcp::NOOP_SERVER, "extra"],
            &[mcp_scale::SERVER, "extra"],
        ] {
            let error = parse(line).expect_err("a bad line is an error");
            assert_ne!(error.kind(), ErrorKind::DisplayHelp, "{line:?}");
            assert_eq!(error.exit_code(), 2, "{line:?}");
        }
    }

    #[test]
    fn help_names_the_flags_and_hides_the_children() {
        let help = Cli::command().render_long_help().to_string();
        for flag in [
            "--json",
            "--quick",
            "--only",
            "sequential_task",
            "mcp_proxy",
            "mcp_scale",
        ] {
            assert!(help.contains(flag), "help names {flag}:\n{help}");
        }
        assert!(!help.contains("__"), "help hides the children:\n{help}");
    }
}
