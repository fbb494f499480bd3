//! Figure 16: rho-mcp scaled out behind a load balancer, as
//! `rho-mcp/tests/scale_out.rs` checks it. Three of rho's streamable HTTP
//! servers (`rho-bench __mcp_http`: this binary serving the no-op tool
//! with `McpServer::serve_http`, as `rho-mcp sample --http` serves) stand
//! behind nginx (Debian's package, run as this user with a prefix and
//! configuration of its own, round-robin) on loopback, and serve one
//! client on MCP 2026-07-28: stateless streamable HTTP, each `tools/call`
//! a POST by itself with the revision's per-request headers and `_meta`,
//! [`IN_FLIGHT`] calls in flight.
//!
//! - **Throughput.** The same client against one such server directly and
//!   against the three behind nginx, in alternating rounds: calls/s of
//!   each (median of rounds), the ratio (median of the rounds' ratios) and
//!   each side's p50 and p99 per call. For context only: on two cores,
//!   three servers, nginx and the client share the same two CPUs, so the
//!   three are not expected to be faster than one.
//! - **A server killed.** `N` calls, one of the three servers killed with
//!   SIGKILL once a third of them ended: every call must end exactly once
//!   (with its own answer, matched by its JSON-RPC id, or with nginx's
//!   502 for the calls in flight on the dead server: nginx never sends a
//!   POST it sent once to another server), none may be lost (no end
//!   within a minute), and no call may fail any other way.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rho_mcp::HttpOptions;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::Config;
use crate::mcp;
use crate::nginx::{self, Balancer, NGINX};
use crate::report::{Report, Target};
use crate::stats::{Samples, median};

/// `rho-bench __mcp_http`: one of the figure's servers; prints its URL,
/// serves until its stdin closes.
pub(crate) const SERVER: &str = "__mcp_http";
/// Calls in flight at once, as in the scale-out test.
pub(crate) const IN_FLIGHT: usize = 16;
/// Servers behind the balancer.
const SERVERS: usize = 3;
/// A call with no end by then is lost.
const DEADLINE: Duration = Duration::from_secs(60);
/// The revision whose stateless requests the client sends.
const REVISION: &str = "2026-07-28";

/// Runs figure 16 on tokio (rmcp's runtime).
pub(crate) fn run(config: &Config, report: &mut Report) {
    let name = "tokio";
    if !nginx::available() {
        eprintln!(
            "\n!!! [{name}] mcp_scale was NOT MEASURED: nginx ({NGINX}) is missing and \
             rho-mcp/tests/peers/install-nginx.sh could not install it. The row reads 0 and \
             misses its target.\n"
        );
        let (unit, target) = ("NOT MEASURED: no nginx", Target::AtLeast(1.0));
        report.target(name, "mcp_scale_kill_ended", 0.0, unit, target);
        return;
    }
    let runtime = mcp::runtime();
    let direct = Server::start();
    let mut behind: Vec<Server> = (0..SERVERS).map(|_| Server::start()).collect();
    let upstreams: Vec<&str> = behind.iter().map(Server::authority).collect();
    let balancer = Balancer::start(&upstreams);
    // Loopback only: never through a proxy the environment may name.
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client");
    let urls = [direct.url.clone(), balancer.url().to_owned()];

    // Index 0 is the direct server, 1 the three behind nginx.
    let mut rates: [Vec<f64>; 2] = Default::default();
    let mut latencies: [Samples; 2] = Default::default();
    let mut ratios = Vec::new();
    for round in 0..config.mcp_scale_rounds {
        // The direct server first in even rounds, the balancer in odd ones.
        for side in [round % 2, 1 - round % 2] {
            let (rate, samples) =
                runtime.block_on(rate(&http, &urls[side], config.mcp_scale_calls));
            rates[side].push(rate);
            samples.into_iter().for_each(|us| latencies[side].push(us));
        }
        ratios.push(rates[1][round] / rates[0][round]);
    }
    drop(direct);
    let [direct_rate, nginx_rate] = [median(&rates[0]), median(&rates[1])];
    report.info(name, "mcp_scale_direct_calls_per_s", direct_rate, "calls/s");
    report.info(name, "mcp_scale_nginx_calls_per_s", nginx_rate, "calls/s");
    report.info(name, "mcp_scale_nginx_vs_direct", median(&ratios), "ratio");
    for (side, samples) in ["direct", "nginx"].into_iter().zip(&mut latencies) {
        for p in [50.0, 99.0] {
            let figure = format!("mcp_scale_{side}_p{p}");
            report.info(name, &figure, samples.percentile(p), "us/call");
        }
    }

    let calls = config.mcp_scale_kill_calls;
    let dead = Some(behind.remove(0));
    let (records, killed_at) = runtime.block_on(drive(&http, balancer.url(), calls, dead));
    // Each call's ends, by its number: counted, so that a second end shows.
    let mut ends = vec![0_usize; calls];
    let (mut balancer_502, mut failed) = (0, Vec::new());
    for (id, end, _) in records {
        ends[id] += 1;
        match end {
            End::Answered => {}
            End::Balancer => balancer_502 += 1,
            End::Failed(why) => failed.push(why),
        }
    }
    let count = |which: fn(usize) -> bool| ends.iter().filter(|&&ends| which(ends)).count();
    eprintln!(
        "[{name}] mcp_scale: {calls} calls through nginx to {SERVERS} servers, one killed at \
         call {killed_at}: {balancer_502} ended with 502, {} failed otherwise (first: {})",
        failed.len(),
        failed.first().map_or("none", String::as_str)
    );
    let none = Some(Target::AtMost(0.0));
    for (figure, value, target) in [
        ("sent", calls, None),
        (
            "ended",
            count(|ends| ends >= 1),
            Some(Target::AtLeast(calls as f64)),
        ),
        ("ended_twice", count(|ends| ends > 1), none),
        ("lost", count(|ends| ends == 0), none),
        ("balancer_502", balancer_502, None),
        ("failed_otherwise", failed.len(), none),
    ] {
        let figure = format!("mcp_scale_kill_{figure}");
        match target {
            Some(target) => report.target(name, &figure, value as f64, "calls", target),
            None => report.info(name, &figure, value as f64, "calls"),
        }
    }
}

