//! The official MCP TypeScript SDK as a client of rho's server over
//! streamable HTTP: the same sample registry and the same checks as over
//! stdio, the server a real process (`rho-mcp sample --http`) on loopback.
//!
//! Leaving mid-call in the shared scenarios is the client ending its
//! session (`DELETE`). A client that vanishes instead (closes its
//! connection, sends nothing) has its call cancelled once the server's
//! resume grace has passed (`a_client_that_vanishes_has_its_call_stopped_after_the_grace`).

mod import_support;
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use import_support::run_node_client;
use support::{PeerRun, log_path, scenario};

/// `rho-mcp sample --http` with `extra` arguments, logging to `log`; the
/// process and its URL.
fn sample_server(log: &Path, extra: &[&str]) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_rho-mcp"))
        .args(["sample", "--http"])
        .args(extra)
        .env("RHO_MCP_SAMPLE_LOG", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the sample server starts");
    let mut url = String::new();
    BufReader::new(server.stdout.take().expect("piped"))
        .read_line(&mut url)
        .expect("the sample prints its URL");
    let url = url.trim().to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "served on loopback: {url}"
    );
    (server, url)
}

/// Stops the sample (closing its stdin) and reads its log.
fn stop(mut server: Child, log: &Path) -> String {
    drop(server.stdin.take());
    let status = server.wait().expect("the sample ends");
    assert!(status.success(), "the sample ended with {status}");
    std::fs::read_to_string(log).unwrap_or_default()
}

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("node-http");
        let (server, url) = sample_server(&log, &[]);
        let seen = run_node_client(&["http", &url], &[]);
        let log = stop(server, &log);
        PeerRun { seen, log }
    })
}

sample_tests!(run);

/// A client that starts a 20 s call and goes away without a word: the
/// call is stopped once the grace to resume (500 ms here) has passed, not
/// before, and not 20 s later.
#[test]
fn a_client_that_vanishes_has_its_call_stopped_after_the_grace() {
    let log = log_path("node-http-vanish");
    let (server, url) = sample_server(&log, &["--resume-grace", "500"]);
    let seen = run_node_client(&["vanish", &url], &[]);
    let left_at = scenario(&seen, "vanish")["left_at"]
        .as_f64()
        .expect("when it left");
    // The sample logs the call's drop, after the grace, in its own time.
    let waited = Instant::now();
    let dropped = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(" dropped after ")
    };
    while !dropped() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = stop(server, &log);
    let started = log
        .lines()
        .filter(|line| line.ends_with(" started"))
        .count();
    assert_eq!(started, 1, "{log}");
    let dropped_after: Vec<u64> = log
        .lines()
        .filter_map(|line| line.split(" dropped after ").nth(1))
        .filter_map(|ms| ms.trim_end_matches(" ms").parse().ok())
        .collect();
    assert_eq!(dropped_after.len(), 1, "the call was not stopped: {log}");
    // The client left 300 ms into the call, and the grace is 500 ms.
    let ran = dropped_after[0];
    assert!(
        ran >= 700,
        "stopped after {ran} ms, before the grace of 500 ms had passed (the client left at \
         {left_at} s): {log}"
    );
    assert!(
        ran < 5_000,
        "stopped after {ran} ms, long after the grace: {log}"
    );
}
