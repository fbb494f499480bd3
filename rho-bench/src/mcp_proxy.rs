//! Figure 14: the latency the proxy adds. The same rmcp client calls a
//! small Rust stdio MCP server (the bare no-op server, `rho-bench
//! __mcp_noop`) directly, and through the proxy (`rho-bench __mcp_proxy`:
//! `rho_mcp::proxy` as `rho-mcp proxy` runs it, in front of the same
//! server), one call after the other, each timed, in alternating rounds;
//! each round starts fresh processes. The figures are the proxy's p50 and
//! p99 minus the direct ones (target: p50 added <= 150 us).

use std::process::Stdio;
use std::time::Instant;

use tokio::process::{Child, Command};

use crate::Config;
use crate::mcp;
use crate::report::{Report, Target};
use crate::side::Which;
use crate::stats::Samples;

pub(crate) fn run(config: &Config, report: &mut Report) {
    let runtime = mcp::runtime();
    let (mut direct, mut proxied) = (Samples::default(), Samples::default());
    for round in 0..config.mcp_proxy_rounds {
        // Direct first in even rounds (`Which::Floor` stands for it), the
        // proxy first in odd ones.
        for which in Which::order(round + 1) {
            let samples = match which {
                Which::Rho => &mut proxied,
                Which::Floor => &mut direct,
            };
            runtime.block_on(latencies(which, config.mcp_proxy_calls, samples));
        }
    }
    let name = "tokio";
    let (direct_p50, direct_p99) = (direct.percentile(50.0), direct.percentile(99.0));
    let (proxy_p50, proxy_p99) = (proxied.percentile(50.0), proxied.percentile(99.0));
    report.info(name, "mcp_direct_p50", direct_p50, "us");
    report.info(name, "mcp_direct_p99", direct_p99, "us");
    report.info(name, "mcp_proxy_p50", proxy_p50, "us");
    report.info(name, "mcp_proxy_p99", proxy_p99, "us");
    report.target(
        name,
        "mcp_proxy_added_p50",
        proxy_p50 - direct_p50,
        "us",
        Target::AtMost(150.0),
    );
    report.info(name, "mcp_proxy_added_p99", proxy_p99 - direct_p99, "us");
}

/// Starts this binary with `subcommand`, its stdin and stdout piped.
fn spawn(subcommand: &str) -> Child {
    let this = std::env::current_exe().expect("this binary's path");
    Command::new(this)
        .arg(subcommand)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("this binary starts again")
}

/// Times `calls` sequential calls of one side into `samples`, in
/// microseconds.
async fn latencies(which: Which, calls: usize, samples: &mut Samples) {
    let mut child = spawn(match which {
        Which::Rho => mcp::PROXY,
        Which::Floor => mcp::NOOP_SERVER,
    });
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let client = mcp::client(stdout, stdin).await;
    for _ in 0..(calls / 10).max(50) {
        mcp::call(&client).await;
    }
    for _ in 0..calls {
        let started = Instant::now();
        mcp::call(&client).await;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    // Closing the client closes the server's stdin: it ends, and the proxy
    // kills its server.
    let _ = client.cancel().await;
    let _ = child.wait().await;
}
