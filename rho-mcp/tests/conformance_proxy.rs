//! The official MCP conformance suite judging `rho-mcp proxy`: in front
//! of a server written with the official Python SDK
//! (`peers/conformance_server.py`), over streamable HTTP to the suite and
//! to the server over stdio (`-- python conformance_server.py stdio`) or
//! over streamable HTTP (`--url`), the proxy adds no failure.
//!
//! At each revision the suite judges the server three times: alone over
//! HTTP, where it passes every scenario, then behind the proxy over
//! stdio and behind the proxy over HTTP, each against the proxy's
//! baseline (`conformance/baseline-proxy-<revision>.yml` and
//! `baseline-proxy-http-<revision>.yml`: what the proxy does not carry
//! yet, each with its reason). The suite fails a
//! run both for a failure the baseline does not list and for a listed one
//! that passes, so the baseline can only shrink; where it is empty,
//! whatever the proxy governs (its gate, clock and plain answers on every
//! call) or carries (resources, prompts, completions, logging,
//! subscriptions, the server's questions to its client) comes through as
//! the server gave it. The proxy speaks the suite's revision to the
//! suite and greets the server as it does by default (`--handshake
//! either`: 2026-07-28 where the server speaks it), so the server's
//! questions reach the suite as that revision asks them (input-required
//! results at 2026-07-28, requests of their own before). The suite's
//! output is kept under `target/conformance/`.

mod import_support;
#[path = "conformance/judge.rs"]
mod judge;
mod support;

use std::process::{Command, Stdio};

use support::{Running, peers_dir, python};

const PROXY: &str = env!("CARGO_BIN_EXE_rho-mcp");

/// Every call is allowed: the judgement is of what the proxy carries, and
/// a question the policy put to the suite's client would be a question it
/// does not expect.
const POLICY: &str = "default = \"allow\"\n";

fn server_script() -> String {
    peers_dir()
        .join("conformance_server.py")
        .to_str()
        .expect("a UTF-8 path")
        .to_owned()
}

/// The server alone, serving streamable HTTP on a port of its own: its URL.
fn server_alone() -> (Running, String) {
    support::python_http_peer(&[&server_script(), "http"])
}

/// Where the proxy reaches the server.
enum Upstream<'a> {
    /// It runs the server and speaks to it over stdio.
    Stdio,
    /// The server at this streamable HTTP endpoint (`--url`).
    Http(&'a str),
}

/// The proxy over HTTP in front of the server: its URL.
fn behind_the_proxy(upstream: &Upstream<'_>) -> (Running, String) {
    let policy = import_support::target_dir().join("conformance-proxy-policy.toml");
    std::fs::write(&policy, POLICY).expect("the policy is written");
    let mut command = Command::new(PROXY);
    command
        .arg("proxy")
        .arg("--http")
        .arg("--policy")
        .arg(&policy);
    match upstream {
        Upstream::Stdio => {
            command
                .arg("--")
                .arg(python())
                .args([&server_script(), "stdio"]);
        }
        Upstream::Http(url) => {
            command.args(["--url", url]);
        }
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the proxy starts");
    let url = support::printed_url(&mut child);
    (Running(child), url)
}

/// Judges the server alone (it must pass every scenario: its baseline,
/// `baseline-proxy-peer-<revision>.yml`, is empty), behind the proxy
/// over stdio (`baseline-proxy-<revision>.yml`) and behind the proxy
/// over HTTP (`baseline-proxy-http-<revision>.yml`): what the proxy does
/// not carry yet, each with its reason.
fn judge_proxy(revision: &str) {
    let run = ["--suite", "all", "--spec-version", revision];
    let (_server, server_url) = server_alone();
    let alone = judge::Judged::new("proxy-peer", revision);
    let disagreed = alone.run(&[&["server", "--url", &server_url][..], &run].concat());
    alone.conclude("the Python SDK server alone", disagreed.as_slice());
    for (side, upstream, judged) in [
        (
            "proxy",
            Upstream::Stdio,
            "rho-mcp proxy in front of the Python SDK server over stdio",
        ),
        (
            "proxy-http",
            Upstream::Http(&server_url),
            "rho-mcp proxy in front of the Python SDK server over HTTP",
        ),
    ] {
        let proxied = judge::Judged::new(side, revision);
        let disagreed = {
            let (_proxy, url) = behind_the_proxy(&upstream);
            proxied.run(&[&["server", "--url", &url][..], &run].concat())
        };
        proxied.conclude(judged, disagreed.as_slice());
    }
}

/// At 2025-11-25 (sessions, `initialize`) the proxy passes every scenario
/// the server passes by itself.
#[test]
fn the_proxy_adds_no_failure_at_2025_11_25() {
    judge_proxy("2025-11-25");
}

/// At 2026-07-28 (stateless, input-required results) the proxy passes
/// every scenario the server passes by itself but for its baseline.
#[test]
fn the_proxy_adds_no_failure_at_2026_07_28() {
    judge_proxy("2026-07-28");
}
