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
//! ```
//!
//! The binary only reads arguments; the proxy is `rho_mcp::proxy`.
//!
//! Over HTTP the first line on stdout is the URL to connect to; the server
//! stops when stdin ends (or at Ctrl-C).

mod proxy;
mod sample;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::{HttpOptions, McpServer};
use rho_tool_core::Runner;
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: rho-mcp sample [--http [ADDR]] [--token TOKEN] [--allow-host HOST]... [--resume-grace MS]
       rho-mcp proxy [OPTIONS] -- SERVER_COMMAND [ARGS...]   (rho-mcp proxy --help)
       rho-mcp proxy [OPTIONS] --url URL

  sample    serve a sample registry (one tool for each way a call can go),
            over stdio, or over streamable HTTP with --http (loopback and a
            port the system picks unless ADDR says otherwise; an address off
            loopback needs --token). Over HTTP the first line on stdout is
            the URL, and the server stops when stdin ends. A call whose
            client closes its answer stream is cancelled unless the client
            resumes it within --resume-grace (default 10000 ms).";

/// What to serve over.
enum Transport {
    Stdio,
    Http(HttpOptions),
}

fn parse(args: &[String]) -> Result<Transport, String> {
    let mut args = args.iter().map(String::as_str).peekable();
    if args.next() != Some("sample") {
        return Err("expected a command".to_owned());
    }
    let mut http: Option<HttpOptions> = None;
    while let Some(arg) = args.next() {
        match arg {
            "--http" => {
                let mut options = HttpOptions::new();
                if let Some(addr) = args.next_if(|next| !next.starts_with("--")) {
                    let addr: SocketAddr = addr
                        .parse()
                        .map_err(|error| format!("--http {addr}: {error}"))?;
                    options = options.bind(addr);
                }
                http = Some(options);
            }
            "--token" | "--allow-host" | "--resume-grace" => {
                let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
                let options = http
                    .take()
                    .ok_or_else(|| format!("{arg} goes after --http"))?;
                http = Some(match arg {
                    "--token" => options.with_bearer_token(value),
                    "--allow-host" => options.allow_host(value),
                    _ => {
                        let ms: u64 = value
                            .parse()
                            .map_err(|error| format!("--resume-grace {value}: {error}"))?;
                        options.with_resume_grace(std::time::Duration::from_millis(ms))
                    }
                });
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(http.map_or(Transport::Stdio, Transport::Http))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.first().map(String::as_str) == Some("proxy") {
        return run_proxy(&args[1..]);
    }
    let transport = match parse(&args) {
        Ok(transport) => transport,
        Err(error) => {
            eprintln!("rho-mcp: {error}\n\n{USAGE}");
            return ExitCode::from(2);
        }
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

fn run_proxy(args: &[String]) -> ExitCode {
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{}", proxy::USAGE);
        return ExitCode::SUCCESS;
    }
    let parsed = match proxy::parse(args) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("rho-mcp proxy: {error}\n\n{}", proxy::USAGE);
            return ExitCode::from(2);
        }
    };
    let options = match proxy::policy(&parsed) {
        Ok(Some(policy)) => parsed.options.policy(policy),
        Ok(None) => parsed.options,
        Err(error) => {
            eprintln!("rho-mcp proxy: {error}");
            return ExitCode::from(2);
        }
    };
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
        proxy.serve_stdio().await
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
        .with_gate(Arc::new(sample::gate()))
        .with_approver(Arc::new(asks.clone()));
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
