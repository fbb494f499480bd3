//! The command line, parsed by clap: the soak's own flags, the MCP soak
//! (`mcp`), and the hidden subcommands the MCP soak starts this binary
//! with to run its stand-in servers.

use std::fmt;

use clap::{Parser, Subcommand, ValueEnum};

use crate::{mcp_http_stand_in, mcp_stand_in};

/// A fault soak of rho: tool calls that misbehave in every way rho knows
/// of, and a check that each ended exactly once, as injected, with nothing
/// leaked.
///
/// Prints the seed first; running again with it makes the same turns of
/// the same calls. The last line is `calls N, ends N, wrong 0, ...`; the
/// exit status is non-zero on any violation.
#[derive(Debug, Parser)]
#[command(
    name = "rho-soak",
    // `rho-soak --calls 5 mcp` is a mistake, not a soak of either kind.
    args_conflicts_with_subcommands = true,
    // A flag given twice takes its last value, as it always has.
    args_override_self = true,
    // `--help` is the one way to ask, as before.
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    /// The MCP soak, or a stand-in server; none runs the fault soak.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// The fault soak's flags.
    #[command(flatten)]
    pub(crate) soak: SoakFlags,
}

/// What runs instead of the fault soak.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// A soak of calls through an MCP server imported as a source, a
    /// stand-in that dies, hangs and writes garbage.
    Mcp(McpFlags),
    /// The MCP soak's stdio stand-in server (started by the MCP soak).
    #[command(name = mcp_stand_in::SUBCOMMAND, hide = true)]
    McpStandIn {
        /// A word that only lets the soak find its processes (in the
        /// process list: the program never reads it).
        marker: Option<String>,
    },
    /// The MCP soak's streamable HTTP stand-in server (started by its
    /// supervisor).
    #[command(name = mcp_http_stand_in::SUBCOMMAND, hide = true)]
    McpHttpStandIn {
        /// The loopback port to serve on.
        port: u16,
        /// A word that only lets the soak find its processes (in the
        /// process list: the program never reads it).
        marker: Option<String>,
    },
}

/// The fault soak's flags as given; [`SoakFlags::resolve`] picks the seed.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SoakFlags {
    /// Calls in all (`_` separators allowed: 1_000_000).
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = whole_number)]
    calls: u64,
    /// The seed to replay [default: random, printed first].
    #[arg(long, value_name = "S", value_parser = whole_number)]
    seed: Option<u64>,
    /// The runtimes that run the calls (with both, the calls are split).
    #[arg(long = "runtime", value_name = "R", value_enum, default_value_t = Runtimes::Both)]
    runtimes: Runtimes,
    /// Turns in flight at once per runtime (0 counts as 1).
    #[arg(long, value_name = "D", default_value_t = 16, value_parser = drivers)]
    drivers: usize,
    /// The largest growth of resident memory after the warm-up that
    /// passes, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0)]
    max_rss_growth: f64,
}

/// The MCP soak's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(args_override_self = true)]
pub(crate) struct McpFlags {
    /// Import the stand-in over streamable HTTP, not stdio.
    #[arg(long)]
    pub(crate) http: bool,
    /// Calls in all (`_` separators allowed: 100_000).
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = whole_number)]
    pub(crate) calls: u64,
    /// The seed to replay [default: random, printed first].
    #[arg(long, value_name = "S", value_parser = whole_number)]
    pub(crate) seed: Option<u64>,
    /// Calls in flight at once (0 counts as 1).
    #[arg(long, value_name = "C", default_value_t = 32, value_parser = at_least_one)]
    pub(crate) concurrency: u64,
}

/// Which runtimes run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Runtimes {
    /// tokio alone.
    Tokio,
    /// smol alone.
    Smol,
    /// both at once, half the calls each.
    Both,
}

// The replay line prints the runtimes as `--runtime` takes them.
impl fmt::Display for Runtimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtimes::Tokio => "tokio",
            Runtimes::Smol => "smol",
            Runtimes::Both => "both",
        })
    }
}

/// What the soak was asked to do, its seed picked.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// Calls in all.
    pub(crate) calls: u64,
    /// The seed everything random derives from.
    pub(crate) seed: u64,
    pub(crate) runtimes: Runtimes,
    /// Turns in flight at once per runtime.
    pub(crate) drivers: usize,
    /// The largest resident-memory growth (percent) that passes.
    pub(crate) max_rss_growth: f64,
}

impl SoakFlags {
    /// The flags, with a random seed where none was given.
    pub(crate) fn resolve(self) -> Args {
        Args {
            calls: self.calls,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            runtimes: self.runtimes,
            drivers: self.drivers,
            max_rss_growth: self.max_rss_growth,
        }
    }
}

/// A whole number, with `_` separators anywhere (a million calls reads
/// better as `1_000_000`).
fn whole_number(text: &str) -> Result<u64, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))
}

/// A whole number, 0 taken as 1: a soak with nothing in flight would
/// never end.
fn at_least_one(text: &str) -> Result<u64, String> {
    whole_number(text).map(|number| number.max(1))
}

