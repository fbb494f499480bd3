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

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use import_support::run_node_client;
use support::{PeerRun, client_json, log_path, sample_http_server, scenario, stop_sample};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("node-http");
        let (server, url) = sample_http_server(&log, &[]);
        let seen = client_json(&run_node_client(&["http", &url], &[]));
        let log = stop_sample(server, &log);
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
    let (server, url) = sample_http_server(&log, &["--resume-grace", "500"]);
    let seen = client_json(&run_node_client(&["vanish", &url], &[]));
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
    let log = stop_sample(server, &log);
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
