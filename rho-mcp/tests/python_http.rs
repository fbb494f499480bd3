//! The official MCP Python SDK as a client of rho's server over streamable
//! HTTP: the same sample registry and the same checks as over stdio, the
//! server a real process (`rho-mcp sample --http`) on loopback.
//!
//! Leaving mid-call here is the client ending its session (`DELETE`), which
//! must abort the session's calls at once.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use support::{PeerRun, log_path, run_python_client};

fn run() -> &'static PeerRun {
    static RUN: OnceLock<PeerRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let log = log_path("python-http");
        let mut server = Command::new(env!("CARGO_BIN_EXE_rho-mcp"))
            .args(["sample", "--http"])
            .env("RHO_MCP_SAMPLE_LOG", &log)
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
        let seen = run_python_client(&["http", &url], &[("RHO_MCP_SAMPLE_LOG", &log)]);
        // Closing its stdin stops the sample.
        drop(server.stdin.take());
        let status = server.wait().expect("the sample ends");
        assert!(status.success(), "the sample ended with {status}");
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        PeerRun { seen, log }
    })
}

sample_tests!(run);