/// A count of drivers: a whole number, 0 taken as 1, and one too large
/// for this machine taken as the most it holds.
fn drivers(text: &str) -> Result<usize, String> {
    at_least_one(text).map(|drivers| usize::try_from(drivers).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    use super::*;

    fn parse(line: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rho-soak").chain(line.iter().copied()))
    }

    fn soak(line: &[&str]) -> SoakFlags {
        let cli = parse(line).expect("the line parses");
        assert!(cli.command.is_none(), "{line:?} is the fault soak");
        cli.soak
    }

    fn mcp(line: &[&str]) -> McpFlags {
        match parse(line).expect("the line parses").command {
            Some(Command::Mcp(flags)) => flags,
            other => panic!("{line:?} is not the MCP soak: {other:?}"),
        }
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_flags_run_the_fault_soak_with_its_defaults() {
        let flags = soak(&[]);
        assert_eq!(flags.calls, 1_000_000);
        assert_eq!(flags.seed, None);
        assert_eq!(flags.runtimes, Runtimes::Both);
        assert_eq!(flags.drivers, 16);
        assert!((flags.max_rss_growth - 10.0).abs() < f64::EPSILON);
    }

    #[test]
    fn the_documented_fault_soak_lines_parse() {
        assert_eq!(soak(&["--calls", "100000"]).calls, 100_000);
        assert_eq!(soak(&["--calls", "1_000_000"]).calls, 1_000_000);
        let args = soak(&[
            "--calls",
            "1000000",
            "--seed",
            "42",
            "--runtime",
            "both",
            "--drivers",
            "8",
            "--max-rss-growth",
            "12.5",
        ])
        .resolve();
        assert_eq!(args.calls, 1_000_000);
        assert_eq!(args.seed, 42);
        assert_eq!(args.runtimes, Runtimes::Both);
        assert_eq!(args.drivers, 8);
        assert!((args.max_rss_growth - 12.5).abs() < f64::EPSILON);
        assert_eq!(soak(&["--runtime", "tokio"]).runtimes, Runtimes::Tokio);
        assert_eq!(soak(&["--runtime", "smol"]).runtimes, Runtimes::Smol);
    }

    #[test]
    fn the_printed_replay_line_parses_back_to_the_same_run() {
        for runtimes in [Runtimes::Tokio, Runtimes::Smol, Runtimes::Both] {
            let (calls, seed) = (20_000_u64, u64::MAX);
            let line = format!("--calls {calls} --seed {seed} --runtime {runtimes}");
            let words: Vec<&str> = line.split(' ').collect();
            let args = soak(&words).resolve();
            assert_eq!(
                (args.calls, args.seed, args.runtimes),
                (calls, seed, runtimes)
            );
        }
    }

    #[test]
    fn no_drivers_is_one_driver_and_a_flag_given_twice_takes_the_last() {
        assert_eq!(soak(&["--drivers", "0"]).drivers, 1);
        assert_eq!(soak(&["--calls", "5", "--calls", "7"]).calls, 7);
    }

    #[test]
    fn the_documented_mcp_soak_lines_parse() {
        let flags = mcp(&["mcp", "--calls", "100000"]);
        assert!(!flags.http);
        assert_eq!(
            (flags.calls, flags.seed, flags.concurrency),
            (100_000, None, 32)
        );
        let flags = mcp(&["mcp", "--http", "--calls", "20000"]);
        assert!(flags.http);
        assert_eq!(flags.calls, 20_000);
        let flags = mcp(&["mcp", "--calls", "100_000", "--seed", "42"]);
        assert_eq!((flags.calls, flags.seed), (100_000, Some(42)));
        let flags = mcp(&["mcp", "--calls", "5", "--http", "--concurrency", "0"]);
        assert!(flags.http);
        assert_eq!(flags.concurrency, 1);
        assert_eq!(mcp(&["mcp"]).calls, 100_000);
    }

    #[test]
    fn the_stand_ins_parse_the_lines_the_soak_starts_them_with() {
        let cli = parse(&[mcp_stand_in::SUBCOMMAND, "rho-soak-mcp-7"]).expect("parses");
        assert!(matches!(cli.command, Some(Command::McpStandIn { .. })));
        let cli =
            parse(&[mcp_http_stand_in::SUBCOMMAND, "40123", "rho-soak-mcp-7"]).expect("parses");
        assert!(matches!(
            cli.command,
            Some(Command::McpHttpStandIn { port: 40123, .. })
        ));
    }

    #[test]
    fn bad_values_and_unknown_flags_are_errors() {
        for line in [
            &["--calls", "ten"][..],
            &["--calls", "-1"],
            &["--calls"],
            &["--seed", "1.5"],
            &["--runtime", "tokyo"],
            &["--drivers", "many"],
            &["--max-rss-growth", "ten"],
            &["--bogus"],
            &["mcp", "--concurrency", "x"],
            &["mcp", "--runtime", "tokio"],
            &["--calls", "5", "mcp"],
            &[mcp_http_stand_in::SUBCOMMAND, "not-a-port"],
            &[mcp_http_stand_in::SUBCOMMAND],
        ] {
            let error = parse(line).expect_err("a bad line is an error");
            assert_ne!(error.kind(), ErrorKind::DisplayHelp, "{line:?}");
            assert_eq!(error.exit_code(), 2, "{line:?}");
        }
    }

    #[test]
    fn help_names_the_flags_and_hides_the_stand_ins() {
        let help = Cli::command().render_long_help().to_string();
        for flag in [
            "--calls",
            "--seed",
            "--runtime",
            "--drivers",
            "--max-rss-growth",
            "mcp",
        ] {
            assert!(help.contains(flag), "help names {flag}:\n{help}");
        }
        assert!(!help.contains("__mcp"), "help hides the stand-ins:\n{help}");
    }
}
