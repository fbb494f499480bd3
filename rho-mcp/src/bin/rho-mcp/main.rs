//! `rho-mcp`: rho's MCP server and proxy from the command line.
//!
//! ```text
//! rho-mcp sample                      serve the sample registry over stdio
//! rho-mcp sample --http [ADDR]        ... over streamable HTTP (default 127.0.0.1:0)
//!         [--token TOKEN]             require `Authorization: Bearer TOKEN`
//!         [--allow-host HOST]...      accept this `Host` too
//!         [--resume-grace MS]         how long a vanished client's call waits for a resume
//! rho-mcp proxy [OPTIONS] -- CMD...   a stdio MCP server in front of the one CMD runs
//! rho-mcp proxy [OPTIONS] --url URL   ... in front of the one at an HTTP endpoint
//!         [--http [ADDR] ...]         serving its clients over streamable HTTP instead
//! ```
//!
//! The binary only reads arguments (with clap; `--help` on each command
//! lists its flags, and a bad command line exits with code 2); the proxy is
//! `rho_mcp::proxy`.
//!
//! Over HTTP the first line on stdout is the URL to connect to; the sample
//! stops when stdin ends (or at Ctrl-C), the proxy when told to (SIGTERM,
//! SIGINT, SIGHUP).

mod listen;
mod proxy;
mod sample;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use listen::{HttpArgs, Transport};
use rho_exec_tokio::TokioExecutor;
use rho_mcp::McpServer;
use rho_tool_core::Runner;
use tokio::io::AsyncReadExt;

/// rho's MCP server and proxy: rho's guarantees (deadlines, crash
/// handling, quarantine, approval) for every MCP tool call.
#[derive(Debug, Parser)]
#[command(
    name = "rho-mcp",
    version,
    // No command is a mistake: say what the commands are.
    arg_required_else_help = true,
    // A flag given twice takes its last value, as it always has.
    args_override_self = true,
    // `--help` is the one way to ask.
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What to run.
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a sample registry (one tool for each way a call can go).
    ///
    /// Over stdio, or over streamable HTTP with --http. Over HTTP the first
    /// line on stdout is the URL, and the server stops when stdin ends. A
    /// call whose client closes its answer stream is cancelled unless the
    /// client resumes it within --resume-grace.
    Sample(SampleArgs),
    Proxy(Box<proxy::ProxyArgs>),
}

/// `rho-mcp sample`'s flags.
#[derive(Debug, clap::Args)]
struct SampleArgs {
    #[command(flatten)]
    listen: HttpArgs,
}

