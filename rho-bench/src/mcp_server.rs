//! Figure 13: calls per second through rho's MCP server against a bare
//! rmcp server with the same no-op tool, the same rmcp client and the same
//! in-process transport (a `tokio::io::duplex` pipe, one JSON-RPC message a
//! line), in alternating rounds.
//!
//! Each round starts a fresh server and client of each side on one tokio
//! runtime (two workers: client and server share them), warms up, then
//! times `calls` calls made by [`CONCURRENCY`] client tasks at once. The
//! figure is the median over rounds of rho's calls/s over the bare
//! server's (target >= 0.8: rho does more for each call, and both run on
//! rmcp's own service).

use std::sync::Arc;
use std::time::Instant;

use rho_mcp::rmcp::RoleClient;
use rho_mcp::rmcp::ServiceExt;
use rho_mcp::rmcp::service::RunningService;

use crate::Config;
use crate::mcp::{self, Bare};
use crate::report::{Report, Target};
use crate::side::Which;
use crate::stats::median;

/// Calls in flight at once.
pub(crate) const CONCURRENCY: usize = 8;

/// The pipe's buffer.
const PIPE: usize = 256 << 10;

pub(crate) fn run(config: &Config, report: &mut Report) {
    let runtime = mcp::runtime();
    let mut ratios = Vec::new();
    let (mut rho_rates, mut bare_rates) = (Vec::new(), Vec::new());
    for round in 0..config.mcp_rounds {
        let (mut rho, mut bare) = (0.0, 0.0);
        // rho first in even rounds (`Which::Rho`), the bare server first in
        // odd ones (`Which::Floor` stands for it here).
        for which in Which::order(round) {
            let rate = runtime.block_on(rate(which, config.mcp_calls));
            match which {
                Which::Rho => rho = rate,
                Which::Floor => bare = rate,
            }
        }
        ratios.push(rho / bare);
        rho_rates.push(rho);
        bare_rates.push(bare);
    }
    let runtime_name = "tokio";
    report.info(
        runtime_name,
        "mcp_server_rho_calls_per_s",
        median(&rho_rates),
        "calls/s",
    );
    report.info(
        runtime_name,
        "mcp_server_bare_calls_per_s",
        median(&bare_rates),
        "calls/s",
    );
    report.target(
        runtime_name,
        "mcp_server_rho_vs_bare",
        median(&ratios),
        "ratio",
        Target::AtLeast(0.8),
    );
}

/// `rho-bench __mcp_server <rho|bare> <calls>`: one side alone, for a
/// profiler; prints its calls/s.
pub(crate) const PROFILE: &str = "__mcp_server";

/// The sides of figure 13, as [`PROFILE`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Server {
    /// rho's `McpServer` (the figure's rho side).
    Rho,
    /// The bare rmcp server (the figure's floor).
    Bare,
}

/// Runs the [`PROFILE`] subcommand.
pub(crate) fn profile(server: Server, calls: usize) {
    let which = match server {
        Server::Rho => Which::Rho,
        Server::Bare => Which::Floor,
    };
    let rate = mcp::runtime().block_on(rate(which, calls));
    println!("{} {rate:.0} calls/s", which.name());
}

/// Calls per second of one side over a fresh pipe.
async fn rate(which: Which, calls: usize) -> f64 {
    let (client_end, server_end) = tokio::io::duplex(PIPE);
    let (from_client, to_client) = tokio::io::split(server_end);
    let server = match which {
        Which::Rho => {
            let server = mcp::rho_server();
            tokio::spawn(async move {
                let _ = server.serve_io(from_client, to_client).await;
            })
        }
        Which::Floor => tokio::spawn(async move {
            if let Ok(running) = Bare.serve((from_client, to_client)).await {
                let _ = running.waiting().await;
            }
        }),
    };
    let (reader, writer) = tokio::io::split(client_end);
    let client = Arc::new(mcp::client(reader, writer).await);
    let warm_up = (calls / 10).max(50);
    drive(&client, warm_up).await;
    let started = Instant::now();
    drive(&client, calls).await;
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    if let Ok(client) = Arc::try_unwrap(client) {
        let _ = client.cancel().await;
    }
    let _ = server.await;
    rate
}

/// `calls` calls, [`CONCURRENCY`] at a time.
async fn drive(client: &Arc<RunningService<RoleClient, ()>>, calls: usize) {
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|lane| {
            let client = Arc::clone(client);
            let share = calls / CONCURRENCY + usize::from(lane < calls % CONCURRENCY);
            tokio::spawn(async move {
                for _ in 0..share {
                    mcp::call(&client).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client lane finishes");
    }
}
