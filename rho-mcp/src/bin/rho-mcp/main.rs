//! `rho-mcp`: rho's MCP server and (later) proxy, from the command line.
//!
//! ```text
//! rho-mcp sample            serve the sample registry over stdio
//! ```

mod sample;

use std::process::ExitCode;

use rho_exec_tokio::TokioExecutor;
use rho_mcp::McpServer;

const USAGE: &str = "usage: rho-mcp sample\n\n  \
    sample    serve a sample registry (one tool for each way a call can go) over stdio";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["sample"] => run_sample(),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run_sample() -> ExitCode {
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
    let served = runtime.block_on(async {
        let registry = sample::registry().map_err(|error| error.to_string())?;
        let executor = TokioExecutor::current().map_err(|error| error.to_string())?;
        let server = McpServer::new(executor, registry)
            .with_name("rho-mcp-sample", env!("CARGO_PKG_VERSION"));
        server
            .serve_stdio()
            .await
            .map_err(|error| error.to_string())
    });
    sample::log("exit");
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rho-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}
