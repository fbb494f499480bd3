//! The official MCP Python SDK as a client of rho's server over streamable
//! HTTP: the same sample registry and the same checks as over stdio, the
//! server a real process (`rho-mcp sample --http`) on loopback.
//!
//! Leaving mid-call here is the client ending its session (`DELETE`), which
//! must abort the session's calls at once.

mod support;

use std::sync::OnceLock;

use support::{PeerRun, log_path, run_python_client, sample_http_server, stop_sample};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("python-http");
        let (server, url) = sample_http_server(&log, &[]);
        let seen = run_python_client(&["http", &url], &[("RHO_MCP_SAMPLE_LOG", &log)]);
        let log = stop_sample(server, &log);
        PeerRun { seen, log }
    })
}

sample_tests!(run);