/// A server of this figure: this binary again, as [`SERVER`]. Dropping it
/// kills it (SIGKILL: nothing of it is measured any more); should the
/// harness die first, the server's stdin closes and it ends by itself.
#[derive(Debug)]
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Self {
        let this = std::env::current_exe().expect("this binary's path");
        let mut child = Command::new(this)
            .arg(SERVER)
            // It serves until its stdin closes: the pipe stays open in
            // `child` until it is dropped.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("this binary starts again");
        let mut url = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut url)
            .expect("the server prints its URL");
        let url = url.trim().to_owned();
        assert!(url.starts_with("http://"), "not a URL: {url:?}");
        Self { child, url }
    }

    /// `host:port`, as nginx names an upstream server.
    fn authority(&self) -> &str {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap_or(rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `rho-bench __mcp_http`: rho's server of the no-op tool over streamable
/// HTTP on loopback (a port the system picks), until stdin closes.
pub(crate) fn server() {
    mcp::runtime().block_on(async {
        let http = mcp::rho_server()
            .serve_http(HttpOptions::new())
            .await
            .expect("the server listens on loopback");
        println!("{}", http.url());
        let _ = tokio::io::stdin().read_to_end(&mut Vec::new()).await;
        let _ = http.shutdown().await;
    });
}

/// How a call ended.
#[derive(Debug)]
enum End {
    /// Its own answer: a result for its id, not an error.
    Answered,
    /// The balancer's 502: its server died under it.
    Balancer,
    /// Anything else, said.
    Failed(String),
}

/// `tools/call` of the no-op tool as call `id`, a POST by itself on
/// 2026-07-28, as the scale-out test's stateless client sends it.
async fn call(http: &reqwest::Client, url: &str, id: usize) -> End {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "rho-bench", "version": "1" },
    });
    let params = json!({ "name": mcp::TOOL, "arguments": {}, "_meta": meta });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let sent = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        // The routing headers mirror the body (SEP-2243, SEP-2663).
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", mcp::TOOL)
        .body(body.to_string())
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(error) => return End::Failed(format!("no answer: {error}")),
    };
    let status = response.status();
    if status == reqwest::StatusCode::BAD_GATEWAY {
        return End::Balancer;
    }
    let text = match response.text().await {
        Ok(text) => text,
        Err(error) => return End::Failed(format!("a broken answer: {error}")),
    };
    // JSON, or one SSE event whose data is the answer.
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.contains("\"jsonrpc\""))
        .unwrap_or(text.trim());
    let answer: Value = serde_json::from_str(json).unwrap_or_default();
    let result = &answer["result"];
    if answer["id"] == id && result.is_object() && result["isError"] != true {
        End::Answered
    } else {
        End::Failed(format!("HTTP {status}: {}", text.trim()))
    }
}

/// Calls/s of `calls` calls to `url`, [`IN_FLIGHT`] at a time, after a
/// warm-up; with each call's time in microseconds. Panics on a failed
/// call: a figure of failed calls would measure nothing.
async fn rate(http: &reqwest::Client, url: &str, calls: usize) -> (f64, Vec<f64>) {
    drive(http, url, (calls / 10).max(50), None).await;
    let started = Instant::now();
    let (records, _) = drive(http, url, calls, None).await;
    let rate = calls as f64 / started.elapsed().as_secs_f64();
    assert_eq!(records.len(), calls, "a call to {url} had no end");
    let samples = records.into_iter().map(|(id, end, us)| match end {
        End::Answered => us,
        end => panic!("call {id} to {url} did not answer: {end:?}"),
    });
    (rate, samples.collect())
}

/// One call's record: its number, how it ended, its time in microseconds.
type Record = (usize, End, f64);

/// `calls` calls to `url`, [`IN_FLIGHT`] lanes each taking the next
/// number; a call with no end within [`DEADLINE`] leaves no record.
/// `kill`, if any, is killed once a third of the calls ended. Gives the
/// records and the number of the next call to go out at the kill.
async fn drive(
    http: &reqwest::Client,
    url: &str,
    calls: usize,
    kill: Option<Server>,
) -> (Vec<Record>, usize) {
    let (next, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let lanes: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (http, url) = (http.clone(), url.to_owned());
            let (next, ended) = (Arc::clone(&next), Arc::clone(&ended));
            tokio::spawn(async move {
                let mut records = Vec::new();
                loop {
                    let id = next.fetch_add(1, Ordering::SeqCst);
                    if id >= calls {
                        return records;
                    }
                    let started = Instant::now();
                    let end = tokio::time::timeout(DEADLINE, call(&http, &url, id)).await;
                    if let Ok(end) = end {
                        records.push((id, end, started.elapsed().as_secs_f64() * 1e6));
                        ended.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    let mut killed_at = 0;
    if let Some(mut server) = kill {
        while ended.load(Ordering::SeqCst) < calls / 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        killed_at = next.load(Ordering::SeqCst);
        server.child.kill().expect("kills a server");
    }
    let mut records = Vec::with_capacity(calls);
    for lane in lanes {
        records.extend(lane.await.expect("a client lane finishes"));
    }
    (records, killed_at)
}
