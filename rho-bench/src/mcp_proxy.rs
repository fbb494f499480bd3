//! Figure 14: the latency the proxy adds. The same rmcp client calls a
//! small Rust stdio MCP server (the bare no-op server, `rho-bench
//! __mcp_noop`) directly, through the proxy (`rho-bench __mcp_proxy`:
//! `rho_mcp::proxy` as `rho-mcp proxy` runs it, in front of the same
//! server), and through a byte relay (`rho-bench __mcp_relay`: two threads
//! copying bytes, no parsing, no runtime), and through the same relay on a
//! current-thread tokio runtime (`rho-bench __mcp_reactor_relay`: woken by
//! the reactor, as a proxy on tokio is), one call after the other, each
//! timed, in rounds whose order turns; each round starts fresh processes.
//! The figures are the proxy's p50 and p99 minus the direct ones (target:
//! p50 added <= 300 us), next to the relays': what any proxy that is a
//! process of its own, and any proxy on tokio, adds on this machine
//! before it does any work.

use std::process::Stdio;
use std::time::Instant;

use tokio::process::{Child, Command};

use crate::Config;
use crate::mcp;
use crate::report::{Report, Target};
use crate::stats::Samples;

/// What stands between the client and the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    /// Nothing: the client runs the server.
    Direct,
    /// The byte relay.
    Relay,
    /// The byte relay on tokio's reactor.
    ReactorRelay,
    /// rho's proxy.
    Proxy,
}

impl Hop {
    const ALL: [Hop; 4] = [Hop::Direct, Hop::Relay, Hop::ReactorRelay, Hop::Proxy];

    /// The subcommand of this binary the client starts.
    fn subcommand(self) -> &'static str {
        match self {
            Hop::Direct => mcp::NOOP_SERVER,
            Hop::Relay => mcp::RELAY,
            Hop::ReactorRelay => mcp::REACTOR_RELAY,
            Hop::Proxy => mcp::PROXY,
        }
    }

    /// Round `round`'s order: each hop takes each place in turn, so that
    /// none always runs on a warmer (or colder) machine.
    fn order(round: usize) -> [Hop; 4] {
        let mut order = Hop::ALL;
        order.rotate_left(round % Hop::ALL.len());
        order
    }
}

pub(crate) fn run(config: &Config, report: &mut Report) {
    let runtime = mcp::runtime();
    let mut samples: [Samples; 4] = Default::default();
    for round in 0..config.mcp_proxy_rounds {
        for hop in Hop::order(round) {
            let samples = &mut samples[hop as usize];
            runtime.block_on(latencies(hop, config.mcp_proxy_calls, samples));
        }
    }
    let name = "tokio";
    let [mut direct, mut relay, mut reactor, mut proxied] = samples;
    let (direct_p50, direct_p99) = (direct.percentile(50.0), direct.percentile(99.0));
    let (relay_p50, relay_p99) = (relay.percentile(50.0), relay.percentile(99.0));
    let (reactor_p50, reactor_p99) = (reactor.percentile(50.0), reactor.percentile(99.0));
    let (proxy_p50, proxy_p99) = (proxied.percentile(50.0), proxied.percentile(99.0));
    report.info(name, "mcp_direct_p50", direct_p50, "us");
    report.info(name, "mcp_direct_p99", direct_p99, "us");
    report.info(name, "mcp_relay_p50", relay_p50, "us");
    report.info(name, "mcp_relay_p99", relay_p99, "us");
    report.info(name, "mcp_reactor_relay_p50", reactor_p50, "us");
    report.info(name, "mcp_reactor_relay_p99", reactor_p99, "us");
    report.info(name, "mcp_proxy_p50", proxy_p50, "us");
    report.info(name, "mcp_proxy_p99", proxy_p99, "us");
    report.info(name, "mcp_relay_added_p50", relay_p50 - direct_p50, "us");
    report.info(
        name,
        "mcp_reactor_relay_added_p50",
        reactor_p50 - direct_p50,
        "us",
    );
    report.target(
        name,
        "mcp_proxy_added_p50",
        proxy_p50 - direct_p50,
        "us",
        Target::AtMost(300.0),
    );
    report.info(name, "mcp_relay_added_p99", relay_p99 - direct_p99, "us");
    report.info(
        name,
        "mcp_reactor_relay_added_p99",
        reactor_p99 - direct_p99,
        "us",
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

/// Times `calls` sequential calls through `hop` into `samples`, in
/// microseconds.
async fn latencies(hop: Hop, calls: usize, samples: &mut Samples) {
    let mut child = spawn(hop.subcommand());
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
    // Closing the client closes the server's stdin: it ends (a proxy or a
    // relay closes its server's stdin in turn, or kills it).
    let _ = client.cancel().await;
    let _ = child.wait().await;
}