fn main() -> ExitCode {
    // First: started as a confinement launcher (by a proxy whose server
    // runs confined, or by a host that names this program its launcher),
    // this confines itself and runs the server, never returning.
    rho_process::confine::serve_if_launcher();
    // A bad command line exits with code 2, `--help` with 0.
    let transport = match Cli::parse().command {
        Command::Sample(args) => args.listen.transport(),
        Command::Proxy(args) => return run_proxy(*args),
    };
    // Contained panics are the sample's point; keep them off stderr.
    rho_tool_core::untrusted::install_quiet_panic_hook();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rho-mcp: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(serve_sample(transport));
    // The calls the client left are aborted; their futures are dropped on
    // the workers, which the runtime's drop waits for: only then is the
    // sample's log complete.
    drop(runtime);
    sample::log("exit");
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rho-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run_proxy(args: proxy::ProxyArgs) -> ExitCode {
    let parsed = match args.into_proxy() {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("rho-mcp proxy: {error}");
            return ExitCode::from(2);
        }
    };
    let options = match proxy::policy(&parsed) {
        Ok(Some(policy)) => parsed.options.policy_file(policy),
        Ok(None) => parsed.options,
        Err(error) => {
            eprintln!("rho-mcp proxy: {error}");
            return ExitCode::from(2);
        }
    };
    let transport = parsed.transport;
    // A tool's panic is the call's error result; keep it off stderr,
    // which a desktop client shows as the server's log.
    rho_tool_core::untrusted::install_quiet_panic_hook();
    // One thread: every call through the proxy waits on the imported
    // server, and on one thread a message crosses the proxy without a
    // hand-off between workers (a third of the latency the proxy adds).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rho-mcp proxy: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async {
        // SIGUSR1 lifts quarantines once the proxy serves; listened for
        // from the start, so that one sent while the server starts does
        // not end the proxy (its default action).
        let _early = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1());
        let proxy = options.start().await?;
        match transport {
            Transport::Stdio => proxy.serve_stdio().await,
            Transport::Http(options) => {
                let http = proxy.serve_http(options).await?;
                println!("{}", http.url());
                http.serve_until(std::future::pending()).await
            }
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rho-mcp proxy: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

async fn serve_sample(transport: Transport) -> Result<(), String> {
    let registry = sample::registry().map_err(|error| error.to_string())?;
    let executor = TokioExecutor::current().map_err(|error| error.to_string())?;
    let asks = sample::approver();
    let runner = Runner::new(executor)
        .with_gate(sample::gate())
        .with_approver(asks.clone());
    let server = McpServer::new(runner, registry)
        .with_name("rho-mcp-sample", env!("CARGO_PKG_VERSION"))
        .with_elicitation(asks);
    match transport {
        Transport::Stdio => server
            .serve_stdio()
            .await
            .map_err(|error| error.to_string()),
        Transport::Http(options) => {
            let http = server
                .serve_http(options)
                .await
                .map_err(|error| error.to_string())?;
            println!("{}", http.url());
            // Serve until whoever started us closes our stdin.
            let mut sink = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut sink).await;
            http.shutdown().await.map_err(|error| error.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use clap::CommandFactory;
    use clap::error::ErrorKind;

    use super::*;

    fn parse(line: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rho-mcp").chain(line.iter().copied()))
    }

    fn sample(line: &[&str]) -> SampleArgs {
        match parse(line).expect("the line parses").command {
            Command::Sample(args) => args,
            other => panic!("{line:?} is not the sample: {other:?}"),
        }
    }

    fn proxy(line: &[&str]) -> proxy::ProxyArgs {
        match parse(line).expect("the line parses").command {
            Command::Proxy(args) => *args,
            other => panic!("{line:?} is not the proxy: {other:?}"),
        }
    }

    fn refused(line: &[&str]) -> ErrorKind {
        match parse(line) {
            Err(error) => {
                assert_eq!(error.exit_code(), 2, "{line:?}");
                error.kind()
            }
            Ok(cli) => panic!("{line:?} parsed: {cli:?}"),
        }
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_sample_serves_stdio_or_http_with_its_options() {
        let stdio = sample(&["sample"]).listen;
        assert!(stdio.http.is_none());
        assert!(matches!(stdio.transport(), Transport::Stdio));

        let http = sample(&["sample", "--http", "--token", "t", "--allow-host", "a"]).listen;
        assert_eq!(http.http, Some(None));
        assert_eq!(http.token.as_deref(), Some("t"));
        let http = sample(&[
            "sample",
            "--http",
            "127.0.0.1:8080",
            "--allow-host",
            "a",
            "--allow-host",
            "b",
            "--resume-grace",
            "500",
        ])
        .listen;
        assert_eq!(
            http.http,
            Some(Some(SocketAddr::from(([127, 0, 0, 1], 8080))))
        );
        assert_eq!(http.allow_hosts, ["a", "b"]);
        assert_eq!(http.resume_grace, Some(500));
        // A flag given twice takes its last value.
        let twice = sample(&["sample", "--http", "--token", "a", "--token", "b"]).listen;
        assert_eq!(twice.token.as_deref(), Some("b"));
    }

    #[test]
    fn a_bad_sample_line_is_refused() {
        assert_eq!(
            refused(&[]),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
        assert_eq!(
            refused(&["sample", "--token", "t"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            refused(&["sample", "--http", "nowhere"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&["sample", "--http", "--resume-grace", "soon"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(refused(&["sample", "--bogus"]), ErrorKind::UnknownArgument);
        assert_eq!(refused(&["serve"]), ErrorKind::InvalidSubcommand);
        // `--help` ends the program too, with code 0.
        for line in [&["--help"][..], &["sample", "--help"], &["proxy", "-h"]] {
            let help = parse(line).expect_err("help is printed instead");
            assert_eq!((help.kind(), help.exit_code()), (ErrorKind::DisplayHelp, 0));
        }
    }

    #[test]
    fn the_proxy_takes_everything_after_the_double_dash_as_the_command() {
        let args = proxy(&[
            "proxy",
            "--timeout",
            "30000",
            "--audit-arguments",
            "--",
            "npx",
            "--timeout",
            "1",
            "--",
            "x",
        ]);
        assert_eq!(args.timeout(), Some(30_000));
        assert_eq!(args.command(), ["npx", "--timeout", "1", "--", "x"]);

        assert_eq!(refused(&["proxy"]), ErrorKind::MissingRequiredArgument);
        assert_eq!(
            refused(&["proxy", "--"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            refused(&[
                "proxy",
                "--url",
                "http://127.0.0.1:1/mcp",
                "--",
                "/bin/true"
            ]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(
            refused(&["proxy", "--timeout", "0", "--", "/bin/true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&["proxy", "--max-concurrent-calls", "0", "--", "/bin/true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&["proxy", "--tasks-after", "0", "--", "/bin/true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&["proxy", "--input-deadline", "0", "--", "/bin/true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&["proxy", "--handshake", "hello", "--", "/bin/true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            refused(&[
                "proxy",
                "--url",
                "http://127.0.0.1:1/mcp",
                "--header",
                "no colon"
            ]),
            ErrorKind::ValueValidation
        );
        // Without `--`, a command is not taken for one.
        assert_eq!(refused(&["proxy", "/bin/true"]), ErrorKind::UnknownArgument);
    }
}
